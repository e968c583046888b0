"""A child program the daemon speaks JSON-RPC to, one message a line on its stdin and
stdout: what the MCP servers (actors/peers/mcp/servers.py) and the other agents (actors/peers/acp/agents.py) share.

A program is started in a session and process group of its own, so its whole group
can be signalled as one: whatever it starts (`npx`'s node, an agent's tools) ends
with it. Its group is signalled before the leader is reaped, while the group's id
cannot have been given to another process. Its stderr goes to the log, line by line,
under a label that names it; never to a model.

`Program` is one run of it: our requests awaiting answers (ids of our own; an answer
is matched only against them), the lock that keeps each message whole on its input,
and how it ended. `serving()` reads it while the actor speaks its own protocol, and
ends and reaps it on the way out. What a program sends besides answers (its requests,
its notifications) is the actor's to handle.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio

from actors.actor import Reply
from actors.peers.jsonrpc import (
    Ignored,
    LineBuffer,
    Notification,
    Request,
    Response,
    WireError,
    encode_request,
    error_text,
    parse,
)
from actors.process import READ_CHUNK, read_stderr, reap, wait_exit

# What a program sends that is not an answer to us, and the nursery to start tasks in:
# the reader never waits on the program's input itself.
Handler = Callable[[Request | Notification | Ignored, trio.Nursery], None]


class ProgramEnded(Exception):
    """The program ended while a request waited for its answer."""


class RpcError(Exception):
    """The program answered a request with a JSON-RPC error."""

    def __init__(self, error: dict[str, object]) -> None:
        super().__init__(error_text(error))
        self.error = error


class Program:
    """One run of a program: its process, our requests awaiting answers, and why it
    ended. Its task runs under `scope`, which `end()` cancels."""

    def __init__(self) -> None:
        self.scope = trio.CancelScope()
        self.proc: trio.Process | None = None
        self.pending: dict[int, Reply[object]] = {}
        self.ended = trio.Event()
        self.why = ""
        self.secrets: tuple[str, ...] = ()  # values it was given that no log line shows
        self._ids = itertools.count(1)
        self._lock = trio.Lock()

    def redact(self, text: str) -> str:
        """`text` with every secret the program was given replaced."""
        for secret in self.secrets:
            text = text.replace(secret, "[secret]")
        return text

    def end(self, why: str) -> None:
        """End the program (its task reaps it) and fail every request still waiting.
        Synchronous, so a cancelled caller can call it on its way out."""
        if not self.ended.is_set():
            self.why = why
            self.ended.set()
        self.scope.cancel()
        for slot in self.pending.values():
            slot.fail(ProgramEnded(self.why))

    async def send(self, data: bytes) -> None:
        """Write one whole message to its input; ProgramEnded when it cannot take it."""
        if self.ended.is_set() or self.proc is None or self.proc.stdin is None:
            raise ProgramEnded(self.why or "it is not running")
        try:
            async with self._lock:
                await self.proc.stdin.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ProgramEnded(self.why or "its input closed") from None

    async def send_quietly(self, data: bytes) -> None:
        """send(), with a program that ended left alone."""
        try:
            await self.send(data)
        except ProgramEnded:
            pass

    async def start_request(self, method: str, params: object = None) -> tuple[int, Reply[object]]:
        """Send a request; its id and the slot its answer fills (the caller pops it
        from `pending`). The answer is a JSON value as the program sent it."""
        rid = next(self._ids)
        slot: Reply[object] = Reply()
        self.pending[rid] = slot
        try:
            await self.send(encode_request(rid, method, params))
        except BaseException:
            self.pending.pop(rid, None)
            raise
        return rid, slot

    async def request(self, method: str, params: object = None) -> object:
        """Send a request and wait for its answer (a JSON value as the program sent it);
        RpcError or ProgramEnded otherwise."""
        rid, slot = await self.start_request(method, params)
        try:
            return await slot.wait()
        finally:
            self.pending.pop(rid, None)

    def dispatch(self, msg: Response) -> None:
        answer(self.pending, msg)

    async def read_stdout(self, handle: Handler, nursery: trio.Nursery, exit_wait: float) -> None:
        """Read its messages until its output closes: answers fill our requests, the rest
        goes to `handle`. Then it is ended: with its exit code if it exits within
        `exit_wait` seconds, or as one that broke the protocol."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        lines = LineBuffer()
        try:
            while True:
                chunk = await proc.stdout.receive_some(READ_CHUNK)
                if not chunk:
                    break
                for line in lines.feed(chunk):
                    msg = parse(line)
                    if isinstance(msg, Response):
                        self.dispatch(msg)
                    else:
                        handle(msg, nursery)
        except WireError as exc:
            self.end(f"it broke the protocol: {exc}")
            return
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        code = await wait_exit(proc.pid, exit_wait)
        self.end(f"its program exited with code {code}" if code is not None else "its program closed its output")


def answer(pending: dict[int, Reply[object]], msg: Response) -> None:
    """Fill the slot of the request `msg` answers (an answer to a request given up on is dropped)."""
    slot = pending.get(msg.id)
    if slot is None:
        return
    if msg.error is not None:
        slot.fail(RpcError(msg.error))
    else:
        slot.set(msg.result)


@asynccontextmanager
async def serving(prog: Program, proc: trio.Process, handle: Handler, *, log: logging.Logger, label: str,
                  kill_grace: float, exit_wait: float) -> AsyncIterator[trio.Nursery]:
    """`proc` becomes `prog`'s process. While the body runs, its stderr goes to `log`
    under `label` and its stdout is read (Program.read_stdout); the body gets the
    nursery those readers run in. On the way out, by return, error or cancellation,
    its whole group is ended and it is reaped (`reap`, shielded and bounded)."""
    prog.proc = proc
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_stderr, proc, log, label, prog.redact if prog.secrets else None)
            nursery.start_soon(prog.read_stdout, handle, nursery, exit_wait)
            yield nursery
    finally:
        await reap(proc, kill_grace, log, label)
