"""Memory: what `memory_search` costs over 10,000 memories, and what the memory tools add
to a round that does not use them.

1. One workspace with `--memories` memories (sentences drawn from a vocabulary of 2,000
   words, a seeded random; two tags each) in the SQLite store (actors/tools/memory_store.py),
   beside another workspace with a fifth as many (written through the store's own
   `write`, one transaction each); `--searches` searches of two or three words,
   each timed (wall; and this process's CPU over them all). Target: median ≤ 20 ms.
2. Two in-process hubs (the scripted backend with no delay, the test tools), one whose
   runs are offered the three memory tools (and whose compactions would look for
   memories), one without; a conversation in a workspace alternates between them, each
   message of `--rounds` rounds with one `echo` call, none a memory call. Figures: the
   median wall and CPU time per turn of each. Target: the CPU difference ≤ 1 ms a round
   (CPU: the machine is shared, and wall time under load measures the neighbours).

    .venv/bin/python ops/bench/memory_bench.py [--memories 10000] [--searches 200] [--rounds 20] [--reps 15] [--quick]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from _common import Report, exit_on_sigterm, median, parse_args, percentile  # noqa: E402

SEARCH_TARGET_MS = 20.0
ROUND_TARGET_MS = 1.0
VOCABULARY = 2000


def words(rng: random.Random) -> list[str]:
    syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vi", "so", "pe", "du", "ga", "zo"]
    out: set[str] = set()
    while len(out) < VOCABULARY:
        out.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(out)


async def search_figures(report: Report, root: Path, args: argparse.Namespace) -> None:
    from actors.tools.memory_store import Memories

    rng = random.Random(32)
    vocab = words(rng)
    store = Memories(root / "memory.sqlite")
    try:
        ws_a, ws_b = str(root / "workspace-a"), str(root / "workspace-b")  # the store's keys: folders' paths
        for workspace, n in ((ws_a, args.memories), (ws_b, args.memories // 5)):
            for _ in range(n):
                text = " ".join(rng.choice(vocab) for _ in range(rng.randint(8, 30))) + "."
                await store.write(workspace, text, rng.sample(vocab[:50], 2))
        assert await store.count(ws_a) == args.memories
        walls: list[float] = []
        found = 0
        cpu0 = time.process_time()  # every thread's: the search runs in a worker thread
        for _ in range(args.searches):
            query = " ".join(rng.choice(vocab) for _ in range(rng.randint(2, 3)))
            t0 = time.perf_counter()
            hits = await store.search(ws_a, query)
            walls.append(time.perf_counter() - t0)
            found += bool(hits)
        cpu = (time.process_time() - cpu0) / args.searches
    finally:
        store.close()
    report.figure("memories in the workspace searched (a fifth as many in another)", args.memories, "")
    report.figure("searches that found something", found / args.searches * 100, "%")
    report.figure("memory_search: p95 time", percentile(walls, 95) * 1000, "ms")
    report.figure("memory_search: CPU time each (this process, every thread)", cpu * 1000, "ms")
    report.target("memory_search over the workspace's memories: median time", median(walls) * 1000, "<=",
                  SEARCH_TARGET_MS, "ms")


async def one(hub: Any, backend: Any, ws: str, rounds: int, tag: str) -> tuple[float, float]:
    """Seconds per turn of one message of `rounds` echo calls: wall, and this process's CPU."""
    backend.push(*({"when": tag, "tool_calls": [{"name": "echo", "arguments": {"text": f"{tag} {k}"}}]}
                   for k in range(rounds)))
    conv = await hub.create(workspace=ws, mode="full")
    before = len(backend.turns)
    t0, c0 = time.perf_counter(), time.process_time()
    await conv.send_message(f"{tag}: echo")
    outcome = await conv.wait_run_end()
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    cards = [i for i in conv.items if i.kind == "tool"]
    if outcome != "done" or any(c.state != "done" for c in cards) or len(cards) != rounds:
        raise RuntimeError(f"the {tag} message ended {outcome}: {[c.state for c in cards]}")
    turns = len(backend.turns) - before
    return took / turns, cpu / turns


async def round_figures(report: Report, root: Path, args: argparse.Namespace) -> None:
    from actors.bus import EventBus
    from actors.conversations.hub import Hub
    from actors.model.backends.scripted import ScriptedBackend
    from actors.model.engine import Engine
    from actors.runs.env import Env
    from actors.tools.memory import MemoryBook, memory_tools
    from actors.tools.memory_store import Memories
    from actors.tools.registry import Registry
    from actors.tools.testing import test_tools
    from bmoe_daemon.store import Store

    book = MemoryBook(Memories(root / "rounds-memory.sqlite"))
    times: dict[str, list[float]] = {"plain": [], "memory": []}
    cpus: dict[str, list[float]] = {"plain": [], "memory": []}
    try:
        async with trio.open_nursery() as nursery:
            runs = {}
            for name in times:
                folder = root / f"ws-{name}"
                folder.mkdir()
                backend = ScriptedBackend(default={"text": "Done."})
                engine = Engine(backend)
                store = Store(root / f"data-{name}")
                tools = test_tools() + (memory_tools(book) if name == "memory" else [])
                env = Env(engine=engine, bus=EventBus(), store=store, registry=Registry(tools),
                          resolve_workspace=lambda _: None, memory=book if name == "memory" else None)
                hub = Hub(env, store)
                await nursery.start(engine.run)
                await nursery.start(hub.run)
                ws = (await hub.add_workspace(str(folder))).id
                runs[name] = (hub, backend, engine, ws)
                await one(hub, backend, ws, args.rounds, name)  # warm
            offered = {s.name for s in runs["memory"][1].turns[-1].tools}
            report.check("the memory hub's rounds are offered the memory tools", "memory_search" in offered)
            for _ in range(args.reps):
                for name, (hub, backend, _engine, ws) in runs.items():
                    wall, cpu = await one(hub, backend, ws, args.rounds, name)
                    times[name].append(wall)
                    cpus[name].append(cpu)
            for hub, _backend, engine, _ws in runs.values():
                hub.close()
                engine.close()
    finally:
        book.store.close()
    a, b = median(times["plain"]) * 1000, median(times["memory"]) * 1000
    ca, cb = median(cpus["plain"]) * 1000, median(cpus["memory"]) * 1000
    report.figure("without memory: median time per turn", a, "ms")
    report.figure("memory offered, not used: median time per turn", b, "ms")
    report.figure("wall-time difference (load-sensitive)", b - a, "ms")
    report.figure("without memory: median CPU per turn", ca, "ms")
    report.figure("memory offered, not used: median CPU per turn", cb, "ms")
    report.target("what memory adds to a round that does not use it (CPU)", cb - ca, "<=", ROUND_TARGET_MS, "ms")


async def main(args: argparse.Namespace) -> int:
    report = Report("memory_bench", "memory_search over 10,000 memories, and what memory adds to a round")
    with tempfile.TemporaryDirectory() as tmp:
        await search_figures(report, Path(tmp), args)
        await round_figures(report, Path(tmp), args)
    return report.finish()


if __name__ == "__main__":
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--reps", type=int, default=15)
    sys.exit(trio.run(main, parse_args(parser, quick={"searches": 40, "rounds": 5, "reps": 3})))
