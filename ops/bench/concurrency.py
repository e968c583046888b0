"""Concurrency: 100 conversations each running a scripted 10-round run at once.

The daemon runs in this process (`bmoe_daemon.server.serve` with `scripted=`), driven
over loopback HTTP. Each conversation's message is "[conv-NNN] go"; its script round
(`when` = "[conv-NNN]", `repeat` 10) writes a short text and one `echo` call, ten
times, and then the default round answers "Done." So a run is 11 rounds and leaves 11
assistant items and 10 `echo` cards. All 100 messages are sent together.

Checks: every conversation ends `idle` with 11 assistant items and 10 finished echo
cards; the engine served the 1,100 turns in exactly the order they were queued (FIFO:
the Engine that `serve` builds is subclassed here to note each turn's owner as it is
queued, and `keep_order` notes the owners as turns start). Figures: wall time, turns
per second, the deepest the engine's mailbox got, and the process's peak RSS.

    .venv/bin/python ops/bench/concurrency.py [--conversations 100] [--rounds 10] [--delay-ms 1] [--quick]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CpuWatch, Report, exit_on_sigterm, parse_args, proc_status_kb  # noqa: E402

ENGINES: list[Any] = []


def install_probe() -> None:
    import bmoe_daemon.server as server
    from actors.model.engine import Engine
    from actors.model.turns import Emit, TurnInput, TurnResult

    class RecordingEngine(Engine):
        # Whatever `serve` passes on (the loader, the idle unload, ...) goes through
        # untouched, so a new keyword of Engine's cannot break this probe again.
        def __init__(self, backend: Any, *args: Any, **kwargs: Any) -> None:
            super().__init__(backend, *args, **kwargs)
            self.keep_order = True
            self.queued: list[str] = []
            ENGINES.append(self)

        async def turn(self, turn_input: TurnInput, emit: Emit, *, owner: str = "",
                       **kwargs: Any) -> TurnResult:
            # Engine.turn reaches its mailbox's send without a checkpoint in between,
            # and trio queues blocked senders first come, first served: this is the
            # order the turns join the line. Its other keywords (on_start, ...) go
            # through untouched, as __init__'s do.
            self.queued.append(owner)
            return await super().turn(turn_input, emit, owner=owner, **kwargs)

    server.Engine = RecordingEngine  # type: ignore[misc]


def make_script(folder: Path, n: int, rounds: int, delay: float) -> Path:
    script = {
        "token_delay": delay,
        "default": {"text": "Done."},
        # Each round's call its own (the same call again, with nothing changed, is refused).
        "rounds": [
            {
                "when": f"[conv-{i:03d}]",
                "text": "Calling echo.",
                "tool_calls": [{"name": "echo", "arguments": {"text": f"hello from {i}, call {k}"}}],
            }
            for i in range(n)
            for k in range(rounds)
        ],
    }
    path = folder / "script.json"
    path.write_text(json.dumps(script))
    return path


async def bench(n: int, rounds: int, delay: float, limit_s: float) -> dict[str, Any]:
    from bmoe_daemon.config import Config
    from bmoe_daemon.server import serve

    install_probe()
    tmp = Path(tempfile.mkdtemp(prefix="bench-concurrency-"))
    config = Config(port=0, data_dir=tmp / "data", scripted=make_script(tmp, n, rounds, delay))
    stop = trio.Event()
    out: dict[str, Any] = {"data": tmp / "data"}
    async with trio.open_nursery() as nursery:
        address = await nursery.start(lambda task_status: serve(config, stop_event=stop, task_status=task_status))
        engine = ENGINES[-1]
        limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
        async with httpx.AsyncClient(base_url=address, timeout=60, limits=limits) as http:
            ids: list[str] = [""] * n

            async def create(i: int) -> None:
                r = await http.post("/api/conversations", json={"title": f"conv {i}"})
                r.raise_for_status()
                ids[i] = r.json()["id"]

            async with trio.open_nursery() as inner:
                for i in range(n):
                    inner.start_soon(create, i)
            out["rss_before_kb"] = proc_status_kb("self", "VmRSS")
            t0 = time.perf_counter()
            accepted = [0]

            async def send(i: int) -> None:
                r = await http.post(f"/api/conversations/{ids[i]}/messages", json={"text": f"[conv-{i:03d}] go"})
                r.raise_for_status()
                accepted[0] += 1

            max_mailbox = 0
            with trio.fail_after(limit_s):
                async with trio.open_nursery() as inner:
                    for i in range(n):
                        inner.start_soon(send, i)
                mine = set(ids)
                while True:
                    max_mailbox = max(max_mailbox, engine.statistics().mailbox)
                    listing = (await http.get("/api/conversations")).json()
                    if all(c["state"] != "running" and c["state"] != "waiting" for c in listing if c["id"] in mine):
                        break
                    await trio.sleep(0.1)
            out["seconds"] = time.perf_counter() - t0
            out["accepted"] = accepted[0]
            out["max_mailbox"] = max_mailbox
            convs = []
            for cid in ids:
                convs.append((await http.get(f"/api/conversations/{cid}")).json())
            out["convs"] = convs
        out["queued"] = list(engine.queued)
        out["order"] = list(engine.order)
        out["counters"] = engine.counters()
        stop.set()
    out["peak_rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conversations", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=10, help="tool-call rounds per run (a final text round follows)")
    ap.add_argument("--delay-ms", type=float, default=1.0, help="delay between the scripted pieces")
    ap.add_argument("--timeout", type=float, default=240.0)
    args = parse_args(ap, quick={"conversations": 20, "rounds": 4, "timeout": 60.0})
    exit_on_sigterm()
    n, rounds = args.conversations, args.rounds
    from actors.record import journal

    rep = Report("concurrency", f"{n} conversations x scripted {rounds}-round runs at once")
    watch = CpuWatch().start()
    out = trio.run(bench, n, rounds, args.delay_ms / 1000.0, args.timeout)
    try:
        foreign = watch.foreign_cores()
        want_assistant = rounds + 1
        bad: list[str] = []
        for c in out["convs"]:
            items = c["items"]
            assistant = [i for i in items if i["kind"] == "assistant"]
            echoes = [i for i in items if i["kind"] == "tool" and i.get("tool") == "echo"]
            notices = [i for i in items if i["kind"] == "notice"]
            problems = []
            if c["state"] != "idle":
                problems.append(f"state {c['state']}")
            if len(assistant) != want_assistant:
                problems.append(f"{len(assistant)} assistant items")
            if len(echoes) != rounds or any(e.get("state") != "done" for e in echoes):
                problems.append(f"{len(echoes)} echo cards, states {sorted({e.get('state') for e in echoes})}")
            if notices:
                problems.append(f"notices {[x.get('text') for x in notices]}")
            if problems:
                bad.append(f"{c['id']}: {', '.join(problems)}")
        # The files on disk hold the same.
        on_disk_bad = 0
        for c in out["convs"]:
            path = out["data"] / "agent" / "conversations" / f"{c['id']}.json"
            data = journal.read(path.read_bytes()).document
            if data["state"] != "idle" or sum(1 for i in data["items"] if i["kind"] == "assistant") != want_assistant:
                on_disk_bad += 1
        queued, order = out["queued"], out["order"]
        fifo = queued == order
        first_diff = next((k for k, (a, b) in enumerate(zip(queued, order, strict=False)) if a != b), None)
        turns = len(order)
        rep.figure("messages accepted (202)", out["accepted"], "", "{}")
        rep.figure("turns queued / served", f"{len(queued)} / {turns}")
        rep.figure("engine counters", str(out["counters"]))
        rep.figure("wall time, all runs", out["seconds"], "s", "{:.2f}")
        rep.figure("turns per second", turns / out["seconds"], "turn/s", "{:.1f}")
        rep.figure("deepest engine mailbox seen", out["max_mailbox"], "", "{}")
        rep.figure("RSS before the runs", out["rss_before_kb"] / 1024, "MB", "{:.1f}")
        rep.figure("peak RSS of the process (ru_maxrss)", out["peak_rss_kb"] / 1024, "MB", "{:.1f}")
        rep.figure("conversations wrong on disk", on_disk_bad, "", "{}")
        rep.figure("other processes' CPU during the run", foreign, "cores", "{:.2f}")
        for line in bad[:5]:
            rep.note(line)
        rep.check(
            f"all {n} finished idle with {want_assistant} assistant items",
            not bad and on_disk_bad == 0,
            f"{len(bad)} wrong",
        )
        rep.check(
            "turns served in the order queued (FIFO)",
            fifo and turns == n * want_assistant,
            f"first difference at turn {first_diff}" if first_diff is not None else f"{turns} turns",
        )
        return rep.finish()
    finally:
        shutil.rmtree(out["data"].parent, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
