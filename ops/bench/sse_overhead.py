"""SSE overhead: the daemon's CPU per event per client on /api/events, beside a bare ASGI
stream on the same hypercorn, measured in turns in one process.

The figure event_latency.py judges (CPU per delta per client) is mostly what any ASGI
application pays hypercorn, trio and the kernel for one body write, and it moves by
tens of percent with the machine's load. This one tells the daemon's own share apart:
the daemon (`bmoe_daemon.server.serve`) and a bare ASGI application that answers every
request with the product's `EventBus` frames, a `http.response.body` send for each
wakeup (what the route would cost served at the ASGI layer, with no Quart, no write
guard and no route around it), run in this trio process on two hypercorn servers.
N raw-socket SSE clients of each, in a second process, read them. Events are published
straight on each one's bus, not made by a run: WINDOW events to the daemon's, CPU
(`time.process_time`) read before and after, then WINDOW to the bare one's, and so on,
so both see the same load; the medians of the windows are compared.

    .venv/bin/python ops/bench/sse_overhead.py [--clients 50] [--windows 16] [--window 50] [--quick]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Report, SSEClient, exit_on_sigterm, median, parse_args, split_address  # noqa: E402

GAP_S = 0.02  # between two events, as a model's tokens come
DONE = "bench-done"  # the last event: the clients count and stop
BATCH_EVENTS = 64  # as bmoe_daemon/routes/events.py's


def bare_app(bus: Any) -> Callable[..., Any]:
    """A bare ASGI application: every HTTP request is an event stream of `bus`."""
    from actors.bus import Event

    async def app(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                else:
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]})
        with bus.subscribe(local=True) as sub:
            await send({"type": "http.response.body", "body": b": connected\n\n", "more_body": True})
            while True:
                got = await sub.receive_batch(BATCH_EVENTS)
                body = b"".join(x.sse_frame() if isinstance(x, Event) else b": ping\n\n" for x in got)
                await send({"type": "http.response.body", "body": body, "more_body": True})

    return app


async def client_worker(ports: list[int], n: int) -> None:
    """--worker: n clients of each port; READY once all connected, then each client's
    count of deltas as JSON once every client saw DONE."""
    clients = [(k, SSEClient("127.0.0.1", port)) for k, port in enumerate(ports) for _ in range(n)]
    counts = [0] * len(clients)
    finished = [trio.Event() for _ in clients]

    def recorder(i: int) -> Callable[[float, str, str, str], None]:
        def on_event(_t: float, name: str, _data: str, _id: str) -> None:
            if name == "delta":
                counts[i] += 1
            elif name == DONE:
                finished[i].set()

        return on_event

    async with trio.open_nursery() as nursery:
        for i, (_, client) in enumerate(clients):
            nursery.start_soon(client.run, recorder(i))
        with trio.fail_after(60):
            for _, client in clients:
                await client.connected.wait()
        print("READY", flush=True)
        with trio.fail_after(600):
            for ev in finished:
                await ev.wait()
        nursery.cancel_scope.cancel()
    sys.stdout.write(json.dumps({"counts": counts, "server": [k for k, _ in clients]}))
    sys.stdout.flush()


async def bench(n: int, windows: int, window: int) -> dict[str, Any]:
    import hypercorn.config
    from hypercorn.trio import serve as hypercorn_serve

    import bmoe_daemon.server as server
    from actors.bus import EventBus
    from bmoe_daemon.config import Config

    buses: list[EventBus] = []

    class CapturedBus(EventBus):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            buses.append(self)

    server.EventBus = CapturedBus  # type: ignore[attr-defined]
    tmp = Path(tempfile.mkdtemp(prefix="bench-sse-overhead-"))
    script = tmp / "script.json"
    script.write_text(json.dumps({"rounds": []}))
    stop = trio.Event()
    bare_bus = EventBus()
    out: dict[str, Any] = {"daemon": [], "bare": [], "daemon_sys": [], "bare_sys": []}
    async with trio.open_nursery() as nursery:
        address = await nursery.start(
            lambda task_status: server.serve(Config(port=0, data_dir=tmp / "data", scripted=script),
                                             stop_event=stop, task_status=task_status))
        daemon_bus = buses[0]
        hconfig = hypercorn.config.Config()
        hconfig.bind = ["127.0.0.1:0"]
        hconfig.accesslog = None
        hconfig.errorlog = None
        binds = await nursery.start(lambda task_status: hypercorn_serve(
            bare_app(bare_bus), hconfig, task_status=task_status))
        ports = [split_address(address)[1], split_address(binds[0])[1]]
        worker = await trio.lowlevel.open_process(
            [sys.executable, __file__, "--worker", json.dumps(ports), str(n)], stdout=subprocess.PIPE)
        got = bytearray()
        async with trio.open_nursery() as reading:
            ready = trio.Event()

            async def read_worker() -> None:
                assert worker.stdout is not None
                async for chunk in worker.stdout:
                    got.extend(chunk)
                    if b"READY\n" in got:
                        ready.set()

            reading.start_soon(read_worker)
            with trio.fail_after(60):
                await ready.wait()
                while daemon_bus.subscribers < n or bare_bus.subscribers < n:
                    await trio.sleep(0.05)
            await trio.sleep(0.3)
            seq = 0
            for w in range(windows):
                # Which goes first alternates, so neither always follows the other's wakeups.
                order = [("daemon", daemon_bus), ("bare", bare_bus)]
                for name, bus in order if w % 2 == 0 else order[::-1]:
                    cpu0 = time.process_time()
                    sys0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime
                    for _ in range(window):
                        seq += 1
                        bus.publish("delta", {"conversation": "bench", "text": f"{seq:06d}"})
                        await trio.sleep(GAP_S)
                    out[name].append((time.process_time() - cpu0) / (window * n) * 1e6)
                    out[name + "_sys"].append((resource.getrusage(resource.RUSAGE_SELF).ru_stime - sys0)
                                              / (window * n) * 1e6)
            for bus in (daemon_bus, bare_bus):
                bus.publish(DONE, {})
            with trio.fail_after(60):
                await worker.wait()
        stop.set()
        nursery.cancel_scope.cancel()
    shutil.rmtree(tmp, ignore_errors=True)
    result = json.loads(bytes(got).split(b"READY\n", 1)[1])
    out["counts"] = result["counts"]
    out["server"] = result["server"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=50, help="clients of each server")
    ap.add_argument("--windows", type=int, default=16, help="turns of each server")
    ap.add_argument("--window", type=int, default=50, help="events a turn")
    ap.add_argument("--worker", nargs=2, metavar=("PORTS", "N"), help=argparse.SUPPRESS)
    args = parse_args(ap, quick={"clients": 10, "windows": 6, "window": 25})
    exit_on_sigterm()
    if args.worker:
        trio.run(client_worker, json.loads(args.worker[0]), int(args.worker[1]))
        return 0
    rep = Report("sse_overhead", "CPU per event per SSE client: the daemon's /api/events beside a bare ASGI stream")
    rep.figure("clients of each, turns, events a turn", f"{args.clients}, {args.windows}, {args.window}")
    out = trio.run(bench, args.clients, args.windows, args.window)
    daemon, bare = median(out["daemon"]), median(out["bare"])
    rep.figure("daemon: CPU per event per client, median", daemon, "us", "{:.1f}")
    rep.figure("  of it in the kernel (system time)", median(out["daemon_sys"]), "us", "{:.1f}")
    rep.figure("bare ASGI stream: CPU per event per client", bare, "us", "{:.1f}")
    rep.figure("  of it in the kernel (system time)", median(out["bare_sys"]), "us", "{:.1f}")
    diffs = [d - b for d, b in zip(out["daemon"], out["bare"], strict=True)]
    rep.figure("daemon over bare, median of the turns", median(diffs), "us", "{:+.1f}")
    rep.figure("  turns: daemon", " ".join(f"{x:.0f}" for x in out["daemon"]), "us")
    rep.figure("  turns: bare", " ".join(f"{x:.0f}" for x in out["bare"]), "us")
    expected = args.windows * args.window
    short = [c for c in out["counts"] if c != expected]
    rep.check("every client got every event", not short, f"{len(short)} of {len(out['counts'])} clients did not")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
