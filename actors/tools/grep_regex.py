"""grep_search's regular expressions: Python's syntax, matched by RE2.

Python's `re` backtracks: `(a|aa)*c` over a line of 64 `a`s tries more paths than
there are atoms, and it holds the GIL while it does, so one pattern (which a file the
model was asked to read can suggest) would freeze the whole daemon, and a stop could
not end it. RE2 (`google-re2`) is an automaton: its time is linear in the text (times
the size of the compiled pattern, `cost` below), and it lets go of the GIL while it
matches, so the event loop runs beside it.

The pattern is parsed by Python's own parser, so the syntax, the flags and the error
messages are Python's, as the tool promises; the parse tree is then written out in
RE2's syntax (`{,3}`, `\\Z`, `(?x)` and the classes mean what Python means by them).
What an automaton cannot do is refused in plain words, never run: backreferences,
lookahead and lookbehind, atomic groups and possessive repeats, conditionals. (The
other way, Python's `re` in a process killed after a time budget, would cost a process
per search and still answer "too slow" to the patterns it cannot finish; ripgrep
refuses the same constructs without its PCRE2 engine.)

How a pattern is run: `never_nl`, so no match crosses a line and a line is reported
only when the pattern matches inside it; `^` and `$` are line anchors, `\\A` and `\\Z`
the start and end of the file. A pattern that is all ASCII runs in RE2's Latin-1
mode, on bytes, as Python's `re` does on bytes (`.` and classes see one byte, `\\w`
`\\d` `\\s` ASCII); a pattern with other characters (or escapes for them) runs on UTF-8
with Unicode classes, as Python's `re` does on text, except that there `\\b` and `\\B`
(ASCII-only in RE2) are refused rather than silently miss.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Python's own regex parser: private modules without stubs (what they give is Any).
from re import _constants as sre_constants  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import attrs

from actors.errors import ToolError

MAX_REPEAT_COUNT = 1000  # RE2's own limit on a counted repeat such as {1,1000}
MAX_PROGRAM_SIZE = 50_000  # compiled instructions: past this the pattern is refused
RE2_MAX_MEM = 16 * 1024 * 1024  # RE2's budget for one pattern's program and DFA cache

# RE2's two encodings, by name here: re2 itself is imported by the first search, not the daemon's start.
_LATIN1 = "latin1"
_UTF8 = "utf8"
_MAX_CODE = {_LATIN1: 0xFF, _UTF8: 0x10FFFF}

# What Python means by the classes. ASCII (bytes, or the ASCII flag):
_ASCII_DIGIT = ((0x30, 0x39),)
_ASCII_WORD = ((0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A))
_ASCII_SPACE = ((0x09, 0x0D), (0x20, 0x20))
# Unicode (text): str.isspace(), spelled out; \d and \w as RE2's Unicode properties
# (str.isdigit's Nd; str.isalnum's letters and numbers, and `_`).
_UNICODE_SPACE = (
    (0x09, 0x0D), (0x1C, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
    (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000),
)  # fmt: skip
_UNICODE_WORD = r"\p{L}\p{N}_"
_MAXREPEAT = sre_constants.MAXREPEAT  # an open-ended repeat's upper bound

_REFUSED = {
    "GROUPREF": "a backreference (\\1, (?P=name))",
    "GROUPREF_EXISTS": "a conditional group ((?(1)...))",
    "ASSERT": "a lookahead or lookbehind ((?=...), (?<=...))",
    "ASSERT_NOT": "a negative lookahead or lookbehind ((?!...), (?<!...))",
    "ATOMIC_GROUP": "an atomic group ((?>...))",
    "POSSESSIVE_REPEAT": "a possessive repeat (*+, ++, ?+)",
}
_HOW_INSTEAD = (
    " Searches run on a linear-time engine, which has no such construct."
    " Search for a simpler pattern (grep_search lists whole lines: check the rest by reading them),"
    " or for the text as written with literal: true."
)


class _Refused(Exception):
    """The pattern needs what RE2 cannot do (the message says what)."""


@attrs.frozen
class LinePattern:
    """A compiled pattern. `search(data, pos, endpos)` is where its first match in
    `data[pos:endpos]` starts (the rest of `data` is the context `^`, `\\b` and `\\A`
    see), or None. RE2 lets go of the GIL while it searches.

    `cost` is the compiled program's size: RE2's slowest path (its NFA, when the DFA's
    cache keeps filling) spends about that many steps per byte, so a caller bounds the
    bytes it hands one call by it.
    """

    source: bytes
    cost: int
    _regexp: Any = attrs.field(repr=False)

    def search(self, data: bytes, pos: int, endpos: int) -> int | None:
        m = self._regexp.search(data, pos, endpos)
        return None if m is None else int(m.start())


@attrs.frozen
class Compiled:
    """`pattern` ready to run, with `needles`: texts of which every match holds one
    (none when the pattern tells no such texts), to be found with `bytes.find` before
    the pattern looks at a file; `fold` when they are lowered (ASCII) and must be looked
    for in lowered data."""

    pattern: LinePattern
    needles: tuple[bytes, ...]
    fold: bool


def compile_line_pattern(pattern: str, *, ignore_case: bool, literal: bool = False) -> Compiled:
    """`pattern` (Python syntax, or text as written when `literal`) compiled for RE2.

    Raises ToolError with Python's parser message for a pattern that is not valid, and
    with what to do instead for one that needs what RE2 cannot do.
    """
    source = re.escape(pattern) if literal else pattern
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    try:
        parsed = sre_parse.parse(source, flags)
    except re.error as exc:
        raise ToolError(
            f"invalid regex: {exc}. Fix the pattern, or pass literal: true to search for the text as written."
        ) from exc
    except OverflowError as exc:
        raise ToolError(f"invalid regex: {exc}. Fix the pattern.") from exc
    except RecursionError as exc:
        raise ToolError("The pattern nests groups too deeply. Search for a simpler one.") from exc
    global_flags = int(parsed.state.flags)
    encoding = _LATIN1 if source.isascii() and _max_code(parsed.data) < 0x80 else _UTF8
    try:
        body = _Writer(encoding).items(parsed.data, ascii=encoding == _LATIN1 or bool(global_flags & re.ASCII))
    except _Refused as exc:
        raise ToolError(f"The pattern uses {exc}.{_HOW_INSTEAD}") from exc
    except RecursionError as exc:
        raise ToolError("The pattern nests groups too deeply. Search for a simpler one.") from exc
    prefix = "(?m)" + ("(?i)" if global_flags & re.IGNORECASE else "")
    rx_source = (prefix + body).encode("ascii")  # every character above ASCII is written as \x{...}
    compiled = _re2_compile(rx_source, encoding)

    found = _required_texts(parsed.data)
    if not found or (global_flags & re.IGNORECASE and not (flags & re.IGNORECASE)):
        return Compiled(compiled, (), False)  # an inline (?i): the texts are not what to find
    if encoding == _LATIN1:
        raw = tuple(text.encode("ascii") for text in found)
        return Compiled(compiled, tuple(r.lower() for r in raw) if ignore_case else raw, ignore_case)
    if ignore_case:
        return Compiled(compiled, (), False)  # Unicode case folding: no plain bytes to find
    return Compiled(compiled, tuple(text.encode("utf-8") for text in found), False)


def any_of(texts: Iterable[bytes], *, fold: bool = False) -> LinePattern:
    """A pattern that finds any of `texts` (bytes as they are; ASCII case folded when
    `fold`): a one-pass test of whether a file holds one of them."""
    body = b"|".join(b"".join(_byte(c) for c in text) for text in texts)
    return _re2_compile((b"(?i)" if fold else b"") + b"(?:" + body + b")", _LATIN1)


def _byte(code: int) -> bytes:
    return bytes((code,)) if code < 0x80 and chr(code).isalnum() else b"\\x{%x}" % code


def _re2_compile(source: bytes, encoding: str) -> LinePattern:
    import re2  # type: ignore[import-untyped]

    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1 if encoding == _LATIN1 else re2.Options.Encoding.UTF8
    options.never_nl = True  # no match crosses a line; `\n` in a pattern matches nothing
    options.never_capture = True  # only where a match starts is wanted
    options.log_errors = False
    options.max_mem = RE2_MAX_MEM
    try:
        # Built directly rather than through re2.compile, whose cache would keep up to 128
        # patterns, each with a DFA cache that may have grown to RE2_MAX_MEM.
        regexp = re2._Regexp(source, options)
    except re2.error as exc:
        why = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        if "too large" in why or "program size" in why:
            raise ToolError("The pattern is too large to search with. Search for a shorter one.") from exc
        if "repetition" in why:  # RE2 caps the product of nested counts at 1000
            raise ToolError(
                f"The pattern's nested repeats multiply past {MAX_REPEAT_COUNT} ({why}). Search for a shorter one."
            ) from exc
        raise ToolError(f"invalid regex: {why}. Fix the pattern, or pass literal: true.") from exc
    cost = int(regexp.programsize)
    if cost > MAX_PROGRAM_SIZE:
        raise ToolError(
            "The pattern is too large to search with (its repeats multiply out to a very large"
            " automaton). Search for a shorter one."
        )
    return LinePattern(source, cost, regexp)


# ---- writing a Python parse tree in RE2's syntax ----


def _max_code(items: Iterable[tuple[Any, Any]]) -> int:
    """The largest code point a literal or range in the tree names."""
    best = 0
    for op, av in items:
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL"):
            best = max(best, av)
        elif name == "RANGE":
            best = max(best, av[1])
        elif name == "IN":
            best = max(best, _max_code(av))
        elif name == "BRANCH":
            best = max([best, *(_max_code(alt) for alt in av[1])])
        elif name == "SUBPATTERN":
            best = max(best, _max_code(av[3]))
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            best = max(best, _max_code(av[2]))
    return best


def _char(code: int) -> str:
    ch = chr(code)
    return ch if ch.isascii() and ch.isalnum() else f"\\x{{{code:x}}}"


def _ranges_text(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in ranges)


def _complement(ranges: Iterable[tuple[int, int]], top: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    nxt = 0
    for a, b in sorted(ranges):
        if a > nxt:
            out.append((nxt, a - 1))
        nxt = max(nxt, b + 1)
    if nxt <= top:
        out.append((nxt, top))
    return out


class _Writer:
    """Writes parse-tree items as RE2 syntax for one encoding."""

    def __init__(self, encoding: str) -> None:
        self._top = _MAX_CODE[encoding]
        self._unicode_mode = encoding == _UTF8

    def items(self, items: Iterable[tuple[Any, Any]], *, ascii: bool) -> str:
        return "".join(self._item(str(op), av, ascii) for op, av in items)

    def _item(self, op: str, av: Any, ascii: bool) -> str:
        if op in _REFUSED:
            raise _Refused(_REFUSED[op])
        if op == "LITERAL":
            return _char(av)
        if op == "NOT_LITERAL":
            return f"[^{_char(av)}]"
        if op == "ANY":
            return "."
        if op == "IN":
            return self._class(av, ascii)
        if op == "BRANCH":
            return "(?:" + "|".join(self.items(alt, ascii=ascii) for alt in av[1]) + ")"
        if op == "SUBPATTERN":
            _group, add, remove, sub = av
            on = ("i" if add & re.IGNORECASE else "") + ("m" if add & re.MULTILINE else "")
            off = ("i" if remove & re.IGNORECASE else "") + ("m" if remove & re.MULTILINE else "")
            flags = on + (f"-{off}" if off else "")
            return f"(?{flags}:" + self.items(sub, ascii=ascii or bool(add & re.ASCII)) + ")"
        if op in ("MAX_REPEAT", "MIN_REPEAT"):
            low, high, sub = av
            if low > MAX_REPEAT_COUNT or (high != _MAXREPEAT and high > MAX_REPEAT_COUNT):
                raise _Refused(f"a repeat count above {MAX_REPEAT_COUNT}")
            if high == _MAXREPEAT:
                count = {0: "*", 1: "+"}.get(low, f"{{{low},}}")
            elif (low, high) == (0, 1):
                count = "?"
            else:
                count = f"{{{low}}}" if low == high else f"{{{low},{high}}}"
            return "(?:" + self.items(sub, ascii=ascii) + ")" + count + ("?" if op == "MIN_REPEAT" else "")
        if op == "AT":
            at = str(av)
            if at in ("AT_BOUNDARY", "AT_NON_BOUNDARY") and self._unicode_mode and not ascii:
                raise _Refused(
                    "\\b or \\B beside characters other than ASCII (the engine's word boundaries see"
                    " ASCII letters only; leave them out"
                    ")"
                )
            return {
                "AT_BEGINNING": "^",
                "AT_END": "$",
                "AT_BEGINNING_STRING": "\\A",
                "AT_END_STRING": "\\z",
                "AT_BOUNDARY": "\\b",
                "AT_NON_BOUNDARY": "\\B",
            }[at]
        raise _Refused(f"a construct this search does not know ({op})")

    def _class(self, items: list[tuple[Any, Any]], ascii: bool) -> str:
        negate = False
        ranges: list[tuple[int, int]] = []
        props: list[str] = []
        not_word = False
        for op, av in items:
            name = str(op)
            if name == "NEGATE":
                negate = True
            elif name == "LITERAL":
                ranges.append((av, av))
            elif name == "RANGE":
                ranges.append((av[0], min(av[1], self._top)))
            elif name == "CATEGORY":
                cat = str(av).removeprefix("CATEGORY_")
                if ascii or not self._unicode_mode:
                    base = {"DIGIT": _ASCII_DIGIT, "WORD": _ASCII_WORD, "SPACE": _ASCII_SPACE}[cat.removeprefix("NOT_")]
                    ranges.extend(_complement(base, self._top) if cat.startswith("NOT_") else base)
                elif cat == "DIGIT":
                    props.append(r"\p{Nd}")
                elif cat == "NOT_DIGIT":
                    props.append(r"\P{Nd}")
                elif cat == "WORD":
                    props.append(_UNICODE_WORD)
                elif cat == "SPACE":
                    ranges.extend(_UNICODE_SPACE)
                elif cat == "NOT_SPACE":
                    ranges.extend(_complement(_UNICODE_SPACE, self._top))
                elif cat == "NOT_WORD":
                    not_word = True
                else:
                    raise _Refused(f"a class this search does not know ({cat})")
            else:
                raise _Refused(f"a class item this search does not know ({name})")
        ranges = [(a, b) for a, b in ranges if a <= b and a <= self._top]
        rest = _ranges_text(ranges) + "".join(props)
        if not_word:
            if negate:
                if rest:
                    raise _Refused("a negated class holding \\W beside other items, in a pattern with non-ASCII text")
                return f"[{_UNICODE_WORD}]"
            other = f"|[{rest}]" if rest else ""
            return f"(?:[^{_UNICODE_WORD}]{other})"
        if not rest:  # an empty class matches nothing; its negation any character
            return f"[^\\x{{0}}-{_char(self._top)}]" if not negate else f"[\\x{{0}}-{_char(self._top)}]"
        return f"[{'^' if negate else ''}{rest}]"


# ---- the texts every match holds one of ----

MAX_NEEDLES = 16  # alternatives tried as texts to find; more is left to the pattern


def _required_texts(items: Iterable[tuple[Any, Any]]) -> tuple[str, ...]:
    """Texts of which every match of the sequence `items` holds at least one, chosen to
    be long and few (`\\bimport (zlib|bz2|lzma)$` gives "import zlib", "import bz2"
    and "import lzma"); () when the tree tells none (any surprise in it means none,
    never a wrong one)."""
    try:
        best = max(_candidates(list(items)), key=_score, default=())
    except Exception:  # noqa: BLE001 - the parser's tree changed shape: search without texts
        return ()
    return best if best and min(map(len, best)) > 0 else ()


def _score(texts: tuple[str, ...]) -> tuple[int, int]:
    return (min(map(len, texts)) if texts else 0, -len(texts))


def _candidates(seq: list[tuple[Any, Any]]) -> list[tuple[str, ...]]:
    """Sets of texts of which each match of `seq` holds one: the runs of items whose
    matches are few exact texts, and what the other items hold inside them."""
    out: list[tuple[str, ...]] = []
    current: tuple[str, ...] = ("",)
    for op, av in seq:
        texts = _exact(str(op), av)
        if texts is not None and len(current) * len(texts) <= MAX_NEEDLES:
            current = tuple(dict.fromkeys(a + b for a in current for b in texts))
            continue
        out.append(current)
        current = ("",) if texts is None else texts
        if texts is None:
            out.extend(_inner(str(op), av))
    out.append(current)
    return [c for c in out if c != ("",)]


def _inner(op: str, av: Any) -> list[tuple[str, ...]]:
    """What one item that is not a few exact texts still requires of each match."""
    if op == "SUBPATTERN" and not av[1] and not av[2]:
        return _candidates(list(av[3]))
    if op in ("MAX_REPEAT", "MIN_REPEAT") and av[0] >= 1:
        return _candidates(list(av[2]))
    if op == "BRANCH":
        each = [max(_candidates(list(alt)), key=_score, default=()) for alt in av[1]]
        if all(each):
            union = tuple(dict.fromkeys(t for texts in each for t in texts))
            if len(union) <= MAX_NEEDLES:
                return [union]
    return []


def _exact(op: str, av: Any) -> tuple[str, ...] | None:
    """The few exact texts one item matches (zero-width items match ""), or None."""
    if op == "LITERAL":
        return (chr(av),)
    if op == "AT":
        return ("",)
    if op == "SUBPATTERN" and not av[1] and not av[2]:
        return _exact_seq(list(av[3]))
    if op == "BRANCH":
        texts: list[str] = []
        for alt in av[1]:
            alt_texts = _exact_seq(list(alt))
            if alt_texts is None:
                return None
            texts.extend(alt_texts)
        return tuple(dict.fromkeys(texts)) if len(texts) <= MAX_NEEDLES else None
    if op == "IN" and 0 < len(av) <= 4 and all(str(o) == "LITERAL" for o, _ in av):
        return tuple(chr(a) for _, a in av)
    if op in ("MAX_REPEAT", "MIN_REPEAT") and av[0] == av[1] and 0 < av[0] <= 4:
        one = _exact_seq(list(av[2]))
        if one is None or len(one) ** av[0] > MAX_NEEDLES:
            return None
        texts_n: tuple[str, ...] = ("",)
        for _ in range(av[0]):
            texts_n = tuple(dict.fromkeys(a + b for a in texts_n for b in one))
        return texts_n
    return None


def _exact_seq(seq: list[tuple[Any, Any]]) -> tuple[str, ...] | None:
    current: tuple[str, ...] = ("",)
    for op, av in seq:
        texts = _exact(str(op), av)
        if texts is None or len(current) * len(texts) > MAX_NEEDLES:
            return None
        current = tuple(dict.fromkeys(a + b for a in current for b in texts))
    return current
