"""No pattern freezes the daemon: a real daemon process whose conversation greps (or
globs) with a pattern that makes a backtracking matcher run for ever, while another
client polls /health and another conversation streams.

Each test runs the pattern in a conversation of `bmoe-daemon serve --scripted` over a
workspace file (or file name) made of `a`s, and checks that /health and the other
conversation's stream keep their usual pace, that the searching conversation can be
stopped (within 5 s, `stopped: true`), that the daemon's CPU goes back to idle within
5 s of the stop, and that the next message runs. Before grep_search ran on RE2 and the
globs were written for a backtracking-safe match, Python's `re` held the GIL for hours
on each of these and every check here failed (the daemon answered nothing at all).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
import trio

from tests.daemon_proc import SSE, DaemonProcess, run_daemon
from tests.filler import numbered
from tests.test_e2e import write_script
from tests.waiting import wait_http_state

# `(a|aa)*c` is the issue's own example: exponential for a backtracking engine on a line
# of `a`s. The second branch keeps RE2 itself busy (its DFA cannot hold the states, so it
# falls back to its NFA, about 0.5 s per 16,000-byte line), so the search is still
# running when the test stops it: the stop must end a search in progress.
SLOW_GREP = "(a|aa)*c|(?:a?){1000}a{1000}c"
LONG_LINE = "a" * 16_000
LINES = 120  # about 1.9 MB: under grep's 2 MiB, a minute of RE2's NFA if nothing stops it
GLOB = "*a" * 12 + "*c"  # twelve stars: a backtracking fullmatch tries C(200, 12) splits
LONG_NAME = "a" * 200

HEALTH_EVERY_S = 0.1
HEALTH_WITHIN_S = 1.0  # /health answers in milliseconds; a second is far beyond usual
STREAM_GAP_S = 1.0  # the other conversation's pieces come every 0.02 s
STREAM_TEXT = numbered("tick ", 70)  # 137 pieces of 4 characters: 2.7 s at 0.02 s a piece
STOP_WITHIN_S = 5.0
IDLE_WITHIN_S = 5.0
IDLE_CPU_PERCENT = 15.0  # of one core, over a quarter of a second

SCRIPT = {
    "token_delay": 0.002,
    "rounds": [
        {"when": "grep-quick", "tool_calls": [{"name": "grep_search", "arguments": {
            "pattern": "(a|aa)*c", "path": "short.txt"}}]},
        {"when": "grep-quick", "text": "searched"},
        {"when": "grep-slow", "tool_calls": [{"name": "grep_search", "arguments": {
            "pattern": SLOW_GREP, "path": "long.txt"}}]},
        {"when": "grep-slow", "tool_calls": [{"name": "pause", "arguments": {"seconds": 60}}]},
        {"when": "glob-slow", "tool_calls": [{"name": "file_glob_search", "arguments": {"include": GLOB}}]},
        {"when": "glob-slow", "tool_calls": [{"name": "pause", "arguments": {"seconds": 60}}]},
        {"when": "stream", "text": STREAM_TEXT, "delay": 0.02},
        {"when": "after", "text": "next ran"},
    ],
}  # fmt: skip


def _workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "short.txt").write_text("a" * 64 + "\n")
    (folder / "long.txt").write_text((LONG_LINE + "\n") * LINES)
    for i in range(3):
        (folder / f"{LONG_NAME}{i}").write_text("x\n")
    (folder / (LONG_NAME + "c")).write_text("the one that matches\n")
    return folder


class Pressure:
    """A second client polling /health and a second conversation streaming, with the
    worst pause each saw."""

    def __init__(self, d: DaemonProcess) -> None:
        self._d = d
        self.health_worst = 0.0
        self.health_failures: list[str] = []
        self.stream_worst_gap = 0.0
        self.stream_text = ""
        self.stream_done = trio.Event()

    async def poll_health(self) -> None:
        async with httpx.AsyncClient(base_url=self._d.url, timeout=HEALTH_WITHIN_S * 5) as c:
            while True:
                started = time.monotonic()
                try:
                    r = await c.get("/health")
                    if r.status_code != 200:
                        self.health_failures.append(f"status {r.status_code}")
                except httpx.HTTPError as exc:
                    self.health_failures.append(f"{type(exc).__name__} after {time.monotonic() - started:.1f} s")
                self.health_worst = max(self.health_worst, time.monotonic() - started)
                await trio.sleep(HEALTH_EVERY_S)

    async def stream(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with httpx.AsyncClient(base_url=self._d.url, timeout=STOP_WITHIN_S * 4) as c:
            cid = (await c.post("/api/conversations", json={})).json()["id"]
            async with trio.open_nursery() as nursery:
                sse = SSE(c)
                await nursery.start(sse.run)
                task_status.started()
                r = await c.post(f"/api/conversations/{cid}/messages", json={"text": "stream please"})
                assert r.status_code == 202, r.text
                seen, last = 0, time.monotonic()
                with trio.move_on_after(30):
                    while True:
                        fresh = sse.events[seen:]
                        seen = len(sse.events)
                        for _id, name, data in fresh:
                            if name == "delta" and data.get("conversation") == cid:
                                now = time.monotonic()
                                self.stream_worst_gap = max(self.stream_worst_gap, now - last)
                                last = now
                                self.stream_text += data.get("text", "")
                            if name == "conversation" and data.get("id") == cid and data.get("state") == "idle":
                                if self.stream_text:
                                    self.stream_done.set()
                        if self.stream_done.is_set():
                            break
                        self.stream_worst_gap = max(self.stream_worst_gap, time.monotonic() - last)
                        await trio.sleep(0.01)
                nursery.cancel_scope.cancel()

    def check(self) -> None:
        print(
            f"/health worst {self.health_worst * 1000:.0f} ms; stream worst gap {self.stream_worst_gap * 1000:.0f} ms"
        )
        assert not self.health_failures, f"/health failed while the pattern ran: {self.health_failures[:3]}"
        assert self.health_worst < HEALTH_WITHIN_S, f"/health took {self.health_worst:.2f} s"
        assert self.stream_done.is_set(), f"the other conversation did not finish streaming: {self.stream_text!r}"
        assert self.stream_text == STREAM_TEXT
        assert self.stream_worst_gap < STREAM_GAP_S, f"the stream paused {self.stream_worst_gap:.2f} s"


async def _cpu_goes_idle(pid: int) -> float:
    """Seconds until the process uses less than IDLE_CPU_PERCENT of a core (the
    conversation left waits in a `pause` tool, which costs nothing)."""
    proc = psutil.Process(pid)
    started = time.monotonic()
    with trio.fail_after(IDLE_WITHIN_S + 2):
        while True:
            proc.cpu_percent(None)
            await trio.sleep(0.25)
            if proc.cpu_percent(None) < IDLE_CPU_PERCENT:
                return time.monotonic() - started


async def _tool_item(c: httpx.AsyncClient, cid: str, *states: str, timeout: float) -> dict[str, Any]:
    with trio.fail_after(timeout):
        while True:
            body = (await c.get(f"/api/conversations/{cid}")).json()
            tools = [i for i in body["items"] if i["kind"] == "tool"]
            if tools and tools[-1]["state"] in states:
                return tools[-1]
            await trio.sleep(0.05)


async def _stop_then_idle_then_next(d: DaemonProcess, c: httpx.AsyncClient, cid: str) -> None:
    started = time.monotonic()
    with trio.fail_after(STOP_WITHIN_S):
        r = await c.post(f"/api/conversations/{cid}/stop")
    took = time.monotonic() - started
    assert r.status_code == 200 and r.json() == {"stopped": True}, r.text
    assert took < STOP_WITHIN_S
    idle_after = await _cpu_goes_idle(d.proc.pid)
    print(f"stop answered in {took:.2f} s; CPU idle {idle_after:.2f} s after it")
    assert idle_after < IDLE_WITHIN_S, f"the daemon still burnt a core {idle_after:.1f} s after the stop"
    await wait_http_state(c, cid, "idle", timeout=10)
    r = await c.post(f"/api/conversations/{cid}/messages", json={"text": "after the stop"})
    assert r.status_code == 202, r.text
    body = await wait_http_state(c, cid, "idle", timeout=10)
    assert body["items"][-1]["kind"] == "assistant" and body["items"][-1]["text"] == "next ran"


@asynccontextmanager
async def _session(tmp_path: Path) -> AsyncIterator[tuple[DaemonProcess, httpx.AsyncClient, str]]:
    """A daemon, a client and a read-only conversation in the workspace of `a`s."""
    folder = _workspace(tmp_path)
    async with run_daemon(tmp_path / "data", "--scripted", str(write_script(tmp_path, SCRIPT))) as d:
        async with httpx.AsyncClient(base_url=d.url, timeout=10) as c:
            ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
            conv = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "read_only"})).json()
            yield d, c, str(conv["id"])


async def _send(c: httpx.AsyncClient, cid: str, text: str) -> None:
    r = await c.post(f"/api/conversations/{cid}/messages", json={"text": text})
    assert r.status_code == 202, r.text


async def _under_pressure(d: DaemonProcess, start: Callable[[], Awaitable[None]]) -> None:
    """Poll /health, run `start` (the pattern's round), then stream another
    conversation to its end: both must keep their usual pace throughout."""
    pressure = Pressure(d)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pressure.poll_health)
        await start()
        await nursery.start(pressure.stream)
        with trio.move_on_after(20):
            await pressure.stream_done.wait()
        nursery.cancel_scope.cancel()
    pressure.check()


async def test_the_issues_grep_example_returns_at_once(tmp_path: Path) -> None:
    async with _session(tmp_path) as (_d, c, cid):
        await _send(c, cid, "grep-quick")
        body = await wait_http_state(c, cid, "idle", timeout=10)
        tool = next(i for i in body["items"] if i["kind"] == "tool")
        assert tool["state"] == "done" and "Total matches: 0" in tool["result"], tool
        assert (await c.get("/health")).status_code == 200


async def test_a_catastrophic_grep_leaves_the_daemon_responsive_and_stops(tmp_path: Path) -> None:
    async with _session(tmp_path) as (d, c, cid):

        async def start() -> None:
            await _send(c, cid, "grep-slow")
            await _tool_item(c, cid, "running", timeout=10)

        await _under_pressure(d, start)
        tool = await _tool_item(c, cid, "running", "done", "error", timeout=5)
        assert tool["state"] == "running", f"the search ended before the stop, so no stop was tested: {tool}"
        await _stop_then_idle_then_next(d, c, cid)


async def test_a_catastrophic_glob_leaves_the_daemon_responsive_and_stops(tmp_path: Path) -> None:
    async with _session(tmp_path) as (d, c, cid):
        # The glob's round first: the engine then serves the stream while the glob runs.
        await _under_pressure(d, lambda: _send(c, cid, "glob-slow"))
        body = await wait_http_state(c, cid, "running", timeout=5)
        tool = next(i for i in body["items"] if i["kind"] == "tool")
        assert tool["state"] == "done" and tool["result"].startswith(LONG_NAME + "c\n"), tool
        assert "Total matches: 1" in tool["result"]
        await _stop_then_idle_then_next(d, c, cid)
