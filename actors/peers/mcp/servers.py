"""MCP servers: one actor per configured server, each owning its program, and the manager.

A server's program is started the first time its tools are wanted (a round that may
offer them, or `GET /api/agent`), in a session and process group of its own, with
`initialize` (protocol 2024-11-05), `notifications/initialized` and `tools/list`. One
that is not running within START_TIMEOUT_S, or fails that handshake, is `failed` until
the daemon restarts. One that ends later (a stop, a time limit, a crash) is `stopped`
and keeps its tools: the next call starts it again. Its stderr goes to the log, line by
line, never to the model.

The wire is spoken here on trio (actors/peers/jsonrpc.py: JSON-RPC, one message a line;
actors/peers/program.py: the program, its process group and its stderr) rather than through
the `mcp` SDK: the actor owns the process outright (its group is signalled before the
leader is reaped, so a grandchild such as `npx`'s node cannot outlive it), a stop ends
the program at once, stderr lands in our log, and the daemon keeps no anyio/pydantic
stack for a few hundred lines of protocol.

A call is `tools/call` in the caller's task; the program's reader task hands it the
answer. A call cancelled (the run's stop) ends the program; a call past the server's
`timeout_ms` ends it too and reads as an error in plain words.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from actors.actor import MAILBOX_SIZE, ActorStats, Reply, fail_pending, mailbox_depth
from actors.errors import ActorGone, ToolError
from actors.peers.jsonrpc import (
    METHOD_NOT_FOUND,
    PROTOCOL_VERSION,
    Ignored,
    Notification,
    Request,
    WireError,
    call_result,
    check_initialize,
    encode_error,
    encode_notification,
    encode_result,
    initialize_params,
    tool_list,
)
from actors.peers.mcp.config import McpConfig, ServerSpec, Skipped
from actors.peers.program import Program, ProgramEnded, RpcError, serving
from actors.process import STDERR_LINE_CHARS, StartFailed, start_program
from actors.tools.registry import Tool, ToolContext, ToolOutcome

log = logging.getLogger("bmoe.mcp")

START_TIMEOUT_S = 10.0
KILL_GRACE_S = 1.0  # after SIGTERM, before the group's SIGKILL
MAX_LIST_PAGES = 16
MAX_TOOLS = 256
# What a backend accepts as a function's name.
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


class McpUnavailable(ToolError):
    """The server cannot take calls (it failed to start, or the daemon is stopping)."""


@attrs.frozen
class StartMsg:
    reply: Reply[trio.Event]


@attrs.frozen
class McpTool:
    """One tool of a server, as the model calls it: `<server>_<tool>`. What it does is
    the server's business, so every call is a change: the mode decides."""

    name: str
    tool: str
    server: McpServer = attrs.field(repr=False)
    description: str = attrs.field(eq=False)
    parameters: dict[str, Any] = attrs.field(eq=False)
    label: str = attrs.field(eq=False)
    needs_workspace: bool = True
    offered_read_only: bool = False

    @property
    def mcp(self) -> str:
        return self.server.name

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return True

    def title(self, args: dict[str, Any]) -> str:
        return f"{self.label} ({self.server.name})"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None  # the card shows the arguments

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        text, is_error = await self.server.call(self.tool, args)
        if is_error:
            raise ToolError(text)
        return ToolOutcome(text)


