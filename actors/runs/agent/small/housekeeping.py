"""Whole commands for housekeeping asked of files found by what they are, not by name:
the empty files (or folders) removed, all but one of each set of files with the same
bytes removed, the spaces in file names made underscores (or dashes).

Asked to clear out the empty files lying about, SmolLM2-135M searched the files' text for
a made-up function's name and answered "No matches found". Which files are empty, which
are copies of each other and which names hold a space is read off the workspace, so the
command is known and shown and run as any other (mode and sandbox decide):

    rm notes/a.txt old.log                          the empty files
    rmdir build/tmp build                           the empty folders, deepest first
    rm photos/cat-copy.jpg                          a copy of photos/cat.jpg
    mv 'my notes.txt' my_notes.txt                  a space in a name
    chmod +x bin/build.sh                           "permission denied": the scripts that may not run

Hidden files and folders are left alone, as are links and a package's `__init__.py`
(empty on purpose); where the request names folders that are there, only what they hold
is looked at. None where a new name would land on a name that is there.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
import shlex
from collections.abc import Callable, Sequence
from typing import NamedTuple

from actors.runs.agent.small.files_of import PLAIN_PATH

# Scripts that may not run: "permission denied", "make it executable".
_NOT_RUNNABLE = re.compile(r"\bpermission\s+denied\b|\b(?:not|n't|non[\s-]?)\s*(?:be\s+)?executable\b|"
                           r"\bmake\b[^.?!]{0,40}?\b(?:executable|runnable)\b|\bexecute\s+(?:bit|permission)s?\b|"
                           r"\bchmod\b", re.IGNORECASE)

# Asked to take files away: delete, remove, clear out, get rid of, clean up, bin.
_REMOVES = re.compile(r"\b(?:delete|remove|clear|clean|get\s+rid|rid|bin|ditch|trash|prune|purge|nuke|drop|"
                      r"lose|zap|wipe|junk|toss|erase|tidy)\w*\b", re.IGNORECASE)
# Files with nothing in them; folders with nothing in them.
_EMPTY_FILES = re.compile(r"\b(?:empty|blank|zero[\s-]*(?:byte|length|size)d?|0[\s-]*bytes?)\s+(?:\w+\s+)?files?\b|"
                          r"\bfiles?\s+(?:that\s+(?:are|have)\s+|which\s+are\s+|with\s+)?(?:empty|nothing\s+in\s+them|"
                          r"no\s+content|zero\s+bytes|0\s+bytes)\b", re.IGNORECASE)
_EMPTY_FOLDERS = re.compile(r"\bempty\s+(?:\w+\s+)?(?:folders?|dir(?:ectorie)?s?|directory|subfolders?|"
                            r"subdir(?:ectorie)?s?)\b|\b(?:folders?|dir(?:ectorie)?s?|directory)\s+(?:that\s+are\s+|"
                            r"which\s+are\s+|with\s+nothing\s+in\s+them|left\s+)?empty\b", re.IGNORECASE)
# Files that are copies of each other (of files: duplicate lines are text_commands').
_DUPLICATES = re.compile(r"\b(?:duplicate[sd]?|identical|dupes?|redundant|repeated)\s+(?:\w+\s+)?"
                         r"(?:files?|copies|images?|photos?|pictures?|docs?|documents?)\b|"
                         r"\bfiles?\s+(?:that\s+are\s+|which\s+are\s+)?(?:duplicates?|dupes|identical|the\s+same)\b|"
                         r"\b(?:exact|identical|duplicate)\s+copies\b|\bdupes\b|"
                         r"\bsame\s+(?:content|contents|bytes|data)\b|"
                         r"\b(?:saved|stored|kept|there|in\s+here)\s+(?:twice|two\s+times|more\s+than\s+once)\b|"
                         r"\b(?:extra|spare|second|two)\s+copies\b|\bcopies\s+of\s+(?:each\s+other|the\s+same)\b",
                         re.IGNORECASE)
# Spaces in file names made another character.
_SPACES = re.compile(r"\bspaces?\b", re.IGNORECASE)
_IN_NAMES = re.compile(r"\b(?:file\s*names?|names?|filenames?)\b", re.IGNORECASE)
_DASHES = re.compile(r"\b(?:dash(?:es)?|hyphens?|minus)\b|-", re.IGNORECASE)
# A name a copy is given ("report (1).txt", "notes copy.md", "a_backup.txt", "b-2.txt").
_COPY_NAME = re.compile(r"(?:\bcopy\b|\(\d+\)|[_\s-](?:copy|dup|dupe|backup|bak|old|\d+)(?=\.|$)|\bbackup\b)",
                        re.IGNORECASE)
# Files at most in one command.
HOUSE_FILES = 60


class Found(NamedTuple):
    """A walked entry of the workspace (lookup.walk's Entry, as much as is needed)."""

    path: str
    is_dir: bool
    size: int


def housekeeping_commands(asked: str, found: Callable[[], Sequence[Found]], data: Callable[[str], bytes | None],
                          folders: Sequence[str] = (), runs: Callable[[str], bool] | None = None,
                          named: Sequence[str] = ()) -> dict[str, list[str]]:
    """The whole command of a housekeeping request (none where it is not one): the
    workspace's entries (`found`, walked only for one; hidden ones and links left out by
    the caller) looked at in the `folders` it names that are there, or all; `data` reads
    a file's bytes, `runs` says whether a file may run (its mode lets it); `named`: the
    files the request names that are there."""
    removes = bool(_REMOVES.search(asked))
    empty = removes and bool(_EMPTY_FILES.search(asked) or _EMPTY_FOLDERS.search(asked))
    duplicates = removes and bool(_DUPLICATES.search(asked)) and not re.search(r"\blines?\b", asked, re.IGNORECASE)
    spaces = bool(_SPACES.search(asked) and _IN_NAMES.search(asked))
    runnable = runs is not None and bool(_NOT_RUNNABLE.search(asked))
    if not (empty or duplicates or spaces or runnable):
        return {}
    entries = found()
    within = [f.rstrip("/") for f in folders if any(e.is_dir and e.path == f.rstrip("/") for e in entries)]
    if within:
        entries = [e for e in entries if any(e.path == f or e.path.startswith(f + "/") for f in within)]
    if runnable and runs is not None:
        command = exec_command([e for e in entries if not named or e.path in named], data, runs)
        return {"chmod": [command]} if command else {}
    if empty:
        command = empty_command(entries, files=bool(_EMPTY_FILES.search(asked)),
                                folders=bool(_EMPTY_FOLDERS.search(asked)))
        return {command.split(" ", 1)[0]: [command]} if command else {}
    if duplicates:
        command = duplicates_command(entries, data)
        return {"rm": [command]} if command else {}
    if spaces:
        command = spaces_command(entries, "-" if _DASHES.search(_SPACES.split(asked, 1)[1]) else "_")
        return {"mv": [command]} if command else {}
    return {}


def empty_command(entries: Sequence[Found], *, files: bool, folders: bool) -> str | None:
    """The empty files removed (`files`: but a package's `__init__.py`), then the folders
    left with nothing in them (`folders`), deepest first; None where there is none, too
    many, or a name that may not be written plain."""
    gone = [e.path for e in entries if files and not e.is_dir and e.size == 0
            and posixpath.basename(e.path) != "__init__.py"]
    emptied: list[str] = []
    if folders:
        left = {e.path for e in entries if not e.is_dir} - set(gone)
        dirs = sorted((e.path for e in entries if e.is_dir), key=lambda p: (-p.count("/"), p))
        for d in dirs:
            holds_file = any(p.startswith(d + "/") for p in left)
            holds_dir = any(o.startswith(d + "/") and o not in emptied for o in dirs)
            if not holds_file and not holds_dir:
                emptied.append(d)
    if not gone and not emptied or len(gone) + len(emptied) > HOUSE_FILES \
            or not all(PLAIN_PATH.fullmatch(p) for p in (*gone, *emptied)):
        return None
    parts = ([f"rm {' '.join(sorted(gone))}"] if gone else []) + ([f"rmdir {' '.join(emptied)}"] if emptied else [])
    return " && ".join(parts)


def duplicates_command(entries: Sequence[Found], data: Callable[[str], bytes | None]) -> str | None:
    """All but one of each set of files with the same bytes (none empty) removed: the one
    kept the one whose name is not a copy's (`_COPY_NAME`), then the shallowest, the
    shortest, the first; None where no two are alike, too many are, or a name may not be
    written plain."""
    by_size: dict[int, list[str]] = {}
    for e in entries:
        if not e.is_dir and e.size > 0:
            by_size.setdefault(e.size, []).append(e.path)
    groups: dict[tuple[int, str], list[str]] = {}
    for size, paths in by_size.items():
        if len(paths) < 2:
            continue
        for p in paths:
            b = data(p)
            if b is not None:
                groups.setdefault((size, hashlib.sha256(b).hexdigest()), []).append(p)
    gone = []
    for paths in groups.values():
        if len(paths) > 1:
            kept = min(paths, key=lambda p: (bool(_COPY_NAME.search(posixpath.basename(p))), p.count("/"), len(p), p))
            gone += [p for p in paths if p != kept]
    if not gone or len(gone) > HOUSE_FILES or not all(PLAIN_PATH.fullmatch(p) for p in gone):
        return None
    return f"rm {' '.join(sorted(gone))}"


def spaces_command(entries: Sequence[Found], to: str) -> str | None:
    """Each file or folder name with spaces moved to the name with `to` in their place
    (a run of them one `to`), deepest first so the paths above stay right; None where
    none has one, too many do, or a new name would land on one that is there."""
    there = {e.path for e in entries}
    moves: list[tuple[str, str]] = []
    for e in sorted(entries, key=lambda e: (-e.path.count("/"), e.path)):
        head, name = posixpath.split(e.path)
        if " " not in name.strip():
            continue
        new = posixpath.join(head, re.sub(r"\s+", to, name.strip()))
        if new in there or any(new == m for _, m in moves):
            return None
        moves.append((e.path, new))
    if not moves or len(moves) > HOUSE_FILES:
        return None
    return " && ".join(f"mv {shlex.quote(old)} {shlex.quote(new)}" for old, new in moves)


def exec_command(entries: Sequence[Found], data: Callable[[str], bytes | None], runs: Callable[[str], bool]
                 ) -> str | None:
    """`chmod +x` of the scripts (a file that begins with `#!`) that may not run; None
    where every script may."""
    scripts = [e.path for e in entries if not e.is_dir and PLAIN_PATH.fullmatch(e.path)
               and (data(e.path) or b"")[:2] == b"#!" and not runs(e.path)]
    return f"chmod +x {' '.join(scripts)}" if scripts else None
