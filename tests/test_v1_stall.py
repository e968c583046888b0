"""A /v1 streaming client never holds the turn line: not one that stops reading, not
one that leaves before reading. The real daemon on port 0 with the scripted backend,
raw sockets for the clients that misbehave.

The first test failed before the bound on a client taking a piece (CLIENT_TAKE_S): the
generation sat on a full queue, holding the line, for as long as the socket stayed open."""

from __future__ import annotations

import json
import socket

import pytest
import trio

from bmoe_daemon.routes.openai import CLIENT_TAKE_S, STALLED_TEXT
from tests.daemon_proc import DaemonProcess, run_daemon

SCRIPT = {
    # A generation that only a stop ends, one small chunk per piece, as fast as it goes.
    "rounds": [{"when": "never stop", "hang": True, "repeat": 100}],
    "default": {"text": "Done."},
}
# The stalled generation must be stopped and the next turn served within this: the
# daemon's bound on a client taking a piece, plus the time to fill the socket's buffers
# and a margin for a loaded machine.
SERVED_WITHIN_S = CLIENT_TAKE_S + 15
# A small receive buffer, so TCP back-pressure reaches the daemon soon.
RCVBUF = 4096
# SIGTERM to exit with a client connected that never reads: the run stops, the write
# to that client gives up once the daemon stops (write_guard.STOPPING_WRITE_S).
EXIT_WITH_STALLED_CLIENT_S = 5.0


@pytest.fixture
async def served(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d:
        yield d


async def _post_stream(d: DaemonProcess, text: str) -> trio.SocketStream:
    """A raw connection that has sent a streaming /v1 request and read nothing."""
    host, port = d.url.removeprefix("http://").rsplit(":", 1)
    sock = trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)  # before connect: it sets the window
    await sock.connect((host, int(port)))
    stream = trio.SocketStream(sock)
    payload = json.dumps({"messages": [{"role": "user", "content": text}], "stream": True}).encode()
    await stream.send_all(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: " + host.encode() + b"\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload
    )
    return stream


async def _engine(c) -> dict:
    tree = (await c.get("/api/debug/actors")).json()
    return next(ch for ch in tree["children"] if ch["kind"] == "engine")


async def _wait_generating(c) -> None:
    with trio.fail_after(10):
        while True:
            if (await _engine(c))["state"] == "generating":
                return
            await trio.sleep(0.02)


async def _next_turns_are_served(c) -> None:
    with trio.fail_after(SERVED_WITHIN_S):
        r = await c.post("/v1/chat/completions", json={"messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200
    assert r.json()["choices"][0]["message"]["content"] == "Done."
    conv = (await c.post("/api/conversations", json={})).json()
    r = await c.post(f"/api/conversations/{conv['id']}/messages", json={"text": "hello"})
    assert r.status_code == 202
    with trio.fail_after(SERVED_WITHIN_S):
        while True:  # the run may not have started when the 202 comes back
            body = (await c.get(f"/api/conversations/{conv['id']}")).json()
            if body["state"] == "idle" and len(body["items"]) > 1:
                break
            await trio.sleep(0.02)
    assert [(i["kind"], i.get("text")) for i in body["items"]] == [("user", "hello"), ("assistant", "Done.")]
    assert (await _engine(c))["state"] == "idle"


async def test_a_client_that_never_reads_does_not_hold_the_turn_line(served):
    async with served.client() as c:
        stalled = await _post_stream(served, "never stop")
        try:
            await _wait_generating(c)
            await _next_turns_are_served(c)
            # Read at last: what was queued, then why the answer stopped, then the end.
            got = b""
            with trio.fail_after(SERVED_WITHIN_S):
                while b"data: [DONE]" not in got:
                    chunk = await stalled.receive_some(65536)
                    assert chunk, got[-500:]
                    got += chunk
            tail = got[-1000:].decode()
            assert f'{{"error": {{"message": "{STALLED_TEXT}"' in tail, tail
        finally:
            await stalled.aclose()


async def test_a_client_that_leaves_before_reading_does_not_hold_the_turn_line(served):
    async with served.client() as c:
        gone = await _post_stream(served, "never stop")
        await _wait_generating(c)
        await gone.aclose()
        await _next_turns_are_served(c)


async def test_the_daemon_exits_promptly_with_a_client_that_never_reads(served):
    """Its socket write is shielded, so only its bound lets the daemon go."""
    import signal
    import time

    stream = await _post_stream(served, "never stop")
    async with served.client() as c:
        await _wait_generating(c)
    await trio.sleep(1.0)  # the daemon's writes to the client are blocked by now
    sent = time.monotonic()
    served.proc.send_signal(signal.SIGTERM)
    with trio.fail_after(30):
        await served.proc.wait()
    took = time.monotonic() - sent
    await stream.aclose()
    assert took <= EXIT_WITH_STALLED_CLIENT_S, f"the daemon took {took:.1f} s to exit"
