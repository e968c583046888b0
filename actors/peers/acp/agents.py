"""Other coding agents over the Agent Client Protocol: one actor per conversation, each
owning its agent's program, and the manager that holds them.

An agent's launch is data: the `acp` entry of its row in catalog/clients.json
(`command`, the programs it `needs` on PATH). Its program is started by the first
message of a conversation it works, in the workspace, in a session and process group
of its own, with the daemon's environment minus the daemon's own variables (`BMOE_*`;
the API key and the providers' keys live in files the agent is never given). It is
kept between messages and ended, its whole group, when the conversation is deleted,
its workspace changes or the daemon stops. Its stderr goes to the log, line by line.

The wire is JSON-RPC 2.0, one message a line (actors/peers/jsonrpc.py reads and writes it;
actors/peers/acp/updates.py reads what ACP puts in it; actors/peers/program.py owns the program, its
process group and its stderr, as it does for the MCP servers). The daemon's requests
and the agent's have id spaces of their own: an answer is matched only against our
own ids, and a request of the agent is answered with its id as given.

A start is `initialize` (protocol 1, fs reads and writes, no terminal); a session is
`session/new` with the workspace as `cwd`, or `session/load` of the conversation's
`acp_session` when the program was started again and the agent advertised
`loadSession` (what it replays then is ignored: the conversation has it already). A
message is `session/prompt`, its `session/update`s going to the run that sent it (the
"sink", actors/runs/acp.py), which also answers the agent's permission requests and
file reads and writes. A stop is `session/cancel`; an agent that has not answered the
prompt CANCEL_WAIT_S later is ended, its whole group, and started again by the next
message. A program that ends during a prompt ends the run with an error in plain words.
"""

from __future__ import annotations

import functools
import json
import logging
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from actors.actor import MAILBOX_SIZE, ActorStats, Reply, fail_pending, mailbox_depth
from actors.errors import ActorGone
from actors.peers.acp.updates import CANCELLED, can_load_session, initialize_params
from actors.peers.jsonrpc import (
    METHOD_NOT_FOUND,
    Ignored,
    Notification,
    Request,
    encode_error,
    encode_notification,
    encode_result,
)
from actors.peers.program import Program, ProgramEnded, RpcError, serving
from actors.process import REAP_S, StartFailed, child_environment, exit_status, start_program

log = logging.getLogger("bmoe.acp")

START_TIMEOUT_S = 30.0  # initialize, and opening a session, each at most this long
CANCEL_WAIT_S = 10.0  # after session/cancel, before the program is ended
KILL_GRACE_S = 0.5  # after SIGTERM, before the group's SIGKILL; also the wait for an exit or last lines
WATCH_POLL_S = 0.25  # how often a program is looked at for its exit
DISCARD_WAIT_S = 5.0
# JSON-RPC codes of our answers to the agent's requests.
INVALID_PARAMS = -32602
REFUSED = -32000
INTERNAL_ERROR = -32603


class AcpFailed(Exception):
    """The agent could not do what was asked; the text says why in plain words and
    what to do next."""


class RequestRefused(Exception):
    """An answer to the agent's request that is a JSON-RPC error."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Sink(Protocol):
    """The run a prompt belongs to: what the agent reports goes there."""

    def update(self, update: dict[str, Any]) -> None: ...

    async def permission(self, params: dict[str, Any]) -> dict[str, Any]: ...

    async def read_text_file(self, params: dict[str, Any]) -> dict[str, Any]: ...

    async def write_text_file(self, params: dict[str, Any]) -> dict[str, Any]: ...

    def cancelled(self) -> None:
        """The prompt is being stopped: answer every permission still open `cancelled`."""
        ...


@attrs.frozen
class AgentSpec:
    """How one agent starts: its catalog row's `acp` entry."""

    id: str
    name: str
    command: tuple[str, ...]
    needs: tuple[str, ...]
    start_timeout_s: float = START_TIMEOUT_S

    def missing(self, path: str | None = None) -> list[str]:
        """The programs it needs that are not on PATH."""
        return [n for n in self.needs if shutil.which(n, path=path) is None]


