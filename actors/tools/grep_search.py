"""The grep_search tool: compiling a query (`compile_query`), finding the matching
lines of one file's content (`matching_lines`, `grep_data`), reading files safely
(`_read_small`), the search over a file or a folder's walk (`grep_search`, run in a
worker thread) and the tool that offers it (`GrepSearch`).

Grep reads a file as bytes and runs one compiled regex over the whole content (or
`bytes.find` for a literal), splitting out lines only around matches. `^` and `$`
are line anchors. An ASCII pattern runs on bytes, where `.`, `\\w` and classes see
bytes and ASCII; a pattern with other characters runs on the text decoded as UTF-8.
A line is reported only if the pattern matches inside that line alone (`\\A` and
`\\Z` still mean the start and end of the file).

The result's shape and the walk's rules are in actors/tools/search.py's docstring.
"""

from __future__ import annotations

import functools
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, AnyStr, Generic, TypeAlias

import attrs
import trio

from actors.tools import args as args_
from actors.tools.globs import UNENTERED_DIRS, Glob, walk
from actors.tools.paths import relative
from actors.tools.registry import ToolContext, ToolError, ToolOutcome
from actors.tools.search_common import (
    SEARCH_BUDGET_S,
    _glob_arg,
    _in_thread,
    _limiter,
    _short,
    _walk_notes,
    _where,
    _workspace,
)

if TYPE_CHECKING:
    from typing_extensions import TypeIs

MAX_GREP_MATCHES = 100  # grep_search: most matching lines shown
MAX_GREP_FILE_BYTES = 2 * 1024 * 1024  # larger files are not searched
BINARY_SNIFF_BYTES = 8 * 1024  # a NUL byte in this much of a file makes it binary
MAX_CONTEXT_LINES = 10  # context_lines is capped to this
MAX_LINE_CHARS = 400  # a longer line is cut in the result (minified files)
MAX_PATTERN_CHARS = 2000
MIN_NEEDLE_CHARS = 3  # a regex's plain run shorter than this is not worth finding first

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)  # a file swapped for a link is not read through it
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO is never waited on
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


def _display_prefix(workspace: Path, base: Path) -> str:
    pre = relative(workspace, base)
    return "" if pre == "." else pre + "/"


@attrs.frozen
class GrepQuery(Generic[AnyStr]):
    """A compiled search, on bytes (`GrepQuery[bytes]`) or on text (`GrepQuery[str]`).

    `needle` is a text every matching line holds (for a literal, the literal; for a
    regex, its longest run of plain characters that every match must contain), found
    with `find` before the regex looks at the line; lowered when `fold`. `exact`: a
    line holding the needle matches (a literal). `text`: the regex works on text
    decoded as UTF-8 instead of bytes; `prefilter` is then the needle's UTF-8 bytes,
    which a file must hold to be decoded at all.
    """

    regex: re.Pattern[AnyStr]
    needle: AnyStr | None = None
    exact: bool = False
    fold: bool = False
    text: bool = False
    prefilter: bytes | None = None


AnyGrepQuery: TypeAlias = GrepQuery[bytes] | GrepQuery[str]


def _on_text(query: AnyGrepQuery) -> TypeIs[GrepQuery[str]]:
    return query.text


def _compile(source: AnyStr, flags: int) -> re.Pattern[AnyStr]:
    try:
        return re.compile(source, flags)
    except re.error as exc:
        raise ToolError(
            f"invalid regex: {exc}. Fix the pattern, or pass literal: true to search for the text as written."
        ) from exc


def compile_query(pattern: str, *, literal: bool = False, ignore_case: bool = False) -> AnyGrepQuery:
    """The query for `pattern`, or ToolError with the regex parser's message."""
    if not pattern:
        raise ToolError('"pattern" is empty. Give the text or regular expression to search for.')
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f'"pattern" is longer than {MAX_PATTERN_CHARS} characters. Search for a shorter one.')
    source = re.escape(pattern) if literal else pattern
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    # Bytes unless the pattern holds other characters than ASCII and means them as
    # characters (a regex, or a literal compared without case).
    if not pattern.isascii() and (ignore_case or not literal):
        regex = _compile(source, flags)
        if literal:  # a non-ASCII literal without case: the regex alone
            return GrepQuery(regex, text=True)
        run = _required_literal(source, flags)
        if run is None or len(run) < MIN_NEEDLE_CHARS or ignore_case:
            return GrepQuery(regex, text=True)
        return GrepQuery(regex, run, text=True, prefilter=run.encode("utf-8"))
    raw_regex = _compile(source.encode("utf-8"), flags)
    if literal:
        needle = pattern.lower() if ignore_case else pattern
        return GrepQuery(raw_regex, needle.encode("utf-8"), exact=True, fold=ignore_case)
    run = _required_literal(source, flags)
    if run is None or len(run) < MIN_NEEDLE_CHARS:
        return GrepQuery(raw_regex)
    try:
        raw = run.encode("latin-1")  # a bytes regex's `\xff` is the byte 0xff
    except UnicodeEncodeError:
        return GrepQuery(raw_regex)
    return GrepQuery(raw_regex, raw.lower() if ignore_case else raw, fold=ignore_case)


