"""Putting files back from a checkpoint: written whole (a temporary file in the same
folder, then renamed over), with the mode the tree kept (executable or not, or a
symbolic link); a file the earlier tree did not have is removed, and the folders it
leaves empty. Runs in a worker thread (the caller's)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

from actors.fs.atomic import current_umask

EXECUTABLE = "100755"
LINK = "120000"


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


def write(root: Path, rel: str, mode: str, data: bytes) -> None:
    """Put a file back as the tree kept it."""
    path = _inside(root, rel)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink():
            raise RestoreFailed(f"{rel}: a folder stands where the file was; move it away first")
        tmp = path.with_name(f".{path.name}.bmoe-restore")
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        if mode == LINK:
            os.symlink(os.fsdecode(data), tmp)
        else:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o777 if mode == EXECUTABLE else 0o666)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            # The umask's bits, with the executable bits only where the tree had them.
            umask = current_umask()
            os.chmod(tmp, (0o777 if mode == EXECUTABLE else 0o666) & ~umask)
        os.replace(tmp, path)
    except RestoreFailed:
        raise
    except OSError as exc:
        raise RestoreFailed(f"{rel} could not be written: {exc.strerror or exc}") from None


def apply(root: Path, writes: Mapping[str, tuple[str, bytes]], removals: list[str]) -> None:
    """Write and remove, in one pass (a worker thread's)."""
    for rel in removals:
        remove(root, rel)
    for rel, (mode, data) in sorted(writes.items()):
        write(root, rel, mode, data)
