"""Splits a local model's raw output into answer text, reasoning and tool calls.

The output arrives in pieces cut anywhere (tokens). Four syntaxes are understood,
the families llama.cpp's server parses for the chat templates found in GGUFs:

- ``hermes`` (Hermes 2 Pro, Qwen 2.5, Qwen 3): text, and calls written as
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, one after another.
- ``llama3`` (Llama 3.1-3.3): the whole answer is one object ``{"name": ...,
  "parameters": {...}}`` (``"arguments"`` is taken too), maybe after
  ``<|python_tag|>``; an answer that does not begin with ``{`` is text.
- ``mistral`` (Mistral Nemo, Small): text, then ``[TOOL_CALLS]`` and a JSON array of
  ``{"name", "arguments", "id"}`` objects.
- ``generic`` (templates with no tool syntax; the daemon constrains the answer with a
  grammar): ``{"tool_calls": [...]}``, ``{"tool_call": {...}}`` or ``{"response": "..."}``,
  the response string streaming out as text while it is written.

In all of them ``<think>...</think>`` blocks at the start are reasoning
(``thinking_open=True``: the template opened the block, the answer starts inside
it). A ``</think>`` that was never opened means the template opened it unannounced:
the text shown so far was reasoning, and a `Retract` event says so.

Calls. `CallStart` comes once the name is read and the arguments have begun (in
mistral, once the model's own id is read too, as its models write it last), so the
announced id is final: the model's id when it wrote one by then, else ``call_<n>``.
The arguments then stream as `CallArgs` fragments of the JSON text exactly as
written (from the value's first character to its last); a call without arguments
gets ``{}``. A call that cannot be run (bad JSON, no name, arguments that are not an
object, output cut off) still ends, with `CallEnd.error` saying why and its
arguments as far as they were written; in llama3 (and generic), JSON that is not a
call is shown as text. Pure: feed text in, get events out; no I/O, nothing async,
so cancellation is the caller's.

Cost. Each piece is looked at once: tags are found with ``str.find``/regex searches
over the new text only, and JSON goes through a structural scanner (depth, strings,
escapes, the key at each level, where a value starts and ends) that keeps its state
between pieces, so a call's arguments stream out as they are written and the cost
of a piece does not grow with what came before. The only text held back is what
could still become a tag, plus trailing whitespace (whitespace right before a tag
or at the very end is dropped, so answers do not end in the newlines that separate
calls).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import NamedTuple

import attrs

FORMATS = ("hermes", "llama3", "mistral", "generic")

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
HERMES_OPEN = "<tool_call>"
HERMES_CLOSE = "</tool_call>"
MISTRAL_OPEN = "[TOOL_CALLS]"
PYTHON_TAG = "<|python_tag|>"

# ---- events ----


@attrs.frozen
class Text:
    text: str


@attrs.frozen
class Reasoning:
    text: str


@attrs.frozen
class CallStart:
    """A call begins; its name and id are final. Comes before its first `CallArgs`."""

    index: int
    call_id: str
    name: str


@attrs.frozen
class CallArgs:
    """A fragment of the call's arguments, exactly as the model wrote them."""

    index: int
    text: str


@attrs.frozen
class CallEnd:
    """The call is complete; `error` says, in plain words, why it cannot be run."""

    index: int
    error: str | None = None


@attrs.frozen
class Retract:
    """Text already shown was reasoning: here are the whole text and reasoning so far."""

    text: str
    reasoning: str


Event = Text | Reasoning | CallStart | CallArgs | CallEnd | Retract


class ParsedCall(NamedTuple):
    id: str
    name: str
    arguments: str  # the JSON text of the arguments as written


@attrs.frozen
class ParseResult:
    text: str
    reasoning: str
    calls: tuple[ParsedCall, ...]
    errors: Mapping[int, str]  # call index -> why that call cannot be run


def detect_format(chat_template: str | None) -> str:
    """The tool-call syntax a GGUF chat template teaches its model (one of FORMATS)."""
    t = chat_template or ""
    if HERMES_OPEN in t:
        return "hermes"
    if MISTRAL_OPEN in t:
        return "mistral"
    if PYTHON_TAG in t or ("<|start_header_id|>" in t and '"parameters"' in t):
        return "llama3"
    return "generic"


