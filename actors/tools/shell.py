"""exec_shell_command: a command in the workspace, in a process group of its own.

`/bin/sh -c COMMAND` runs with the workspace as its working directory, stdin closed,
stdout and stderr together. It starts a new session, so the shell, its children and
their children share one process group; a time limit, a stop, or the shell's own end
kills that whole group at once (SIGKILL), so nothing it started outlives the call.
Output past the cap is drained and dropped, so a chatty command never blocks on a full
pipe. Whether a command needs the person's consent is the classifier's call
(actors/tools/classify.py): anything it cannot tell is read-only asks.

Where the daemon has a sandbox (actors/sandbox/), the shell runs inside it: the same
group, limit, cap and stop, around `bwrap ... -- /bin/sh -c COMMAND`. A failure the
sandbox caused gets a line saying so. The model may ask for one command to run outside
(`outside_sandbox` with a `reason`): the run then always shows a card, in every mode,
and `read_only` refuses it (actors/policy/modes.py); this tool runs it unconfined only
when it is called, which is after the person's yes.
"""

from __future__ import annotations

import math
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

import attrs
import trio

from actors.errors import ToolError
from actors.fs.paths import PathRefused, resolve
from actors.process import SHELL, command_environment, signal_group, wait_exit
from actors.sandbox.policy import Sandbox, explain
from actors.tools import args as args_
from actors.tools.links import why_leaves
from actors.tools.registry import ToolContext, ToolOutcome

DEFAULT_TIMEOUT_S = 10
MAX_TIMEOUT_S = 120
MAX_OUTPUT_BYTES = 12 * 1024
READ_CHUNK = 64 * 1024
REAP_S = 2.0
TITLE_CHARS = 60
MAX_REASON_CHARS = 500
OUTSIDE = "outside_sandbox"


def asks_outside(tool_name: str, args: dict[str, Any]) -> bool:
    """Whether a call asks to run its command outside the sandbox: the run then always
    asks the person (every mode) and read_only refuses it."""
    return tool_name == "exec_shell_command" and args.get(OUTSIDE) is True


def arguments_stay_inside(command: str, workspace: Path) -> bool:
    """Whether a plain pipeline reads inside the workspace only, as far as the file
    system can tell: every path it names (a glob's matches included, as the shell will
    expand them) resolves inside, and every folder walk that follows links or reads the
    files it meets (`diff`, `ls -L`, `grep -R`, `find -L`, `du -L`, `rg` and its
    `--follow`, `tree -l`, ...) meets no link that leads out (actors/tools/links.py).
    Bounded in entries and time; past the bound it is False, and the command asks."""
    return why_leaves(command, workspace) is None


# A time limit, not a caller's cancel scope (ASYNC109): a command that runs out of time
# still answers with the output it gave, which a cancelled caller would lose.
async def run_command(
    command: str,
    cwd: str,
    timeout: float,  # noqa: ASYNC109
    max_output: int,
    *,
    wrap: Callable[[list[str]], Sequence[str]] | None = None,
    env: dict[str, str] | None = None,
) -> tuple[str, int, bool]:
    """Run `command`; (output, exit code, timed out). `wrap` turns the shell's argv into
    the sandbox's (the sandbox then leads the same process group). Cancelled: the group
    is killed before this returns, and the process reaped (bounded, shielded)."""
    env = command_environment() if env is None else env
    argv = [SHELL, "-c", command]
    proc = await trio.lowlevel.open_process(
        list(wrap(argv)) if wrap is not None else argv,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        env=env,
    )
    assert proc.stdout is not None
    chunks: list[bytes | bytearray] = []
    size = 0
    dropped = 0
    timed_out = False
    try:
        with trio.move_on_after(timeout) as deadline:
            async with trio.open_nursery() as nursery:

                async def kill_group_when_done() -> None:
                    # The shell is done: whatever it left running in its group goes too,
                    # which also closes the pipe those would otherwise hold open. The
                    # group is signalled before the shell is reaped, while its id
                    # cannot have been given to another process.
                    await wait_exit(proc.pid, math.inf)
                    signal_group(proc.pid, signal.SIGKILL)
                    await proc.wait()

                nursery.start_soon(kill_group_when_done)
                while True:
                    data = await proc.stdout.receive_some(READ_CHUNK)
                    if not data:
                        break
                    room = max_output - size
                    if room > 0:
                        chunks.append(data[:room])
                        size += min(room, len(data))
                    dropped += max(0, len(data) - max(room, 0))
        timed_out = deadline.cancelled_caught
    finally:
        if proc.returncode is None:  # not reaped yet, so the group id is still its
            signal_group(proc.pid, signal.SIGKILL)
        with trio.move_on_after(REAP_S) as cs:
            cs.shield = True
            await proc.wait()
        await proc.stdout.aclose()
    text = b"".join(chunks).decode("utf-8", errors="replace")
    if dropped:
        text += f"\n[output truncated: {dropped} more bytes]"
    code = proc.returncode if proc.returncode is not None else -int(signal.SIGKILL)
    return text, code, timed_out


