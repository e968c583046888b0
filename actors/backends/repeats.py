"""Noticing a model that repeats itself without end.

A small local model sometimes falls into a loop: a todo step "Hello 1.1.1.1.1..." or a
sentence written over and over, until the token budget runs out, minutes of a
two-core machine spent on nothing. The agent's rounds ask the backend to watch for it
(`TurnInput.stop_repeats`): when the last characters written are one short unit
repeated, the generation stops there and the result says what repeated, so the run
can tell the model (and the person) and ask again.

The bounds keep text people write out of it: a unit of at most MAX_UNIT characters (a
line of code, a todo entry in JSON) repeated over at least MIN_SPAN characters and
MIN_REPEATS times. A Markdown rule or a table's separator line is far shorter than
MIN_SPAN; a row of 240 dashes, or one long line six times over, is not text anyone
asked a model for (a file of identical lines is a command's job, not a model's).
"""

from __future__ import annotations

MAX_UNIT = 200
MIN_SPAN = 240
MIN_REPEATS = 6
# The tail kept: enough for the longest unit's span.
WINDOW = max(MIN_SPAN, MIN_REPEATS * MAX_UNIT)


def span_for(unit: int) -> int:
    """How many characters a unit of `unit` characters must fill to count as a loop."""
    return max(MIN_SPAN, MIN_REPEATS * unit)


class RepeatWatch:
    """Fed the text a model writes, piece by piece; `feed` answers the repeated unit
    once the tail is a loop, else None."""

    def __init__(self) -> None:
        self.tail = ""

    def feed(self, text: str) -> str | None:
        if not text:
            return None
        self.tail = (self.tail + text)[-WINDOW:]
        last = self.tail[-1]
        for unit in range(1, MAX_UNIT + 1):
            span = span_for(unit)
            if len(self.tail) < span:
                break  # spans only grow with the unit
            if self.tail[-1 - unit] != last:
                continue  # not this period: the cheap test first
            tail = self.tail[-span:]
            # Periodic with period `unit`: the tail equals itself shifted by one unit.
            if tail[unit:] == tail[:-unit]:
                return smallest_unit(tail[-unit:])
        return None


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