# ---- the JSON structural scanner ----

_NOT_WS = re.compile(r"[^ \t\n\r]")
_STR_STOP = re.compile(r'["\\]')
_PRIM_STOP = re.compile(r'[ \t\n\r,:\[\]{}"]')
_PRIM_FIRST = frozenset("-0123456789tfn")

# What the scanner expects next, outside strings.
_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _COLON, _COMMA_OR_CLOSE, _DONE = range(7)


class _Broken(Exception):
    """The JSON cannot go on at `pos` (from the scanner, or a shape the parser refuses)."""

    def __init__(self, pos: int, reason: str) -> None:
        super().__init__(reason)
        self.pos = pos
        self.reason = reason


class _JsonScanner:
    """Follows the structure of one JSON value fed in pieces.

    Tells its sink where each value at depth <= `watch` starts (with the key it sits
    under) and ends; deeper values cost no calls. It checks structure (brackets,
    colons, commas, strings), not the spelling of numbers and literals: the parser
    validates the text of a call's arguments once, when the call is complete.
    """

    __slots__ = (
        "_sink",
        "_watch",
        "_objs",
        "_keys",
        "_expect",
        "_str",
        "_esc",
        "_prim",
        "_key_from",
        "_key_parts",
        "done",
    )

    def __init__(self, sink: ToolCallParser, watch: int) -> None:
        self._sink = sink
        self._watch = watch
        self._objs: list[bool] = []  # one per open container: is it an object
        self._keys: list[str | None] = []  # the current key of each open container
        self._expect = _VALUE
        self._str = 0  # 1: in a key, 2: in a string value
        self._esc = False
        self._prim = False
        self._key_from = -1  # where the key being read starts in this piece, -1 when not kept
        self._key_parts: list[str] = []
        self.done = False

    def flush(self, data: str) -> None:
        """The piece ends: keep what a key being read has so far."""
        if self._key_from >= 0:
            self._key_parts.append(data[self._key_from :])
            self._key_from = 0

    def scan(self, data: str, pos: int) -> int:
        """Scan from `pos`; return where it stopped (the end, or just after the value)."""
        n = len(data)
        objs = self._objs
        while pos < n:
            if self._str:
                if self._esc:
                    self._esc = False
                    pos += 1
                    continue
                m = _STR_STOP.search(data, pos)
                if m is None:
                    return n
                pos = m.end()
                if data[pos - 1] == "\\":
                    self._esc = True
                    continue
                if self._str == 1:
                    key = None
                    if self._key_from >= 0:
                        self._key_parts.append(data[self._key_from : pos - 1])
                        key = _decode_key("".join(self._key_parts))
                        self._key_parts = []
                        self._key_from = -1
                    self._keys[-1] = key
                    self._str = 0
                    self._expect = _COLON
                    continue
                self._str = 0
                self._end_value(pos)
            elif self._prim:
                m = _PRIM_STOP.search(data, pos)
                if m is None:
                    return n
                pos = m.start()
                self._prim = False
                self._end_value(pos)
            else:
                m = _NOT_WS.search(data, pos)
                if m is None:
                    return n
                pos = m.start()
                c = data[pos]
                expect = self._expect
                if expect <= _VALUE_OR_CLOSE:
                    if c == "]" and expect == _VALUE_OR_CLOSE:
                        pos = self._close(pos)
                    elif c == "{" or c == "[":
                        self._start_value(pos, c)
                        objs.append(c == "{")
                        self._keys.append(None)
                        self._expect = _KEY_OR_CLOSE if c == "{" else _VALUE_OR_CLOSE
                        pos += 1
                    elif c == '"':
                        self._start_value(pos, c)
                        self._str = 2
                        pos += 1
                    elif c in _PRIM_FIRST:
                        self._start_value(pos, c)
                        self._prim = True
                        pos += 1
                    else:
                        raise _Broken(pos, f"unexpected {c!r} where a value should be")
                elif expect <= _KEY_OR_CLOSE:
                    if c == '"':
                        self._str = 1
                        pos += 1
                        self._key_from = pos if len(objs) <= self._watch else -1
                    elif c == "}" and expect == _KEY_OR_CLOSE:
                        pos = self._close(pos)
                    else:
                        raise _Broken(pos, f"unexpected {c!r} where a key should be")
                elif expect == _COLON:
                    if c != ":":
                        raise _Broken(pos, f"unexpected {c!r} where ':' should be")
                    self._expect = _VALUE
                    pos += 1
                elif expect == _COMMA_OR_CLOSE:
                    if c == ",":
                        self._expect = _KEY if objs[-1] else _VALUE
                        pos += 1
                    elif c == ("}" if objs[-1] else "]"):
                        pos = self._close(pos)
                    else:
                        raise _Broken(pos, f"unexpected {c!r} after a value")
                else:
                    raise _Broken(pos, "text after the end of the JSON value")
            if self.done:
                return pos
        return pos

    def _start_value(self, pos: int, c: str) -> None:
        depth = len(self._objs)
        if depth <= self._watch:
            key = self._keys[-1] if depth and self._objs[-1] else None
            self._sink._value_start(depth, key, pos, c)

    def _close(self, pos: int) -> int:
        self._objs.pop()
        self._keys.pop()
        self._end_value(pos + 1)
        return pos + 1

    def _end_value(self, end: int) -> None:
        depth = len(self._objs)
        if depth <= self._watch:
            self._sink._value_end(depth, end)
        if depth == 0:
            self.done = True
            self._expect = _DONE
        else:
            self._expect = _COMMA_OR_CLOSE


