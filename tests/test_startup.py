"""Start-up with real daemon processes: one daemon per data folder (the lock, a stale lock
after kill -9), each start-up failure as one plain line and exit status 2, and the log file
(written, rotated, elsewhere with --log-file)."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from tests.daemon_proc import REPO, run_daemon

FAIL_TIMEOUT_S = 60


async def start_failing(data_dir: Path, *args: str, pythonpath: Path | None = None) -> tuple[int, str]:
    """Run `serve` expecting it to refuse; its exit status and stderr. `pythonpath` goes
    before the checkout."""
    cmd = [sys.executable, "-m", "bmoe_daemon", "serve", "--port", "0", "--data-dir", str(data_dir),
           "--log-level", "warning", *args]
    path = os.pathsep.join([*([str(pythonpath)] if pythonpath else []), str(REPO)])
    with trio.fail_after(FAIL_TIMEOUT_S):
        done = await trio.run_process(cmd, capture_stdout=True, capture_stderr=True, check=False,
                                      env={**os.environ, "PYTHONPATH": path}, cwd=str(REPO))
    assert done.returncode is not None
    return done.returncode, done.stderr.decode(errors="replace")


def one_line(stderr: str) -> str:
    """The refusal: exactly one line, `bmoe-daemon: ...`, no traceback."""
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bmoe-daemon: "), stderr
    return lines[0]


def snapshot(folder: Path) -> dict[str, tuple[int, int, bytes]]:
    """Every file and folder under `folder`: its mode, mtime and bytes."""
    out: dict[str, tuple[int, int, bytes]] = {}
    for path in [folder, *folder.rglob("*")]:
        st = path.lstat()
        out[str(path.relative_to(folder))] = (st.st_mode, st.st_mtime_ns, b"" if path.is_dir() else path.read_bytes())
    return out


# ---- one daemon per data folder ----


async def test_a_second_daemon_on_the_same_data_folder_refuses_and_writes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with run_daemon(data, "--no-model") as first, first.client() as c:
        held = json.loads((data / "daemon.lock").read_text())
        assert held == {"pid": first.proc.pid, "address": first.url, "key_file": None}
        # The first is stopped meanwhile, so nothing it writes can hide a write of the second's.
        first.proc.send_signal(signal.SIGSTOP)
        try:
            before = snapshot(data)
            status, stderr = await start_failing(data)
            after = snapshot(data)
        finally:
            first.proc.send_signal(signal.SIGCONT)
        line = one_line(stderr)
        assert status == 2
        assert f"is in use by bmoe-daemon pid {first.proc.pid} at {first.url}" in line
        assert "--data-dir" in line
        assert after == before
        assert (await c.get("/health")).status_code == 200  # the first serves on


async def test_a_lock_left_by_kill_9_is_taken_over(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with run_daemon(data, "--no-model") as first:
        first.proc.kill()
        await first.proc.wait()
    stale = json.loads((data / "daemon.lock").read_text())
    assert stale["pid"] == first.proc.pid  # the file is still there, naming the dead process
    async with run_daemon(data, "--no-model") as second, second.client() as c:
        assert (await c.get("/health")).status_code == 200
        assert json.loads((data / "daemon.lock").read_text()) == {"pid": second.proc.pid, "address": second.url,
                                                                  "key_file": None}


async def test_a_daemon_on_another_data_folder_runs_beside(tmp_path: Path) -> None:
    async with run_daemon(tmp_path / "one", "--no-model") as one, run_daemon(tmp_path / "two", "--no-model") as two:
        assert one.url != two.url


# ---- start-up failures in plain words ----


def unwritable_folder(tmp_path: Path) -> Path:
    """A folder this process cannot create files in: one without write permission, or,
    for root (which permissions do not stop), a read-only folder of the system's."""
    if os.geteuid() != 0:
        folder = tmp_path / "read-only"
        folder.mkdir()
        folder.chmod(0o500)
        return folder
    return Path("/sys/fs")


async def test_a_data_folder_that_cannot_be_written(tmp_path: Path) -> None:
    folder = unwritable_folder(tmp_path)
    with pytest.raises(OSError):
        (folder / "probe").write_text("")  # the premise: this folder cannot be written
    status, stderr = await start_failing(folder)
    assert status == 2
    assert f"cannot write in the data folder {folder}" in one_line(stderr)


def setup_file(tmp_path: Path) -> Path:
    (tmp_path / "a-file").write_text("not a folder\n")
    return tmp_path / "a-file"


