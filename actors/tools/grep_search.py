"""The grep_search tool: compiling a query (`compile_query`), finding the matching
lines of one file's content (`matching_lines`, `grep_data`), reading files safely
(`read_small`), the search over a file or a folder's walk (`grep_search`, run in a
worker thread) and the tool that offers it (`GrepSearch`).

Grep reads a file as bytes. A literal is found with `bytes.find`; a regular expression
(Python's syntax) runs on RE2 (actors/tools/grep_regex.py): linear in the text, the GIL
let go while it matches, and constructs only a backtracking engine has (backreferences,
lookaround) refused in plain words. A regex's longest plain run, when it has one, is
found with `bytes.find` first, so a file without it is never matched at all. `^` and
`$` are line anchors; a line is reported only if the pattern matches inside that line
alone (`\\A` and `\\Z` still mean the start and end of the file).

What one file may cost is bounded whatever the pattern: RE2 is handed at most
SEARCH_CALL_UNITS (bytes times the pattern's program size) at a time, whole lines,
and between two calls the search sees a stop and its time budget; a single line too
long for the pattern (over LONG_LINE_UNITS) is left out, and the result says so.

The result's shape and the walk's rules are in actors/tools/search.py's docstring.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import trio

from actors.errors import ToolError
from actors.fs.paths import relative
from actors.tools import args as args_
from actors.tools.globs import UNENTERED_DIRS, Glob, walk
from actors.tools.grep_regex import LinePattern, any_of, compile_line_pattern
from actors.tools.registry import ToolContext, ToolOutcome
from actors.tools.search_common import (
    SEARCH_BUDGET_S,
    SEARCH_LIMITER,
    OutOfTime,
    glob_arg,
    in_thread,
    poller,
    search_root,
    short,
    walk_notes,
    where,
)

MAX_GREP_MATCHES = 100  # grep_search: most matching lines shown
MAX_GREP_FILE_BYTES = 2 * 1024 * 1024  # larger files are not searched
BINARY_SNIFF_BYTES = 8 * 1024  # a NUL byte in this much of a file makes it binary
MAX_CONTEXT_LINES = 10  # context_lines is capped to this
MAX_LINE_CHARS = 400  # a longer line is cut in the result (minified files)
MAX_PATTERN_CHARS = 2000
MIN_NEEDLE_CHARS = 3  # a regex's plain run shorter than this is not worth finding first
# RE2's slowest path (its NFA, which it falls back to when a pattern's DFA keeps filling
# its cache) takes up to about 10 ns per byte per unit of the pattern's program size on this
# kind of machine. One call is handed at most this many units (about 0.2 s at worst), so
# a stop or the time budget is seen that often:
SEARCH_CALL_UNITS = 16_000_000
# ... and a single line of more than this many units (about 0.6 s at worst) is not
# searched with that pattern. With a pattern of program size 28 (`[A-Z]{20,}[0-9]{2}` is
# 27), every line of a 2 MiB file is searched.
LONG_LINE_UNITS = 60_000_000

_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NOFOLLOW", 0)  # a file swapped for a link is not read through it
    | getattr(os, "O_NONBLOCK", 0)  # a FIFO is never waited on
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
)
_NL = b"\n"


def _display_prefix(workspace: Path, base: Path) -> str:
    pre = relative(workspace, base)
    return "" if pre == "." else pre + "/"


@attrs.frozen
class GrepQuery:
    """A compiled search.

    `exact`: a literal; a line holding `needle` matches, and there is no `pattern`.
    Otherwise `pattern` (RE2) decides, and `needles`, when there are any, are texts of
    which every match holds one: a file that holds none is not searched (`needle` is
    the one text when there is just one). `fold`: the needles are lowered (ASCII) and
    are looked for in the lowered data.
    """

    pattern: LinePattern | None
    needle: bytes | None = None
    exact: bool = False
    fold: bool = False
    needles: tuple[bytes, ...] = ()
    # Several needles (or a lowered one) are looked for in one pass, by an RE2 pattern
    # of them alone: three `find`s cost three passes over a file, and the whole pattern
    # (`\\b` first, say) often runs at a fraction of the speed of a plain alternation.
    prefilter: LinePattern | None = None


def compile_query(pattern: str, *, literal: bool = False, ignore_case: bool = False) -> GrepQuery:
    """The query for `pattern`, or ToolError with the regex parser's message (or with
    what to do instead, for a construct the linear-time engine does not have)."""
    if not pattern:
        raise ToolError('"pattern" is empty. Give the text or regular expression to search for.')
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f'"pattern" is longer than {MAX_PATTERN_CHARS} characters. Search for a shorter one.')
    if literal and (pattern.isascii() or not ignore_case):
        needle = pattern.encode("utf-8")
        return GrepQuery(None, needle.lower() if ignore_case else needle, exact=True, fold=ignore_case)
    compiled = compile_line_pattern(pattern, ignore_case=ignore_case, literal=literal)
    needles = compiled.needles if compiled.needles and min(map(len, compiled.needles)) >= MIN_NEEDLE_CHARS else ()
    fold = compiled.fold and bool(needles)
    # One RE2 pass even for one needle: RE2 lets go of the GIL while it scans (a `find`
    # does not), so searches running side by side (parallel calls) use the cores.
    prefilter = any_of(needles, fold=fold) if needles else None
    if prefilter is not None and prefilter.cost * MAX_GREP_FILE_BYTES > LONG_LINE_UNITS:
        prefilter = None  # one pass over a whole file must stay as bounded as a line's: `find`s instead
    return GrepQuery(
        compiled.pattern,
        needles[0] if len(needles) == 1 else None,
        fold=fold,
        needles=needles,
        prefilter=prefilter,
    )


def matching_lines(
    data: bytes,
    query: GrepQuery,
    poll: Callable[[], None] | None = None,
    too_long: list[int] | None = None,
) -> Iterator[tuple[int, int]]:
    """The (start, end) offsets of each line of `data` the query matches, in order;
    `end` is the offset of the line's newline (or the end of `data`).

    `poll()` is called before each call into RE2 (it may raise to stop the search);
    the start of each line left out for being too long for the pattern goes to
    `too_long`.
    """
    n = len(data)
    if query.exact:
        yield from _literal_lines(data, query)
        return
    rx = query.pattern
    assert rx is not None
    span = max(1, SEARCH_CALL_UNITS // rx.cost)
    longest = max(1, LONG_LINE_UNITS // rx.cost)
    pos = 0
    while pos < n:
        if poll is not None:
            poll()
        # [pos, end): whole lines, at most `span` bytes unless one line is longer.
        stop = pos + span
        if stop >= n:
            end = n
        else:
            cut = data.rfind(_NL, pos, stop)
            if cut >= 0:
                end = cut
            else:
                line_end = data.find(_NL, stop)
                end = n if line_end < 0 else line_end
                if end - pos > longest:
                    if too_long is not None:
                        too_long.append(pos)
                    pos = end + 1
                    continue
        p = pos
        while p <= end:
            s = rx.search(data, p, end)
            if s is None:
                break
            ls = data.rfind(_NL, p, s) + 1 or p
            if ls >= n:  # an empty match past the last newline: no line there
                return
            le = data.find(_NL, s)
            le = n if le < 0 else le
            yield ls, le
            p = le + 1
        pos = end + 1


def _literal_lines(data: bytes, query: GrepQuery) -> Iterator[tuple[int, int]]:
    needle = query.needle
    assert needle is not None
    if _NL in needle:  # no single line can hold it
        return
    n = len(data)
    hay = data.lower() if query.fold else data  # ASCII lowering keeps offsets
    pos = 0
    while pos < n:
        s = hay.find(needle, pos)
        if s < 0:
            return
        ls = data.rfind(_NL, pos, s) + 1 or pos
        le = data.find(_NL, s + len(needle))
        le = n if le < 0 else le
        yield ls, le
        pos = le + 1


def _line_text(data: bytes, start: int, end: int) -> str:
    line = data[start:end].decode("utf-8", errors="replace").removesuffix("\r")
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS] + f" [... {len(line) - MAX_LINE_CHARS} more characters]"
    return line


def grep_data(
    data: bytes,
    query: GrepQuery,
    path: str,
    *,
    budget: int,
    context: int = 0,
    line_numbers: bool = True,
    poll: Callable[[], None] | None = None,
    too_long: list[int] | None = None,
) -> tuple[list[str], int, bool]:
    """Result lines for up to `budget` matching lines of one file's content.

    Returns (lines, matches shown, whether more matching lines were left out).
    `poll` and `too_long` are matching_lines's.
    """
    nl = _NL
    hits: list[tuple[int, int, int]] = []  # (line number, start, end)
    lineno, counted_to = 1, 0
    more = False
    for ls, le in matching_lines(data, query, poll, too_long):
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
    too_long: list[int] = attrs.Factory(list)  # lines too long for the pattern (their offsets)


def read_small(path: str | Path) -> bytes | str:
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
    path: str | Path,
    shown: str,
    query: GrepQuery,
    tally: _GrepTally,
    context: int,
    numbers: bool,
    poll: Callable[[], None] | None,
) -> None:
    data = read_small(path)
    if isinstance(data, str):
        if data == "large":
            tally.large += 1
        elif data == "unreadable":
            tally.unreadable += 1
        return
    if data.find(b"\0", 0, BINARY_SNIFF_BYTES) >= 0:
        tally.binary += 1
        return
    # Most files hold no match: one pass for the needles settles them before the pattern runs.
    if not query.exact:
        if query.prefilter is not None:
            if query.prefilter.search(data, 0, len(data)) is None:
                return
        elif query.needles:
            hay = data.lower() if query.fold else data
            if not any(hay.find(needle) >= 0 for needle in query.needles):
                return
    # Past the cap the budget is 0: the file is still searched, only to learn whether
    # anything was left out, and its first match ends it.
    budget = MAX_GREP_MATCHES - tally.matches
    lines, count, more = grep_data(
        data, query, shown, budget=budget, context=context, line_numbers=numbers, poll=poll, too_long=tally.too_long
    )
    tally.lines.extend(lines)
    tally.matches += count
    tally.capped = tally.capped or more


def grep_search(
    workspace: Path,
    base: Path,
    query: GrepQuery,
    *,
    caseless: GrepQuery | None = None,
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
    Whatever `check` raises (trio.Cancelled) stops it between files, and inside a file
    between two calls into the regex engine (at most SEARCH_CALL_UNITS of work each).
    When nothing matched, `caseless` (the query with case ignored) is tried in the time
    left, and what it finds is the result, headed by a line that says so: asked where
    `invoice` is, a model learns of `class Invoice` rather than that nothing is there.
    """
    poll = poller(check, budget_s)
    searched = _walk_grep(workspace, base, query, include, exclude, context, line_numbers, poll)
    head: list[str] = []
    if not searched.tally.matches and caseless is not None and not searched.out_of_time:
        again = _walk_grep(workspace, base, caseless, include, exclude, context, line_numbers, poll)
        if again.tally.matches:
            searched, query, head = again, caseless, [CASE_IGNORED_HEAD]
    return _grep_result(searched, head, query, budget_s)