def _decode_key(raw: str) -> str:
    if "\\" not in raw:
        return raw
    try:
        return str(json.loads(f'"{raw}"'))
    except ValueError:
        return raw


# ---- small helpers ----

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


class _StrDecoder:
    """Decodes the inside of a JSON string fed in pieces, escapes split anywhere.

    A lone surrogate (a \\uD83D never followed by its pair) becomes U+FFFD.
    """

    __slots__ = ("_pend", "_high")

    def __init__(self) -> None:
        self._pend = ""  # an escape cut by the end of a piece
        self._high = 0  # a high surrogate waiting for its pair

    def feed(self, raw: str) -> str:
        if self._pend:
            raw = self._pend + raw
            self._pend = ""
        out: list[str] = []
        i, n = 0, len(raw)
        while True:
            j = raw.find("\\", i)
            if j < 0:
                self._plain(out, raw[i:])
                break
            self._plain(out, raw[i:j])
            if j + 1 >= n or (raw[j + 1] == "u" and j + 6 > n):
                self._pend = raw[j:]
                break
            c = raw[j + 1]
            if c != "u":
                self._plain(out, _ESCAPES.get(c, c))
                i = j + 2
                continue
            digits = raw[j + 2 : j + 6]
            if not _HEX4.fullmatch(digits):
                self._plain(out, "u")
                i = j + 2
                continue
            i = j + 6
            code = int(digits, 16)
            if 0xD800 <= code <= 0xDBFF:
                if self._high:
                    out.append("\ufffd")
                self._high = code
            elif 0xDC00 <= code <= 0xDFFF:
                if self._high:
                    out.append(chr(0x10000 + ((self._high - 0xD800) << 10) + (code - 0xDC00)))
                    self._high = 0
                else:
                    out.append("\ufffd")
            else:
                self._plain(out, chr(code))
        return "".join(out)

    def finish(self) -> str:
        out: list[str] = []
        pend, self._pend = self._pend, ""
        self._plain(out, pend[1:])
        if self._high:
            out.append("\ufffd")
            self._high = 0
        return "".join(out)

    def _plain(self, out: list[str], s: str) -> None:
        if s:
            if self._high:
                out.append("\ufffd")
                self._high = 0
            out.append(s)


class _Channel:
    """Text or reasoning as shown: no leading whitespace, trailing whitespace held
    until more text follows (and dropped at a tag or at the end)."""

    __slots__ = ("parts", "_pending")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._pending = ""

    def write(self, s: str) -> str:
        """Take raw text; return what can be shown now."""
        if not self.parts:
            s = s.lstrip()
        body = s.rstrip()
        if not body:
            if self.parts:
                self._pending += s
            return ""
        chunk = self._pending + body
        self._pending = s[len(body) :]
        self.parts.append(chunk)
        return chunk

    def cut(self) -> None:
        self._pending = ""

    def separate(self, sep: str) -> None:
        """What follows is a new block: put `sep` before it (if anything was shown)."""
        self._pending = sep if self.parts else ""

    def reset(self) -> None:
        self.parts = []
        self._pending = ""

    def value(self) -> str:
        return "".join(self.parts)


