"""Idle unload: what a daemon holds while nobody uses it, and what the next turn pays.

Two daemons in turn, each a subprocess with its own data folder:

- `--no-model`: its resident memory (VmRSS) once it has served a conversation's
  listing and settled: the floor a daemon without a model holds;
- the bundled GGUF with `--idle-unload` of a few seconds: its RSS with the model loaded
  after a turn, then once /health says the model was let go (the target: at most
  TARGET_ABOVE_MB above the floor), and the next turn's wait, from the POST to its first
  `delta` at an SSE client, beside the same wait with the model loaded (the reload's
  cost is the difference; the `model` events give the load alone).

This process must not load llama.cpp or numpy itself (`bundled_model()` finds the file
without importing them): pages of a shared library that two processes map are counted in
both RSS figures, and the kernel does not page out for the daemon what this process also
maps, so the let-go figure read 5 MB high when it did.

Each turn is a new conversation without a workspace and the same short message, so the
two first tokens differ in the load and in the prompt cache the load starts without.

    .venv/bin/python ops/bench/idle_unload.py [--reps 3] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from ops.bench._common import (  # noqa: E402
    DaemonProcess,
    Report,
    SSEClient,
    bundled_model,
    exit_on_sigterm,
    median,
    parse_args,
    proc_status_kb,
    split_address,
)

TARGET_ABOVE_MB = 20.0
IDLE_UNLOAD_MIN = 0.05  # 3 s
SETTLE_S = 2.0  # after the last request (or the unload), before RSS is read
MESSAGE = "Say hello in five words."


async def _wait_health(client: httpx.AsyncClient, want: Any = None, timeout: float = 120.0) -> dict[str, Any]:
    """/health's body once it answers (and, given `want`, once want(body) holds)."""
    deadline = time.perf_counter() + timeout
    while True:
        try:
            r = await client.get("/health")
            if r.status_code == 200 and (want is None or want(r.json())):
                return dict(r.json())
        except httpx.HTTPError:
            pass
        if time.perf_counter() > deadline:
            raise TimeoutError("/health did not say what was awaited in time")
        await trio.sleep(0.1)


class _Watch:
    """The event stream's stamps: each conversation's first delta, the model's states."""

    def __init__(self) -> None:
        self.first_delta: dict[str, float] = {}
        self.ended: dict[str, trio.Event] = {}
        self.model: list[tuple[float, str]] = []

    def on_event(self, t: float, name: str, data: str, _id: str) -> None:
        body = json.loads(data)
        if name == "delta":
            self.first_delta.setdefault(body.get("conversation", ""), t)
        elif name == "model":
            self.model.append((t, body.get("state", "")))
        elif name == "conversation" and body.get("state") in ("idle", "error"):
            cid = body.get("id", "")
            ev = self.ended.get(cid)
            # Idle before its answer began is the conversation's creation, not its run's end.
            if ev is not None and (cid in self.first_delta or body.get("state") == "error"):
                ev.set()


async def _first_token(client: httpx.AsyncClient, watch: _Watch) -> tuple[float, float]:
    """(seconds from the POST to the first delta, when the POST was sent) of a new conversation's message."""
    r = await client.post("/api/conversations", json={})
    r.raise_for_status()
    cid = r.json()["id"]
    watch.ended[cid] = trio.Event()
    t0 = time.perf_counter()
    r = await client.post(f"/api/conversations/{cid}/messages", json={"text": MESSAGE})
    r.raise_for_status()
    with trio.fail_after(300):
        await watch.ended[cid].wait()
    if cid not in watch.first_delta:
        raise RuntimeError("the turn ended without an answer")
    return watch.first_delta[cid] - t0, t0


async def _floor(folder: Path, settle: float) -> float:
    daemon = DaemonProcess(["serve", "--port", "0", "--no-model", "--data-dir", str(folder / "none")],
                           log_path=folder / "none.log")
    address = daemon.start()
    try:
        async with httpx.AsyncClient(base_url=address, timeout=30) as client:
            await _wait_health(client)
            (await client.get("/api/conversations")).raise_for_status()
            await trio.sleep(settle)
            return proc_status_kb(daemon.pid, "VmRSS") / 1024
    finally:
        daemon.stop()


