"""Bookkeeping of a run that needs no I/O: rounds, repeated failures, partial calls,
what the next round rules out and when the run is stuck (`Ledger`).

Kept apart from the conversation actor so it can be tested on its own.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import attrs
import jiter

from actors import notices

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


# A search's result ends with its count (actors/tools/search.py), then maybe a note of
# what it did not search: none found, it got nowhere.
_FOUND_NOTHING = re.compile(r"(?:\A|\n)---\nTotal matches: 0(?:\n|\Z)")


def found_nothing(state: str, result: str) -> bool:
    """Whether a call that ran was a search that found nothing (grep_search,
    file_glob_search)."""
    return state == "done" and _FOUND_NOTHING.search(result) is not None


def got_nowhere(ended: str, result: str) -> bool:
    """Whether a call, its state `ended` as ended_as says, got the run nowhere: it failed,
    a rule or a guard refused it (not the person: their no is their choice), or it was a
    search that found nothing."""
    if ended == "denied":
        return notices.card_end(result)[0] != "person"
    return ended == "error" or found_nothing(ended, result)


@attrs.define
class FailureStreak:
    """Counts the same call failing the same way in a row."""

    _key: tuple[str, str, str] | None = None
    _count: int = 0

    def record(self, name: str, arguments: str, state: str, result: str, *, again: bool = False) -> bool:
        """Record a finished call; True when the limit of identical failures is reached.
        `again`: the call was refused as made already, which fails as it did, if it did."""
        if state not in ("error", "denied"):
            self._key, self._count = None, 0
            return False
        key = (*call_key(name, arguments), result)
        if key == self._key or (again and self._key is not None and self._key[:2] == key[:2]):
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


# ---- what the run rules out, and when it is stuck ----

# The run's latest failed calls a local model's grammar rules out of its next rounds,
# and as many calls already made since the last change.
AVOIDED_CALLS = 4
# Calls made since the last change the run keeps to refuse again (`Ledger.made`): more
# than a run's rounds can make one at a time (MAX_ROUNDS), bounded all the same.
MADE_KEPT = 64
# Answers in a row cut where the model repeated itself (actors/model/backends/repeats.py)
# before the run ends `stuck`: the ones before are told to the model, which tries again.
LOOPS_IN_A_ROW = 3

Avoided = tuple[str, Any]  # (tool, parsed arguments; None: no call of that tool this round)


@attrs.frozen
class RoundEnded:
    """A round's answer ended: `cut` the tools whose call its loop cut (empty when it
    did not loop), `looped` whether the answer was cut where it repeated itself."""

    looped: bool = False
    cut: tuple[str, ...] = ()


@attrs.frozen
class CallEnded:
    """One of the round's calls ended with `state` and `result` (a copy of an earlier
    call of the answer is not one). `read`: it surely changed nothing; `own`: a call
    that changes no file of the workspace though it is no read (one of the run's own
    tools: the todo list, a question; a plan's file), which neither counts as a change
    nor is kept as made. `earlier`: a call of an earlier run of the same message (a
    resumed run, one after an approval or an answer), read from the record: it counts
    for what was made and changed, not in this run's streaks or rounds. `again`: it
    was refused as made already (`Ledger.made`): counted in the streak of identical
    failures, not kept as a failed call (a change lets it run again)."""

    name: str
    raw: str
    state: str
    result: str
    read: bool = False
    own: bool = False
    earlier: bool = False
    again: bool = False


@attrs.frozen
class WriteRefused:
    """A call of `name` was refused before it ran in a way that varying its arguments
    does not mend (a small model's write over a file it did not write): the next
    round may not call the tool at all."""

    name: str


@attrs.frozen
class Forgot:
    """What the model read was summarised away (a compaction): the calls made are no
    longer in what it reads, so it may make them again."""


@attrs.frozen
class Looped:
    """The round was cut where the model began to repeat itself."""


@attrs.frozen
class Nudged:
    """The model answered while its goal was open, and is to be told what is open."""


Event = RoundEnded | CallEnded | WriteRefused | Forgot | Looped | Nudged
# "stuck": the same call failing the same way (or a loop, or nudges) too often in a row;
# "failing": too many calls in a row failed, each a new one (`Ledger.fail_limit`).
Verdict = Literal["go_on", "stuck", "failing"]


@attrs.define
class Ledger:
    """The run's avoid and loop bookkeeping, fed the run's events (`feed`), with no I/O.

    What it keeps: the latest failed calls, and the calls made since the last change
    (what the next round's grammar rules out, `avoided`; a call made already is refused
    by the run on any route, `made`: no call twice while nothing changed), the tools a loop or a refusal took out of
    the next round, the same call failing the same way in a row, answers in a row cut
    for a loop, answers in a row while the goal is open, whether a change ran, and the
    round's calls as (state, whether it only read) for a small model's next step.
    `feed` says "stuck" when the run is to end so: REPEAT_FAILURE_LIMIT identical
    failures, LOOPS_IN_A_ROW loops, or NUDGES in a row (goals.NUDGES_IN_A_ROW, given);
    and "failing" after `fail_limit` calls in a row that got nowhere (`got_nowhere`: a
    command that exited non-zero, a call refused by a rule or a guard, a search that
    found nothing; not a call the person denied), however they differ: None for no such
    limit (a model that is not led; see leader.FAILS_TO_STOP)."""

    nudge_limit: int
    fail_limit: int | None = None
    _streak: FailureStreak = attrs.field(factory=FailureStreak)
    _failed: list[Avoided] = attrs.field(factory=list)  # the latest failed calls, oldest first
    _made: list[Avoided] = attrs.field(factory=list)  # calls made since the last change, it included
    _again: list[Avoided] = attrs.field(factory=list)  # of those, the latest refused as made again
    _out_next: tuple[str, ...] = ()  # tools the next round may not call
    _cut: tuple[str, ...] = ()  # of those, the ones whose call the last round's loop cut
    _loops: int = 0
    _nudges: int = 0
    _changed: bool = False
    _fails: int = 0  # calls in a row that got nowhere, whatever they were
    _round: list[tuple[str, bool]] = attrs.field(factory=list)

    def feed(self, event: Event) -> Verdict:
        """Take one event of the run; "stuck" when the run must end for it."""
        if isinstance(event, RoundEnded):
            self._out_next = self._cut = tuple(dict.fromkeys(event.cut))
            self._round = []
            if not event.looped:
                self._loops = 0
            return "go_on"
        if isinstance(event, CallEnded):
            return self._call_ended(event)
        if isinstance(event, WriteRefused):
            self._out_next += (event.name,)
            return "go_on"
        if isinstance(event, Forgot):
            self._made, self._again = [], []
            return "go_on"
        if isinstance(event, Looped):
            self._loops += 1
            return "stuck" if self._loops >= LOOPS_IN_A_ROW else "go_on"
        if self._nudges >= self.nudge_limit:
            return "stuck"
        self._nudges += 1
        return "go_on"

    def _call_ended(self, event: CallEnded) -> Verdict:
        ended = ended_as(event.name, event.state, event.result)  # a command that exited non-zero failed
        args, _ = parse_arguments(event.raw) if event.raw.strip() else (None, None)
        if event.state in ("error", "denied") and args is not None and not event.again:
            # Not the same again for the rest of the run (its last AVOIDED_CALLS).
            self._failed = _latest(self._failed, (event.name, args), AVOIDED_CALLS)
        if not event.again:
            self._made_once(event, ended, args)
        elif args is not None:  # ruled out while nothing changes, however long ago it was made
            self._again = _latest(self._again, (event.name, args), AVOIDED_CALLS)
        self._changed = self._changed or (ended == "done" and not event.read and not event.own)
        if event.earlier:
            return "go_on"
        self._nudges = 0  # the model called a tool: it is working on the goal
        self._round.append((ended, event.read))
        if got_nowhere(ended, event.result):
            self._fails += 1
        elif ended == "done":
            self._fails = 0
        if self._streak.record(event.name, event.raw, ended, event.result, again=event.again):
            return "stuck"
        return "failing" if self.fail_limit is not None and self._fails >= self.fail_limit else "go_on"

    def _made_once(self, event: CallEnded, ended: str, args: dict[str, Any] | None) -> None:
        """A call that ran is one the model need not make again while nothing changed:
        a read's result is in the conversation already (a small model reads one file or
        globs one pattern round after round; in the web UI it searched for one text 25
        times), and a change made again changes nothing more or does it twice. So is a
        command that failed (it exited non-zero), which fails the same way until
        something changes (SmolLM2 ran `greet` 29 times). A change that ran clears the
        others, since a read or the command may then answer otherwise."""
        if event.own and not event.read:
            return
        failed_command = ended == "error" and event.name == SHELL_TOOL
        if ended != "done" and not failed_command:
            return
        if not failed_command and not event.read:
            self._made, self._again = [], []
        if args is not None:
            self._made = _latest(self._made, (event.name, args), MADE_KEPT)

    def made(self, name: str, raw: str) -> bool:
        """Whether the call `name(raw)` was made already while nothing changed since
        (its arguments as parsed: key order and spacing do not matter); the run refuses
        it with a short result instead of running it again (a provider's model is not
        held by a grammar, and a local one's grammar cannot rule out every value)."""
        args, _ = parse_arguments(raw)
        if args is None:
            return False
        # Spacing inside a value does not matter either: `ls  -a` is `ls -a` (a small
        # model ran a failing command each round with one more space).
        return any(made == name and _spaced(was) == _spaced(args) for made, was in self._made)

    def avoided(self, paused: tuple[Avoided, ...] = ()) -> tuple[Avoided, ...]:
        """What the next round's grammar rules out (TurnInput.avoid): the latest failed
        calls and the latest calls made since the last change (and of the others, those
        refused as made again: SmolLM2 read a file it had read six calls before, was
        refused, and read it twice more, to the stop), the `paused` tools (from the record), and for one
        round the tools whose call the last round's loop cut or a refusal took out (a
        small model that looped inside a call writes the same call again: made to pick
        something else, it goes on)."""
        made = self._made[-AVOIDED_CALLS:]
        made += [r for r in self._again if r not in made]  # and those made again, however long ago first
        out = list(self._failed) + [r for r in made if r not in self._failed] + list(paused)
        out += [(name, None) for name in dict.fromkeys(self._out_next) if (name, None) not in out]
        return tuple(out)

    @property
    def cut(self) -> tuple[str, ...]:
        """The tools whose call the last round's loop cut (out of the next round, `avoided`)."""
        return self._cut

    @property
    def loops(self) -> int:
        """Answers in a row cut where the model repeated itself."""
        return self._loops

    @property
    def fails(self) -> int:
        """Calls in a row that got nowhere, each counted however it differs from the others."""
        return self._fails

    @property
    def changed(self) -> bool:
        """Whether a change ran in this run (a write, an edit, a command that exited 0)."""
        return self._changed

    @property
    def round_calls(self) -> tuple[tuple[str, bool], ...]:
        """The calls of the latest round as (state, whether it only read)."""
        return tuple(self._round)


def _spaced(value: Any) -> Any:
    """`value` with each string's runs of white space made one space, and stripped."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, dict):
        return {k: _spaced(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_spaced(v) for v in value]
    return value


def _latest(kept: list[Avoided], made: Avoided, most: int) -> list[Avoided]:
    """`kept` with `made` last, once, and at most `most` of them."""
    return [k for k in kept if k != made][-(most - 1):] + [made]