def read_specs(path: Path) -> list[AgentSpec]:
    """The agents of a catalog file (clients.json's format: rows with an `acp` entry);
    raises ValueError naming a row that is not well formed."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out: list[AgentSpec] = []
    for row in data.get("clients", ()):
        acp = row.get("acp") if isinstance(row, dict) else None
        if acp is None:
            continue
        rid = row.get("id")
        command, needs = acp.get("command"), acp.get("needs", [])
        if not isinstance(rid, str) or not rid or rid == "builtin":
            raise ValueError(f"{path}: an agent row needs an id other than 'builtin'")
        if not isinstance(command, list) or not command or not all(isinstance(c, str) and c for c in command):
            raise ValueError(f"{path}: agent {rid!r}: acp.command is a list of strings")
        if not isinstance(needs, list) or not all(isinstance(n, str) and n for n in needs):
            raise ValueError(f"{path}: agent {rid!r}: acp.needs is a list of program names")
        timeout = acp.get("start_timeout_s", START_TIMEOUT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"{path}: agent {rid!r}: acp.start_timeout_s is a positive number")
        out.append(AgentSpec(rid, str(row.get("name") or rid), tuple(command), tuple(needs), float(timeout)))
    return out


def load_specs(paths: Iterable[Path]) -> list[AgentSpec]:
    """The agents of several catalog files; a later file's row replaces an earlier one
    of the same id."""
    specs: dict[str, AgentSpec] = {}
    for path in paths:
        for spec in read_specs(path):
            specs.pop(spec.id, None)
            specs[spec.id] = spec
    return list(specs.values())


def agent_environment() -> dict[str, str]:
    """The daemon's environment without its own variables."""
    return child_environment()


@attrs.frozen
class Opened:
    """A session ready for a prompt: its id, and a notice to show (a session that could
    not be resumed)."""

    session: str
    notice: str | None = None


@attrs.frozen
class StartMsg:
    cwd: Path
    reply: Reply[_Program]


class _Program(Program):
    """One run of an agent's program (see Program) with what ACP adds: its workspace, how
    its handshake went, whether it can load a session, and the session it has open."""

    def __init__(self, cwd: Path) -> None:
        super().__init__()
        self.cwd = cwd
        self.ready = trio.Event()  # the handshake ended, well or not
        self.reaped = trio.Event()
        self.start_error: str | None = None
        self.can_load = False
        self.session: str | None = None

    @property
    def running(self) -> bool:
        return self.ready.is_set() and self.start_error is None and not self.ended.is_set()


