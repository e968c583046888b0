"""Rules and instructions overhead: what always-allow rules and a project's instruction
files add to a round, beside the same round without them.

The conversation actors run in this process (a Hub over a real Store in a temporary
folder, the scripted backend with no delay, the real file tools). Two conversations
alternate, each a message of `--rounds` rounds with one `write_file` call into `src/`:

- plain: a `full` conversation in a workspace with no instruction file and no rule;
- ruled: an `ask` conversation whose workspace has a rule for `src/` (so every write
  runs without a card, the rule matched and the path resolved each time), a root
  CLAUDE.md, .claude/CLAUDE.md and AGENTS.md, nested ones to index and deliver, and
  is a folder of a git repository (its root's AGENTS.md read too, its branch and
  `git status -sb` in the prompt: read at most every 30 s, actors/runs/agent/git_status.py).

Figure: the median time per turn of each and their difference. Target: under 1 ms a
round. Beside it, what one read of the git state costs when the 30 s cache has none.

    .venv/bin/python ops/bench/rules_overhead.py [--rounds 20] [--reps 15] [--quick]
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
from _common import CpuWatch, Report, exit_on_sigterm, median, parse_args  # noqa: E402

TARGET_MS = 1.0


async def one(hub: Any, backend: Any, ws: str, mode: str, rounds: int, tag: str) -> float:
    """Seconds per turn of one message."""
    # Each write its own: the same call again, with nothing changed, is refused.
    backend.push(*({"when": tag, "tool_calls": [{"name": "write_file", "arguments": {
        "path": f"src/{tag}.py", "content": f"x = {k}\n"}}]} for k in range(rounds)))
    conv = await hub.create(workspace=ws, mode=mode)
    before = len(backend.turns)
    t0 = time.perf_counter()
    await conv.send_message(f"{tag}: write")
    outcome = await conv.wait_run_end()
    took = time.perf_counter() - t0
    cards = [i for i in conv.items if i.kind == "tool"]
    if outcome != "done" or conv.info.end_reason == "stuck" or any(c.state != "done" for c in cards):
        raise RuntimeError(f"the {tag} message ended {outcome}: {[c.state for c in cards]}")
    return took / (len(backend.turns) - before)


async def main(args: argparse.Namespace) -> int:
    from actors.bus import EventBus
    from actors.conversations.hub import Hub
    from actors.model.backends.scripted import ScriptedBackend
    from actors.model.engine import Engine
    from actors.policy.rules import RuleBook
    from actors.runs.agent.git_status import read_block
    from actors.runs.env import Env
    from bmoe_daemon.config import Config
    from bmoe_daemon.server import build_registry
    from bmoe_daemon.store import Store

    report = Report("rules_overhead", "what always-allow rules and instruction files add to a round")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ruled = root / "repo" / "ruled"
        for folder in (root / "plain", ruled):
            (folder / "src").mkdir(parents=True)
        await trio.run_process(["git", "init", "-q", str(root / "repo")])
        (root / "repo" / "AGENTS.md").write_text("The repository's rules.\n")
        (ruled / ".claude").mkdir()
        (ruled / ".claude" / "CLAUDE.md").write_text("Claude notes.\n")
        (ruled / "CLAUDE.md").write_text("Be brief.\n")
        (ruled / "AGENTS.md").write_text("Use tabs.\n" * 50)
        (ruled / "src" / "AGENTS.md").write_text("src rules\n")
        for n in range(20):
            (ruled / "pkg" / f"m{n}").mkdir(parents=True)
            (ruled / "pkg" / f"m{n}" / "AGENTS.md").write_text(f"module {n}\n")
        backend = ScriptedBackend(default={"text": "Done."})
        engine = Engine(backend)
        store = Store(root / "data")
        rules = RuleBook(store.agent_dir / "permission-rules.json")
        env = Env(engine=engine, bus=EventBus(), store=store, registry=build_registry(Config(data_dir=root / "data")),
                  resolve_workspace=lambda _: None, rules=rules)
        hub = Hub(env, store)
        plain: list[float] = []
        with_rules: list[float] = []
        cpu = CpuWatch()
        async with trio.open_nursery() as nursery:
            await nursery.start(engine.run)
            await nursery.start(hub.run)
            ws_plain = (await hub.add_workspace(str(root / "plain"))).id
            ws_ruled = (await hub.add_workspace(str(ruled))).id
            await rules.add(ws_ruled, "path", "src/")
            await one(hub, backend, ws_plain, "full", args.rounds, "plain")
            await one(hub, backend, ws_ruled, "ask", args.rounds, "ruled")
            cpu.start()
            for _ in range(args.reps):
                plain.append(await one(hub, backend, ws_plain, "full", args.rounds, "plain"))
                with_rules.append(await one(hub, backend, ws_ruled, "ask", args.rounds, "ruled"))
            other = cpu.foreign_cores()
            git_reads = []
            for _ in range(5):
                t0 = time.perf_counter()
                await read_block(ruled)
                git_reads.append(time.perf_counter() - t0)
            hub.close()
            engine.close()
    a, b = median(plain) * 1000, median(with_rules) * 1000
    report.figure("plain: median time per turn", a, "ms")
    report.figure("rules and instructions: median time per turn", b, "ms")
    report.figure("other processes' CPU during the run", other, "cores")
    report.figure("one read of the git state (two git processes), once per 30 s", median(git_reads) * 1000, "ms")
    report.target("what rules and instructions add to a round", b - a, "<=", TARGET_MS, "ms")
    return report.finish()


if __name__ == "__main__":
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--reps", type=int, default=15)
    sys.exit(trio.run(main, parse_args(parser, quick={"rounds": 5, "reps": 3})))
