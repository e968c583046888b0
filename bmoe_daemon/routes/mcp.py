"""The MCP server routes: add, replace, switch on or off and remove a server of the
daemon's MCP config (`<data>/mcp.json`, or `--mcp-servers-config`), for a client on
this computer only. actors/peers/mcp/edit.py writes the file whole and has the running
servers follow it at once (no restart).

    POST   /api/mcp/servers          {name, command, args?, env?, cwd?, timeout_ms?, enabled?}
                                     or {name, url, type?, headers?, timeout_ms?, enabled?}
    PUT    /api/mcp/servers/<name>   the same: the entry's new fields; a `name` other than
                                     <name> renames the server (409 when that name is taken)
    PATCH  /api/mcp/servers/<name>   {enabled}: switched off, it stays in the file, never started
    DELETE /api/mcp/servers/<name>

Each answers the server's row of `GET /api/agent` (once a started one runs or failed, or
after ROW_WAIT_S),
and DELETE `{deleted, secrets_deleted}`. A variable's or header's value is taken and never
given back: the row names each variable and header and the secrets it names
(`${secret:NAME}`, the key store's, which the web UI uses for a value marked secret); on a
PUT a value left null keeps the saved one. A secret that a removed server, or an edited
one's old entry, named and that no server in the file names any more is deleted from the
key store.
"""

from __future__ import annotations

from typing import Any

import attrs
import trio
from quart import Blueprint, Response, jsonify, request

from actors.peers.mcp.edit import McpFile, ServerExists
from actors.peers.mcp.manager import McpManager
from actors.peers.mcp.servers import START_TIMEOUT_S
from bmoe_daemon.bodies import parse_json, structure
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import BadRequest, Exists

bp = Blueprint("mcp", __name__)

# How long an answer waits for a started server to run: its start limit, as GET /api/agent waits.
ROW_WAIT_S = START_TIMEOUT_S


@attrs.frozen(repr=False)
class ServerBody:
    """An MCP server's entry, as mcp.json holds it, and its name (on a PUT, a new name
    renames it). On a PUT an `env` or `headers` value of null keeps the saved one."""

    name: str | None = None
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str | None] | None = None
    cwd: str | None = None
    url: str | None = None
    type: str | None = None
    headers: dict[str, str | None] | None = None
    timeout_ms: int | None = None
    enabled: bool | None = None

    def __repr__(self) -> str:  # the values of env and headers stay out of any log or traceback
        return f"ServerBody(name={self.name!r}, command={self.command!r}, url=...)"

    def entry(self) -> dict[str, Any]:
        fields = attrs.asdict(self, recurse=False)
        fields.pop("name")
        return {k: v for k, v in fields.items() if v is not None}


@attrs.frozen
class ServerSwitch:
    enabled: bool


def _file() -> tuple[McpFile, McpManager]:
    d = daemon()
    if d.mcp_file is None or d.mcp is None or d.config.chat_only:
        raise BadRequest("MCP servers are not used by this daemon (it serves plain chat only), so none can be "
                         "added or changed.")
    return d.mcp_file, d.mcp


async def _body() -> ServerBody:
    return structure(parse_json(await request.get_data()), ServerBody)


async def _row(mcp: McpManager, name: str) -> dict[str, object]:
    """The server's row of the listing, once a started one runs or failed."""
    server = mcp.server(name)
    if server is not None:
        with trio.move_on_after(ROW_WAIT_S):
            await server.wait_started()
    registry = daemon().registry
    rows = mcp.listing(lambda t: registry is None or registry.get(t.name) is t)
    return next((r for r in rows if r["name"] == name), {"name": name, "remote": False, "state": "failed", "tools": []})


@bp.post("/api/mcp/servers")
async def post_server() -> tuple[Response, int]:
    file, mcp = _file()
    body = await _body()
    if body.name is None:
        raise BadRequest("Give the server a name: 1-48 letters, digits, '_' or '-'.")
    try:
        await file.add(body.name, body.entry())
    except ServerExists as exc:
        raise Exists(str(exc)) from None
    return jsonify(await _row(mcp, body.name)), 201


@bp.put("/api/mcp/servers/<name>")
async def put_server(name: str) -> Response:
    file, mcp = _file()
    body = await _body()
    try:
        await file.replace(name, body.entry(), new_name=body.name)
    except ServerExists as exc:
        raise Exists(str(exc)) from None
    return jsonify(await _row(mcp, body.name or name))


@bp.patch("/api/mcp/servers/<name>")
async def patch_server(name: str) -> Response:
    file, mcp = _file()
    body = structure(parse_json(await request.get_data()), ServerSwitch)
    await file.switch(name, body.enabled)
    return jsonify(await _row(mcp, name))


@bp.delete("/api/mcp/servers/<name>")
async def delete_server(name: str) -> Response:
    file, _ = _file()
    forgotten = await file.remove(name)
    return jsonify({"deleted": name, "secrets_deleted": forgotten})

