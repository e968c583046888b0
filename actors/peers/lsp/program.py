"""A language server's program: actors/peers/program.py's `Program` speaking LSP's framing
(actors/peers/lsp/wire.py), with the documents it has open and what it published of them.

`serving()` (actors/peers/program.py) runs it as it runs an MCP server's: stderr to the log,
its output read here, its group ended and reaped on the way out. Two things differ:
its messages are `Content-Length` frames, not lines; and it is watched for its
leader's exit without reaping it, since a child it left may hold its output open,
and whatever is left in its group is killed while the group's id is still its own.
"""

from __future__ import annotations

import math
import signal

import trio

from actors.peers.jsonrpc import Response, WireError, parse
from actors.peers.lsp.wire import Diagnostic, FrameBuffer, Sync, frame
from actors.peers.program import Handler, Program
from actors.process import READ_CHUNK, exit_status, signal_group, wait_exit


class LspProgram(Program):
    """A language server's program: actors/peers/program.py's Program with LSP's framing,
    and the documents it has open and what it published of them."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: str | None = None  # why we ended it; None while it has not been asked to
        self.wake = trio.Event()  # it ended, or was asked to
        self.news = trio.Event()  # replaced at each publication; set on its end too
        self.sync = Sync()
        self.docs: dict[str, int] = {}  # key -> the version last sent, least recently edited first
        self.published: dict[str, tuple[int, int | None, tuple[Diagnostic, ...]]] = {}  # key -> (seq, version, diags)
        self.seq = 0
        self.reaped = trio.Event()

    def end(self, why: str) -> None:
        """Program.end; and a leader that has exited already (not reaped yet, so its
        group's id is still its own) has whatever it left in its group killed now:
        `reap` signals the group only while the leader runs."""
        super().end(why)
        self.wake.set()
        self.news.set()
        if self.proc is not None and exit_status(self.proc.pid) is not None:
            signal_group(self.proc.pid, signal.SIGKILL)

    def ask_to_end(self, why: str) -> None:
        """Ask its task to end it politely (not a crash)."""
        if self.asked is None:
            self.asked = why
        self.wake.set()

    async def send(self, data: bytes) -> None:
        await super().send(frame(data))

    def publish(self, key: str, version: int | None, diagnostics: tuple[Diagnostic, ...]) -> None:
        if key not in self.docs:
            return  # a file we did not open (a server that checks the whole project)
        self.seq += 1
        self.published[key] = (self.seq, version, diagnostics)
        news, self.news = self.news, trio.Event()
        news.set()

    async def read_stdout(self, handle: Handler, nursery: trio.Nursery, exit_wait: float) -> None:
        """Program.read_stdout with `Content-Length` frames instead of lines."""
        proc = self.proc
        assert proc is not None and proc.stdout is not None
        frames = FrameBuffer()
        try:
            while True:
                chunk = await proc.stdout.receive_some(READ_CHUNK)
                if not chunk:
                    break
                for body in frames.feed(chunk):
                    msg = parse(body)
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


async def watch_exit(prog: LspProgram, proc: trio.Process) -> None:
    """End the program once its leader exits, without reaping it: a child it left
    may hold its output open, so the reader alone would not see the end."""
    code = await wait_exit(proc.pid, math.inf)
    prog.end(f"its program exited with code {code}")