async def _with_model(folder: Path, reps: int, settle: float, out: dict[str, Any]) -> None:
    daemon = DaemonProcess(["serve", "--port", "0", "--data-dir", str(folder / "model"),
                            "--idle-unload", str(IDLE_UNLOAD_MIN)], log_path=folder / "model.log")
    address = daemon.start()
    host, port = split_address(address)
    watch = _Watch()
    try:
        async with httpx.AsyncClient(base_url=address, timeout=60) as client, trio.open_nursery() as nursery:
            await _wait_health(client)
            sse = SSEClient(host, port)
            nursery.start_soon(sse.run, watch.on_event)
            await sse.connected.wait()
            warm: list[float] = []
            cold: list[float] = []
            loads: list[float] = []
            rss_loaded: list[float] = []
            rss_idle: list[float] = []
            for _ in range(reps):
                await _wait_health(client, lambda h: h.get("loaded"))
                wait, _t0 = await _first_token(client, watch)  # the model in memory
                warm.append(wait)
                await trio.sleep(0.5)
                rss_loaded.append(proc_status_kb(daemon.pid, "VmRSS") / 1024)
                await _wait_health(client, lambda h: h.get("loaded") is False, timeout=IDLE_UNLOAD_MIN * 60 + 60)
                await trio.sleep(settle)
                rss_idle.append(proc_status_kb(daemon.pid, "VmRSS") / 1024)
                seen = len(watch.model)
                wait, t0 = await _first_token(client, watch)  # the model let go: loaded again first
                cold.append(wait)
                states = watch.model[seen:]
                start = next((t for t, s in states if s == "loading"), None)
                done = next((t for t, s in states if s == "loaded"), None)
                if start is not None and done is not None:
                    loads.append(done - start)
            nursery.cancel_scope.cancel()
        out.update(warm=warm, cold=cold, loads=loads, rss_loaded=rss_loaded, rss_idle=rss_idle)
    finally:
        daemon.stop()


async def run(reps: int, settle: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bmoe-idle-") as tmp:
        folder = Path(tmp)
        out["floor"] = await _floor(folder, settle)
        await _with_model(folder, reps, settle, out)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--settle", type=float, default=SETTLE_S, help="seconds before each RSS reading")
    args = parse_args(ap, quick={"reps": 1})
    exit_on_sigterm()
    bundled_model()  # what `serve` loads without --model
    rep = Report("idle_unload", "RSS with the model let go for idleness, and the next turn's reload")
    out = trio.run(run, args.reps, args.settle)
    floor = out["floor"]
    idle = max(out["rss_idle"])
    rep.figure("RSS, --no-model daemon (the floor)", floor, "MB", "{:.1f}")
    rep.figure("RSS, model loaded after a turn (median)", median(out["rss_loaded"]), "MB", "{:.1f}")
    rep.figure("RSS, model let go (worst of reps)", idle, "MB", "{:.1f}")
    rep.figure("first token, model loaded (median)", median(out["warm"]) * 1000, "ms", "{:.0f}")
    rep.figure("first token, model let go (median)", median(out["cold"]) * 1000, "ms", "{:.0f}")
    rep.figure("the load alone (median, model events)", median(out["loads"]) * 1000, "ms", "{:.0f}")
    rep.figure("the reload's cost on the next turn", (median(out["cold"]) - median(out["warm"])) * 1000, "ms", "{:.0f}")
    rep.target("RSS let go, above the floor", idle - floor, "<=", TARGET_ABOVE_MB, "MB", "{:.1f}")
    rep.check("every reload sent loading then loaded", len(out["loads"]) == args.reps)
    return rep.finish()


if __name__ == "__main__":
    raise SystemExit(main())
