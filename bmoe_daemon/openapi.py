"""The OpenAPI 3.1 description of the daemon's HTTP API (`GET /openapi.json`).

Built, not written: the request bodies are the attrs classes the routes structure
(bmoe_daemon/bodies.py and the route modules' own), turned into JSON Schema 2020-12
by `schema_of`; the paths are the app's URL rules; the error answers are the
`{"error", "code"}` shape with the codes errors.py defines for each status; who may
call what comes from access.py. So a field added to a body, a route added to a
blueprint or a code added to errors.py shows here without anyone editing this file.
What a route answers is described beside it in OPERATIONS, from the same classes and
Literal types where the answer is one (`Mode`, `ConversationState`, `ModelFile`, ...).

A route registered without an entry in OPERATIONS is still listed (tests/test_openapi.py
fails until it is described). The document is built once per app and kept.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import attrs

from actors.actor import ActorStats
from actors.conversations.hub import Workspace
from actors.model.discovery.scan import ModelFile
from actors.policy.rules import Offer, Rule
from actors.record.items import (
    ConversationState,
    EndReason,
    GoalState,
    ItemKind,
    Mode,
    PlanState,
    TodoStatus,
    ToolState,
)
from actors.record.listing import MAX_PAGE, MAX_QUERY_CHARS
from actors.scheduling.schedule import Schedule
from bmoe_daemon import __version__, access, errors
from bmoe_daemon.bodies import (
    _PATCH_TYPES,
    Answer,
    Approval,
    EditMessage,
    NewConversation,
    NewRule,
    NewWorkspace,
    SendMessage,
)
from bmoe_daemon.models import ModelChoice
from bmoe_daemon.routes.limits import LIMITS
from bmoe_daemon.routes.openai import MAX_MESSAGES, MAX_TOOLS, ROLES
from bmoe_daemon.routes.providers import ProviderBody
from bmoe_daemon.routes.skills import SkillBody, SkillSwitch
from bmoe_daemon.routes.tasks import TaskBody

Schema = dict[str, Any]

OPENAPI_VERSION = "3.1.0"
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
ERROR_REF = "#/components/schemas/Error"
# The prefixes access.py's guard covers: the key, the Origin and the Host are checked there.
GUARDED = ("/api/", "/v1/")
# One Server-Sent Event, as OpenAPI before 3.2 has a stream's `schema` describe each
# event (Schemathesis reads it so): its fields, each text; `data` is JSON in text.
SSE_EVENT: dict[str, object] = {
    "type": "object",
    "properties": {"event": {"type": "string"}, "data": {"type": "string"}, "id": {"type": "string"},
                   "retry": {"type": ["string", "integer"]}},
}

_PRIMITIVES: dict[object, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
                                  type(None): "null"}


class Components:
    """The named schemas a document refers to: one per attrs class met on the way."""

    def __init__(self) -> None:
        self.schemas: dict[str, Schema] = {}

    def ref(self, cls: type, *, answer: bool = False) -> Schema:
        """A `$ref` to `cls`'s schema, added on first use. `answer`: the class as the
        daemon writes it (every field present), not as a client may send it."""
        name = cls.__name__ + ("Answer" if answer else "")
        if name not in self.schemas:
            self.schemas[name] = {}  # taken first, so a class that holds itself ends
            self.schemas[name] = attrs_schema(cls, self, answer=answer)
        return {"$ref": f"#/components/schemas/{name}"}


def _json_value(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def attrs_schema(cls: type, components: Components, *, answer: bool = False, closed: bool = False) -> Schema:
    """The JSON Schema of an attrs class: a property per field, required where the field
    has no default (for an `answer`, every field), the default where it is a plain
    value. Other properties are allowed unless `closed` (the bodies' converter ignores
    the keys it does not know)."""
    hints = _hints(cls)
    props: dict[str, Schema] = {}
    required: list[str] = []
    for field in attrs.fields(cls):
        prop = schema_of(hints[field.name], components, answer=answer)
        if field.default is attrs.NOTHING or answer:
            required.append(field.name)
        elif _json_value(field.default):
            prop = {**prop, "default": field.default}
        props[field.name] = prop
    out: Schema = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if closed:
        out["additionalProperties"] = False
    return out


def _hints(cls: type) -> dict[str, Any]:
    """The class's field types, resolved (its module writes them as strings)."""
    return get_type_hints(cls, vars(sys.modules[cls.__module__]))