@attrs.frozen
class ExecShellCommand:
    name: str = "exec_shell_command"
    description: str = (
        "Run a shell command in the workspace; answers its output, then [exit code: N]. "
        'Example: {"command": "ls -l"}'
    )
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: {
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "Shell command to run"},
                "timeout": {
                    "type": "integer",
                    "description": f"Time limit in seconds (default {DEFAULT_TIMEOUT_S}, at most {MAX_TIMEOUT_S})",
                },
                "max_output_size": {
                    "type": "integer",
                    "description": f"Most output to return, in bytes (at most {MAX_OUTPUT_BYTES})",
                },
                OUTSIDE: {
                    "type": "boolean",
                    "description": "Only when the sandbox stopped this command and it must write outside the "
                                   "workspace or use the network: ask the person to run it unconfined "
                                   "(needs a reason)",
                },
                "reason": {"type": "string", "description": "Why the command must run outside the sandbox"},
            },
            "required": ["command"],
        }
    )
    needs_workspace: bool = True
    offered_read_only: bool = True  # a command the classifier calls read-only may run
    checks_disk: bool = True  # is_change looks at the folder (paths, links): the run asks it in a thread
    # The daemon's sandbox (None: commands run unconfined, as where none can be had).
    sandbox: Sandbox | None = attrs.field(default=None, eq=False, repr=False)

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        from actors.tools.classify import is_read_only

        if asks_outside(self.name, args):
            return True
        command = args.get("command")
        if not (isinstance(command, str) and is_read_only(command)):
            return True
        return workspace is None or not arguments_stay_inside(command, workspace)

    def title(self, args: dict[str, Any]) -> str:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            return "Run a command"
        text = " ".join(command.split())
        verb = "Run outside the sandbox: " if asks_outside(self.name, args) else "Run "
        return verb + (text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…")

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        self._command(args)
        self._reason(args)
        return None

    @staticmethod
    def _reason(args: dict[str, Any]) -> str | None:
        """The reason given for running outside the sandbox (None: the call does not ask)."""
        outside = args.get(OUTSIDE)
        if outside is None or outside is False:
            return None
        reason = args.get("reason")
        if outside is not True or not isinstance(reason, str) or not reason.strip():
            raise ToolError(f'"{OUTSIDE}": true needs a "reason" (a non-empty string) that the person reads.')
        if len(reason) > MAX_REASON_CHARS:
            raise ToolError(f'The "reason" is too long: at most {MAX_REASON_CHARS} characters.')
        return reason

    @staticmethod
    def _command(args: dict[str, Any]) -> str:
        command = args.get("command")
        if not isinstance(command, str) or not command.strip():
            raise ToolError('The call needs "command" (a non-empty string).')
        return command

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        assert ctx.workspace is not None
        command = self._command(args)
        timeout = args_.clamped(args, "timeout", DEFAULT_TIMEOUT_S, MAX_TIMEOUT_S)
        max_output = args_.clamped(args, "max_output_size", MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES)
        outside = self._reason(args) is not None
        if outside and ctx.mode == "read_only":  # the run refuses it first; this holds it anyway
            raise ToolError("This conversation is read-only: no command runs outside the sandbox.")
        sandbox = self.sandbox if self.sandbox is not None and self.sandbox.status.confines else None
        confined = sandbox is not None and not outside
        scratch = None
        try:
            env = command_environment()
            wrap = None
            if sandbox is not None and confined:
                scratch = await _scratch_for(sandbox, env)
                argv = await trio.to_thread.run_sync(sandbox.wrap, [SHELL, "-c", command], ctx.workspace,
                                                     ctx.mode, scratch)
                wrap = lambda _: argv  # noqa: E731
            output, code, timed_out = await run_command(command, str(ctx.workspace), timeout, max_output,
                                                        wrap=wrap, env=env)
        except OSError as exc:
            raise ToolError(f"The command could not start: {exc.strerror}.") from None
        finally:
            if scratch is not None:
                await trio.to_thread.run_sync(shutil.rmtree, scratch, True)
        note = explain(output, ctx.mode) if confined else None
        hint = await trio.to_thread.run_sync(run_it_as, output, code, ctx.workspace) if code in NOT_RUN_CODES else None
        # The status is the result's last line, whatever is said before it (ledger.ended_as reads it).
        tail = "".join(f"\n{line}" for line in (hint, note) if line) + f"\n[exit code: {code}]"
        if timed_out:
            # A time limit is a call that could not be carried out: an error result.
            raise ToolError(
                output + tail + f" [stopped after the {timeout} s time limit; pass a larger timeout "
                f"(at most {MAX_TIMEOUT_S}) or run something quicker]"
            )
        return ToolOutcome(output + tail)


# The shell's status for a word it could not run: not found, not executable.
NOT_RUN_CODES = (126, 127)
# A script's suffix and the program that runs it.
INTERPRETERS = {".py": "python3", ".sh": "sh", ".bash": "bash", ".js": "node", ".mjs": "node", ".rb": "ruby",
                ".pl": "perl", ".php": "php"}
# A program often named that a system may have only under another name.
OTHER_NAMES = {"python": "python3", "pip": "pip3"}
# What the shell says of a word it could not run: dash's `sh: 1: NAME: not found`, bash's
# `bash: line 1: NAME: command not found`, and either's `NAME: Permission denied`.
_NOT_RUN = re.compile(r"^[^\n:]*sh: (?:\d+: |line \d+: )?([^\s:]+): (?:command )?(not found|Permission denied)$",
                      re.MULTILINE)


def run_it_as(output: str, code: int, workspace: Path) -> str | None:
    """A line saying how to run what the shell could not (exit 126 or 127): a script of
    the workspace named as a program is run by its interpreter (`NAME.py`: `python3
    NAME.py`, when python3 is installed), and `python` is `python3` where only that is
    installed. None when neither applies. Blocking (it looks at the disk)."""
    if code not in NOT_RUN_CODES:
        return None
    for word, _ in _NOT_RUN.findall(output):
        program = INTERPRETERS.get(PurePosixPath(word).suffix.lower())
        if program is not None and shutil.which(program) is not None and _is_file_in(workspace, word):
            script = word.removeprefix("./")
            return f"[{script} is a file here, not a program: run it as `{program} {script}`.]"
        other = OTHER_NAMES.get(word)
        if other is not None and shutil.which(word) is None and shutil.which(other) is not None:
            return f"[{word} is not installed here, {other} is: run `{other}` instead.]"
    return None


def _is_file_in(workspace: Path, name: str) -> bool:
    try:
        return resolve(workspace, name).is_file()
    except (PathRefused, OSError):
        return False


async def _scratch_for(sandbox: Sandbox, env: dict[str, str]) -> Path | None:
    """Seatbelt only (it cannot mount a private /tmp): a folder of the command's own for
    its temporary files and cache, set in `env`, removed after the command."""
    if sandbox.status.kind != "seatbelt":
        return None
    scratch = Path(await trio.to_thread.run_sync(tempfile.mkdtemp, "", "bmoe-cmd-"))
    env["TMPDIR"] = env["XDG_CACHE_HOME"] = str(scratch)
    return scratch
