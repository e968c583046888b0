"""Status after Send: from a message's POST to the first SSE event that says what the
conversation is doing (issue 31: within 300 ms).

A daemon subprocess (`serve --scripted`, its pieces `--token-delay` apart, so a turn
takes time) and one raw SSE client in this process, both stamped with `perf_counter`.
Two situations, `--messages` messages each:

- **idle**: the turn line is free. What says so is the conversation's `conversation`
  event with state `running` (the web UI's pending answer reads it as "Reading the
  conversation…" for the local model); the `prefill` events that follow say how far it
  has read (timed too, as a figure: the scripted round plays a batch a piece-delay
  apart). Checks: it arrives, no `turn_line` names another conversation, the answer
  follows and the conversation goes idle.
- **behind**: another conversation's long answer holds the turn line (its first
  `delta` seen before the message is sent). What says so is this conversation's
  `turn_line` event naming the other (the web UI: "Waiting for the model: it is
  answering “…” first."); the `running` state before it says only "Reading…". Then the
  other is stopped. Checks: the `turn_line` names the other conversation, comes before
  any `delta` of this one, a `turn_line` with `behind` null follows when its turn comes,
  then the answer.

Loading the model (the third thing the UI says) is not measured here: the scripted
backend has no model to load (`idle_unload.py` times a reload with the bundled GGUF).

    .venv/bin/python ops/bench/status_latency.py [--messages 40] [--token-delay 0.01] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ops.bench._common import (  # noqa: E402
    DaemonProcess,
    Report,
    SSEClient,
    exit_on_sigterm,
    median,
    parse_args,
    percentile,
    split_address,
)

TARGET_MS = 300.0
HOLD = "hold the line"  # the message whose round holds the turn line until stopped
HOLD_CHARS = 40_000  # 10,000 pieces: far longer than a sample, which stops it
WAIT_S = 30.0  # bound on any one awaited event

Event = tuple[float, str, dict[str, Any]]


class Watch:
    """Every event of the stream, stamped, with a way to wait for one."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._arrived = trio.Event()

    def on_event(self, t: float, name: str, data: str, _id: str) -> None:
        try:
            body = json.loads(data)
        except ValueError:
            return
        if isinstance(body, dict):
            self.events.append((t, name, body))
            self._arrived.set()
            self._arrived = trio.Event()

    async def first(self, since: int, pred: Callable[[str, dict[str, Any]], bool], what: str) -> Event:
        """The first event from index `since` on for which pred(name, body) holds, waiting up to WAIT_S."""
        with trio.move_on_after(WAIT_S):
            while True:
                for ev in self.events[since:]:
                    if pred(ev[1], ev[2]):
                        return ev
                await self._arrived.wait()
        raise TimeoutError(f"no {what} within {WAIT_S:g} s")

    def of(self, since: int, cid: str) -> list[Event]:
        """The events of conversation `cid` from index `since` on."""
        def whose(e: Event) -> object:
            return e[2].get("id") if e[1] == "conversation" else e[2].get("conversation")

        return [e for e in self.events[since:] if whose(e) == cid]


def _state(cid: str, *states: str) -> Callable[[str, dict[str, Any]], bool]:
    return lambda name, body: name == "conversation" and body.get("id") == cid and body.get("state") in states


def _ended(cid: str) -> Callable[[str, dict[str, Any]], bool]:
    return lambda name, body: name == "conversation" and body.get("id") == cid and body.get("state") != "running"


def _turn_line(cid: str) -> Callable[[str, dict[str, Any]], bool]:
    return lambda name, body: name == "turn_line" and body.get("conversation") == cid


def _delta(cid: str) -> Callable[[str, dict[str, Any]], bool]:
    return lambda name, body: name == "delta" and body.get("conversation") == cid


async def _new(client: httpx.AsyncClient, title: str) -> str:
    r = await client.post("/api/conversations", json={"title": title})
    r.raise_for_status()
    return str(r.json()["id"])


async def _send(client: httpx.AsyncClient, cid: str, text: str) -> float:
    """POST a message; the stamp taken just before it was sent."""
    t0 = time.perf_counter()
    r = await client.post(f"/api/conversations/{cid}/messages", json={"text": text})
    r.raise_for_status()
    return t0


async def _idle(client: httpx.AsyncClient, watch: Watch, n: int, out: dict[str, Any]) -> None:
    cid = await _new(client, "idle line")
    for _ in range(n):
        since = len(watch.events)
        t0 = await _send(client, cid, "Hello.")
        t_run, _, _ = await watch.first(since, _state(cid, "running"), "running state")
        t_read, _, _ = await watch.first(since, lambda n_, b: n_ == "prefill" and b.get("conversation") == cid,
                                         "prefill event")
        await watch.first(since, _delta(cid), "answer")
        await watch.first(since, _state(cid, "idle"), "idle state after the answer")
        out["running"].append(t_run - t0)
        out["reading"].append(t_read - t0)
        mine = watch.of(since, cid)
        if any(e[1] == "turn_line" and e[2].get("behind") for e in mine):
            out["wrong"].append("an idle line's turn said it waits behind another conversation")


