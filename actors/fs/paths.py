"""Confinement: every path a tool touches resolves inside the workspace.

A path is joined to the workspace, then resolved after `..` and symbolic links; the
result must be the workspace or lie under it. `~` and absolute paths elsewhere are
refused, and so is a dangling link anywhere on the way, since writing through it would
create its target wherever it points. A refusal is a `PathRefused` whose text the
model reads; it never quotes anything from outside the workspace.

Reading is confined the same way, and only ever reads a regular file: `open_regular`
opens without following a link in the last component (a file swapped for a link after
`resolve` is not read through it) and without waiting (a FIFO is never waited on),
then refuses anything but a regular file (a FIFO, a device, a socket, a folder).
`read_workspace_text` is the one way the daemon reads a workspace file on its own
account (AGENTS.md, workspace skills): confined, regular files only, a bounded amount.
"""

from __future__ import annotations

import codecs
import os
import stat
from pathlib import Path

from actors.errors import ToolError

MAX_PATH_CHARS = 4096


class PathRefused(ToolError):
    """A path that leaves the workspace, or cannot be used safely."""


_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOCTTY", 0)
)


class NotRegularFile(OSError):
    """A path that names a folder, a FIFO, a device or a socket, not a regular file;
    `kind` says which, in words ("a folder", "a FIFO", ...)."""

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{path} is {kind}, not a regular file")
        self.kind = kind

    @property
    def is_folder(self) -> bool:
        return self.kind == "a folder"


def file_kind(mode: int) -> str:
    """What a file of this `st_mode` is, in words."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO (a named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a regular file" if stat.S_ISREG(mode) else "a special file"


def is_inside(root: str, real: str) -> bool:
    """Whether the real path `real` is the folder `root` or lies under it."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)



def resolve(workspace: Path, user_path: str | None, *, default: str = ".") -> Path:
    """The real path of `user_path` inside `workspace`, or PathRefused.

    The workspace is expected canonical (it is made so when added). The target need not
    exist; if it does not, its nearest existing folder must be inside.
    """
    raw = default if user_path is None or user_path == "" else user_path
    if not isinstance(raw, str):
        raise PathRefused("path must be a string.")
    if "\x00" in raw or len(raw) > MAX_PATH_CHARS:
        raise PathRefused("That path cannot be used: it is too long or holds a NUL character.")
    if raw.startswith("~"):
        raise PathRefused(f"{raw} is outside the workspace: use a path relative to the workspace.")
    root = os.path.realpath(workspace)
    joined = os.path.normpath(os.path.join(root, raw))
    _refuse_dangling_links(root, raw, joined)
    real = os.path.realpath(joined)
    if not is_inside(root, real):
        raise PathRefused(f"{raw} is outside the workspace; only paths inside it can be used.")
    return Path(real)


def _refuse_dangling_links(root: str, raw: str, joined: str) -> None:
    # Walk the components from the workspace down; a link whose target does not exist
    # is refused, wherever it points. Components outside the workspace are not probed.
    if not is_inside(root, joined):
        # An absolute path elsewhere or one that climbs out with `..`: realpath decides
        # below; don't look at what is out there.
        return
    rel = os.path.relpath(joined, root)
    if rel == ".":
        return
    current = root
    for part in rel.split(os.sep):
        current = os.path.join(current, part)
        if os.path.islink(current) and not os.path.exists(current):
            raise PathRefused(f"{raw} goes through a link whose target does not exist; it was not used.")
        if not os.path.lexists(current):
            return


def relative(workspace: Path, path: Path) -> str:
    """`path` relative to the workspace, with `/` separators ("." for the workspace)."""
    rel = os.path.relpath(path, os.path.realpath(workspace))
    return rel.replace(os.sep, "/")


def open_regular(path: Path | str, *, follow: bool = False) -> int:
    """A file descriptor of the regular file at `path`, opened read-only without waiting.

    Without `follow`, a link in the last component is not followed (OSError ELOOP).
    Raises FileNotFoundError, NotRegularFile (a FIFO, a device, a socket, a folder) or
    another OSError; never blocks on a FIFO or a device."""
    flags = _OPEN_FLAGS & ~(getattr(os, "O_NOFOLLOW", 0) if follow else 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(os.fspath(path), file_kind(st.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_fd(fd: int, limit: int) -> bytes:
    """At most `limit` bytes from `fd`, from where it stands (short reads gathered)."""
    parts: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1024 * 1024))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def read_regular(path: Path | str, limit: int, *, follow: bool = False) -> bytes:
    """At most `limit` bytes of the regular file at `path`; raises as `open_regular`."""
    fd = open_regular(path, follow=follow)
    try:
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_workspace_bytes(workspace: Path, rel: str, limit: int) -> bytes | None:
    """At most `limit` bytes of the file `rel` of the workspace, read on the daemon's own
    account; None when it is absent, leads out of the workspace (through a link, at any
    depth), is not a regular file (a FIFO, a device, a folder) or cannot be read. Reads
    no more than `limit` bytes, however large the file (a sparse 10 GB one included),
    and never waits on a FIFO."""
    try:
        real = resolve(workspace, rel)
        return read_regular(real, limit)
    except (PathRefused, OSError):
        return None


def read_workspace_text(workspace: Path, rel: str, limit: int) -> str | None:
    """`read_workspace_bytes` as UTF-8 text: a character cut by the limit is left out,
    a byte that is not UTF-8 becomes U+FFFD."""
    raw = read_workspace_bytes(workspace, rel, limit)
    if raw is None:
        return None
    return codecs.getincrementaldecoder("utf-8")(errors="replace").decode(raw, final=False)
