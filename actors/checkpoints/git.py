"""The daemon's own git object store for one workspace, and the git commands run on it.

`git --git-dir=<data>/agent/checkpoints/<workspace-id>.git --work-tree=<workspace>`, with
an index file of its own inside that folder: the person's `.git` is never read or
written. Git is run as a trio process (never blocking the loop), with no system or
global configuration (no filters, no line-ending conversion: files are kept byte for
byte) and no hooks.

A snapshot lists what changed since the last one from the index's stat information
(`ls-files -o -m -d --exclude-standard`: the workspace's .gitignore files and the
unentered folders of the search tools, written to the store's info/exclude), skips
files over MAX_FILE_BYTES (named in the checkpoint as not restorable), updates only
those paths in the index and writes the tree (the index is split, so each write is
of the entries changed, not of all of them): on a workspace of 20,000 files that
changed in three places it takes about 100 ms on a loaded machine, mostly the two
listings' lstat of every file (ops/bench/checkpoints.py).
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

import attrs
import trio

from actors.tools.globs import UNENTERED_DIRS

# Files larger than this are not kept (a checkpoint names them as not restorable): a
# snapshot store must not grow by every disk image or dataset that lands in a folder.
MAX_FILE_BYTES = 2 * 1024 * 1024
# Of the files skipped for size, at most this many are named in a checkpoint.
MAX_SKIPPED_NAMED = 200
GIT_TIMEOUT_S = 120.0
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

_CONFIG = (
    "-c", "core.autocrlf=false", "-c", "core.safecrlf=false", "-c", "core.fileMode=true",
    "-c", "core.symlinks=true", "-c", "core.quotePath=false", "-c", "core.hooksPath=/dev/null",
    "-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "core.bigFileThreshold=1m",
    "-c", "user.name=bmoe-daemon", "-c", "user.email=bmoe-daemon@localhost",
    # A split index: update-index and write-tree rewrite a small file of the entries
    # changed since, not the whole index (1.7 MB for 20,000 files) each time; the shared
    # part a new one replaces is removed at once (only this store's index uses it).
    "-c", "core.splitIndex=true", "-c", "splitIndex.sharedIndexExpire=now",
)


class GitFailed(Exception):
    """A git command failed or git is not installed; the text says which and why."""


@attrs.frozen
class Snapshot:
    """A tree of the workspace as it was, and the files left out of it for their size."""

    tree: str
    skipped: tuple[str, ...] = ()


def _environment(index: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_INDEX_FILE=str(index),
        GIT_TERMINAL_PROMPT="0", GIT_LITERAL_PATHSPECS="1", LC_ALL="C",
        GIT_AUTHOR_NAME="bmoe-daemon", GIT_AUTHOR_EMAIL="bmoe-daemon@localhost",
        GIT_COMMITTER_NAME="bmoe-daemon", GIT_COMMITTER_EMAIL="bmoe-daemon@localhost",
    )
    return env


class GitStore:
    """One workspace's store. Not safe for two snapshots at once (they share the index):
    the caller (store.py) holds the workspace's lock around each."""

    def __init__(self, git_dir: Path, work_tree: Path) -> None:
        self.git_dir = git_dir
        self.work_tree = work_tree
        self.index = git_dir / "bmoe-index"
        self._env = _environment(self.index)

    async def git(self, *args: str, stdin: bytes | None = None, check: bool = True) -> bytes:
        """Run one git command on the store; its stdout. GitFailed when it fails (or
        git is missing). Cancelled: the process is killed."""
        cmd = ["git", f"--git-dir={self.git_dir}", f"--work-tree={self.work_tree}", *_CONFIG, *args]
        try:
            with trio.fail_after(GIT_TIMEOUT_S):
                proc = await trio.run_process(cmd, stdin=stdin or b"", capture_stdout=True, capture_stderr=True,
                                              check=False, cwd=str(self.work_tree), env=self._env)
        except FileNotFoundError:
            if not self.work_tree.is_dir():
                raise GitFailed(f"the workspace folder {self.work_tree} is not there") from None
            raise GitFailed("git is not installed (the checkpoints need it on the PATH)") from None
        except trio.TooSlowError:
            raise GitFailed(f"git {args[0]} took longer than {GIT_TIMEOUT_S:.0f} s") from None
        except OSError as exc:
            raise GitFailed(f"git could not run: {exc}") from None
        if check and proc.returncode != 0:
            err = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise GitFailed(f"git {args[0]} failed: {err[-1] if err else proc.returncode}")
        return bytes(proc.stdout)

    async def ensure(self) -> None:
        """Make the store if it is not there yet (an empty bare repository). It is made
        whole beside its place and renamed into it, so a store whose HEAD is there is a
        whole one: another conversation of the workspace reading it while it is made
        (its actor's start) finds none or all of it, never half."""
        if (self.git_dir / "HEAD").exists():
            return
        await trio.to_thread.run_sync(lambda: self.git_dir.parent.mkdir(parents=True, exist_ok=True))
        tmp = self.git_dir.with_name(f".{self.git_dir.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        cmd = ["git", *_CONFIG, "init", "--bare", "-q", str(tmp)]
        try:
            await trio.run_process(cmd, capture_stdout=True, capture_stderr=True, env=self._env)
            excludes = "".join(f"{name}/\n" for name in sorted(UNENTERED_DIRS))
            await trio.to_thread.run_sync(_write_excludes, tmp, excludes)
            await trio.to_thread.run_sync(_rename_into_place, tmp, self.git_dir)
        except FileNotFoundError:
            raise GitFailed("git is not installed (the checkpoints need it on the PATH)") from None
        except Exception as exc:  # CalledProcessError, OSError
            raise GitFailed(f"the checkpoint store could not be made: {exc}") from None
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(lambda: shutil.rmtree(tmp, ignore_errors=True))

    async def snapshot(self, *, only: Sequence[str] | None = None, still_skipped: Sequence[str] = ()) -> Snapshot:
        """The workspace's tree now (its objects written to the store).

        `only`: the caller knows that nothing but these paths changed since the last
        snapshot (a rewind, which wrote them itself): they are taken as they are now
        without listing the workspace, and `still_skipped` (the files the last
        snapshot skipped for size that are still there) is named as skipped."""
        await self.ensure()
        listed: dict[str, bool] = {}  # path -> in the index already
        if only is not None:
            listed = dict.fromkeys(only, True)
        else:
            # Two listings at once: each alone is a third of the cost of one asking for both.
            found: dict[str, bytes] = {}

            async def listing(name: str, *flags: str) -> None:
                found[name] = await self.git("ls-files", "-z", *flags)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(listing, "tracked", "-m", "-d")
                nursery.start_soon(listing, "new", "-o", "--exclude-standard")
            for name, tracked in (("new", False), ("tracked", True)):
                for rel in found[name].decode("utf-8", "surrogateescape").split("\0"):
                    if rel:
                        listed[rel] = tracked
        update, drop, skipped = await trio.to_thread.run_sync(_sort_by_size, self.work_tree, listed)
        if only is not None:
            skipped = sorted(set(skipped) | set(still_skipped))
        if update:
            await self.git("update-index", "-z", "--add", "--remove", "--stdin", stdin=_nul(update))
        if drop:
            await self.git("update-index", "-z", "--force-remove", "--stdin", stdin=_nul(drop))
        tree = (await self.git("write-tree")).decode().strip()
        return Snapshot(tree, tuple(skipped[:MAX_SKIPPED_NAMED]))


def _nul(paths: Sequence[str]) -> bytes:
    return b"".join(p.encode("utf-8", "surrogateescape") + b"\0" for p in paths)


def _sort_by_size(root: Path, paths: dict[str, bool]) -> tuple[list[str], list[str], list[str]]:
    """Of the paths git listed: the ones to update in the index, the ones to drop from it
    (they grew past MAX_FILE_BYTES, or became something git cannot keep), and the ones
    skipped for size."""
    update: list[str] = []
    drop: list[str] = []
    skipped: list[str] = []
    for rel, tracked in sorted(paths.items()):
        if rel.endswith("/"):  # a folder that is a repository of its own: not descended into
            continue
        try:
            st = os.lstat(root / rel)
        except OSError:
            update.append(rel)  # gone: --remove takes it out
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size > MAX_FILE_BYTES:
            skipped.append(rel)
            if tracked:
                drop.append(rel)
        elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            update.append(rel)
        elif tracked:
            drop.append(rel)
    return update, drop, skipped


def _write_excludes(git_dir: Path, text: str) -> None:
    info = git_dir / "info"
    info.mkdir(exist_ok=True)
    (info / "exclude").write_text("# the folders the search tools never enter\n" + text, encoding="utf-8")


def _rename_into_place(made: Path, place: Path) -> None:
    """`made` renamed to `place`; when another store got there first (made at the same
    time), that one is kept and `made` is left for the caller to remove."""
    try:
        os.rename(made, place)
    except OSError:
        if not (place / "HEAD").exists():
            raise
