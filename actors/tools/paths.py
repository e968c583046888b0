"""Confinement: every path a tool touches resolves inside the workspace.

A path is joined to the workspace, then resolved after `..` and symbolic links; the
result must be the workspace or lie under it. `~` and absolute paths elsewhere are
refused, and so is a dangling link anywhere on the way, since writing through it would
create its target wherever it points. A refusal is a `PathRefused` whose text the
model reads; it never quotes anything from outside the workspace.
"""

from __future__ import annotations

import os
from pathlib import Path

from actors.tools.registry import ToolError

MAX_PATH_CHARS = 4096


class PathRefused(ToolError):
    """A path that leaves the workspace, or cannot be used safely."""


def _inside(root: str, real: str) -> bool:
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
    if not _inside(root, real):
        raise PathRefused(f"{raw} is outside the workspace; only paths inside it can be used.")
    return Path(real)


def _refuse_dangling_links(root: str, raw: str, joined: str) -> None:
    # Walk the components from the workspace down; a link whose target does not exist
    # is refused, wherever it points. Components outside the workspace are not probed.
    if not _inside(root, joined):
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