def schema_of(kind: Any, components: Components, *, answer: bool = False) -> Schema:
    """JSON Schema 2020-12 for a type as the routes' converter reads it: str, int, float
    (which takes an integer too), bool, None, Any, Literal, list/tuple, dict, unions and
    attrs classes (by reference). Raises TypeError for a type it does not know, so a
    body field of a new kind cannot be described wrongly in silence."""
    if kind is Any:
        return {}
    if kind in _PRIMITIVES:
        return {"type": _PRIMITIVES[kind]}
    origin = get_origin(kind)
    args = get_args(kind)
    if origin is Literal:
        values = list(args)
        kinds = sorted({_PRIMITIVES[type(v)] for v in values})
        return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}
    if origin in (Union, types.UnionType):
        parts = [schema_of(a, components, answer=answer) for a in args]
        return _merge_union(parts)
    if origin in (list, tuple):
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return {"type": "array", "prefixItems": [schema_of(a, components, answer=answer) for a in args],
                    "minItems": len(args), "maxItems": len(args)}
        inner = args[0] if args else Any
        items = schema_of(inner, components, answer=answer)
        return {"type": "array", "items": items} if items else {"type": "array"}
    if origin is dict:
        value = schema_of(args[1], components, answer=answer) if len(args) == 2 else {}
        return {"type": "object", "additionalProperties": value} if value else {"type": "object"}
    if isinstance(kind, type) and attrs.has(kind):
        return components.ref(kind, answer=answer)
    raise TypeError(f"no JSON Schema for {kind!r}")


def _merge_union(parts: list[Schema]) -> Schema:
    """`X | None` and unions of plain types as one `type` list (enums merged, null
    added to them); anything else as anyOf."""
    plain = all(set(p) <= {"type", "enum"} and "type" in p for p in parts)
    if not plain:
        return {"anyOf": parts}
    kinds: list[str] = []
    for p in parts:
        for k in p["type"] if isinstance(p["type"], list) else [p["type"]]:
            if k not in kinds:
                kinds.append(k)
    enums = [p for p in parts if "enum" in p]
    if enums and len(enums) != len([p for p in parts if p["type"] != "null"]):
        return {"anyOf": parts}  # an enum beside an open type of the same kind
    out: Schema = {"type": kinds[0] if len(kinds) == 1 else kinds}
    if enums:
        out["enum"] = [v for p in enums for v in p["enum"]] + ([None] if "null" in kinds else [])
    return out


def shape(components: Components, fields: Mapping[str, Any], *, optional: Iterable[str] = ()) -> Schema:
    """An answer's object from field names and Python types (each through schema_of):
    every field present but those named `optional`; other keys allowed."""
    opt = set(optional)
    props = {name: (kind if isinstance(kind, dict) else schema_of(kind, components)) for name, kind in fields.items()}
    return {"type": "object", "properties": props, "required": [n for n in fields if n not in opt]}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": items}


# ---- the answers ----


def _conversation_info(c: Components) -> Schema:
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
    })


def _item(c: Components) -> Schema:
    """Item.to_json: id, kind and created always; the rest only where set."""
    fields: dict[str, Any] = {
        "id": str, "kind": ItemKind, "created": float, "text": str, "reasoning": str, "streaming": bool,
        "images": list[str], "tool": str, "title": str, "args": dict[str, Any], "raw_args": str, "state": ToolState,
        "bytes": int, "result": str, "diff": str, "file": str, "call_id": str,
        # a waiting card's always-allow rules, narrowest first (`rule`: the narrowest's), the rule a call ran by
        "rule": str, "rules": list[Offer], "allowed_by": str,
    }
    return shape(c, fields, optional=[n for n in fields if n not in ("id", "kind", "created")])


