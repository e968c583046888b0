"""What the routes answer, as JSON Schema: built from the same classes and Literal types
the answers are (`Mode`, `ConversationState`, `ActorStats`, ...), one function per
answer, each taking the document's `Components`."""

from __future__ import annotations

from typing import Any

import attrs

from actors.actor import ActorStats
from actors.model.backends.template_shapes import Shape
from actors.model.usage import GROUPINGS
from actors.notices import EndedBy
from actors.policy.rules import Offer
from actors.record.items import ConversationState, EndReason, GoalState, ItemKind, PlanState, TodoStatus, ToolState
from actors.record.modes import Mode
from actors.scheduling.schedule import Schedule
from bmoe_daemon.openapi.schemas import Components, Schema, array, field_types, shape
from bmoe_daemon.routes.limits import limits as limits_table


def conversation_info(c: Components) -> Schema:
    """ConversationInfo.to_json (actors/record/items.py): the fields, with its tuples as arrays."""
    return shape(c, {
        "id": str, "title": str, "workspace": str | None, "mode": Mode, "route": str, "agent": str,
        "state": ConversationState, "created": float, "updated": float, "task": str | None,
        "todos": array(shape(c, {"content": str, "status": TodoStatus})),
        "end_reason": EndReason | None, "plan_mode": bool,
        "plan": {"anyOf": [shape(c, {"revision": int, "state": PlanState}), {"type": "null"}]},
        "goal": {"anyOf": [shape(c, {"text": str, "state": GoalState, "reason": str | None, "verify": bool}),
                           {"type": "null"}]},
        "instructions": list[str],
        "context": {"anyOf": [shape(c, {"used": int, "size": int}), {"type": "null"}]},
        "waiting_cards": {"type": "integer", "minimum": 0,
                          "description": "Its cards waiting for the person (a helper's too)."},
        "budget": budget(c),
        "tools": array(client_tool(c)), "workspace_tools": bool, "mcp_tools": bool,
    })


def client_tool(c: Components) -> Schema:
    """ClientTool.to_json (actors/record/client_tools.py)."""
    return shape(c, {"name": str, "description": str, "parameters": {"type": "object"}, "timeout_s": float})


def budget(c: Components) -> Schema:
    """A budget as the daemon writes it (actors/record/budget.py), or null for none."""
    return {"anyOf": [shape(c, {"tokens": int | None, "cost": float | None}), {"type": "null"}],
            "description": "What the answers may spend before a run ends `budget`: prompt and completion "
                           "tokens, and US dollars at the provider's prices; null: no limit."}


def _sums(c: Components) -> Schema:
    return shape(c, {"answers": int, "prompt_tokens": int, "completion_tokens": int, "cached_tokens": int,
                     "tokens": int, "cost": float | None, "unpriced_answers": int})


def usage(c: Components) -> Schema:
    """GET /api/usage (actors/model/usage.py's report, with each group's label)."""
    sums = _sums(c)
    group = shape(c, {"key": str | None, "label": str | None, "local": sums, "provider": sums})
    return shape(c, {"by": {"enum": list(GROUPINGS)}, "since": float | None, "local": sums, "provider": sums,
                     "groups": array(group)})


def item(c: Components) -> Schema:
    """Item.to_json: id, kind and created always; the rest only where set."""
    fields: dict[str, Any] = {
        "id": str, "kind": ItemKind, "created": float, "text": str, "reasoning": str, "streaming": bool,
        "images": list[str], "tool": str, "title": str, "args": dict[str, Any], "raw_args": str, "state": ToolState,
        "bytes": int, "result": str, "diff": str, "file": str, "call_id": str, "mcp": str, "mcp_host": str,
        # a waiting card's always-allow rules, narrowest first (`rule`: the narrowest's), the rule a call ran by
        "rule": str, "rules": list[Offer], "allowed_by": str,
        # a notice the model reads (its `text` written for it), and the person's words for
        # such a notice or for a card's `result` that is the model's: a UI shows these
        "for_model": bool, "person_text": str,
        # a card that did not run: who or what ended it (`person`/`rule` said no, `stop` is
        # the person's stop of the run, `daemon` and `cut` mean it was not run)
        "ended_by": EndedBy,
    }
    return shape(c, fields, optional=[n for n in fields if n not in ("id", "kind", "created")])