async def _behind(client: httpx.AsyncClient, watch: Watch, n: int, out: dict[str, Any]) -> None:
    holder = await _new(client, "holds the line")
    for i in range(n):
        since = len(watch.events)
        await _send(client, holder, HOLD)
        await watch.first(since, _delta(holder), "the holder's first delta")  # it holds the line now
        waiter = await _new(client, f"waits {i}")
        mark = len(watch.events)
        t0 = await _send(client, waiter, "Hello.")
        t_line, _, body = await watch.first(mark, _turn_line(waiter), "turn_line event")
        t_run, _, _ = await watch.first(mark, _state(waiter, "running"), "running state")
        out["turn_line"].append(t_line - t0)
        out["running"].append(t_run - t0)
        if body.get("behind") != holder:
            out["wrong"].append(f"turn_line named {body.get('behind')!r}, not the conversation holding the line")
        (await client.post(f"/api/conversations/{holder}/stop")).raise_for_status()
        await watch.first(mark, _ended(holder), "the holder's stop")
        await watch.first(mark, _delta(waiter), "the waiter's answer")
        await watch.first(mark, _state(waiter, "idle"), "the waiter's idle state")
        mine = watch.of(mark, cid=waiter)
        order = [e[1] if e[1] != "turn_line" else f"turn_line:{'behind' if e[2].get('behind') else 'null'}"
                 for e in mine if e[1] in ("turn_line", "delta")]
        if not order or order[0] != "turn_line:behind":
            out["wrong"].append(f"the waiter's first turn_line/delta events were {order[:3]}")
        elif "turn_line:null" not in order or order.index("turn_line:null") > order.index("delta"):
            out["wrong"].append(f"no turn_line null before the waiter's answer: {order[:3]}")


async def run(folder: Path, n: int, token_delay: float) -> dict[str, Any]:
    script = {
        "token_delay": token_delay,
        # Every other message: a short answer after reading 1,024 tokens (two batches).
        "default": {"text": "Here is a short answer.", "prefill": 1024},
        "rounds": [{"when": HOLD, "text": "word " * (HOLD_CHARS // 5), "repeat": 1_000_000}],
    }
    (folder / "script.json").write_text(json.dumps(script), encoding="utf-8")
    daemon = DaemonProcess(["serve", "--port", "0", "--data-dir", str(folder / "data"),
                            "--scripted", str(folder / "script.json")], log_path=folder / "daemon.log")
    out: dict[str, Any] = {"idle": {"running": [], "reading": [], "wrong": []},
                           "behind": {"turn_line": [], "running": [], "wrong": []}}
    address = daemon.start()
    host, port = split_address(address)
    watch = Watch()
    try:
        async with httpx.AsyncClient(base_url=address, timeout=WAIT_S) as client, trio.open_nursery() as nursery:
            sse = SSEClient(host, port)
            nursery.start_soon(sse.run, watch.on_event)
            with trio.fail_after(WAIT_S):
                await sse.connected.wait()
            out["load0"] = os.getloadavg()
            for situation, measure in (("idle", _idle), ("behind", _behind)):
                try:
                    await measure(client, watch, n, out[situation])
                except TimeoutError as e:  # an event that never came: a failed check, not a crash
                    out[situation]["wrong"].append(str(e))
            out["load1"] = os.getloadavg()
            nursery.cancel_scope.cancel()
    finally:
        daemon.stop()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=40, help="messages per situation")
    ap.add_argument("--token-delay", type=float, default=0.01, help="seconds between the scripted pieces")
    args = parse_args(ap, quick={"messages": 5})
    exit_on_sigterm()
    rep = Report("status_latency", "a message's POST to the SSE event that says what its conversation is doing")
    with tempfile.TemporaryDirectory(prefix="bmoe-status-") as tmp:
        out = trio.run(run, Path(tmp), args.messages, args.token_delay)
    idle, behind = out["idle"], out["behind"]
    rep.figure("messages per situation", args.messages, "", "{}")
    rep.figure("load average (1/5/15 min), start", " ".join(f"{x:.2f}" for x in out["load0"]))
    rep.figure("load average (1/5/15 min), end", " ".join(f"{x:.2f}" for x in out["load1"]))
    for label, values in (("idle: POST → running state, p50", idle["running"]),
                          ("behind: POST → turn_line (whose), p50", behind["turn_line"])):
        rep.figure(label, median(values) * 1000, "ms", "{:.1f}")
        rep.figure(label.replace("p50", "p95"), percentile(values, 95) * 1000, "ms", "{:.1f}")
    rep.figure("idle: POST → first prefill, p50", median(idle["reading"]) * 1000, "ms", "{:.1f}")
    rep.figure("behind: POST → running state, p50", median(behind["running"]) * 1000, "ms", "{:.1f}")
    rep.check("idle: the running state came, no turn_line named another", not idle["wrong"],
              "; ".join(idle["wrong"][:3]))
    rep.check("idle: every message was timed", len(idle["running"]) == args.messages)
    rep.check("behind: turn_line named the holder, then null, then the answer", not behind["wrong"],
              "; ".join(behind["wrong"][:3]))
    rep.check("behind: every message was timed", len(behind["turn_line"]) == args.messages)
    rep.target("idle: says it is reading, p95", percentile(idle["running"], 95) * 1000, "<=", TARGET_MS, "ms", "{:.1f}")
    rep.target("behind: says whose turn it waits for, p95", percentile(behind["turn_line"], 95) * 1000, "<=", TARGET_MS,
               "ms", "{:.1f}")
    return rep.finish()


if __name__ == "__main__":
    raise SystemExit(main())
