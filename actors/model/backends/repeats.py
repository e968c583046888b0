"""Noticing a model that repeats itself without end.

A small local model sometimes falls into a loop: a todo step "Hello 1.1.1.1.1..." or a
sentence written over and over, until the token budget runs out, minutes of a
two-core machine spent on nothing. The agent's rounds ask the backend to watch for it
(`TurnInput.stop_repeats`): when the last characters written are one short unit
repeated, the generation stops there and the result says what repeated, so the run
can tell the model (and the person) and ask again.

The close bounds (CLOSE) keep the text people read out of it: a unit of at most
MAX_UNIT characters (a line of code, a todo entry in JSON) repeated over at least
MIN_SPAN characters and MIN_REPEATS times. A Markdown rule or a table's separator line
is far shorter than MIN_SPAN; a row of 240 dashes, or one long line six times over, is
not an answer anyone asked for.

A call's arguments are another matter: a file being written may repeat a line on
purpose (a CSV of identical rows, a fixture, a separator block). `TurnWatch` watches
an answer's text and reasoning with CLOSE, and each call's arguments on their own, with
CLOSE only for a small model the run leads (TurnInput.watch_calls_closely: such a model
loops inside its calls too), else with CONTENT: a span no file asked of a model
reaches, past the token budget of a local turn (DEFAULT_MAX_TOKENS, about 8 KiB of
text), so another model's repeated content is written whole.
"""

from __future__ import annotations

import re

import attrs

from actors.model.turns import Piece

MAX_UNIT = 200
MIN_SPAN = 240
MIN_REPEATS = 6


@attrs.frozen
class Bounds:
    """When a tail counts as a loop: a unit of at most `max_unit` characters repeated
    over at least `min_span` characters and `min_repeats` times."""

    max_unit: int
    min_span: int
    min_repeats: int

    def span_for(self, unit: int) -> int:
        """How many characters a unit of `unit` characters must fill to count as a loop."""
        return max(self.min_span, self.min_repeats * unit)

    @property
    def window(self) -> int:
        """The tail kept: enough for the longest unit's span."""
        return self.span_for(self.max_unit)


CLOSE = Bounds(MAX_UNIT, MIN_SPAN, MIN_REPEATS)
CONTENT = Bounds(MAX_UNIT, 64 * 1024, 64)


def span_for(unit: int) -> int:
    """How many characters a unit of `unit` characters must fill to count as a loop (CLOSE)."""
    return CLOSE.span_for(unit)


# The last KEY characters, looked for again up to MAX_UNIT characters back: any period
# the tail could have shows there first (every span is longer than KEY), so only where
# they recur is a period tried. Ordinary text has no such recurrence in most pieces.
KEY = 8


class RepeatWatch:
    """Fed the text a model writes, piece by piece; `feed` answers the repeated unit
    once the tail is a loop, else None. It runs for every piece a model writes: a piece
    costs a few searches in C, not a loop over every period."""

    def __init__(self, bounds: Bounds = CLOSE) -> None:
        self.tail = ""
        self._bounds = bounds
        self._window = bounds.window

    def feed(self, text: str) -> str | None:
        if not text:
            return None
        bounds = self._bounds
        tail = self.tail = (self.tail + text)[-self._window:]
        end = len(tail)
        if end < bounds.min_span:
            return None  # shorter than every span
        key = tail[-KEY:]
        first = max(0, end - KEY - bounds.max_unit)
        # Occurrences of the key ending before the end, nearest first: the smallest period first.
        at = tail.rfind(key, first, end - 1)
        while at != -1:
            unit = end - KEY - at
            span = bounds.span_for(unit)
            if end < span:
                return None  # spans only grow with the unit
            window = tail[-span:]
            # Periodic with period `unit`: the tail equals itself shifted by one unit.
            if window[unit:] == window[:-unit]:
                return smallest_unit(window[-unit:])
            at = tail.rfind(key, first, at + KEY - 1)
        return None


class TurnWatch:
    """Fed the pieces of one turn: `feed` answers the repeated unit once the answer's
    text and reasoning, or the arguments of the call being written, loop (see the
    module docstring for the bounds of each), else None."""

    def __init__(self, calls: Bounds = CONTENT) -> None:
        self._answer = RepeatWatch(CLOSE)
        self._calls_bounds = calls
        self._call: RepeatWatch | None = None
        self._index: int | None = None

    def feed(self, piece: Piece) -> str | None:
        if piece.kind in ("text", "reasoning"):
            unit = self._answer.feed(piece.text)
            return unit if unit is not None or not piece.text else counting(self._answer.tail)
        if piece.kind != "tool_call":
            return None
        if self._call is None or piece.index != self._index or piece.call_id is not None:
            self._call = RepeatWatch(self._calls_bounds)  # each call's arguments on their own
            self._index = piece.index
        return self._call.feed(piece.text)


def smallest_unit(unit: str) -> str:
    """`unit` as the shortest string it is a repetition of ("abab" -> "ab")."""
    for size in range(1, len(unit)):
        if len(unit) % size == 0 and unit[:size] * (len(unit) // size) == unit:
            return unit[:size]
    return unit


def shown_unit(unit: str) -> str:
    """The unit as a notice quotes it: its whitespace visible, a long one cut."""
    text = unit.replace("\n", "\\n").replace("\t", "\\t")
    return text if text.strip() else repr(unit)


# A count no answer asks for: this many numbers in a row at least, never falling, with
# the same few characters between each two (GAP_CHARS at most: ":", ", ", ") (line ") and
# nothing else, over MIN_SPAN characters.
COUNT_NUMBERS = 24
GAP_CHARS = 12
_PARTS = re.compile(r"\d+|\D+")


def counting(tail: str) -> str | None:
    """The last numbers of `tail` as a notice quotes a loop ("270:272:274:"), when it
    ends in a count that goes on without end over MIN_SPAN characters at least (SmolLM2,
    asked in what order a program's stages run, wrote "1:1:2:2:3:4:5:6:…" to the token
    limit; after a mend, "(line 1000) (line 1001) (line 1002) …"); None otherwise. Not
    periodic, so RepeatWatch does not see it."""
    if len(tail) < MIN_SPAN or not any(c.isdigit() for c in tail[-GAP_CHARS - 4:]):
        return None
    parts: list[str] = _PARTS.findall(tail)
    if parts and parts[-1].isdigit():
        parts.pop()  # the number being written may not be whole yet
    if len(parts) < 2:
        return None
    # The gap: the last one, or the one before it where the last is still being written.
    gap = parts[-3] if len(parts) >= 3 and parts[-3].startswith(parts[-1]) else parts[-1]
    if len(gap) > GAP_CHARS:
        return None
    numbers: list[int] = []
    at = len(parts) - 2
    while at >= 0 and parts[at].isdigit() and (at + 1 == len(parts) - 1 or parts[at + 1] == gap) \
            and (not numbers or int(parts[at]) <= numbers[-1]):
        numbers.append(int(parts[at]))
        if at == 0 or parts[at - 1] != gap:
            break
        at -= 2
    if at <= 0 and numbers:
        numbers.pop()  # the count reaches the tail's start: its first number may be cut
    numbers.reverse()
    spanned = sum(len(str(n)) for n in numbers) + len(gap) * len(numbers)
    if len(numbers) < COUNT_NUMBERS or spanned < MIN_SPAN or numbers[-1] <= numbers[0]:
        return None
    return gap.join(str(n) for n in numbers[-3:]) + gap
