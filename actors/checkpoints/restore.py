"""Putting files back from a checkpoint: written whole (a temporary file in the same
folder, then renamed over), with the mode the tree kept (executable or not, or a
symbolic link); a file the earlier tree did not have is removed, and the folders it
leaves empty. The files are written in batches (all written, then all synced, then
all renamed: a crash leaves each file whole, old or new; the syncs are waited on
together, so the journal commits many files in one flush of the disk), and each
folder touched is synced once at the end. Runs in a worker thread (the caller's)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from actors.fs.atomic import current_umask

EXECUTABLE = "100755"
LINK = "120000"
# Files written (and open) at once before they are synced and renamed.
WRITE_BATCH = 128
# Syncs waited on at once: the filesystem's journal then commits them together (one
# flush of the disk for many files) instead of one flush per file.
SYNC_THREADS = 16


class RestoreFailed(OSError):
    """A file could not be put back; the text names it."""


def _inside(root: Path, rel: str) -> Path:
    path = root / rel
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        raise RestoreFailed(f"{rel!r} is not a path inside the workspace")
    # A parent that is a link could lead outside: write through real folders only.
    parent = root
    for part in parts[:-1]:
        parent = parent / part
        if parent.is_symlink():
            raise RestoreFailed(f"{rel}: {parent.relative_to(root)} is a link; it is not written through")
    return path


def remove(root: Path, rel: str) -> None:
    """Remove a file (or link) the earlier tree did not have, then its folders left empty."""
    path = _inside(root, rel)
    try:
        if path.is_dir() and not path.is_symlink():
            return  # a folder now stands there: left alone
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise RestoreFailed(f"{rel} could not be removed: {exc.strerror or exc}") from None
    parent = path.parent
    while parent != root:
        try:
            parent.rmdir()
        except OSError:
            break
        parent = parent.parent


def _stage(root: Path, rel: str, mode: str, data: bytes) -> tuple[Path, Path, int | None]:
    """Write a file's content to a temporary file beside it, not yet synced: (the
    temporary file, the file, its open descriptor; None for a link)."""
    path = _inside(root, rel)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():
        raise RestoreFailed(f"{rel}: a folder stands where the file was; move it away first")
    tmp = path.with_name(f".{path.name}.bmoe-restore")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    if mode == LINK:
        os.symlink(os.fsdecode(data), tmp)
        return tmp, path, None
    perms = 0o777 if mode == EXECUTABLE else 0o666
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, perms)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        # The umask's bits, with the executable bits only where the tree had them.
        os.fchmod(fd, perms & ~current_umask())
    except BaseException:
        os.close(fd)
        raise
    return tmp, path, fd


def _sync_folders(folders: Iterable[Path]) -> None:
    """Sync each folder (its renames and removals), together (see SYNC_THREADS)."""
    fds = []
    try:
        for folder in sorted(set(folders)):
            with contextlib.suppress(OSError):  # gone (emptied and removed)
                fds.append(os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)))

        def sync(fd: int) -> None:
            with contextlib.suppress(OSError):  # a filesystem that cannot sync a folder: the files are synced
                os.fsync(fd)

        _each(sync, fds)
    finally:
        for fd in fds:
            os.close(fd)


def _each(fn: Callable[[int], None], fds: Iterable[int]) -> None:
    """fn(fd) for every descriptor, SYNC_THREADS at a time; the first error raised."""
    todo = list(fds)
    if len(todo) <= 1:
        for fd in todo:
            fn(fd)
        return
    with ThreadPoolExecutor(max_workers=min(SYNC_THREADS, len(todo)), thread_name_prefix="bmoe-sync") as pool:
        for _ in pool.map(fn, todo):
            pass


def _write_batch(root: Path, batch: list[tuple[str, tuple[str, bytes]]], folders: set[Path]) -> None:
    """Put a batch of files back: every one written to its temporary file first, then
    all synced together (SYNC_THREADS), then each renamed over its file. A file
    renamed is whole; a failure before the renames leaves the batch's files as they
    were and no temporary file behind."""
    staged: list[tuple[Path, Path, int | None]] = []
    rel = ""
    try:
        try:
            for rel, (mode, data) in batch:
                staged.append(_stage(root, rel, mode, data))
            rel = ""
            _each(os.fsync, [fd for _tmp, _path, fd in staged if fd is not None])
        finally:
            for _tmp, _path, fd in staged:
                if fd is not None:
                    os.close(fd)
        for tmp, path, _fd in staged:
            rel = str(path.relative_to(root))
            os.replace(tmp, path)
            folders.add(path.parent)
        staged.clear()
    except RestoreFailed:
        raise
    except OSError as exc:
        what = f"{rel} could not be written" if rel else "the files could not be written"
        raise RestoreFailed(f"{what}: {exc.strerror or exc}") from None
    finally:
        for tmp, _path, _fd in staged:
            with contextlib.suppress(OSError):
                tmp.unlink()


def apply(root: Path, writes: Mapping[str, tuple[str, bytes]], removals: list[str]) -> None:
    """Remove, then write, in one pass (a worker thread's): the files in batches of
    WRITE_BATCH (see _write_batch), then each folder touched synced once, so the
    renames and removals are on disk when it returns."""
    folders: set[Path] = set()
    for rel in removals:
        remove(root, rel)
        folders.add((root / rel).parent)
    ordered = sorted(writes.items())
    for start in range(0, len(ordered), WRITE_BATCH):
        _write_batch(root, ordered[start:start + WRITE_BATCH], folders)
    _sync_folders(folders)