def _conversation(c: Components) -> Schema:
    info = _conversation_info(c)
    return {**info, "properties": {**info["properties"], "items": array(_item(c))},
            "required": [*info["required"], "items"]}


def _deleted(c: Components) -> Schema:
    return shape(c, {"deleted": str})


def _provider(c: Components) -> Schema:
    model = {"anyOf": [{"type": "string"}, shape(c, {"id": str, "context_length": int})]}
    return shape(c, {"id": str, "name": str, "base_url": str, "models": array(model), "has_key": bool})


def _skill(c: Components) -> Schema:
    return shape(c, {"name": str, "title": str, "description": str, "source": str, "enabled": bool, "body": str})


def _task(c: Components) -> Schema:
    last = shape(c, {"at": float, "conversation": str | None, "outcome": str})
    return shape(c, {
        "id": str, "title": str, "prompt": str, "workspace": str | None, "mode": Mode, "route": str,
        "schedule": c.ref(Schedule, answer=True), "enabled": bool, "created": float,
        "last_run": {"anyOf": [last, {"type": "null"}]}, "next_run": float | None, "running": bool,
    })


def _actor(c: Components) -> Schema:
    hints = _hints(ActorStats)
    stats = shape(c, {f.name: (Any if f.name == "children" else hints[f.name]) for f in attrs.fields(ActorStats)})
    stats["properties"]["children"] = array({"$ref": "#/components/schemas/Actor"})
    c.schemas["Actor"] = stats
    return {"$ref": "#/components/schemas/Actor"}


def _chat_request(c: Components) -> Schema:
    """POST /v1/chat/completions, as routes/openai.py reads it by hand (llama.cpp's shape)."""
    part = {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}}}
    message = {
        "type": "object", "required": ["role"],
        "properties": {
            "role": {"type": "string", "enum": list(ROLES)},
            "content": {"anyOf": [{"type": "string"}, {"type": "null"}, array(part)]},
            "tool_calls": {"type": ["array", "null"]},
            "tool_call_id": {},
        },
    }
    tool = {"type": "object", "required": ["function"], "properties": {
        "type": {"const": "function"},
        "function": {"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string", "minLength": 1}, "description": {},
            "parameters": {"type": ["object", "null"]},
        }},
    }}
    return {
        "type": "object", "required": ["messages"],
        "properties": {
            "messages": {"type": "array", "items": message, "minItems": 1, "maxItems": MAX_MESSAGES},
            "tools": {"type": ["array", "null"], "items": tool, "maxItems": MAX_TOOLS},
            "tool_choice": {"anyOf": [
                {"type": "null"}, {"type": "string", "enum": ["auto", "none", "required"]},
                {"type": "object", "required": ["function"], "properties": {"function": {"type": "object"}}},
            ]},
            "stream": {"type": ["boolean", "null"]},
            "stream_options": {"type": ["object", "null"]},
            "max_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": 1 << 20},
            "max_completion_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": 1 << 20},
            "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
            "parallel_tool_calls": {"type": ["boolean", "null"]},
        },
    }


def _chat_answer(c: Components) -> Schema:
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


# ---- the operations ----


@attrs.frozen
class Param:
    name: str
    schema: Schema
    description: str
    where: Literal["query", "header"] = "query"


@attrs.frozen
class Link:
    """An OpenAPI link from a success answer: the operation it leads to, and which of
    its parameters come from where (`$response.body#/id`, `$request.path.x`)."""

    to: tuple[str, str]  # (method, rule)
    parameters: Mapping[str, str]


Build = Callable[[Components], Schema]


@attrs.frozen
class Op:
    """One operation: what it does, what it takes and answers, and the errors it may
    give besides the ones every route of its kind gives (see `_errors`)."""

    summary: str
    answer: Build | None = None
    status: int = 200
    body: Any = None  # an attrs class, or a Build for a body read by hand
    body_required: bool = True
    query: tuple[Param, ...] = ()
    errors: tuple[int, ...] = ()
    links: Mapping[str, Link] = attrs.field(factory=dict)
    media: Mapping[str, Schema] | None = None  # answers that are not JSON: media type -> schema