class AcpAgent:
    """The actor of one conversation's agent; see the module docstring."""

    def __init__(self, conversation_id: str, spec: AgentSpec, *, cancel_wait: float = CANCEL_WAIT_S,
                 kill_grace: float = KILL_GRACE_S) -> None:
        self.conversation_id = conversation_id
        self.spec = spec
        self._cancel_wait = cancel_wait
        self._kill_grace = kill_grace
        self._send, self._rx = trio.open_memory_channel[StartMsg](MAILBOX_SIZE)
        self._nursery: trio.Nursery | None = None
        self._program: _Program | None = None
        self._sink: Sink | None = None
        self.ended = trio.Event()  # `run` has returned: the program ended and reaped
        self.starts = 0
        self.pid: int | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def state(self) -> str:
        """`stopped`, `starting`, `running` (a program with the handshake done), `prompting`."""
        prog = self._program
        if prog is None or prog.ended.is_set():
            return "stopped"
        if not prog.ready.is_set():
            return "starting"
        return "prompting" if self._sink is not None else "running"

    def statistics(self) -> ActorStats:
        return ActorStats(kind="acp", id=f"{self.spec.id}:{self.conversation_id}", state=self.state,
                          mailbox=mailbox_depth(self._rx), run=str(self.pid) if self.pid else None)

    # ---- the actor ----

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve start requests until `close()`; then end the program (reaped, bounded)."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                async with self._rx:
                    async for msg in self._rx:
                        msg.reply.capture(self._start, msg.cwd)
                if self._program is not None:
                    self._program.end("its conversation closed")
        finally:
            self._nursery = None
            fail_pending(self._rx, f"the agent {self.name} is closing")
            self.ended.set()

    def close(self) -> None:
        """Stop serving; the program is ended, its whole group."""
        self._send.close()

    async def wait_stopped(self) -> None:
        await self.ended.wait()

    def _start(self, cwd: Path) -> _Program:
        """The program running (or starting) in `cwd`, else a new one; one in another is ended."""
        prog = self._program
        if prog is not None and not prog.ended.is_set() and prog.cwd == cwd:
            return prog
        if prog is not None:
            prog.end("its workspace changed")
        assert self._nursery is not None
        self._program = prog = _Program(cwd)
        self.starts += 1
        self._nursery.start_soon(self._run_program, prog)
        return prog

    async def _ensure_program(self, cwd: Path) -> _Program:
        """A program with its handshake done; AcpFailed otherwise. Cancelled: only the
        wait ends, the start goes on in the actor."""
        msg = StartMsg(cwd, Reply())
        try:
            await self._send.send(msg)
            prog = await msg.reply.wait()
        except (trio.ClosedResourceError, trio.BrokenResourceError, ActorGone):
            raise AcpFailed(f"The agent {self.name} is not available: the daemon is stopping.") from None
        await prog.ready.wait()
        if prog.start_error is not None:
            raise AcpFailed(prog.start_error)
        if prog.ended.is_set():
            raise AcpFailed(self._ended_words(prog))
        return prog

    def _ended_words(self, prog: _Program) -> str:
        return (
            f"The agent {self.name} stopped unexpectedly ({prog.why or 'no reason given'}), so this message "
            "got no answer. Send a message to start it again; its messages are in the daemon's log."
        )

    # ---- the requests of a run ----

    async def open(self, cwd: Path, session: str | None) -> Opened:
        """A session for a prompt: the program's own, else `session/load` of `session`
        (when the agent can), else `session/new`. Raises AcpFailed in plain words."""
        prog = await self._ensure_program(cwd)
        if prog.session is not None:
            return Opened(prog.session)
        notice: str | None = None
        params = {"cwd": str(cwd), "mcpServers": []}
        try:
            with trio.fail_after(self.spec.start_timeout_s):
                if session is not None and prog.can_load:
                    try:
                        await prog.request("session/load", {"sessionId": session, **params})
                    except RpcError as exc:
                        notice = (f"{self.name} could not resume its earlier session ({exc}), so it starts a new "
                                  "one and does not remember what was said before.")
                    else:
                        prog.session = session
                        log.info("agent %s resumed session %s of conversation %s", self.name, session,
                                 self.conversation_id)
                        return Opened(session)
                elif session is not None:
                    notice = (f"{self.name} cannot resume its earlier session, so it starts a new one and does not "
                              "remember what was said before.")
                result = await prog.request("session/new", params)
        except trio.TooSlowError:
            prog.end("it did not open a session in time")
            raise AcpFailed(
                f"The agent {self.name} did not open a session within {self.spec.start_timeout_s:g} s, so it was "
                "ended. Send the message again to retry; its messages are in the daemon's log."
            ) from None
        except ProgramEnded:
            raise AcpFailed(self._ended_words(prog)) from None
        except RpcError as exc:
            raise AcpFailed(
                f"The agent {self.name} refused to open a session: {exc}. If it needs you to sign in, do so in a "
                "terminal first, then send the message again."
            ) from None
        sid = result.get("sessionId") if isinstance(result, dict) else None
        if not isinstance(sid, str) or not sid:
            prog.end("its answer to session/new named no session")
            raise AcpFailed(f"The agent {self.name} answered session/new without a session id; it was ended.")
        prog.session = sid
        return Opened(sid, notice)

    async def prompt(self, session: str, text: str, sink: Sink) -> str:
        """`session/prompt` with the person's text; the stop reason. What the agent
        reports meanwhile goes to `sink`. Raises AcpFailed in plain words.

        Cancelled (a stop): `session/cancel`, then up to CANCEL_WAIT_S for the agent to
        answer the prompt, reporting to `sink` all the while; one that does not is ended,
        its whole group. Then the cancellation goes on."""
        prog = self._program
        if prog is None or not prog.running or prog.session != session:
            raise AcpFailed(f"The agent {self.name} ended before the message reached it. Send it again.")
        self._sink = sink
        rid: int | None = None
        try:
            rid, slot = await prog.start_request(
                "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
            )
            try:
                result = await slot.wait()
            except trio.Cancelled:
                await self._stop_prompt(prog, session, slot, sink)
                raise
        except ProgramEnded:
            raise AcpFailed(self._ended_words(prog)) from None
        except RpcError as exc:
            raise AcpFailed(
                f"The agent {self.name} could not answer: {exc}. Send the message again to retry."
            ) from None
        finally:
            self._sink = None
            if rid is not None:
                prog.pending.pop(rid, None)
        reason = result.get("stopReason") if isinstance(result, dict) else None
        return reason if isinstance(reason, str) else "end_turn"

    async def _stop_prompt(self, prog: _Program, session: str, slot: Reply[Any], sink: Sink) -> None:
        """Shielded and bounded: runs while the run is being cancelled."""
        with trio.move_on_after(self._cancel_wait + self._kill_grace + REAP_S + 1.0) as cs:
            cs.shield = True
            await prog.send_quietly(encode_notification("session/cancel", {"sessionId": session}))
            sink.cancelled()
            with trio.move_on_after(self._cancel_wait) as wait:
                try:
                    await slot.wait()
                except (RpcError, ProgramEnded):
                    pass
            if wait.cancelled_caught:
                log.warning("agent %s did not answer session/cancel within %g s; ending it", self.name,
                            self._cancel_wait)
                prog.end(f"it did not answer the stop within {self._cancel_wait:g} s")
                await prog.reaped.wait()

    # ---- the program ----

    async def _run_program(self, prog: _Program) -> None:
        try:
            with prog.scope:
                await self._serve_program(prog)
        except Exception:
            log.exception("agent %s: its program's task failed", self.name)
            if prog.start_error is None and not prog.ready.is_set():
                prog.start_error = (f"Something went wrong inside the daemon while starting {self.name}; "
                                    "the log has the details.")
        finally:
            prog.end(prog.why or "its conversation closed")
            prog.ready.set()
            prog.reaped.set()
            if self._program is prog:
                self.pid = None
            log.info("agent %s of conversation %s: its program ended: %s", self.name, self.conversation_id, prog.why)

    async def _serve_program(self, prog: _Program) -> None:
        spec = self.spec
        try:
            proc = await start_program(list(spec.command), env=agent_environment(), cwd=str(prog.cwd))
        except StartFailed as exc:
            missing = spec.missing()
            need = f" Install {', '.join(missing)} and make sure it is on the daemon's PATH." if missing else ""
            prog.start_error = f"The agent {self.name} could not be started ({exc}).{need}"
            prog.end("it could not be started")
            return
        if self._program is prog:
            self.pid = proc.pid
        log.info("agent %s started for conversation %s (pid %d): %s", self.name, self.conversation_id, proc.pid,
                 " ".join(spec.command))
        handle = functools.partial(self._on_message, prog)
        async with serving(prog, proc, handle, log=log, label=f"agent {self.name}", kill_grace=self._kill_grace,
                           exit_wait=KILL_GRACE_S) as nursery:
            nursery.start_soon(self._watch_exit, prog, proc)
            try:
                with trio.fail_after(spec.start_timeout_s):
                    result = await prog.request("initialize", initialize_params())
            except trio.TooSlowError:
                prog.start_error = (
                    f"The agent {self.name} did not answer its start (initialize) within "
                    f"{spec.start_timeout_s:g} s, so it was ended. Check that it runs from a terminal "
                    f"({' '.join(spec.command)}); its messages are in the daemon's log."
                )
                prog.end("it did not start in time")
                return
            except RpcError as exc:
                prog.start_error = f"The agent {self.name} refused to start: {exc}."
                prog.end("it failed its handshake")
                return
            except ProgramEnded:
                prog.start_error = (f"The agent {self.name} ended during its start ({prog.why}); its messages "
                                    "are in the daemon's log.")
                return
            prog.can_load = can_load_session(result)
            prog.ready.set()
            await prog.ended.wait()

    async def _watch_exit(self, prog: _Program, proc: trio.Process) -> None:
        """A program that exits while something it started keeps its output open is
        ended too: its end is what a run waits for."""
        while True:
            status = exit_status(proc.pid)
            if status is not None:
                await trio.sleep(KILL_GRACE_S)  # let the reader take its last lines
                prog.end(f"its program exited with code {status}")
                return
            await trio.sleep(WATCH_POLL_S)

    def _on_message(self, prog: _Program, msg: Request | Notification | Ignored, nursery: trio.Nursery) -> None:
        if isinstance(msg, Request):
            # Answered from a task of its own: the reader never waits.
            nursery.start_soon(self._answer, prog, msg)
        elif isinstance(msg, Notification):
            if msg.method != "session/update" or not isinstance(msg.params, dict):
                return
            sink = self._sink
            update = msg.params.get("update")
            if sink is None or prog.session is None or msg.params.get("sessionId") != prog.session:
                return  # a replay of session/load, or nobody asked
            if isinstance(update, dict):
                try:
                    sink.update(update)
                except Exception:
                    log.exception("agent %s: an update could not be shown", self.name)
        elif isinstance(msg, Ignored):
            log.debug("agent %s wrote %s to stdout; ignored", self.name, msg.why)

    async def _answer(self, prog: _Program, msg: Request) -> None:
        params = msg.params if isinstance(msg.params, dict) else {}
        sink = self._sink
        try:
            if msg.method not in ("session/request_permission", "fs/read_text_file", "fs/write_text_file"):
                raise RequestRefused(METHOD_NOT_FOUND, f"bmoe-daemon does not offer {msg.method}")
            if prog.session is None or params.get("sessionId") != prog.session:
                raise RequestRefused(INVALID_PARAMS, "that is not this client's session")
            if msg.method == "session/request_permission":
                if sink is None:
                    result: dict[str, Any] = dict(CANCELLED)
                else:
                    result = await sink.permission(params)
            elif sink is None:
                raise RequestRefused(REFUSED, "no prompt is running, so the daemon serves no file now")
            elif msg.method == "fs/read_text_file":
                result = await sink.read_text_file(params)
            else:
                result = await sink.write_text_file(params)
        except RequestRefused as exc:
            await prog.send_quietly(encode_error(msg.id, exc.code, exc.message))
            return
        except Exception:
            log.exception("agent %s: its request %s failed inside the daemon", self.name, msg.method)
            await prog.send_quietly(encode_error(msg.id, INTERNAL_ERROR, "the daemon failed to answer; see its log"))
            return
        await prog.send_quietly(encode_result(msg.id, result))


