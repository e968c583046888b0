"""Client tools overhead: what a client's tools cost a round when none of them is called.

A conversation keeps the tools its client brought (actors/record/client_tools.py): each
message offers them (actors/runs/agent/prepare.py), each round's request carries their
schemas, and each save of the conversation writes them with its head. The conversation
actors run in this process (a Hub over a real Store in a temporary folder, the scripted
backend with no delay between pieces, the `echo` test tool), so a round's time is the
loop's own work. Three kinds of conversation take turns, each message `--rounds` rounds
of one `echo` call, then an answer:

- none: no client tool;
- 32 tools: the most a conversation takes, none of them called;
- none again: its difference from `none` is the noise floor of the comparison.

Each repetition runs the three in a rotated order. Figures: the median wall and CPU
(process) time per turn of each, and the median of each repetition's differences from
`none`. Target: what client tools add to a round, at most 1 ms (CPU time: the machine
may be shared).

    .venv/bin/python ops/bench/client_tools_overhead.py [--rounds 20] [--reps 20] [--quick]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from _common import CpuWatch, Report, exit_on_sigterm, median, parse_args, scripted_hub  # noqa: E402

TARGET_MS = 1.0
KINDS = ("none", "32 tools", "none again")


def client_tools() -> tuple[Any, ...]:
    """32 tools of the shape an editor would give (a few arguments each)."""
    from actors.record.client_tools import MAX_CLIENT_TOOLS, checked

    params = {"type": "object", "properties": {
        "path": {"type": "string", "description": "A file of the editor's"},
        "line": {"type": "integer", "minimum": 1}, "column": {"type": "integer", "minimum": 1},
        "mode": {"enum": ["select", "highlight", "reveal"]}}, "required": ["path"]}
    return tuple(checked(f"editor_tool_{n}", f"Does editor thing {n} at a place in a file.", params, None)
                 for n in range(MAX_CLIENT_TOOLS))


async def one(hub: Any, backend: Any, ws: str, rounds: int, tools: tuple[Any, ...]) -> tuple[float, float, int]:
    """Wall and CPU seconds per turn of one message, and its turns."""
    # Each call its own: the same one again, with nothing changed, is refused.
    backend.push(*({"tool_calls": [{"name": "echo", "arguments": {"text": f"x{k}"}}]} for k in range(rounds)),
                 {"text": "Done."})
    conv = await hub.create(workspace=ws, mode="full", client_tools=tools)
    before = len(backend.turns)
    t0, c0 = time.perf_counter(), time.process_time()
    await conv.send_message("go")
    outcome = await conv.wait_run_end()
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    turns = len(backend.turns) - before
    if outcome != "done" or conv.info.end_reason != "answered":
        raise RuntimeError(f"the message ended {outcome} ({conv.info.end_reason})")
    if len(backend.turns[-1].tools) < len(tools):
        raise RuntimeError("the client's tools were not offered")
    return took / turns, cpu / turns, turns


async def main(args: argparse.Namespace) -> int:
    report = Report("client_tools_overhead", "what 32 client tools, none called, add to a scripted round")
    wall: dict[str, list[float]] = {k: [] for k in KINDS}
    cpu: dict[str, list[float]] = {k: [] for k in KINDS}
    tools = {"none": (), "32 tools": client_tools(), "none again": ()}
    turns = 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        backend, engine, _store, hub = scripted_hub(root)
        watch = CpuWatch()
        async with trio.open_nursery() as nursery:
            await nursery.start(engine.run)
            await nursery.start(hub.run)
            ws = (await hub.add_workspace(str(root / "ws"))).id
            for kind in KINDS:
                await one(hub, backend, ws, args.rounds, tools[kind])  # warm up
            watch.start()
            for rep in range(args.reps):
                for kind in KINDS[rep % len(KINDS):] + KINDS[:rep % len(KINDS)]:
                    per, per_cpu, turns = await one(hub, backend, ws, args.rounds, tools[kind])
                    wall[kind].append(per)
                    cpu[kind].append(per_cpu)
            other = watch.foreign_cores()
            hub.close()
            engine.close()

    def added(series: dict[str, list[float]], kind: str) -> float:
        return median([x - y for x, y in zip(series[kind], series["none"], strict=True)]) * 1000

    report.figure("turns of a message", turns)
    for kind in KINDS:
        report.figure(f"{kind}: median wall time per turn", median(wall[kind]) * 1000, "ms")
        report.figure(f"{kind}: median CPU time per turn", median(cpu[kind]) * 1000, "ms")
    report.figure("noise floor (CPU): none again - none", added(cpu, "none again"), "ms")
    report.figure("32 tools - none, wall time per turn", added(wall, "32 tools"), "ms")
    report.figure("other processes' CPU during the run", other, "cores")
    report.target("what 32 client tools, none called, add to a round (CPU)", added(cpu, "32 tools"), "<=",
                  TARGET_MS, "ms")
    return report.finish()


if __name__ == "__main__":
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--reps", type=int, default=20)
    sys.exit(trio.run(main, parse_args(parser, quick={"rounds": 5, "reps": 4})))
