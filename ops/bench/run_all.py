"""Run the benchmarks in ops/bench/, one after another, and print a summary table.

Each benchmark runs as its own process (`python ops/bench/<name>.py`), its output
shown as it goes; its last line, `BENCH-RESULT {json}`, gives the summary rows. Run
them one at a time: they measure wall time on a small machine. By default the ones
in ORDER run; --all adds any other script in the folder (a script that prints no
result line is shown as having run).

    .venv/bin/python ops/bench/run_all.py [--only NAME ...] [--skip NAME ...] [--all] [--timeout 600]

Exit status: 0 when every benchmark ran (whether or not its targets were met),
1 when one failed to run, and with --strict also 1 when a target was missed.
"""

from __future__ import annotations

import argparse
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RESULT_PREFIX = "BENCH-RESULT "
ORDER = [
    "startup", "store_save", "event_latency", "composing_latency", "concurrency", "prefix_reuse", "harness_overhead",
    "first_token", "search_bench", "history_scale",
]


def discover() -> tuple[list[str], list[str]]:
    """The benchmarks of ORDER that exist, and the other scripts in the folder."""
    found = sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_") and p.stem != "run_all")
    return [n for n in ORDER if n in found], [n for n in found if n not in ORDER]


def run_one(name: str, timeout: float) -> tuple[dict[str, Any] | None, str]:
    """Run one benchmark, echoing its output; its result, or None and why not ("" when
    it ran but printed no result line)."""
    cmd = [sys.executable, str(HERE / f"{name}.py")]
    print(f"\n$ {' '.join(cmd)}", flush=True)
    result: dict[str, Any] | None = None
    lines: queue.Queue[str | None] = queue.Queue()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)

    def pump() -> None:  # a thread, so a benchmark that hangs silently still times out
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(cmd, timeout)
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                break
            if line.startswith(RESULT_PREFIX):
                try:
                    result = json.loads(line[len(RESULT_PREFIX) :])
                except ValueError:
                    pass
                continue
            print(line, end="", flush=True)
        status = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.terminate()  # the benchmarks stop the daemons they started on SIGTERM
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return None, f"timed out after {timeout:g} s"
    if result is None:
        return None, "" if status == 0 else f"exited {status} without a result"
    return result, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", default=None, metavar="NAME")
    ap.add_argument("--skip", nargs="+", default=[], metavar="NAME")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per benchmark")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target was missed")
    ap.add_argument("--all", action="store_true", help="also run the other scripts in ops/bench/")
    args = ap.parse_args()

    known, others = discover()
    pool = known + others if (args.all or args.only) else known
    names = [n for n in pool if (args.only is None or n in args.only) and n not in args.skip]
    if others and not (args.all or args.only):
        print(f"also in ops/bench/, not run (use --all): {', '.join(others)}")
    rows: list[tuple[str, str, str, str, str]] = []
    failed = missed = judged = 0
    t0 = time.monotonic()
    for name in names:
        result, why = run_one(name, args.timeout)
        if result is None and not why:
            rows.append((name, "-", "(no result line)", "-", "ran"))
            continue
        if result is None:
            failed += 1
            rows.append((name, "-", why, "-", "FAILED"))
            continue
        for t in result["targets"]:
            if t["op"] == "==":
                value, target = t["shown"], "yes"
            else:
                value = f"{t['shown']} {t['unit']}".strip()
                target = f"{t['op']} {t['limit_shown']} {t['unit']}".strip()
            missed += 0 if t["met"] is not False else 1
            judged += 0 if t["met"] is not None else 1
            rows.append((name, t["label"], value, target, {True: "met", False: "MISSED", None: "not judged"}[t["met"]]))
        if not result["targets"]:
            rows.append((name, "-", "-", "-", "ran"))

    head = ("benchmark", "figure", "value", "target", "result")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(f"\n== summary ({time.monotonic() - t0:.0f} s)")
    print(line.format(*head))
    print(line.format(*("-" * w for w in widths)))
    for r in rows:
        print(line.format(*r))
    print(f"\n{len(names) - failed} of {len(names)} benchmarks ran; {missed} target(s) missed", end="")
    print(f", {judged} not judged (see its output)." if judged else ".")
    if failed:
        return 1
    return 1 if (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
