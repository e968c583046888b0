"""What the record keeps of the cards that wait for the person: the names of the tools
whose cards a person answers (a question, a plan), the answer to an approval card, and
the plan a conversation writes (its file in the data folder, and what its card shows).

The run's tools that make these cards (actors/runs/agent/run_tools/todos_and_questions.py
and plans.py) build on
this; the record (actors/record/transcript.py) and the conversation need only this.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from actors.fs.atomic import write_atomic
from actors.record.items import PlanInfo, PlanState

ASK_USER = "ask_user_question"
EXIT_PLAN = "exit_plan_mode"

MAX_PLAN_BYTES = 256 * 1024
# What the person may say with a rejection or a denial (the model reads it whole).
MAX_FEEDBACK_CHARS = 4000


@attrs.frozen
class Decision:
    """The person's answer to an approval card, a plan's or a call's: yes or no, and
    with a no, what they said (`feedback`, None or blank when they said nothing)."""

    approve: bool
    feedback: str | None = None


@attrs.frozen
class PlanFiles:
    """The plan files, one per conversation, in the daemon's data folder."""

    folder: Path

    def path(self, conversation_id: str) -> Path:
        return self.folder / f"{conversation_id}.md"

    def read(self, conversation_id: str) -> str:
        """The plan's text ("" when none was written); at most MAX_PLAN_BYTES."""
        try:
            fd = os.open(self.path(conversation_id), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return ""
        try:
            raw = os.read(fd, MAX_PLAN_BYTES)
        finally:
            os.close(fd)
        return raw.decode("utf-8", errors="replace")

    def write(self, conversation_id: str, text: str) -> None:
        """Replace the plan's text, whole (the folder is made when missing)."""
        write_atomic(self.path(conversation_id), text.encode("utf-8"))

    def remove(self, conversation_id: str) -> None:
        try:
            os.unlink(self.path(conversation_id))
        except OSError:
            pass

    def is_plan(self, conversation_id: str, args: dict[str, Any]) -> bool:
        """Whether a write_file/edit_file call's path is this conversation's plan file."""
        raw = args.get("path")
        if not isinstance(raw, str) or not raw:
            return False
        return os.path.abspath(os.path.expanduser(raw)) == str(self.path(conversation_id))


def view(text: str, plan: PlanInfo | None, plan_mode: bool) -> dict[str, Any]:
    """What GET .../plan and a `plan` event carry."""
    state: PlanState = plan.state if plan is not None else "drafting"
    return {"text": text, "revision": plan.revision if plan is not None else 0, "state": state,
            "plan_mode": plan_mode}