class McpServer:
    """The actor of one configured server; see the module docstring."""

    def __init__(self, spec: ServerSpec, *, start_timeout: float = START_TIMEOUT_S,
                 kill_grace: float = KILL_GRACE_S) -> None:
        self.spec = spec
        self._start_timeout = start_timeout
        self._kill_grace = kill_grace
        self._state = "stopped"  # stopped | starting | running | failed
        self._error: str | None = None
        self._last_end = ""
        self._tools: tuple[McpTool, ...] = ()
        self._known = False  # its tools were listed once
        self._program: Program | None = None
        self._start_done: trio.Event | None = None
        self._nursery: trio.Nursery | None = None
        self._send, self._rx = trio.open_memory_channel[StartMsg](MAILBOX_SIZE)
        self._stopped = trio.Event()
        self.starts = 0  # how many times its program was started
        self.pid: int | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def state(self) -> str:
        """`running`, `stopped` (not started yet, or its program ended), `starting`, `failed`."""
        if self._state == "running" and (self._program is None or self._program.ended.is_set()):
            return "stopped"  # ended; its task is still reaping it
        return self._state

    @property
    def error(self) -> str | None:
        return self._error

    @property
    def known(self) -> bool:
        return self._known

    @property
    def tools(self) -> tuple[McpTool, ...]:
        return self._tools

    def statistics(self) -> ActorStats:
        return ActorStats(kind="mcp", id=self.name, state=self.state, mailbox=mailbox_depth(self._rx),
                          run=str(self.pid) if self.pid else None)

    # ---- the actor ----

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve start requests until `close()`; then end the program (reaped, bounded)."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                async with self._rx:
                    async for msg in self._rx:
                        msg.reply.capture(self._start)
                if self._program is not None:
                    self._program.end("the daemon is stopping")
        finally:
            self._nursery = None
            fail_pending(self._rx, f"the MCP server {self.name} is closing")
            if self._start_done is not None:
                self._start_done.set()
            self._stopped.set()

    def close(self) -> None:
        """Stop serving; a running program is ended."""
        self._send.close()

    async def wait_stopped(self) -> None:
        """Wait until `run` has returned: the program ended and reaped."""
        await self._stopped.wait()

    def _start(self) -> trio.Event:
        """The event the current start attempt sets when it ends, starting one if needed."""
        state = self.state
        if state == "starting" and self._start_done is not None:
            return self._start_done
        if state in ("running", "failed") or self._nursery is None:
            done = trio.Event()
            done.set()
            return done
        # A program that ended may still be reaped by its task: the new one is current
        # from here on, so the old task's ending no longer touches the state.
        self._state = "starting"
        self._program = prog = Program()
        self._start_done = done = trio.Event()
        self.starts += 1
        self._nursery.start_soon(self._run_program, prog, done)
        return done

    async def ensure_started(self) -> None:
        """Start the program unless it runs, and wait until it runs or failed (at most
        the start limit). Raises McpUnavailable when it failed or the daemon is stopping.
        Cancelled: only the wait ends; the start goes on in the actor."""
        if self.state == "running":
            return  # nothing for the actor to do; every call checks this
        msg = StartMsg(Reply())
        try:
            await self._send.send(msg)
            done = await msg.reply.wait()
        except (trio.ClosedResourceError, trio.BrokenResourceError, ActorGone):
            raise McpUnavailable(f"The MCP server {self.name} is not available: the daemon is stopping.") from None
        await done.wait()
        if self._state == "failed":
            raise McpUnavailable(
                f"The MCP server {self.name} is not available: {self._error} "
                "It is tried again when the daemon restarts."
            )

    async def wait_started(self) -> None:
        """ensure_started, with a failure left for the listing to show."""
        try:
            await self.ensure_started()
        except McpUnavailable:
            pass

    async def call(self, tool: str, args: dict[str, Any]) -> tuple[str, bool]:
        """`tools/call`: (the text of the answer, whether it is an error). A program that
        ended is started again first. Raises ToolError (plain words) when there is no
        answer: the server failed, its program ended, the time limit passed.
        Cancelled (a stop): the program is ended, then the cancellation goes on."""
        await self.ensure_started()
        prog = self._program
        if prog is None or self.state != "running":
            raise McpUnavailable(
                f"The MCP server {self.name} ended right after it started ({self._last_end or 'no reason given'}). "
                "Try the call once more; its stderr is in the daemon's log."
            )
        timeout = self.spec.timeout_s
        try:
            with trio.move_on_after(timeout) as cs:
                result = await prog.request("tools/call", {"name": tool, "arguments": args})
        except trio.Cancelled:
            prog.end("a stop ended the call it was running")
            raise
        except ProgramEnded as exc:
            raise ToolError(
                f"The MCP server {self.name} ended during the call ({exc}), so there is no result. "
                "Its program is started again by the next call."
            ) from None
        except RpcError as exc:
            raise ToolError(f"The MCP server {self.name} refused the call: {exc}.") from None
        if cs.cancelled_caught:
            prog.end(f"a call of {tool} took longer than {timeout:g} s")
            raise ToolError(
                f"{self.name}_{tool} did not answer within {timeout:g} seconds, so the call was given up and the "
                "server's program was ended (the next call starts it again). Try a smaller request, or go on "
                "without this tool."
            )
        try:
            return call_result(result)
        except WireError as exc:
            raise ToolError(f"The MCP server {self.name} answered in a form the daemon cannot read: {exc}.") from None

    # ---- the program ----

    def _fail(self, why: str) -> None:
        self._state = "failed"
        self._error = why
        log.warning("MCP server %s failed: %s", self.name, why)

    async def _run_program(self, prog: Program, done: trio.Event) -> None:
        try:
            with prog.scope:
                await self._serve_program(prog, done)
        except Exception:
            # A bug here fails this server, never the daemon.
            log.exception("MCP server %s: its program's task failed", self.name)
            if self._program is prog:
                self._fail("Something went wrong inside the daemon with this server; the log has the details.")
        finally:
            prog.end(prog.why or "the daemon is stopping")
            if self._program is prog:
                self._last_end = prog.why
                if self._state == "starting":
                    self._fail(f"Its program ended during its start ({prog.why}); its stderr is in the daemon's log.")
                elif self._state == "running":
                    self._state = "stopped"
                self._program = None
                self.pid = None
            log.info("MCP server %s: its program ended: %s", self.name, prog.why)
            done.set()

    async def _serve_program(self, prog: Program, done: trio.Event) -> None:
        spec = self.spec
        try:
            proc = await start_program([spec.command, *spec.args], env=spec.environment(), cwd=spec.cwd)
        except StartFailed as exc:
            self._fail(f"Its command could not be started ({exc}); check command, args and cwd in the MCP config.")
            return
        if self._program is prog:
            self.pid = proc.pid
        log.info("MCP server %s started (pid %d): %s", self.name, proc.pid, spec.command_line)
        handle = functools.partial(self._on_message, prog)
        async with serving(prog, proc, handle, log=log, label=f"MCP server {self.name}",
                           kill_grace=self._kill_grace, exit_wait=KILL_GRACE_S):
            try:
                with trio.fail_after(self._start_timeout):
                    await self._handshake(prog)
            except trio.TooSlowError:
                self._fail(f"It did not start within {self._start_timeout:g} s.")
                prog.end("it did not start in time")
                return
            except (WireError, RpcError) as exc:
                self._fail(f"It failed its handshake: {exc}.")
                prog.end("it failed its handshake")
                return
            except ProgramEnded:
                return  # _run_program says it failed, with why
            self._state = "running"
            log.info("MCP server %s is running with %d tools", self.name, len(self._tools))
            done.set()
            await prog.ended.wait()

    async def _handshake(self, prog: Program) -> None:
        version = check_initialize(await prog.request("initialize", initialize_params()))
        if version != PROTOCOL_VERSION:
            log.info("MCP server %s answered protocol %s (offered %s)", self.name, version, PROTOCOL_VERSION)
        await prog.send(encode_notification("notifications/initialized"))
        self._tools = await self._list_tools(prog)
        self._known = True

    async def _list_tools(self, prog: Program) -> tuple[McpTool, ...]:
        tools: list[McpTool] = []
        cursor: str | None = None
        for _ in range(MAX_LIST_PAGES):
            page, cursor, left_out = tool_list(await prog.request("tools/list", {"cursor": cursor} if cursor else None))
            for why in left_out:
                log.warning("MCP server %s: a tool left out: %s", self.name, why)
            for info in page:
                name = f"{self.name}_{info.name}"
                if not TOOL_NAME.match(name):
                    log.warning("MCP server %s: tool %r left out: its name has characters a model cannot call",
                                self.name, info.name)
                    continue
                tools.append(McpTool(name=name, tool=info.name, server=self, description=info.description,
                                     parameters=info.input_schema, label=info.title or info.name))
            if cursor is None or len(tools) >= MAX_TOOLS:
                break
        return tuple(tools[:MAX_TOOLS])

    async def _relist(self, prog: Program) -> None:
        """The server said its tools changed: list them again (bounded)."""
        with trio.move_on_after(self._start_timeout):
            try:
                tools = await self._list_tools(prog)
            except (WireError, RpcError, ProgramEnded) as exc:
                log.warning("MCP server %s: listing its tools again failed: %s", self.name, exc)
                return
            if prog is self._program:
                self._tools = tools

    def _on_message(self, prog: Program, msg: Request | Notification | Ignored, nursery: trio.Nursery) -> None:
        if isinstance(msg, Request):
            # Sent from a task of its own: the reader never waits on the program's input.
            if msg.method == "ping":
                nursery.start_soon(prog.send_quietly, encode_result(msg.id, {}))
            else:
                text = f"bmoe-daemon does not offer {msg.method}"
                nursery.start_soon(prog.send_quietly, encode_error(msg.id, METHOD_NOT_FOUND, text))
        elif isinstance(msg, Notification):
            if msg.method == "notifications/tools/list_changed" and self._state == "running":
                nursery.start_soon(self._relist, prog)
            elif msg.method == "notifications/message":
                log.info("MCP server %s says: %s", self.name, str(msg.params)[:STDERR_LINE_CHARS])
        elif isinstance(msg, Ignored):
            log.debug("MCP server %s wrote %s to stdout; ignored", self.name, msg.why)


