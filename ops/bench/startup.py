"""Startup: `serve --no-model` as a subprocess, from process start to `/health`
answering 200, the time its imports take, and the idle RSS once it serves.

The daemon is run as ops/install.sh leaves it: a copy of this tree's packages (and the
catalog and skills beside them) whose modules are compiled to bytecode first, as the
install does (`python -m compileall`); the targets are judged on that. The same copy
before it is compiled (its bytecode neither there nor written: the first start of an
install that did not compile, and every start of one where PYTHONDONTWRITEBYTECODE is
set) is measured beside it, and this checkout as it is.

Each repetition starts `python -m bmoe_daemon serve --port 0 --no-model` with a fresh
data folder, reads the port from its `listening on` line, and polls `GET /health`
(every 10 ms) until it answers 200; the clock starts just before the process is
spawned. Then it reads VmRSS from /proc/<pid>/status (after --settle s) and stops the
daemon with SIGTERM. The imports: a process that imports what `python -m bmoe_daemon
serve` imports before it serves (bmoe_daemon.cli, .options, .server), as its main()
does (the collector off), timed inside it (wall and CPU), so the interpreter's own
start is not counted; the target is on their CPU time (the cost; the wall clock is
shown beside it), split into the frameworks the design fixes (imported first) and the
daemon's own modules on top: the first is this machine's floor. Medians.

    .venv/bin/python ops/bench/startup.py [--reps 5] [--quick]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    REPO,
    CpuWatch,
    DaemonProcess,
    Report,
    exit_on_sigterm,
    median,
    parse_args,
    proc_cpu_seconds,
    proc_status_kb,
    split_address,
)

TARGET_READY_S = 0.5
TARGET_IMPORTS_S = 0.25
TARGET_RSS_MB = 90.0
POLL_S = 0.01
SETTLE_S = 1.0
# What the copy holds: the packages, and the data they find beside them.
TREE_PARTS = ("bmoe_daemon", "actors", "catalog", "skills")
PACKAGES = ("bmoe_daemon", "actors")

# Runs `python -m bmoe_daemon ARGS...` from the tree named first (argv[1]).
FROM_TREE = """
import runpy, sys
sys.path.insert(0, sys.argv[1])
sys.argv = [sys.argv[0], *sys.argv[2:]]
runpy.run_module("bmoe_daemon", run_name="__main__", alter_sys=True)
"""

# Imports what serve imports before it serves, from the tree named first, as cli.main
# does (the collector off): first the frameworks the design fixes (FRAMEWORKS, which the
# daemon imports anyway, so the sum is the same), then the daemon's modules on top; prints
# the wall and CPU seconds of the whole and the CPU of each part, the RSS (MB), how many
# of the daemon's own modules were loaded and where bmoe_daemon came from, as JSON. The
# split says which share a change to the daemon can move: the frameworks' cost is this
# machine's floor.
FRAMEWORKS = ("trio", "attrs", "cattrs", "hypercorn.config", "hypercorn.trio.run", "quart_trio", "quart")
IMPORTS = """
import gc, importlib, sys, time
sys.path.insert(0, sys.argv[1])
t0, c0 = time.perf_counter(), time.process_time()
gc.disable()
for name in sys.argv[2:]:
    importlib.import_module(name)
c1 = time.process_time()
import bmoe_daemon.cli, bmoe_daemon.options, bmoe_daemon.server
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
import json
rss = next(int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith("VmRSS:"))
own = sum(1 for m in sys.modules if m.split(".")[0] in ("bmoe_daemon", "actors"))
print(json.dumps({"wall": wall, "cpu": cpu, "frameworks_cpu": c1 - c0, "rss": rss, "own_modules": own,
                  "file": bmoe_daemon.__file__}))
