"""The event bus: numbered events, a replay buffer, and one bounded queue per subscriber.

Every event gets the next number. The last `REPLAY_EVENTS` are kept so a client that
reconnects with `Last-Event-ID` receives what it missed. Publishing never blocks: a
subscriber whose queue is full is dropped and told so (its stream ends with a
`lagged` event and the client reconnects and replays), so one slow client never holds
up the others or the run that produced the event.

A queue is a deque, and a subscriber waiting on it is woken with trio's lowlevel
`reschedule`, not a memory channel: a token's delta goes to every subscriber, and the
channel's send and receive cost about as much again as the rest of the bus (measured
with ops/bench/event_latency.py).
"""

from __future__ import annotations

import collections
import contextlib
import json
from collections.abc import Callable, Iterator

import attrs
import trio

REPLAY_EVENTS = 2000
SUBSCRIBER_QUEUE = 4096
# Subscribers woken at once by an event; each one woken wakes the next waiting, so an
# event reaches WAKE_GROUP more subscribers each scheduler round. A stream's write takes
# two rounds of its own (hypercorn's send lock, then the socket's send): woken all at
# once, every stream would get its bytes ready before the first one wrote them; woken in
# groups, the first write while the next get ready.
WAKE_GROUP = 8


@attrs.frozen
class Event:
    id: int
    name: str
    data: object  # anything json.dumps takes
    # Events about a conversation with a workspace or a provider route, and task
    # events, go to local subscribers only.
    local_only: bool = False
    # Encoded once, on first use, however many subscribers read the event: the JSON
    # text and the whole Server-Sent Events frame.
    _json: str | None = attrs.field(default=None, init=False, eq=False, repr=False)
    _frame: bytes | None = attrs.field(default=None, init=False, eq=False, repr=False)

    def data_json(self) -> str:
        if self._json is None:
            object.__setattr__(self, "_json", json.dumps(self.data, separators=(",", ":"), ensure_ascii=False))
        assert self._json is not None
        return self._json

    def sse_frame(self) -> bytes:
        if self._frame is None:
            frame = f"id: {self.id}\nevent: {self.name}\ndata: {self.data_json()}\n\n".encode()
            object.__setattr__(self, "_frame", frame)
        assert self._frame is not None
        return self._frame


@attrs.frozen
class Ping:
    """Put in a quiet subscriber's queue by `EventBus.keepalive`: time to tell the
    client the stream is alive."""


PING = Ping()


@attrs.define(eq=False)
class _Subscriber:
    """One subscriber's bounded queue, and its task while that waits for the queue."""

    local: bool
    queue: collections.deque[Event | Ping] = attrs.field(factory=collections.deque)
    waiter: trio.lowlevel.Task | None = None
    in_line: bool = False  # in the bus's line of subscribers to wake
    dropped: bool = False  # its queue overflowed: it gets what is queued, then the end
    closed: bool = False  # unsubscribed
    sent: int = 0  # items queued, so keepalive sees which subscribers were quiet
    sent_at_last_look: int = -1  # the first look only records

    def wake(self) -> None:
        task = self.waiter
        if task is not None:
            self.waiter = None
            trio.lowlevel.reschedule(task)


