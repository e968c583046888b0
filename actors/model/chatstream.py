"""Reading an OpenAI-compatible chat-completions stream, without I/O.

`SseLines` cuts the body's bytes into its lines (bounded: a line that never ends is
refused); `ChatStream` is fed the lines of a Server-Sent Events body (`data: {...}` chunks,
blank lines between events, `data: [DONE]` at the end) and turns each chunk into the
engine's pieces: `delta.content` is text, `delta.reasoning_content` (or `reasoning`)
is reasoning, and `delta.tool_calls` are assembled by their `index`. The first piece
of each call carries its id and name; later pieces carry only the next fragment of
its arguments. A call whose name has not arrived yet is held back until it does, so
the card a person sees never reads "unknown".

The shell around it (actors/model/providers/backend.py) does the HTTP and decides what a stream
that ended early means; this class only says whether the answer was complete.
"""

from __future__ import annotations

import json

import attrs

from actors.ids import new_id
from actors.model.turns import CallOut, Piece, TurnResult

# One event's data larger than this is not a chat chunk: the stream is refused.
MAX_EVENT_BYTES = 8 * 1024 * 1024
# A whole answer (text, reasoning and calls' arguments) longer than this is a provider
# that does not stop (no model writes this much in one turn): the stream is refused.
MAX_ANSWER_CHARS = 16 * 1024 * 1024
# More tool calls than this in one answer is not a model's round: the stream is refused.
MAX_CALLS = 64
# How much of a provider's own error text is kept.
MAX_ERROR_CHARS = 500


class StreamError(Exception):
    """The stream cannot be read as a chat completion; the text says why."""


class SseLines:
    """Bytes of an event stream in, its lines out, decoded as UTF-8.

    A line ends at CR, LF or CRLF, as the event-stream format says (not at the other
    characters `str.splitlines` takes, which JSON text may hold as they are). Each byte
    is looked at a bounded number of times however the body is cut, and a line still
    open past `limit` bytes raises StreamError: a server that never ends its line would
    otherwise grow the buffer without bound.
    """

    def __init__(self, limit: int = MAX_EVENT_BYTES) -> None:
        self._buf = bytearray()
        self._limit = limit
        self._after_cr = False  # the last line ended with CR: a LF next is its CRLF's

    def feed(self, data: bytes) -> list[str]:
        if data and self._after_cr:
            self._after_cr = False
            if data[:1] == b"\n":
                data = data[1:]
        start = len(self._buf)  # the buffer holds no line end before this
        self._buf += data
        cut = max(self._buf.rfind(b"\n", start), self._buf.rfind(b"\r", start))
        if cut < 0:
            if len(self._buf) > self._limit:
                raise StreamError(f"a line of the stream is longer than {self._limit // (1024 * 1024)} MiB")
            return []
        whole = bytes(self._buf[: cut + 1])
        del self._buf[: cut + 1]
        self._after_cr = whole.endswith(b"\r") and not self._buf  # a CR that ended the data so far
        return [line.decode("utf-8", errors="replace") for line in whole.splitlines()]

    def flush(self) -> list[str]:
        """The body ended: its last line, when it had no line end."""
        rest, self._buf = bytes(self._buf), bytearray()
        return [rest.decode("utf-8", errors="replace")] if rest else []


@attrs.define
class _Call:
    index: int
    call_id: str | None = None
    name: str = ""
    args: list[str] = attrs.field(factory=list)
    announced: bool = False


def error_text(obj: object) -> str | None:
    """The message of an OpenAI-style error body (`{"error": {"message"}}` and its
    common variants), shortened; None when there is none."""
    if not isinstance(obj, dict):
        return None
    err = obj.get("error")
    msg: object = None
    if isinstance(err, dict):
        msg = err.get("message") or err.get("msg") or err.get("type")
    elif isinstance(err, str):
        msg = err
    if msg is None:
        msg = obj.get("message") or obj.get("detail")
    if msg is None or msg == "":
        return None
    text = msg if isinstance(msg, str) else json.dumps(msg, ensure_ascii=False)
    text = " ".join(text.split())
    return text[:MAX_ERROR_CHARS] + ("…" if len(text) > MAX_ERROR_CHARS else "")