"""


def health_ok(host: str, port: int) -> bool:
    conn = http.client.HTTPConnection(host, port, timeout=2)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def one_start(folder: Path, tree: Path, env: dict[str, str], settle: float) -> dict[str, float]:
    daemon = DaemonProcess(
        [str(tree), "serve", "--port", "0", "--no-model", "--data-dir", str(folder / "data")],
        code=FROM_TREE,
        log_path=folder / "daemon.log",
        env=env,
    )
    try:
        address = daemon.start(timeout=30)
        listening = time.perf_counter() - daemon.started_at
        host, port = split_address(address)
        deadline = time.perf_counter() + 30
        while not health_ok(host, port):
            if time.perf_counter() > deadline:
                raise TimeoutError("/health never answered 200")
            time.sleep(POLL_S)
        ready = time.perf_counter() - daemon.started_at
        ready_cpu = proc_cpu_seconds(daemon.pid)
        time.sleep(settle)
        rss = proc_status_kb(daemon.pid, "VmRSS") / 1024
        hwm = proc_status_kb(daemon.pid, "VmHWM") / 1024
    finally:
        status = daemon.stop()
    return {"ready": ready, "ready_cpu": ready_cpu, "listening": listening, "rss": rss, "hwm": hwm,
            "exit": float(status or 0)}


def starts(root: Path, name: str, n: int, tree: Path, env: dict[str, str], settle: float) -> list[dict[str, float]]:
    """`n` starts from `tree`, each with a data folder of its own under `root`."""
    out = []
    for i in range(n):
        folder = root / f"{name}{i}"
        folder.mkdir()
        r = one_start(folder, tree, env, settle)
        out.append(r)
        print(f"   {name} {i + 1}: ready {r['ready'] * 1000:6.0f} ms (its CPU {r['ready_cpu'] * 1000:4.0f} ms, "
              f"listening line {r['listening'] * 1000:4.0f} ms)  idle RSS {r['rss']:5.1f} MB  "
              f"exit {int(r['exit'])}  load {os.getloadavg()[0]:.2f}", flush=True)
    return out


def imports(tree: Path, env: dict[str, str]) -> dict[str, float | str]:
    out = subprocess.run([sys.executable, "-c", IMPORTS, str(tree), *FRAMEWORKS], capture_output=True, text=True,
                         check=True, env=env, cwd=tree)
    return dict(json.loads(out.stdout))


def python_start() -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - t0


def copy_tree(dest: Path) -> Path:
    """This tree's packages and their data, without any bytecode."""
    for part in TREE_PARTS:
        shutil.copytree(REPO / part, dest / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


def compiled(tree: Path, packages: tuple[str, ...] = PACKAGES) -> tuple[int, int]:
    """How many of the packages' modules have bytecode (for this Python), of how many."""
    import importlib.util

    sources = [p for package in packages for p in (tree / package).rglob("*.py")]
    have = sum(1 for p in sources if Path(importlib.util.cache_from_source(str(p))).exists())
    return have, len(sources)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--extra-reps", type=int, default=3, help="repetitions of the figures beside the targets")
    ap.add_argument("--settle", type=float, default=SETTLE_S, help="seconds from ready to the RSS reading")
    args = parse_args(ap, quick={"reps": 3, "extra_reps": 2, "settle": 0.5})
    exit_on_sigterm()

    rep = Report("startup", "serve --no-model: process start -> /health 200, its imports, idle RSS")
    watch = CpuWatch().start()
    plain_env = dict(os.environ)
    cold_env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")  # the cold copy stays cold
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        root = Path(tmp)
        tree = copy_tree(root / "tree")
        # Cold first (nothing compiled, nothing written), then compiled as the install does.
        cold = starts(root, "cold", args.extra_reps, tree, cold_env, args.settle)
        cold_imports = [imports(tree, cold_env) for _ in range(args.extra_reps)]
        cold_have = compiled(tree)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0", *PACKAGES], cwd=tree, check=True)
        compile_s = time.perf_counter() - t0
        have = compiled(tree)
        runs = starts(root, "compiled", args.reps, tree, plain_env, args.settle)
        warm_imports = [imports(tree, plain_env) for _ in range(args.extra_reps)]
        checkout = starts(root, "checkout", args.extra_reps, REPO, plain_env, args.settle)
        checkout_have = compiled(REPO)
    bare = median([python_start() for _ in range(args.extra_reps)])
    ready = median([r["ready"] for r in runs])
    rss = median([r["rss"] for r in runs])
    imports_cpu = median([float(i["cpu"]) for i in warm_imports])
    rep.figure("load average (1 min) at the end", os.getloadavg()[0], "", "{:.2f}")
    rep.figure("modules with bytecode after compileall", f"{have[0]} of {have[1]}")
    rep.figure("compileall of the packages (-j 0)", compile_s * 1000, "ms", "{:.0f}")
    rep.figure("start -> /health 200 (median)", ready * 1000, "ms", "{:.0f}")
    rep.figure("start -> /health 200 (max)", max(r["ready"] for r in runs) * 1000, "ms", "{:.0f}")
    rep.figure("the daemon's CPU until then (median)", median([r["ready_cpu"] for r in runs]) * 1000, "ms", "{:.0f}")
    rep.figure("start -> 'listening on' line (median)", median([r["listening"] for r in runs]) * 1000, "ms", "{:.0f}")
    rep.figure("imports, CPU (median)", imports_cpu * 1000, "ms", "{:.0f}")
    frameworks_cpu = median([float(i["frameworks_cpu"]) for i in warm_imports])
    rep.figure("  of which the design's frameworks (trio, attrs, cattrs, hypercorn, quart-trio)",
               frameworks_cpu * 1000, "ms", "{:.0f}")
    own_cpu = median([float(i["cpu"]) - float(i["frameworks_cpu"]) for i in warm_imports])
    rep.figure("  of which the daemon's own modules on top", own_cpu * 1000, "ms", "{:.0f}")
    rep.figure("the daemon's own modules loaded", median([float(i["own_modules"]) for i in warm_imports]), "",
               "{:.0f}")
    rep.figure("imports, wall (median)", median([float(i["wall"]) for i in warm_imports]) * 1000, "ms", "{:.0f}")
    rep.figure("RSS after those imports alone", median([float(i["rss"]) for i in warm_imports]), "MB", "{:.1f}")
    rep.figure("idle RSS (median)", rss, "MB", "{:.1f}")
    rep.figure("peak RSS during start (VmHWM, median)", median([r["hwm"] for r in runs]), "MB", "{:.1f}")
    rep.figure("python -c pass", bare * 1000, "ms", "{:.0f}")
    rep.figure("not compiled: start -> /health 200", median([r["ready"] for r in cold]) * 1000, "ms", "{:.0f}")
    rep.figure("not compiled: the daemon's CPU until then", median([r["ready_cpu"] for r in cold]) * 1000, "ms",
               "{:.0f}")
    rep.figure("not compiled: imports, CPU", median([float(i["cpu"]) for i in cold_imports]) * 1000, "ms", "{:.0f}")
    rep.figure("this checkout as it is: start -> /health 200", median([r["ready"] for r in checkout]) * 1000, "ms",
               "{:.0f}")
    rep.figure("this checkout: modules with bytecode", f"{checkout_have[0]} of {checkout_have[1]}")
    rep.figure("PYTHONDONTWRITEBYTECODE in this environment", os.environ.get("PYTHONDONTWRITEBYTECODE", "unset"))
    rep.figure("other processes' CPU during the run", watch.foreign_cores(), "cores", "{:.2f}")
    bad_exits = [int(r["exit"]) for r in runs + cold + checkout if r["exit"] != 0]
    rep.check("the daemon exited 0 on SIGTERM, every start", not bad_exits, f"exit statuses {bad_exits}")
    rep.check("the imports measured were the copy's", all(Path(str(i["file"])).is_relative_to(tree)
                                                         for i in cold_imports + warm_imports),
              str(warm_imports[0]["file"]))
    rep.check("the copy had no bytecode before compileall, and all of it after",
              cold_have[0] == 0 and have[0] == have[1], f"before {cold_have}, after {have}")
    rep.target("start -> /health 200 (median)", ready, "<=", TARGET_READY_S, "s", "{:.2f}")
    rep.target("imports, CPU (median)", imports_cpu, "<=", TARGET_IMPORTS_S, "s", "{:.2f}")
    rep.target("idle RSS (median)", rss, "<=", TARGET_RSS_MB, "MB", "{:.1f}")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
