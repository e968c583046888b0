"""bmoe_daemon/http_send.py: hypercorn's chunk writes without a scheduler round first."""

from __future__ import annotations

import types

import pytest
import trio
from hypercorn.events import Closed, RawData
from hypercorn.trio import tcp_server

from bmoe_daemon import http_send


class Stream:
    def __init__(self, order: list[str], broken: bool = False) -> None:
        self.order = order
        self.broken = broken

    async def send_all(self, data: bytes) -> None:
        if self.broken:
            raise trio.BrokenResourceError
        self.order.append(f"sent {data.decode()}")
        await trio.lowlevel.checkpoint()  # trio's send_all yields after it writes


class Protocol:
    def __init__(self, order: list[str]) -> None:
        self.order = order

    async def handle(self, event: object) -> None:
        self.order.append(type(event).__name__)


def server(order: list[str], broken: bool = False) -> types.SimpleNamespace:
    return types.SimpleNamespace(send_lock=trio.Lock(), stream=Stream(order, broken), protocol=Protocol(order))


async def race(send, conn, order: list[str]) -> None:
    async def other() -> None:
        order.append("other task")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        await send(conn, RawData(data=b"frame"))


async def test_a_free_lock_writes_before_other_tasks_run() -> None:
    http_send.install()
    assert tcp_server.TCPServer.protocol_send is http_send._protocol_send
    order: list[str] = []
    await race(http_send._protocol_send, server(order), order)
    assert order == ["sent frame", "other task"]


async def test_no_checkpoint_comes_before_the_write() -> None:
    # In an already-cancelled scope, a checkpoint before the write would raise there.
    # hypercorn's own method has one (in Lock.acquire), which is what is replaced.
    http_send.install()
    order: list[str] = []
    with trio.CancelScope() as scope:
        scope.cancel()
        await http_send._protocol_send(server(order), RawData(data=b"frame"))
    assert order == ["sent frame"]
    order.clear()
    with trio.CancelScope() as scope:
        scope.cancel()
        await http_send._ORIGINAL[0](server(order), RawData(data=b"frame"))
    assert order == [] and scope.cancelled_caught


async def test_a_busy_lock_is_waited_for_and_order_kept(autojump_clock) -> None:
    order: list[str] = []
    conn = server(order)
    async with trio.open_nursery() as nursery:
        await conn.send_lock.acquire()
        nursery.start_soon(http_send._protocol_send, conn, RawData(data=b"second"))
        await trio.sleep(0.01)
        assert order == []  # waiting for the lock
        order.append("first done")
        conn.send_lock.release()
    assert order == ["first done", "sent second"]
    assert not conn.send_lock.locked()


async def test_a_broken_stream_closes_and_releases_the_lock() -> None:
    order: list[str] = []
    conn = server(order, broken=True)
    await http_send._protocol_send(conn, RawData(data=b"x"))
    assert order == ["Closed"]
    assert not conn.send_lock.locked()


async def test_other_events_take_hypercorns_own_path(monkeypatch) -> None:
    seen: list[object] = []

    async def original(self, event):
        seen.append(event)

    monkeypatch.setattr(http_send, "_ORIGINAL", [original])
    await http_send._protocol_send(server([]), Closed())
    assert len(seen) == 1 and isinstance(seen[0], Closed)


def test_the_installed_hypercorn_has_the_method_it_was_written_against() -> None:
    original = http_send._ORIGINAL[0] if http_send._ORIGINAL else tcp_server.TCPServer.protocol_send
    assert http_send.source_sha256(original) == http_send.PROTOCOL_SEND_SHA256
    http_send.check_replaceable(original, "installed")


class ChangedServer:
    """hypercorn's server as a release might change it: one more line in protocol_send."""

    async def protocol_send(self, event: object) -> None:
        if isinstance(event, RawData):
            await self.write(event)  # type: ignore[attr-defined]


def test_a_changed_method_is_refused_and_nothing_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(http_send.HypercornChanged) as refused:
        http_send.check_replaceable(ChangedServer.protocol_send, "0.19.0")
    message = str(refused.value)
    assert "hypercorn 0.19.0" in message and "hypercorn.trio.tcp_server.TCPServer.protocol_send" in message
    assert http_send.source_sha256(ChangedServer.protocol_send) in message
    assert "pip install 'hypercorn>=0.17,<0.19'" in message and "PROTOCOL_SEND_SHA256" in message

    # install() checks the method it is about to replace, and leaves it in place.
    monkeypatch.setattr(tcp_server, "TCPServer", ChangedServer)
    monkeypatch.setattr(http_send, "_ORIGINAL", [])
    with pytest.raises(http_send.HypercornChanged):
        http_send.install()
    assert ChangedServer.protocol_send is not http_send._protocol_send and http_send._ORIGINAL == []


def test_a_method_without_source_is_refused() -> None:
    with pytest.raises(http_send.HypercornChanged, match="cannot read the source"):
        http_send.check_replaceable(len, "0.18.0")


class StalledStream:
    """A client that takes no byte: send_all never returns on its own."""

    def __init__(self, order: list[str]) -> None:
        self.order = order

    async def send_all(self, data: bytes) -> None:
        await trio.sleep_forever()

    async def aclose(self) -> None:
        self.order.append("closed")


async def test_a_write_the_client_never_takes_closes_the_connection(monkeypatch, autojump_clock):
    monkeypatch.setattr(http_send, "_write_limit", [0.2])
    order: list[str] = []
    conn = types.SimpleNamespace(send_lock=trio.Lock(), stream=StalledStream(order), protocol=Protocol(order))
    with trio.fail_after(5):
        await http_send._protocol_send(conn, RawData(b"data: x\n\n"))
    assert order == ["closed", "Closed"]
    assert not conn.send_lock.locked()


async def test_stop_writes_ends_a_write_in_progress_at_once(monkeypatch, autojump_clock):
    monkeypatch.setattr(http_send, "_write_limit", [3600.0])
    order: list[str] = []
    conn = types.SimpleNamespace(send_lock=trio.Lock(), stream=StalledStream(order), protocol=Protocol(order))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(http_send._protocol_send, conn, RawData(b"data: x\n\n"))
        await trio.sleep(0.05)
        with trio.fail_after(2):
            http_send.stop_writes()
            while order != ["closed", "Closed"]:
                await trio.sleep(0.01)
    assert http_send._write_limit == [http_send.STOPPING_WRITE_S]
