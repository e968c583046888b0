"""The event stream (/api/events) with clients that misbehave: a slow one, one that never
reads, one that leaves and comes back with Last-Event-ID. The real daemon on port 0 with
the scripted backend; the clients read raw sockets, so each reads as slowly as it likes."""

from __future__ import annotations

import json
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from bmoe_daemon.write_guard import STOPPING_WRITE_S
from tests.daemon_proc import SSE, DaemonProcess, run_daemon, sse_fields

# A long answer streamed quickly: a delta every TOKEN_DELAY_S, one number of 4 digits each.
PIECES = 1500
TOKEN_DELAY_S = 0.002
TEXT = "".join(f"{i:04d}" for i in range(PIECES))
# A flood: as many deltas as the daemon can make, until the run is stopped.
FLOOD = "".join(f"{i % 10000:04d}" for i in range(200_000))
SCRIPT = {
    "rounds": [
        {"when": "long answer", "text": TEXT, "delay": TOKEN_DELAY_S},
        {"when": "flood", "text": FLOOD, "delay": 0},
    ],
    "default": {"text": "Done."},
}
RCVBUF = 4096  # a small window, so TCP back-pressure reaches the daemon soon
RUN_S = 120.0  # bound on a run of PIECES on a loaded machine
# SIGTERM with a client whose write is blocked: the runs stop, the blocked write gives up
# after STOPPING_WRITE_S; the rest is the daemon's own stop on a loaded machine.
EXIT_WITH_STALLED_CLIENT_S = 5.0


