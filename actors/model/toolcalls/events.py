"""What ToolCallParser emits while it reads (`Event`: text, reasoning, a call's start,
argument fragments and end, a retraction) and what it holds once done (`ParseResult`).

The order rules the events keep are in the package docstring (actors/model/toolcalls/__init__.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

import attrs


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
