"""JSON fed in pieces cut anywhere: the structural scanner the envelope reader runs over a call's
envelope, the decoder for a JSON string's inside, and the checks made once a call's
text is complete.

`JsonScanner` keeps its state between pieces (depth, strings, escapes, the key at
each level) and tells its sink where each watched value starts and ends, so the cost
of a piece does not grow with what came before. `StrDecoder` decodes a string's
inside with escapes split anywhere. Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from typing import Protocol

NOT_WS = re.compile(r"[^ \t\n\r]")
_STR_STOP = re.compile(r'["\\]')
_PRIM_STOP = re.compile(r'[ \t\n\r,:\[\]{}"]')
_PRIM_FIRST = frozenset("-0123456789tfn")

# What the scanner expects next, outside strings.
_VALUE, _VALUE_OR_CLOSE, _KEY, _KEY_OR_CLOSE, _COLON, _COMMA_OR_CLOSE, _DONE = range(7)


class BrokenJson(Exception):
    """The JSON cannot go on at `pos` (from the scanner, or a shape the envelope reader refuses)."""

    def __init__(self, pos: int, reason: str) -> None:
        super().__init__(reason)
        self.pos = pos
        self.reason = reason


class ScanSink(Protocol):
    """What `JsonScanner` reports to (envelope.py's EnvelopeReader)."""

    def value_start(self, depth: int, key: str | None, pos: int, c: str) -> None: ...

    def value_end(self, depth: int, end: int) -> None: ...


class JsonScanner:
    """Follows the structure of one JSON value fed in pieces.

    Tells its sink where each value at depth <= `watch` starts (with the key it sits
    under) and ends; deeper values cost no calls. It checks structure (brackets,
    colons, commas, strings), not the spelling of numbers and literals: the envelope
    reader validates the text of a call's arguments once, when the call is complete.
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

    def __init__(self, sink: ScanSink, watch: int) -> None:
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
                m = NOT_WS.search(data, pos)
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
                        raise BrokenJson(pos, f"unexpected {c!r} where a value should be")
                elif expect <= _KEY_OR_CLOSE:
                    if c == '"':
                        self._str = 1
                        pos += 1
                        self._key_from = pos if len(objs) <= self._watch else -1
                    elif c == "}" and expect == _KEY_OR_CLOSE:
                        pos = self._close(pos)
                    else:
                        raise BrokenJson(pos, f"unexpected {c!r} where a key should be")
                elif expect == _COLON:
                    if c != ":":
                        raise BrokenJson(pos, f"unexpected {c!r} where ':' should be")
                    self._expect = _VALUE
                    pos += 1
                elif expect == _COMMA_OR_CLOSE:
                    if c == ",":
                        self._expect = _KEY if objs[-1] else _VALUE
                        pos += 1
                    elif c == ("}" if objs[-1] else "]"):
                        pos = self._close(pos)
                    else:
                        raise BrokenJson(pos, f"unexpected {c!r} after a value")
                else:
                    raise BrokenJson(pos, "text after the end of the JSON value")
            if self.done:
                return pos
        return pos

    def _start_value(self, pos: int, c: str) -> None:
        depth = len(self._objs)
        if depth <= self._watch:
            key = self._keys[-1] if depth and self._objs[-1] else None
            self._sink.value_start(depth, key, pos, c)

    def _close(self, pos: int) -> int:
        self._objs.pop()
        self._keys.pop()
        self._end_value(pos + 1)
        return pos + 1

    def _end_value(self, end: int) -> None:
        depth = len(self._objs)
        if depth <= self._watch:
            self._sink.value_end(depth, end)
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


# ---- JSON strings ----

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


class StrDecoder:
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


# ---- a complete call's JSON ----


def args_problem(args: str) -> str | None:
    try:
        value = json.loads(args)
    except ValueError as exc:
        return f"the arguments are not valid JSON ({exc})"
    except RecursionError:
        return "the arguments are nested too deeply"
    if not isinstance(value, dict):
        return "the arguments must be a JSON object"
    return None


def json_scalar(raw: str) -> object:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None
