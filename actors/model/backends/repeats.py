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


# The last KEY characters, looked for again up to MAX_UNIT characters back: any period
# the tail could have shows there first (every span is longer than KEY), so only where
# they recur is a period tried. Ordinary text has no such recurrence in most pieces.
KEY = 8


class RepeatWatch:
    """Fed the text a model writes, piece by piece; `feed` answers the repeated unit
    once the tail is a loop, else None. It runs for every piece a model writes: a piece
    costs a few searches in C, not a loop over every period."""

    def __init__(self) -> None:
        self.tail = ""

    def feed(self, text: str) -> str | None:
        if not text:
            return None
        tail = self.tail = (self.tail + text)[-WINDOW:]
        end = len(tail)
        if end < MIN_SPAN:
            return None  # shorter than every span
        key = tail[-KEY:]
        first = max(0, end - KEY - MAX_UNIT)
        # Occurrences of the key ending before the end, nearest first: the smallest period first.
        at = tail.rfind(key, first, end - 1)
        while at != -1:
            unit = end - KEY - at
            span = span_for(unit)
            if end < span:
                return None  # spans only grow with the unit
            window = tail[-span:]
            # Periodic with period `unit`: the tail equals itself shifted by one unit.
            if window[unit:] == window[:-unit]:
                return smallest_unit(window[-unit:])
            at = tail.rfind(key, first, at + KEY - 1)
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
