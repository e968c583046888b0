"""MCP servers: one actor per configured server, each owning its program, and the manager.

A server's program is started the first time its tools are wanted (a round that may
offer them, or `GET /api/agent`), in a session and process group of its own, with
`initialize` (protocol 2024-11-05), `notifications/initialized` and `tools/list`. One
that is not running within START_TIMEOUT_S, or fails that handshake, is `failed` until
the daemon restarts or its entry is changed (a new actor then serves it: manager.py).
One that ends later (a stop, a time limit, a crash) is `stopped` and keeps its tools:
the next call starts it again. Its stderr goes to the log, line by line, never to the
model.

The wire is spoken here on trio (actors/peers/jsonrpc.py: JSON-RPC, one message a line;
actors/peers/program.py: the program, its process group and its stderr) rather than through
the `mcp` SDK: the actor owns the process outright (its group is signalled before the
leader is reaped, so a grandchild such as `npx`'s node cannot outlive it), a stop ends
the program at once, stderr lands in our log, and the daemon keeps no anyio/pydantic
stack for a few hundred lines of protocol.

A call is `tools/call` in the caller's task; the program's reader task hands it the
answer. A call cancelled (the run's stop) ends the program; a call past the server's
`timeout_ms` ends it too and reads as an error in plain words.

A remote server (a `url` entry) is the same actor around a `RemoteLink`
(actors/peers/mcp/remote.py) instead of a program: connected when its tools are first
wanted, its headers' secrets read from the key store at each connection. One that
cannot be reached, or whose connection drops (a call in flight then ends with an
error), is `reconnecting`: tried again after RETRY_FIRST_S, twice as long after each
failure up to RETRY_MAX_S, with the time of the next try in the listing. One that
refuses its headers (401/403) or breaks the protocol is `failed`, as a program is;
one whose header names a secret not stored yet is tried again once that secret is saved.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

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
from actors.peers.mcp.config import MissingSecret, RemoteSpec, ServerSpec, configured_transport
from actors.peers.mcp.extras import Extras, list_extras, prompt_text
from actors.peers.mcp.remote import HTTP_PROTOCOL_VERSION, HttpRefused, RemoteLink
from actors.peers.program import Program, ProgramEnded, RpcError, serving
from actors.process import STDERR_LINE_CHARS, StartFailed, start_program
from actors.tools.registry import ToolContext, ToolOutcome

log = logging.getLogger("bmoe.mcp")

START_TIMEOUT_S = 10.0
KILL_GRACE_S = 1.0  # after SIGTERM, before the group's SIGKILL
MAX_LIST_PAGES = 16
MAX_TOOLS = 256
# What a backend accepts as a function's name.
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
# A remote server that cannot be reached is tried again after this, doubled each time.
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 60.0
# Statuses a remote server answers when it is busy or failing on its side: tried again.
TRANSIENT_STATUSES = frozenset({408, 429})
SecretLookup = Callable[[str], str | None]


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

    @property
    def mcp_host(self) -> str | None:
        """A remote server's host (and port): where a call's arguments go."""
        spec = self.server.spec
        return urlsplit(spec.url).netloc if isinstance(spec, RemoteSpec) else None

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

    def __init__(self, spec: ServerSpec | RemoteSpec, *, start_timeout: float = START_TIMEOUT_S,
                 kill_grace: float = KILL_GRACE_S, secrets: SecretLookup | None = None,
                 retry_first: float = RETRY_FIRST_S, retry_max: float = RETRY_MAX_S) -> None:
        self.spec = spec
        self._start_timeout = start_timeout
        self._kill_grace = kill_grace
        self._secrets: SecretLookup = secrets or (lambda name: None)
        self._retry_first = self._retry_delay = retry_first
        self._retry_max = retry_max
        self._retry_scope: trio.CancelScope | None = None
        self.next_try_at: float | None = None  # Unix time of a reconnecting server's next try
        self.retries = 0  # tries since it was last running
        self._state = "stopped"  # stopped | starting | running | reconnecting | failed
        self._error: str | None = None
        self._last_end = ""
        self._tools: tuple[McpTool, ...] = ()
        self.extras = Extras()  # its prompts and resources, as last listed
        self._known = False  # its tools were listed once
        self._program: Program | RemoteLink | None = None
        self._start_done: trio.Event | None = None
        self._nursery: trio.Nursery | None = None
        self._send, self._rx = trio.open_memory_channel[StartMsg](MAILBOX_SIZE)
        self._stopped = trio.Event()
        self._closing_why = "the daemon is stopping"
        self.starts = 0  # how many times its program was started
        self.pid: int | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def remote(self) -> bool:
        return isinstance(self.spec, RemoteSpec)

    @property
    def transport(self) -> str:
        """`stdio`; for a remote server `streamable-http` or `sse` once known, else its config's."""
        known = self._program.transport if isinstance(self._program, RemoteLink) else None
        return known or configured_transport(self.spec)

    @property
    def state(self) -> str:
        """`running`, `stopped` (not started yet, or its program ended), `starting`,
        `reconnecting` (a remote server, tried again at `next_try_at`), `failed`."""
        if self._ended_unreaped():
            return "reconnecting" if self.remote else "stopped"
        return self._state

    @property
    def error(self) -> str | None:
        if self._ended_unreaped() and self.remote:
            # Said with the state above, before _retry says it with its reason.
            return "It cannot be reached (its connection ended); the daemon tries again by itself."
        return self._error

    def _ended_unreaped(self) -> bool:
        """Running, but its program ended: its task is still reaping it."""
        return self._state == "running" and (self._program is None or self._program.ended.is_set())

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
                self._nursery = None  # no new start, no new try
                if self._retry_scope is not None:
                    self._retry_scope.cancel()
                if self._program is not None:
                    self._program.end(self._closing_why)
        finally:
            self._nursery = None
            fail_pending(self._rx, f"the MCP server {self.name} is closing")
            if self._start_done is not None:
                self._start_done.set()
            self._stopped.set()

    def close(self, why: str = "the daemon is stopping") -> None:
        """Stop serving; a running program is ended (`why` says so in the log)."""
        self._closing_why = why
        self._send.close()

    async def wait_stopped(self) -> None:
        """Wait until `run` has returned: the program ended and reaped."""
        await self._stopped.wait()

    def _start(self, *, retry: bool = False) -> trio.Event:
        """The event the current start attempt sets when it ends, starting one if needed
        (a reconnecting server only when its next try is due: `retry`)."""
        state = self.state
        if state == "starting" and self._start_done is not None:
            return self._start_done
        done = trio.Event()
        if state in ("running", "failed") or (state == "reconnecting" and not retry) or self._nursery is None:
            done.set()
            return done
        # A program that ended may still be reaped by its task: the new one is current
        # from here on, so the old task's ending no longer touches the state.
        prog: Program | RemoteLink
        if isinstance(self.spec, RemoteSpec):
            try:
                headers, used = self.spec.resolve_headers(self._secrets)
            except MissingSecret as exc:
                self._fail(f"It is not connected: {exc}.")
                done.set()
                return done
            prog = RemoteLink(self.spec.url, headers, used, transport=self.spec.transport)
        else:
            prog = Program()
        self._state = "starting"
        self._program = prog
        self._start_done = done
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
            again = ("It is tried again once the secret is saved." if "the secret" in (self._error or "")
                     else "It is tried again when the daemon restarts.")
            raise McpUnavailable(f"The MCP server {self.name} is not available: {self._error} {again}")
        if self._state == "reconnecting":
            wait = max(0.0, (self.next_try_at or 0) - time.time())
            raise McpUnavailable(
                f"The MCP server {self.name} cannot be reached ({self._last_end or 'no reason given'}); the daemon "
                f"tries again in {wait:.0f} s. Go on without its tools for now, or try the call again later."
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
                "Try the call once more; " + ("the daemon's log says more." if self.remote else
                                              "its stderr is in the daemon's log.")
            )
        timeout = self.spec.timeout_s
        try:
            with trio.move_on_after(timeout) as cs:
                result = await prog.request("tools/call", {"name": tool, "arguments": args})
        except trio.Cancelled:
            if not self.remote:  # a remote server's session goes on; the request's connection closed
                prog.end("a stop ended the call it was running")
            raise
        except ProgramEnded as exc:
            raise ToolError(_ended_text(self.name, str(exc), self.remote)) from None
        except (RpcError, HttpRefused) as exc:
            raise ToolError(f"The MCP server {self.name} refused the call: {exc}.") from None
        if cs.cancelled_caught:
            if not self.remote:  # a remote server's session goes on; only the request was given up
                prog.end(f"a call of {tool} took longer than {timeout:g} s")
            raise ToolError(_late_text(f"{self.name}_{tool}", timeout, self.remote))
        try:
            return call_result(result)
        except WireError as exc:
            raise ToolError(f"The MCP server {self.name} answered in a form the daemon cannot read: {exc}.") from None

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> str:
        """`prompts/get`: the prompt's text, for a person to start a message with.
        Raises ToolError (plain words) when the server cannot give it."""
        await self.ensure_started()
        prog = self._program
        if prog is None or self.state != "running":
            raise McpUnavailable(f"The MCP server {self.name} is not running; try again in a moment.")
        try:
            with trio.fail_after(self.spec.timeout_s):
                return prompt_text(await prog.request("prompts/get", {"name": name, "arguments": arguments}))
        except trio.TooSlowError:
            raise ToolError(f"The MCP server {self.name} did not give its prompt within "
                            f"{self.spec.timeout_s:g} seconds.") from None
        except ProgramEnded as exc:
            raise ToolError(f"The MCP server {self.name} went away before giving its prompt ({exc}).") from None
        except (RpcError, WireError) as exc:
            raise ToolError(f"The MCP server {self.name} did not give the prompt {name}: {exc}.") from None

    # ---- the program ----

    def _fail(self, why: str) -> None:
        self._state = "failed"
        self._error = why
        self.next_try_at = None
        log.warning("MCP server %s failed: %s", self.name, why)

    def reset(self) -> None:
        """A failed server may be tried again (the secret it named was saved)."""
        if self._state == "failed":
            self._state = "stopped"
            self._error = None

    def _retry(self, why: str) -> None:
        """A remote server that cannot be reached: tried again after the current delay."""
        delay = self._retry_delay
        self._retry_delay = min(delay * 2, self._retry_max)
        self._state = "reconnecting"
        self._error = f"It cannot be reached ({why}); the daemon tries again by itself."
        self.next_try_at = time.time() + delay
        self.retries += 1
        log.warning("MCP server %s cannot be reached (%s); trying again in %g s", self.name, why, delay)
        if self._nursery is not None:
            self._nursery.start_soon(self._retry_after, delay)

    async def _retry_after(self, delay: float) -> None:
        self._retry_scope = scope = trio.CancelScope()
        with scope:
            await trio.sleep(delay)
        if not scope.cancelled_caught and self._state == "reconnecting":
            self._start(retry=True)

    async def _run_program(self, prog: Program | RemoteLink, done: trio.Event) -> None:
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
                retry = isinstance(prog, RemoteLink) and self._nursery is not None
                if self._state in ("starting", "running") and retry:
                    self._retry(prog.why)
                elif self._state == "starting":
                    self._fail(f"Its program ended during its start ({prog.why}); its stderr is in the daemon's log.")
                elif self._state == "running":
                    self._state = "stopped"
                self._program = None
                self.pid = None
            log.info("MCP server %s: %s ended: %s", self.name,
                     "its connection" if isinstance(prog, RemoteLink) else "its program", prog.why)
            done.set()

    async def _serve_program(self, prog: Program | RemoteLink, done: trio.Event) -> None:
        if isinstance(prog, RemoteLink):
            await self._serve_remote(prog, done)
            return
        spec = self.spec
        assert isinstance(spec, ServerSpec)
        try:
            env = spec.environment(secret=self._secrets)
        except MissingSecret as exc:
            self._fail(f"It is not started: {exc}.")
            return
        # What its variables' secrets hold: its stderr and messages are logged without them.
        prog.secrets = tuple(v for v in (self._secrets(n) for n in spec.secret_names) if v)
        try:
            proc = await start_program([spec.command, *spec.args], env=env, cwd=spec.cwd)
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

    async def _serve_remote(self, link: RemoteLink, done: trio.Event) -> None:
        """Connect, shake hands and list the tools, then hold the session until it ends.
        What cannot be fixed by trying again (a refusal of the headers, a broken
        protocol) fails the server; the rest is left to `_run_program`, which retries."""
        async with link.open(functools.partial(self._on_message, link)):
            try:
                with trio.fail_after(self._start_timeout):
                    await self._handshake(link)
            except trio.TooSlowError:
                link.end(f"it did not answer within {self._start_timeout:g} s")
                return
            except HttpRefused as exc:
                if exc.status >= 500 or exc.status in TRANSIENT_STATUSES:
                    link.end(str(exc))
                else:
                    self._fail(f"It refused the connection: {exc}.")
                return
            except (WireError, RpcError) as exc:
                self._fail(f"It failed its handshake: {exc}.")
                return
            except ProgramEnded:
                return  # _run_program tries again
            self._state = "running"
            self._error = None
            self._retry_delay = self._retry_first
            self.next_try_at = None
            self.retries = 0
            log.info("MCP server %s is connected (%s) with %d tools", self.name, link.transport, len(self._tools))
            link.listen()
            done.set()
            await link.ended.wait()

    async def _handshake(self, prog: Program | RemoteLink) -> None:
        offered = HTTP_PROTOCOL_VERSION if isinstance(prog, RemoteLink) else PROTOCOL_VERSION
        answer = await prog.request("initialize", initialize_params(offered))
        version = check_initialize(answer)
        if version != offered:
            log.info("MCP server %s answered protocol %s (offered %s)", self.name, version, offered)
        if isinstance(prog, RemoteLink):
            prog.protocol = version
        await prog.send(encode_notification("notifications/initialized"))
        self._tools = await list_tools(self, prog)
        self.extras = await list_extras(prog, answer.get("capabilities") if isinstance(answer, dict) else None,
                                        self.name)
        self._known = True

    async def _relist(self, prog: Program | RemoteLink) -> None:
        """The server said its tools changed: list them again (bounded)."""
        with trio.move_on_after(self._start_timeout):
            try:
                tools = await list_tools(self, prog)
            except (WireError, RpcError, ProgramEnded) as exc:
                log.warning("MCP server %s: listing its tools again failed: %s", self.name, exc)
                return
            if prog is self._program:
                self._tools = tools

    def _on_message(self, prog: Program | RemoteLink, msg: Request | Notification | Ignored,
                    nursery: trio.Nursery) -> None:
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
                said = str(msg.params)[:STDERR_LINE_CHARS]
                log.info("MCP server %s says: %s", self.name, prog.redact(said))
        elif isinstance(msg, Ignored):
            log.debug("MCP server %s wrote %s to stdout; ignored", self.name, msg.why)