class ChatStream:
    """See the module docstring. Feed it with `feed_line`, then `finish`."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._data_bytes = 0
        self._calls: dict[int, _Call] = {}
        self.done = False  # `data: [DONE]` was read
        self.finish_reason: str | None = None
        # Pieces kept in lists and joined when asked for: `+=` on an attribute copies the
        # whole text each time, quadratic over a long answer of small chunks.
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._answer_chars = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cached_tokens = 0  # of the prompt's, served from the provider's cache
        self.chunks = 0

    @property
    def text(self) -> str:
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        return "".join(self._reasoning)

    @property
    def complete(self) -> bool:
        """Whether the answer reached its end (`[DONE]` or a finish reason)."""
        return self.done or self.finish_reason is not None

    def feed_line(self, line: str) -> list[Piece]:
        """One line of the body, without its line ending. Raises StreamError."""
        if self.done:
            return []
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return []  # a comment (keep-alive)
        field, _, value = line.partition(":")
        if field != "data":
            return []  # event:, id:, retry: say nothing a chat chunk needs
        value = value.removeprefix(" ")
        self._data_bytes += len(value) + 1
        if self._data_bytes > MAX_EVENT_BYTES:
            raise StreamError(f"one event of the stream is larger than {MAX_EVENT_BYTES // (1024 * 1024)} MiB")
        self._data.append(value)
        return []

    def finish(self) -> list[Piece]:
        """The body ended: dispatch an event that had no closing blank line."""
        return self._dispatch()

    def feed_completion(self, obj: object) -> list[Piece]:
        """A whole (non-streamed) completion, for a server that ignored `stream`."""
        if not isinstance(obj, dict):
            raise StreamError("the answer is not a JSON object")
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise StreamError(error_text(obj) or "the answer has no choices")
        choice = choices[0]
        message = choice.get("message")
        chunk = {
            "choices": [{"delta": message if isinstance(message, dict) else {},
                         "finish_reason": choice.get("finish_reason") or "stop"}],
            "usage": obj.get("usage"),
        }
        pieces = self._chunk(chunk)
        self.done = True
        return pieces

    def result(self) -> TurnResult:
        calls = tuple(
            CallOut(c.call_id or new_id("call_"), c.name, "".join(c.args))
            for c in sorted(self._calls.values(), key=lambda c: c.index)
        )
        if self.finish_reason == "length":  # cut by the token limit, a call half-written too
            reason = "length"
        elif calls:
            reason = "tool_calls"
        else:
            reason = "stop"
        return TurnResult(
            text=self.text,
            reasoning=self.reasoning,
            tool_calls=calls,
            finish_reason=reason,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            cached_tokens=self.cached_tokens,
        )

    # ---- inside ----

    def _dispatch(self) -> list[Piece]:
        if not self._data:
            return []
        data = "\n".join(self._data)
        self._data, self._data_bytes = [], 0
        if data.strip() == "[DONE]":
            self.done = True
            return []
        try:
            obj = json.loads(data)
        except ValueError:
            raise StreamError(f"a chunk of the stream is not JSON ({data[:80]!r})") from None
        if not isinstance(obj, dict):
            raise StreamError("a chunk of the stream is not a JSON object")
        if obj.get("error") is not None:
            raise StreamError(f"the provider reported an error mid-answer: {error_text(obj) or 'no details'}")
        return self._chunk(obj)

    def _chunk(self, obj: dict[str, object]) -> list[Piece]:
        self.chunks += 1
        usage = obj.get("usage")
        if isinstance(usage, dict):
            self.prompt_tokens = _int(usage.get("prompt_tokens"), self.prompt_tokens)
            self.completion_tokens = _int(usage.get("completion_tokens"), self.completion_tokens)
            details = usage.get("prompt_tokens_details")  # OpenAI's, and the servers that copy it
            if isinstance(details, dict):
                self.cached_tokens = _int(details.get("cached_tokens"), self.cached_tokens)
        choices = obj.get("choices")
        if choices is None:
            return []
        if not isinstance(choices, list):
            raise StreamError("a chunk's `choices` is not a list")
        out: list[Piece] = []
        for choice in choices:
            if not isinstance(choice, dict) or _int(choice.get("index"), 0) != 0:
                continue  # only one answer is asked for
            delta = choice.get("delta")
            if isinstance(delta, dict):
                out.extend(self._delta(delta))
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self.finish_reason = reason
        return out

    def _delta(self, delta: dict[str, object]) -> list[Piece]:
        out: list[Piece] = []
        reasoning = delta.get("reasoning_content")
        if not isinstance(reasoning, str) or not reasoning:
            reasoning = delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            self._count(reasoning)
            self._reasoning.append(reasoning)
            out.append(Piece("reasoning", reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._count(content)
            self._text.append(content)
            out.append(Piece("text", content))
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for position, tc in enumerate(calls):
                if isinstance(tc, dict):
                    piece = self._call_delta(tc, position)
                    if piece is not None:
                        out.append(piece)
        return out

    def _count(self, piece: str) -> None:
        self._answer_chars += len(piece)
        if self._answer_chars > MAX_ANSWER_CHARS:
            raise StreamError(
                f"the answer is longer than {MAX_ANSWER_CHARS // (1024 * 1024)} M characters: the provider did not stop"
            )

    def _call_delta(self, tc: dict[str, object], position: int) -> Piece | None:
        index = _int(tc.get("index"), position)
        call = self._calls.get(index)
        if call is None:
            if len(self._calls) >= MAX_CALLS:
                raise StreamError(f"the answer holds more than {MAX_CALLS} tool calls")
            call = self._calls[index] = _Call(index)
        fn = tc.get("function")
        fn = fn if isinstance(fn, dict) else {}
        call_id = tc.get("id")
        if isinstance(call_id, str) and call_id and call.call_id is None:
            call.call_id = call_id
        name = fn.get("name")
        if isinstance(name, str) and name and not call.name:
            call.name = name
        fragment = fn.get("arguments")
        if isinstance(fragment, dict):  # a few servers send the arguments as an object
            fragment = json.dumps(fragment, ensure_ascii=False)
        fragment = fragment if isinstance(fragment, str) else ""
        if fragment:
            self._count(fragment)
            call.args.append(fragment)
        if call.announced:
            return Piece("tool_call", fragment, index=index) if fragment else None
        if not call.name:
            return None  # held back until the name arrives
        call.announced = True
        if call.call_id is None:
            call.call_id = new_id("call_")
        return Piece("tool_call", "".join(call.args), index=index, call_id=call.call_id, name=call.name)


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
