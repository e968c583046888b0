"""Whether a call runs, asks the person first, or is refused. No I/O.

One decision for every kind of run: the built-in agent's tool calls
(actors/runs/agent/calls.py) and another agent's permission requests (actors/runs/acp.py).
It reads the mode as it is when the call comes (a person may switch it while a run
goes on) and whether anybody is at the screen (a scheduled run's is not).
"""

from __future__ import annotations

from typing import Literal

import attrs

from actors import notices
from actors.record.modes import Mode

Action = Literal["run", "ask", "refuse"]


@attrs.frozen
class Verdict:
    action: Action
    why: str | None = None  # for "refuse": what the card's result says (the model reads it)
    unattended: bool = False  # refused because nobody is at the screen (counted for the notice)
    allowed_by: str | None = None  # "run" because of this always-allow rule


RUN = Verdict("run")
ASK = Verdict("ask")


def decide(
    *, mode: Mode, change: bool, unattended: bool, planning: bool = False, rule: str | None = None,
    outside: bool = False,
) -> Verdict:
    """The verdict for one call. `change`: the call changes something (a write, a
    command that may write, an MCP tool, another agent's permission request).
    `planning`: the conversation is in plan mode, where no change runs, whatever the
    mode says (the plan file is not a change of the workspace: the run writes it).
    `rule`: an always-allow rule the person kept matches the call (actors/policy/rules.py;
    the caller asks only for a local client's call): it stands for their yes in `ask`,
    and nowhere else. `outside`: a command asks to run outside the sandbox: always a card,
    in every mode (`full` too, whatever rule), refused in `read_only`, while planning and
    with nobody at the screen."""
    if outside:
        if planning:
            return Verdict("refuse", notices.DENIED_IN_PLAN_MODE)
        if mode == "read_only":
            return Verdict("refuse", notices.DENIED_OUTSIDE_READ_ONLY)
        if unattended:
            return Verdict("refuse", notices.DENIED_OUTSIDE_UNATTENDED, unattended=True)
        return ASK
    if not change:
        return RUN
    if planning:
        return Verdict("refuse", notices.DENIED_IN_PLAN_MODE)
    if mode == "read_only":
        return Verdict("refuse", notices.DENIED_READ_ONLY)
    if mode == "full":
        return RUN
    if rule is not None:
        return Verdict("run", allowed_by=rule)
    if unattended:
        return Verdict("refuse", notices.DENIED_UNATTENDED, unattended=True)
    return ASK


@attrs.define
class ModeWatch:
    """Tells the model once when the person switched the mode during a message: the
    system prompt stays the one the message started with (the prompt cache is kept),
    so the first call after the switch says it in its result."""

    _told: Mode

    def note(self, mode: Mode) -> str | None:
        """The line for this call's result, or None when the mode is the one told."""
        if mode == self._told:
            return None
        self._told = mode
        return notices.mode_switched(mode)
