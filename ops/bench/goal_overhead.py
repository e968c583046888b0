"""Goal overhead: what a goal, its todo list and its verifier turn add to each round.

The conversation actors run in this process (a Hub over a real Store in a temporary
folder, the scripted backend with no delay between pieces, the `echo` test tool), so a
round's time is the loop's own work: building the history, the turn on the engine's
line, the card, the saves. Two messages alternate, each of `--rounds` rounds with one
`echo` call:

- plain: the calls, then an answer;
- goal: the same message with a goal (verify on): a todo_write first, the calls, the
  todo list completed, update_goal, and the verifier turn that finds it complete.

Figure: the median time per turn of each, and their difference: what the goal's
features add to a round. Target: under 2 ms a round.

    .venv/bin/python ops/bench/goal_overhead.py [--rounds 20] [--reps 15] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from _common import CpuWatch, Report, exit_on_sigterm, median, parse_args, scripted_hub  # noqa: E402

TARGET_MS = 2.0


def script(rounds: int) -> list[dict[str, Any]]:
    def echo(k: int) -> dict[str, Any]:  # each call its own: the same one again is refused
        return {"name": "echo", "arguments": {"text": f"x{k}"}}

    todos = [{"content": f"step {n}", "status": "pending"} for n in range(3)]
    done = [{"content": f"step {n}", "status": "completed"} for n in range(3)]
    out: list[dict[str, Any]] = [{"when": "plain", "tool_calls": [echo(k)]} for k in range(rounds)]
    out.append({"when": "goal", "tool_calls": [{"name": "todo_write", "arguments": {"todos": todos}}]})
    out.extend({"when": "goal", "tool_calls": [echo(k)]} for k in range(rounds - 2))
    out.append({"when": "goal", "tool_calls": [{"name": "todo_write", "arguments": {"todos": done}}]})
    out.append({"when": "goal", "tool_calls": [{"name": "update_goal", "arguments": {"completed": True}}]})
    out.append({"when": "Goal: ", "text": json.dumps({"complete": True, "gaps": []})})
    return out


async def one(hub: Any, backend: Any, ws: str, rounds: int, goal: bool) -> tuple[float, int]:
    """Seconds per turn of one message, and the turns it took."""
    backend.push(*[r for r in script(rounds) if r["when"] == ("goal" if goal else "plain")
                   or (goal and r["when"] == "Goal: ")])
    conv = await hub.create(workspace=ws, mode="full")
    before = len(backend.turns)
    t0 = time.perf_counter()
    if goal:
        await conv.send_message("goal: do it", goal="all steps done")
    else:
        await conv.send_message("plain: do it")
    outcome = await conv.wait_run_end()
    took = time.perf_counter() - t0
    turns = len(backend.turns) - before
    if outcome != "done" or conv.info.end_reason == "stuck" or (goal and conv.info.end_reason != "goal_complete"):
        raise RuntimeError(f"the {'goal' if goal else 'plain'} message ended {outcome} ({conv.info.end_reason})")
    return took / turns, turns


async def main(args: argparse.Namespace) -> int:

    report = Report("goal_overhead", "what a goal, its todos and its verifier turn add to a scripted round")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        backend, engine, _store, hub = scripted_hub(root)
        plain: list[float] = []
        with_goal: list[float] = []
        turns = {"plain": 0, "goal": 0}
        cpu = CpuWatch()
        async with trio.open_nursery() as nursery:
            await nursery.start(engine.run)
            await nursery.start(hub.run)
            ws = (await hub.add_workspace(str(root / "ws"))).id
            await one(hub, backend, ws, args.rounds, goal=False)  # warm up
            await one(hub, backend, ws, args.rounds, goal=True)
            cpu.start()
            for _ in range(args.reps):
                per, turns["plain"] = await one(hub, backend, ws, args.rounds, goal=False)
                plain.append(per)
                per, turns["goal"] = await one(hub, backend, ws, args.rounds, goal=True)
                with_goal.append(per)
            other = cpu.foreign_cores()
            hub.close()
            engine.close()
    a, b = median(plain) * 1000, median(with_goal) * 1000
    report.figure("turns of a plain message", turns["plain"])
    report.figure("turns of a message with a goal (+ the check)", turns["goal"])
    report.figure("plain: median time per turn", a, "ms")
    report.figure("goal: median time per turn", b, "ms")
    report.figure("other processes' CPU during the run", other, "cores")
    report.target("what a goal adds to a round", b - a, "<=", TARGET_MS, "ms")
    return report.finish()


if __name__ == "__main__":
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--reps", type=int, default=15)
    sys.exit(trio.run(main, parse_args(parser, quick={"rounds": 5, "reps": 3})))
