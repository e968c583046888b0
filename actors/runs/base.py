"""How a conversation starts a run, whatever kind it is.

A run works one message: the built-in agent's loop (actors/runs/agent/run.py) or another
agent's prompt over ACP (actors/runs/acp.py). The conversation actor knows only the
`Run` protocol and its `new_run` (actors/conversations/new_run.py): a new kind of run is a module
and a line there.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import attrs

from actors.record.budget import Budget
from actors.record.items import ConversationState, EndReason


@attrs.frozen
class RunRequest:
    """What the message that starts a run says about it."""

    local: bool = True  # from this computer (a network client's run gets no tools)
    unattended: bool = False  # a scheduled run: nobody is at the screen to approve
    think: bool | None = None  # the model's thinking switch, where it has one; None: its default
    compact: bool = False  # a compaction asked for (POST .../compact), no round
    helper: Literal["explore", "general"] | None = None  # a helper's run (actors/runs/agent/run_tools/helpers.py)
    max_rounds: int | None = None  # fewer rounds than a message's (a helper continued, or asked for)
    # The final answer is JSON of this schema (actors/runs/agent/answer_schema.py).
    answer_schema: dict[str, Any] | None = attrs.field(default=None, eq=False)
    budget: Budget | None = None  # what this run may spend (actors/record/budget.py)


@attrs.frozen
class RunEnd:
    """How a run ended: the conversation's next state and why."""

    state: ConversationState
    reason: EndReason


class Run(Protocol):
    @property
    def error(self) -> str | None:
        """Set by fail(): the run ended in an error."""
        ...

    async def loop(self) -> None:
        """Work the message until done. Cancelled: a stop; `finish` cleans up."""
        ...

    def abandon_round(self) -> None:
        """Forget what a round that raised streamed (its partial items end)."""
        ...

    def fail(self, text: str) -> None:
        """End the run with an error notice."""
        ...

    def finish(self, stop_notice: str | None) -> RunEnd:
        """Leave every item of the run in a final state and say the conversation's next
        state and why the run ended; `stop_notice` when the run was stopped (the notice
        that says why). Synchronous, so nothing can interrupt it."""
        ...
