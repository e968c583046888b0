"""The file system half of the read-only check: where a command's words and walks lead.

The classifier (actors/tools/classify.py) reads the text; this module looks at the
workspace before a command the classifier lets through runs without a card:

- every word that names an existing path must resolve inside the workspace
  (actors/fs/paths.py `resolve`): the word itself, a value after `=`, every tail of
  a short-option cluster for the programs that take a path glued to an option
  (`file -mlink`), and each match of an unquoted glob, expanded as /bin/sh would and
  never to fewer names (a bracket expression counts as any name: `[[:alpha:]]` is a
  class to the shell and a set of letters to Python's `glob`);
- each walk the classifier names (`link_walk`) is done: under every folder the stage
  names (and the workspace, for a program that walks `.` when given no folder), a link
  that leads out asks, dangling or not (its target may exist by the time the command
  runs); a link to a folder inside is walked into when the program would be.

Bounded: the glob expansion and the walks of one command see at most MAX_WALK_ENTRIES
entries in MAX_WALK_S seconds together, and past either the command asks; the first
MIN_WALK_ENTRIES are looked at whatever the clock says, so a small workspace on a
machine too busy to run the check at once is not asked about for that alone. The check
runs in its caller's thread (a run asks `is_change` between two awaits), hence the
small budget. A folder that cannot be read is skipped: the command, run as the same
user, cannot read it either. What it cannot see: a link created after the check and
before the command runs, and a hard link to a file outside (indistinguishable from
the file itself).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import attrs

from actors.fs.paths import PathRefused, is_inside, resolve
from actors.process import child_environment
from actors.tools.classify import PROGRAMS, LinkWalk, link_walk
from actors.tools.shell_words import NotPlain, Word, split_pipeline

MAX_WALK_ENTRIES = 20_000
MIN_WALK_ENTRIES = 1_000
MAX_WALK_S = 0.25
RG_CONFIG_ENV = "RIPGREP_CONFIG_PATH"

_STAR, _ANY = object(), object()


class _OverBudget(Exception):
    pass


@attrs.define
class _Budget:
    entries: int
    deadline: float
    spent: int = 0

    def spend(self, n: int) -> None:
        self.spent += n
        if self.spent > self.entries:
            raise _OverBudget
        if self.spent > MIN_WALK_ENTRIES and time.monotonic() > self.deadline:
            raise _OverBudget


def why_leaves(command: str, workspace: Path) -> str | None:
    """Why running `command` in `workspace` may read outside it, or None when every path
    it names and every walk its programs make stays inside. Never raises."""
    try:
        stages = split_pipeline(command)
    except NotPlain as exc:
        return str(exc)
    root = os.path.realpath(workspace)
    budget = _Budget(MAX_WALK_ENTRIES, time.monotonic() + MAX_WALK_S)
    try:
        for stage in stages:
            program = PROGRAMS.get(stage[0].text)
            glued = program is not None and program.glued_paths
            named: list[str] = []
            for word in stage[1:]:
                if program is not None and not program.paths and not word.globbed:
                    continue  # echo, printf, ...: the word is text; only the shell's glob reads a folder
                for candidate in _candidates(root, word, glued, budget):
                    if not os.path.lexists(os.path.join(root, candidate)):
                        continue
                    try:
                        resolve(Path(root), candidate)
                    except PathRefused:
                        return _leads_out(root, word.text, candidate)
                    named.append(candidate)
            walk = link_walk(stage)
            if walk is not None and walk.program == "rg" and child_environment().get(RG_CONFIG_ENV):
                # A config file may hold any option (--follow, --hidden): walk as if it did.
                walk = attrs.evolve(walk, depth="tree", skip_hidden=False)
            if walk is not None:
                why = _walks(root, walk, named, budget)
                if why is not None:
                    return why
    except _OverBudget:
        return (
            f"the folders are too large to check for links that lead out of the workspace "
            f"(more than {MAX_WALK_ENTRIES} entries or {MAX_WALK_S} s)"
        )
    return None


def why_read_leaves(command: object, workspace: Path) -> str | None:
    """Why a command the classifier calls a read is a change all the same: the path or
    the link through which it would read outside the workspace (`why_leaves`). None when
    it is not such a read (not a string, not read-only by its words, or it stays inside)."""
    from actors.tools.classify import is_read_only

    if not isinstance(command, str) or not is_read_only(command):
        return None
    return why_leaves(command, workspace)


# ---- the words ----


def _leads_out(root: str, written: str, candidate: str) -> str:
    """Why `candidate` (the word `written`, or one of its glob's matches) leads out, in
    names the workspace holds or the command wrote: the link inside the workspace it
    goes through, else the word as written. Never a name from outside (a glob's match
    beyond a link), so the reason may be shown to the model."""
    prefix = ""
    for part in candidate.split("/"):
        if not part or part == ".":
            continue
        prefix = _join(prefix, part)
        full = os.path.normpath(os.path.join(root, prefix))
        if not is_inside(root, full):
            break  # `..`: out as written
        if os.path.islink(full) and not is_inside(root, os.path.realpath(full)):
            return f"`{prefix}` is a link that leads out of the workspace"
    return f"`{written}` leads out of the workspace"


def _candidates(root: str, word: Word, glued: bool, budget: _Budget) -> list[str]:
    """Every path the word may name once the shell expanded it: see the module docstring."""
    text = word.text
    parts: list[tuple[str, int]] = [(text, 0)]
    if text.startswith("-") and "=" in text:
        at = text.index("=") + 1
        parts.append((text[at:], at))
    if glued and text.startswith("-") and not text.startswith("--"):
        parts.extend((text[at:], at) for at in range(2, len(text)))
    out: list[str] = []
    for part, offset in parts:
        if not part:
            continue
        globs = frozenset(g - offset for g in word.glob_at if g >= offset)
        out.extend(expand_glob(root, part, globs, budget) if globs else [part])
    return out


def expand_glob(root: str, text: str, globs: frozenset[int], budget: _Budget) -> list[str]:
    """The names `text` may expand to in `root` (relative), at least every one /bin/sh
    would give: `*` and `?` as the shell reads them, a bracket expression as any name,
    a leading `.` matched only by a literal one (POSIX)."""
    if text.startswith("/"):  # expanded from `/`, for resolve() to refuse what it gives
        return ["/" + p for p in expand_glob("/", text[1:], frozenset(g - 1 for g in globs if g), budget)]
    paths = [""]
    start = 0
    for component in text.split("/"):
        here = frozenset(g - start for g in globs if start <= g < start + len(component))
        start += len(component) + 1
        if not here:
            paths = [_join(p, component) for p in paths]
            continue
        pattern = _pattern(component, here)
        found: list[str] = []
        for p in paths:
            try:
                names = os.listdir(os.path.join(root, p) if p else root)
            except OSError:
                continue
            budget.spend(len(names) + 1)
            if 0 in here:  # a leading `.` is matched only by a literal one
                names = [n for n in names if not n.startswith(".")]
            else:
                names += [".", ".."]  # which the shell's readdir gives too: `.*` matches `..`
            found.extend(_join(p, n) for n in names if _matches(pattern, n))
        paths = found
    return paths


def _join(prefix: str, name: str) -> str:
    return f"{prefix}/{name}" if prefix else name


def _pattern(component: str, globs: frozenset[int]) -> list[object]:
    if any(component[g] == "[" for g in globs):
        return [_STAR]  # a bracket expression's classes and ranges: any name, to be sure
    return [_STAR if i in globs and c == "*" else _ANY if i in globs and c == "?" else c
            for i, c in enumerate(component)]


def _matches(pattern: list[object], name: str) -> bool:
    """`*`/`?` matching in O(len(pattern) * len(name)): the last star takes one more
    character at a time, never a backtracking search."""
    p = n = 0
    star, mark = -1, 0
    while n < len(name):
        if p < len(pattern) and (pattern[p] is _ANY or pattern[p] == name[n]):
            p, n = p + 1, n + 1
        elif p < len(pattern) and pattern[p] is _STAR:
            star, mark, p = p, n, p + 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            n = mark
        else:
            return False
    while p < len(pattern) and pattern[p] is _STAR:
        p += 1
    return p == len(pattern)


# ---- the walks ----


def _walks(root: str, walk: LinkWalk, named: list[str], budget: _Budget) -> str | None:
    starts = [os.path.realpath(os.path.join(root, p)) for p in named]
    if walk.dot:
        starts.append(root)
    seen: set[str] = set()
    for start in dict.fromkeys(starts):
        if os.path.isdir(start):
            why = _walk(root, start, walk, budget, seen)
            if why is not None:
                return why
    return None


def _walk(root: str, start: str, walk: LinkWalk, budget: _Budget, seen: set[str]) -> str | None:
    """The first link under `start` that the program would follow or read and that leads
    out, as a reason; None when there is none. `seen` holds the folders already walked.

    A `.git` folder the program would not walk otherwise is entered for its ignore file
    only (`info/exclude`), when `.git` is among the names it reads."""
    stack: list[tuple[str, bool, bool]] = [(start, False, False)]  # folder, in a .git, only its ignore file
    while stack:
        folder, in_git, git_only = stack.pop()
        if folder in seen:
            continue
        seen.add(folder)
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        budget.spend(len(entries) + 1)
        for entry in entries:
            name = entry.name
            hidden = walk.skip_hidden and name.startswith(".")
            git = in_git or name == ".git"
            if entry.is_symlink():
                followed = walk.depth is not None and not hidden and not git_only
                if not (followed or name in walk.reads or (in_git and ".git" in walk.reads)):
                    continue
                real = os.path.realpath(entry.path)
                if not is_inside(root, real):
                    rel = os.path.relpath(entry.path, root)
                    return f"`{rel}` is a link that leads out of the workspace; {walk.why}"
                if followed and walk.depth == "tree" and os.path.isdir(real):
                    stack.append((real, git, False))
                continue
            if walk.depth == "entries":
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if not is_dir:
                continue
            if git_only:
                if name == "info":
                    stack.append((entry.path, True, True))
            elif not hidden:
                stack.append((entry.path, git, False))
            elif name == ".git" and ".git" in walk.reads:
                stack.append((entry.path, True, True))
    return None
