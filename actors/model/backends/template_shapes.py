"""The shape of a history a chat template accepts, found by trying the template.

Many instruct models' templates refuse histories the daemon writes: Gemma's and
Mistral's raise "Conversation roles must alternate user/assistant/..." when two turns
of one side follow each other (a run stopped before any answer, a compaction's
summary beside the person's message, two stopped runs), some refuse a system
message, some any role but user and assistant (a tool result), some a turn with more
than one call. So before a turn, the messages (as actors/model/backends/template_messages.py
gives them) are put in a shape the template takes:

    merge_turns        consecutive turns of one side merged into one: the person's
                       text whole and in order, a notice or a summary folded in
                       marked as such (a message's `origin`, see ORIGIN_MARKS)
    system_in_user     the system message folded into the first user turn
    one_call_per_turn  an answer with several calls split into one answer per call,
                       each followed by its result
    tools_as_text      calls written as a line of the answer's text, results as the
                       user's text (for a template without a tool role)
    one_turn           the whole history as one user turn: the last resort, which
                       renders wherever a single user message does

Which ones a template needs is found once per template by rendering small probe
histories (`find_shape`), not from the model's name; a history the found shape does
not render is tried with more of them (`escalations`). Pure functions: the template is
given as a callable that renders a list of messages or raises.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from actors.model.turns import ORIGIN

Message = dict[str, Any]
Render = Callable[[list[Message]], object]

# What a message folded into another is marked with, by its ORIGIN (set by the
# history, actors/runs/agent/history.py; a message without one is the person's).
ORIGIN_MARKS = {
    "notice": "[A note from the daemon, not the person's words]",
    "summary": "[A summary of the conversation so far]",
}
TOOL_RESULT_MARK = "[tool result]"
SYSTEM_MARK = "[Instructions]"
EARLIER_MARK = "[The conversation so far]"
JOIN = "\n\n"

# The probe histories' ids: nine letters or digits, which Mistral's templates ask for.
PROBE_IDS = ("probe0001", "probe0002")
PROBE_TOOL = {
    "type": "function",
    "function": {"name": "probe", "description": "A probe.", "parameters": {"type": "object", "properties": {}}},
}


@attrs.frozen
class Shape:
    """Which changes a history is given (see the module docstring)."""

    merge_turns: bool = False
    system_in_user: bool = False
    one_call_per_turn: bool = False
    tools_as_text: bool = False
    one_turn: bool = False

    def names(self) -> list[str]:
        """The changes this shape makes, by their field names, in the order above."""
        return [f.name for f in attrs.fields(Shape) if getattr(self, f.name)]

    def with_(self, **changes: bool) -> Shape:
        return attrs.evolve(self, **changes)


AS_GIVEN = Shape()
# What each change is called where a person reads it (the models page).
SHAPE_WORDS = {
    "merge_turns": "consecutive turns of one side merged",
    "system_in_user": "the system message folded into the first user turn",
    "one_call_per_turn": "one call per answer",
    "tools_as_text": "tool calls and results as plain text",
    "one_turn": "the whole history as one user turn",
}


def escalations(found: Shape) -> list[Shape]:
    """The shapes a history is tried in, in order: the one found for the template,
    then with each further change added in turn, the last being `one_turn`."""
    out = [found]
    for name in ("merge_turns", "system_in_user", "one_call_per_turn", "tools_as_text"):
        if not getattr(found, name):
            out.append(out[-1].with_(**{name: True}))
    out.append(out[-1].with_(one_turn=True))
    return out


def _renders(render: Render, messages: list[Message]) -> bool:
    try:
        render(messages)
    except Exception:  # a template refuses with ValueError (raise_exception), jinja2's errors or TypeError
        return False
    return True


def _call(*ids: str) -> Message:
    calls = [{"id": i, "type": "function", "function": {"name": "probe", "arguments": {}}} for i in ids]
    return {"role": "assistant", "content": "", "tool_calls": calls}


def _result(call_id: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": "ok"}


def probes() -> dict[str, list[Message]]:
    """The probe histories, by the change a template that refuses one needs."""
    user = {"role": "user", "content": "Hello."}
    answer = {"role": "assistant", "content": "Hello!"}
    notice = {"role": "user", "content": "A notice."}
    a, b = PROBE_IDS
    return {
        "system_in_user": [{"role": "system", "content": "Be brief."}, user],
        "merge_turns": [user, answer, notice, user],
        "tools_as_text": [user, _call(a), _result(a), answer, user],
        "one_call_per_turn": [user, _call(a, b), _result(a), _result(b), answer, user],
    }


def find_shape(render: Render) -> Shape:
    """The shape `render`'s template needs, found by rendering the probe histories
    (each in the shape found so far). A template that renders no single user message
    gets every change; rendering then says what it refuses."""
    if not _renders(render, [{"role": "user", "content": "Hello."}]):
        return escalations(AS_GIVEN)[-1]
    shape = AS_GIVEN
    for name, history in probes().items():
        if name == "one_call_per_turn" and shape.tools_as_text:
            continue  # calls as text are never several to a turn
        if not _renders(render, shape_messages(history, shape)):
            shape = shape.with_(**{name: True})
    return shape


def shape_messages(messages: Sequence[Message], shape: Shape) -> list[Message]:
    """`messages` (as a template is given them) in `shape`. Nothing is dropped: every
    message's text is somewhere in what comes out, in the same order."""
    out = [dict(m) for m in messages]
    if shape.one_turn:
        return _one_turn(out)
    if shape.tools_as_text:
        out = [_without_tool_role(m) for m in out]
    elif shape.one_call_per_turn:
        out = _one_call_per_turn(out)
    if shape.system_in_user:
        out = _system_in_user(out)
    if shape.merge_turns:
        out = _merged(out)
    return [_clean(m) for m in out]


