"""Which daemon `bmoe-daemon run` talks to: the one holding the data folder (its lock
file names its address and key file, bmoe_daemon/startup.py), or one this call starts
(`--embedded`): `serve` with the same options on port 0, in a session of its own (a
Ctrl-C at the terminal reaches the client only, which stops the run itself), stopped with
SIGTERM and waited for. Standard library only, as the rest of the command (client.py says why)."""

from __future__ import annotations

import argparse
import fcntl
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bmoe_daemon.defaults import read_key_file
from bmoe_daemon.lockfile import LOCK_FILE, Holder, read_holder
from bmoe_daemon.options import serve_options

START_TIMEOUT_S = 120  # the embedded daemon's `listening on` line (the model loads after it)
ADDRESS_WAIT_S = 30  # a daemon that holds the folder but has not bound its socket yet
STOP_WAIT_S = 40  # SIGTERM, then SIGKILL: the daemon's own stop takes up to 30 s
POLL_S = 0.05


class RunError(Exception):
    """The call cannot go on; `code` is the exit status (run_cmd.outcome)."""

    def __init__(self, text: str, code: int) -> None:
        super().__init__(text)
        self.code = code


def is_gguf(model: Path | None) -> bool:
    """`--model` names a GGUF file (for a daemon this call starts), not a route."""
    return model is not None and (str(model).endswith(".gguf") or model.is_file())


def holder(data_dir: Path) -> Holder | None:
    """Who holds the data folder's lock, or None when no daemon does (the lock is taken
    and let go at once to tell)."""
    try:
        fd = os.open(data_dir / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return read_holder(fd)
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def wait_address(data_dir: Path) -> Holder | None:
    """The holder of the data folder once it has an address (a daemon still starting
    is waited for); None when none holds it."""
    deadline = time.monotonic() + ADDRESS_WAIT_S
    while time.monotonic() < deadline:
        found = holder(data_dir)
        if found is None or found.address is not None:
            return found
        time.sleep(POLL_S)
    raise RunError(f"the daemon holding {data_dir} ({holder(data_dir) or 'gone'}) has no address yet; try again", 1)


def key_of(path: Path | str | None) -> str | None:
    if path is None:
        return None
    try:
        return read_key_file(Path(path))
    except (OSError, ValueError) as exc:
        raise RunError(f"cannot read the key file {path}: {exc}; pass --api-key-file a readable one", 2) from None


def serve_argv(args: argparse.Namespace) -> list[str]:
    """`serve`'s command line from run's parsed options: each one given (not at its
    default), on port 0; `--model` only when it is a GGUF file."""
    p = argparse.ArgumentParser(add_help=False)
    serve_options(p)
    out = ["serve", "--port", "0"]
    for action in p._actions:
        if not action.option_strings or action.dest == "port":
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default or (action.dest == "model" and not is_gguf(value)):
            continue
        opt = action.option_strings[0]
        if isinstance(action, argparse._StoreTrueAction):
            out.append(opt)
        elif isinstance(action, argparse._AppendAction):
            for one in value:
                out += [opt, str(one)]
        else:
            out += [opt, str(value)]
    return out


class Embedded:
    """A daemon started for this call. `start` returns its address; `stop` ends it
    (SIGTERM, waited for; SIGKILL past STOP_WAIT_S), leaving no process."""

    def __init__(self, argv: list[str]) -> None:
        self._argv = argv
        self._proc: subprocess.Popen[bytes] | None = None
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - kept open until stop, read on failure

    def start(self) -> str:
        cmd = [sys.executable, "-m", "bmoe_daemon", *self._argv]
        self._proc = proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._err,
                                             start_new_session=True)
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        buf = b""
        deadline = time.monotonic() + START_TIMEOUT_S
        while (left := deadline - time.monotonic()) > 0:
            for line in buf.splitlines(keepends=True):
                if line.endswith(b"\n") and line.startswith(b"listening on "):
                    return line.removeprefix(b"listening on ").decode().strip()
            if not select.select([fd], [], [], left)[0]:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                raise RunError(f"the daemon did not start: {self._stderr_tail()}", 2 if self._code() == 2 else 1)
            buf += chunk
        raise RunError(f"the daemon did not listen within {START_TIMEOUT_S} s: {self._stderr_tail()}", 1)

    def _code(self) -> int | None:
        assert self._proc is not None
        try:
            return self._proc.wait(5)
        except subprocess.TimeoutExpired:
            return None

    def _stderr_tail(self) -> str:
        self._err.seek(0)
        lines = self._err.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    def stop(self) -> None:
        """Runs to the end under a Ctrl-C too (SIGINT is ignored while it waits)."""
        proc = self._proc
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            if proc is not None:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    try:
                        proc.wait(STOP_WAIT_S)
                    except subprocess.TimeoutExpired:
                        proc.kill()
                        proc.wait()
                if proc.stdout is not None:
                    proc.stdout.close()
            self._err.close()
        finally:
            signal.signal(signal.SIGINT, previous)