class McpManager:
    """Every configured server's actor, started in one nursery and closed together.

    It is a tool source for the registry (actors/tools/registry.py): `prepare()` starts
    the servers whose tools are not known yet, `tools()` is what is known now, each
    server's tools after the previous one's, a name already taken left out.
    """

    needs_workspace = True
    offered_read_only = False

    def __init__(self, config: McpConfig | None = None, *, start_timeout: float = START_TIMEOUT_S,
                 kill_grace: float = KILL_GRACE_S) -> None:
        config = config or McpConfig()
        self._servers = tuple(McpServer(s, start_timeout=start_timeout, kill_grace=kill_grace) for s in config.servers)
        self._skipped: tuple[Skipped, ...] = config.skipped
        self._closing = trio.Event()
        self._stopped = trio.Event()
        self._state = "starting"
        self._collisions: set[str] = set()

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
                self._state = "serving"
                task_status.started()
                await self._closing.wait()
                self._state = "stopping"
                for server in self._servers:
                    server.close()
        finally:
            self._state = "stopped"
            self._stopped.set()

    def close(self) -> None:
        """End every server's program (each group signalled and reaped)."""
        self._closing.set()

    async def wait_stopped(self) -> None:
        """Wait until `run` has returned: every program reaped."""
        await self._stopped.wait()

    async def prepare(self) -> None:
        """Start every server whose tools are not known yet and that has not failed, and
        wait until each runs or failed (each at most its start limit). Cancelled: only the
        wait ends."""
        wanted = [s for s in self._servers if not s.known and s.state != "failed"]
        if not wanted:
            return
        async with trio.open_nursery() as nursery:
            for server in wanted:
                nursery.start_soon(server.wait_started)

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
            row: dict[str, object] = {
                "name": server.name,
                "command": server.spec.command_line,
                "state": server.state if server.state != "starting" else "stopped",
                "tools": [{"name": t.name, "description": t.description} for t in server.tools if id(t) in offered],
            }
            if server.error:
                row["error"] = server.error
            out.append(row)
        for skipped in self._skipped:
            out.append({"name": skipped.name, "command": skipped.command, "state": "failed", "error": skipped.why,
                        "tools": []})
        return out

    def statistics(self) -> ActorStats:
        return ActorStats(kind="mcp-servers", id="mcp", state=self._state, mailbox=0,
                          children=tuple(s.statistics() for s in self._servers))
