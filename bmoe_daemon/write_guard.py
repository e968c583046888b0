"""A bound on every write to an HTTP client, kept with hypercorn's public interface only.

hypercorn writes each chunk of a response shielded from cancellation (a write cut in the
middle would corrupt the response) and with no time limit. A client that stops reading
(or vanishes without closing) fills the socket's buffers, and the write then waits for as
long as the connection stays open: it holds the task that writes (an event stream's, a
streaming /v1 answer's), and that task holds the daemon's exit, since hypercorn waits for
a connection's tasks before it closes the connection.

`WriteGuard` is the ASGI application hypercorn serves, around the daemon's own. It counts
the messages each request's application sends and the sends that returned, and its `run`
looks at the writes in progress every CHECK_S. One still in progress WRITE_STALL_S after a
look first saw it (STOPPING_WRITE_S once the daemon stops) means the client takes nothing:
the guard shuts the connection down. The connection's socket is found among the process's open files by
its two addresses (the ASGI scope's `server` and `client`) and `shutdown()` is called on a
duplicate of it: hypercorn's write then fails as on any connection the client broke, and
hypercorn closes the connection and ends the request on its own path. An event-stream
client reconnects with Last-Event-ID and misses nothing.

Nothing here replaces or reaches into hypercorn: only ASGI (hypercorn's types of it), the
socket API and the process's file table.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
from collections.abc import Iterator
from typing import Any

import attrs
import trio
from hypercorn.typing import ASGIFramework, ASGIReceiveCallable, ASGISendCallable, ASGISendEvent, Scope

# A write that takes no byte of the client's for this long has stalled: the client stopped
# reading, or vanished without closing.
WRITE_STALL_S = 10.0
# Once the daemon stops, a write waits at most this long for its client.
STOPPING_WRITE_S = 0.5
# How often the writes in progress are looked at; more often while the daemon stops.
CHECK_S = 1.0
STOPPING_CHECK_S = 0.1
# Cancelled with the daemon, the guard goes on cutting stalled writes (the ones hypercorn's
# shield keeps going) for at most this long, so the daemon's exit has a bound too.
STOPPED_WATCH_S = 5.0

Address = tuple[Any, ...]

log = logging.getLogger("bmoe.http")


@attrs.define(eq=False)
class _Exchange:
    """One request's connection, as the ASGI scope names its two ends, and its sends."""

    server: Address | None
    client: Address | None
    begun: int = 0  # sends begun
    done: int = 0  # sends returned: one is in progress while they differ
    watched: int = -1  # the send in progress at the last look (its number), -1: none
    since: float = 0.0  # when a look first saw that send in progress
    cut: bool = False  # its connection was shut down (or looked for in vain): not again


class WriteGuard:
    """An ASGI application around `app` that bounds its writes (see the module).

    A send costs two counts and nothing else: the clock is read by the looks only, so a
    write is known to be in progress from the first look that sees it (within CHECK_S)."""

    def __init__(self, app: ASGIFramework, *, stall_s: float = WRITE_STALL_S) -> None:
        self.app = app
        self._stall_s = stall_s
        self._live: set[_Exchange] = set()
        self._stopping = False
        self._wake = trio.Event()
        self.cut = 0  # connections shut down, for the debug route and the tests

    async def __call__(self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        server, client = scope.get("server"), scope.get("client")
        exchange = _Exchange(tuple(server) if server else None, tuple(client) if client else None)

        async def guarded_send(message: ASGISendEvent) -> None:
            exchange.begun += 1
            try:
                await send(message)
            finally:
                exchange.done += 1

        self._live.add(exchange)
        try:
            await self.app(scope, receive, guarded_send)
        finally:
            self._live.discard(exchange)

    @property
    def writes_in_progress(self) -> int:
        return sum(1 for x in self._live if x.begun != x.done)

    def oldest_write_s(self) -> float:
        """How long the oldest write in progress has been seen waiting for its client
        (0: none); a look sees a write within CHECK_S of its start."""
        now = trio.current_time()
        return max((now - x.since for x in self._live if x.begun != x.done and x.watched == x.begun), default=0.0)

    def stopping(self) -> None:
        """The daemon stops: from now on a write waits at most STOPPING_WRITE_S."""
        self._stopping = True
        self._wake.set()

    def look(self) -> int:
        """Note the writes in progress, and shut down the connection of each one seen in
        progress for longer than the bound; returns how many were shut down."""
        limit = STOPPING_WRITE_S if self._stopping else self._stall_s
        now = trio.current_time()
        stalled = []
        for x in self._live:
            if x.begun == x.done or x.cut:
                x.watched = -1
            elif x.watched != x.begun:
                x.watched, x.since = x.begun, now
            elif now - x.since >= limit:
                stalled.append(x)
        if not stalled:
            return 0
        found = shut_down_connections({(x.server, x.client) for x in stalled if x.server and x.client})
        for x in stalled:
            x.cut = True  # its send ends with the connection
            if (x.server, x.client) in found:
                log.info("a client at %s took nothing for %.1f s: its connection is shut", x.client, now - x.since)
            else:
                log.warning("a client at %s took nothing for %.1f s, but its connection was not found among "
                            "the daemon's open files: the write goes on waiting", x.client, now - x.since)
        self.cut += len(found)
        return len(found)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Forever: look at the writes in progress. Cancelled (the daemon ends), it goes
        on for at most STOPPED_WATCH_S while writes are in progress, as if stopping, so
        that the ones hypercorn's shield holds end too."""
        task_status.started()
        try:
            while True:
                with trio.move_on_after(STOPPING_CHECK_S if self._stopping else CHECK_S):
                    await self._wake.wait()
                if self._wake.is_set():
                    self._wake = trio.Event()
                self.look()
        finally:
            self._stopping = True
            with trio.move_on_after(STOPPED_WATCH_S, shield=True):
                while self.writes_in_progress:
                    self.look()
                    await trio.sleep(STOPPING_CHECK_S)


def _open_files() -> Iterator[int]:
    try:
        names = os.listdir("/dev/fd")  # Linux (/proc/self/fd) and macOS
    except OSError:
        return
    for name in names:
        if name.isdigit():
            yield int(name)


def shut_down_connections(pairs: set[tuple[Address, Address]]) -> set[tuple[Address, Address]]:
    """Shut down (both ways) each TCP connection of this process whose own end is the
    first address of a pair and whose peer is the second; returns the pairs found.

    The socket is reached through a duplicate of its file descriptor, so whoever holds it
    keeps it open and sees the connection broken, as if the client had left."""
    found: set[tuple[Address, Address]] = set()
    for fd in _open_files():
        if len(found) == len(pairs):
            break
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            sock = socket.socket(fileno=os.dup(fd))
        except OSError:  # closed since it was listed, or not a socket Python knows
            continue
        with sock:
            try:
                if sock.type != socket.SOCK_STREAM:
                    continue
                pair = (tuple(sock.getsockname()[:2]), tuple(sock.getpeername()[:2]))
                if pair not in pairs:
                    continue
                sock.shutdown(socket.SHUT_RDWR)
                found.add(pair)
            except OSError:  # not connected, or gone already
                continue
    return found
