"""What a model is sent of a conversation: its items as chat messages. Pure functions.

The messages are always well-formed, whatever the items hold: an assistant message
that calls tools is followed by exactly one `tool` message for each of its calls, in
the order of the calls, before anything else. A call whose card ended without a final
state (a run cut in the middle of a round, a card lost in a crash) reads as not run.
OpenAI-compatible servers refuse a conversation with a call left unanswered, and a
chat template may refuse one with an answer to no call, so neither is ever sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from actors import compaction, notices
from actors.items import FINAL_TOOL_STATES, Item
from actors.prompt import user_content
from actors.runstate import parse_arguments
from actors.tools.registry import RESULT_CAP_BYTES, cap_text

# A shortened result keeps this much for the model.
SHORT_RESULT_LINES = 8
SHORT_RESULT_BYTES = 1024
SHORTENED_TAIL = "\n[result shortened to fit the context; run the tool again for the rest]"

Message = dict[str, Any]


def shown_args(raw: str) -> str:
    """What the model is shown of a call's arguments: an object, or `{}` (a template
    that parses the arguments would refuse the conversation for a cut one)."""
    args, _ = parse_arguments(raw)
    return raw if args is not None and raw.strip() else "{}"


def is_long(text: str) -> bool:
    """Whether shortening the result would leave the model less to read."""
    return len(text.encode("utf-8")) > SHORT_RESULT_BYTES or text.count("\n") >= SHORT_RESULT_LINES


def model_result(item: Item) -> str:
    """What the model reads of a card's result: capped, or its head once shortened."""
    text = item.result or ""
    if item.shortened:
        head = "\n".join(text.splitlines()[:SHORT_RESULT_LINES])
        return cap_text(head, SHORT_RESULT_BYTES) + SHORTENED_TAIL
    return cap_text(text, RESULT_CAP_BYTES)


def oldest_long_result(items: Sequence[Item]) -> Item | None:
    """The card whose result is shortened next when the context runs short."""
    for item in items:
        if item.kind == "tool" and not item.shortened and item.result and is_long(item.result):
            return item
    return None


def _answers(items: Sequence[Item], start: int) -> dict[str, Item]:
    """The finished cards after the assistant item at `start`, up to the next
    assistant item, by call id (the first card of an id wins)."""
    out: dict[str, Item] = {}
    for item in items[start + 1 :]:
        if item.kind == "assistant":
            break
        if item.kind == "tool" and item.call_id and item.state in FINAL_TOOL_STATES:
            out.setdefault(item.call_id, item)
    return out


def messages(items: Sequence[Item], system: str | None = None) -> list[Message]:
    """The chat messages for `items`, after the system prompt when there is one."""
    out: list[Message] = []
    if system is not None:
        out.append({"role": "system", "content": system})
    for pos, item in enumerate(items):
        if item.compacted:
            continue  # summarised: the compaction notice after it speaks for it
        if item.compaction is not None:
            out.append({"role": "user", "content": compaction.model_text(item.compaction)})
            continue
        if item.kind == "user":
            out.append({"role": "user", "content": user_content(item.text or "", item.images)})
        elif item.kind == "assistant":
            calls = item.tool_calls or ()
            if not (item.text or calls):
                continue
            msg: Message = {"role": "assistant", "content": item.text or ""}
            if calls:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": shown_args(c.arguments)}}
                    for c in calls
                ]
            out.append(msg)
            answers = _answers(items, pos) if calls else {}
            for c in calls:
                card = answers.get(c.id)
                content = model_result(card) if card is not None else notices.NOT_RUN_IN_HISTORY
                out.append({"role": "tool", "tool_call_id": c.id, "content": content})
        elif item.kind == "notice" and item.for_model:
            out.append({"role": "user", "content": item.text or ""})
        # A tool card is sent with the call it answers, above; another notice is the person's.
    return out


def well_formed(msgs: Sequence[Message]) -> str | None:
    """Why `msgs` is not a conversation an OpenAI-compatible server takes, or None.
    (For tests and for checking a history before it is sent.)"""
    pending: list[str] = []
    for i, msg in enumerate(msgs):
        role = msg.get("role")
        if role == "tool":
            if not pending:
                return f"message {i} answers no call"
            want = pending.pop(0)
            if msg.get("tool_call_id") != want:
                return f"message {i} answers {msg.get('tool_call_id')!r}, expected {want!r}"
            continue
        if pending:
            return f"message {i} ({role}) comes before the calls {pending} are answered"
        if role == "system" and i != 0:
            return f"message {i} is a system message after the first"
        if role == "assistant":
            pending = [c["id"] for c in msg.get("tool_calls") or ()]
            if len(set(pending)) != len(pending):
                return f"message {i} repeats a call id"
    if pending:
        return f"the calls {pending} are never answered"
    return None