class _Cap:
    """Captures a stretch of the stream that may span pieces."""

    __slots__ = ("start", "parts")

    def __init__(self, start: int) -> None:
        self.start = start
        self.parts: list[str] = []

    def flush(self, data: str) -> None:
        self.parts.append(data[self.start :])
        self.start = 0

    def close(self, data: str, end: int) -> str:
        self.parts.append(data[self.start : end])
        return "".join(self.parts)


class _Call:
    """A call being read."""

    __slots__ = (
        "index",
        "id",
        "name",
        "model_id",
        "problem",
        "started",
        "obj_cap",
        "name_cap",
        "id_cap",
        "args_state",
        "args_from",
        "args_parts",
        "rest",
    )

    def __init__(self) -> None:
        self.index = -1
        self.id = ""
        self.name: str | None = None
        self.model_id = ""
        self.problem: str | None = None
        self.started = False
        self.obj_cap: _Cap | None = None  # the whole object, until the call starts
        self.name_cap: _Cap | None = None
        self.id_cap: _Cap | None = None
        self.args_state = 0  # 0 not seen, 1 being read, 2 complete, 3 cut by an error
        self.args_from = 0
        self.args_parts: list[str] = []
        self.rest: list[str] = []  # raw text after the point where a broken call broke


def _partial_tail(data: str, start: int, tags: tuple[str, ...]) -> int:
    """The length of the longest end of data[start:] that is a proper start of a tag."""
    n = len(data)
    lo = max(start, n - max(map(len, tags)) + 1)
    best = 0
    for first in {t[0] for t in tags}:
        p = data.find(first, lo)
        while 0 <= p and n - p > best:
            tail = data[p:]
            if any(len(t) > len(tail) and t.startswith(tail) for t in tags):
                best = n - p
                break
            p = data.find(first, p + 1)
    return best


def _args_problem(args: str) -> str | None:
    try:
        value = json.loads(args)
    except ValueError as exc:
        return f"the arguments are not valid JSON ({exc})"
    except RecursionError:
        return "the arguments are nested too deeply"
    if not isinstance(value, dict):
        return "the arguments must be a JSON object"
    return None


def _json_scalar(raw: str) -> object:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


# Parser states.
_START, _REASONING, _TEXT, _JSON, _AFTER, _RAW, _DONE_STATE = range(7)
# What a JSON value is to the parser.
_R_OTHER, _R_ENV, _R_CALLS, _R_CALL, _R_NAME, _R_ARGS, _R_ID, _R_RESPONSE = range(8)

_WATCH = {"hermes": 2, "mistral": 2, "llama3": 1, "generic": 3}
_OPENERS = {
    "hermes": (THINK_OPEN, HERMES_OPEN),
    "mistral": (THINK_OPEN, MISTRAL_OPEN),
    "llama3": (THINK_OPEN, PYTHON_TAG, "{"),
    "generic": (THINK_OPEN, "{"),
}
_TEXT_TAGS = {"hermes": (HERMES_OPEN, HERMES_CLOSE), "mistral": (MISTRAL_OPEN,), "llama3": (PYTHON_TAG,), "generic": ()}
_CUT_OFF = "the output ended before the tool call was complete"


