"""Actor plumbing shared by every actor: mailboxes, replies, statistics.

An actor owns a bounded mailbox (`trio.open_memory_channel`) and serves it in
`run()`. A request carries a `Reply`; when the actor exits, every request still
queued or in hand is failed with `ActorGone` so no caller waits forever.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Generic, TypeVar, TypeVarTuple

import attrs
import outcome
import trio

from actors.errors import ActorGone

T = TypeVar("T")
Args = TypeVarTuple("Args")

MAILBOX_SIZE = 64

_ids = itertools.count(1)


def next_id(prefix: str) -> str:
    """A process-unique, URL-safe id for actors and runs."""
    return f"{prefix}{next(_ids)}"


class Reply(Generic[T]):
    """A one-shot reply slot: the actor sets it once, the caller waits for it."""

    __slots__ = ("_event", "_outcome")

    def __init__(self) -> None:
        self._event = trio.Event()
        self._outcome: outcome.Outcome[T] | None = None

    @property
    def done(self) -> bool:
        return self._event.is_set()

    def set(self, value: T) -> None:
        if not self._event.is_set():
            self._outcome = outcome.Value(value)
            self._event.set()

    def fail(self, exc: BaseException) -> None:
        if not self._event.is_set():
            self._outcome = outcome.Error(exc)
            self._event.set()

    def capture(self, fn: Callable[[*Args], T], *args: *Args) -> None:
        """Set the reply to what `fn(*args)` returns or raises."""
        if not self._event.is_set():
            self._outcome = outcome.capture(fn, *args)
            self._event.set()

    async def wait(self) -> T:
        """Wait for the reply; raises what the actor failed it with.

        Cancelled: the caller stops waiting; the actor may still complete the request.
        """
        await self._event.wait()
        assert self._outcome is not None
        return self._outcome.unwrap()


@attrs.frozen
class ActorStats:
    """A snapshot of one actor, for the debug route."""

    kind: str
    id: str
    state: str
    mailbox: int
    run: str | None = None
    children: tuple[ActorStats, ...] = ()


def mailbox_depth(rx: trio.MemoryReceiveChannel[object]) -> int:
    return rx.statistics().current_buffer_used


def fail_pending(rx: trio.MemoryReceiveChannel[object], why: str) -> None:
    """Fail every request still queued in a closed-down mailbox."""
    while True:
        try:
            msg = rx.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
            return
        reply = getattr(msg, "reply", None)
        if isinstance(reply, Reply):
            reply.fail(ActorGone(why))
