"""Hooks overhead: what the person's hooks cost a round when none is configured.

Every tool call of the built-in run fires pre_tool_use and post_tool_use, and every
run session_start and session_end (actors/runs/agent/run.py); with `Env(hooks=None)` the
run skips them, with the daemon's HookRunner (actors/policy/hooks.py) each is a dict lookup
and, at most once a second, a stat of `<data>/agent/hooks.json`.

The conversation actors run in this process (a Hub over a real Store in a temporary
folder, the scripted backend with no delay between pieces, the `echo` test tool), so a
round's time is the loop's own work. Four setups take turns, each message
`--rounds` rounds of one `echo` call, then an answer:

- none: `Env(hooks=None)`;
- no file: a HookRunner, no hooks.json;
- other tools: a HookRunner whose hooks.json has a pre_tool_use hook for MCP tools
  only (`mcp_*`), so each `echo` call goes through the matcher and runs no hook;
- none again: a second `Env(hooks=None)`, whose difference from the first is the noise
  floor of the comparison (each conversation's hub, engine and store are its own).

Each repetition runs the four in a rotated order. Figures: the median time per turn of
each, the median of each repetition's differences from `none`, and fire() alone with no
hook for the call (a tight loop: the cost the round figure cannot resolve). Target: what
hooks add to a round, under 1 ms.

    .venv/bin/python ops/bench/hooks_overhead.py [--rounds 20] [--reps 20] [--quick]
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
from _common import CpuWatch, Report, exit_on_sigterm, median, parse_args  # noqa: E402

TARGET_MS = 1.0
FIRE_LOOPS = 200_000


async def one(hub: Any, backend: Any, ws: str, rounds: int) -> tuple[float, int]:
    """Seconds per turn of one message, and its turns."""
    # Each call its own: the same one again, with nothing changed, is refused.
    backend.push(*({"tool_calls": [{"name": "echo", "arguments": {"text": f"x{k}"}}]} for k in range(rounds)),
                 {"text": "Done."})
    conv = await hub.create(workspace=ws, mode="full")
    before = len(backend.turns)
    t0 = time.perf_counter()
    await conv.send_message("go")
    outcome = await conv.wait_run_end()
    took = time.perf_counter() - t0
    turns = len(backend.turns) - before
    if outcome != "done" or conv.info.end_reason == "stuck":
        raise RuntimeError(f"the message ended {outcome} ({conv.info.end_reason})")
    return took / turns, turns


async def fire_cost(hooks: Any, loops: int) -> float:
    """Seconds per fire() of a pre_tool_use that has no hook."""
    from actors.policy.hooks_config import HookEvent

    event = HookEvent("pre_tool_use", "c1", None, tool="echo", args={"text": "x"})
    t0 = time.perf_counter()
    for _ in range(loops):
        await hooks.fire(event)
    return (time.perf_counter() - t0) / loops


async def main(args: argparse.Namespace) -> int:
    from actors.bus import EventBus
    from actors.conversations.hub import Hub
    from actors.model.backends.scripted import ScriptedBackend
    from actors.model.engine import Engine
    from actors.policy.hooks import HOOKS_FILE, HookRunner
    from actors.runs.env import Env
    from actors.tools.registry import Registry
    from actors.tools.testing import test_tools
    from bmoe_daemon.store import Store

    report = Report("hooks_overhead", "what hooks with no hook configured add to a scripted round")
    kinds = ("none", "no file", "other tools", "none again")
    per_turn: dict[str, list[float]] = {k: [] for k in kinds}
    turns = 0
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "ws").mkdir()
        cpu = CpuWatch()
        async with trio.open_nursery() as nursery:
            setups: dict[str, tuple[Any, Any, str, Engine]] = {}
            for kind in kinds:
                backend = ScriptedBackend(default={"text": "Done."})
                engine = Engine(backend)
                store = Store(root / kind.replace(" ", "-"))
                registry = Registry(test_tools())
                hooks = None
                if kind != "none":
                    hooks = HookRunner(store.agent_dir / HOOKS_FILE, home=root, tool_of=registry.get)
                    if kind == "other tools":
                        store.agent_dir.mkdir(parents=True, exist_ok=True)
                        mcp_only = {"pre_tool_use": [{"matcher": "mcp_*", "command": "true"}]}
                        (store.agent_dir / HOOKS_FILE).write_text(json.dumps(mcp_only))
                    await nursery.start(hooks.run)
                env = Env(engine=engine, bus=EventBus(), store=store, registry=registry,
                          resolve_workspace=lambda _: None, hooks=hooks)
                hub = Hub(env, store)
                await nursery.start(engine.run)
                await nursery.start(hub.run)
                ws = (await hub.add_workspace(str(root / "ws"))).id
                setups[kind] = (hub, backend, ws, engine)
                await one(hub, backend, ws, args.rounds)  # warm up
            cpu.start()
            for rep in range(args.reps):
                for kind in kinds[rep % len(kinds):] + kinds[:rep % len(kinds)]:
                    hub, backend, ws, _engine = setups[kind]
                    per, turns = await one(hub, backend, ws, args.rounds)
                    per_turn[kind].append(per)
            fire_none = await fire_cost(setups["no file"][0].env.hooks, args.fire_loops)
            fire_other = await fire_cost(setups["other tools"][0].env.hooks, args.fire_loops)
            other = cpu.foreign_cores()
            for hub, _backend, _ws, engine in setups.values():
                hub.close()
                engine.close()
                if hub.env.hooks is not None:
                    hub.env.hooks.close()
    a, b, c, d = (median(per_turn[k]) * 1000 for k in kinds)

    def added(kind: str) -> float:
        return median([x - y for x, y in zip(per_turn[kind], per_turn["none"], strict=True)]) * 1000

    report.figure("turns of a message", turns)
    report.figure("Env(hooks=None): median time per turn", a, "ms")
    report.figure("HookRunner, no hooks.json: median time per turn", b, "ms")
    report.figure("HookRunner, a hook for mcp_* only: per turn", c, "ms")
    report.figure("Env(hooks=None) again: median time per turn", d, "ms")
    report.figure("noise floor: none again - none", added("none again"), "ms")
    report.figure("fire() with no hooks.json", fire_none * 1e6, "µs")
    report.figure("fire() past a hook for mcp_* only", fire_other * 1e6, "µs")
    report.figure("other processes' CPU during the run", other, "cores")
    report.target("what hooks add to a round (no hooks.json)", added("no file"), "<=", TARGET_MS, "ms")
    report.target("what hooks add to a round (none for its tool)", added("other tools"), "<=", TARGET_MS, "ms")
    return report.finish()


if __name__ == "__main__":
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--fire-loops", type=int, default=FIRE_LOOPS, help="fire() calls timed in a tight loop")
    sys.exit(trio.run(main, parse_args(parser, quick={"rounds": 5, "reps": 4, "fire_loops": 20_000})))