# The first line of a result that only the pattern with case ignored found.
CASE_IGNORED_HEAD = "[No line matches with the case as written; these match with case ignored (ignore_case: true).]"


@attrs.frozen
class _Searched:
    tally: _GrepTally
    unreadable_dirs: list[str]
    unentered: set[str]
    out_of_time: bool


def _walk_grep(
    workspace: Path,
    base: Path,
    query: GrepQuery,
    include: Glob | None,
    exclude: Glob | None,
    context: int,
    line_numbers: bool,
    poll: Callable[[], None],
) -> _Searched:
    tally = _GrepTally()
    unreadable_dirs: list[str] = []
    unentered: set[str] = set()
    out_of_time = False
    try:
        if base.is_file():
            _grep_one(base, relative(workspace, base), query, tally, context, line_numbers, poll)
        elif base.is_dir():
            prefix = _display_prefix(workspace, base)
            root = os.fspath(base) + os.sep
            prune = exclude.match if exclude is not None else None
            for entry in walk(
                base, sizes=False, prune=prune, check=poll, on_error=lambda rel, exc: unreadable_dirs.append(rel)
            ):
                if not entry.is_file or entry.is_link:
                    if entry.is_dir and not entry.is_link and entry.path.rpartition("/")[2] in UNENTERED_DIRS:
                        unentered.add(entry.path.rpartition("/")[2])
                    continue
                rel = entry.path
                if (include is not None and not include.match(rel)) or (exclude is not None and exclude.match(rel)):
                    continue
                poll()
                _grep_one(root + rel, prefix + rel, query, tally, context, line_numbers, poll)
                if tally.capped:
                    break
        else:
            raise ToolError("That path does not exist. Use file_glob_search to find the file or folder.")
    except OutOfTime:
        out_of_time = True
    return _Searched(tally, unreadable_dirs, unentered, out_of_time)


