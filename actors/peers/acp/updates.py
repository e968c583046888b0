"""What an ACP agent sends, read into item fields, without I/O.

The Agent Client Protocol (agentclientprotocol.com, protocol version 1) reports a
prompt turn as `session/update` notifications. These functions turn one update's
payload into what the conversation shows: the text of a message chunk, the fields of a
tool card (`tool` the protocol's kind, `title`, `state`, `result` its text, `diff` a
unified diff from a diff content), a plan as a notice's text, and the option to pick
for a permission. Nothing here raises on what an agent sends: a field of the wrong
type is left out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

from actors.record.items import ToolState
from actors.tools.diffs import bounded_unified_diff
from actors.tools.registry import STORED_RESULT_CAP_BYTES, cap_text

PROTOCOL_VERSION = 1
TITLE_CHARS = 120
# What an agent sends is kept on a card, saved with the conversation and sent to every
# client: past these, a field is left out (or cut) rather than stored whole.
MAX_ARGS_BYTES = 64 * 1024  # a call's rawInput, as JSON
MAX_DIFF_CHARS = STORED_RESULT_CAP_BYTES  # a diff the agent wrote itself
MAX_PLAN_ENTRIES = 200
PLAN_ENTRY_CHARS = 500
# The protocol's tool kinds; anything else reads as `other`.
TOOL_KINDS = ("read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other")
# A tool call's status -> the card's state.
STATES: dict[str, ToolState] = {"pending": "running", "in_progress": "running", "completed": "done", "failed": "error"}
PLAN_MARKS = {"completed": "[x]", "in_progress": "[~]", "pending": "[ ]"}
ALLOW_KINDS = ("allow_once", "allow_always")
REJECT_KINDS = ("reject_once", "reject_always")


class ToolFields(TypedDict, total=False):
    """The fields of a tool card (actors/record/items.py's Item) that an update sets."""

    tool: str
    title: str
    state: ToolState
    args: dict[str, Any]  # the agent's rawInput, a JSON object as it sent it
    result: str
    diff: str
    file: str


def initialize_params() -> dict[str, object]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": False},
        "clientInfo": {"name": "bmoe-daemon", "title": "bmoe-daemon", "version": "0.1.0"},
    }


def can_load_session(result: object) -> bool:
    """Whether an initialize answer advertises `loadSession`."""
    if not isinstance(result, dict):
        return False
    caps = result.get("agentCapabilities")
    return isinstance(caps, dict) and caps.get("loadSession") is True


def chunk_text(content: object) -> str:
    """The text of a message or thought chunk's content block ("" for other kinds)."""
    if not isinstance(content, dict):
        return ""
    text, uri = content.get("text"), content.get("uri")
    if content.get("type") == "text" and isinstance(text, str):
        return text
    if content.get("type") == "resource_link" and isinstance(uri, str):
        return uri
    return ""


def _relative(path: str, workspace: Path | None) -> str | None:
    """A workspace-relative path for an absolute one inside it, else None."""
    if workspace is None or not path:
        return None
    root = os.path.realpath(workspace)
    full = os.path.normpath(os.path.join(root, path))
    if full == root or not full.startswith(root.rstrip(os.sep) + os.sep):
        return None
    return os.path.relpath(full, root).replace(os.sep, "/")


def _content_text(content: list[object]) -> str:
    parts: list[str] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "content":
            text = chunk_text(part.get("content"))
            if text:
                parts.append(text)
        elif kind == "terminal":
            parts.append("[the agent's terminal output is not shown here]")
    return "\n".join(parts)


def _diff(content: list[object], workspace: Path | None) -> tuple[str | None, str | None]:
    """The unified diff of the diff contents (and the file of the first), or None."""
    diffs: list[str] = []
    file: str | None = None
    for part in content:
        if not isinstance(part, dict) or part.get("type") != "diff":
            continue
        path, new = part.get("path"), part.get("newText")
        if not isinstance(path, str) or not isinstance(new, str):
            continue
        old = part.get("oldText")
        rel = _relative(path, workspace)
        # Bounded: difflib on two large texts that repeat lines takes minutes; such a
        # change is shown without its diff.
        diff = bounded_unified_diff(old if isinstance(old, str) else "", new, rel or os.path.basename(path) or "file")
        if diff is not None:
            diffs.append(diff)
        if file is None:
            file = rel
    joined = "".join(diffs)
    return (joined if joined and len(joined) <= MAX_DIFF_CHARS else None), file


