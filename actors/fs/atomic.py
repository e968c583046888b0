"""Writing a file whole: the one way every part of the daemon replaces a file.

The data goes to a temporary file in the same folder, which is renamed over the
target, so a reader (or a crash of this process) sees the old version or the new one,
never a mix. Durable writes fsync the file before the rename and the folder after it.
A file read as a journal of whole lines may be appended to instead (`append_whole`).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path


def read_own_file(path: Path, limit: int) -> bytes:
    """A file the daemon keeps in its data folder (or a key file the person named), at
    most `limit` bytes: a link is followed (a person may keep their settings elsewhere),
    but a FIFO or a device is refused at once (never waited on), and a larger file is a
    ValueError, not a read of gigabytes. Raises FileNotFoundError as open() does."""
    from actors.fs.paths import read_regular

    data = read_regular(path, limit + 1, follow=True)
    if len(data) > limit:
        raise ValueError(f"{path} is larger than {limit} bytes, more than it can be")
    return data


def current_umask() -> int:
    """The process's umask, read without changing it (Linux says it in /proc); else
    set and put back, which another thread creating a file at that instant could see."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def write_atomic(
    path: Path,
    data: bytes,
    *,
    durable: bool = True,
    mode: int | None = None,
    keep_mode: bool = False,
    suffix: str = ".tmp",
) -> None:
    """Replace `path` with `data`, whole.

    `mode`: the new file's exact permission bits, set on the temporary file before any
    byte is written (a private file is never readable by others, even for a moment).
    `keep_mode`: the new file keeps the mode of the one it replaces (a workspace file);
    with none to replace, it gets what a program creating it would give it: 0666 less
    the umask (the temporary file's own mode is private, for the daemon's secrets).
    `durable=False` skips both fsyncs: still whole for every reader and across a crash
    of this process, but a power cut may lose the new version (interim saves only).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    if keep_mode and mode is None:
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~current_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=suffix, dir=path.parent)
    try:
        try:
            if mode is not None:
                os.fchmod(fd, mode)
            write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    if durable:
        _sync_folder(path.parent)


def append_whole(
    path: Path,
    data: bytes,
    *,
    expect: Callable[[os.stat_result], bool],
    durable: bool = True,
    sync_folder: bool = False,
) -> os.stat_result | None:
    """Append `data` to the regular file at `path` (not through a link), whole or not
    at all, and its status after; None, with nothing written, when there is no such
    file or `expect` refuses its status before the write (it is not the file the
    caller wrote last).

    A write that fails part way (a full disk) cuts the file back to where it ended
    before and raises; if even that fails the tail stays, and a reader that takes only
    whole lines (actors/record/journal.py) reads the file as it was. A crash part way
    leaves that same torn tail. `durable`: fsync the file's data (what any earlier
    write left unsynced too) before returning, and with `sync_folder` the folder as
    well (the file's name came from a rename that was not synced). Empty `data`
    writes nothing and only syncs."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link where the file was: written whole instead
            return None
        raise
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode) or not expect(before):
            return None
        if data:
            try:
                write_all(fd, data)
            except BaseException:
                try:
                    os.ftruncate(fd, before.st_size)
                except OSError:
                    pass
                raise
        if durable:
            _sync_data(fd)
        after = os.fstat(fd)
    finally:
        os.close(fd)
    if durable and sync_folder:
        _sync_folder(path.parent)
    return after


def _sync_data(fd: int) -> None:
    # fdatasync flushes the new size with the data; only the times may wait.
    sync = getattr(os, "fdatasync", os.fsync)
    sync(fd)


def _sync_folder(folder: Path) -> None:
    dir_fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
