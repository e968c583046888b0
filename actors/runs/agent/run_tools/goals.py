"""Goals: what a run works to reach, not merely stops at. Pure functions and texts.

A conversation's goal is `active` until the model says it is reached (`update_goal
{completed: true}`) or cannot be (`{blocked_reason}`). While it is active, an answer
without tool calls does not end the run: the model is told what is still open, at most
NUDGES_IN_A_ROW times in a row (then the run ends `stuck`). A completion is refused while
a todo is open, and, when the goal asks to be verified, checked by one verifier turn:
tool-free, its own short prompt, its answer held to VERDICT_SCHEMA.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

from actors.errors import ToolError
from actors.model.turns import ToolSpec
from actors.record.items import Item, Todo

NUDGES_IN_A_ROW = 3
VERIFIER_TURNS = 2  # at most, per message
VERIFIER_MAX_TOKENS = 400
VERIFIER_ITEMS = 8  # the last items the verifier reads
VERIFIER_ITEM_CHARS = 600

UPDATE_GOAL = "update_goal"

UPDATE_SPEC = ToolSpec(
    UPDATE_GOAL,
    "Say where the goal stands: {\"completed\": true} once it is reached (every todo completed), or "
    "{\"blocked_reason\": \"...\"} when it cannot be reached without the person.",
    {
        "type": "object",
        "properties": {
            "completed": {"type": "boolean"},
            "blocked_reason": {"type": "string"},
        },
    },
)

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "complete": {"type": "boolean"},
        "gaps": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
    },
    "required": ["complete", "gaps"],
}

VERIFIER_PROMPT = (
    "You check whether an agent reached its goal. You read the goal, its todo list, the last things it did and "
    "the files it changed. Answer only with JSON: {\"complete\": true or false, \"gaps\": [what is still missing, "
    "in a few words each]}. Say complete only when the goal is plainly reached."
)


@attrs.frozen
class Update:
    completed: bool
    blocked_reason: str | None = None


def parse_update(args: dict[str, Any]) -> Update:
    blocked = args.get("blocked_reason")
    if isinstance(blocked, str) and blocked.strip():
        return Update(False, blocked.strip())
    if args.get("completed") in (True, "true"):
        return Update(True)
    raise ToolError('Call update_goal with {"completed": true} or {"blocked_reason": "why"}.')


def open_todos(todos: Sequence[Todo]) -> list[Todo]:
    return [t for t in todos if t.status != "completed"]


def refuse_completion(todos: Sequence[Todo]) -> str:
    listed = "; ".join(f"{t.content} ({t.status})" for t in open_todos(todos))
    return f"Not complete: these todos are still open: {listed}. Finish them (or update the list), then say so."


def nudge(goal: str, todos: Sequence[Todo]) -> str:
    """What the model is told when it answers without a call while the goal is open."""
    still = open_todos(todos)
    open_part = (" Still open: " + "; ".join(t.content for t in still) + ".") if still else ""
    return (
        f"[The goal is not reached yet: {goal}.{open_part} Go on working toward it, and call update_goal "
        "with completed once it is reached, or with blocked_reason if you cannot reach it.]"
    )


def verifier_messages(goal: str, todos: Sequence[Todo], items: Sequence[Item]) -> list[dict[str, Any]]:
    """The verifier turn's own short conversation."""
    lines = [f"Goal: {goal}"]
    if todos:
        lines.append("Todo list:")
        lines.extend(f"- [{t.status}] {t.content}" for t in todos)
    files = sorted({i.file for i in items if i.kind == "tool" and i.diff and i.file and i.state == "done"})
    if files:
        lines.append("Files changed: " + ", ".join(files))
    lines.append("The last things the agent did:")
    for item in [i for i in items if i.kind in ("assistant", "tool")][-VERIFIER_ITEMS:]:
        if item.kind == "assistant" and item.text:
            lines.append(f"- said: {item.text[:VERIFIER_ITEM_CHARS]}")
        elif item.kind == "tool":
            lines.append(f"- {item.title or item.tool} ({item.state}): {(item.result or '')[:VERIFIER_ITEM_CHARS]}")
    return [{"role": "system", "content": VERIFIER_PROMPT}, {"role": "user", "content": "\n".join(lines)}]


@attrs.frozen
class Verdict:
    complete: bool
    gaps: tuple[str, ...]


def parse_verdict(text: str) -> Verdict:
    """The verifier's answer; one that cannot be read is not a completion."""
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start : end + 1]) if start >= 0 < end else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("complete"), bool):
        return Verdict(False, ("the check's answer could not be read; look over the work once more",))
    gaps = data.get("gaps")
    listed = tuple(str(g) for g in gaps if str(g).strip()) if isinstance(gaps, list) else ()
    return Verdict(bool(data["complete"]), listed)


def gaps_text(verdict: Verdict) -> str:
    listed = "; ".join(verdict.gaps) or "it did not say what"
    return f"Not complete: a check of the goal found gaps: {listed}. Work on them, then call update_goal again."
