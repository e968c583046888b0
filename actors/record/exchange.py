"""A conversation as a file a person keeps or moves (pure: no I/O): the JSON document
GET /api/conversations/<id>/export gives and POST /api/conversations/import takes, and a
Markdown rendering for reading.

The document is `{"format": FORMAT, "version": VERSION, "exported": time, "conversation":
{title, mode, created, updated, end_reason, todos, goal}, "items": [Item.to_json ...]}`. It
holds what the conversation says, and nothing of this computer's: no id (an import mints
new ones, so it never overwrites), no workspace, route, agent or session, no instruction
files, no task. The record holds no secret of the daemon's (a provider's key lives in
the providers file, never in a conversation); what the conversation itself says (a
command's output the person was shown) is the conversation's, and goes with it.

`read_document` checks a document strictly: every field of a known type, every item of
a known kind with its fields of theirs, ids unique; anything else is BadDocument with
what is wrong, and nothing is made of it.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import attrs

from actors.ids import new_id, now
from actors.record.items import (
    END_REASONS,
    FINAL_TOOL_STATES,
    ITEM_FIELDS,
    ConversationInfo,
    ConversationRecord,
    Goal,
    Item,
    Todo,
)
from actors.record.modes import MODES
from actors.record.transcript import restored

FORMAT = "bmoe-conversation"
VERSION = 1
MAX_ITEMS = 20_000
MAX_TITLE_CHARS = 500
MAX_TODOS = 200
MARKDOWN_RESULT_CHARS = 20_000  # of a tool's result or diff in the Markdown (the JSON keeps it whole)

_STR_FIELDS = frozenset({"text", "reasoning", "tool", "title", "raw_args", "result", "diff", "file", "call_id",
                         "mcp", "mcp_host", "rule", "allowed_by", "state", "level", "end_reason", "person_text",
                         "ended_by"})
_BOOL_FIELDS = frozenset({"streaming", "shortened", "for_model", "compacted", "not_answer", "checking"})
_DICT_FIELDS = frozenset({"args", "compaction", "task", "usage"})
assert _STR_FIELDS | _BOOL_FIELDS | _DICT_FIELDS | {"bytes", "rules", "images", "tool_calls"} == set(ITEM_FIELDS)
_HEAD_FIELDS = frozenset({"title", "mode", "created", "updated", "end_reason", "todos", "goal"})


class BadDocument(ValueError):
    """A file that is not a conversation this daemon can import; the text says what is wrong."""


def document(record: ConversationRecord, exported: float | None = None) -> dict[str, Any]:
    """The record as the export's JSON document."""
    info = record.info
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported": now() if exported is None else exported,
        "conversation": {
            "title": info.title, "mode": info.mode, "created": info.created, "updated": info.updated,
            "end_reason": info.end_reason, "todos": [t.to_json() for t in info.todos],
            "goal": info.goal.to_json() if info.goal is not None else None,
        },
        "items": [i.to_json() for i in record.items],
    }


def _check_item(n: int, raw: object) -> Item:
    where = f"item {n + 1}"
    if not isinstance(raw, dict):
        raise BadDocument(f"{where} is not a JSON object.")
    unknown = set(raw) - {"id", "kind", "created", *ITEM_FIELDS}
    if unknown:
        raise BadDocument(f"{where} has fields this daemon does not know: {', '.join(sorted(unknown))}.")
    if not isinstance(raw.get("id"), str) or not raw["id"]:
        raise BadDocument(f"{where} has no id.")
    if "created" in raw and (isinstance(raw["created"], bool) or not isinstance(raw["created"], int | float)):
        raise BadDocument(f"{where}: `created` is a time in seconds.")
    for name, value in raw.items():
        if value is None or name in ("id", "kind", "created"):
            continue
        ok = ((name in _STR_FIELDS and isinstance(value, str))
              or (name in _BOOL_FIELDS and isinstance(value, bool))
              or (name in _DICT_FIELDS and isinstance(value, dict))
              or (name == "bytes" and isinstance(value, int) and not isinstance(value, bool) and value >= 0)
              or (name == "images" and isinstance(value, list)
                  and all(isinstance(v, str) and v.startswith("data:image/") and ";base64," in v for v in value))
              or (name == "rules" and isinstance(value, list) and all(isinstance(v, dict) for v in value))
              or (name == "tool_calls" and isinstance(value, list) and all(
                  isinstance(c, dict) and set(c) == {"id", "name", "arguments"}
                  and all(isinstance(v, str) for v in c.values()) for c in value)))
        if not ok:
            raise BadDocument(f"{where}: `{name}` is not of the type a conversation holds.")
    try:
        return Item.from_json(raw)
    except (KeyError, ValueError, TypeError) as exc:
        raise BadDocument(f"{where} cannot be read: {exc}.") from None