def _patch_body(c: Components) -> Schema:
    """PATCH /api/conversations/<id>: the fields bodies._PATCH_TYPES takes, each optional."""
    return {"type": "object", "properties": {k: schema_of(t, c) for k, t in _PATCH_TYPES.items()}}


def _task_change(c: Components) -> Schema:
    """PUT /api/tasks/<id>: any of TaskBody's fields (the others are kept); no other."""
    full = attrs_schema(TaskBody, c, closed=True)
    full["properties"]["schedule"] = c.ref(Schedule)
    return {key: value for key, value in full.items() if key != "required"}


def _task_body(c: Components) -> Schema:
    full = attrs_schema(TaskBody, c)
    full["properties"]["schedule"] = c.ref(Schedule)
    return full


_CONV = "/api/conversations/<conversation_id>"
_WS = "/api/workspaces/<workspace_id>"
_FROM_ID = "$response.body#/id"


def _conversation_links() -> dict[str, Link]:
    ops = {"Read": ("GET", ""), "Change": ("PATCH", ""), "Message": ("POST", "/messages"),
           "Edit": ("POST", "/edit"), "Stop": ("POST", "/stop"), "Plan": ("GET", "/plan"),
           "Resume": ("POST", "/resume"), "Compact": ("POST", "/compact"), "Approve": ("POST", "/approval"),
           "Answer": ("POST", "/answer"), "File": ("GET", "/file"), "Delete": ("DELETE", "")}
    return {name: Link((method, _CONV + tail), {"conversation_id": _FROM_ID}) for name, (method, tail) in ops.items()}