class AcpAgents:
    """The agents this daemon can start, and the actor of each conversation that uses
    one, all in one nursery, ended together by `close()`."""

    def __init__(self, specs: Iterable[AgentSpec] = (), *, cancel_wait: float = CANCEL_WAIT_S,
                 kill_grace: float = KILL_GRACE_S) -> None:
        self._specs = {s.id: s for s in specs}
        self._cancel_wait = cancel_wait
        self._kill_grace = kill_grace
        self._agents: dict[str, AcpAgent] = {}
        self._nursery: trio.Nursery | None = None
        self._closing = trio.Event()
        self._stopped = trio.Event()
        self._state = "starting"

    @property
    def specs(self) -> list[AgentSpec]:
        return list(self._specs.values())

    def spec(self, agent_id: str) -> AgentSpec | None:
        return self._specs.get(agent_id)

    def knows(self, agent_id: str) -> bool:
        return agent_id in self._specs

    def listing(self) -> list[dict[str, Any]]:
        """`GET /api/agent`'s rows for these agents: whether each is installed."""
        out: list[dict[str, Any]] = []
        for spec in self._specs.values():
            missing = spec.missing()
            out.append({"id": spec.id, "name": spec.name, "available": not missing, "missing": missing})
        return out

    def running(self, conversation_id: str) -> AcpAgent | None:
        return self._agents.get(conversation_id)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Hold the agents' actors until `close()`; returns once each program is reaped."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._state = "serving"
                task_status.started()
                await self._closing.wait()
                self._state = "stopping"
                for agent in self._agents.values():
                    agent.close()
        finally:
            self._nursery = None
            self._state = "stopped"
            self._stopped.set()

    def close(self) -> None:
        self._closing.set()

    async def wait_stopped(self) -> None:
        """Wait until `run` has returned: every program reaped."""
        await self._stopped.wait()

    async def agent(self, conversation_id: str, agent_id: str) -> AcpAgent:
        """The actor of a conversation's agent, started if needed; AcpFailed when the
        agent is unknown or the daemon is stopping."""
        current = self._agents.get(conversation_id)
        if current is not None and current.spec.id == agent_id and not current.ended.is_set():
            return current
        spec = self._specs.get(agent_id)
        if spec is None:
            raise AcpFailed(f"The agent {agent_id!r} is not offered by this daemon; start a new conversation.")
        if self._nursery is None or self._closing.is_set():
            raise AcpFailed("The daemon is stopping; send the message again once it is back.")
        if current is not None:
            current.close()
        agent = AcpAgent(conversation_id, spec, cancel_wait=self._cancel_wait, kill_grace=self._kill_grace)
        self._agents[conversation_id] = agent
        await self._nursery.start(agent.run)
        return agent

    async def discard(self, conversation_id: str) -> None:
        """End a conversation's agent, its whole group, and wait for it (bounded)."""
        agent = self._agents.pop(conversation_id, None)
        if agent is None:
            return
        agent.close()
        with trio.move_on_after(DISCARD_WAIT_S):
            await agent.wait_stopped()

    def statistics(self) -> ActorStats:
        return ActorStats(kind="acp-agents", id="acp", state=self._state, mailbox=0,
                          children=tuple(a.statistics() for a in self._agents.values()))
