"""Child processes the daemon starts: their environment, their process group, their
exit and reaping, and their stderr in the log.

A child is started in a session and process group of its own, so its whole group can
be signalled as one: whatever it starts ends with it. Its group is signalled before
the leader is reaped, while the group's id cannot have been given to another process.
Used by the commands the model runs (actors/tools/shell.py), the person's hooks, and
the programs spoken to over JSON-RPC (actors/peers/program.py).
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
from collections.abc import Callable

import trio

REAP_S = 3.0  # after the kill grace, for the group's SIGKILL and the reaping
EXIT_POLL_S = 0.02
READ_CHUNK = 64 * 1024
STDERR_LINE_CHARS = 2000
STDERR_PENDING_BYTES = 64 * 1024
SHELL = "/bin/sh"  # what a model's command runs in (actors/tools/shell.py)


def can_run_commands() -> bool:
    """Whether this platform may start a process with a shell."""
    return os.path.exists(SHELL) and os.access(SHELL, os.X_OK)


class StartFailed(Exception):
    """The program could not be started; the text is the system's reason."""



# The daemon's own variables (its data folder and the like): not for programs it starts.
PRIVATE_ENV_PREFIX = "BMOE_"


def child_environment() -> dict[str, str]:
    """The daemon's environment without its own variables, for a program it starts on
    the person's behalf that needs the person's accounts (another coding agent, which
    may use its own provider key)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(PRIVATE_ENV_PREFIX)}


# Provider keys a person's environment may carry (OPENAI_API_KEY, ANTHROPIC_AUTH_TOKEN,
# HF_TOKEN, AWS_SECRET_ACCESS_KEY, ...): never handed to a command the
# model runs, a hook or a language server: a prompt-injected `env` would show them.
_PROVIDER_KEY = re.compile(
    r"(?:^|_)(?:API_?KEY|AUTH_TOKEN|API_TOKEN|SECRET_ACCESS_KEY|SESSION_TOKEN)$"
    r"|^(?:HF_TOKEN|HUGGING_FACE_HUB_TOKEN|HUGGINGFACE_TOKEN|AZURE_OPENAI_AD_TOKEN|GOOGLE_APPLICATION_CREDENTIALS)$",
    re.IGNORECASE,
)


def is_provider_key(name: str) -> bool:
    """Whether an environment variable's name is one a model provider's key goes by."""
    return _PROVIDER_KEY.search(name) is not None



def command_environment() -> dict[str, str]:
    """`child_environment` without the provider keys either: for what the model asks to
    run (a command), the person's hooks and language servers."""
    return {k: v for k, v in child_environment().items() if not is_provider_key(k)}


def exit_status(pid: int) -> int | None:
    """The child's exit status if it has ended, without reaping it (its process group
    id stays ours until it is reaped), else None."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return -1  # already reaped
    if info is None:
        return None
    return info.si_status if info.si_code == os.CLD_EXITED else -info.si_status


async def wait_exit(pid: int, limit: float) -> int | None:
    """The child's exit status once it has ended, waiting at most `limit` seconds
    (None if it still runs then); it is not reaped. Woken by a pidfd where the system
    has them, else by polling every EXIT_POLL_S."""
    with trio.move_on_after(limit):
        fd = _pidfd(pid)
        if fd is not None:
            try:
                if exit_status(pid) is None:
                    await trio.lowlevel.wait_readable(fd)  # readable once it has ended
            finally:
                os.close(fd)
        while True:
            status = exit_status(pid)
            if status is not None:
                return status
            await trio.sleep(EXIT_POLL_S)
    return exit_status(pid)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):  # not Linux 5.3+, or the child was reaped already
        return None


def signal_group(pid: int, sig: int) -> None:
    """Signal the process group led by `pid`; one already gone is left alone."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


async def start_program(argv: list[str], *, env: dict[str, str], cwd: str | None) -> trio.Process:
    """Start `argv` with pipes on stdin, stdout and stderr, in a session and process
    group of its own, with exactly `env`. Raises StartFailed."""
    try:
        return await trio.lowlevel.open_process(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=env,
            cwd=cwd,
        )
    except (OSError, ValueError) as exc:
        raise StartFailed(exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) from None


async def read_stderr(proc: trio.Process, log: logging.Logger, label: str,
                      redact: Callable[[str], str] | None = None) -> None:
    """Log the program's stderr at INFO, a line at a time, as `<label> stderr: ...`
    (a line cut at STDERR_LINE_CHARS, one without an end logged every
    STDERR_PENDING_BYTES), until it closes; `redact` hides what the line may not show
    (a secret the program was given)."""
    assert proc.stderr is not None
    pending = b""
    try:
        while True:
            chunk = await proc.stderr.receive_some(READ_CHUNK)
            if not chunk:
                break
            *whole, pending = (pending + chunk).split(b"\n")
            if len(pending) > STDERR_PENDING_BYTES:
                whole.append(pending)
                pending = b""
            for line in whole:
                _log_stderr(log, label, line, redact)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    if pending:
        _log_stderr(log, label, pending, redact)


def _log_stderr(log: logging.Logger, label: str, line: bytes, redact: Callable[[str], str] | None) -> None:
    text = line.decode("utf-8", errors="replace").rstrip()
    if redact is not None:
        text = redact(text)
    if text:
        log.info("%s stderr: %s", label, text[:STDERR_LINE_CHARS])


async def reap(proc: trio.Process, kill_grace: float, log: logging.Logger, label: str) -> None:
    """End the program's whole group and reap it: its input closed, SIGTERM, `kill_grace`
    seconds, SIGKILL to the group (whatever it started too), then its streams closed.
    Shielded and bounded (kill_grace + REAP_S): it runs when cancelled too; a program
    not reaped by then is logged as a warning."""
    with trio.move_on_after(kill_grace + REAP_S) as cs:
        cs.shield = True
        if proc.stdin is not None:
            await proc.stdin.aclose()
        # exit_status looks without reaping (proc.returncode would reap): the leader stays
        # a zombie, so its group id cannot go to another process while we signal it.
        if exit_status(proc.pid) is None:
            signal_group(proc.pid, signal.SIGTERM)
            await wait_exit(proc.pid, kill_grace)
        # Always, even when the program itself had already exited: whatever it started
        # is in its group, and a group's id is not reused while a member lives.
        signal_group(proc.pid, signal.SIGKILL)
        await proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                await stream.aclose()
    if cs.cancelled_caught:
        log.warning("%s: its program (pid %d) could not be reaped in time", label, proc.pid)
