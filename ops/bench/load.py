"""Messages under load: N conversations × M messages each through a provider route that
answers at once, with K SSE clients listening.

The daemon is a real process (`serve --no-model`), its one provider a scripted
OpenAI-compatible server in this process (tests/openai_stub.py, on loopback) that
streams each answer at once: "Answer to <the message>". The N conversations are sent
their messages concurrently, each conversation's one after another (the next is sent
once the conversation is idle again). K raw SSE clients (`_common.SSEClient`) follow
`/api/events` throughout; the first of them times each message from its POST to the
`conversation` event that says it is idle again after running.

Figures: message → idle (p50, p99), messages a second, the daemon's CPU per message
(utime + stime from /proc/<pid>/stat before the first message and once the daemon has
settled after the last: so work left after the idle, a save, counts too), and the load
average beside them. Checks: every POST answered 202, every conversation ended idle with
no error, the provider was asked N × M times, every client saw every run end, and every
item is on disk: after the daemon stopped, the store read back holds each
conversation's M messages and their M answers, in order.

`--profile FILE` runs the daemon under cProfile, enabled only for the messages (the
bench signals it before the first and after the last) and prints where its time went.

    .venv/bin/python ops/bench/load.py [--conversations 50] [--messages 5] [--clients 20]
                                       [--profile FILE] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    CpuWatch,
    DaemonProcess,
    Report,
    SSEClient,
    exit_on_sigterm,
    parse_args,
    percentile,
    proc_cpu_seconds,
    split_address,
)

from tests.openai_stub import OpenAIStub, answer  # noqa: E402

PROVIDER_KEY = "sk-bench-load-0a9f"
SETTLE_WINDOW_S = 0.5  # the daemon has settled when its CPU time stays put this long
SETTLE_BOUND_S = 15.0
# The daemon under cProfile: enabled on SIGUSR1, written to argv[1] on SIGUSR2.
PROFILED = """
import cProfile, signal, sys
out = sys.argv.pop(1)
prof = cProfile.Profile()
def start(*_):
    prof.enable()
def stop(*_):
    prof.disable()
    prof.dump_stats(out + ".part")
    import os
    os.replace(out + ".part", out)
signal.signal(signal.SIGUSR1, start)
signal.signal(signal.SIGUSR2, stop)
from bmoe_daemon.cli import main
sys.exit(main(sys.argv[1:]))
"""


class Stub(OpenAIStub):
    """Answers each request with the text of its last user message, so the record on
    disk can be checked item by item."""

    def reply_for(self, request: Any) -> dict[str, Any]:
        messages = request.body.get("messages", []) if isinstance(request.body, dict) else []
        users = [m.get("content") for m in messages if m.get("role") == "user"]
        last = users[-1] if users else ""
        if isinstance(last, list):  # content parts
            last = "".join(p.get("text", "") for p in last if isinstance(p, dict))
        return answer(f"Answer to {last}")


class Follower:
    """What one SSE client saw: per conversation, the runs that ended (running, then idle)."""

    def __init__(self, client: SSEClient, waiters: dict[str, Any] | None = None) -> None:
        self.client = client
        self.running: set[str] = set()
        self.ended: dict[str, int] = {}
        self.errors: list[str] = []
        self.waiters = waiters  # conversation id -> callable(t), for the timing client

    def on_event(self, t: float, name: str, data: str, _id: str) -> None:
        if name != "conversation":
            return
        info = json.loads(data)
        cid, state = info.get("id"), info.get("state")
        if state == "error":
            self.errors.append(cid)
        if state == "running":
            self.running.add(cid)
        elif state == "idle" and cid in self.running:
            self.running.discard(cid)
            self.ended[cid] = self.ended.get(cid, 0) + 1
            if self.waiters is not None and cid in self.waiters:
                self.waiters.pop(cid)(t)


async def settled_cpu(pid: int) -> float:
    """The daemon's CPU seconds once they stopped growing for SETTLE_WINDOW_S (bounded)."""
    deadline = time.monotonic() + SETTLE_BOUND_S
    last = proc_cpu_seconds(pid)
    while time.monotonic() < deadline:
        await trio.sleep(SETTLE_WINDOW_S)
        now = proc_cpu_seconds(pid)
        if now == last:
            return now
        last = now
    return last