def _check_head(raw: object) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise BadDocument("`conversation` is not a JSON object.")
    unknown = set(raw) - _HEAD_FIELDS
    if unknown:
        raise BadDocument(f"`conversation` has fields this daemon does not know: {', '.join(sorted(unknown))}.")
    title = raw.get("title", "")
    if not isinstance(title, str) or len(title) > MAX_TITLE_CHARS:
        raise BadDocument(f"`conversation.title` is a text of at most {MAX_TITLE_CHARS} characters.")
    if raw.get("mode", "ask") not in MODES:
        raise BadDocument(f"`conversation.mode` is one of {', '.join(MODES)}.")
    for name in ("created", "updated"):
        value = raw.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise BadDocument(f"`conversation.{name}` is a time in seconds.")
    if raw.get("end_reason") is not None and raw["end_reason"] not in END_REASONS:
        raise BadDocument("`conversation.end_reason` is not one this daemon knows.")
    todos = raw.get("todos") or []
    if not isinstance(todos, list) or len(todos) > MAX_TODOS:
        raise BadDocument(f"`conversation.todos` is a list of at most {MAX_TODOS}.")
    try:
        checked_todos = [Todo.from_json(t) for t in todos]
        goal = Goal.from_json(raw["goal"]) if raw.get("goal") is not None else None
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise BadDocument(f"`conversation`'s todos or goal cannot be read: {exc}.") from None
    if any(not isinstance(t.content, str) for t in checked_todos):
        raise BadDocument("`conversation.todos` holds an entry that is not text.")
    return {**raw, "todos": checked_todos, "goal": goal}


def read_document(data: object, *, workspace: str | None, route: str = "local") -> ConversationRecord:
    """The conversation a document holds, with new ids (the conversation's and each
    item's), in `workspace` on `route` with the built-in agent. What was under way when it
    was exported ends as a restart ends it (a card that waited is denied, a call being
    run is an error; a question stays to answer). BadDocument for anything else."""
    if not isinstance(data, dict):
        raise BadDocument("The file is not a JSON object.")
    if data.get("format") != FORMAT:
        raise BadDocument(f"The file is not a conversation exported by bmoe (its `format` is not {FORMAT!r}).")
    if data.get("version") != VERSION:
        raise BadDocument(f"The file's version is {data.get('version')!r}; this daemon reads version {VERSION}.")
    unknown = set(data) - {"format", "version", "exported", "conversation", "items"}
    if unknown:
        raise BadDocument(f"The file has fields this daemon does not know: {', '.join(sorted(unknown))}.")
    exported = data.get("exported", 0)
    if isinstance(exported, bool) or not isinstance(exported, int | float):
        raise BadDocument("`exported` is a time in seconds.")
    head = _check_head(data.get("conversation"))
    raw_items = data.get("items")
    if not isinstance(raw_items, list) or len(raw_items) > MAX_ITEMS:
        raise BadDocument(f"`items` is a list of at most {MAX_ITEMS:,} items.")
    items = [_check_item(n, raw) for n, raw in enumerate(raw_items)]
    if len({i.id for i in items}) != len(items):
        raise BadDocument("Two items have the same id.")
    t = now()
    in_flight = any(i.streaming or (i.kind == "tool" and i.state not in FINAL_TOOL_STATES) or
                    (i.task is not None and i.task.get("state") in ("waiting", "running")) for i in items)
    info = ConversationInfo(
        id=new_id("c"), title=head.get("title", ""), workspace=workspace, mode=head.get("mode", "ask"),
        route=route, agent="builtin", state="running" if in_flight else "idle",
        created=float(head.get("created") or t), updated=float(head.get("updated") or t),
        todos=tuple(head["todos"]), goal=head["goal"],
        end_reason=head.get("end_reason") or ("stopped" if in_flight else None))
    fresh = tuple(attrs.evolve(i, id=new_id("i")) for i in items)
    return restored(ConversationRecord(info, fresh))


# ---- Markdown, for reading ----


def _fence(text: str, lang: str = "") -> str:
    """`text` in a fenced block whose fence no run of backticks in it closes."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}"


def _cut(text: str) -> str:
    if len(text) <= MARKDOWN_RESULT_CHARS:
        return text
    left = len(text) - MARKDOWN_RESULT_CHARS
    return text[:MARKDOWN_RESULT_CHARS] + f"\n… ({left:,} more characters in the JSON export)"


def _html_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _tool(item: Item) -> str:
    title = item.title or item.tool or "Tool"
    parts = [f"<details>\n<summary>{_html_text(title)} ({item.state or 'unknown'})</summary>\n"]
    if item.args:
        parts.append(_fence(json.dumps(item.args, indent=2, ensure_ascii=False), "json"))
    if item.diff:
        parts.append(_fence(_cut(item.diff), "diff"))
    if item.result:
        parts.append(_fence(_cut(item.result)))
    if item.task and item.task.get("items"):
        parts.append(f"The helper's own {len(item.task['items'])} items are in the JSON export.")
    parts.append("</details>")
    return "\n\n".join(parts)


def _when(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")


def markdown(record: ConversationRecord, exported: float | None = None) -> str:
    """The conversation for reading: each message and answer, each tool call folded
    (<details>) with its arguments, diff and result, notices as quotes."""
    info = record.info
    out = [f"# {_html_text(info.title) or 'Conversation'}",
           f"*Exported from bmoe on {_when(now() if exported is None else exported)}; started "
           f"{_when(info.created)}.*"]
    for item in record.items:
        if item.kind == "user":
            out.append("## You\n\n" + (item.text or ""))
            if item.images:
                out.append(f"*({len(item.images)} image{'s' if len(item.images) > 1 else ''}: in the JSON export)*")
        elif item.kind == "assistant":
            if item.text and not item.not_answer:
                out.append("## Answer\n\n" + item.text)
        elif item.kind == "tool":
            out.append(_tool(item))
        elif item.text:
            out.append("\n".join("> " + line for line in item.text.splitlines()))
    return "\n\n".join(out) + "\n"