@pytest.fixture
async def served(tmp_path: Path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d:
        yield d


Event = tuple[int | None, str, Any]


class RawEvents:
    """One GET /api/events over a raw socket; `read` parses what arrives."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.events: list[Event] = []
        self.ended = False  # the daemon ended the response (or the connection)
        self._raw = b""
        self._head_read = False
        self._body = b""

    @classmethod
    async def open(cls, d: DaemonProcess, last_id: int | None = None, rcvbuf: int | None = None) -> RawEvents:
        host, port = d.url.removeprefix("http://").rsplit(":", 1)
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)  # before connect: it sets the window
        await sock.connect((host, int(port)))
        stream = trio.SocketStream(sock)
        extra = f"Last-Event-ID: {last_id}\r\n" if last_id is not None else ""
        await stream.send_all(f"GET /api/events HTTP/1.1\r\nHost: {host}\r\n{extra}\r\n".encode())
        return cls(stream)

    def _parse(self) -> None:
        if not self._head_read:
            head, sep, rest = self._raw.partition(b"\r\n\r\n")
            if not sep:
                return
            assert b" 200 " in head.split(b"\r\n", 1)[0] + b" ", head
            assert b"transfer-encoding: chunked" in head.lower(), head
            self._raw, self._head_read = rest, True
        while (eol := self._raw.find(b"\r\n")) >= 0:
            size = int(self._raw[:eol], 16)
            if len(self._raw) < eol + 2 + size + 2:
                break
            if size == 0:
                self.ended = True
            self._body += self._raw[eol + 2 : eol + 2 + size]
            self._raw = self._raw[eol + 2 + size + 2 :]
        while (end := self._body.find(b"\n\n")) >= 0:
            frame, self._body = self._body[:end].decode(), self._body[end + 2 :]
            ev_id, name, data = sse_fields(frame.split("\n"))
            if data:
                self.events.append((ev_id, name, json.loads(data)))

    async def read(self, until: Callable[[Event], bool], *, timeout: float = RUN_S, piece: int = 65536,
                   pause: float = 0.0) -> Event | None:
        """Read until an event passes `until` (returned) or the response ends (None);
        `piece` bytes a read with `pause` seconds after each: a slow reader."""
        seen = len(self.events)
        with trio.fail_after(timeout):
            while True:
                for ev in self.events[seen:]:
                    if until(ev):
                        return ev
                seen = len(self.events)
                if self.ended:
                    return None
                chunk = await self.stream.receive_some(piece)
                if not chunk:
                    self.ended = True
                    return None
                self._raw += chunk
                self._parse()
                if pause:
                    await trio.sleep(pause)


def ends(conv: str) -> Callable[[Event], bool]:
    """The run's end: conversation `conv` idle after a delta or a busy state of it was
    seen (it is idle once before, when it is made)."""
    armed = False

    def ended(e: Event) -> bool:
        nonlocal armed
        if e[1] == "delta" and e[2].get("conversation") == conv:
            armed = True
        elif e[1] == "conversation" and e[2].get("id") == conv:
            if e[2].get("state") != "idle":
                armed = True
            elif armed:
                return True
        return False

    return ended


def delta_text(events: list[Event], conv: str) -> str:
    return "".join(e[2].get("text", "") for e in events if e[1] == "delta" and e[2]["conversation"] == conv)


async def start_run(c: Any, text: str) -> str:
    conv = (await c.post("/api/conversations", json={})).json()["id"]
    r = await c.post(f"/api/conversations/{conv}/messages", json={"text": text})
    assert r.status_code == 202, r.text
    return str(conv)


async def read_all_of_run(d: DaemonProcess, first: RawEvents, conv: str, **slow: Any) -> tuple[list[Event], int]:
    """Read the stream to the run's end; a stream that ends first (the daemon dropped a
    client that lagged) is opened again with Last-Event-ID, as a browser does. Returns
    every event read and how many times the client came back."""
    events: list[Event] = []
    sse, again = first, 0
    ended = ends(conv)
    try:
        while True:
            done = await sse.read(ended, **slow)
            events += sse.events
            if done is not None:
                return events, again
            await sse.stream.aclose()
            last = max(e[0] for e in events if e[0] is not None)
            sse, again = await RawEvents.open(d, last_id=last), again + 1
    finally:
        await sse.stream.aclose()


def assert_in_order_without_gaps(events: list[Event]) -> None:
    ids = [e[0] for e in events if e[0] is not None]
    assert ids == sorted(set(ids)), "an event twice or out of order"
    assert ids == list(range(ids[0], ids[0] + len(ids))), "an event missing"


async def test_a_slow_client_gets_every_event_and_a_quick_one_all_of_them_too(served: DaemonProcess) -> None:
    """The slow client reads a small piece at a time, pausing after each, while the run
    streams: the daemon's writes to it wait for it (TCP back-pressure), and if it falls so
    far behind that the daemon drops it, it comes back with Last-Event-ID."""
    got: dict[str, list[Event]] = {}
    async with served.client() as c:
        # Both connected (counted by the daemon) before the run starts.
        slow = await RawEvents.open(served, rcvbuf=RCVBUF)
        quick = SSE(c)
        async with trio.open_nursery() as nursery:
            await nursery.start(quick.run)
            with trio.fail_after(30):
                while (await c.get("/api/debug/actors")).json()["events"]["subscribers"] < 2:
                    await trio.sleep(0.02)
            conv = await start_run(c, "long answer")

            async def read_slowly() -> None:
                got["slow"], _ = await read_all_of_run(served, slow, conv, piece=256, pause=0.01)

            nursery.start_soon(read_slowly)
            await quick.wait_for(ends(conv), timeout=RUN_S)
            with trio.fail_after(RUN_S):
                while "slow" not in got:
                    await trio.sleep(0.05)
            nursery.cancel_scope.cancel()
    assert delta_text(quick.events, conv) == TEXT
    assert delta_text(got["slow"], conv) == TEXT
    assert_in_order_without_gaps(got["slow"])


async def test_a_client_that_reconnects_with_last_event_id_gets_what_it_missed(served: DaemonProcess) -> None:
    async with served.client() as c:
        first = await RawEvents.open(served)
        with trio.fail_after(30):
            while (await c.get("/api/debug/actors")).json()["events"]["subscribers"] < 1:
                await trio.sleep(0.02)
        conv = await start_run(c, "long answer")
        # A few hundred deltas, then the client goes away while the run goes on.
        await first.read(lambda e: e[1] == "delta" and len(delta_text(first.events, conv)) >= 400 * 4)
        await first.stream.aclose()
        seen = first.events
        last = max(e[0] for e in seen if e[0] is not None)
        with trio.fail_after(RUN_S):
            while True:  # some deltas pass while it is away
                if (await c.get("/api/debug/actors")).json()["events"]["last_id"] >= last + 100:
                    break
                await trio.sleep(0.02)
        back = await RawEvents.open(served, last_id=last)
        events, again = await read_all_of_run(served, back, conv)
    assert again == 0
    assert events[0][0] == last + 1  # replayed from just after the last one seen
    assert_in_order_without_gaps(seen + events)
    assert delta_text(seen + events, conv) == TEXT


async def test_a_client_that_never_reads_holds_neither_the_others_nor_the_exit(served: DaemonProcess) -> None:
    stalled = await RawEvents.open(served, rcvbuf=RCVBUF)
    try:
        async with served.client() as c:
            with trio.fail_after(30):
                while (await c.get("/api/debug/actors")).json()["events"]["subscribers"] < 1:
                    await trio.sleep(0.02)
            conv = await start_run(c, "flood")
            # Until the daemon's write to it is blocked: its buffers are full.
            with trio.fail_after(RUN_S):
                while (await c.get("/api/debug/actors")).json()["http"]["oldest_write_s"] < 1.0:
                    await trio.sleep(0.1)
            # Another client connects and follows the run while that write stays blocked.
            async with trio.open_nursery() as nursery:
                other = SSE(c)
                await nursery.start(other.run)
                await other.wait_for(lambda e: e[1] == "delta" and e[2]["conversation"] == conv, timeout=30)
                first = len(other.events)
                await other.wait_for(lambda e: len(other.events) >= first + 500, timeout=30)
                nursery.cancel_scope.cancel()
            assert (await c.get("/api/debug/actors")).json()["http"]["oldest_write_s"] >= 1.0
        sent = time.monotonic()
        served.proc.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            await served.proc.wait()
        took = time.monotonic() - sent
    finally:
        await stalled.stream.aclose()
    assert took <= EXIT_WITH_STALLED_CLIENT_S, f"the daemon took {took:.1f} s to exit (its bound on the write: " \
        f"{STOPPING_WRITE_S} s)"
    assert served.proc.returncode == 0, served.stderr()[-2000:]
