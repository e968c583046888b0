"""One long-lived OS thread for a local model's computation.

llama.cpp's CPU backend splits a prompt's reading over OpenMP threads, and OpenMP
keeps a team of helper threads per calling thread. Run from trio's thread cache, a
turn may start on a thread other than the last turn's: it then builds a team of its
own while the old team's threads still spin for a while after their last work (what
OpenMP does by default before it sleeps), and on a machine with few cores those
spinning threads take a core from the turn's reading. Bare llama.cpp calls from
one thread every time; so does the daemon, through this.

`run` hands one call to the thread and waits for it without holding trio's loop;
`soon` hands one that nobody waits for; the calls run one at a time, in the order
they came. Like `trio.to_thread.run_sync` by
default, a call cannot be abandoned: a cancellation waits for it to end (a turn's own
abort flag is what makes it end soon).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import TypeVar, TypeVarTuple

import outcome
import trio

log = logging.getLogger(__name__)

T = TypeVar("T")
Args = TypeVarTuple("Args")


class ModelThread:
    """See the module docstring. The thread starts with the first call and ends with
    `close` (or with the process: it is a daemon thread)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def _serve(self) -> None:
        while (call := self._calls.get()) is not None:
            call()

    async def run(self, fn: Callable[[*Args], T], *args: *Args) -> T:
        """`fn(*args)` on the model's thread; its result, or its exception raised here."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name=self._name, daemon=True)
            self._thread.start()
        token = trio.lowlevel.current_trio_token()
        task = trio.lowlevel.current_task()
        result: list[outcome.Outcome[T]] = []

        def call() -> None:
            result.append(outcome.capture(fn, *args))
            token.run_sync_soon(trio.lowlevel.reschedule, task)

        await trio.lowlevel.checkpoint_if_cancelled()
        self._calls.put(call)
        await trio.lowlevel.wait_task_rescheduled(lambda _raise_cancel: trio.lowlevel.Abort.FAILED)
        return result[0].unwrap()

    def soon(self, fn: Callable[[], object]) -> None:
        """`fn()` on the model's thread after the calls given before, not waited for:
        work that may follow a turn but must not delay its result. An exception it
        raises is logged, and the thread goes on."""
        if self._thread is None:
            return  # not started, or closed: there was no turn for it to follow

        def call() -> None:
            try:
                fn()
            except Exception:
                log.exception("%s: %s failed", self._name, getattr(fn, "__qualname__", fn))

        self._calls.put(call)

    def close(self) -> None:
        """End the thread once the calls given before have run."""
        if self._thread is not None:
            self._calls.put(None)
            self._thread = None
