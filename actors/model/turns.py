"""The turn contract: what a model turn is given and gives back, and what a backend is.

The engine (actors/model/engine.py) serves turns in a line; the run, the tools, the
backends and the providers speak in these values. Nothing here does I/O.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

# A message's key that says a user message is not the person's words: "summary" (a
# compaction's) or "notice" (one for the model). A local template may fold such a
# message into the person's turn, marked (actors/model/backends/template_shapes.py);
# a provider is sent messages without it (`for_provider`).
ORIGIN = "origin"


def for_provider(messages: tuple[dict[str, Any], ...]) -> list[dict[str, Any]]:
    """`messages` as an OpenAI-compatible server is sent them: without ORIGIN."""
    return [{k: v for k, v in m.items() if k != ORIGIN} if ORIGIN in m else m for m in messages]


@attrs.frozen
class ToolSpec:
    """A tool as the model is told about it."""

    name: str
    description: str
    parameters: dict[str, Any]

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


# What a piece is: answer text, reasoning, part of a tool call, or a correction of
# the text and reasoning shown so far.
PieceKind = Literal["text", "reasoning", "tool_call", "retract", "prefill"]


@attrs.frozen
class Piece:
    """One streamed piece of a turn: text, reasoning, or part of a tool call."""

    kind: PieceKind
    text: str = ""  # for "retract": the whole corrected answer text so far
    index: int = 0  # which tool call of the round, for "tool_call"
    call_id: str | None = None
    name: str | None = None
    reasoning: str = ""  # for "retract": the whole corrected reasoning so far
    # For "prefill": how far the model has read the prompt's new tokens (before it writes
    # anything), `done` of `total`. Only a prompt longer than a batch reports it.
    done: int = 0
    total: int = 0


@attrs.frozen
class CallOut:
    """A complete tool call at the end of a turn."""

    id: str
    name: str
    arguments: str


@attrs.frozen
class TurnResult:
    text: str
    reasoning: str
    tool_calls: tuple[CallOut, ...]
    finish_reason: str  # "stop" | "tool_calls" | "length"
    prompt_tokens: int = 0
    prefill_tokens: int = 0
    completion_tokens: int = 0
    # Of prompt_tokens, those a provider served from its cache (its usage's
    # prompt_tokens_details.cached_tokens); a local backend says prefill_tokens instead.
    cached_tokens: int = 0
    # The unit the model repeated without end, when the turn was cut for it
    # (TurnInput.stop_repeats; finish_reason is then "length").
    repeated: str | None = None


@attrs.frozen
class TurnInput:
    messages: tuple[dict[str, Any], ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: str | None = None  # "auto" (default), "none" or "required"
    parallel_calls: bool = True  # the answer may make several calls (OpenAI's parallel_tool_calls)
    think: bool | None = None  # the model's thinking switch, where it has one; None: its default
    answer_schema: dict[str, Any] | None = None  # the answer is JSON of this schema (a grammar, or response_format)
    # Whose prompt cache the local model keeps for this turn across other turns (the
    # conversation's id); None: the turn keeps none (actors/model/backends/prompt_cache.py).
    cache_key: str | None = None
    # Cut the answer where it starts to repeat one short unit without end (a local
    # model's loop, actors/model/backends/repeats.py); the agent's rounds ask for it.
    stop_repeats: bool = False
    # With stop_repeats: watch a call's arguments as closely as the answer's text (a
    # small model the run leads, which loops inside its calls too). Otherwise only a
    # repeat longer than any file a model is asked to write cuts a call: a file of
    # repeated lines is content.
    watch_calls_closely: bool = False
    # Calls (tool name, parsed arguments) the answer must not make again: the last
    # round's that failed. A local model's grammar rules them out where their schema
    # can say so (actors/model/backends/generic_grammar.excluding); a provider is not held.
    # Arguments None: no call of that tool this round (the todo list just written).
    avoid: tuple[tuple[str, Any], ...] = ()
    # (tool, argument, the only values it may take): the real names where an argument
    # must name something that exists (actors/runs/agent/real_names.py); a local model's grammar holds
    # the argument to them, a provider is not held.
    names: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # (tool, parameters): the schema a local model's grammar holds the tool's arguments
    # to this round instead of its own, narrower and still valid for it (a small
    # model's edit_file: only the files it read, old_text one of their lines;
    # actors/runs/agent/small/steps.py); a provider is not held.
    shapes: tuple[tuple[str, dict[str, Any]], ...] = ()
    # How a local model's generic-format prompt and grammar are dressed, as the run asks
    # (the run alone decides which model it leads: actors/runs/agent/small/leader.py):
    # the worked examples after the system message (actors/model/backends/worked_examples.py),
    # the tools one line each, and values no free string of a call may be
    # (string_exclusion.with_banned). A template with tool syntax, or a provider, uses none.
    examples: bool = False
    terse_tools: bool = False
    banned: tuple[str, ...] = ()
    # A local model's penalty on tokens it wrote lately (llama.cpp's repeat_penalty; None:
    # none): a small model's answer after one cut for a loop, which at the same settings
    # writes the same loop again. A provider's model is not given one. Last, so a turn
    # made with its first fields by position (tests, ops/bench) means what it did.
    repeat_penalty: float | None = None
    # With tool_choice "none": the texts one of which a local model's reply in the generic
    # format begins with (a small model's answer to where something is: a file its search
    # found it in; actors/runs/agent/small/leader.py). A provider's model is not held.
    reply_starts: tuple[str, ...] = ()


Emit = Callable[[Piece], Awaitable[None]]


class Aborted(Exception):
    """Raised inside a backend when its turn's abort flag is up."""


class Backend(Protocol):
    model_id: str
    n_ctx: int

    async def generate(self, turn: TurnInput, emit: Emit, abort: threading.Event) -> TurnResult:
        """Run one turn, calling `emit` for each piece as it is produced.

        Raises `Aborted` when `abort` is set, `ContextFull` when the turn does not fit.
        """
        ...

    async def aclose(self) -> None: ...


@runtime_checkable
class CountsTokens(Protocol):
    """A backend that can say exactly how many tokens a turn's prompt takes (its own
    template and tokenizer), where an estimate from characters would be rough."""

    async def count_tokens(self, turn: TurnInput) -> int: ...


class AbortFlag(threading.Event):
    """A turn's abort flag, also readable as one byte in memory (`address`): the byte
    is 1 long as a C string once the flag is raised, empty before. A backend that runs
    native code (llama.cpp) can hand that byte to a native check that needs no Python
    and so no GIL (see actors/model/backends/abort_callback.py)."""

    def __init__(self) -> None:
        super().__init__()
        self._byte = ctypes.create_string_buffer(2)  # b"\0\0"; only [0] ever changes
        self.address: int = ctypes.addressof(self._byte)

    def set(self) -> None:
        self._byte[0] = b"x"
        super().set()

    def clear(self) -> None:
        self._byte[0] = b"\0"
        super().clear()
