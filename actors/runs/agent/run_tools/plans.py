"""Plan mode: the plan file of a conversation, the tools that enter and leave planning,
and what a plan card carries.

While a conversation plans (`plan_mode`), nothing in its workspace changes: the model
reads, keeps a todo list, asks, and writes one file of its own, the plan
(`<data>/agent/plans/<conversation-id>.md`), with write_file or edit_file. It ends by
calling `exit_plan_mode`, which shows the plan on a card the person approves (plan mode
ends and the run carries the plan out) or rejects with feedback (the model revises).
"""

from __future__ import annotations

from pathlib import Path

from actors.model.turns import ToolSpec
from actors.record.cards import EXIT_PLAN

ENTER = "enter_plan_mode"

ENTER_SPEC = ToolSpec(
    ENTER,
    "Switch to planning before a change that needs one: from then on nothing in the workspace changes; you "
    "read, write the plan to the plan file, and show it with exit_plan_mode for the person to approve.",
    {"type": "object", "properties": {}},
)
EXIT_SPEC = ToolSpec(
    EXIT_PLAN,
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



def rejected(feedback: str | None) -> str:
    why = f" They said: {feedback.strip()}" if feedback and feedback.strip() else ""
    return f"The person rejected the plan.{why} Revise the plan file and call exit_plan_mode again."


def prompt_lines(path: Path, *, plan_file: bool = True) -> list[str]:
    """What the system prompt says while the conversation plans; `plan_file`: whether
    the file tools are offered to write the plan file (not to a led small model)."""
    last = (f"Write the plan to {path} with write_file or edit_file (the only file you may write), or give it as "
            "exit_plan_mode's `plan`; end with exit_plan_mode to show it, or with ask_user_question."
            if plan_file else
            "Give the plan as exit_plan_mode's `plan` to show it, or end with ask_user_question.")
    return [
        "You are planning: nothing in the workspace may change now. Read and search as you need, keep a todo "
        "list, and ask the person when a choice is theirs.",
        "Write the plan's steps with todo_write first.",
        last,
    ]


