"""Calls in parallel: 4 independent `grep_search` calls over a large tree, made in one
round (the run carries reads out side by side) beside the same 4 made one a round.

The conversation actors run in this process (a Hub over a real Store in a temporary
folder, the scripted backend with no delay between pieces), with the real search tools
over a generated tree of `--files` text files (`--kib` KiB each). Each repetition runs
both forms with four fresh patterns, in alternating order; the page cache is warmed
first, so the figure is the searching, not the disk. Figure: the median time of each
form and their ratio. Target: parallel <= 0.4 of one after another.

The searches are CPU-bound: on a machine with fewer than 4 free cores the ratio cannot
reach 0.25, and with 2 it cannot go under 0.5. The bench prints the cores it had, and
judges the target against what they allow as well.

    .venv/bin/python ops/bench/parallel_calls.py [--files 1500] [--kib 48] [--reps 5] [--quick]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from _common import CpuWatch, Report, exit_on_sigterm, median, parse_args  # noqa: E402

TARGET = 0.4
CALLS = 4
WORDS = ("alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta", "lambda", "zeta")


def make_tree(root: Path, files: int, kib: int) -> None:
    rng = random.Random(7)
    for n in range(files):
        folder = root / f"pkg{n % 40:02d}"
        folder.mkdir(exist_ok=True)
        lines = []
        size = 0
        while size < kib * 1024:
            line = " ".join(rng.choice(WORDS) + str(rng.randrange(1000)) for _ in range(10))
            lines.append(line)
            size += len(line) + 1
        (folder / f"mod{n}.py").write_text("\n".join(lines) + "\n")


def patterns(rep: int) -> list[str]:
    # Each matches rarely (few results to send back), and each forces a scan of every line.
    return [rf"\b{WORDS[(rep + k) % len(WORDS)]}9{k}{rep % 10}\d\b" for k in range(CALLS)]


def grep(pattern: str) -> dict[str, Any]:
    return {"name": "grep_search", "arguments": {"pattern": pattern}}


async def one(hub: Any, backend: Any, ws: str, pats: list[str], together: bool) -> float:
    tag = f"{'together' if together else 'apart'}-{pats[0]}"
    if together:
        backend.push({"when": tag, "tool_calls": [grep(p) for p in pats]})
    else:
        backend.push(*[{"when": tag, "tool_calls": [grep(p)]} for p in pats])
    conv = await hub.create(workspace=ws, mode="read_only")
    t0 = time.perf_counter()
    await conv.send_message(f"{tag}: search")
    outcome = await conv.wait_run_end()
    took = time.perf_counter() - t0
    cards = [i for i in conv.items if i.kind == "tool"]
    if outcome != "done" or len(cards) != CALLS or any(c.state != "done" for c in cards):
        raise RuntimeError(f"{tag} ended {outcome}: {[(c.state, (c.result or '')[:80]) for c in cards]}")
    return took


async def main(args: argparse.Namespace) -> int:
    from actors.bus import EventBus
    from actors.conversations.hub import Hub
    from actors.model.backends.scripted import ScriptedBackend
    from actors.model.engine import Engine
    from actors.runs.env import Env
    from actors.tools.registry import Registry
    from actors.tools.search import search_tools
    from bmoe_daemon.store import Store

    report = Report("parallel_calls", f"{CALLS} grep_search calls in one round beside one a round")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tree = root / "ws"
        tree.mkdir()
        t0 = time.perf_counter()
        make_tree(tree, args.files, args.kib)
        built = time.perf_counter() - t0
        backend = ScriptedBackend(default={"text": "Done."})
        engine = Engine(backend)
        store = Store(root / "data")
        env = Env(engine=engine, bus=EventBus(), store=store, registry=Registry(search_tools()),
                  resolve_workspace=lambda _: tree)
        hub = Hub(env, store)
        together: list[float] = []
        apart: list[float] = []
        cpu = CpuWatch()
        async with trio.open_nursery() as nursery:
            await nursery.start(engine.run)
            await nursery.start(hub.run)
            ws = (await hub.add_workspace(str(tree))).id
            await one(hub, backend, ws, patterns(99), together=False)  # the page cache, warmed
            await one(hub, backend, ws, patterns(98), together=True)
            cpu.start()
            for rep in range(args.reps):
                first = rep % 2 == 0
                for form in (first, not first):
                    took = await one(hub, backend, ws, patterns(rep), together=form)
                    (together if form else apart).append(took)
            other = cpu.foreign_cores()
            hub.close()
            engine.close()
    a, b = median(apart), median(together)
    ratio = b / a
    report.figure("tree", f"{args.files} files, {args.files * args.kib / 1024:.0f} MiB (built in {built:.1f} s)")
    report.figure("cores this process may use", cores)
    report.figure("other processes' CPU during the run", other, "cores")
    report.figure("one a round: median of the 4 calls", a * 1000, "ms", "{:.0f}")
    report.figure("one round of 4: median", b * 1000, "ms", "{:.0f}")
    report.figure("ratio", ratio, "", "{:.2f}")
    # What the cores allow: CALLS searches over min(cores, CALLS) of them, at best.
    floor = 1 / min(cores, CALLS)
    report.figure("best ratio these cores allow", floor, "", "{:.2f}")
    report.target("4 calls in one round / one a round", ratio, "<=", TARGET, "", "{:.2f}")
    report.target("within 0.1 of what the cores allow", ratio - floor, "<=", 0.1, "", "{:.2f}")
    return report.finish()


if __name__ == "__main__":
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", type=int, default=1500)
    parser.add_argument("--kib", type=int, default=48)
    parser.add_argument("--reps", type=int, default=5)
    sys.exit(trio.run(main, parse_args(parser, quick={"files": 200, "kib": 16, "reps": 2})))
