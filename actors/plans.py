"""Plan mode: the plan file of a conversation, the tools that enter and leave planning,
and what a plan card carries.

While a conversation plans (`plan_mode`), nothing in its workspace changes: the model
reads, keeps a todo list, asks, and writes one file of its own, the plan
(`<data>/agent/plans/<conversation-id>.md`), with write_file or edit_file. It ends by
calling `exit_plan_mode`, which shows the plan on a card the person approves (plan mode
ends and the run carries the plan out) or rejects with feedback (the model revises).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from actors.atomic import write_atomic
from actors.engine import ToolSpec
from actors.items import PlanInfo, PlanState

MAX_PLAN_BYTES = 256 * 1024
# What the person may say with a rejection or a denial (the model reads it whole).
MAX_FEEDBACK_CHARS = 4000

ENTER = "enter_plan_mode"
EXIT = "exit_plan_mode"

ENTER_SPEC = ToolSpec(
    ENTER,
    "Switch to planning before a change that needs one: from then on nothing in the workspace changes; you "
    "read, write the plan to the plan file, and show it with exit_plan_mode for the person to approve.",
    {"type": "object", "properties": {}},
)
EXIT_SPEC = ToolSpec(
    EXIT,
    "Show the plan to the person and wait for their approval: give it as `plan`, or leave `plan` out to show "
    "what you wrote to the plan file. Approved, you carry it out; rejected, you read why and revise the plan.",
    {"type": "object", "properties": {
        "plan": {"type": "string", "description": "The plan in Markdown; it replaces the plan file's text"},
    }},
)

APPROVED = "The plan is approved; carry it out."
NO_PLAN_YET = (
    "The plan file is empty. Give the plan as exit_plan_mode's `plan`, or write it to {path} with write_file first."
)
BAD_PLAN = "`plan` is the plan's text in Markdown, a string of at most {limit} bytes; call exit_plan_mode again."
# Said after the todo list is written while planning: what ends the planning.
AFTER_TODOS = "You are planning: when the plan is ready, call exit_plan_mode with it as `plan`."
NOT_PLANNING = "You are not planning now, so there is no plan to show; make the change, or call enter_plan_mode."
ALREADY_PLANNING = "You are already planning. Write the plan to {path}, then call exit_plan_mode."
ENTERED = (
    "You are planning now: nothing in the workspace changes until the person approves the plan. Read what you "
    "need, write the plan to {path} with write_file (the only file you may write), then call exit_plan_mode."
)
NOBODY_TO_APPROVE = (
    "No one is here to approve the plan in this scheduled run, so it stays proposed for the person to read later. "
    "Stop here."
)
DENIED_IN_PLAN_MODE = (
    "Not done: this conversation is planning, so nothing in the workspace changes. Write the change into the "
    "plan instead, then call exit_plan_mode."
)


def rejected(feedback: str | None) -> str:
    why = f" They said: {feedback.strip()}" if feedback and feedback.strip() else ""
    return f"The person rejected the plan.{why} Revise the plan file and call exit_plan_mode again."


def prompt_lines(path: Path) -> list[str]:
    """What the system prompt says while the conversation plans."""
    return [
        "You are planning: nothing in the workspace may change now. Read and search as you need, keep a todo "
        "list, and ask the person when a choice is theirs.",
        "Write the plan's steps with todo_write first.",
        f"Write the plan to {path} with write_file or edit_file (the only file you may write), or give it as "
        "exit_plan_mode's `plan`; end with exit_plan_mode to show it, or with ask_user_question.",
    ]


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
