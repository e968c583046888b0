"""The MCP servers together: `McpManager`, every configured server's actor
(actors/peers/mcp/servers.py) started in one nursery, closed together, and listed for
`GET /api/agent`. A changed config (actors/peers/mcp/edit.py) is applied while it runs:
a server added is started, one changed is started again, one removed or switched off
is ended; the others go on untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import trio

from actors.actor import ActorStats
from actors.errors import ActorGone
from actors.peers.mcp.config import (
    DEFAULT_TIMEOUT_MS,
    McpConfig,
    RemoteSpec,
    ServerSpec,
    Skipped,
    configured_transport,
)
from actors.peers.mcp.servers import (
    KILL_GRACE_S,
    RETRY_FIRST_S,
    RETRY_MAX_S,
    START_TIMEOUT_S,
    McpServer,
    SecretLookup,
)
from actors.tools.registry import Tool

log = logging.getLogger("bmoe.mcp")


class McpManager:
    """Every configured server's actor, started in one nursery and closed together.

    It is a tool source for the registry (actors/tools/registry.py): `prepare()` starts
    the servers whose tools are not known yet, `tools()` is what is known now, each
    server's tools after the previous one's, a name already taken left out.
    """

    needs_workspace = True
    offered_read_only = False

    def __init__(self, config: McpConfig | None = None, *, start_timeout: float = START_TIMEOUT_S,
                 kill_grace: float = KILL_GRACE_S, secrets: SecretLookup | None = None,
                 retry_first: float = RETRY_FIRST_S, retry_max: float = RETRY_MAX_S) -> None:
        """`secrets` looks a secret up by name in the key store (a remote server's
        headers name them); the retry delays are a remote server's (servers.py)."""
        config = config or McpConfig()
        self._options = (start_timeout, kill_grace, retry_first, retry_max)
        self._secrets = secrets
        self._servers = tuple(self._new(s) for s in config.servers)
        self._skipped: tuple[Skipped, ...] = config.skipped
        self._off: tuple[ServerSpec | RemoteSpec, ...] = config.off
        self._nursery: trio.Nursery | None = None
        self._closing = trio.Event()
        self._stopped = trio.Event()
        self._state = "starting"
        self._collisions: set[str] = set()

    def _new(self, spec: ServerSpec | RemoteSpec) -> McpServer:
        start_timeout, kill_grace, retry_first, retry_max = self._options
        return McpServer(spec, start_timeout=start_timeout, kill_grace=kill_grace, secrets=self._secrets,
                         retry_first=retry_first, retry_max=retry_max)

    @property
    def servers(self) -> tuple[McpServer, ...]:
        return self._servers

    def server(self, name: str) -> McpServer | None:
        return next((s for s in self._servers if s.name == name), None)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run every server's actor until `close()`; returns once each program is reaped."""
        try:
            async with trio.open_nursery() as nursery:
                for server in self._servers:
                    await nursery.start(server.run)
                self._nursery = nursery
                self._state = "serving"
                task_status.started()
                await self._closing.wait()
                self._nursery = None
                self._state = "stopping"
                for server in self._servers:
                    server.close()
        finally:
            self._nursery = None
            self._state = "stopped"
            self._stopped.set()

    def close(self) -> None:
        """End every server's program (each group signalled and reaped)."""
        self._closing.set()

    async def wait_stopped(self) -> None:
        """Wait until `run` has returned: every program reaped."""
        await self._stopped.wait()

    async def apply(self, config: McpConfig) -> None:
        """Serve `config` from now on: each server whose entry is new or changed is
        started afresh (a changed one's program ended and reaped first), each one no
        longer started (removed, switched off) is ended; an unchanged one goes on.
        Started servers are started the first time their tools are wanted, as at start.
        Raises ActorGone when the manager does not run (the daemon is stopping). Cancelled
        while an old program ends, the listing keeps the old servers (ended) until the next
        apply: the caller shields it (actors/peers/mcp/edit.py)."""
        nursery = self._nursery
        if nursery is None:
            raise ActorGone("The MCP servers are stopping with the daemon; change them once it is back.")
        kept = {s.spec: s for s in self._servers}
        wanted = set(config.servers)
        gone = [s for s in self._servers if s.spec not in wanted]
        for server in gone:
            server.close("its entry was changed, switched off or removed")
        for server in gone:
            await server.wait_stopped()
        fresh: list[McpServer] = []
        for spec in config.servers:
            found = kept.get(spec)
            if found is None:
                found = self._new(spec)
                await nursery.start(found.run)
            fresh.append(found)
        self._servers = tuple(fresh)
        self._skipped = config.skipped
        self._off = config.off
        self._collisions.clear()

    async def prepare(self) -> None:
        """Start every server whose tools are not known yet and that has not failed, and
        wait until each runs or failed (each at most its start limit). Cancelled: only the
        wait ends."""
        wanted = [s for s in self._servers if not s.known and s.state not in ("failed", "reconnecting")]
        if not wanted:
            return
        async with trio.open_nursery() as nursery:
            for server in wanted:
                nursery.start_soon(server.wait_started)

    def secret_saved(self, name: str) -> None:
        """The secret `name` was saved: a remote server that failed for want of it may
        be tried again (by the next listing or call)."""
        for server in self._servers:
            if name in server.spec.secret_names:
                server.reset()

    def secret_names(self) -> list[str]:
        """Every secret a server's headers or variables name."""
        return list(dict.fromkeys(n for s in self._servers for n in s.spec.secret_names))

    def uses_secret(self, name: str) -> list[str]:
        """The servers whose headers or variables name the secret `name`."""
        return [s.name for s in self._servers if name in s.spec.secret_names]

    def tools(self) -> list[Tool]:
        out: list[Tool] = []
        seen: set[str] = set()
        for server in self._servers:
            for tool in server.tools:
                if tool.name in seen:
                    if tool.name not in self._collisions:
                        self._collisions.add(tool.name)
                        log.warning("MCP tool %s of server %s left out: another server has that name",
                                    tool.name, server.name)
                    continue
                seen.add(tool.name)
                out.append(tool)
        return out

    def listing(self, shown: Callable[[Tool], bool] | None = None) -> list[dict[str, object]]:
        """`GET /api/agent`'s `mcp`: each server with its state and the tools the model
        gets (`shown` says which: a name taken by a built-in tool is left out)."""
        offered = {id(t) for t in self.tools() if shown is None or shown(t)}
        out: list[dict[str, object]] = []
        for server in self._servers:
            state = server.state
            if state == "starting":
                state = "reconnecting" if server.retries else "stopped"
            row: dict[str, object] = {"name": server.name, **_where(server.spec), "transport": server.transport,
                                      "state": state}
            row["tools"] = [{"name": t.name, "description": t.description} for t in server.tools if id(t) in offered]
            row["prompts"] = list(server.extras.prompts)
            row["resources"] = list(server.extras.resources)
            if server.error:
                row["error"] = server.error
            if state == "reconnecting" and server.next_try_at is not None:
                row["next_try_at"] = round(server.next_try_at, 3)
            row["entry"] = _entry(server.spec)
            out.append(row)
        for spec in self._off:
            out.append({"name": spec.name, **_where(spec), "transport": configured_transport(spec), "state": "off",
                        "tools": [], "entry": _entry(spec)})
        for skipped in self._skipped:
            where = {"url": skipped.command, "remote": True} if skipped.remote else {"command": skipped.command,
                                                                                      "remote": False}
            out.append({"name": skipped.name, **where, "state": "failed", "error": skipped.why, "tools": []})
        return out

    def statistics(self) -> ActorStats:
        return ActorStats(kind="mcp-servers", id="mcp", state=self._state, mailbox=0,
                          children=tuple(s.statistics() for s in self._servers))


def _entry(spec: ServerSpec | RemoteSpec) -> dict[str, object]:
    """What an edit starts from: the entry's fields, with its variables' and headers'
    names and the secrets they name, never a value (an edit keeps a value left out);
    `type`, `cwd` and `timeout_ms` only where the entry sets them apart from the default."""
    out: dict[str, object]
    if isinstance(spec, RemoteSpec):
        out = {"url": spec.shown_url, "headers": spec.shown_headers()}
        if spec.transport == "sse":
            out["type"] = "sse"
    else:
        out = {"command": spec.command, "args": list(spec.args), "env": spec.shown_env()}
        if spec.cwd is not None:
            out["cwd"] = spec.cwd
    if spec.timeout_ms != DEFAULT_TIMEOUT_MS:
        out["timeout_ms"] = spec.timeout_ms
    return out


def _where(spec: ServerSpec | RemoteSpec) -> dict[str, object]:
    """Where a server is: its command line, or its address (query values hidden) with
    its headers' names and the secrets they name (never a value)."""
    if isinstance(spec, RemoteSpec):
        return {"url": spec.shown_url, "remote": True, "headers": spec.shown_headers()}
    return {"command": spec.command_line, "remote": False}
