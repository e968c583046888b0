"""Startup: `serve --no-model` as a subprocess, from process start to `/health`
answering 200, and the idle RSS once it serves.

Each repetition starts `python -m bmoe_daemon serve --port 0 --no-model` with a
fresh data folder, reads the port from its `listening on` line, and polls
`GET /health` (every 10 ms) until it answers 200; the clock starts just before the
process is spawned. One second later it reads VmRSS from /proc/<pid>/status, then
stops the daemon with SIGTERM. Five repetitions, median.

For the diagnosis it also gives the time to the `listening on` line, the time the
interpreter alone takes to start (`python -c pass`), the time and RSS to import the
daemon's modules alone, and the start with a warm bytecode cache kept in a temporary
PYTHONPYCACHEPREFIX (where PYTHONDONTWRITEBYTECODE is set, as in some sandboxes, the
project's own modules are otherwise compiled at every start). The targets are judged
on the plain start, in the environment as it is.

    .venv/bin/python ops/bench/startup.py [--reps 5] [--quick]
"""

from __future__ import annotations

import argparse
import http.client
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    CpuWatch,
    DaemonProcess,
    Report,
    exit_on_sigterm,
    median,
    parse_args,
    proc_status_kb,
    split_address,
)

TARGET_READY_S = 1.5
TARGET_RSS_MB = 90.0
POLL_S = 0.01
SETTLE_S = 1.0


def health_ok(host: str, port: int) -> bool:
    conn = http.client.HTTPConnection(host, port, timeout=2)
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def one_start(folder: Path, env: dict[str, str] | None = None, settle: float = SETTLE_S) -> dict[str, float]:
    daemon = DaemonProcess(
        ["serve", "--port", "0", "--no-model", "--data-dir", str(folder / "data")],
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
        time.sleep(settle)
        rss = proc_status_kb(daemon.pid, "VmRSS") / 1024
        hwm = proc_status_kb(daemon.pid, "VmHWM") / 1024
    finally:
        status = daemon.stop()
    return {"ready": ready, "listening": listening, "rss": rss, "hwm": hwm, "exit": float(status or 0)}


def timed_python(code: str, env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall seconds of `python -c code`, and the RSS it prints (MB), if any."""
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    wall = time.perf_counter() - t0
    try:
        return wall, float(out.stdout.strip() or "nan")
    except ValueError:
        return wall, float("nan")


IMPORTS = (
    "import bmoe_daemon.server, bmoe_daemon.cli\n"
    "for line in open('/proc/self/status'):\n"
    "    if line.startswith('VmRSS:'): print(int(line.split()[1]) / 1024)\n"
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--extra-reps", type=int, default=3, help="repetitions of each diagnosis figure")
    ap.add_argument("--settle", type=float, default=SETTLE_S, help="seconds from ready to the RSS reading")
    args = parse_args(ap, quick={"reps": 2, "extra_reps": 1, "settle": 0.5})
    exit_on_sigterm()

    rep = Report("startup", "serve --no-model: process start -> /health 200, and idle RSS")
    runs = []
    watch = CpuWatch().start()
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        for i in range(args.reps):
            folder = Path(tmp) / f"r{i}"
            folder.mkdir()
            r = one_start(folder, settle=args.settle)
            runs.append(r)
            print(
                f"   rep {i + 1}: ready {r['ready'] * 1000:6.0f} ms (listening line {r['listening'] * 1000:6.0f} ms)  "
                f"idle RSS {r['rss']:5.1f} MB  exit {int(r['exit'])}",
                flush=True,
            )
        # The same with a warm bytecode cache kept outside the repository: here
        # PYTHONDONTWRITEBYTECODE may be set, and then the project's own modules are
        # compiled again at every start, which an installed daemon would not do.
        warm_env = dict(os.environ, PYTHONPYCACHEPREFIX=str(Path(tmp) / "pycache"))
        warm_env.pop("PYTHONDONTWRITEBYTECODE", None)
        timed_python(IMPORTS, warm_env)  # fills the cache
        warm = []
        for i in range(args.extra_reps):
            folder = Path(tmp) / f"w{i}"
            folder.mkdir()
            warm.append(one_start(folder, warm_env, args.settle))
        warm_imports = [timed_python(IMPORTS, warm_env) for _ in range(args.extra_reps)]
    bare = median([timed_python("pass")[0] for _ in range(args.extra_reps)])
    imports = [timed_python(IMPORTS) for _ in range(args.extra_reps)]
    ready = median([r["ready"] for r in runs])
    rss = median([r["rss"] for r in runs])
    rep.figure("start -> /health 200 (median)", ready * 1000, "ms", "{:.0f}")
    rep.figure("start -> 'listening on' line (median)", median([r["listening"] for r in runs]) * 1000, "ms", "{:.0f}")
    rep.figure("start -> /health 200 (max)", max(r["ready"] for r in runs) * 1000, "ms", "{:.0f}")
    rep.figure("idle RSS (median)", rss, "MB", "{:.1f}")
    rep.figure("peak RSS during start (VmHWM, median)", median([r["hwm"] for r in runs]), "MB", "{:.1f}")
    rep.figure("python -c pass", bare * 1000, "ms", "{:.0f}")
    rep.figure("python importing the daemon's modules", median([w for w, _ in imports]) * 1000, "ms", "{:.0f}")
    rep.figure("RSS after those imports alone", median([m for _, m in imports]), "MB", "{:.1f}")
    rep.figure("PYTHONDONTWRITEBYTECODE in this environment", os.environ.get("PYTHONDONTWRITEBYTECODE", "unset"))
    rep.figure("warm bytecode cache: start -> /health 200", median([r["ready"] for r in warm]) * 1000, "ms", "{:.0f}")
    rep.figure("warm bytecode cache: the imports alone", median([w for w, _ in warm_imports]) * 1000, "ms", "{:.0f}")
    rep.figure("other processes' CPU during the run", watch.foreign_cores(), "cores", "{:.2f}")
    bad_exits = [int(r["exit"]) for r in runs + warm if r["exit"] != 0]
    rep.check("the daemon exited 0 on SIGTERM, every start", not bad_exits, f"exit statuses {bad_exits}")
    rep.target("start -> /health 200 (median)", ready, "<=", TARGET_READY_S, "s", "{:.2f}")
    rep.target("idle RSS (median)", rss, "<=", TARGET_RSS_MB, "MB", "{:.1f}")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
