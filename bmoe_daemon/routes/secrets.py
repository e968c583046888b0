"""The secret routes: named values kept in the daemon's key store (`<data>/credentials.json`,
beside the providers' keys) for a remote MCP server's headers to name (`${secret:NAME}`
in mcp.json). For a client on this computer only.

A secret's value is taken in a body and never given back: the listing names each
secret, whether it is stored, and the MCP servers whose headers name it (a name a
server wants but the store lacks is listed too, as not stored). A secret that a removed
server, or an edited one's old entry, named and that no server in mcp.json names any more
is deleted by the MCP server routes (routes/mcp.py).
"""

from __future__ import annotations

import attrs
from quart import Blueprint, Response, jsonify, request

from actors.model.providers.directory import ProviderDirectory
from actors.peers.mcp.config import SECRET_NAME
from bmoe_daemon.bodies import parse_json, structure
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import ApiError, BadRequest, NotFoundError

bp = Blueprint("secrets", __name__)


@attrs.frozen(repr=False)
class SecretBody:
    """`PUT /api/secrets/<name>`: the value to keep."""

    value: str

    def __repr__(self) -> str:  # the value stays out of any log or traceback
        return "SecretBody(value=...)"


def _store() -> ProviderDirectory:
    providers = daemon().providers
    if providers is None:
        raise ApiError("The key store is not available in this daemon.")
    return providers


def _name(name: str) -> str:
    if not SECRET_NAME.match(name):
        raise BadRequest("A secret's name is 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit.")
    return name


def _row(name: str, stored: bool) -> dict[str, object]:
    mcp = daemon().mcp
    return {"name": name, "stored": stored, "used_by": mcp.uses_secret(name) if mcp is not None else []}


@bp.get("/api/secrets")
async def get_secrets() -> Response:
    stored = _store().secret_names()
    mcp = daemon().mcp
    wanted = [n for n in (mcp.secret_names() if mcp is not None else []) if n not in stored]
    return jsonify({"secrets": [_row(n, True) for n in stored] + [_row(n, False) for n in sorted(wanted)]})


@bp.put("/api/secrets/<name>")
async def put_secret(name: str) -> Response:
    store = _store()
    _name(name)
    body = structure(parse_json(await request.get_data()), SecretBody)
    if not body.value:
        raise BadRequest("value is empty: give the secret's value (DELETE /api/secrets/<name> forgets one).")
    await store.set_secret(name, body.value)
    mcp = daemon().mcp
    if mcp is not None:
        mcp.secret_saved(name)
    return jsonify(_row(name, True))


@bp.delete("/api/secrets/<name>")
async def delete_secret(name: str) -> Response:
    store = _store()
    if not SECRET_NAME.match(name) or store.secret(name) is None:
        raise NotFoundError("There is no such secret.")
    await store.set_secret(name, "")
    return jsonify({"deleted": name})