async def drive(args: argparse.Namespace, daemon: DaemonProcess, stub: Stub, report: Report) -> dict[str, Any]:
    assert daemon.address is not None
    host, port = split_address(daemon.address)
    waiters: dict[str, Any] = {}
    clients = [SSEClient(host, port) for _ in range(args.clients)]
    followers = [Follower(c, waiters if i == 0 else None) for i, c in enumerate(clients)]
    latencies: list[float] = []
    statuses: list[int] = []
    out: dict[str, Any] = {}
    limits = httpx.Limits(max_connections=args.conversations + 4, max_keepalive_connections=args.conversations + 4)
    http = httpx.AsyncClient(base_url=daemon.address, timeout=60, limits=limits)
    async with http, trio.open_nursery() as nursery:
        r = await http.post("/api/providers", json={
            "name": "Load Stub", "base_url": stub.base_url, "models": ["stub-model"], "api_key": PROVIDER_KEY})
        r.raise_for_status()
        route = f"{r.json()['id']}/stub-model"
        for f in followers:
            nursery.start_soon(f.client.run, f.on_event)
        with trio.fail_after(30):
            for c in clients:
                await c.connected.wait()
        cids = []
        for _ in range(args.conversations):
            r = await http.post("/api/conversations", json={"route": route})
            r.raise_for_status()
            cids.append(r.json()["id"])
        out["cids"] = cids

        async def converse(i: int, cid: str) -> None:
            for m in range(args.messages):
                ended = trio.Event()
                stamp: list[float] = []

                def done(t: float, ended: trio.Event = ended, stamp: list[float] = stamp) -> None:
                    stamp.append(t)
                    ended.set()

                waiters[cid] = done
                t0 = time.perf_counter()
                r = await http.post(f"/api/conversations/{cid}/messages", json={"text": f"conv {i} message {m}"})
                statuses.append(r.status_code)
                if r.status_code != 202:
                    waiters.pop(cid, None)
                    return
                await ended.wait()
                latencies.append(stamp[0] - t0)

        if args.profile:
            os.kill(daemon.pid, signal.SIGUSR1)
        load0 = os.getloadavg()
        cpu0 = proc_cpu_seconds(daemon.pid)
        main0 = proc_cpu_seconds(f"{daemon.pid}/task/{daemon.pid}")
        own0 = time.process_time()
        watch = CpuWatch([daemon.pid]).start()
        t0 = time.perf_counter()
        with trio.fail_after(args.timeout):
            async with trio.open_nursery() as senders:
                for i, cid in enumerate(cids):
                    senders.start_soon(converse, i, cid)
        wall = time.perf_counter() - t0
        own = time.process_time() - own0
        foreign = watch.foreign_cores()
        cpu_idle = proc_cpu_seconds(daemon.pid)
        cpu_settled = await settled_cpu(daemon.pid)
        main_thread = proc_cpu_seconds(f"{daemon.pid}/task/{daemon.pid}") - main0
        load1 = os.getloadavg()
        if args.profile:
            os.kill(daemon.pid, signal.SIGUSR2)
        # Every client has the last run's end before we look (bounded).
        with trio.move_on_after(10):
            while any(sum(f.ended.values()) < len(latencies) for f in followers):
                await trio.sleep(0.05)
        states = {}
        for cid in cids:
            states[cid] = (await http.get(f"/api/conversations/{cid}")).json().get("state")
        nursery.cancel_scope.cancel()
    out.update(latencies=latencies, statuses=statuses, wall=wall, own=own, foreign=foreign, main_thread=main_thread,
               cpu_idle=cpu_idle - cpu0, cpu_settled=cpu_settled - cpu0, load=(load0, load1),
               followers=followers, states=states)
    return out


def check_disk(data_dir: Path, cids: list[str], n_messages: int) -> tuple[bool, str]:
    from bmoe_daemon.store import Store

    records = {r.info.id: r for r in Store(data_dir).load_conversations()}
    for i, cid in enumerate(cids):
        record = records.get(cid)
        if record is None:
            return False, f"{cid} is not on disk"
        got = [(item.to_json()["kind"], item.to_json().get("text")) for item in record.items]
        want = []
        for m in range(n_messages):
            want += [("user", f"conv {i} message {m}"), ("assistant", f"Answer to conv {i} message {m}")]
        if got != want:
            return False, f"{cid} holds {got[:6]}... not {want[:4]}..."
    return True, ""


def show_profile(path: Path, n_messages: int, top: int) -> None:
    stats = pstats.Stats(str(path))
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"   profile (main thread, the messages only): {total:.2f} s, {total / n_messages * 1000:.1f} ms a message")
    for key in ("tottime", "cumulative"):
        print(f"   -- by {key}:")
        stats.sort_stats(key).print_stats(top)