def _required_literal(source: str, flags: int) -> str | None:
    """The longest run of plain characters every match of `source` contains, if the
    parser tells (a private module: any surprise means no run, never a wrong one)."""
    try:
        # Private modules without stubs (typeshed has only the deprecated sre_parse, whose
        # item types do not fit LITERAL's int): what they give is Any, and any surprise in it
        # ends in the `except` below.
        from re import _constants as sre_constants  # type: ignore[attr-defined]
        from re import _parser as sre_parse  # type: ignore[attr-defined]

        parsed = sre_parse.parse(source, flags)
        if (parsed.state.flags & re.IGNORECASE) and not (flags & re.IGNORECASE):
            return None  # an inline (?i): the runs are not the text to find
        best: list[str] = []
        current: list[str] = []

        def visit(items: Any) -> None:
            nonlocal best, current
            for op, av in items:
                if op is sre_constants.LITERAL:
                    current.append(chr(av))
                    continue
                if op is sre_constants.SUBPATTERN and not av[1] and not av[2]:
                    visit(getattr(av[3], "data", av[3]))  # a plain group: its items in line
                    continue
                if len(current) > len(best):
                    best = current
                current = []

        visit(parsed.data)
        if len(current) > len(best):
            best = current
        return "".join(best) or None
    except Exception:  # noqa: BLE001 - the parser's internals changed: search without a run
        return None


def matching_lines(data: AnyStr, query: GrepQuery[AnyStr]) -> Iterator[tuple[int, int]]:
    """The (start, end) offsets of each line of `data` the query matches, in order;
    `end` is the offset of the line's newline (or the end of `data`)."""
    nl = "\n" if isinstance(data, str) else b"\n"
    n = len(data)
    pos = 0
    search = query.regex.search
    needle = query.needle
    if needle is not None:
        if nl in needle:  # no single line can hold it
            return
        hay = data.lower() if query.fold else data  # ASCII lowering keeps offsets
        find = hay.find
        while pos < n:
            s = find(needle, pos)
            if s < 0:
                return
            ls = data.rfind(nl, pos, s) + 1 or pos
            le = data.find(nl, s + len(needle))
            le = n if le < 0 else le
            if query.exact or search(data, ls, le) is not None:
                yield ls, le
            pos = le + 1
        return
    while pos < n:
        m = search(data, pos)
        if m is None:
            return
        s = m.start()
        ls = data.rfind(nl, pos, s) + 1 or pos
        if ls >= n:  # an empty match past the last newline: no line there
            return
        le = data.find(nl, s)
        le = n if le < 0 else le
        # The match may run past its line or depend on what follows it: a line counts
        # only when the pattern matches inside it alone.
        if search(data, ls, le) is not None:
            yield ls, le
        pos = le + 1


def _line_text(data: AnyStr, start: int, end: int) -> str:
    raw = data[start:end]
    line = raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
    line = line.removesuffix("\r")
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS] + f" [... {len(line) - MAX_LINE_CHARS} more characters]"
    return line