async def list_tools(server: McpServer, prog: Program | RemoteLink) -> tuple[McpTool, ...]:
    """`tools/list`, page after page (bounded): each tool as the model calls it, one
    whose name a model cannot call left out with a log line."""
    tools: list[McpTool] = []
    cursor: str | None = None
    for _ in range(MAX_LIST_PAGES):
        page, cursor, left_out = tool_list(await prog.request("tools/list", {"cursor": cursor} if cursor else None))
        for why in left_out:
            log.warning("MCP server %s: a tool left out: %s", server.name, why)
        for info in page:
            name = f"{server.name}_{info.name}"
            if not TOOL_NAME.match(name):
                log.warning("MCP server %s: tool %r left out: its name has characters a model cannot call",
                            server.name, info.name)
                continue
            tools.append(McpTool(name=name, tool=info.name, server=server, description=info.description,
                                 parameters=info.input_schema, label=info.title or info.name))
        if cursor is None or len(tools) >= MAX_TOOLS:
            break
    return tuple(tools[:MAX_TOOLS])


def _ended_text(server: str, why: str, remote: bool) -> str:
    if remote:
        return (f"The connection to the MCP server {server} was lost during the call ({why}), so there is no "
                "result. The daemon reconnects by itself; try the call again later.")
    return (f"The MCP server {server} ended during the call ({why}), so there is no result. "
            "Its program is started again by the next call.")


def _late_text(tool: str, timeout: float, remote: bool) -> str:
    if remote:
        return (f"{tool} did not answer within {timeout:g} seconds, so the call was given up. Try a smaller "
                "request, or go on without this tool.")
    return (f"{tool} did not answer within {timeout:g} seconds, so the call was given up and the server's program "
            "was ended (the next call starts it again). Try a smaller request, or go on without this tool.")