def main() -> int:
    exit_on_sigterm()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conversations", type=int, default=50)
    ap.add_argument("--messages", type=int, default=5, help="messages per conversation, one after another")
    ap.add_argument("--clients", type=int, default=20, help="SSE clients on /api/events")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds the messages may take in all")
    ap.add_argument("--profile", type=Path, default=None, help="run the daemon under cProfile; write its stats here")
    ap.add_argument("--top", type=int, default=30, help="rows of the profile shown")
    args = parse_args(ap, {"conversations": 10, "messages": 2, "clients": 4, "timeout": 90.0})
    n = args.conversations * args.messages
    report = Report(
        "load",
        f"{args.conversations} conversations × {args.messages} messages, {args.clients} SSE clients, "
        "a provider that answers at once",
    )
    with tempfile.TemporaryDirectory(prefix="bmoe-load-") as tmp_name:
        tmp = Path(tmp_name)
        data = tmp / "data"
        serve = ["serve", "--port", "0", "--no-model", "--data-dir", str(data)]
        if args.profile:
            daemon = DaemonProcess([str(args.profile.resolve()), *serve], code=PROFILED, log_path=tmp / "daemon.log")
        else:
            daemon = DaemonProcess(serve, log_path=tmp / "daemon.log")
        stub = Stub()

        async def run() -> dict[str, Any]:
            async with trio.open_nursery() as nursery:
                await nursery.start(stub.run)
                try:
                    daemon.start()
                    return await drive(args, daemon, stub, report)
                finally:
                    nursery.cancel_scope.cancel()

        try:
            out = trio.run(run)
        finally:
            status = daemon.stop()
        lat = sorted(out["latencies"])
        report.figure("messages answered", len(lat), f"of {n}", fmt="{}")
        report.figure("message → idle p50", percentile(lat, 50) * 1000, "ms")
        report.figure("message → idle p99", percentile(lat, 99) * 1000, "ms")
        report.figure("messages a second", len(lat) / out["wall"], "/s")
        report.figure("daemon CPU per message to the last idle", out["cpu_idle"] / n * 1000, "ms")
        report.figure("daemon CPU per message, settled", out["cpu_settled"] / n * 1000, "ms")
        report.figure("  of it the trio thread's", out["main_thread"] / n * 1000, "ms")
        report.figure("  of it other threads' (saves, ...)", (out["cpu_settled"] - out["main_thread"]) / n * 1000, "ms")
        report.figure("this process's CPU per message (clients, provider)", out["own"] / n * 1000, "ms")
        report.figure("other processes' CPU during the messages", out["foreign"], "cores", fmt="{:.2f}")
        load0, load1 = out["load"]
        report.figure("load average (1 min) before / after", f"{load0[0]:.2f} / {load1[0]:.2f}")
        if args.profile:
            deadline = time.monotonic() + 10
            while not args.profile.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            if args.profile.exists():
                show_profile(args.profile, n, args.top)
            else:
                report.note(f"the daemon wrote no profile to {args.profile}")

        report.check("every message answered 202", out["statuses"] == [202] * n,
                     f"statuses {sorted(set(out['statuses']))}, {len(out['statuses'])} of {n}")
        report.check("every run ended idle, timed", len(lat) == n, f"{len(lat)} of {n}")
        bad = {c: s for c, s in out["states"].items() if s != "idle"}
        errors = sorted({c for f in out["followers"] for c in f.errors})
        report.check("no conversation in error", not bad and not errors, f"states {bad}, error events {errors}")
        report.check("the provider was asked once a message", len(stub.received) == n, f"{len(stub.received)} requests")
        short = [i for i, f in enumerate(out["followers"])
                 if any(f.ended.get(c, 0) != args.messages for c in out["cids"])]
        report.check("every SSE client saw every run end", not short, f"clients {short} missed some")
        report.check("the daemon stopped cleanly", status == 0, f"exit status {status}: {daemon.tail_log()[-400:]}")
        ok, detail = check_disk(data, out["cids"], args.messages)
        report.check("every item on disk, in order", ok, detail)

        report.target("message → idle p99", percentile(lat, 99) * 1000, "<=", 1000, "ms")
        report.target("daemon CPU per message", out["cpu_settled"] / n * 1000, "<=", 10, "ms")
    return report.finish()


if __name__ == "__main__":
    raise SystemExit(main())
