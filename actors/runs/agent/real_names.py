"""Real names for a small model: the workspace's files and the switched-on skills.

A small model copies placeholders (`read_file {"path": "path.file"}`) because nothing
shows it the names that exist. Where an argument must name something that exists and
the set is small, a local model's grammar offers exactly those names
(TurnInput.names; actors/model/backends/generic_grammar.py writes them as an `enum`), and
the system prompt carries a short index of the workspace's files.

A tool says which of its arguments name an existing file (`existing_file_args`, as
read_file's and edit_file's `path`); write_file's path stays free text, since a new
name is what it is for. The files are those a walk of the workspace finds
(actors/tools/globs.py `walk`: dependency, cache and build folders listed but not
entered, links not followed), at most MAX_NAMED_FILES: a workspace with more is left
free, as the set would make a grammar too large to be worth it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from actors.tools.globs import walk

MAX_NAMED_FILES = 500
INDEX_FILES = 40  # paths the prompt's index shows at most
INDEX_CHARS = 1500


def workspace_files(root: Path, limit: int = MAX_NAMED_FILES) -> tuple[str, ...] | None:
    """The workspace's files (relative, '/'-separated), shallow ones first then by
    name; None when there are more than `limit` or the folder cannot be read.
    Blocking: call it in a thread."""
    found: list[str] = []
    try:
        for entry in walk(root, sizes=False):
            if entry.is_file and not entry.is_link:
                found.append(entry.path)
                if len(found) > limit:
                    return None
    except OSError:
        return None
    return tuple(sorted(found, key=lambda rel: (rel.count("/"), rel)))


def prompt_index(files: tuple[str, ...]) -> str | None:
    """The prompt's line of the workspace's files: the first INDEX_FILES of them
    within INDEX_CHARS, and how many more there are; None for no files."""
    if not files:
        return None
    shown: list[str] = []
    size = 0
    for rel in files[:INDEX_FILES]:
        size += len(rel) + 2
        if size > INDEX_CHARS:
            break
        shown.append(rel)
    more = len(files) - len(shown)
    tail = f" (and {more} more)" if more else ""
    return f"Files in the workspace: {', '.join(shown)}{tail}."


def call_names(
    tools: Iterable[Any], files: tuple[str, ...] | None, skills: Iterable[str] = (),
) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """(tool, argument, the only values it may take) for each offered tool whose
    argument names an existing file (given the workspace's `files`, when it has any
    and not too many) or a skill (the switched-on ones)."""
    out: list[tuple[str, str, tuple[str, ...]]] = []
    skill_names = tuple(sorted(skills))
    for tool in tools:
        for arg in getattr(tool, "existing_file_args", ()):
            if files:
                out.append((tool.name, arg, files))
        for arg in getattr(tool, "skill_args", ()):
            if skill_names:
                out.append((tool.name, arg, skill_names))
    return tuple(out)