def _clean(msg: Message) -> Message:
    return {k: v for k, v in msg.items() if k != ORIGIN}


def _marked(msg: Message) -> str:
    """A message's text, marked by its origin when it has one."""
    text = msg.get("content") or ""
    mark = ORIGIN_MARKS.get(msg.get(ORIGIN) or "")
    if mark is None or text.startswith(mark):
        return text
    return f"{mark}\n{text}"


def _without_tool_role(msg: Message) -> Message:
    role = msg["role"]
    content = msg.get("content") or ""
    if role == "tool":
        return {"role": "user", "content": f"{TOOL_RESULT_MARK}\n{content}", ORIGIN: "tool"}
    if role == "assistant" and msg.get("tool_calls"):
        lines = []
        for c in msg["tool_calls"]:
            args = c["function"].get("arguments")
            shown = json.dumps(args, ensure_ascii=False) if isinstance(args, dict) else str(args or "{}")
            lines.append(f"[called {c['function']['name']} {shown}]")
        return {"role": "assistant", "content": "\n".join([content, *lines]).strip()}
    return msg


def _one_call_per_turn(messages: list[Message]) -> list[Message]:
    """An answer with several calls, followed by their results, as one answer per call
    each followed by its result (the answer's text with the first)."""
    out: list[Message] = []
    i = 0
    while i < len(messages):
        msg = messages[i]
        calls = msg.get("tool_calls") or []
        if msg["role"] != "assistant" or len(calls) < 2:
            out.append(msg)
            i += 1
            continue
        results = {}
        j = i + 1
        while j < len(messages) and messages[j]["role"] == "tool":
            results[messages[j].get("tool_call_id")] = messages[j]
            j += 1
        leftover = [r for k, r in results.items() if k not in {c.get("id") for c in calls}]
        for n, c in enumerate(calls):
            out.append({**msg, "content": msg.get("content") if n == 0 else "", "tool_calls": [c]})
            if c.get("id") in results:
                out.append(results[c.get("id")])
        out.extend(leftover)
        i = j
    return out


def _system_in_user(messages: list[Message]) -> list[Message]:
    systems = [m for m in messages if m["role"] == "system"]
    if not systems:
        return messages
    text = JOIN.join(m.get("content") or "" for m in systems)
    rest = [m for m in messages if m["role"] != "system"]
    first = next((n for n, m in enumerate(rest) if m["role"] == "user"), None)
    if first is None or first != 0:
        return [{"role": "user", "content": f"{SYSTEM_MARK}\n{text}"}, *rest]
    head = rest[0]
    return [{**head, "content": f"{SYSTEM_MARK}\n{text}{JOIN}{_marked(head)}", ORIGIN: None}, *rest[1:]]


def _merged(messages: list[Message]) -> list[Message]:
    """Consecutive user turns, and consecutive answers, each merged into one; a
    history that starts (after a system message) with an answer is given a user turn
    before it, as alternating templates want one first."""
    out: list[Message] = []
    for msg in messages:
        prev = out[-1] if out else None
        if prev is not None and msg["role"] in ("user", "assistant") and prev["role"] == msg["role"]:
            merged = {**prev, "content": _join(prev, msg), ORIGIN: None}
            calls = (prev.get("tool_calls") or []) + (msg.get("tool_calls") or [])
            if calls:
                merged["tool_calls"] = calls
            out[-1] = merged
            continue
        out.append(msg)
    start = 1 if out and out[0]["role"] == "system" else 0
    if len(out) > start and out[start]["role"] == "assistant":
        out.insert(start, {"role": "user", "content": EARLIER_MARK})
    return out


def _join(first: Message, second: Message) -> str:
    parts = [p for p in (_marked(first), _marked(second)) if p]
    return JOIN.join(parts)


def _one_turn(messages: list[Message]) -> list[Message]:
    """The whole history as one user turn: each message a paragraph saying whose it is."""
    parts = []
    for msg in (_without_tool_role(m) for m in messages):
        text = _marked(msg)
        if not text:
            continue
        if msg["role"] == "system":
            parts.append(f"{SYSTEM_MARK}\n{text}")
        elif msg["role"] == "assistant":
            parts.append(f"[You answered]\n{text}")
        else:
            parts.append(text)
    return [{"role": "user", "content": JOIN.join(parts)}]