OPERATIONS: dict[tuple[str, str], Op] = {
    ("GET", "/health"): Op(
        "Whether the daemon serves, its version and its model (no key needed).",
        lambda c: shape(c, {"status": {"const": "ok"}, "version": str, "model": str | None,
                            "device": {"type": ["object", "null"]}})),
    ("GET", "/openapi.json"): Op("This document.", lambda c: {"type": "object", "required": ["openapi", "paths"]}),
    ("GET", "/"): Op("The web UI's page.", media={"text/html": {"type": "string"}}, errors=(404,)),
    ("GET", "/static/<path:name>"): Op(
        "A file of the web UI.", errors=(404,),
        media={t: {"type": "string"} for t in ("text/javascript", "text/css", "text/html", "image/svg+xml",
                                                 "image/png")}),
    ("GET", "/v1/models"): Op(
        "The loaded model, in OpenAI's list shape (empty without one).",
        lambda c: shape(c, {"object": {"const": "list"}, "data": array(shape(c, {
            "id": str, "object": {"const": "model"}, "created": int, "owned_by": str}))})),
    ("POST", "/v1/chat/completions"): Op(
        "A chat completion from the loaded model, streamed as Server-Sent Events with `stream: true`.",
        _chat_answer, body=_chat_request, errors=(400, 409),
        media={"text/event-stream": SSE_EVENT}),
    ("GET", "/api/agent"): Op(
        "What conversations here may use: tools, commands, agents, MCP and language servers, helpers.",
        lambda c: shape(c, {"tools": bool, "commands": bool, "agents": array(shape(c, {
            "id": str, "name": str, "available": bool, "missing": list[str]})),
            "mcp": array({"type": "object"}), "lsp": array({"type": "object"}), "helpers": int})),
    ("GET", "/api/limits"): Op(
        "The limits the daemon enforces that a client may show or keep to, each by the field it bounds "
        "(`feedback` in characters, `compaction.at` a share of the context).",
        lambda c: _limits(c)),
    ("GET", "/api/events"): Op(
        "The event stream (Server-Sent Events); `Last-Event-ID` or `last_event_id` replays what came after.",
        errors=(400,), media={"text/event-stream": SSE_EVENT},
        query=(Param("last_event_id", {"type": "integer", "minimum": 0}, "Replay the events after this id."),
               Param("Last-Event-ID", {"type": "integer", "minimum": 0}, "Replay the events after this id.",
                     "header"))),
    ("WEBSOCKET", "/api/ws"): Op(
        "The event stream over a WebSocket (an upgrade request; a plain GET is refused).", status=101,
        errors=(400,), query=(Param("last_event_id", {"type": "integer", "minimum": 0},
                                    "Replay the events after this id."),)),
    ("GET", "/api/conversations"): Op(
        "The conversations, newest first; with `limit`, one page and the next page's cursor in X-Next-Before.",
        lambda c: array(_conversation_info(c)), errors=(400,),
        query=(Param("limit", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}, "The most rows to answer."),
               Param("before", {"type": "string"}, "The X-Next-Before of the page before."),
               Param("q", {"type": "string", "maxLength": MAX_QUERY_CHARS}, "A part of the title, any case."),
               Param("task", {"type": "string", "minLength": 1}, "Only the conversations of this task."),
               Param("state", {"enum": list(get_args(ConversationState))}, "Only the conversations in this state."))),
    ("POST", "/api/conversations"): Op(
        "Start a conversation.", _conversation, status=201, body=NewConversation, errors=(400, 403, 409, 507),
        links=_conversation_links()),
    ("GET", _CONV): Op("A conversation with its items.", _conversation),
    ("PATCH", _CONV): Op("Change a conversation's title, mode, route, workspace, agent, plan mode or goal.",
                         _conversation_info, body=_patch_body, errors=(409, 507)),
    ("DELETE", _CONV): Op("Delete a conversation (a run going on is stopped).", _deleted, errors=(409, 507)),
    ("POST", _CONV + "/messages"): Op(
        "Send a message: the run starts, its progress comes as events.",
        lambda c: shape(c, {"item": _item(c)}), status=202, body=SendMessage, errors=(409, 507)),
    ("POST", _CONV + "/edit"): Op(
        "Send an earlier message again, changed: what came after it goes.",
        lambda c: shape(c, {"item": _item(c)}), status=202, body=EditMessage, errors=(409, 507)),
    ("POST", _CONV + "/stop"): Op("Stop the run going on.", lambda c: shape(c, {"stopped": bool}), errors=(409,)),
    ("POST", _CONV + "/approval"): Op(
        "Answer an approval card (or a plan's). With approve_always, `rule` picks which of the card's offered "
        "`rules` is kept (else the narrowest, its `rule`); one it does not offer is a 400 and the card waits.",
        lambda c: shape(c, {"item": str, "decision": schema_of(_hints(Approval)["decision"], c)}),
        body=Approval, errors=(409, 507)),
    ("POST", _CONV + "/answer"): Op(
        "Answer the agent's question card.",
        lambda c: shape(c, {"item": str, "answer": schema_of(str | list[str], c)}), body=Answer, errors=(409, 507)),
    ("GET", _CONV + "/plan"): Op(
        "The conversation's plan: text, revision and state.",
        lambda c: shape(c, {"text": str, "revision": int, "state": PlanState, "plan_mode": bool})),
    ("POST", _CONV + "/resume"): Op("Go on with a run that was stopped, failed or ran out of rounds.",
                                    _conversation_info, status=202, errors=(400, 409, 507)),
    ("POST", _CONV + "/compact"): Op("Summarise the conversation before its last message.", _conversation_info,
                                     status=202, errors=(400, 409, 507)),
    ("GET", _CONV + "/file"): Op(
        "A workspace file, for the preview (served under a sandbox).", errors=(400,),
        query=(Param("path", {"type": "string", "minLength": 1}, "The file, relative to the workspace."),),
        media={"*/*": {}}),
    ("GET", "/api/workspaces"): Op("The workspaces.", lambda c: array(c.ref(Workspace, answer=True))),
    ("POST", "/api/workspaces"): Op(
        "Add a folder as a workspace.", lambda c: c.ref(Workspace, answer=True), status=201, body=NewWorkspace,
        errors=(507,), links={
            "Remove": Link(("DELETE", _WS), {"workspace_id": _FROM_ID}),
            "Rules": Link(("GET", _WS + "/rules"), {"workspace_id": _FROM_ID}),
            "AddRule": Link(("POST", _WS + "/rules"), {"workspace_id": _FROM_ID})}),
    ("DELETE", _WS): Op("Forget a workspace (its folder stays).", _deleted, errors=(409, 507)),
    ("GET", _WS + "/rules"): Op("A workspace's always-allow rules.", lambda c: array(c.ref(Rule, answer=True))),
    ("POST", _WS + "/rules"): Op(
        "Keep an always-allow rule.", lambda c: c.ref(Rule, answer=True), status=201, body=NewRule, errors=(507,),
        links={"Remove": Link(("DELETE", _WS + "/rules/<rule_id>"),
                              {"workspace_id": "$request.path.workspace_id", "rule_id": _FROM_ID})}),
    ("DELETE", _WS + "/rules/<rule_id>"): Op("Remove an always-allow rule.", _deleted, errors=(507,)),
    ("GET", "/api/debug/actors"): Op("The live actor tree.", _actor),
    ("GET", "/api/providers"): Op("The saved providers (never their keys).", lambda c: array(_provider(c))),
    ("POST", "/api/providers"): Op(
        "Save an OpenAI-compatible provider.", _provider, status=201, body=ProviderBody, errors=(507,),
        links={"Change": Link(("PUT", "/api/providers/<provider_id>"), {"provider_id": _FROM_ID}),
               "Forget": Link(("DELETE", "/api/providers/<provider_id>"), {"provider_id": _FROM_ID})}),
    ("PUT", "/api/providers/<provider_id>"): Op("Change a provider.", _provider, body=ProviderBody, errors=(507,)),
    ("DELETE", "/api/providers/<provider_id>"): Op("Forget a provider and its key.", _deleted, errors=(507,)),
    ("GET", "/api/connect"): Op(
        "The apps that can use this daemon's /v1, with their settings snippets.",
        lambda c: array(shape(c, {"id": str, "name": str, "how": str, "snippet": {}, "file": str | None,
                                  "writable": bool})),
        links={"Write": Link(("POST", "/api/connect/<client_id>"), {"client_id": "$response.body#/0/id"})}),
    ("GET", "/api/connect/<client_id>/preview"): Op(
        "What writing this app's settings would change in its file: a unified diff (values of lines that look "
        "like secrets hidden).",
        lambda c: shape(c, {"file": str, "exists": bool, "changed": bool, "diff": str}), errors=(400, 404, 409)),
    ("POST", "/api/connect/<client_id>"): Op(
        "Write this daemon into an app's settings file (the old one kept as a backup).",
        lambda c: shape(c, {"file": str, "backup": str | None}), errors=(400, 409)),
    ("GET", "/api/skills"): Op(
        "The skills: bundled, the person's and (with `workspace`) the workspace's.", lambda c: array(_skill(c)),
        query=(Param("workspace", {"type": "string"}, "A workspace's id."),), errors=(404,)),
    ("POST", "/api/skills"): Op(
        "Write a skill of the person's.", _skill, status=201, body=SkillBody, errors=(409, 507),
        links={"Write": Link(("PUT", "/api/skills/<name>"), {"name": "$response.body#/name"}),
               "Switch": Link(("PATCH", "/api/skills/<name>"), {"name": "$response.body#/name"}),
               "Delete": Link(("DELETE", "/api/skills/<name>"), {"name": "$response.body#/name"})}),
    ("PUT", "/api/skills/<name>"): Op("Write the person's version of a skill.", _skill, body=SkillBody,
                                      errors=(507,)),
    ("PATCH", "/api/skills/<name>"): Op(
        "Switch a skill on or off.", _skill, body=SkillSwitch, errors=(507,),
        query=(Param("workspace", {"type": "string"}, "A workspace's id: switch it there only."),)),
    ("DELETE", "/api/skills/<name>"): Op("Delete a skill of the person's.", _deleted, errors=(400, 507)),
    ("GET", "/api/tasks"): Op("The scheduled tasks.", lambda c: array(_task(c)), errors=(400,)),
    ("POST", "/api/tasks"): Op(
        "Create a task: a prompt run as a conversation on a schedule.", _task, status=201, body=_task_body,
        errors=(507,), links={"Change": Link(("PUT", "/api/tasks/<task_id>"), {"task_id": _FROM_ID}),
                              "Run": Link(("POST", "/api/tasks/<task_id>/run"), {"task_id": _FROM_ID}),
                              "Delete": Link(("DELETE", "/api/tasks/<task_id>"), {"task_id": _FROM_ID})}),
    ("PUT", "/api/tasks/<task_id>"): Op("Change a task's fields (the others are kept).", _task, body=_task_change,
                                        errors=(507,)),
    ("DELETE", "/api/tasks/<task_id>"): Op("Delete a task.", _deleted, errors=(400, 507)),
    ("POST", "/api/tasks/<task_id>/run"): Op("Run a task now.", _task, status=202, errors=(400, 409, 507)),
    ("GET", "/api/hooks"): Op(
        "The person's hooks with their last outcomes.",
        lambda c: shape(c, {"enabled": bool, "file": str | None, "error": str | None, "error_at": float | None,
                            "hooks": array({"type": "object"})}, optional=["enabled"])),
    ("GET", "/api/models"): Op(
        "The GGUF models on this computer, and the one loaded.",
        lambda c: shape(c, {"models": array(c.ref(ModelFile, answer=True)), "notices": list[str],
                            "loaded": {"anyOf": [_loaded(c), {"type": "null"}]}})),
    ("GET", "/api/model"): Op(
        "The model that serves, or null (its file's path to a client on this computer only).",
        lambda c: {"anyOf": [_loaded(c, path=False), {"type": "null"}]}),
    ("PUT", "/api/model"): Op(
        "Load another model between turns (kept for the next start).",
        lambda c: {"anyOf": [_loaded(c), {"type": "null"}]}, body=ModelChoice, errors=(409,)),
}


