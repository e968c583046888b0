"""ToolCallParser: the state machine that splits a local model's raw output into
answer text, reasoning and tool calls, piece by piece (see the package docstring,
actors/model/toolcalls/__init__.py, for the formats and the rules of the events).

The machine here reads text, think blocks and tags, and what comes after a call; a
call's JSON envelope it hands to `envelope.EnvelopeReader`, which reads the calls in
it and says what follows once it closes or breaks.
"""

from __future__ import annotations

import re

from actors.model.toolcalls.buffers import Channel, partial_tail
from actors.model.toolcalls.envelope import Ending, EnvelopeReader
from actors.model.toolcalls.events import Event, ParseResult, Reasoning, Retract, Text
from actors.model.toolcalls.formats import (
    FORMATS,
    HERMES_CLOSE,
    OPENERS,
    PYTHON_TAG,
    TEXT_TAGS,
    THINK_CLOSE,
    THINK_OPEN,
)
from actors.model.toolcalls.partial_json import NOT_WS

# Parser states.
_START, _REASONING, _TEXT, _JSON, _AFTER, _RAW, _DONE_STATE = range(7)
# The state after an envelope, by how it ended.
_AFTER_ENDING = {Ending.CLOSED: _AFTER, Ending.TEXT: _TEXT, Ending.RAW: _RAW}


class ToolCallParser:
    """See the package docstring. `feed()` pieces, then `finish()` once; read `result`.

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
        self._text = Channel()
        self._reasoning = Channel()
        self._out: list[Event] = []  # the reader appends to it too: cleared, never replaced
        self._envelope = EnvelopeReader(fmt, say=self._say, emit=self._out.append)
        tags = TEXT_TAGS[fmt]
        self._text_tags = {False: tags, True: (*tags, THINK_CLOSE)}
        self._text_rx = {k: re.compile("|".join(map(re.escape, v))) if v else None for k, v in self._text_tags.items()}

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
            self._state = _AFTER_ENDING[self._envelope.cut_off()]
        if self._state == _RAW:
            self._envelope.end_raw()
        self._text.cut()
        self._reasoning.cut()
        self._state = _DONE_STATE
        return self._take()

    @property
    def result(self) -> ParseResult:
        return ParseResult(self._text.value(), self._reasoning.value(), self._envelope.calls, self._envelope.errors)

    # ---- the outer state machine ----

    def _take(self) -> list[Event]:
        out = self._out.copy()
        self._out.clear()
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
            self._envelope.flush(data)

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
        m = NOT_WS.search(data, pos)
        if m is None:
            return len(data)
        i = m.start()
        tags = OPENERS[self._fmt] + ((THINK_CLOSE,) if self._can_retract else ())
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
        keep = 0 if final else partial_tail(data, pos, (THINK_CLOSE,))
        self._think(data[pos : n - keep])
        return self._held_at(n - keep) if keep else n

    def _in_text(self, data: str, pos: int, final: bool) -> int:
        retract = self._can_retract
        rx = self._text_rx[retract]
        m = rx.search(data, pos) if rx is not None else None
        if m is None:
            n = len(data)
            tags = self._text_tags[retract]
            keep = 0 if final or not tags else partial_tail(data, pos, tags)
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
            m = NOT_WS.search(data, pos)
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
        n = len(data)
        if self._fmt != "hermes":
            self._envelope.keep_raw(data[pos:])
            return n
        at = data.find(HERMES_CLOSE, pos)
        if at >= 0:
            self._envelope.keep_raw(data[pos:at])
            self._envelope.end_raw()
            self._state = _TEXT
            return at + len(HERMES_CLOSE)
        keep = 0 if final else partial_tail(data, pos, (HERMES_CLOSE,))
        self._envelope.keep_raw(data[pos : n - keep])
        return self._held_at(n - keep) if keep else n

    # ---- the JSON envelope ----

    def _open_envelope(self, pos: int) -> int:
        self._attempted = True
        self._text.cut()
        self._envelope.open()
        self._state = _JSON
        return pos

    def _in_json(self, data: str, pos: int) -> int:
        pos, ending = self._envelope.read(data, pos)
        if ending is not None:
            self._state = _AFTER_ENDING[ending]
        return pos