class Subscription:
    """What `EventBus.subscribe` yields: the replayed events first, then live ones.

    Receiving is a trio channel's, without the channel: `receive` waits for an item,
    `receive_nowait` raises trio.WouldBlock when there is none, and both raise
    trio.EndOfChannel once a subscriber the bus dropped has taken what was queued."""

    def __init__(self, backlog: list[Event], sub: _Subscriber, wake_next: Callable[[int], None]) -> None:
        self._backlog = collections.deque(backlog)
        self._sub = sub
        self._wake_next = wake_next

    def receive_nowait(self) -> Event | Ping:
        if self._backlog:
            return self._backlog.popleft()
        sub = self._sub
        if sub.queue:
            return sub.queue.popleft()
        if sub.closed:
            raise trio.ClosedResourceError
        if sub.dropped:
            raise trio.EndOfChannel
        raise trio.WouldBlock

    async def receive(self) -> Event | Ping:
        return (await self.receive_batch(1))[0]

    async def receive_batch(self, limit: int) -> list[Event | Ping]:
        """At least one item and at most `limit`: what is queued, or else the next to come.
        A checkpoint, as trio's receive is."""
        sub = self._sub
        queue = sub.queue
        if self._backlog or queue:
            await trio.lowlevel.checkpoint()
        else:
            while not queue:
                if sub.closed:
                    raise trio.ClosedResourceError
                if sub.dropped:
                    raise trio.EndOfChannel
                await self._wait()
                self._wake_next(1)  # woken: the next in line, for the next round
            if len(queue) == 1:  # the usual wakeup: one event
                return [queue.popleft()]
        out: list[Event | Ping] = []
        for source in (self._backlog, queue):
            while source and len(out) < limit:
                out.append(source.popleft())
        if not out:  # emptied while the checkpoint ran (unsubscribed: the bus never takes from a queue)
            return await self.receive_batch(limit)
        return out

    async def _wait(self) -> None:
        sub = self._sub
        sub.waiter = trio.lowlevel.current_task()

        def abort(_: object) -> trio.lowlevel.Abort:
            sub.waiter = None
            return trio.lowlevel.Abort.SUCCEEDED

        await trio.lowlevel.wait_task_rescheduled(abort)


class EventBus:
    """Numbered broadcast of the daemon's events."""

    def __init__(self, *, replay: int = REPLAY_EVENTS, queue: int = SUBSCRIBER_QUEUE) -> None:
        self._seq = 0
        self._replay: collections.deque[Event] = collections.deque(maxlen=replay)
        self._subs: dict[int, _Subscriber] = {}
        self._queue = queue
        self._keys = 0
        self._line: collections.deque[_Subscriber] = collections.deque()  # waiting, to be woken

    @property
    def last_id(self) -> int:
        return self._seq

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    def publish(self, name: str, data: object, *, local_only: bool = False) -> Event:
        """Number and send an event to every subscriber; never blocks.

        Sending is an append to each subscriber's queue and, for a subscriber waiting,
        the waking of its task: one event costs that per subscriber, nothing more."""
        self._seq += 1
        event = Event(self._seq, name, data, local_only)
        self._replay.append(event)
        full: list[int] = []
        bound = self._queue
        line = self._line
        for key, sub in self._subs.items():
            if local_only and not sub.local:
                continue
            queue = sub.queue
            if len(queue) >= bound:
                full.append(key)
                continue
            queue.append(event)
            sub.sent += 1
            if sub.waiter is not None and not sub.in_line:
                sub.in_line = True
                line.append(sub)
        for key in full:
            self._drop(key)
        self._wake_next(WAKE_GROUP)
        return event

    def _wake_next(self, n: int) -> None:
        """Wake the next `n` subscribers in line that still wait."""
        line = self._line
        while n and line:
            sub = line.popleft()
            sub.in_line = False
            if sub.waiter is not None:
                sub.wake()
                n -= 1

    async def keepalive(self, every: float, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Forever: a subscriber that was sent nothing for `every` seconds gets a Ping.

        One timer for all streams, so a stream waits on its queue alone and a delta
        costs no timeout of its own per subscriber."""
        task_status.started()
        while True:
            await trio.sleep(every / 2)
            for sub in self._subs.values():
                if sub.sent == sub.sent_at_last_look and len(sub.queue) < self._queue:
                    sub.queue.append(PING)
                    sub.sent += 1
                    sub.wake()
                sub.sent_at_last_look = sub.sent

    def _drop(self, key: int) -> None:
        # The queue is full, so there is no room to say so in it: the subscriber takes
        # what is queued, then sees the end, and the stream tells its client it lagged.
        sub = self._subs.pop(key)
        sub.dropped = True
        sub.wake()

    @contextlib.contextmanager
    def subscribe(self, *, after: int | None = None, local: bool = True) -> Iterator[Subscription]:
        """Subscribe; with `after`, the held events numbered above it come first.

        Leaving the block unsubscribes, whatever ends it.
        """
        backlog: list[Event] = []
        if after is not None:
            backlog = [e for e in self._replay if e.id > after and (local or not e.local_only)]
        self._keys += 1
        key = self._keys
        sub = _Subscriber(local)
        self._subs[key] = sub
        try:
            yield Subscription(backlog, sub, self._wake_next)
        finally:
            self._subs.pop(key, None)
            sub.closed = True
            sub.queue.clear()
