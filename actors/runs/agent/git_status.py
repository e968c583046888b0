"""The workspace's git state for the system prompt: its branch and a short `git status -sb`.

Asked at most once every REFRESH_S per workspace (a cache shared by the daemon's runs),
and fixed for a message by the run that asked (actors/runs/agent/prepare.py): every
round of a message sends the same prompt.

Git runs on the daemon's own account, outside the sandbox, in a work tree the model's
commands may write (`.git/config` included). So nothing a repository's configuration
names is run: no hooks, no fsmonitor, no pager, no filter (every filter driver the
configuration names is emptied on the command line, where it wins), no submodule
(each would be a git of its own), no system or global configuration; it takes no lock
(GIT_OPTIONAL_LOCKS=0: the index is never written) and is killed past TIMEOUT_S. A git
that is missing, fails or is slow gives no block.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import trio

from actors.runs.agent.instructions import git_root

REFRESH_S = 30.0
TIMEOUT_S = 2.0
MAX_LINES = 20  # of the status, the branch line apart
LINE_CHARS = 200
OUTPUT_BYTES = 64 * 1024
CACHE_MAX = 64  # workspaces

_SAFE = (
    "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.pager=cat",
    "-c", "color.ui=false", "-c", "core.quotePath=false", "-c", "status.submoduleSummary=false",
)


def environment() -> dict[str, str]:
    """The daemon's environment without any GIT_* of its own, and git kept quiet and lock-free."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_OPTIONAL_LOCKS="0", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull,
               GIT_TERMINAL_PROMPT="0", GIT_PAGER="cat", PAGER="cat", LC_ALL="C", GIT_ATTR_NOSYSTEM="1")
    return env


async def _git(root: Path, cwd: Path, *args: str) -> bytes | None:
    """One git command's stdout (at most OUTPUT_BYTES), None when it fails or is slow."""
    cmd = ["git", "--no-pager", f"--work-tree={root}", *_SAFE, *args]
    try:
        with trio.move_on_after(TIMEOUT_S):
            done = await trio.run_process(cmd, cwd=str(cwd), env=environment(), stdin=b"", capture_stdout=True,
                                          capture_stderr=True, check=False)
            return bytes(done.stdout[:OUTPUT_BYTES]) if done.returncode == 0 else None
    except OSError:
        return None
    return None


def filters_off(listing: bytes) -> list[str]:
    """`-c` options that empty every filter driver named in `git config -z --get-regexp
    ^filter\\.` output (`filter.<driver>.<key>\\n<value>\\0` entries). Pure."""
    drivers = set()
    for entry in listing.split(b"\0"):
        key = entry.split(b"\n", 1)[0].decode("utf-8", "replace")
        if key.startswith("filter.") and key.count(".") >= 2:
            drivers.add(key[len("filter."):key.rindex(".")])
    out: list[str] = []
    for driver in sorted(drivers):
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            out += ["-c", f"filter.{driver}.{key}={value}"]
    return out


def block(status: str) -> str | None:
    """The prompt's lines from `git status -sb` output: the branch, then at most
    MAX_LINES changed paths (each cut at LINE_CHARS) and how many more. Pure."""
    lines = [line for line in status.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("## "):
        return None
    head = lines[0][3:]
    branch = head.split("...", 1)[0].split(" ", 1)[0]
    if head.startswith("No commits yet on "):
        branch = head[len("No commits yet on "):].split("...", 1)[0]
    elif head.startswith("HEAD (no branch)"):
        branch = "none (a detached HEAD)"
    changed = lines[1:]
    out = [f"Git: the workspace is a git work tree; current branch: {branch}.", "git status -sb:",
           lines[0][:LINE_CHARS]]
    out += [line[:LINE_CHARS] for line in changed[:MAX_LINES]]
    if len(changed) > MAX_LINES:
        out.append(f"... and {len(changed) - MAX_LINES} more changed or untracked paths")
    if not changed:
        out.append("(nothing changed since the last commit)")
    return "\n".join(out)


async def read_block(workspace: Path) -> str | None:
    """The block for `workspace` now (runs git twice), None when it is not a git work tree."""
    root = await trio.to_thread.run_sync(git_root, workspace)
    if root is None:
        return None
    listing = await _git(root, workspace, "config", "-z", "--get-regexp", r"^filter\.")
    status = await _git(root, workspace, *filters_off(listing or b""), "status", "-sb", "--ignore-submodules=all",
                        "--no-renames")
    return block(status.decode("utf-8", "replace")) if status is not None else None


class StatusCache:
    """The last block of each workspace and when it was read; one read at a time per
    workspace (a run that asks while another reads waits for that read)."""

    def __init__(self, read: Callable[[Path], Awaitable[str | None]] = read_block,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._read = read
        self._clock = clock
        self._kept: dict[str, tuple[float, str | None]] = {}
        self._locks: dict[str, trio.Lock] = {}

    async def get(self, workspace: Path) -> str | None:
        """The workspace's block, read again when the kept one is REFRESH_S old."""
        key = str(workspace)
        lock = self._locks.setdefault(key, trio.Lock())
        async with lock:
            kept = self._kept.get(key)
            now = self._clock()
            if kept is not None and now - kept[0] < REFRESH_S:
                return kept[1]
            text = await self._read(workspace)
            if len(self._kept) >= CACHE_MAX and key not in self._kept:
                oldest = min(self._kept, key=lambda k: self._kept[k][0])
                del self._kept[oldest]
                self._locks.pop(oldest, None)
            self._kept[key] = (self._clock(), text)
            return text


CACHE = StatusCache()