def _limits(c: Components) -> Schema:
    """routes/limits.py's LIMITS: each field's bounds, as the numbers they are."""
    return shape(c, {key: shape(c, {name: type(value) for name, value in bounds.items()})
                     for key, bounds in LIMITS.items()})


def _loaded(c: Components, *, path: bool = True) -> Schema:
    """routes/models.py's `_loaded`: the model, its file and its context."""
    return shape(c, {"model": str, "path": str | None, "n_ctx": int}, optional=() if path else ("path",))


def _error_codes() -> dict[int, list[str]]:
    """Each HTTP status errors.py answers, with its codes."""
    out: dict[int, list[str]] = {}
    pending: list[type[errors.ApiError]] = [errors.ApiError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        codes = out.setdefault(cls.status, [])
        if cls.code not in codes:
            codes.append(cls.code)
    return out


_STATUS_TEXT = {
    400: "The request is malformed: not JSON, a wrong type, an unknown value or a missing field.",
    401: "The daemon was started with a key and the request has none, or the wrong one.",
    403: "Refused: a page from another origin, a Host that is not this daemon's, or a client on the network "
         "asking for what is this computer's alone.",
    404: "There is no such id (or route).",
    405: "The route takes other methods (the Allow header names them).",
    409: "Busy (a run is going on), exists already, or no model is loaded.",
    413: "The body is larger than the daemon takes.",
    507: "The disk is full: nothing was saved.",
}


def _path(rule: str) -> str:
    return re.sub(r"<(?:[^:<>]+:)?([^<>]+)>", r"{\1}", rule)


def _path_params(rule: str) -> list[str]:
    return re.findall(r"<(?:[^:<>]+:)?([^<>]+)>", rule)


def _errors(method: str, rule: str, op: Op) -> set[int]:
    out = set(op.errors)
    if rule.startswith(GUARDED):
        out |= {401, 403}
    if _path_params(rule):
        out.add(404)
    if op.body is not None:
        out |= {400, 413}
    if access.agent_route_locality(method, rule)[0] is not access.Locality.OPEN:
        out.add(403)
    return out


def _operation(method: str, rule: str, op: Op, c: Components, ids: Mapping[tuple[str, str], str]) -> Schema:
    locality, what = access.agent_route_locality(method, rule)
    summary = op.summary
    if locality is access.Locality.LOCAL:
        summary += f" Local clients only ({what.lower()})."
    elif locality is access.Locality.CONVERSATION:
        summary += " Local clients only when the conversation has a workspace or a provider route."
    out: Schema = {"operationId": ids[(method, rule)], "summary": summary}
    params: list[Schema] = [
        {"name": p, "in": "path", "required": True, "schema": {"type": "string"}} for p in _path_params(rule)
    ]
    params += [{"name": p.name, "in": p.where, "required": False, "schema": p.schema, "description": p.description}
               for p in op.query]
    if params:
        out["parameters"] = params
    if op.body is not None:
        body = c.ref(op.body) if attrs.has(op.body) else op.body(c)
        out["requestBody"] = {"required": op.body_required, "content": {"application/json": {"schema": body}}}
    ok: Schema = {"description": "Done."}
    content: dict[str, Schema] = {}
    if op.answer is not None:
        content["application/json"] = {"schema": op.answer(c)}
    for media, schema in (op.media or {}).items():
        content[media] = {"schema": schema}
    if content:
        ok["content"] = content
    if op.links:
        ok["links"] = {name: {"operationId": ids[link.to], "parameters": dict(link.parameters)}
                       for name, link in op.links.items()}
    responses: dict[str, Schema] = {str(op.status): ok}
    codes = _error_codes()
    for status in sorted(_errors(method, rule, op)):
        schema = {"allOf": [{"$ref": ERROR_REF}, {"properties": {"code": {"enum": codes[status]}}}]}
        responses[str(status)] = {"description": _STATUS_TEXT[status],
                                  "content": {"application/json": {"schema": schema}}}
    out["responses"] = responses
    if rule.startswith(GUARDED):
        out["security"] = [{"bearer": []}, {}]
    return out


def routes(app: Any) -> list[tuple[str, str, str]]:
    """Every (method, rule, endpoint) the app serves, a WebSocket's method as WEBSOCKET
    (as access.py names it); HEAD and OPTIONS, which every GET and every route answer by
    themselves, left out."""
    out = []
    for rule in app.url_map.iter_rules():
        methods = ["WEBSOCKET"] if getattr(rule, "websocket", False) else sorted(rule.methods or ())
        out += [(m, rule.rule, rule.endpoint) for m in methods if m not in ("HEAD", "OPTIONS")]
    return sorted(out, key=lambda r: (r[1], r[0]))


def build(app: Any) -> Schema:
    """The OpenAPI 3.1 document of `app`'s routes. An operation's id is its handler's
    endpoint (`conversations.get_conversation` as `conversations_get_conversation`)."""
    found = routes(app)
    ids = {(method, rule): endpoint.replace(".", "_") for method, rule, endpoint in found}
    c = Components()
    paths: dict[str, Schema] = {}
    for method, rule, _ in found:
        op = OPERATIONS.get((method, rule)) or Op("Not described yet.")
        # A WebSocket is opened with a GET that asks for the upgrade.
        verb = "get" if method == "WEBSOCKET" else method.lower()
        paths.setdefault(_path(rule), {})[verb] = _operation(method, rule, op, c, ids)
    c.schemas["Error"] = {
        "type": "object", "required": ["error", "code"],
        "properties": {"error": {"type": "string"},
                       "code": {"type": "string", "enum": sorted({k for v in _error_codes().values() for k in v} |
                                                                 {"method_not_allowed"})}},
    }
    return {
        "openapi": OPENAPI_VERSION,
        "jsonSchemaDialect": JSON_SCHEMA_DIALECT,
        "info": {"title": "bmoe-daemon", "version": __version__,
                 "description": "The daemon's HTTP API: conversations, workspaces, skills, tasks, providers, "
                                "the event stream and an OpenAI-compatible /v1. Errors are {error, code}."},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": dict(sorted(c.schemas.items())),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer",
                                           "description": "Needed when the daemon was started with --api-key-file."}},
        },
    }
