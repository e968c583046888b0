"""Compaction: going on when a conversation outgrows the model's context. Pure parts.

Before a round whose prompt would pass TRIGGER of the context, the items before the
current message (or, when none is left, the earlier rounds of the current message's
run) are summarised by one tool-free turn into five sections (Goal, Done, Files, Open
work, Next). They stay in the record, marked `compacted` (the person still
sees them, folded); a `notice` carrying the summary takes their place for the model,
with the todo list, the plan and the files edited last as they were then. A summary
that is empty, lacks a section, or is no shorter than what it replaces is not used: the
items are dropped for the model instead (the notice says so). The run never ends with
"start a new conversation" while anything but the current message and its last round
could go.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from actors.record.items import Item, Todo

TRIGGER = 0.85  # of the context: compact before a round whose prompt would pass it
CHARS_PER_TOKEN = 4  # an estimate where no tokenizer is at hand
SUMMARY_MAX_TOKENS = 700
TRANSCRIPT_CHARS = 48_000  # what the summary turn reads of the items, at most
ITEM_CHARS = 2_000  # of one item
FILES_KEPT = 5
FILE_CHARS = 5_000 * CHARS_PER_TOKEN
SECTIONS = ("Goal", "Done", "Files", "Open work", "Next")

SUMMARY_PROMPT = (
    "You summarise a coding agent's conversation so it can go on without the earlier messages. Answer with "
    "exactly these five sections, each a heading then a few short lines:\n"
    + "\n".join(f"## {s}" for s in SECTIONS)
    + "\nKeep names of files, functions and commands exact. Leave out what no longer matters."
)
DROPPED = "[The earlier part of this conversation was dropped to fit the model's context; no summary could be made.]"


def estimate_tokens(messages: Sequence[dict[str, Any]], tools: Sequence[Any] = ()) -> int:
    """A rough count (characters / CHARS_PER_TOKEN) for a provider or a test backend."""
    size = len(json.dumps(list(messages), ensure_ascii=False)) + sum(len(json.dumps(getattr(t, "parameters", {})))
                                                                     + len(getattr(t, "description", ""))
                                                                     for t in tools)
    return size // CHARS_PER_TOKEN + 1


def cut_point(items: Sequence[Item]) -> int | None:
    """Where the kept part starts: the current message (the last `user` item). None when
    nothing before it is left to summarise."""
    last_user = next((i for i in range(len(items) - 1, -1, -1) if items[i].kind == "user"), None)
    if last_user is None:
        return None
    if not any(not i.compacted and i.kind in ("user", "assistant", "tool") for i in items[:last_user]):
        return None
    return last_user


def counted_since(items: Sequence[Item]) -> int | None:
    """A provider's prompt length now: what its last answer's `usage` counted (its
    prompt and its answer), and an estimate of the items after it. None when no answer
    was counted, or a compaction or shortening since has changed what is sent."""
    last = next((n for n in range(len(items) - 1, -1, -1)
                 if items[n].kind == "assistant" and items[n].usage), None)
    if last is None:
        return None
    usage = items[last].usage or {}
    chars = 0
    for item in items[last + 1 :]:
        if item.compaction is not None or item.compacted or item.shortened:
            return None
        chars += len(item.text or "") + len(item.result or "")
        chars += sum(len(c.arguments) for c in item.tool_calls or ())
    return usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0) + chars // CHARS_PER_TOKEN + 1


def summary_tokens(context: int) -> int:
    """The summary turn's answer at most: SUMMARY_MAX_TOKENS, less in a small context
    (an eighth of it), where a longer summary would take the room it is made to free."""
    return max(64, min(SUMMARY_MAX_TOKENS, context // 8))


def cut_range(items: Sequence[Item]) -> tuple[int, int] | None:
    """The items to summarise, as `items[start:end]`: those before the current message
    (the last `user` item); when none of those is left, the earlier rounds of the
    current message's own run, between the message and its last round (which is kept,
    so the model sees what it just did), so a long task goes on too. None when
    neither has anything left to summarise."""
    cut = cut_point(items)
    if cut is not None:
        return 0, cut
    last_user = next((i for i in range(len(items) - 1, -1, -1) if items[i].kind == "user"), None)
    if last_user is None:
        return None
    last_round = next((i for i in range(len(items) - 1, last_user, -1) if items[i].kind == "assistant"), None)
    if last_round is None:
        return None
    if not any(not i.compacted and i.kind in ("assistant", "tool") for i in items[last_user + 1 : last_round]):
        return None
    return last_user + 1, last_round


def transcript_text(items: Sequence[Item], limit: int = TRANSCRIPT_CHARS) -> str:
    """The items the summary turn reads, in plain lines, newest kept when too long."""
    lines: list[str] = []
    for item in items:
        if item.compacted and not item.compaction:
            continue  # in an earlier summary, which is read below
        if item.compaction:
            lines.append(f"[An earlier summary]\n{item.compaction.get('summary', '')}")
        elif item.kind == "user":
            lines.append(f"Person: {(item.text or '')[:ITEM_CHARS]}")
        elif item.kind == "assistant" and item.text:
            lines.append(f"Agent: {item.text[:ITEM_CHARS]}")
        elif item.kind == "tool":
            lines.append(f"Tool {item.title or item.tool} ({item.state}): {(item.result or '')[:ITEM_CHARS]}")
    text = "\n".join(lines)
    return text[-limit:]


_HEADING = re.compile(r"^#{1,3}\s*(.+?)\s*:?\s*$", re.MULTILINE)


def parse_summary(text: str) -> dict[str, str] | None:
    """The five sections of a summary, or None when one is missing or empty."""
    found: dict[str, str] = {}
    marks = [(m.start(), m.end(), m.group(1).strip().lower()) for m in _HEADING.finditer(text)]
    for n, (_, end, name) in enumerate(marks):
        body_end = marks[n + 1][0] if n + 1 < len(marks) else len(text)
        for section in SECTIONS:
            if name == section.lower():
                found[section] = text[end:body_end].strip()
    if any(not found.get(s) for s in SECTIONS):
        return None
    return found


def edited_files(items: Sequence[Item]) -> list[str]:
    """The files changed last (newest first), at most FILES_KEPT."""
    out: list[str] = []
    for item in reversed(items):
        if item.kind == "tool" and item.state == "done" and item.diff is not None and item.file:
            if item.file not in out:
                out.append(item.file)
        if len(out) >= FILES_KEPT:
            break
    return out


def model_text(compaction: dict[str, Any]) -> str:
    """What the model reads in place of the compacted items."""
    parts = [compaction.get("summary") or DROPPED]
    todos = compaction.get("todos") or []
    if todos:
        parts.append("The todo list:\n" + "\n".join(f"- [{t['status']}] {t['content']}" for t in todos))
    if compaction.get("plan"):
        parts.append(f"The plan:\n{compaction['plan']}")
    for path, text in (compaction.get("files") or {}).items():
        parts.append(f"{path} as it is now:\n{text}")
    if compaction.get("memories"):
        parts.append(compaction["memories"])
    return "[A summary of the conversation so far]\n" + "\n\n".join(parts)


def record(
    *, summary: str | None, tokens_before: int, items_summarised: int, todos: Sequence[Todo],
    plan: str | None, files: dict[str, str], memories: str | None = None,
) -> dict[str, Any]:
    """`memories`: the block of the workspace's memories that match the goal and the
    files (actors/runs/agent/compaction_turn.py), framed as data."""
    return {
        "summary": summary, "tokens_before": tokens_before, "tokens_after": 0,
        "items_summarised": items_summarised, "todos": [t.to_json() for t in todos], "plan": plan or None,
        "files": files, "memories": memories,
    }
