"""The tools that act on the run itself rather than on the workspace: the todo list
(`todo_write`) and a question to the person (`ask_user_question`).

The built-in run (actors/runs/agent/run.py) carries them out, since what they change is the
conversation: its todo list, a card the person answers. Here: what the model is told
about them, and the checks of their arguments, as pure functions. A bad call is a
ToolError whose text says what is wrong and how to call again.
"""

from __future__ import annotations

from typing import Any

import attrs

from actors.errors import ToolError
from actors.model.turns import ToolSpec
from actors.record.cards import ASK_USER
from actors.record.items import TODO_STATUSES, Todo

MAX_TODOS = 50
MAX_TODO_CHARS = 500
MAX_OPTIONS = 6
MAX_QUESTION_CHARS = 2000
MAX_OPTION_CHARS = 200

TODO_WRITE = "todo_write"

TODO_SPEC = ToolSpec(
    TODO_WRITE,
    "Write the todo list of this task: the whole list each time (it replaces the last one). Use it for work of "
    "several steps; mark one step in_progress while you work on it and completed when it is done.",
    {
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "maxItems": MAX_TODOS,
                "items": {
                    "type": "object",
                    "properties": {
                        # Not empty, as parse_todos checks (the grammar then cannot write "").
                        "content": {"type": "string", "minLength": 1, "description": "The step, in a few words"},
                        "status": {"type": "string", "enum": list(TODO_STATUSES)},
                    },
                    "required": ["content", "status"],
                },
            }
        },
        "required": ["todos"],
    },
)

QUESTION_SPEC = ToolSpec(
    ASK_USER,
    "Ask the person a question when you cannot go on without their choice. Give options when there are a few "
    "likely answers; the person may also answer in their own words. Wait for the answer before going on.",
    {
        "type": "object",
        "properties": {
            "question": {"type": "string"},
            "options": {"type": "array", "maxItems": MAX_OPTIONS, "items": {"type": "string"}},
            "multiple": {"type": "boolean", "description": "The person may pick several options"},
        },
        "required": ["question"],
    },
)

SPECS = (TODO_SPEC, QUESTION_SPEC)
NAMES = frozenset(s.name for s in SPECS)


def parse_todos(args: dict[str, Any]) -> tuple[Todo, ...]:
    """The new list, or ToolError saying what is wrong with it."""
    raw = args.get("todos")
    if not isinstance(raw, list):
        raise ToolError('"todos" must be an array of {"content", "status"} objects. Write the whole list again.')
    if len(raw) > MAX_TODOS:
        raise ToolError(
            f"The list has {len(raw)} entries; at most {MAX_TODOS} are kept. Merge steps and write it again."
        )
    out: list[Todo] = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise ToolError(f"todos[{i}] must be an object with content and status.")
        content, status = entry.get("content"), entry.get("status")
        if not isinstance(content, str) or not content.strip():
            raise ToolError(f"todos[{i}].content must be a non-empty string.")
        if len(content) >= MAX_TODO_CHARS:
            raise ToolError(f"todos[{i}].content is {len(content)} characters; keep each under {MAX_TODO_CHARS}.")
        if status not in TODO_STATUSES:
            raise ToolError(f"todos[{i}].status must be one of {', '.join(TODO_STATUSES)} (got {status!r}).")
        out.append(Todo(content.strip(), status))
    working = [t.content for t in out if t.status == "in_progress"]
    if len(working) > 1:
        raise ToolError(f"{len(working)} entries are in_progress ({'; '.join(working)}); at most one may be.")
    return tuple(out)


def todo_unchanged(todos: tuple[Todo, ...]) -> str:
    """The refusal of a list that is the list already (a small model writes one list
    over and over): nothing to change, so the call fails and is not made again."""
    if not todos:
        return "The todo list is empty already. Write the steps of the task, or go on without a list."
    return "The todo list is exactly this already; nothing changed. Go on with the step in progress."


def todo_summary(todos: tuple[Todo, ...]) -> str:
    """What the model reads back after writing the list."""
    if not todos:
        return "The todo list is empty now."
    done = sum(t.status == "completed" for t in todos)
    lines = [f"The todo list has {len(todos)} entries, {done} completed:"]
    marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
    lines.extend(f"{marks[t.status]} {t.content}" for t in todos)
    return "\n".join(lines)


@attrs.frozen
class Question:
    text: str
    options: tuple[str, ...]
    multiple: bool


def parse_question(args: dict[str, Any]) -> Question:
    text = args.get("question")
    if not isinstance(text, str) or not text.strip():
        raise ToolError('The call needs "question": what you want to ask, as a string.')
    if len(text) > MAX_QUESTION_CHARS:
        raise ToolError(f"The question is {len(text)} characters; keep it under {MAX_QUESTION_CHARS}.")
    raw = args.get("options") or []
    if not isinstance(raw, list) or not all(isinstance(o, str) and o.strip() for o in raw):
        raise ToolError('"options" must be an array of non-empty strings.')
    if len(raw) > MAX_OPTIONS:
        raise ToolError(f"At most {MAX_OPTIONS} options; give the likeliest.")
    if any(len(o) > MAX_OPTION_CHARS for o in raw):
        raise ToolError(f"Keep each option under {MAX_OPTION_CHARS} characters.")
    multiple = args.get("multiple", False)
    if multiple not in (True, False, "true", "false"):
        raise ToolError('"multiple" must be true or false.')
    return Question(text.strip(), tuple(o.strip() for o in raw), multiple in (True, "true"))


def answer_text(question: Question, answer: str | list[str]) -> str:
    """The card's result: the person's answer as the model reads it."""
    if isinstance(answer, list):
        picked = "; ".join(answer) if answer else "nothing"
        return f"The person answered: {picked}"
    return f"The person answered: {answer}"


def check_answer(question: Question, answer: object) -> str | list[str]:
    """The answer as given (free text is always allowed); ValueError when its shape is
    wrong (a list to a single-choice question, or not text)."""
    if isinstance(answer, str):
        if not answer.strip():
            raise ValueError("The answer is empty; give some text or pick an option.")
        return answer.strip()
    if isinstance(answer, list) and all(isinstance(a, str) for a in answer):
        if not question.multiple:
            raise ValueError("This question takes one answer: send a string, not a list.")
        return [a.strip() for a in answer if a.strip()]
    raise ValueError("answer must be a string, or a list of strings for a question that takes several.")