def conversation(c: Components) -> Schema:
    """A conversation with its items; a read or a creation says too how many event
    streams answer its tools' calls (`tool_clients`)."""
    info = conversation_info(c)
    clients = {"type": "integer", "minimum": 0, "description": "Event streams open that answer its tools' calls."}
    return {**info, "properties": {**info["properties"], "items": array(item(c)), "tool_clients": clients},
            "required": [*info["required"], "items"]}


def _match_fields() -> dict[str, Any]:
    """Where words matched (fulltext.py's Hit and Snippet): the item, its kind, the snippet and its marks."""
    return {
        "item": {"type": ["string", "null"], "description": "The item that matched; null: the title did."},
        "kind": {"enum": ["user", "assistant", "tool", "title"]},
        "snippet": str,
        "marks": {"type": "array", "description": "Each match's [start, end) in `snippet`, in characters.",
                  "items": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2,
                            "maxItems": 2}},
    }


def listed_conversation(c: Components) -> Schema:
    """A row of GET /api/conversations: the conversation's info; with `q`, `found` where its
    words matched (fulltext.py's Snippet.to_json), absent where only its title holds `q`."""
    info = conversation_info(c)
    found = {**shape(c, _match_fields()), "description": "Where the conversation's words matched `q`."}
    return {**info, "properties": {**info["properties"], "found": found}}


def search(c: Components) -> Schema:
    """GET /api/search: the matches (bmoe_daemon/fulltext.py's Hit.to_json), best first."""
    hit = shape(c, {"conversation": str, "title": str, **_match_fields(), "updated": float, "workspace": str | None})
    return shape(c, {"results": array(hit), "next_offset": int | None, "indexing": bool})


def deleted(c: Components) -> Schema:
    return shape(c, {"deleted": str})


def provider(c: Components) -> Schema:
    model = {"anyOf": [{"type": "string"}, shape(c, {"id": str, "context_length": int})]}
    prices = shape(c, {"input": float, "output": float, "cached": float | None})
    return shape(c, {"id": str, "name": str, "base_url": str, "models": array(model), "has_key": bool,
                     "prices": prices}, optional=("prices",))


def mcp_server(c: Components) -> Schema:
    """One MCP server of GET /api/agent: a program (`command`) or a remote server (`url`,
    query values hidden, and its headers' names with the secrets they name, never a value);
    `entry`: what an edit starts from (its variables' and headers' names, never a value)."""
    state = {"enum": ["running", "stopped", "reconnecting", "failed", "off"]}
    header = shape(c, {"name": str, "secrets": list[str]})
    entry = {"type": "object", "properties": {
        "command": {"type": "string"}, "args": {"type": "array", "items": {"type": "string"}},
        "env": array(header), "cwd": {"type": "string"}, "url": {"type": "string"}, "type": {"const": "sse"},
        "headers": array(header), "timeout_ms": {"type": "integer"}}}
    return shape(c, {"name": str, "remote": bool, "transport": {"enum": ["stdio", "streamable-http", "sse"]},
                     "command": str, "url": str, "headers": array(header), "state": state,
                     "next_try_at": float, "error": str,
                     "tools": array(shape(c, {"name": str, "description": str})),
                     "prompts": array(shape(c, {"name": str, "title": str, "description": str,
                                                "arguments": array(shape(c, {"name": str, "required": bool}))},
                                            optional=("title", "description"))),
                     "resources": array(shape(c, {"uri": str, "name": str, "description": str, "mime_type": str},
                                              optional=("description", "mime_type"))),
                     "entry": entry},
                 optional=("command", "url", "headers", "next_try_at", "error", "transport", "prompts", "resources",
                           "entry"))


def secrets(c: Components) -> Schema:
    return shape(c, {"secrets": array(secret(c))})


def secret(c: Components) -> Schema:
    return shape(c, {"name": str, "stored": bool, "used_by": list[str]})


def mcp_server_deleted(c: Components) -> Schema:
    """DELETE /api/mcp/servers/<name>: the server, and the secrets deleted with it (by name)."""
    return shape(c, {"deleted": str, "secrets_deleted": list[str]})


def probe(c: Components) -> Schema:
    return shape(c, {"ok": bool, "models": list[str], "failure": str | None, "message": str, "status": int | None})