def grep_data(
    data: AnyStr, query: GrepQuery[AnyStr], path: str, *, budget: int, context: int = 0, line_numbers: bool = True
) -> tuple[list[str], int, bool]:
    """Result lines for up to `budget` matching lines of one file's content.

    Returns (lines, matches shown, whether more matching lines were left out).
    """
    nl = "\n" if isinstance(data, str) else b"\n"
    hits: list[tuple[int, int, int]] = []  # (line number, start, end)
    lineno, counted_to = 1, 0
    more = False
    for ls, le in matching_lines(data, query):
        if len(hits) == budget:
            more = True
            break
        lineno += data.count(nl, counted_to, ls)
        counted_to = ls
        hits.append((lineno, ls, le))
    if not hits:
        return [], 0, more
    out: list[str] = []
    if context <= 0:
        for num, ls, le in hits:
            text = _line_text(data, ls, le)
            out.append(f"{path}:{num}:{text}" if line_numbers else f"{path}:{text}")
        return out, len(hits), more

    # Context: windows of `context` lines around each match, merged where they touch;
    # each group ends with `--`, a match line has `:`, a context line `-`.
    n = len(data)
    matched = {num for num, _, _ in hits}
    i = 0
    while i < len(hits):
        first_num, first_ls, _ = hits[i]
        j = i
        while j + 1 < len(hits) and hits[j + 1][0] - context <= hits[j][0] + context + 1:
            j += 1
        last_num = hits[j][0] + context
        num, pos = first_num, first_ls
        while num > max(1, first_num - context):  # back up to the window's first line
            pos = data.rfind(nl, 0, pos - 1) + 1
            num -= 1
        while num <= last_num and pos < n:
            end = data.find(nl, pos)
            end = n if end < 0 else end
            sep = ":" if num in matched else "-"
            out.append(f"{path}{sep}{num}{sep}{_line_text(data, pos, end)}")
            pos, num = end + 1, num + 1
        out.append("--")
        i = j + 1
    return out, len(hits), more


@attrs.define
class _GrepTally:
    lines: list[str] = attrs.Factory(list)
    matches: int = 0
    capped: bool = False
    large: int = 0
    binary: int = 0
    unreadable: int = 0