class ToolCallParser:
    """See the module docstring. `feed()` pieces, then `finish()` once; read `result`.

    Neither raises on what the model wrote: a call that cannot be read still ends
    (`CallEnd` with an `error`, the arguments as far as they were written), and JSON
    that was not a call (llama3, generic) comes out as text.
    """

    def __init__(self, fmt: str, *, thinking_open: bool = False) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"unknown tool-call format {fmt!r}; expected one of {', '.join(FORMATS)}")
        self._fmt = fmt
        self._state = _REASONING if thinking_open else _START
        self._think_seen = thinking_open  # once a think block opened, no text is retracted
        self._attempted = False  # a call was attempted: no text is retracted either
        self._held = ""
        self._hold = False
        self._text = _Channel()
        self._reasoning = _Channel()
        self._out: list[Event] = []
        self._calls: list[ParsedCall] = []
        self._errors: dict[int, str] = {}
        self._n_calls = 0
        tags = _TEXT_TAGS[fmt]
        self._text_tags = {False: tags, True: (*tags, THINK_CLOSE)}
        self._text_rx = {k: re.compile("|".join(map(re.escape, v))) if v else None for k, v in self._text_tags.items()}
        # the JSON envelope being read
        self._data = ""
        self._scan: _JsonScanner | None = None
        self._roles: list[int] = []
        self._caps: list[_Cap] = []
        self._call: _Call | None = None
        self._failed: _Call | None = None
        self._env_cap: _Cap | None = None
        self._resp: _StrDecoder | None = None
        self._resp_from = 0

    # ---- the API ----

    def feed(self, text: str) -> list[Event]:
        """Take the next piece; return the events it completes."""
        if self._state == _DONE_STATE:
            raise RuntimeError("feed() after finish()")
        data, self._held = self._held + text, ""
        self._run(data, final=False)
        return self._take()

    def finish(self) -> list[Event]:
        """The output ended: flush what was held back and close what is open."""
        if self._state == _DONE_STATE:
            return []
        data, self._held = self._held, ""
        self._run(data, final=True)
        if self._state == _JSON:
            self._data = ""
            self._broken("", 0, _CUT_OFF)
        if self._state == _RAW:
            self._end_failed()
        self._text.cut()
        self._reasoning.cut()
        self._state = _DONE_STATE
        return self._take()

    @property
    def result(self) -> ParseResult:
        return ParseResult(self._text.value(), self._reasoning.value(), tuple(self._calls), dict(self._errors))

    # ---- the outer state machine ----

    def _take(self) -> list[Event]:
        out, self._out = self._out, []
        return out

    def _run(self, data: str, final: bool) -> None:
        pos, n = 0, len(data)
        while pos < n:
            st = self._state
            if st == _TEXT:
                pos = self._in_text(data, pos, final)
            elif st == _JSON:
                pos = self._in_json(data, pos)
            elif st == _START:
                pos = self._at_start(data, pos, final)
            elif st == _REASONING:
                pos = self._in_reasoning(data, pos, final)
            elif st == _AFTER:
                pos = self._after_envelope(data, pos, final)
            else:
                pos = self._in_raw(data, pos, final)
            if self._hold:
                self._hold = False
                self._held = data[pos:]
                break
        if self._state == _JSON:
            self._flush(data)

    def _held_at(self, pos: int) -> int:
        self._hold = True
        return pos

    @property
    def _can_retract(self) -> bool:
        return not self._think_seen and not self._attempted

    def _say(self, s: str) -> None:
        if s:
            chunk = self._text.write(s)
            if chunk:
                self._out.append(Text(chunk))

    def _think(self, s: str) -> None:
        if s:
            chunk = self._reasoning.write(s)
            if chunk:
                self._out.append(Reasoning(chunk))

    def _at_start(self, data: str, pos: int, final: bool) -> int:
        """The answer begins (or begins again after a think block): whitespace is dropped."""
        m = _NOT_WS.search(data, pos)
        if m is None:
            return len(data)
        i = m.start()
        tags = _OPENERS[self._fmt] + ((THINK_CLOSE,) if self._can_retract else ())
        for tag in tags:
            if data.startswith(tag, i):
                return self._start_tag(tag, data, i)
        rest = data[i : i + 16]
        if not final and len(rest) < 16 and any(len(t) > len(rest) and t.startswith(rest) for t in tags):
            return self._held_at(i)
        self._state = _TEXT
        return i

    def _start_tag(self, tag: str, data: str, i: int) -> int:
        if tag == THINK_OPEN:
            self._think_seen = True
            self._reasoning.separate("\n\n")
            self._state = _REASONING
        elif tag == THINK_CLOSE:  # an empty block the template opened
            self._think_seen = True
        elif tag == PYTHON_TAG:
            self._attempted = True
            self._state = _AFTER
        elif tag == "{":
            return self._open_envelope(i)
        else:
            return self._open_envelope(i + len(tag))
        return i + len(tag)

    def _in_reasoning(self, data: str, pos: int, final: bool) -> int:
        at = data.find(THINK_CLOSE, pos)
        if at >= 0:
            self._think(data[pos:at])
            self._reasoning.cut()
            self._state = _START
            return at + len(THINK_CLOSE)
        n = len(data)
        keep = 0 if final else _partial_tail(data, pos, (THINK_CLOSE,))
        self._think(data[pos : n - keep])
        return self._held_at(n - keep) if keep else n

    def _in_text(self, data: str, pos: int, final: bool) -> int:
        retract = self._can_retract
        rx = self._text_rx[retract]
        m = rx.search(data, pos) if rx is not None else None
        if m is None:
            n = len(data)
            tags = self._text_tags[retract]
            keep = 0 if final or not tags else _partial_tail(data, pos, tags)
            self._say(data[pos : n - keep])
            return self._held_at(n - keep) if keep else n
        tag, end = m.group(), m.end()
        if tag == THINK_CLOSE:
            self._retract(data[pos : m.start()])
            return end
        self._say(data[pos : m.start()])
        self._text.cut()
        if tag == HERMES_CLOSE:  # a stray closing tag: not shown
            return end
        if tag == PYTHON_TAG:
            self._attempted = True
            self._state = _AFTER
            return end
        return self._open_envelope(end)

    def _retract(self, before: str) -> None:
        """`</think>` with no `<think>`: the template had opened the block, so all the
        text so far was reasoning."""
        shown = bool(self._text.parts)
        self._text.write(before)
        moved = self._text.value()
        self._text.reset()
        self._think_seen = True
        self._state = _START
        if moved:
            chunk = self._reasoning.write(moved)
            self._reasoning.cut()
            if shown:
                self._out.append(Retract(self._text.value(), self._reasoning.value()))
            elif chunk:
                self._out.append(Reasoning(chunk))

    def _after_envelope(self, data: str, pos: int, final: bool) -> int:
        """After a call's JSON (or `<|python_tag|>`): its closing tag, the next call, or text."""
        n = len(data)
        if self._fmt == "hermes":
            # Small models sometimes close the object twice: `}}` before `</tool_call>`.
            j = pos
            while j < n and data[j] in " \t\n\r}":
                j += 1
            if data.startswith(HERMES_CLOSE, j):
                self._state = _TEXT
                return j + len(HERMES_CLOSE)
            if not final and n - j < len(HERMES_CLOSE) and HERMES_CLOSE.startswith(data[j:]):
                return n if j == n and "}" not in data[pos:j] else self._held_at(pos)
            self._state = _TEXT  # not the closing tag: text (stray braces included)
            m = _NOT_WS.search(data, pos)
            return m.start() if m else n
        if self._fmt == "llama3":
            j = pos
            while j < n and data[j] in " \t\n\r;":
                j += 1
            if j == n:
                return n
            if data[j] == "{":
                return self._open_envelope(j)
            self._state = _TEXT
            return j
        self._state = _TEXT
        return pos

    def _in_raw(self, data: str, pos: int, final: bool) -> int:
        """A broken call: its raw text runs to `</tool_call>` (hermes) or the end."""
        call, n = self._failed, len(data)
        if self._fmt != "hermes":
            if call is not None:
                call.rest.append(data[pos:])
            return n
        at = data.find(HERMES_CLOSE, pos)
        if at >= 0:
            if call is not None:
                call.rest.append(data[pos:at])
            self._end_failed()
            self._state = _TEXT
            return at + len(HERMES_CLOSE)
        keep = 0 if final else _partial_tail(data, pos, (HERMES_CLOSE,))
        if call is not None:
            call.rest.append(data[pos : n - keep])
        return self._held_at(n - keep) if keep else n

    # ---- the JSON envelope ----

    def _open_envelope(self, pos: int) -> int:
        self._attempted = True
        self._text.cut()
        self._scan = _JsonScanner(self, _WATCH[self._fmt])
        self._roles = []
        self._state = _JSON
        return pos

    def _in_json(self, data: str, pos: int) -> int:
        self._data = data
        assert self._scan is not None
        try:
            end = self._scan.scan(data, pos)
        except _Broken as exc:
            return self._broken(data, exc.pos, f"the tool call is not valid JSON: {exc.reason}")
        if self._scan.done:
            if self._env_cap is not None:  # a generic answer that was JSON but neither reply nor call
                self._say(self._uncap(self._env_cap, end))
                self._env_cap = None
            self._scan = None
            self._caps.clear()
            self._state = _AFTER
        return end

    def _flush(self, data: str) -> None:
        """The piece ends inside the envelope: keep or show what open values hold."""
        for cap in self._caps:
            cap.flush(data)
        if self._scan is not None:
            self._scan.flush(data)
        call = self._call
        if call is not None and call.args_state == 1:
            chunk = data[call.args_from :]
            call.args_from = 0
            if chunk:
                call.args_parts.append(chunk)
                if call.started:
                    self._out.append(CallArgs(call.index, chunk))
        if self._resp is not None:
            self._say(self._resp.feed(data[self._resp_from :]))
            self._resp_from = 0

    def _cap(self, pos: int) -> _Cap:
        cap = _Cap(pos)
        self._caps.append(cap)
        return cap

    def _uncap(self, cap: _Cap, end: int) -> str:
        self._caps.remove(cap)
        return cap.close(self._data, end)

    def _value_start(self, depth: int, key: str | None, pos: int, c: str) -> None:
        """From the scanner: a value at `depth` (under `key`) starts with `c` at `pos`."""
        roles = self._roles
        del roles[depth:]
        call = self._call
        role = _R_OTHER
        if depth == 0:
            if self._fmt == "generic":
                role = _R_ENV
                self._env_cap = self._cap(pos)
            elif c == "{":
                role = _R_CALL
            elif c == "[":
                role = _R_CALLS
            else:
                raise _Broken(pos, "expected a JSON object (or an array of them)")
        else:
            parent = roles[depth - 1]
            if parent == _R_CALL and call is not None:
                if key == "name" and call.name is None and call.name_cap is None:
                    role = _R_NAME
                elif key in ("arguments", "parameters") and call.args_state == 0:
                    role = _R_ARGS
                elif key == "id" and call.id_cap is None:
                    role = _R_ID
            elif parent == _R_CALLS:
                if c != "{":
                    raise _Broken(pos, "each tool call must be a JSON object")
                role = _R_CALL
            elif parent == _R_ENV:
                if key == "tool_calls" and c == "[":
                    role = _R_CALLS
                elif key == "tool_call" and c == "{":
                    role = _R_CALL
                elif key == "response" and c == '"':
                    role = _R_RESPONSE
                if role != _R_OTHER and self._env_cap is not None:
                    self._caps.remove(self._env_cap)
                    self._env_cap = None
        roles.append(role)
        if role == _R_CALL:
            call = self._call = _Call()
            call.obj_cap = self._cap(pos)
        elif role == _R_RESPONSE:
            self._resp = _StrDecoder()
            self._resp_from = pos + 1
        elif call is None:  # name, arguments and id are only ever read inside a call
            pass
        elif role == _R_NAME:
            call.name_cap = self._cap(pos)
        elif role == _R_ID:
            call.id_cap = self._cap(pos)
        elif role == _R_ARGS:
            call.args_state = 1
            call.args_from = pos
            self._maybe_start(call, pos)

    def _value_end(self, depth: int, end: int) -> None:
        """From the scanner: the value at `depth` ends just before `end`."""
        role = self._roles.pop()
        call = self._call
        if role == _R_CALL:
            self._call_done(end)
        elif role == _R_ARGS:
            assert call is not None
            chunk = self._data[call.args_from : end]
            call.args_state = 2
            if chunk:
                call.args_parts.append(chunk)
                if call.started:
                    self._out.append(CallArgs(call.index, chunk))
        elif role == _R_NAME:
            assert call is not None and call.name_cap is not None
            value = _json_scalar(self._uncap(call.name_cap, end))
            if isinstance(value, str) and value.strip():
                call.name = value.strip()
            elif self._fmt != "llama3":  # in llama3 JSON without a usable name is not a call
                call.name = ""
                call.problem = "the tool name must be a non-empty string"
            self._maybe_start(call, end)
        elif role == _R_ID:
            assert call is not None and call.id_cap is not None
            raw = self._uncap(call.id_cap, end)
            value = _json_scalar(raw)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                call.model_id = str(value)
            self._maybe_start(call, end)
        elif role == _R_RESPONSE:
            assert self._resp is not None
            self._say(self._resp.feed(self._data[self._resp_from : end - 1]) + self._resp.finish())
            self._resp = None

    def _maybe_start(self, call: _Call, pos: int) -> None:
        """Start the call once its name is read and its arguments have begun; in mistral,
        whose model writes its own call ids (usually last), once the id is read too, so
        the id the stream announces is the model's."""
        if not call.started and call.name is not None and call.args_state and (call.model_id or self._fmt != "mistral"):
            self._start_call(call, pos)

    def _start_call(self, call: _Call, pos: int) -> None:
        call.index = self._n_calls
        self._n_calls += 1
        call.id = call.model_id or f"call_{call.index}"
        call.started = True
        if call.obj_cap is not None:
            self._caps.remove(call.obj_cap)
            call.obj_cap = None
        self._out.append(CallStart(call.index, call.id, call.name or ""))
        if call.args_state == 1:
            chunk = self._data[call.args_from : pos]
            call.args_from = pos
            if chunk:
                call.args_parts.append(chunk)
        if call.args_parts:
            self._out.append(CallArgs(call.index, "".join(call.args_parts)))

    def _end_call(self, call: _Call, error: str | None) -> None:
        args = "".join(call.args_parts)
        if error is None:
            error = call.problem or _args_problem(args)
        self._calls.append(ParsedCall(call.id, call.name or "", args))
        if error is not None:
            self._errors[call.index] = error
        self._out.append(CallEnd(call.index, error))

    def _call_done(self, end: int) -> None:
        """A call object closed."""
        call, self._call = self._call, None
        assert call is not None
        if not call.started:
            if self._fmt == "llama3" and (call.name is None or call.args_state == 0):
                assert call.obj_cap is not None
                self._say(self._uncap(call.obj_cap, end))  # JSON, but not a call: an answer
                return
            if call.name is None:
                call.name = ""
                call.problem = "the tool call has no name"
                if call.args_state == 0:
                    assert call.obj_cap is not None
                    call.args_parts = [self._uncap(call.obj_cap, end)]
            elif call.args_state == 0:  # a tool without parameters
                call.args_parts = ["{}"]
            call.args_state = 2
            self._start_call(call, end)
        self._end_call(call, None)

    def _broken(self, data: str, e: int, problem: str) -> int:
        """The envelope broke (or the output ended) at `e`; decide what the rest is."""
        call, self._call = self._call, None
        resp, self._resp = self._resp, None
        env_cap, self._env_cap = self._env_cap, None
        self._scan = None
        self._state = _TEXT
        if call is not None:
            if call.args_state == 1:
                chunk = data[call.args_from : e]
                if chunk:
                    call.args_parts.append(chunk)
                    if call.started:
                        self._out.append(CallArgs(call.index, chunk))
                call.args_state = 3
            if call.name and not call.problem and call.args_state == 2:
                # Name and arguments are complete (the object was not closed): run it.
                if not call.started:
                    self._start_call(call, e)
                self._end_call(call, None)
                if self._fmt == "hermes":
                    self._state = _RAW
            elif self._fmt == "llama3" and not call.started:
                assert call.obj_cap is not None
                self._say(call.obj_cap.close(data, e))
            else:
                if not call.started:
                    if call.args_state == 0:
                        assert call.obj_cap is not None
                        call.args_parts = [call.obj_cap.close(data, e)]
                        call.args_state = 3
                    if call.name is None:
                        call.name = ""
                    self._start_call(call, e)
                call.problem = call.problem or problem
                if call.args_state == 3:
                    self._failed = call
                    self._state = _RAW
                else:
                    self._end_call(call, None)
                    if self._fmt == "hermes":
                        self._state = _RAW
        else:
            if resp is not None:
                self._say(resp.feed(data[self._resp_from : e]) + resp.finish())
            if self._fmt == "hermes":
                failed = _Call()
                failed.name = ""
                failed.problem = problem
                failed.args_state = 3
                self._start_call(failed, e)
                self._failed = failed
                self._state = _RAW
            elif env_cap is not None:
                self._say(env_cap.close(data, e))
        self._caps.clear()
        self._roles.clear()
        return e

    def _end_failed(self) -> None:
        call, self._failed = self._failed, None
        if call is None:
            return
        rest = "".join(call.rest).rstrip()
        if not call.args_parts:
            rest = rest.lstrip()
        if rest:
            call.args_parts.append(rest)
            self._out.append(CallArgs(call.index, rest))
        self._end_call(call, call.problem)