def _json_size(value: object) -> int:
    try:
        return len(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        return MAX_ARGS_BYTES + 1


def _raw_output_text(raw: object) -> str:
    if isinstance(raw, str):
        return raw
    output = raw.get("output") if isinstance(raw, dict) else None
    if isinstance(output, str):
        return output
    if raw is None:
        return ""
    try:
        return json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError):
        return ""


def tool_fields(update: Mapping[str, object], workspace: Path | None, *, first: bool) -> ToolFields:
    """The card fields a `tool_call`, `tool_call_update` (or a permission's `toolCall`)
    sets. `first`: the card is new, so absent fields get their defaults."""
    out: ToolFields = {}
    kind = update.get("kind")
    if isinstance(kind, str):
        out["tool"] = kind if kind in TOOL_KINDS else "other"
    elif first:
        out["tool"] = "other"
    title = update.get("title")
    if isinstance(title, str) and title.strip():
        out["title"] = " ".join(title.split())[:TITLE_CHARS]
    elif first:
        out["title"] = f"The agent's {out['tool']} tool"
    status = update.get("status")
    if isinstance(status, str) and status in STATES:
        out["state"] = STATES[status]
    elif first:
        out["state"] = "running"
    raw_input = update.get("rawInput")
    if isinstance(raw_input, dict):
        out["args"] = raw_input if _json_size(raw_input) <= MAX_ARGS_BYTES else {
            "_": f"[the agent's input is larger than {MAX_ARGS_BYTES // 1024} KiB and is not kept]"
        }
    elif first:
        out["args"] = {}
    content = update.get("content")
    if isinstance(content, list):
        text = _content_text(content)
        if text:
            out["result"] = cap_text(text, STORED_RESULT_CAP_BYTES)
        diff, file = _diff(content, workspace)
        if diff:
            out["diff"] = diff
        if file:
            out["file"] = file
    if "diff" not in out and isinstance(raw_input, dict) and isinstance(raw_input.get("diff"), str):
        # Some agents (OpenCode) send the edit's unified diff in the permission's input.
        if raw_input["diff"].strip() and len(raw_input["diff"]) <= MAX_DIFF_CHARS:
            out["diff"] = raw_input["diff"]
    if "result" not in out and "rawOutput" in update:
        text = _raw_output_text(update.get("rawOutput"))
        if text.strip():
            out["result"] = cap_text(text, STORED_RESULT_CAP_BYTES)
    if "file" not in out:
        locations = update.get("locations")
        if isinstance(locations, list):
            for loc in locations:
                if isinstance(loc, dict) and isinstance(loc.get("path"), str):
                    rel = _relative(loc["path"], workspace)
                    if rel:
                        out["file"] = rel
                        break
    return out


def plan_text(entries: object) -> str | None:
    """A plan as a notice's text, one line an entry, or None when it has none."""
    if not isinstance(entries, list):
        return None
    lines = ["Plan:"]
    for entry in entries[:MAX_PLAN_ENTRIES]:
        if isinstance(entry, dict) and isinstance(entry.get("content"), str):
            mark = PLAN_MARKS.get(str(entry.get("status")), "[ ]")
            lines.append(f"{mark} {' '.join(entry['content'][:PLAN_ENTRY_CHARS].split())}")
    if len(entries) > MAX_PLAN_ENTRIES:
        lines.append(f"[... {len(entries) - MAX_PLAN_ENTRIES} more entries not shown]")
    return "\n".join(lines) if len(lines) > 1 else None


def pick_option(options: object, allow: bool) -> str | None:
    """The optionId to answer a permission with: an allow option (once first) or a
    reject option (once first); None when the agent offered none of that kind."""
    if not isinstance(options, list):
        return None
    for kind in ALLOW_KINDS if allow else REJECT_KINDS:
        for opt in options:
            option_id = opt.get("optionId") if isinstance(opt, dict) and opt.get("kind") == kind else None
            if isinstance(option_id, str):
                return option_id
    return None


def selected(option_id: str | None) -> dict[str, dict[str, str]]:
    """A `session/request_permission` answer: the option, or `cancelled` without one."""
    if option_id is None:
        return {"outcome": {"outcome": "cancelled"}}
    return {"outcome": {"outcome": "selected", "optionId": option_id}}


CANCELLED = {"outcome": {"outcome": "cancelled"}}


def text_slice(text: str, line: object, limit: object) -> str:
    """`fs/read_text_file`'s `line` (1-based) and `limit` (lines) applied to a text."""
    if line is None and limit is None:
        return text
    lines = text.splitlines(keepends=True)
    start = line - 1 if isinstance(line, int) and not isinstance(line, bool) and line > 0 else 0
    end = start + limit if isinstance(limit, int) and not isinstance(limit, bool) and limit >= 0 else None
    return "".join(lines[start:end])
