"""Globs and the folder walk behind file_glob_search and grep_search.

No trio and no tool here: a glob is compiled once into a regular expression over a
`/`-separated relative path, and `walk` is a plain generator over `os.scandir`, so
both are tested without a loop and run inside a worker thread by the tools.

Glob rules (case-sensitive):

- `*` matches any run of characters inside one name, `?` one character; neither
  ever matches `/`. A leading dot is not special: `*` matches `.env`.
- `**` as a whole component matches zero or more components (`a/**/b` matches
  `a/b` and `a/x/y/b`; `a/**` matches `a` and everything under it). `**` inside
  a name (`a**b`) is just `*`.
- `[abc]`, `[a-z]`, `[!abc]` (or `[^abc]`) match one character of a class; a `[`
  without its closing `]` is a plain `[`. A class cannot hold `/`.
- A pattern with no `/` matches an entry's name at any depth (`*.py`). A pattern
  with a `/` matches the whole path relative to the folder searched (`src/*.py`
  matches `src/a.py`, not `lib/src/a.py`; write `**/src/*.py` for that). Leading,
  trailing and doubled `/` only anchor: `/setup.py` is `setup.py` at the top.
- A pattern with no component at all (`""`, `/`) matches nothing.

The walk lists everything under a folder in a fixed order (each folder's entries
sorted by name, a folder's contents right after it) but does not go into the folders
named in `UNENTERED_DIRS` (they are listed), nor through symbolic links (a link is
listed, never entered). It never reads `.gitignore` and never runs git: asking git
would run the repository's own configuration.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import NamedTuple

# Folders a walk lists but never enters: tool caches, dependencies and build output,
# which can hold hundreds of thousands of files nobody means to search.
UNENTERED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", ".jj",
        "node_modules", "bower_components", ".yarn", ".pnpm-store",
        ".venv", "venv", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox",
        ".eggs", ".hypothesis",
        "build", "dist", "target", ".gradle", ".cache",
        ".idea", ".vscode", ".next", ".nuxt", ".svelte-kit", ".turbo", ".parcel-cache",
    }
)  # fmt: skip
GLOB_CACHE_SIZE = 256  # compiled patterns kept

_CASE_FOLDING_FS = os.name == "nt"  # NTFS: `Build` is the same folder as `build`


class Entry(NamedTuple):
    """One walked entry. `path` is relative to the walk's root, with `/` separators.

    `is_dir` and `is_file` describe what the entry leads to (a link to a folder is a
    dir); `size` is the file's own size in bytes (a link's own, never its target's),
    0 for folders and when sizes were not asked for.
    """

    path: str
    is_dir: bool
    is_file: bool
    size: int
    is_link: bool


# ---- globs ----


class Glob:
    """A compiled glob; `match(rel)` tells whether a relative path matches it."""

    __slots__ = ("pattern", "_regex", "_name_only")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        parts = [p for p in pattern.split("/") if p]
        self._name_only = "/" not in pattern and pattern != "**"
        if not parts:
            self._regex: re.Pattern[str] | None = None
        elif self._name_only:
            self._regex = re.compile(_component_regex(pattern))
        else:
            self._regex = re.compile(_path_regex(parts))

    def match(self, rel: str) -> bool:
        """Whether `rel` (a `/`-separated path relative to the folder searched) matches.

        Its time is at most about the product of the path's and the pattern's lengths,
        whatever they hold (see `_component_regex`)."""
        if self._regex is None:
            return False
        if self._name_only:
            return self._regex.fullmatch(rel, rel.rfind("/") + 1) is not None
        return self._regex.fullmatch("/" + rel) is not None

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"


@functools.lru_cache(maxsize=GLOB_CACHE_SIZE)
def compile_glob(pattern: str) -> Glob:
    """The compiled form of `pattern` (cached: a pattern is compiled once)."""
    return Glob(pattern)


def glob_match(pattern: str, rel: str) -> bool:
    return compile_glob(pattern).match(rel)


# A glob becomes a regular expression for Python's `re`, written so that it never
# backtracks more than a constant number of times per character: `re` backtracks, and a
# plain translation (`[^/]*a[^/]*a...c`) over a long name takes time exponential in the
# number of stars, holding the GIL all along (fnmatch had the same hole, bpo-40480, and
# mends it the same way). Between two stars (of a name, or `**` of a path) sits a piece
# of fixed length, and the leftmost place it fits is always as good as any later one (the
# next star takes up what lies between), so each such piece is found lazily inside an
# atomic group, which commits to that place; only the last piece, which must end where
# the name (or path) ends, is found greedily. Each name is itself atomic: the longest
# way it can end is the only one that can be right, so a later failure never retries it.
_ANY_COMPONENT = "(?:/[^/]++)"  # one more component of "/" + rel


def _path_regex(parts: list[str]) -> str:
    """The regex for a pattern with `/`, matched against "/" + the relative path (so
    that every component, the first one too, follows a `/`)."""
    # Collapse `**/**`: it means no more than one `**`.
    comps: list[str] = []
    for part in parts:
        if part == "**" and comps and comps[-1] == "**":
            continue
        comps.append(part)
    if comps == ["**"]:
        return _ANY_COMPONENT + "+"
    groups: list[list[str]] = [[]]  # the runs of plain components between the `**`s
    for comp in comps:
        if comp == "**":
            groups.append([])
        else:
            groups[-1].append(comp)

    def fixed(group: list[str]) -> str:
        # `(?![^/])`: the name ends there, so a piece found early is a whole name.
        return "".join("/(?>" + _component_regex(comp) + ")(?![^/])" for comp in group)

    if len(groups) == 1:
        return fixed(groups[0])
    out = [fixed(groups[0])]
    out.extend(f"(?>{_ANY_COMPONENT}*?{fixed(group)})" for group in groups[1:-1])
    last = groups[-1]
    out.append(f"{_ANY_COMPONENT}*+" if not last else f"{_ANY_COMPONENT}*{fixed(last)}")
    return "".join(out)


def _component_regex(comp: str) -> str:
    """The regex for one name's pattern: `*`, `?` and `[...]` stay inside the name.

    `a*b*c` becomes `a(?>[^/]*?b)[^/]*c`: every piece after a star but the last is
    found at its leftmost place and kept there."""
    pieces: list[list[str]] = [[]]  # the runs between stars, each of fixed length
    i, n = 0, len(comp)
    while i < n:
        ch = comp[i]
        if ch == "*":
            while i + 1 < n and comp[i + 1] == "*":
                i += 1
            pieces.append([])
        elif ch == "?":
            pieces[-1].append(r"[^/]")
        elif ch == "[":
            cls, after = _class_regex(comp, i)
            if cls is None:
                pieces[-1].append(re.escape(ch))
            else:
                pieces[-1].append(cls)
                i = after - 1
        else:
            pieces[-1].append(re.escape(ch))
        i += 1
    if len(pieces) == 1:
        return "".join(pieces[0])
    middle = "".join(f"(?>[^/]*?{''.join(piece)})" for piece in pieces[1:-1])
    return "".join(pieces[0]) + middle + r"[^/]*" + "".join(pieces[-1])


def _class_regex(comp: str, start: int) -> tuple[str | None, int]:
    """The regex for the class opening at `comp[start]` and the index past its `]`,
    or (None, start) when it does not close or is not a valid range."""
    i = start + 1
    negate = i < len(comp) and comp[i] in "!^"
    if negate:
        i += 1
    body_start = i
    if i < len(comp) and comp[i] == "]":  # a `]` first is a member, not the end
        i += 1
    end = comp.find("]", i)
    if end < 0:
        return None, start
    body = comp[body_start:end]
    chars = "".join("\\" + c if c in "\\^[]&~|" else c for c in body)
    # A positive class is kept off `/` too: a range such as `.-0` spans it.
    regex = f"[^/{chars}]" if negate else f"(?!/)[{chars}]"
    try:
        re.compile(regex)
    except re.error:  # a range such as z-a
        return None, start
    return regex, end + 1


# ---- the walk ----


def walk(
    root: str | os.PathLike[str],
    max_depth: int | None = None,
    *,
    sizes: bool = True,
    prune: Callable[[str], bool] | None = None,
    check: Callable[[], None] | None = None,
    on_error: Callable[[str, OSError], None] | None = None,
) -> Iterator[Entry]:
    """Every entry under `root`, a folder's contents right after it, names sorted.

    `max_depth` 1 yields only `root`'s own entries; None (or 0) has no limit. A
    folder in `UNENTERED_DIRS` or reached through a link is yielded but not entered.
    `prune(rel)` is asked of each folder: True leaves the folder and all under it out.
    `check()` is called before each folder is read (it may raise to stop the walk,
    as trio.from_thread.check_cancelled does); `on_error(rel, exc)` hears of each
    folder that could not be read, which is then skipped. `sizes=False` saves a
    `stat` per file. Raises OSError only when `root` itself cannot be read.
    """
    limit = max_depth if max_depth else None
    stack: list[tuple[str, int, Iterator[os.DirEntry[str]]]] = [("", 1, iter(_scan(os.fspath(root))))]
    while stack:
        prefix, depth, it = stack[-1]
        entry = next(it, None)
        if entry is None:
            stack.pop()
            continue
        rel = prefix + entry.name
        try:
            is_link = entry.is_symlink() or (_CAN_TELL_JUNCTIONS and _is_junction(entry))
            is_dir = entry.is_dir()
            is_file = not is_dir and entry.is_file()
            size = entry.stat(follow_symlinks=False).st_size if sizes and (is_file or is_link) else 0
        except OSError:  # gone since the folder was read
            continue
        if is_dir and prune is not None and prune(rel):
            continue
        yield Entry(rel, is_dir, is_file, size, is_link)
        if not is_dir or is_link or (limit is not None and depth >= limit):
            continue
        name = entry.name.lower() if _CASE_FOLDING_FS else entry.name
        if name in UNENTERED_DIRS:
            continue
        if check is not None:
            check()
        try:
            children = _scan(entry.path)
        except OSError as exc:
            if on_error is not None:
                on_error(rel, exc)
            continue
        stack.append((rel + "/", depth + 1, iter(children)))


def _scan(path: str) -> list[os.DirEntry[str]]:
    with os.scandir(path) as it:
        entries = list(it)
    entries.sort(key=_name)
    return entries


def _name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _is_junction(entry: os.DirEntry[str]) -> bool:
    # A Windows junction is a link in all but name; Python 3.12 can tell.
    if sys.version_info >= (3, 12):
        return entry.is_junction()
    return False


_CAN_TELL_JUNCTIONS = os.name == "nt" and sys.version_info >= (3, 12)
