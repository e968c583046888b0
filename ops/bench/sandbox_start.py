"""Sandbox start: what running a command in the sandbox (bubblewrap) adds to its start,
beside the same command unconfined.

exec_shell_command's own path, in this process: `ExecShellCommand.run` on `true` in a
`full` workspace, once with the daemon's sandbox (the argv built from the disk's hidden
paths each time, as every command does, then `bwrap ... -- /bin/sh -c true`) and once
without, alternating, `--reps` pairs after one warm-up each. Figure: the medians and
their difference. Target: the sandboxed start at most 15 ms later (median). Checks: the
sandboxed command could write in the workspace and not in the home folder, and could not
reach the network's loopback.

    .venv/bin/python ops/bench/sandbox_start.py [--reps 50] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from _common import CpuWatch, Report, exit_on_sigterm, median, missing_peer, parse_args, percentile  # noqa: E402

TARGET_MS = 15.0


async def main(args: argparse.Namespace) -> int:
    from actors.sandbox.policy import Sandbox
    from actors.tools.registry import ToolContext
    from actors.tools.shell import ExecShellCommand

    if shutil.which("bwrap") is None:
        missing_peer("bwrap", "apt-get install bubblewrap")
    report = Report("sandbox_start", "a command's start in the sandbox over unconfined")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        sandbox = await trio.to_thread.run_sync(lambda: Sandbox.start("auto", bwrap=None, hidden=[Path(tmp) / "data"]))
        if not sandbox.status.available:
            missing_peer("a working bwrap", f"{sandbox.status.why}")
        confined, bare = ExecShellCommand(sandbox=sandbox), ExecShellCommand()
        ctx = ToolContext("bench", ws, "full")
        home = Path.home()
        probe = await confined.run({"command": f"echo ok > made && touch {home}/.bmoe-bench-probe; "
                                    "python3 -c \"import socket; socket.create_connection(('127.0.0.1', 9), 1)\""},
                                   ctx)
        report.check("the sandboxed command wrote in the workspace", (ws / "made").exists())
        report.check("and not in the home folder", not (home / ".bmoe-bench-probe").exists())
        report.check("and reached no network", "Connection refused" in probe.result or "unreachable" in probe.result,
                     probe.result[-200:])
        args_true = {"command": "true"}
        await confined.run(args_true, ctx)
        await bare.run(args_true, ctx)
        with_sb: list[float] = []
        without: list[float] = []
        cpu = CpuWatch()
        cpu.start()
        for _ in range(args.reps):
            t0 = time.perf_counter()
            await bare.run(args_true, ctx)
            t1 = time.perf_counter()
            await confined.run(args_true, ctx)
            t2 = time.perf_counter()
            without.append((t1 - t0) * 1000)
            with_sb.append((t2 - t1) * 1000)
        other = cpu.foreign_cores()
    a, b = median(without), median(with_sb)
    report.figure("unconfined: median command (start to exit)", a, "ms")
    report.figure("sandboxed: median command (start to exit)", b, "ms")
    report.figure("sandboxed: p95", percentile(with_sb, 95), "ms")
    report.figure("pairs", args.reps)
    report.figure("other processes' CPU during the run", other, "cores")
    report.target("what the sandbox adds to a command's start (median)", b - a, "<=", TARGET_MS, "ms")
    return report.finish()


if __name__ == "__main__":
    exit_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=50)
    sys.exit(trio.run(main, parse_args(parser, quick={"reps": 10})))
