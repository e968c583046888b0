"""What a model is sent of a conversation: its items as chat messages. Pure functions.

The messages are always well-formed, whatever the items hold: an assistant message
that calls tools is followed by exactly one `tool` message for each of its calls, in
the order of the calls, before anything else. A call whose card ended without a final
state (a run cut in the middle of a round, a card lost in a crash) reads as not run.
OpenAI-compatible servers refuse a conversation with a call left unanswered, and a
chat template may refuse one with an answer to no call, so neither is ever sent.

When the context runs short, an item marked `shortened` is sent cut to its head with a
marker that says how to get the rest: a tool result, a call's arguments (each long
string value, the object still an object), a person's message. The record keeps it whole.

A user message that is not the person's (a compaction's summary, a notice for the
model) says so in its `origin` (actors/model/turns.py), for a local template that folds
it into the person's turn; a provider is sent the messages without it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from actors import notices
from actors.model.turns import ORIGIN
from actors.record.items import FINAL_TOOL_STATES, Item
from actors.runs.agent import compaction_cut
from actors.runs.agent.ledger import parse_arguments
from actors.runs.agent.prompt import user_content
from actors.tools.registry import RESULT_CAP_BYTES, cap_text

# A shortened result keeps this much for the model.
SHORT_RESULT_LINES = 8
SHORT_RESULT_BYTES = 1024
SHORTENED_TAIL = "\n[result shortened to fit the context; run the tool again for the rest]"
# A call whose arguments the context cannot hold: each string value keeps its head.
SHORT_ARGS_BYTES = 2048  # arguments shorter than this are never shortened
SHORT_ARG_CHARS = 256
ARG_TAIL = "\n[shortened to fit the context: {n} more characters not shown{how}]"
ON_DISK = "; what the call wrote is on disk, read_file shows it as it is now"
FILE_TOOLS = frozenset({"write_file", "edit_file"})
# A person's message the context cannot hold, even alone: its head is sent.
SHORT_MESSAGE_CHARS = 2048
MESSAGE_TAIL = ("\n[this message was shortened to fit the context: {n} more characters not shown; "
                "the person still sees it whole and can send the part that matters again]")

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


def _short_value(value: Any, how: str) -> Any:
    if isinstance(value, str) and len(value) > SHORT_ARG_CHARS:
        return value[:SHORT_ARG_CHARS] + ARG_TAIL.format(n=len(value) - SHORT_ARG_CHARS, how=how)
    if isinstance(value, list):
        return [_short_value(v, how) for v in value]
    if isinstance(value, dict):
        return {k: _short_value(v, how) for k, v in value.items()}
    return value


def short_args(name: str, raw: str) -> str:
    """A call's arguments once shortened: still a JSON object, each string value longer
    than SHORT_ARG_CHARS cut to its head with a marker that says how to get the rest
    (`{}` for arguments that are not an object, as `shown_args`)."""
    args, _ = parse_arguments(raw)
    if args is None or not raw.strip():
        return "{}"
    return json.dumps(_short_value(args, ON_DISK if name in FILE_TOOLS else ""), ensure_ascii=False)


def _long_args(item: Item) -> bool:
    return any(len(c.arguments) > SHORT_ARGS_BYTES and len(short_args(c.name, c.arguments)) < len(c.arguments)
               for c in item.tool_calls or ())


def short_message(text: str) -> str:
    return text[:SHORT_MESSAGE_CHARS] + MESSAGE_TAIL.format(n=len(text) - SHORT_MESSAGE_CHARS)


def oldest_long_item(items: Sequence[Item], *, messages_too: bool = False) -> Item | None:
    """What is shortened next when the context runs short: the oldest tool card with a
    long result or assistant item with long call arguments; with `messages_too`, when
    there is none, the oldest long message of the person's. Items a compaction
    summarised are not sent, so never chosen."""
    for item in items:
        if item.shortened or item.compacted:
            continue
        if item.kind == "tool" and item.result and is_long(item.result):
            return item
        if item.kind == "assistant" and _long_args(item):
            return item
    if messages_too:
        for item in items:
            if (item.kind == "user" and not (item.shortened or item.compacted)
                    and len(item.text or "") > len(short_message(item.text or ""))):
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
            out.append({"role": "user", "content": compaction_cut.model_text(item.compaction), ORIGIN: "summary"})
            continue
        if item.kind == "user":
            text = short_message(item.text or "") if item.shortened else item.text or ""
            out.append({"role": "user", "content": user_content(text, item.images)})
        elif item.kind == "assistant":
            calls = item.tool_calls or ()
            if not (item.text or calls):
                continue
            msg: Message = {"role": "assistant", "content": item.text or ""}
            if calls:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {
                        "name": c.name,
                        "arguments": short_args(c.name, c.arguments) if item.shortened else shown_args(c.arguments),
                    }}
                    for c in calls
                ]
            out.append(msg)
            answers = _answers(items, pos) if calls else {}
            for c in calls:
                card = answers.get(c.id)
                content = model_result(card) if card is not None else notices.NOT_RUN_IN_HISTORY
                out.append({"role": "tool", "tool_call_id": c.id, "content": content})
        elif item.kind == "notice" and item.for_model:
            out.append({"role": "user", "content": item.text or "", ORIGIN: "notice"})
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
