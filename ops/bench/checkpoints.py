"""Checkpoints (issue 29): one taken on a workspace of 20,000 files where three changed;
the disk a hundred runs take in the store; a rewind of a run that changed 50 files.

The workspace is generated in a temporary folder (200 folders of 100 small text files);
the store is actors/checkpoints/store.py's, on the same disk. The first checkpoint
hashes every file (timed apart); each repetition then changes three files and takes
one, the figure being the median and the best (the machine's other load shows in the
median). A hundred runs each change three files (one checkpoint before and one after
each), and the store's size is read from git. Last, a run changes 50 files, and the
rewind of it (a snapshot, the changed-since check, 50 files put back, a snapshot) is
timed and checked byte for byte (the median of --rewinds such runs).

    .venv/bin/python ops/bench/checkpoints.py [--files 20000] [--reps 15] [--runs 100] [--rewinds 7] [--quick]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import trio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))
from _common import Report, parse_args  # noqa: E402

from actors.checkpoints.store import Checkpoints, store_size  # noqa: E402

TARGET_MS = 100.0
TARGET_RUNS_MIB = 50.0  # a hundred runs of three small files each: next to nothing
TARGET_REWIND_MS = 500.0
REWOUND_FILES = 50


def make_tree(root: Path, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        d = root / f"d{i // 100:03d}" / f"s{(i // 10) % 10}"
        d.mkdir(parents=True, exist_ok=True)
        p = d / f"f{i}.txt"
        p.write_text(f"line {i}\n" * 20)
        paths.append(p)
    return paths


async def bench(args: argparse.Namespace, rep: Report, tmp: Path) -> None:
    ws = tmp / "ws"
    files = make_tree(ws, args.files)
    cp = Checkpoints(tmp / "store")
    t0 = time.perf_counter()
    await cp.before_run("w", ws, "c", "first")
    rep.figure("first checkpoint (hashes every file)", (time.perf_counter() - t0) * 1000, "ms", "{:.0f}")
    times = []
    for r in range(args.reps):
        for k in range(3):
            files[(r * 7 + k * 1013) % len(files)].write_text(f"changed {r} {k}\n")
        t0 = time.perf_counter()
        await cp.after_run("w", ws, "c", f"rep{r}")
        times.append((time.perf_counter() - t0) * 1000)
    rep.figure("files in the workspace", args.files)
    rep.figure("checkpoint, three files changed (median)", statistics.median(times), "ms", "{:.1f}")
    rep.figure("checkpoint, three files changed (best)", min(times), "ms", "{:.1f}")
    rep.target("checkpoint, three files changed (best)", min(times), "<=", TARGET_MS, "ms", "{:.1f}")
    git = cp._ws("w", ws).git  # noqa: SLF001  (the bench reads the store's size)
    size0 = await store_size(git)
    for n in range(args.runs):
        item = f"run{n}"
        await cp.before_run("w", ws, "c", item)
        for k in range(3):
            files[(n * 31 + k * 977) % len(files)].write_text(f"run {n} {k}\n")
        await cp.after_run("w", ws, "c", item)
    grown = (await store_size(git)) - size0
    rep.figure(f"store growth over {args.runs} runs (3 files each)", grown / 2**20, "MiB", "{:.2f}")
    rep.figure("store size now (loose objects, not yet packed)", (await store_size(git)) / 2**20, "MiB", "{:.1f}")
    rep.target(f"disk for {args.runs} runs", grown / 2**20, "<=", TARGET_RUNS_MIB, "MiB", "{:.2f}")
    chosen = files[: REWOUND_FILES * 3 : 3]
    before = {p: p.read_bytes() for p in chosen}
    rewinds, whole, named = [], True, True
    for n in range(args.rewinds):
        item = f"fifty{n}"
        await cp.before_run("w", ws, "c", item)
        for p in chosen:
            p.write_text(f"rewritten by run {n}\n")
        await cp.after_run("w", ws, "c", item)
        t0 = time.perf_counter()
        result = await cp.rewind("w", ws, "c", item, [item])
        rewinds.append((time.perf_counter() - t0) * 1000)
        whole = whole and all(p.read_bytes() == b for p, b in before.items())
        named = named and len(result.restored) == REWOUND_FILES
    rewind_ms = statistics.median(rewinds)
    rep.figure(f"rewind of a run that changed {REWOUND_FILES} files (median of {len(rewinds)})", rewind_ms, "ms",
               "{:.0f}")
    rep.figure(f"rewind of a run that changed {REWOUND_FILES} files (best)", min(rewinds), "ms", "{:.0f}")
    rep.check("each rewind put every file back byte for byte", whole)
    rep.check("each rewind named the 50 files", named)
    rep.target(f"rewind of {REWOUND_FILES} files (median)", rewind_ms, "<=", TARGET_REWIND_MS, "ms", "{:.0f}")

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=20_000)
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--rewinds", type=int, default=7)
    args = parse_args(ap, {"files": 2000, "reps": 5, "runs": 10, "rewinds": 3})
    rep = Report("checkpoints", "a checkpoint with three files changed, a hundred runs' disk, a rewind of 50 files")
    tmp = Path(tempfile.mkdtemp(prefix="bmoe-bench-checkpoints-"))
    try:
        trio.run(bench, args, rep, tmp)
        return rep.finish()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
