"""Run the benchmarks in ops/bench/, one after another, and print a summary table.

Each benchmark runs as its own process (`python ops/bench/<name>.py`), its output
shown as it goes; its last line, `BENCH-RESULT {json}`, gives the summary rows. Run
them one at a time: they measure wall time on a small machine. By default the ones
in ORDER run; --all adds any other script in the folder.

    .venv/bin/python ops/bench/run_all.py [--only NAME ...] [--skip NAME ...] [--all] [--quick] [--timeout S]

--quick passes --quick to each (a few repetitions on a small input; what CI runs, as
`run_all.py --all --quick`), with a timeout of QUICK_TIMEOUT_S each unless --timeout.

Exit status: 0 when every benchmark ran and passed its checks (whether or not its
targets were met); 1 when one crashed, timed out, printed no result, failed a check,
or lacked a peer (a program or package it needs: it says what to install); with
--strict also 1 when a target was missed.
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
RESULT_PREFIX = "BENCH-RESULT "  # as _common.py's (not imported: this runner needs nothing but the standard library)
MISSING_PREFIX = "MISSING PEER: "
MISSING_PEER_STATUS = 3
QUICK_TIMEOUT_S = 120.0  # a quick run takes seconds; one that takes minutes has gone wrong
FULL_TIMEOUT_S = 600.0
ORDER = [
    "startup", "store_save", "event_latency", "composing_latency", "concurrency", "prefix_reuse", "harness_overhead",
    "first_token", "search_bench", "history_scale", "status_latency",
]


def discover() -> tuple[list[str], list[str]]:
    """The benchmarks of ORDER that exist, and the other scripts in the folder."""
    found = sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_") and p.stem != "run_all")
    return [n for n in ORDER if n in found], [n for n in found if n not in ORDER]


def run_one(name: str, timeout: float, quick: bool) -> tuple[dict[str, Any] | None, str, float]:
    """Run one benchmark, echoing its output: its result (None if it printed none), why it
    failed to run ("" when it exited 0), and its wall time."""
    cmd = [sys.executable, str(HERE / f"{name}.py"), *(["--quick"] if quick else [])]
    print(f"\n$ {' '.join(cmd)}", flush=True)
    result: dict[str, Any] | None = None
    missing = ""
    lines: queue.Queue[str | None] = queue.Queue()
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)

    def pump() -> None:  # a thread, so a benchmark that hangs silently still times out
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    deadline = t0 + timeout
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
            if line.startswith(MISSING_PREFIX):
                missing = line[len(MISSING_PREFIX) :].strip()
            print(line, end="", flush=True)
        status = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.terminate()  # the benchmarks stop the daemons they started on SIGTERM
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return result, f"timed out after {timeout:g} s", time.monotonic() - t0
    took = time.monotonic() - t0
    if status == 0:
        return result, "", took
    if status == MISSING_PEER_STATUS and missing:
        return result, f"missing peer: {missing}", took
    if result is not None and result.get("ok") is False:
        return result, "a check failed", took
    return result, f"exited {status}" + ("" if result else " without a result"), took


def clip(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", default=None, metavar="NAME")
    ap.add_argument("--skip", nargs="+", default=[], metavar="NAME")
    ap.add_argument("--timeout", type=float, default=None,
                    help=f"seconds per benchmark (default {FULL_TIMEOUT_S:g}, with --quick {QUICK_TIMEOUT_S:g})")
    ap.add_argument("--quick", action="store_true", help="run each with --quick (a few repetitions; CI)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target was missed")
    ap.add_argument("--all", action="store_true", help="also run the other scripts in ops/bench/")
    args = ap.parse_args()
    timeout = args.timeout or (QUICK_TIMEOUT_S if args.quick else FULL_TIMEOUT_S)

    known, others = discover()
    pool = known + others if (args.all or args.only) else known
    unknown = sorted(set(args.only or []) - set(pool))
    if unknown:
        ap.error(f"no such benchmark in ops/bench/: {', '.join(unknown)}")
    names = [n for n in pool if (args.only is None or n in args.only) and n not in args.skip]
    if others and not (args.all or args.only):
        print(f"also in ops/bench/, not run (use --all): {', '.join(others)}")
    rows: list[tuple[str, str, str, str, str]] = []
    runs: list[tuple[str, float, str]] = []  # name, seconds, verdict
    failed: list[str] = []
    missed = judged = 0
    t0 = time.monotonic()
    for name in names:
        result, why, took = run_one(name, timeout, args.quick)
        runs.append((name, took, why or "ok"))
        if why:
            failed.append(f"{name}: {why}")
        if result is None:
            rows.append((name, "-", why or "(no result line)", "-", "FAILED" if why else "ran"))
            continue
        for c in result.get("checks", []):
            rows.append((name, c["label"], "yes" if c["passed"] else f"NO {c.get('detail', '')}".strip(), "check",
                         "pass" if c["passed"] else "FAILED"))
        for t in result.get("targets", []):
            value = f"{t['shown']} {t['unit']}".strip()
            target = f"{t['op']} {t['limit_shown']} {t['unit']}".strip()
            missed += 0 if t["met"] is not False else 1
            judged += 0 if t["met"] is not None else 1
            rows.append((name, t["label"], value, target, {True: "met", False: "MISSED", None: "not judged"}[t["met"]]))
        if not result.get("targets") and not result.get("checks"):
            rows.append((name, "-", "-", "-", "ran" if not why else "FAILED"))

    rows = [(r[0], clip(r[1]), clip(r[2]), r[3], r[4]) for r in rows]  # the details are in each one's output
    head = ("benchmark", "figure", "value", "target", "result")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    total = time.monotonic() - t0
    print(f"\n== summary ({total:.0f} s{', quick' if args.quick else ''})")
    print(line.format(*head))
    print(line.format(*("-" * w for w in widths)))
    for r in rows:
        print(line.format(*r))
    print("\n== wall time per benchmark")
    for name, took, verdict in runs:
        print(f"   {name:<20} {took:6.1f} s  {verdict}")
    print(f"   {'total':<20} {total:6.1f} s")
    print(f"\n{len(names) - len(failed)} of {len(names)} benchmarks ran and passed their checks; "
          f"{missed} target(s) missed", end="")
    print(f", {judged} not judged (see its output)." if judged else ".")
    if failed:
        print("FAILED:")
        for f in failed:
            print(f"  - {f}")
        return 1
    return 1 if (args.strict and missed) else 0


if __name__ == "__main__":
    sys.exit(main())
