"""Bookkeeping of a run that needs no I/O: rounds, repeated failures, partial calls.

Kept apart from the conversation actor so it can be tested on its own.
"""

from __future__ import annotations

import json
import re
from typing import Any

import attrs
import jiter

MAX_ROUNDS = 30
REPEAT_FAILURE_LIMIT = 3
# A composing call's title comes from its first keys (a path, a command), so its
# arguments are parsed for the title only while they are short; past this many bytes
# a piece costs only its own length, however long the call grows.
PARTIAL_PARSE_LIMIT = 16 * 1024


def parse_arguments(raw: str) -> tuple[dict[str, Any] | None, str | None]:
    """The call's arguments as an object, or None and the parser's reason."""
    if raw.strip() == "":
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"the arguments are not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(value, dict):
        return None, f"the arguments are a JSON {type(value).__name__}, not an object"
    return value, None


def parse_partial(raw: str) -> dict[str, Any]:
    """As much of a call's arguments as has been written, for its title."""
    if not raw:
        return {}
    try:
        value = jiter.from_json(raw.encode("utf-8"), partial_mode="trailing-strings")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def call_key(name: str, arguments: str) -> tuple[str, str]:
    """What makes two calls the same call: the tool, and its arguments as JSON with
    sorted keys (as written when they are not JSON)."""
    try:
        return name, json.dumps(json.loads(arguments), sort_keys=True)
    except (json.JSONDecodeError, TypeError):
        return name, arguments


# The shell tool's result ends with the command's status (actors/tools/shell.py).
SHELL_TOOL = "exec_shell_command"
_EXIT_STATUS = re.compile(r"\n\[exit code: (-?\d+)\]\s*$")


def ended_as(name: str, state: str, result: str) -> str:
    """A call's state for the run's rules (repeats, what to avoid, a small model's next
    step): a command that exited with a status other than 0 failed, though its card
    is `done` (the output is what the model reads, and what a person sees)."""
    found = _EXIT_STATUS.search(result) if state == "done" and name == SHELL_TOOL else None
    return "error" if found and found.group(1) != "0" else state


@attrs.define
class FailureStreak:
    """Counts the same call failing the same way in a row."""

    _key: tuple[str, str, str] | None = None
    _count: int = 0

    def record(self, name: str, arguments: str, state: str, result: str) -> bool:
        """Record a finished call; True when the limit of identical failures is reached."""
        if state not in ("error", "denied"):
            self._key, self._count = None, 0
            return False
        key = (*call_key(name, arguments), result)
        if key == self._key:
            self._count += 1
        else:
            self._key, self._count = key, 1
        return self._count >= REPEAT_FAILURE_LIMIT


@attrs.define
class PartialCall:
    """A tool call the model is still writing."""

    index: int
    call_id: str
    name: str
    item_id: str
    head: str = ""  # the arguments written so far, while short enough to parse
    size: int = 0  # characters written so far
    bytes: int = 0  # UTF-8 bytes written so far (the card's `bytes`)
    parsed_at: int = -1
    args: dict[str, Any] = attrs.field(factory=dict)

    def feed(self, text: str) -> bool:
        """Append a piece; True when the partial arguments were parsed again."""
        self.size += len(text)
        if self.size > PARTIAL_PARSE_LIMIT:
            # Stop keeping the text: the caller sums sizes, the record has the call.
            self.head = ""
            return False
        self.head += text
        self.parsed_at = self.size
        self.args = parse_partial(self.head)
        return True
