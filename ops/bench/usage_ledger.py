"""The usage ledger (actors/model/usage.py): what it adds to each answer, and what its
sums cost as it grows.

Per answer: what the run pays, the line written (`append_nowait`, on the event loop;
the run does not wait for the disk), and what the ledger's own task pays after it (the
`sync`: `fdatasync` in a worker thread, off the loop), one answer after another,
`--answers` times into a ledger in a temporary folder (`--dir`: put it on the data
folder's disk). CPU time (process_time) per answer for each, and the sync's wall time
(the disk's). Then a ledger of `--rows` answers (spread over 60 days, 200
conversations, 3 routes): its read (as the daemon does once it serves), and GET
/api/usage's sums by provider and by day over all of it, and one conversation's.

    .venv/bin/python ops/bench/usage_ledger.py [--answers 2000] [--rows 100000] [--dir PATH] [--quick]

Targets: the run's CPU per answer (the write) <= 0.1 ms, and with the sync <= 0.5 ms,
well under the 1 ms asked; a sum over 100,000 answers <= 200 ms.
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from _common import Report, parse_args, percentile  # noqa: E402

from actors.model.usage import Entry, UsageLedger

WRITE_CPU_MS = 0.1
WITH_SYNC_CPU_MS = 0.5
SUM_MS = 200.0
DAY_S = 86_400.0


def entry(i: int, at: float) -> Entry:
    route = ("local", "provider", "provider")[i % 3]
    provider = ("local", "cloud", "other")[i % 3]
    return Entry(at, f"c{i % 200:04d}", f"t{i % 7}" if i % 4 == 0 else None, route,  # type: ignore[arg-type]
                 provider, "model-a" if i % 2 else "model-b", f"i{i}", 1200 + i % 500, 80 + i % 40, i % 300,
                 None if route == "local" or provider == "other" else 0.0031)


async def per_answer(folder: Path, answers: int) -> tuple[list[float], list[float], list[float], UsageLedger]:
    """CPU of each write, CPU and wall of each sync."""
    ledger = UsageLedger(folder, zone=datetime.UTC)
    ledger.load()
    write_cpu: list[float] = []
    sync_cpu: list[float] = []
    sync_wall: list[float] = []
    cpu, wall = time.process_time, time.perf_counter
    now = time.time()
    for i in range(answers):
        e = entry(i, now + i)
        c0 = cpu()
        ledger.append_nowait(e)
        c1 = cpu()
        w1 = wall()
        await ledger.sync()
        sync_wall.append(wall() - w1)
        sync_cpu.append(cpu() - c1)
        write_cpu.append(c1 - c0)
    return write_cpu, sync_cpu, sync_wall, ledger


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--answers", type=int, default=2000)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--dir", type=Path, default=None, help="where the ledgers are written (default: the temp folder)")
    args = parse_args(ap, quick={"answers": 200, "rows": 20_000})
    rep = Report("usage_ledger", f"the usage ledger: per answer ({args.answers}), and sums over {args.rows:,}")
    rep.note(f"load average {' '.join(open('/proc/loadavg').read().split()[:3])}" if os.path.exists("/proc/loadavg")
             else "load average not known")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        write_cpu, sync_cpu, sync_wall, ledger = trio.run(per_answer, root / "answers", args.answers)
        ledger.close()
        per = [w + s for w, s in zip(write_cpu, sync_cpu, strict=True)]
        rep.figure("write (on the loop): CPU per answer, mean", statistics.fmean(write_cpu) * 1e3, "ms", "{:.4f}")
        rep.figure("sync (worker thread): CPU per answer, mean", statistics.fmean(sync_cpu) * 1e3, "ms", "{:.4f}")
        rep.figure("write + sync: CPU per answer, mean", statistics.fmean(per) * 1e3, "ms", "{:.4f}")
        rep.figure("write + sync: CPU per answer, p95", percentile(per, 95) * 1e3, "ms", "{:.4f}")
        rep.figure("sync: wall per answer, median (the disk)", statistics.median(sync_wall) * 1e3, "ms", "{:.3f}")
        rep.figure("sync: wall per answer, p95", percentile(sync_wall, 95) * 1e3, "ms", "{:.3f}")
        again = UsageLedger(root / "answers", zone=datetime.UTC)
        again.load()
        lines = (root / "answers" / "usage.jsonl").read_bytes().count(b"\n")
        rep.check("every answer is one whole line, read back", lines == args.answers == again.entries
                  and again.skipped == 0, f"{lines} lines, {again.entries} read, {again.skipped} skipped")
        again.close()
        rep.target("the run's CPU per answer (write)", statistics.fmean(write_cpu) * 1e3, "<=", WRITE_CPU_MS, "ms",
                   "{:.4f}")
        rep.target("CPU per answer with its sync", statistics.fmean(per) * 1e3, "<=", WITH_SYNC_CPU_MS, "ms", "{:.4f}")

        # A ledger of many answers: its load, and the sums a page asks for.
        big = root / "big"
        big.mkdir()
        start = time.time() - 60 * DAY_S
        step = 60 * DAY_S / args.rows
        with open(big / "usage.jsonl", "wb") as fh:
            fh.writelines(entry(i, start + i * step).to_line() for i in range(args.rows))
        t0, c0 = time.perf_counter(), time.process_time()
        ledger = UsageLedger(big, zone=datetime.UTC)
        ledger.load()
        rep.figure(f"read of {args.rows:,} answers: wall", (time.perf_counter() - t0) * 1e3, "ms", "{:.0f}")
        rep.figure(f"read of {args.rows:,} answers: CPU", (time.process_time() - c0) * 1e3, "ms", "{:.0f}")
        rep.note("the daemon reads its ledger in a worker thread once it serves: the read delays no start, "
                 "only a sum or a conversation budget asked for before it ends")
        rep.check("the big ledger reads whole", ledger.entries == args.rows, f"{ledger.entries} read")
        worst = 0.0
        for label, by, since in (("by provider, all", "provider", None), ("by day, all", "day", None),
                                 ("by conversation, last week", "conversation", time.time() - 7 * DAY_S),
                                 ("one conversation's (the header)", "conversation", None)):
            one = "c0001" if "one" in label else None
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                report = ledger.report(by, since=since, conversation=one)  # type: ignore[arg-type]
                times.append(time.perf_counter() - t0)
            rep.figure(f"sum {label}", min(times) * 1e3, "ms", "{:.1f}")
            worst = max(worst, min(times))
            if by == "provider":
                total = report["local"]["answers"] + report["provider"]["answers"]
                rep.check("the sum counts every answer", total == args.rows, f"{total}")
        ledger.close()
        rep.target(f"slowest sum over {args.rows:,} answers", worst * 1e3, "<=", SUM_MS, "ms", "{:.1f}")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
