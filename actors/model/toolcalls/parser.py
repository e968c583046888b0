"""ToolCallParser: the state machine that splits a local model's raw output into
answer text, reasoning and tool calls, piece by piece (see the package docstring,
actors/model/toolcalls/__init__.py, for the formats and the rules of the events).

The outer machine reads text, think blocks and tags; inside a call's JSON envelope
it drives `partial_json._JsonScanner` and, from the values it reports, reads each
call's name, id and arguments (`_Call`), streaming the arguments as they are written.
"""

from __future__ import annotations

import re

from actors.model.toolcalls.buffers import _Cap, _Channel, _partial_tail
from actors.model.toolcalls.events import (
    CallArgs,
    CallEnd,
    CallStart,
    Event,
    ParsedCall,
    ParseResult,
    Reasoning,
    Retract,
    Text,
)
from actors.model.toolcalls.formats import (
    _OPENERS,
    _TEXT_TAGS,
    _WATCH,
    FORMATS,
    HERMES_CLOSE,
    PYTHON_TAG,
    THINK_CLOSE,
    THINK_OPEN,
)
from actors.model.toolcalls.partial_json import _NOT_WS, _args_problem, _Broken, _json_scalar, _JsonScanner, _StrDecoder


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


# Parser states.
_START, _REASONING, _TEXT, _JSON, _AFTER, _RAW, _DONE_STATE = range(7)
# What a JSON value is to the parser.
_R_OTHER, _R_ENV, _R_CALLS, _R_CALL, _R_NAME, _R_ARGS, _R_ID, _R_RESPONSE = range(8)
_CUT_OFF = "the output ended before the tool call was complete"


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
