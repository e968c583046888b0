"""A call's JSON envelope, as ToolCallParser reads it: `EnvelopeReader`.

While the parser is inside an envelope (after `<tool_call>`, `[TOOL_CALLS]`, or an
answer's opening `{`), the reader drives `partial_json.JsonScanner` over it and, from
the values the scanner reports, reads each call's name, id and arguments (`_Call`):
it announces a call once its id is final and streams its arguments as they are
written (the rules are in the package docstring, actors/model/toolcalls/__init__.py).
It keeps the calls read so far and their errors for the parser's result.

When the envelope closes or breaks, the reader says what follows (`Ending`); after a
break inside a call, the parser hands it the call's raw rest (`keep_raw`) until the
call's end (`end_raw`). Text the envelope turns out to be (a generic answer's
`response`, llama3 JSON that is not a call) goes to the parser's `say`; events to
its `emit`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

from actors.model.toolcalls.buffers import Cap
from actors.model.toolcalls.events import CallArgs, CallEnd, CallStart, Event, ParsedCall
from actors.model.toolcalls.formats import WATCH
from actors.model.toolcalls.partial_json import BrokenJson, JsonScanner, StrDecoder, args_problem, json_scalar


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
        self.obj_cap: Cap | None = None  # the whole object, until the call starts
        self.name_cap: Cap | None = None
        self.id_cap: Cap | None = None
        self.args_state = 0  # 0 not seen, 1 being read, 2 complete, 3 cut by an error
        self.args_from = 0
        self.args_parts: list[str] = []
        self.rest: list[str] = []  # raw text after the point where a broken call broke



# What a JSON value is to the reader.
_R_OTHER, _R_ENV, _R_CALLS, _R_CALL, _R_NAME, _R_ARGS, _R_ID, _R_RESPONSE = range(8)
_CUT_OFF = "the output ended before the tool call was complete"


class Ending(enum.Enum):
    """What follows an envelope the reader let go of."""

    CLOSED = enum.auto()  # its JSON closed: a closing tag, the next call, or text
    TEXT = enum.auto()  # it broke: text
    RAW = enum.auto()  # it broke: raw text to `</tool_call>` (hermes) or the end, a broken call's rest if any


class EnvelopeReader:
    """Reads the envelopes of one answer, one after another: `open()` one, `read()`
    and `flush()` it piece by piece until it ends. Keeps the calls and their errors.
    Never raises on what the model wrote."""

    def __init__(self, fmt: str, *, say: Callable[[str], None], emit: Callable[[Event], None]) -> None:
        self._fmt = fmt
        self._say = say
        self._emit = emit
        self._calls: list[ParsedCall] = []
        self._errors: dict[int, str] = {}
        self._n_calls = 0
        # the envelope being read
        self._data = ""
        self._scan: JsonScanner | None = None
        self._roles: list[int] = []
        self._caps: list[Cap] = []
        self._call: _Call | None = None
        self._failed: _Call | None = None
        self._env_cap: Cap | None = None
        self._resp: StrDecoder | None = None
        self._resp_from = 0

    @property
    def calls(self) -> tuple[ParsedCall, ...]:
        return tuple(self._calls)

    @property
    def errors(self) -> dict[int, str]:
        """A copy: call index -> why it cannot be run."""
        return dict(self._errors)

    def open(self) -> None:
        """An envelope begins at the next `read()`'s position."""
        self._scan = JsonScanner(self, WATCH[self._fmt])
        self._roles = []

    def read(self, data: str, pos: int) -> tuple[int, Ending | None]:
        """Read the envelope on from `pos`; return where it stopped and, if the
        envelope closed or broke there, what follows (None: the piece ended inside it)."""
        self._data = data
        assert self._scan is not None
        try:
            end = self._scan.scan(data, pos)
        except BrokenJson as exc:
            return exc.pos, self._broken(data, exc.pos, f"the tool call is not valid JSON: {exc.reason}")
        if not self._scan.done:
            return end, None
        if self._env_cap is not None:  # a generic answer that was JSON but neither reply nor call
            self._say(self._uncap(self._env_cap, end))
            self._env_cap = None
        self._scan = None
        self._caps.clear()
        return end, Ending.CLOSED

    def flush(self, data: str) -> None:
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
                    self._emit(CallArgs(call.index, chunk))
        if self._resp is not None:
            self._say(self._resp.feed(data[self._resp_from :]))
            self._resp_from = 0

    def cut_off(self) -> Ending:
        """The output ended inside the envelope."""
        self._data = ""
        return self._broken("", 0, _CUT_OFF)

    def keep_raw(self, text: str) -> None:
        """Raw text after a break: part of the broken call's arguments, if one is open."""
        if self._failed is not None:
            self._failed.rest.append(text)

    def end_raw(self) -> None:
        """The broken call's raw text ended: it ends, with that text as the rest of its arguments."""
        call, self._failed = self._failed, None
        if call is None:
            return
        rest = "".join(call.rest).rstrip()
        if not call.args_parts:
            rest = rest.lstrip()
        if rest:
            call.args_parts.append(rest)
            self._emit(CallArgs(call.index, rest))
        self._end_call(call, call.problem)

    # ---- what the scanner reports ----

    def value_start(self, depth: int, key: str | None, pos: int, c: str) -> None:
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
                raise BrokenJson(pos, "expected a JSON object (or an array of them)")
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
                    raise BrokenJson(pos, "each tool call must be a JSON object")
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
            self._resp = StrDecoder()
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

    def value_end(self, depth: int, end: int) -> None:
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
                    self._emit(CallArgs(call.index, chunk))
        elif role == _R_NAME:
            assert call is not None and call.name_cap is not None
            value = json_scalar(self._uncap(call.name_cap, end))
            if isinstance(value, str) and value.strip():
                call.name = value.strip()
            elif self._fmt != "llama3":  # in llama3 JSON without a usable name is not a call
                call.name = ""
                call.problem = "the tool name must be a non-empty string"
            self._maybe_start(call, end)
        elif role == _R_ID:
            assert call is not None and call.id_cap is not None
            raw = self._uncap(call.id_cap, end)
            value = json_scalar(raw)
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                call.model_id = str(value)
            self._maybe_start(call, end)
        elif role == _R_RESPONSE:
            assert self._resp is not None
            self._say(self._resp.feed(self._data[self._resp_from : end - 1]) + self._resp.finish())
            self._resp = None


    # ---- the calls ----

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
        self._emit(CallStart(call.index, call.id, call.name or ""))
        if call.args_state == 1:
            chunk = self._data[call.args_from : pos]
            call.args_from = pos
            if chunk:
                call.args_parts.append(chunk)
        if call.args_parts:
            self._emit(CallArgs(call.index, "".join(call.args_parts)))

    def _end_call(self, call: _Call, error: str | None) -> None:
        args = "".join(call.args_parts)
        if error is None:
            error = call.problem or args_problem(args)
        self._calls.append(ParsedCall(call.id, call.name or "", args))
        if error is not None:
            self._errors[call.index] = error
        self._emit(CallEnd(call.index, error))

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
                    call.obj_cap = None  # taken out of the captures: _start_call must not remove it again
            elif call.args_state == 0:  # a tool without parameters
                call.args_parts = ["{}"]
            call.args_state = 2
            self._start_call(call, end)
        self._end_call(call, None)

    def _broken(self, data: str, e: int, problem: str) -> Ending:
        """The envelope broke (or the output ended) at `e`; decide what the rest is."""
        call, self._call = self._call, None
        resp, self._resp = self._resp, None
        env_cap, self._env_cap = self._env_cap, None
        self._scan = None
        ending = Ending.TEXT
        if call is not None:
            if call.args_state == 1:
                chunk = data[call.args_from : e]
                if chunk:
                    call.args_parts.append(chunk)
                    if call.started:
                        self._emit(CallArgs(call.index, chunk))
                call.args_state = 3
            if call.name and not call.problem and call.args_state == 2:
                # Name and arguments are complete (the object was not closed): run it.
                if not call.started:
                    self._start_call(call, e)
                self._end_call(call, None)
                if self._fmt == "hermes":
                    ending = Ending.RAW
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
                    ending = Ending.RAW
                else:
                    self._end_call(call, None)
                    if self._fmt == "hermes":
                        ending = Ending.RAW
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
                ending = Ending.RAW
            elif env_cap is not None:
                self._say(env_cap.close(data, e))
        self._caps.clear()
        self._roles.clear()
        return ending

    def _cap(self, pos: int) -> Cap:
        cap = Cap(pos)
        self._caps.append(cap)
        return cap

    def _uncap(self, cap: Cap, end: int) -> str:
        self._caps.remove(cap)
        return cap.close(self._data, end)