def _read_small(path: str | Path) -> bytes | str:
    """The file's bytes, or "large", "special" (not a regular file) or "unreadable"."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return "unreadable"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "special"
        if st.st_size > MAX_GREP_FILE_BYTES:
            return "large"
        data = os.read(fd, st.st_size + 1)
        if len(data) < st.st_size:  # a short read: gather the rest
            parts = [data]
            while chunk := os.read(fd, MAX_GREP_FILE_BYTES + 1 - sum(map(len, parts))):
                parts.append(chunk)
            data = b"".join(parts)
        return "large" if len(data) > MAX_GREP_FILE_BYTES else data
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)


def _grep_one(
    path: str | Path, shown: str, query: AnyGrepQuery, tally: _GrepTally, context: int, numbers: bool
) -> None:
    data = _read_small(path)
    if isinstance(data, str):
        if data == "large":
            tally.large += 1
        elif data == "unreadable":
            tally.unreadable += 1
        return
    if data.find(b"\0", 0, BINARY_SNIFF_BYTES) >= 0:
        tally.binary += 1
        return
    # Most files hold no match: one `find` settles them before any other work.
    budget = MAX_GREP_MATCHES - tally.matches
    if _on_text(query):
        if query.prefilter is not None and data.find(query.prefilter) < 0:
            return
        text = data.decode("utf-8", errors="replace")
        lines, count, more = grep_data(text, query, shown, budget=budget, context=context, line_numbers=numbers)
    else:
        if query.needle is not None and not query.fold and data.find(query.needle) < 0:
            return
        lines, count, more = grep_data(data, query, shown, budget=budget, context=context, line_numbers=numbers)
    tally.lines.extend(lines)
    tally.matches += count
    tally.capped = tally.capped or more


def grep_search(
    workspace: Path,
    base: Path,
    query: AnyGrepQuery,
    *,
    include: Glob | None = None,
    exclude: Glob | None = None,
    context: int = 0,
    line_numbers: bool = True,
    check: Callable[[], None] | None = None,
    budget_s: float = SEARCH_BUDGET_S,
) -> str:
    """The grep_search result for `base` (a file or folder, already confined).

    Paths in the result are relative to `workspace`. A folder's files are searched
    in walk order until MAX_GREP_MATCHES lines matched; links are not followed.
    Whatever `check` raises (trio.Cancelled) stops it between files.
    """
    tally = _GrepTally()
    unreadable_dirs: list[str] = []
    unentered: set[str] = set()
    out_of_time = False
    if base.is_file():
        _grep_one(base, relative(workspace, base), query, tally, context, line_numbers)
    elif base.is_dir():
        prefix = _display_prefix(workspace, base)
        root = os.fspath(base) + os.sep
        deadline = time.monotonic() + budget_s
        prune = exclude.match if exclude is not None else None
        for entry in walk(
            base, sizes=False, prune=prune, check=check, on_error=lambda rel, exc: unreadable_dirs.append(rel)
        ):
            if not entry.is_file or entry.is_link:
                if entry.is_dir and not entry.is_link and entry.path.rpartition("/")[2] in UNENTERED_DIRS:
                    unentered.add(entry.path.rpartition("/")[2])
                continue
            if time.monotonic() > deadline:
                out_of_time = True
                break
            rel = entry.path
            if (include is not None and not include.match(rel)) or (exclude is not None and exclude.match(rel)):
                continue
            if check is not None:
                check()
            # Past the cap the budget is 0: files are still read, only to learn
            # whether anything was left out, and the first further match ends it.
            _grep_one(root + rel, prefix + rel, query, tally, context, line_numbers)
            if tally.capped:
                break
    else:
        raise ToolError("That path does not exist. Use file_glob_search to find the file or folder.")

    lines = [*tally.lines, "", "---", f"Total matches: {tally.matches}"]
    if tally.capped:
        lines.append(
            f"[{MAX_GREP_MATCHES} matches limit reached; more not shown."
            " Narrow the path, pattern or include to see more.]"
        )
    skipped = []
    if tally.large:
        skipped.append(f"{tally.large} over {MAX_GREP_FILE_BYTES // (1024 * 1024)} MiB")
    if tally.binary:
        skipped.append(f"{tally.binary} binary")
    if tally.unreadable:
        skipped.append(f"{tally.unreadable} unreadable")
    if skipped:
        lines.append(f"[files not searched: {', '.join(skipped)}]")
    lines.extend(_walk_notes(out_of_time, unreadable_dirs, unentered, budget_s))
    return "\n".join(lines) + "\n"


@attrs.frozen
class GrepSearch:
    """The `grep_search` tool. `limiter` bounds the worker threads (shared by default)."""

    limiter: trio.CapacityLimiter | None = None
    name: str = "grep_search"
    description: str = (
        "Search file contents for a regular expression (or, with literal, the text as written) in a file or "
        "under a folder. Returns matching lines as path:line:text, paths relative to the workspace, "
        f"at most {MAX_GREP_MATCHES}. include/exclude: a glob with no '/' matches the file name at any depth, "
        "one with '/' the path relative to the folder searched. Files over "
        f"{MAX_GREP_FILE_BYTES // (1024 * 1024)} MiB and binary files are skipped; .git, node_modules, build, "
        "dist and the like are not searched inside; .gitignore is not consulted."
    )
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File or folder to search in (default: the workspace)"},
                "pattern": {
                    "type": "string",
                    "description": "What to search for: a regular expression (Python syntax) unless literal is true",
                },
                "include": {"type": "string", "description": 'Glob for the files to search (e.g. "*.py"). Default: **'},
                "exclude": {
                    "type": "string",
                    "description": "Glob for files to leave out; a folder it matches is left out with all under it",
                },
                "return_line_numbers": {
                    "type": "boolean",
                    "description": "Put each line's number after its path (default: true)",
                },
                "literal": {
                    "type": "boolean",
                    "description": "Search for the pattern as plain text, not a regular expression (default: false)",
                },
                "ignore_case": {"type": "boolean", "description": "Ignore upper and lower case (default: false)"},
                "context_lines": {
                    "type": "integer",
                    "description": (
                        f"Lines to show before and after each match (default 0, at most {MAX_CONTEXT_LINES})"
                    ),
                },
            },
            "required": ["pattern"],
        }
    )
    needs_workspace: bool = True

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return False

    def title(self, args: dict[str, Any]) -> str:
        pattern = args.get("pattern")
        what = _short(pattern) if isinstance(pattern, str) and pattern else "text"
        return f"Search for {what} in {_where(args)}"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Cancelling the call stops the search before its next file."""
        workspace = _workspace(ctx)
        query = compile_query(
            args_.string(args, "pattern") or "",
            literal=args_.boolean(args, "literal", False),
            ignore_case=args_.boolean(args, "ignore_case", False),
        )
        path = args_.string(args, "path", required=False)
        job = functools.partial(
            _in_thread(functools.partial(grep_search, workspace)),
            workspace,
            path,
            query,
            include=_glob_arg(args, "include"),
            exclude=_glob_arg(args, "exclude"),
            context=min(args_.whole(args, "context_lines", 0, minimum=0), MAX_CONTEXT_LINES),
            line_numbers=args_.boolean(args, "return_line_numbers", True),
            check=trio.from_thread.check_cancelled,
        )
        return ToolOutcome(await trio.to_thread.run_sync(job, limiter=self.limiter or _limiter))