def skill(c: Components) -> Schema:
    return shape(c, {"name": str, "title": str, "description": str, "source": str, "enabled": bool, "body": str})


def skill_reading(c: Components) -> Schema:
    return shape(c, {"name": str, "title": str, "description": str, "source": str, "enabled": bool, "body": str,
                     "allowed_tools": list[str] | None, "file": str})


def task(c: Components) -> Schema:
    last = shape(c, {"at": float, "conversation": str | None, "outcome": str, "end_reason": EndReason | None})
    return shape(c, {
        "id": str, "title": str, "prompt": str, "workspace": str | None, "mode": Mode, "route": str,
        "schedule": c.ref(Schedule, answer=True), "enabled": bool, "created": float,
        "last_run": {"anyOf": [last, {"type": "null"}]}, "next_run": float | None, "running": bool,
        "budget": budget(c),
    })


def actor(c: Components) -> Schema:
    hints = field_types(ActorStats)
    stats = shape(c, {f.name: (Any if f.name == "children" else hints[f.name]) for f in attrs.fields(ActorStats)})
    stats["properties"]["children"] = array({"$ref": "#/components/schemas/Actor"})
    c.schemas["Actor"] = stats
    return {"$ref": "#/components/schemas/Actor"}


def chat_answer(c: Components) -> Schema:
    message = {"type": "object", "required": ["role", "content"], "properties": {
        "role": {"const": "assistant"}, "content": {"type": ["string", "null"]},
        "reasoning_content": {"type": "string"}, "tool_calls": {"type": "array"},
    }}
    choice = {"type": "object", "required": ["index", "message", "finish_reason"],
              "properties": {"index": {"type": "integer"}, "message": message,
                             "finish_reason": {"type": ["string", "null"]}}}
    usage = shape(c, {"prompt_tokens": int, "completion_tokens": int, "total_tokens": int})
    return shape(c, {"id": str, "object": {"const": "chat.completion"}, "created": int, "model": str,
                     "choices": array(choice), "usage": usage})


def loaded(c: Components, *, path: bool = True) -> Schema:
    """routes/models.py's `_loaded`: the model, its file and its context; for a local
    model, its chat template: the tool-call format found in it, whether it is the
    file's or the person's (`chat_template`, their text), and the shapes histories
    needed to render in it (actors/model/backends/template_shapes.py); whether its runs
    are led (`led`) and the daemon's --leading (`leading`)."""
    shapes = {"type": "array", "items": {"type": "string", "enum": [f.name for f in attrs.fields(Shape)]}}
    template = ("tool_format", "template_from", "template_shapes", "chat_template")
    return shape(c, {"model": str, "path": str | None, "n_ctx": int, "tool_format": str,
                     "template_from": {"type": "string", "enum": ["file", "person"]}, "template_shapes": shapes,
                     "chat_template": str | None, "led": bool,
                     "leading": {"type": "string", "enum": ["auto", "off"]}},
                 optional=(*template, *(() if path else ("path",))))


def limits(c: Components) -> Schema:
    """routes/limits.py's table: each field's bounds, as the numbers they are."""
    return shape(c, {key: shape(c, {name: type(value) for name, value in bounds.items()})
                     for key, bounds in limits_table().items()})


def _changed_file(c: Components) -> Schema:
    return shape(c, {"path": str, "status": {"enum": ["added", "modified", "deleted"]}, "added": int, "removed": int,
                     "binary": bool, "changed_since": bool})


def changes(c: Components) -> Schema:
    """GET .../changes: each entry (a message's runs, or a rewind) that changed files; with
    `item`, that one's unified diff (with `path`, one file's)."""
    entry = shape(c, {"item": str, "kind": {"enum": ["run", "rewind"]}, "of": str | None, "at": str,
                      "ended": str | None, "files": array(_changed_file(c)), "not_restorable": list[str]})
    listing = shape(c, {"conversation": str, "changes": array(entry)})
    diff = shape(c, {"item": str, "path": str | None, "diff": str, "truncated": bool})
    return {"anyOf": [listing, diff]}


def rewind(c: Components) -> Schema:
    files = shape(c, {"rewind": str | None, "restored": list[str], "removed": list[str],
                      "not_restorable": list[str]})
    return shape(c, {"item": str, "files": {"anyOf": [files, {"type": "null"}]},
                     "conversation": conversation_info(c)})
