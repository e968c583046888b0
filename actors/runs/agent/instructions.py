"""A project's own instruction files: `CLAUDE.md`, `.claude/CLAUDE.md` and `AGENTS.md`.

At each message the prompt carries those at the workspace's root (in that order, each
under a heading with its path), then those of each folder between the workspace and
its git root, the nearest first (`../AGENTS.md`, ...: a workspace that is a part of a
repository gets the repository's), and an index of the nested ones (paths only, at
most INDEX_DEPTH folders deep; `.git`, `node_modules`, virtual environments and
dot-folders are not walked). When a file tool first touches a path under a folder with
its own instruction file, that file's text comes back with the tool's result, once per
conversation. A file whose first line is `<!-- bmoe:noload -->` is left out of both.

Every read goes through the workspace's confinement (actors/fs/paths.py
`read_workspace_text`: a link out is not followed, a FIFO is not waited on); a folder
above the workspace is confined the same way to the git root (a link there that leads
out of the repository is not followed). Each file at most FILE_BYTES, all of a prompt at
most TOTAL_BYTES. Blocking: call in a thread.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import attrs

from actors.fs.paths import read_workspace_text

NAMES = ("CLAUDE.md", "AGENTS.md")  # a nested folder's, in the order they are given
ROOT_NAMES = ("CLAUDE.md", ".claude/CLAUDE.md", "AGENTS.md")  # the workspace's and each folder's above it
NOLOAD = "<!-- bmoe:noload -->"
FILE_BYTES = 8 * 1024
TOTAL_BYTES = 16 * 1024
INDEX_DEPTH = 5
UP_MAX = 32  # folders looked at above the workspace for its git root
INDEX_MAX = 50  # paths listed
WALK_MAX_ENTRIES = 20_000
WALK_MAX_S = 0.2
SKIP_FOLDERS = frozenset({"node_modules", "venv", "env", "__pycache__", "build", "dist", "target"})


@attrs.frozen
class Instruction:
    path: str  # workspace-relative, with `/`
    text: str


def read(workspace: Path, rel: str, limit: int = FILE_BYTES) -> Instruction | None:
    """The file's text, or None: absent, out of the workspace, not a regular file,
    empty, or marked noload."""
    text = read_workspace_text(workspace, rel, limit)
    if text is None:
        return None
    text = text.strip()
    if not text or text.splitlines()[0].strip() == NOLOAD:
        return None
    return Instruction(rel, text)


def git_root(workspace: Path) -> Path | None:
    """The folder holding the `.git` (a folder, or a file of a linked work tree) of the
    repository the workspace is in: the workspace itself or a folder above it (at most
    UP_MAX up); None when it is in none."""
    here = Path(os.path.realpath(workspace))
    for _ in range(UP_MAX + 1):
        if os.path.lexists(here / ".git"):
            return here
        if here.parent == here:
            return None
        here = here.parent
    return None


def folders_up(workspace: Path) -> tuple[Path, list[str]]:
    """The area a file above the workspace must stay in (its git root, else the
    workspace) and, relative to it, the folders between the workspace and it, the
    nearest first ("" is the git root itself)."""
    ws = Path(os.path.realpath(workspace))
    root = git_root(ws)
    if root is None or root == ws:
        return ws, []
    rel = ws.relative_to(root).parts
    return root, ["/".join(rel[:i]) for i in range(len(rel) - 1, -1, -1)]


def root_files(workspace: Path) -> list[Instruction]:
    """The workspace's instruction files, then those of the folders up to its git root
    (nearest first), within TOTAL_BYTES together. A path is relative to the workspace
    (`../AGENTS.md`)."""
    ws = Path(os.path.realpath(workspace))
    area, ups = folders_up(ws)
    places: list[tuple[Path, str, str]] = [(ws, name, name) for name in ROOT_NAMES]
    for folder in ups:
        shown = os.path.relpath(area / folder, ws).replace(os.sep, "/")
        places += [(area, f"{folder}/{name}" if folder else name, f"{shown}/{name}") for name in ROOT_NAMES]
    out: list[Instruction] = []
    room = TOTAL_BYTES
    for confined_to, rel, shown in places:
        found = read(confined_to, rel, min(FILE_BYTES, room))
        if found is not None:
            out.append(Instruction(shown, found.text))
            room -= len(found.text.encode("utf-8"))
            if room <= 0:
                break
    return out


def _skipped(name: str) -> bool:
    return name.startswith(".") or name in SKIP_FOLDERS


def nested_index(workspace: Path) -> list[str]:
    """The nested instruction files' paths (not the root's), bounded in depth, entries
    and time; links to folders are not followed."""
    root = str(workspace)
    found: list[str] = []
    deadline = time.monotonic() + WALK_MAX_S
    seen = 0
    stack: list[tuple[str, int]] = [("", 0)]
    while stack and len(found) < INDEX_MAX:
        rel, depth = stack.pop()
        try:
            with os.scandir(os.path.join(root, rel) if rel else root) as entries:
                listed = sorted(entries, key=lambda e: e.name)
        except OSError:
            continue
        for entry in listed:
            seen += 1
            if seen > WALK_MAX_ENTRIES or time.monotonic() > deadline:
                return found
            path = f"{rel}/{entry.name}" if rel else entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < INDEX_DEPTH and not _skipped(entry.name):
                        stack.append((path, depth + 1))
                elif rel and entry.name in NAMES and entry.is_file(follow_symlinks=False):
                    if read(workspace, path) is not None:
                        found.append(path)
            except OSError:
                continue
    return sorted(found)


def prompt_block(files: list[Instruction], index: list[str]) -> str | None:
    """What the system prompt carries of the project's instructions."""
    if not files and not index:
        return None
    parts = [f"## {f.path}\n{f.text}" for f in files]
    if index:
        parts.append(
            "Folders with their own instructions (they are given to you when you first work there): "
            + ", ".join(index)
        )
    return "The project's instructions:\n\n" + "\n\n".join(parts)


def candidates(rel: str) -> set[str]:
    """The nested instruction files that would speak for `rel` (a path a file tool
    touched): those of every folder above it, and its own if it is a folder. Pure."""
    parts = [p for p in rel.replace(os.sep, "/").split("/") if p and p != "."]
    if not parts or ".." in parts:
        return set()
    folders = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    return {f"{folder}/{name}" for folder in folders for name in NAMES}


def read_all(workspace: Path, paths: list[str]) -> list[Instruction]:
    """The instruction files among `paths` that can be read (see `read`)."""
    return [found for path in paths if (found := read(workspace, path)) is not None]


def for_path(workspace: Path, rel: str, delivered: set[str]) -> list[Instruction]:
    """The nested instruction files of the folders above `rel` (a path a file tool
    touched), nearest last, not yet `delivered`; the root's are in the prompt already."""
    return read_all(workspace, sorted(candidates(rel) - delivered, key=len))
