"""Composing latency: from a piece of a tool call's arguments leaving the engine to the
composing card's grown `bytes` reaching an SSE client, p50 and p99.

The set-up is event_latency.py's: everything in this one trio process, so both clock
readings are `time.perf_counter()` of the same clock: the daemon
(`bmoe_daemon.server.serve`, as `serve --scripted` runs it) and raw-socket SSE clients
on loopback. The scripted backend is the product's ScriptedBackend, subclassed to stamp
each `tool_call` piece just before it is handed to the engine's emit, keyed by the
call's byte count once that piece is in (what the card's `bytes` will read). The
measured round is one long `write_file` call in a `full` conversation with a
workspace, its arguments (`--kib` of content) streamed in the scripted backend's pieces
of 4 characters, `--delay-ms` apart; each `item` event of that card in state
`composing` is matched to its piece by `bytes`. The card then runs (the file is
written) and the run ends. All clients are connected and counted by the daemon as
subscribers before the message is sent; a short warm-up round runs first and is not
counted.

    .venv/bin/python ops/bench/composing_latency.py [--clients 1] [--kib 4] [--delay-ms 5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
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

TARGET_P50_MS = 5.0
TARGET_P99_MS = 25.0
WARMUP_CHARS = 400
MEASURED_FILE = "page.html"
WORDS = (
    "harbour", "lantern", "keeper", "tide", "gull", "rope", "storm", "shore", "beacon", "ledger", "night", "oil",
    "glass", "stair", "wind", "salt", "bell", "chart", "fog", "stone", "island", "signal", "wave", "boat", "dawn",
    "mends", "climbs", "writes", "counts", "turns", "watches", "lights", "keeps", "reads", "calls", "waits",
    "slowly", "again", "north", "quiet", "bright", "old", "late", "cold", "small", "steady", "every", "before",
)


def arguments(path: str, kib: float) -> dict[str, str]:
    """A write_file call whose content is about `kib` KiB of ASCII (so bytes == chars):
    numbered lines of words drawn from a seeded generator, so no line repeats another
    (a file of one line over and over is no page a model would write, and the daemon's
    loop watch rightly cuts it short)."""
    rng = random.Random(f"{path} {kib}")
    lines: list[str] = []
    size, want = 0, max(1, int(kib * 1024))
    while size < want:
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 11)))
        line = f"<p>{len(lines) + 1}. {words[0].upper()}{words[1:]}.</p>\n"
        lines.append(line)
        size += len(line)
    return {"path": path, "content": "".join(lines)}


def make_script(folder: Path, kib: float, delay: float) -> Path:
    script = {
        "token_delay": delay,
        "rounds": [
            {"when": "warm-up", "tool_calls": [{"name": "write_file",
                                                "arguments": arguments("warm.html", WARMUP_CHARS / 1024)}]},
            {"when": "warm-up", "text": "Warm."},
            {"when": "measure", "tool_calls": [{"name": "write_file",
                                                "arguments": arguments(MEASURED_FILE, kib)}]},
            {"when": "measure", "text": "Written."},
        ],
    }
    path = folder / "script.json"
    path.write_text(json.dumps(script))
    return path


def install_probe(sent: dict[int, float]) -> None:
    """Subclass the backend that `serve` builds, through its module name: a stamp as each
    tool-call piece leaves it, keyed by the call's bytes so far (one call a round)."""
    import bmoe_daemon.server as server
    from actors.model.backends.scripted import ScriptedBackend
    from actors.model.turns import Emit, Piece, TurnInput, TurnResult

    class StampedBackend(ScriptedBackend):
        async def generate(self, turn: TurnInput, emit: Emit, abort: threading.Event) -> TurnResult:
            total = 0

            async def stamped(piece: Piece) -> None:
                nonlocal total
                if piece.kind == "tool_call" and piece.text:
                    if total == 0:
                        sent.clear()  # only the last call's stamps are kept: the measured one
                    total += len(piece.text.encode("utf-8"))
                    sent[total] = time.perf_counter()
                await emit(piece)

            return await super().generate(turn, stamped, abort)

    server.ScriptedBackend = StampedBackend  # type: ignore[misc]


class Clients:
    """n SSE clients, each recording the arrival of every `item` event of a tool card."""

    def __init__(self, host: str, port: int, n: int) -> None:
        self.clients = [SSEClient(host, port) for _ in range(n)]
        self.arrivals: list[list[tuple[float, str]]] = [[] for _ in range(n)]

    def _recorder(self, k: int) -> Any:
        rows = self.arrivals[k]

        def on_event(t: float, name: str, data: str, _id: str) -> None:
            if name == "item" and '"kind":"tool"' in data:
                rows.append((t, data))  # parsed after the run, so clients stay cheap

        return on_event

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            for k, client in enumerate(self.clients):
                nursery.start_soon(client.run, self._recorder(k))
            with trio.fail_after(30):
                for client in self.clients:
                    await client.connected.wait()
            task_status.started()


