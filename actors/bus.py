"""The event bus: numbered events, a replay buffer, and one bounded queue per subscriber.

Every event gets the next number. The last `REPLAY_EVENTS` are kept so a client that
reconnects with `Last-Event-ID` receives what it missed. Publishing never blocks: a
subscriber whose queue is full is dropped and told so (its stream ends with a
`lagged` event and the client reconnects and replays), so one slow client never holds
up the others or the run that produced the event.
"""

from __future__ import annotations

import collections
import contextlib
import json
from collections.abc import Iterator

import attrs
import trio

REPLAY_EVENTS = 2000
SUBSCRIBER_QUEUE = 4096


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


@attrs.define
class _Subscriber:
    send: trio.MemorySendChannel[Event | Ping]
    local: bool
    dropped: bool = False
    sent: int = 0  # events queued, so keepalive sees which subscribers were quiet
    sent_at_last_look: int = -1  # the first look only records


class Subscription:
    """What `EventBus.subscribe` yields: the replayed events first, then live ones."""

    def __init__(self, backlog: list[Event], rx: trio.MemoryReceiveChannel[Event | Ping]) -> None:
        self._backlog = collections.deque(backlog)
        self._rx = rx

    def receive_nowait(self) -> Event | Ping:
        if self._backlog:
            return self._backlog.popleft()
        return self._rx.receive_nowait()

    async def receive(self) -> Event | Ping:
        if self._backlog:
            return self._backlog.popleft()
        return await self._rx.receive()


class EventBus:
    """Numbered broadcast of the daemon's events."""

    def __init__(self, *, replay: int = REPLAY_EVENTS, queue: int = SUBSCRIBER_QUEUE) -> None:
        self._seq = 0
        self._replay: collections.deque[Event] = collections.deque(maxlen=replay)
        self._subs: set[int] = set()
        self._by_key: dict[int, _Subscriber] = {}
        self._queue = queue
        self._keys = 0

    @property
    def last_id(self) -> int:
        return self._seq

    @property
    def subscribers(self) -> int:
        return len(self._by_key)

    def publish(self, name: str, data: object, *, local_only: bool = False) -> Event:
        """Number and send an event to every subscriber; never blocks."""
        self._seq += 1
        event = Event(self._seq, name, data, local_only)
        self._replay.append(event)
        for key, sub in list(self._by_key.items()):
            if local_only and not sub.local:
                continue
            self._offer(key, sub, event)
        return event

    async def keepalive(self, every: float, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Forever: a subscriber that was sent nothing for `every` seconds gets a Ping.

        One timer for all streams, so a stream waits on its queue alone and a delta
        costs no timeout of its own per subscriber."""
        task_status.started()
        while True:
            await trio.sleep(every / 2)
            for key, sub in list(self._by_key.items()):
                if sub.sent == sub.sent_at_last_look:
                    self._offer(key, sub, PING)
                sub.sent_at_last_look = sub.sent

    def _offer(self, key: int, sub: _Subscriber, item: Event | Ping) -> None:
        """Queue `item` for one subscriber without blocking; a full queue drops it."""
        try:
            sub.send.send_nowait(item)
            sub.sent += 1
        except trio.WouldBlock:
            self._drop(key, sub)
        except trio.BrokenResourceError:
            self._by_key.pop(key, None)

    def _drop(self, key: int, sub: _Subscriber) -> None:
        # The queue is full, so there is no room to say so in it: close the channel.
        # The reader sees the end, and the stream tells its client it lagged.
        sub.dropped = True
        sub.send.close()
        self._by_key.pop(key, None)

    @contextlib.contextmanager
    def subscribe(self, *, after: int | None = None, local: bool = True) -> Iterator[Subscription]:
        """Subscribe; with `after`, the held events numbered above it come first.

        Leaving the block unsubscribes, whatever ends it.
        """
        send, rx = trio.open_memory_channel[Event | Ping](self._queue)
        backlog: list[Event] = []
        if after is not None:
            backlog = [e for e in self._replay if e.id > after and (local or not e.local_only)]
        self._keys += 1
        key = self._keys
        self._by_key[key] = _Subscriber(send, local)
        try:
            yield Subscription(backlog, rx)
        finally:
            sub = self._by_key.pop(key, None)
            if sub is not None:
                sub.send.close()
            rx.close()
