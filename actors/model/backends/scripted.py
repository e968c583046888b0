"""The scripted backend: plays given rounds token by token, for tests and benchmarks.

It is not a model. Each round says what the "model" writes: reasoning, text and tool
calls, played in small pieces with an optional delay between them, so every rule of
the run (streaming, composing cards, stops, limits) can be exercised without a model.

A script is JSON::

    {"token_delay": 0.0, "context_chars": null, "n_params": 0, "default": {"text": "Done."},
     "rounds": [{"when": "deploy", "reasoning": "...", "text": "...",
                 "tool_calls": [{"name": "echo", "arguments": {"text": "hi"}}],
                 "delay": 0.01, "fail": null, "repeat": 1, "prefill": 0,
                 "cut": false, "repeated": null}]}

A round is taken by the first turn whose last user message contains its `when` (or
any turn when it has none); `repeat` plays it that many times. When no round fits,
`default` is played. `n_params`: the size the "model" says it has (the bundled one's,
135_000_000, for a run that leads it; 0: unknown). A round's `"say"` makes its text what
the turn was given, so a test over HTTP reads the request back: "tools" (the offered
tools' names, comma separated), "tool_result" (the last tool message's content).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import trio

from actors.errors import ContextFull, TurnFailed
from actors.model.backends.repeats import CLOSE, CONTENT, TurnWatch
from actors.model.turns import Aborted, CallOut, Emit, Piece, TurnInput, TurnResult

PIECE_CHARS = 4
PREFILL_BATCH = 512  # as llama.cpp's default n_batch


class _Looped(Exception):
    """What was played repeats one unit without end (TurnInput.stop_repeats)."""

    def __init__(self, unit: str) -> None:
        super().__init__(unit)
        self.unit = unit

CHARS_PER_TOKEN = 4


def pieces_of(text: str, size: int = PIECE_CHARS) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


def _last_user_text(turn: TurnInput) -> str:
    for msg in reversed(turn.messages):
        if msg.get("role") == "user":
            content = msg.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def _said(turn: TurnInput, what: str) -> str:
    """The text of a round that says what the turn was given (see the module docstring)."""
    if what == "tools":
        return ", ".join(t.name for t in turn.tools)
    if what == "tool_result":
        last = next((m for m in reversed(turn.messages) if m.get("role") == "tool"), None)
        return str(last.get("content")) if last is not None else ""
    raise ValueError(f"a script's `say` is tools or tool_result, not {what!r}")


def _prompt_text(turn: TurnInput) -> str:
    return json.dumps(list(turn.messages), ensure_ascii=False)


class ScriptedBackend:
    """See the module docstring."""

    def __init__(
        self,
        rounds: list[dict[str, Any]] | None = None,
        *,
        token_delay: float = 0.0,
        context_chars: int | None = None,
        default: dict[str, Any] | None = None,
        model_id: str = "scripted",
        n_params: int = 0,
    ) -> None:
        self.model_id = model_id
        self.n_params = n_params
        self.n_ctx = (context_chars or 1_000_000) // CHARS_PER_TOKEN
        self._rounds: list[dict[str, Any]] = [dict(r) for r in rounds or []]
        self.token_delay = token_delay
        self.context_chars = context_chars
        self.default = default if default is not None else {"text": "Done."}
        self.turns: list[TurnInput] = []  # every turn it was asked, for tests
        self._cached_prompt = ""
        self._calls = 0

    @classmethod
    def from_file(cls, path: str) -> ScriptedBackend:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return cls(
            data.get("rounds") or [],
            token_delay=float(data.get("token_delay") or 0.0),
            context_chars=data.get("context_chars"),
            default=data.get("default"),
            n_params=int(data.get("n_params") or 0),
        )

    def push(self, *rounds: dict[str, Any]) -> None:
        self._rounds.extend(dict(r) for r in rounds)

    @property
    def pending(self) -> int:
        return len(self._rounds)

    def _take(self, turn: TurnInput) -> dict[str, Any]:
        said = _last_user_text(turn)
        for i, rnd in enumerate(self._rounds):
            when = rnd.get("when")
            if when is None or when in said:
                left = int(rnd.get("repeat", 1)) - 1
                if left <= 0:
                    del self._rounds[i]
                else:
                    self._rounds[i] = {**rnd, "repeat": left}
                return rnd
        return self.default

    async def generate(self, turn: TurnInput, emit: Emit, abort: threading.Event) -> TurnResult:
        prompt = _prompt_text(turn)
        if self.context_chars is not None and len(prompt) > self.context_chars:
            raise ContextFull(
                "The conversation no longer fits the model's context.",
                needed=len(prompt) // CHARS_PER_TOKEN,
                available=self.context_chars // CHARS_PER_TOKEN,
            )
        self.turns.append(turn)
        common = 0
        for a, b in zip(prompt, self._cached_prompt, strict=False):
            if a != b:
                break
            common += 1
        prefill = (len(prompt) - common) // CHARS_PER_TOKEN
        self._cached_prompt = prompt
        rnd = self._take(turn)
        delay = float(rnd.get("delay", self.token_delay))
        produced = 0

        watch = TurnWatch(CLOSE if turn.watch_calls_closely else CONTENT) if turn.stop_repeats else None

        async def pause() -> None:
            if abort.is_set():
                raise Aborted()
            if delay:
                await trio.sleep(delay)
            else:
                await trio.lowlevel.checkpoint()

        async def play(piece: Piece) -> None:
            nonlocal produced
            await pause()
            if abort.is_set():
                raise Aborted()
            produced += 1
            await emit(piece)
            if watch is not None and (unit := watch.feed(piece)) is not None:
                raise _Looped(unit)

        if rnd.get("hang"):
            # A round that never ends on its own: only a stop ends it. Its `text` first,
            # so a test can see the round was reached (a stop before it leaves the round
            # to the next turn, which would hang instead).
            for chunk in pieces_of(str(rnd.get("text") or "")):
                await play(Piece("text", chunk))
            while True:
                await play(Piece("text", ""))
        # "prefill": N plays the reading of N prompt tokens, a batch at a time, first.
        to_read = int(rnd.get("prefill") or 0)
        for done in range(PREFILL_BATCH, to_read + PREFILL_BATCH, PREFILL_BATCH) if to_read > 0 else ():
            await pause()
            await emit(Piece("prefill", done=min(done, to_read), total=to_read))
        reasoning = str(rnd.get("reasoning") or "")
        text = _said(turn, str(rnd["say"])) if rnd.get("say") else str(rnd.get("text") or "")
        calls: list[CallOut] = []
        played = {"reasoning": "", "text": ""}
        try:
            for chunk in pieces_of(reasoning):
                played["reasoning"] += chunk
                await play(Piece("reasoning", chunk))
            for chunk in pieces_of(text):
                played["text"] += chunk
                await play(Piece("text", chunk))
            if rnd.get("fail"):
                raise TurnFailed(str(rnd["fail"]))
            for index, call in enumerate(rnd.get("tool_calls") or ()):
                self._calls += 1
                call_id = str(call.get("id") or f"call_{self._calls}")
                args = call.get("arguments", {})
                raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
                name = str(call["name"])
                first = True
                for chunk in pieces_of(raw) if raw else [""]:
                    await play(Piece("tool_call", chunk, index=index, call_id=call_id if first else None,
                                     name=name if first else None))
                    first = False
                calls.append(CallOut(call_id, name, raw))
        except _Looped as looped:
            # Cut where it loops, as the local backend cuts: a call being written is not kept.
            return TurnResult(
                text=played["text"], reasoning=played["reasoning"], tool_calls=tuple(calls), finish_reason="length",
                prompt_tokens=len(prompt) // CHARS_PER_TOKEN, prefill_tokens=prefill, completion_tokens=produced,
                repeated=looped.unit,
            )
        if rnd.get("repeated"):
            # "repeated": the round ends as a loop cut it, its calls handed over as given
            # (a backend that cut mid-call hands that call over unfinished).
            return TurnResult(
                text=text, reasoning=reasoning, tool_calls=tuple(calls), finish_reason="length",
                prompt_tokens=len(prompt) // CHARS_PER_TOKEN, prefill_tokens=prefill, completion_tokens=produced,
                repeated=str(rnd["repeated"]),
            )
        return TurnResult(
            text=text,
            reasoning=reasoning,
            tool_calls=tuple(calls),
            # "cut": the answer ended at the token limit, as a model's does.
            finish_reason="length" if rnd.get("cut") else "tool_calls" if calls else "stop",
            prompt_tokens=len(prompt) // CHARS_PER_TOKEN,
            prefill_tokens=prefill,
            completion_tokens=produced,
        )

    async def aclose(self) -> None:
        return None