# Each: what the test lays out (a function of tmp_path returning the data folder and the
# extra arguments), and what the line says.
Case = Callable[[Path], tuple[Path, list[str]]]
FAILURES: dict[str, tuple[Case, str]] = {
    "the data folder is a file": (
        lambda t: (setup_file(t), []), "is a file, not a folder; move the file away or pass --data-dir"),
    "a folder on the data folder's path is a file": (
        lambda t: (setup_file(t) / "data", []), "a folder on its path is a file; pass --data-dir"),
    "the data folder cannot be created": (
        lambda t: (Path("/proc/no-such-process/data"), []), "cannot create the data folder /proc/no-such-process"),
    "a host name that does not resolve": (
        lambda t: (t / "data", ["--host", "no-such-host.invalid"]), "--host no-such-host.invalid is not an address"),
    "an address that is not this computer's": (
        lambda t: (t / "data", ["--host", "192.0.2.1"]), "--host 192.0.2.1 is not an address of this computer"),
    "a missing key file": (
        lambda t: (t / "data", ["--api-key-file", str(t / "no-key")]), "cannot read the key file"),
    "a key file that is a folder": (
        lambda t: (t / "data", ["--api-key-file", str(t)]), "cannot read the key file"),
    "an agents file that is not JSON": (
        lambda t: (t / "data", ["--agents-file", str(setup_file(t))]), "The agents' catalog cannot be read"),
    "a model file that is missing": (
        lambda t: (t / "data", ["--model", str(t / "no-model.gguf")]), "There is no model file at"),
    "a log file whose folder is a file": (
        lambda t: (t / "data", ["--log-file", str(setup_file(t) / "daemon.log")]),
        "cannot write the log file"),
    "a log file that is a folder": (
        lambda t: (t / "data", ["--log-file", str(t)]), "cannot write the log file"),
    "a number of GPU layers below -1": (
        lambda t: (t / "data", ["--n-gpu-layers", "-2"]), "--n-gpu-layers must be -1 (every layer), 0 (none)"),
}


@pytest.mark.parametrize("case", list(FAILURES))
async def test_a_start_up_failure_is_one_plain_line(tmp_path: Path, case: str) -> None:
    setup, says = FAILURES[case]
    data, args = setup(tmp_path)
    model = [] if "--model" in args else ["--no-model"]
    status, stderr = await start_failing(data, *model, *args)
    assert status == 2
    assert says in one_line(stderr)


async def test_a_llama_cpp_python_that_will_not_load(tmp_path: Path) -> None:
    from tests.test_doctor import broken_llama

    status, stderr = await start_failing(tmp_path / "data", pythonpath=broken_llama(tmp_path))
    assert status == 2
    line = one_line(stderr)
    assert "llama-cpp-python cannot be loaded (Failed to load shared library" in line
    assert "install it again" in line


async def test_a_port_in_use_by_another_program(tmp_path: Path) -> None:
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        status, stderr = await start_failing(tmp_path / "data", "--no-model", "--port", str(port))
    assert status == 2
    line = one_line(stderr)
    assert f"port {port} on 127.0.0.1 is in use by another program (pid {os.getpid()})" in line
    assert "pass --port" in line
    # The refusal is in the log file too, for a service nobody watches.
    assert f"cannot start: port {port}" in (tmp_path / "data" / "logs" / "daemon.log").read_text()


async def test_a_port_in_use_by_a_daemon_of_another_data_folder(tmp_path: Path) -> None:
    async with run_daemon(tmp_path / "one", "--no-model") as one:
        port = one.url.rsplit(":", 1)[1]
        status, stderr = await start_failing(tmp_path / "two", "--no-model", "--port", port)
    assert status == 2
    assert (f"port {port} on 127.0.0.1 is in use by bmoe-daemon pid {one.proc.pid} serving the data folder "
            f"{tmp_path / 'one'}") in one_line(stderr)


# ---- the log file ----


async def test_the_log_file_gets_what_stderr_gets(tmp_path: Path) -> None:
    async with run_daemon(tmp_path / "data", "--no-model") as d:
        pass
    log = d.log_file()
    assert f"serving on {d.url}" in log and "stopping: ending runs" in log
    records = [line.split(" ", 2)[2] for line in log.splitlines()]  # without the time
    assert records == [line.split(" ", 2)[2] for line in d.stderr().splitlines()
                       if line[:4].isdigit()]  # stderr's log records, not its other lines
    assert (tmp_path / "data" / "logs" / "daemon.log").stat().st_mode & 0o077 == 0  # the owner's only


async def test_log_file_puts_it_elsewhere(tmp_path: Path) -> None:
    elsewhere = tmp_path / "my-logs" / "bmoe.log"
    async with run_daemon(tmp_path / "data", "--no-model", "--log-file", str(elsewhere)) as d:
        pass
    assert f"serving on {d.url}" in elsewhere.read_text()
    assert not (tmp_path / "data" / "logs").exists()


LOG_MAX_BYTES = 150  # one record a file: each is 80 to 120 bytes


async def test_rotation_bounds_the_log(tmp_path: Path) -> None:
    """Three starts log four or five records each; at one a file, six files are kept (the
    log and five old ones), each within the size, and the first start's records are gone."""
    data = tmp_path / "data"
    urls = []
    for _ in range(3):
        async with run_daemon(data, "--no-model", "--log-max-bytes", str(LOG_MAX_BYTES)) as d:
            urls.append(d.url)
    logs = data / "logs"
    names = sorted(p.name for p in logs.iterdir())
    assert names == ["daemon.log", *(f"daemon.log.{n}" for n in range(1, 6))]
    sizes = [(logs / name).stat().st_size for name in names]
    assert all(0 < size <= LOG_MAX_BYTES for size in sizes), sizes
    kept = "".join((logs / name).read_text() for name in names)
    assert f"serving on {urls[2]}" in kept and f"serving on {urls[0]}" not in kept
    assert "stopping: ending runs" in (logs / "daemon.log").read_text()  # the newest record is in the log itself