def _grep_result(searched: _Searched, head: list[str], query: GrepQuery, budget_s: float) -> str:
    tally = searched.tally
    lines = [*head, *tally.lines, "", "---", f"Total matches: {tally.matches}"]
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
    if tally.too_long and query.pattern is not None:
        kib = max(1, LONG_LINE_UNITS // query.pattern.cost // 1024)
        lines.append(
            f"[{len(tally.too_long)} lines longer than {kib} KiB not searched: too long for a pattern this"
            " complex. A simpler pattern (or literal: true) searches them.]"
        )
    lines.extend(walk_notes(searched.out_of_time, searched.unreadable_dirs, searched.unentered, budget_s))
    return "\n".join(lines) + "\n"


@attrs.frozen
class GrepSearch:
    """The `grep_search` tool. `limiter` bounds the worker threads (shared by default)."""

    limiter: trio.CapacityLimiter | None = None
    name: str = "grep_search"
    description: str = (
        "Search the files' text for a regular expression (with literal, the text as written); answers "
        f"path:line:text, at most {MAX_GREP_MATCHES} lines. "
        'Example: {"pattern": "TODO", "include": "*.md"}'
    )
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File or folder to search in (default: the workspace)"},
                "pattern": {
                    "type": "string",
                    "description": (
                        "What to search for: a regular expression (Python syntax; no backreferences or"
                        " lookaround) unless literal is true"
                    ),
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
        what = short(pattern) if isinstance(pattern, str) and pattern else "text"
        return f"Search for {what} in {where(args)}"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Cancelling the call stops the search before its next file, or inside a file
        before the regex engine's next call (a fraction of a second)."""
        workspace = search_root(ctx)
        pattern = args_.string(args, "pattern") or ""
        literal = args_.boolean(args, "literal", False)
        ignore_case = args_.boolean(args, "ignore_case", False)
        path = args_.string(args, "path", required=False)
        job = functools.partial(
            in_thread(functools.partial(_compile_and_search, workspace)),
            workspace,
            path,
            pattern,
            literal,
            ignore_case,
            include=glob_arg(args, "include"),
            exclude=glob_arg(args, "exclude"),
            context=min(args_.whole(args, "context_lines", 0, minimum=0), MAX_CONTEXT_LINES),
            line_numbers=args_.boolean(args, "return_line_numbers", True),
            check=trio.from_thread.check_cancelled,
        )
        return ToolOutcome(await trio.to_thread.run_sync(job, limiter=self.limiter or SEARCH_LIMITER))


def _compile_and_search(
    workspace: Path, base: Path, pattern: str, literal: bool, ignore_case: bool, **kwargs: Any
) -> str:
    # Compiled in the worker thread too: RE2 may take a tenth of a second to find that a
    # pattern is too large, which the event loop should not wait for.
    query = compile_query(pattern, literal=literal, ignore_case=ignore_case)
    # A pattern whose letters have a case is tried with case ignored when it finds nothing.
    caseless = None if ignore_case or pattern == pattern.swapcase() else compile_query(
        pattern, literal=literal, ignore_case=True)
    return grep_search(workspace, base, query, caseless=caseless, **kwargs)
