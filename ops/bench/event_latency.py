"""Event latency: from a token leaving the engine to its `delta` reaching each of 50 SSE
clients, p50 and p99.

"Reaching" is the kernel's receive stamp on the client's socket (SO_TIMESTAMPNS): the
moment the bytes were there for the client to read. The time the bench's client
process read them is shown beside it: that process reads 50 sockets one after
another in Python on the machine's other core, so its reads lag the arrivals by its
own work (about 0.9 ms at the median, measured), which a real client (a page, an
app) waiting on its one stream does not add.

The daemon (`bmoe_daemon.server.serve` with a scripted backend) runs in this trio
process, and 50 raw-socket SSE clients on loopback in a second one, as real clients
are; both clock readings are `time.perf_counter()`, the system's monotonic clock. The backend is the
product's ScriptedBackend, subclassed here to stamp each piece just before it is
handed to the engine's emit; the event bus is subclassed to stamp each delta as it
is published, which splits the latency into engine -> bus and bus -> client. Every
piece's text is its sequence number ("0001", "0002", ...), so a delta is matched to
its piece by its text. All 50 clients are connected and counted by the daemon as
subscribers (GET /api/debug/actors) before the message is sent; a short warm-up
round runs first and is not counted. The daemon's CPU is this process's
(`time.process_time`, user and system) over the measured run, divided by deltas times
clients: with the clients in their own process, it is the daemon's alone (and the
bench's own stamps and polls, small beside it). Targets: p50 <= 2 ms, p99 <= 25 ms, and
at 50 clients at most 50 us of CPU per delta per client. `--profile FILE` writes a
cProfile of the measured run (a diagnosis: the profiler slows what it watches).

    .venv/bin/python ops/bench/event_latency.py [--clients 50] [--pieces 300] [--delay-ms 20] [--quick]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    CpuWatch,
    Report,
    SSEClient,
    exit_on_sigterm,
    median,
    parse_args,
    percentile,
    split_address,
)

TARGET_P50_MS = 2.0
TARGET_P99_MS = 25.0
# The daemon's CPU (its whole process: engine, run, bus, HTTP) per delta per client, at
# TARGET_CPU_CLIENTS clients; with fewer, the run's own cost weighs more per client.
TARGET_CPU_US = 50.0
TARGET_CPU_CLIENTS = 50
WARMUP_PIECES = 20
# The end of a run is polled for over HTTP, in the daemon's process: seldom, so the polls
# add little to the CPU measured (every 0.1 s they were about 5% of it).
POLL_S = 0.5


def make_script(folder: Path, pieces: int, delay: float) -> Path:
    # PIECE_CHARS is 4: a text of 4-digit numbers plays one number per piece.
    def numbers(start: int, n: int) -> str:
        return "".join(f"{i:04d}" for i in range(start, start + n))

    script = {
        "token_delay": delay,
        "rounds": [
            {"when": "warm-up", "text": numbers(9000, WARMUP_PIECES)},
            {"when": "measure", "text": numbers(1, pieces)},
        ],
    }
    path = folder / "script.json"
    path.write_text(json.dumps(script))
    return path


def install_probes(sent: dict[str, float], published: dict[str, float], framed: dict[str, list[float]]) -> None:
    """Subclass the backend and the bus that `serve` builds, through its module names,
    and wrap the SSE route's frame writer: a stamp as each subscriber's frame is made."""
    import bmoe_daemon.routes.events as events
    import bmoe_daemon.server as server
    from actors.bus import EventBus
    from actors.model.backends.scripted import ScriptedBackend
    from actors.model.turns import Emit, Piece, TurnInput, TurnResult

    class StampedBackend(ScriptedBackend):
        async def generate(self, turn: TurnInput, emit: Emit, abort: threading.Event) -> TurnResult:
            async def stamped(piece: Piece) -> None:
                if piece.text:
                    sent[piece.text] = time.perf_counter()
                await emit(piece)

            return await super().generate(turn, stamped, abort)

    class StampedBus(EventBus):
        def publish(self, name: str, data: Any, *, local_only: bool = False) -> Any:
            if name == "delta" and "text" in data:
                published[data["text"]] = time.perf_counter()
            return super().publish(name, data, local_only=local_only)

    sse_frame = events.sse_frame

    def stamped_frame(event: Any) -> bytes:
        if event.name == "delta" and "text" in event.data:
            framed.setdefault(event.data["text"], []).append(time.perf_counter())
        return sse_frame(event)

    server.ScriptedBackend = StampedBackend  # type: ignore[misc]
    server.EventBus = StampedBus  # type: ignore[misc]
    events.sse_frame = stamped_frame


class Clients:
    """n SSE clients in this process, recording the arrival of every delta."""

    def __init__(self, host: str, port: int, n: int, pieces: int) -> None:
        self.clients = [SSEClient(host, port, kernel_stamps=True) for _ in range(n)]
        self.arrivals: list[list[tuple[float, float, str]]] = [[] for _ in range(n)]
        self.finished = [trio.Event() for _ in range(n)]
        self._last_piece = f'"text":"{pieces:04d}"'

    def _recorder(self, k: int) -> Any:
        rows, finished, last_piece, client = self.arrivals[k], self.finished[k], self._last_piece, self.clients[k]

        def on_event(t: float, name: str, data: str, _id: str) -> None:
            if name == "delta":
                rows.append((t, client.read_t, data))  # parsed after the run, so clients stay cheap
                if last_piece in data:
                    finished.set()

        return on_event

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            for k, client in enumerate(self.clients):
                nursery.start_soon(client.run, self._recorder(k))
            with trio.fail_after(30):
                for client in self.clients:
                    await client.connected.wait()
            task_status.started()

    async def wait_finished(self, limit_s: float) -> None:
        with trio.move_on_after(limit_s):
            for ev in self.finished:
                await ev.wait()


async def client_worker(host: str, port: int, n: int, pieces: int) -> None:
    """--worker: the clients in a process of their own; READY once connected, then the
    arrivals as JSON once every client has the last piece."""
    clients = Clients(host, port, n, pieces)
    async with trio.open_nursery() as nursery:
        await nursery.start(clients.run)
        print("READY", flush=True)
        await clients.wait_finished(600)
        nursery.cancel_scope.cancel()
    sys.stdout.write(json.dumps(clients.arrivals))
    sys.stdout.flush()


class GcPauses:
    """Collector pauses in this process, from gc.callbacks."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []
        self._t0 = 0.0
        self.on = False
        gc.callbacks.append(self._cb)

    def _cb(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter()
        elif self.on:
            self.pauses.append((info["generation"], (time.perf_counter() - self._t0) * 1000))


async def bench(
    n_clients: int, pieces: int, delay: float, separate: bool, profile: str | None = None
) -> dict[str, Any]:
    from bmoe_daemon.config import Config
    from bmoe_daemon.server import serve

    sent: dict[str, float] = {}
    published: dict[str, float] = {}
    framed: dict[str, list[float]] = {}
    install_probes(sent, published, framed)
    tmp = Path(tempfile.mkdtemp(prefix="bench-latency-"))
    config = Config(port=0, data_dir=tmp / "data", scripted=make_script(tmp, pieces, delay))
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        address = await nursery.start(lambda task_status: serve(config, stop_event=stop, task_status=task_status))
        host, port = split_address(address)  # serve() froze what start-up made (gc.freeze)
        gc_pauses = GcPauses()
        async with trio.open_nursery() as client_nursery:
            clients: Clients | None = None
            worker: Any = None
            if separate:
                worker = await trio.lowlevel.open_process(
                    [sys.executable, __file__, "--worker", host, str(port), str(n_clients), str(pieces)],
                    stdout=subprocess.PIPE,
                )
                worker_out = bytearray()

                async def read_worker(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
                    started = False
                    async for chunk in worker.stdout:
                        worker_out.extend(chunk)
                        if not started and b"READY\n" in worker_out:
                            started = True
                            task_status.started()
                    if not started:
                        raise RuntimeError("the client process ended before its clients connected")

                with trio.fail_after(60):
                    await client_nursery.start(read_worker)
            else:
                clients = Clients(host, port, n_clients, pieces)
                await client_nursery.start(clients.run)
            async with httpx.AsyncClient(base_url=address, timeout=30) as http:
                with trio.fail_after(30):
                    while True:
                        tree = (await http.get("/api/debug/actors")).json()
                        if tree["events"]["subscribers"] >= n_clients:
                            break
                        await trio.sleep(0.05)
                subscribers = tree["events"]["subscribers"]

                async def one_run(text: str) -> str:
                    conv = (await http.post("/api/conversations", json={})).json()["id"]
                    r = await http.post(f"/api/conversations/{conv}/messages", json={"text": text})
                    r.raise_for_status()
                    while (await http.get(f"/api/conversations/{conv}")).json()["state"] != "idle":  # noqa: ASYNC110
                        await trio.sleep(POLL_S)  # polled over HTTP, as a client would
                    return conv

                with trio.fail_after(60):
                    await one_run("warm-up")  # its deltas are told apart by their text
                await trio.sleep(0.3)
                gc_pauses.on = True
                profiler = cProfile.Profile(time.process_time) if profile else None  # CPU, not time waited
                cpu0 = time.process_time()
                sys0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime
                if profiler is not None:
                    profiler.enable()
                with trio.fail_after(pieces * delay * 4 + 60):
                    conv = await one_run("measure")
                if profiler is not None:
                    profiler.disable()
                cpu = time.process_time() - cpu0
                cpu_sys = resource.getrusage(resource.RUSAGE_SELF).ru_stime - sys0
                if profiler is not None and profile is not None:
                    profiler.dump_stats(profile)
                gc_pauses.on = False
            if clients is not None:
                await clients.wait_finished(10)
                arrivals = clients.arrivals
                client_nursery.cancel_scope.cancel()
            else:
                with trio.fail_after(30):
                    await worker.wait()
        if worker is not None:
            text = bytes(worker_out).split(b"READY\n", 1)[1]
            arrivals = [[(t, r, d) for t, r, d in rows] for rows in json.loads(text)]
        stop.set()
    shutil.rmtree(tmp, ignore_errors=True)
    return {
        "sent": sent,
        "published": published,
        "framed": framed,
        "arrivals": arrivals,
        "conv": conv,
        "subscribers": subscribers,
        "gc": gc_pauses.pauses,
        "cpu": cpu,
        "cpu_sys": cpu_sys,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--pieces", type=int, default=300)
    ap.add_argument("--delay-ms", type=float, default=20.0)
    ap.add_argument(
        "--clients-in-daemon",
        action="store_true",
        help="diagnosis: run the 50 clients inside the daemon's own process and thread, so their "
        "reading and parsing competes with the daemon (by default they run in a second process, as "
        "real clients do; perf_counter is the system's monotonic clock, the same in both)",
    )
    ap.add_argument(
        "--profile",
        metavar="FILE",
        help="diagnosis: cProfile the daemon's process over the measured run, timed by its CPU (not wall) "
        "time, and write the stats to FILE (pstats format; the profiler's own cost inflates the CPU figure)",
    )
    ap.add_argument("--worker", nargs=4, metavar=("HOST", "PORT", "N", "PIECES"), help=argparse.SUPPRESS)
    args = parse_args(ap, quick={"clients": 10, "pieces": 100, "delay_ms": 10.0})
    exit_on_sigterm()
    if args.worker:
        host, port, n, pieces = args.worker
        trio.run(client_worker, host, int(port), int(n), int(pieces))
        return 0

    rep = Report("event_latency", "token leaving the engine -> its delta at each SSE client")
    rep.figure("clients, pieces, delay between pieces", f"{args.clients}, {args.pieces}, {args.delay_ms:g} ms")
    rep.figure("clients run in", "the daemon's process" if args.clients_in_daemon else "a second process")
    watch = CpuWatch().start()
    out = trio.run(bench, args.clients, args.pieces, args.delay_ms / 1000.0, not args.clients_in_daemon, args.profile)
    foreign = watch.foreign_cores()
    sent, published = out["sent"], out["published"]
    latencies: list[float] = []
    read: list[float] = []
    to_bus: list[float] = []
    from_bus: list[float] = []
    missing = 0
    expected = {f"{i:04d}" for i in range(1, args.pieces + 1)}
    for rows in out["arrivals"]:
        got: set[str] = set()
        for t, t_read, data in rows:
            d = json.loads(data)
            text = d.get("text")
            if d.get("conversation") != out["conv"] or text not in expected:
                continue
            got.add(text)
            latencies.append((t - sent[text]) * 1000)
            read.append((t_read - sent[text]) * 1000)
            from_bus.append((t - published[text]) * 1000)
        missing += len(expected - got)
    for text in expected:
        if text in sent and text in published:
            to_bus.append((published[text] - sent[text]) * 1000)
    rep.figure("subscribers counted by the daemon", out["subscribers"], "", "{}")
    rep.figure("deltas measured", len(latencies), "", "{}")
    rep.figure("deltas missing (lagged or lost)", missing, "", "{}")
    rep.figure("latency p50", percentile(latencies, 50), "ms", "{:.2f}")
    rep.figure("latency p90", percentile(latencies, 90), "ms", "{:.2f}")
    rep.figure("latency p99", percentile(latencies, 99), "ms", "{:.2f}")
    rep.figure("latency max", max(latencies) if latencies else float("nan"), "ms", "{:.2f}")
    rep.figure("read by the bench's client process, p50 / p99",
               f"{percentile(read, 50):.2f} / {percentile(read, 99):.2f}", "ms")
    rep.figure("engine -> bus publish p50 / p99", f"{percentile(to_bus, 50):.3f} / {percentile(to_bus, 99):.3f}", "ms")
    to_frame = [(t - published[x]) * 1000 for x in expected if x in published for t in out["framed"].get(x, ())]
    first_frame = [(min(ts) - published[x]) * 1000 for x, ts in out["framed"].items() if x in expected and ts]
    last_frame = [(max(ts) - published[x]) * 1000 for x, ts in out["framed"].items() if x in expected and ts]
    rep.figure(
        "bus publish -> SSE frame made, p50 / p99",
        f"{percentile(to_frame, 50):.2f} / {percentile(to_frame, 99):.2f}",
        "ms",
    )
    rep.figure("  first subscriber's frame, p50", percentile(first_frame, 50), "ms", "{:.2f}")
    rep.figure("  last subscriber's frame, p50", percentile(last_frame, 50), "ms", "{:.2f}")
    rep.figure(
        "bus publish -> client p50 / p99", f"{percentile(from_bus, 50):.2f} / {percentile(from_bus, 99):.2f}", "ms"
    )
    per_client = [
        median([(t - sent[json.loads(d)["text"]]) * 1000 for t, _r, d in rows if json.loads(d).get("text") in expected])
        for rows in out["arrivals"]
        if rows
    ]
    if per_client:
        rep.figure("per-client median: best / worst", f"{min(per_client):.2f} / {max(per_client):.2f}", "ms")
    pauses = out["gc"]
    cpu_us = out["cpu"] / max(1, args.pieces * args.clients) * 1e6
    rep.figure("process CPU per delta per client", cpu_us, "us", "{:.1f}")
    # The kernel's part is mostly the socket writes (loopback delivers to the reader inside send()).
    rep.figure("  of it in the kernel (system time)", out["cpu_sys"] / max(1, args.pieces * args.clients) * 1e6,
               "us", "{:.1f}")
    rep.figure("gc pauses in the run: count / total", f"{len(pauses)} / {sum(p for _, p in pauses):.0f}", "ms")
    rep.figure(
        "gc pauses: longest (generation)",
        "-" if not pauses else "{:.1f} ms (gen {})".format(*max((p, g) for g, p in pauses)),
    )
    rep.figure(
        "gc pauses by generation: count / total",
        ", ".join(
            f"gen {g} {sum(1 for x, _ in pauses if x == g)} / {sum(p for x, p in pauses if x == g):.0f} ms"
            for g in (0, 1, 2)
        ),
    )
    rep.figure(
        "other processes' CPU during the run",
        foreign,
        "cores",
        "{:.2f}",
    )
    rep.check("every client got every delta", missing == 0, f"{missing} missing")
    rep.target("latency p50", percentile(latencies, 50), "<=", TARGET_P50_MS, "ms", "{:.2f}")
    rep.target("latency p99", percentile(latencies, 99), "<=", TARGET_P99_MS, "ms", "{:.2f}")
    cpu_label = f"CPU per delta per client at {TARGET_CPU_CLIENTS} clients"
    if args.clients == TARGET_CPU_CLIENTS:
        rep.target(cpu_label, cpu_us, "<=", TARGET_CPU_US, "us", "{:.1f}")
    else:
        rep.not_judged(cpu_label, "<=", TARGET_CPU_US, "us", f"{args.clients} clients ran", "{:.1f}")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
