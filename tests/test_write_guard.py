"""bmoe_daemon/write_guard.py: a write to a client that takes nothing is cut, with a real
hypercorn server on loopback and real sockets for the clients (one that never reads, one
that reads); nothing of hypercorn's is replaced."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import attrs
import hypercorn.config
import trio
from hypercorn.trio.run import worker_serve
from hypercorn.utils import wrap_app

from bmoe_daemon import write_guard
from bmoe_daemon.write_guard import WriteGuard, shut_down_connections

CHUNK = b"x" * 16384
HEADERS = [(b"content-type", b"text/plain")]
RCVBUF = 4096  # a small window, so back-pressure reaches the server soon
# Bounds on what the tests wait for: generous for a loaded machine.
FILLED_S = 20.0
CUT_S = 10.0


@attrs.define
class Streamer:
    """An ASGI app that streams CHUNK until its client goes (http.disconnect, as Quart
    watches for it); counts what each request sent and notes when its task ends."""

    sent: dict[int, int] = attrs.field(factory=dict)  # request's client port -> bytes given to send
    ended: set[int] = attrs.field(factory=set)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        port = scope["client"][1]
        self.sent[port] = 0
        try:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    nursery.cancel_scope.cancel()

                nursery.start_soon(watch)
                await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
                while True:
                    await send({"type": "http.response.body", "body": CHUNK, "more_body": True})
                    self.sent[port] += len(CHUNK)
        finally:
            self.ended.add(port)


@attrs.define
class Served:
    host: str
    port: int
    guard: WriteGuard
    app: Streamer
    stop: trio.Event
    finished: trio.Event


@asynccontextmanager
async def serving(stall_s: float) -> AsyncIterator[Served]:
    app = Streamer()
    guard = WriteGuard(app, stall_s=stall_s)
    hconfig = hypercorn.config.Config()
    hconfig.bind = ["127.0.0.1:0"]
    hconfig.graceful_timeout = 1.0
    hconfig.accesslog = None
    sockets = hconfig.create_sockets()
    for sock in sockets.insecure_sockets:
        sock.listen(hconfig.backlog)
    host, port = sockets.insecure_sockets[0].getsockname()[:2]
    stop, finished = trio.Event(), trio.Event()

    async def serve_http(task_status: trio.TaskStatus[None]) -> None:
        try:
            await worker_serve(wrap_app(guard, hconfig.wsgi_max_body_size, "asgi"), hconfig, sockets=sockets,
                               shutdown_trigger=stop.wait, task_status=task_status)
        finally:
            finished.set()

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(guard.run)
            await nursery.start(serve_http)
            yield Served(host, port, guard, app, stop, finished)
            stop.set()
            guard.stopping()
            with trio.fail_after(CUT_S):
                await finished.wait()
            nursery.cancel_scope.cancel()
    finally:
        for sock in sockets.insecure_sockets:
            sock.close()


async def open_client(s: Served) -> trio.SocketStream:
    """A connection that has asked for the stream and read nothing."""
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)  # before connect: it sets the window
    await sock.connect((s.host, s.port))
    stream = trio.SocketStream(sock)
    await stream.send_all(f"GET / HTTP/1.1\r\nHost: {s.host}\r\n\r\n".encode())
    return stream


def port_of(stream: trio.SocketStream) -> int:
    return int(stream.socket.getsockname()[1])


async def wait_write_blocked(s: Served, port: int) -> None:
    """Until the request's writes stop moving: its client's buffers are full."""
    with trio.fail_after(FILLED_S):
        while port not in s.app.sent:
            await trio.sleep(0.01)
        while True:
            before = s.app.sent[port]
            await trio.sleep(0.3)
            if s.app.sent[port] == before and s.guard.writes_in_progress:
                return


async def read_some(stream: trio.SocketStream, n: int) -> int:
    got = 0
    while got < n:
        chunk = await stream.receive_some(65536)
        if not chunk:
            break
        got += len(chunk)
    return got


async def test_a_write_the_client_never_takes_is_cut_and_its_task_ends() -> None:
    async with serving(stall_s=1.0) as s:
        stalled = await open_client(s)
        reader = await open_client(s)
        try:
            await wait_write_blocked(s, port_of(stalled))
            # The reader's requests go on while the other's write is blocked, and after.
            assert await read_some(reader, 200_000) >= 200_000
            with trio.fail_after(CUT_S):
                while port_of(stalled) not in s.app.ended:
                    assert await read_some(reader, 50_000) >= 50_000
            assert s.guard.cut == 1
            assert port_of(reader) not in s.app.ended
            assert await read_some(reader, 200_000) >= 200_000
            # The stalled client finds its connection shut: what was buffered, then the end.
            with trio.fail_after(CUT_S):
                while await stalled.receive_some(65536):
                    pass
        finally:
            await stalled.aclose()
            await reader.aclose()


async def test_a_write_in_progress_when_the_daemon_stops_ends_within_its_bound() -> None:
    # No stall bound to speak of: only stopping ends the blocked write.
    s_ref: list[Served] = []
    took = 0.0
    async with serving(stall_s=3600.0) as s:
        s_ref.append(s)
        stalled = await open_client(s)
        try:
            await wait_write_blocked(s, port_of(stalled))
            assert s.guard.cut == 0
            start = trio.current_time()
            s.stop.set()
            s.guard.stopping()
            with trio.fail_after(CUT_S):
                await s.finished.wait()
            took = trio.current_time() - start
        finally:
            await stalled.aclose()
    assert s_ref[0].guard.cut == 1
    assert took <= hypercorn.config.Config().graceful_timeout + write_guard.STOPPING_WRITE_S + 2.0


async def test_a_write_in_progress_when_cancelled_ends_within_its_bound() -> None:
    """The daemon's nursery cancelled without a stop first: the guard, cancelled too, still
    cuts the write that hypercorn's shield keeps going, so the nursery can end."""
    app = Streamer()
    guard = WriteGuard(app, stall_s=3600.0)
    hconfig = hypercorn.config.Config()
    hconfig.bind = ["127.0.0.1:0"]
    hconfig.accesslog = None
    sockets = hconfig.create_sockets()
    for sock in sockets.insecure_sockets:
        sock.listen(hconfig.backlog)
    host, port = sockets.insecure_sockets[0].getsockname()[:2]
    s = Served(host, port, guard, app, trio.Event(), trio.Event())
    stalled: trio.SocketStream | None = None
    try:
        with trio.fail_after(FILLED_S + CUT_S):
            async with trio.open_nursery() as nursery:
                await nursery.start(guard.run)
                await nursery.start(partial(worker_serve, wrap_app(guard, hconfig.wsgi_max_body_size, "asgi"),
                                            hconfig, sockets=sockets))
                stalled = await open_client(s)
                await wait_write_blocked(s, port_of(stalled))
                start = trio.current_time()
                nursery.cancel_scope.cancel()
        # The client is still there, reading nothing: only the guard's cut ended the write.
        assert trio.current_time() - start <= write_guard.STOPPING_WRITE_S + 2.0
        assert guard.cut == 1
    finally:
        if stalled is not None:
            stalled.socket.close()
        for sock in sockets.insecure_sockets:
            sock.close()


async def test_only_the_connection_named_is_shut_down() -> None:
    """Found by its two ends: not another connection to the same server, and not the
    client's own socket of it (in this same process, its ends are the other way round)."""
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen()
    server_addr = listener.getsockname()[:2]
    clients, accepted = [], []
    for _ in range(2):
        c = trio.socket.socket()
        await c.connect(server_addr)
        a, _ = await listener.accept()
        clients.append(c)
        accepted.append(a)
    try:
        target = (tuple(accepted[0].getsockname()[:2]), tuple(accepted[0].getpeername()[:2]))
        assert shut_down_connections({target}) == {target}
        # Shut on the server's side: its client reads the end, and can no longer be answered.
        assert await clients[0].recv(10) == b""
        try:
            await accepted[0].send(b"late")
            raise AssertionError("the shut connection took a write")
        except OSError:
            pass
        # The other connection works both ways.
        await clients[1].send(b"ping")
        assert await accepted[1].recv(10) == b"ping"
        await accepted[1].send(b"pong")
        assert await clients[1].recv(10) == b"pong"
        assert shut_down_connections({(("127.0.0.1", 1), ("127.0.0.1", 2))}) == set()
    finally:
        for sock in (*clients, *accepted, listener):
            sock.close()