async def bench(n_clients: int, kib: float, delay: float) -> dict[str, Any]:
    from bmoe_daemon.config import Config
    from bmoe_daemon.server import serve

    sent: dict[int, float] = {}
    install_probe(sent)
    tmp = Path(tempfile.mkdtemp(prefix="bench-composing-"))
    folder = tmp / "ws"
    folder.mkdir()
    config = Config(port=0, data_dir=tmp / "data", scripted=make_script(tmp, kib, delay))
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        address = await nursery.start(lambda task_status: serve(config, stop_event=stop, task_status=task_status))
        host, port = split_address(address)
        async with trio.open_nursery() as client_nursery:
            clients = Clients(host, port, n_clients)
            await client_nursery.start(clients.run)
            async with httpx.AsyncClient(base_url=address, timeout=30) as http:
                with trio.fail_after(30):
                    while True:
                        tree = (await http.get("/api/debug/actors")).json()
                        if tree["events"]["subscribers"] >= n_clients:
                            break
                        await trio.sleep(0.05)
                ws = (await http.post("/api/workspaces", json={"path": str(folder)})).json()["id"]

                async def one_run(text: str) -> tuple[str, dict[str, Any]]:
                    conv = (await http.post("/api/conversations", json={"workspace": ws, "mode": "full"})).json()["id"]
                    r = await http.post(f"/api/conversations/{conv}/messages", json={"text": text})
                    r.raise_for_status()
                    while True:
                        body = (await http.get(f"/api/conversations/{conv}")).json()
                        if body["state"] == "idle":
                            return conv, body
                        await trio.sleep(0.1)  # polled over HTTP, as a client would

                with trio.fail_after(60):
                    await one_run("warm-up")
                await trio.sleep(0.3)
                cpu0 = time.process_time()
                with trio.fail_after(kib * 1024 / 4 * delay * 4 + 60):
                    conv, body = await one_run("measure")
                cpu = time.process_time() - cpu0
                stamps = dict(sent)
            await trio.sleep(0.2)  # the last frames of the run
            client_nursery.cancel_scope.cancel()
        stop.set()
    written = (folder / MEASURED_FILE).stat().st_size if (folder / MEASURED_FILE).exists() else 0
    shutil.rmtree(tmp, ignore_errors=True)
    return {"sent": stamps, "arrivals": clients.arrivals, "conv": conv, "body": body, "cpu": cpu, "written": written}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--kib", type=float, default=4.0, help="the size of the call's content")
    ap.add_argument("--delay-ms", type=float, default=5.0, help="between pieces of 4 characters")
    # Quick: the same 4 KiB call (the size a loop watch once cut short), pieces closer together.
    args = parse_args(ap, quick={"delay_ms": 2.0})
    exit_on_sigterm()

    rep = Report(
        "composing_latency", "tool-call piece leaving the engine -> the composing card's bytes at an SSE client"
    )
    watch = CpuWatch().start()
    out = trio.run(bench, args.clients, args.kib, args.delay_ms / 1000.0)
    foreign = watch.foreign_cores()
    sent = out["sent"]
    expected = set(sent)
    latencies: list[float] = []
    missing = 0
    card_ids: set[str] = set()
    final_states: set[str] = set()
    per_client: list[float] = []
    for rows in out["arrivals"]:
        got: set[int] = set()
        mine: list[float] = []
        for t, data in rows:
            d = json.loads(data)
            item = d.get("item") or {}
            if d.get("conversation") != out["conv"]:
                continue
            if item.get("state") != "composing":
                final_states.add(str(item.get("state")))
                continue
            card_ids.add(item["id"])
            n = item.get("bytes")
            if n in expected and n not in got:
                got.add(n)
                mine.append((t - sent[n]) * 1000)
        latencies += mine
        missing += len(expected - got)
        if mine:
            per_client.append(median(mine))
    cards = [i for i in out["body"]["items"] if i["kind"] == "tool"]
    call_bytes = max(expected) if expected else 0
    rep.figure("clients, call size, delay between pieces",
               f"{args.clients}, {call_bytes / 1024:.1f} KiB in {len(expected)} pieces, {args.delay_ms:g} ms")
    rep.figure("bytes updates measured", len(latencies), "", "{}")
    rep.figure("bytes updates missing (lagged or lost)", missing, "", "{}")
    rep.figure("latency p50", percentile(latencies, 50), "ms", "{:.2f}")
    rep.figure("latency p90", percentile(latencies, 90), "ms", "{:.2f}")
    rep.figure("latency p99", percentile(latencies, 99), "ms", "{:.2f}")
    rep.figure("latency max", max(latencies) if latencies else float("nan"), "ms", "{:.2f}")
    if len(per_client) > 1:
        rep.figure("per-client median: best / worst", f"{min(per_client):.2f} / {max(per_client):.2f}", "ms")
    rep.figure("process CPU per bytes update per client",
               out["cpu"] / max(1, len(expected) * args.clients) * 1e6, "us", "{:.0f}")
    rep.figure("other processes' CPU during the run", foreign, "cores", "{:.2f}")
    rep.check("every client got every bytes update", missing == 0, f"{missing} missing")
    rep.check("one card, composing then run (same id)",
              len(card_ids) == 1 and len(cards) == 1 and cards[0]["id"] in card_ids and cards[0]["state"] == "done",
              f"cards {card_ids}, final {[(c['id'], c['state']) for c in cards]}")
    content = len(arguments(MEASURED_FILE, args.kib)["content"])
    rep.check("the file was written whole", out["written"] == content, f"{out['written']} of {content} bytes on disk")
    rep.target("latency p50", percentile(latencies, 50), "<=", TARGET_P50_MS, "ms", "{:.2f}")
    rep.target("latency p99", percentile(latencies, 99), "<=", TARGET_P99_MS, "ms", "{:.2f}")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
