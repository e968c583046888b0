"""The operations table: for each (method, URL rule) the app serves, what it does, what
it takes (an attrs class, or a schema built by hand) and answers, the errors it may
give besides the ones every route of its kind gives, and its links."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, get_args

import attrs

from actors.conversations.hub import Workspace
from actors.model.discovery.scan import ModelFile
from actors.model.usage import GROUPINGS
from actors.policy.rules import Rule
from actors.record.items import ConversationState, PlanState
from actors.record.listing import MAX_PAGE, MAX_QUERY_CHARS
from actors.tools.memory_store import Memory
from bmoe_daemon.bodies import (
    Answer,
    Approval,
    EditMessage,
    Fork,
    MemoryChange,
    NewRule,
    NewWorkspace,
    Rewind,
    ToolsBody,
    WorkspaceChange,
)
from bmoe_daemon.fulltext import MAX_LIMIT as FULLTEXT_LIMIT
from bmoe_daemon.fulltext import MAX_OFFSET as FULLTEXT_OFFSET
from bmoe_daemon.fulltext import MAX_QUERY_CHARS as FULLTEXT_QUERY_CHARS
from bmoe_daemon.models import ModelChoice
from bmoe_daemon.openapi import answers, request_bodies
from bmoe_daemon.openapi.schemas import Components, Schema, array, field_types, schema_of, shape
from bmoe_daemon.routes.agent import PromptArguments
from bmoe_daemon.routes.mcp import ServerBody, ServerSwitch
from bmoe_daemon.routes.providers import ProbeBody
from bmoe_daemon.routes.secrets import SecretBody
from bmoe_daemon.routes.skills import SkillBody, SkillSwitch

# One Server-Sent Event, as OpenAPI before 3.2 has a stream's `schema` describe each
# event (Schemathesis reads it so): its fields, each text; `data` is JSON in text.
SSE_EVENT: dict[str, object] = {
    "type": "object",
    "properties": {"event": {"type": "string"}, "data": {"type": "string"}, "id": {"type": "string"},
                   "retry": {"type": ["string", "integer"]}},
}


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
    give besides the ones every route of its kind gives (see document.py's `_errors`)."""

    summary: str
    answer: Build | None = None
    status: int = 200
    body: Any = None  # an attrs class, or a Build for a body read by hand
    body_required: bool = True
    query: tuple[Param, ...] = ()
    errors: tuple[int, ...] = ()
    links: Mapping[str, Link] = attrs.field(factory=dict)
    media: Mapping[str, Schema] | None = None  # answers that are not JSON: media type -> schema


_CONV = "/api/conversations/<conversation_id>"
# The events of /api/events and /api/ws (README's API table says what each carries).
EVENTS = ("conversation", "conversation_deleted", "item", "delta", "prefill", "plan", "task", "model",
          "tool_request", "tool_clients")
_TOOLS_PARAM = Param("tools", {"type": "string", "maxLength": 4096},
                     "Conversation ids, comma separated (at most 32): this stream answers their tool calls "
                     "(`tool_clients` counts it while it is open).")
_WS = "/api/workspaces/<workspace_id>"
_FROM_ID = "$response.body#/id"


def _conversation_links() -> dict[str, Link]:
    ops = {"Read": ("GET", ""), "Change": ("PATCH", ""), "Message": ("POST", "/messages"),
           "Edit": ("POST", "/edit"), "Stop": ("POST", "/stop"), "Plan": ("GET", "/plan"),
           "Helpers": ("GET", "/helpers"),
           "Resume": ("POST", "/resume"), "Compact": ("POST", "/compact"), "Approve": ("POST", "/approval"),
           "Answer": ("POST", "/answer"), "File": ("GET", "/file"), "Delete": ("DELETE", ""),
           "Tools": ("PUT", "/tools"), "ToolResult": ("POST", "/tool_result")}
    return {name: Link((method, _CONV + tail), {"conversation_id": _FROM_ID}) for name, (method, tail) in ops.items()}


OPERATIONS: dict[tuple[str, str], Op] = {
    ("GET", "/health"): Op(
        "Whether the daemon serves, its version and its model (no key needed); `sandbox`: whether the model's "
        "commands run in an OS sandbox (`{kind, available, why, setting, confined}`; null in chat-only mode).",
        lambda c: shape(c, {"status": {"const": "ok"}, "version": str, "model": str | None,
                            "device": {"type": ["object", "null"]}, "sandbox": {"type": ["object", "null"]}})),
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
        answers.chat_answer, body=request_bodies.chat_request, errors=(400, 409),
        media={"text/event-stream": SSE_EVENT}),
    ("GET", "/api/agent"): Op(
        "What conversations here may use: tools, commands, agents, MCP and language servers, helpers.",
        lambda c: shape(c, {"tools": bool, "commands": bool, "agents": array(shape(c, {
            "id": str, "name": str, "available": bool, "missing": list[str]})),
            "mcp": array(answers.mcp_server(c)), "lsp": array({"type": "object"}), "helpers": int,
            "helper_rounds": int})),
    ("GET", "/api/limits"): Op(
        "The limits the daemon enforces that a client may show or keep to, each by the field it bounds "
        "(`feedback` in characters, `compaction.at` a share of the context).",
        answers.limits),
    ("GET", "/api/events"): Op(
        "The event stream (Server-Sent Events); `Last-Event-ID` or `last_event_id` replays what came after. "
        "Events: " + ", ".join(f"`{e}`" for e in EVENTS) + ".",
        errors=(400, 403, 404), media={"text/event-stream": SSE_EVENT},
        query=(Param("last_event_id", {"type": "integer", "minimum": 0}, "Replay the events after this id."),
               Param("Last-Event-ID", {"type": "integer", "minimum": 0}, "Replay the events after this id.",
                     "header"), _TOOLS_PARAM)),
    ("WEBSOCKET", "/api/ws"): Op(
        "The event stream over a WebSocket (an upgrade request; a plain GET is refused).", status=101,
        errors=(400, 403, 404), query=(Param("last_event_id", {"type": "integer", "minimum": 0},
                                             "Replay the events after this id."), _TOOLS_PARAM)),
    ("GET", "/api/conversations"): Op(
        "The conversations, newest first; with `limit`, one page and the next page's cursor in X-Next-Before. "
        "With `q`, those whose title holds it or (unless `match=title`) whose messages, answers or tool cards have "
        "its words (the search index's, see /api/search): such a row carries `found`, its snippet; the order and the "
        "cursor stay the list's.",
        lambda c: array(answers.listed_conversation(c)), errors=(400,),
        query=(Param("limit", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}, "The most rows to answer."),
               Param("before", {"type": "string"}, "The X-Next-Before of the page before."),
               Param("q", {"type": "string", "maxLength": MAX_QUERY_CHARS},
                     "A part of the title, any case; or words inside the conversation."),
               Param("match", {"enum": ["all", "title"]}, "`title`: `q` looks at titles only (default `all`)."),
               Param("task", {"type": "string", "minLength": 1}, "Only the conversations of this task."),
               Param("state", {"enum": list(get_args(ConversationState))}, "Only the conversations in this state."))),
    ("GET", "/api/search"): Op(
        "Words looked for inside the conversations (the people's messages, the answers, the tool cards' titles, "
        "the titles), best match first, each with a snippet and its matches' places; `indexing`: the index is "
        "still being built, so some conversations may be missing. The words are taken as words, never as a query "
        "language; the last one also matches as a beginning (being typed) unless `q` ends with a space.",
        answers.search, errors=(400,),
        query=(Param("q", {"type": "string", "minLength": 1, "maxLength": FULLTEXT_QUERY_CHARS},
                     "The words to look for (at most 16)."),
               Param("workspace", {"type": "string", "minLength": 1}, "Only the conversations of this workspace."),
               Param("limit", {"type": "integer", "minimum": 1, "maximum": FULLTEXT_LIMIT}, "The most matches."),
               Param("offset", {"type": "integer", "minimum": 0, "maximum": FULLTEXT_OFFSET},
                     "The matches to skip (the `next_offset` of the page before)."))),
    ("POST", "/api/conversations"): Op(
        "Start a conversation.", answers.conversation, status=201, body=request_bodies.new_conversation,
        errors=(400, 403, 409, 507),
        links=_conversation_links()),
    ("GET", _CONV): Op("A conversation with its items.", answers.conversation),
    ("PATCH", _CONV): Op("Change a conversation's title, mode, route, workspace, agent, plan mode or goal.",
                         answers.conversation_info, body=request_bodies.patch_body, errors=(409, 507)),
    ("DELETE", _CONV): Op("Delete a conversation (a run going on is stopped).", answers.deleted, errors=(409, 507)),
    ("POST", _CONV + "/messages"): Op(
        "Send a message: the run starts, its progress comes as events.",
        lambda c: shape(c, {"item": answers.item(c)}), status=202, body=request_bodies.message_body,
        errors=(409, 507)),
    ("POST", _CONV + "/edit"): Op(
        "Send an earlier message again, changed: what came after it goes.",
        lambda c: shape(c, {"item": answers.item(c)}), status=202, body=EditMessage, errors=(409, 507)),
    ("POST", _CONV + "/stop"): Op("Stop the run going on.", lambda c: shape(c, {"stopped": bool}), errors=(409,)),
    ("POST", _CONV + "/approval"): Op(
        "Answer an approval card (or a plan's). With approve_always, `rule` picks which of the card's offered "
        "`rules` is kept (else the narrowest, its `rule`); one it does not offer is a 400 and the card waits.",
        lambda c: shape(c, {"item": str, "decision": schema_of(field_types(Approval)["decision"], c)}),
        body=Approval, errors=(409, 507)),
    ("POST", _CONV + "/answer"): Op(
        "Answer the agent's question card.",
        lambda c: shape(c, {"item": str, "answer": schema_of(str | list[str], c)}), body=Answer, errors=(409, 507)),
    ("PUT", _CONV + "/tools"): Op(
        "Replace the tools the client brings (from the next message on): the model calls them, the client "
        "carries the calls out (`tool_request` events, POST .../tool_result). 400 naming a tool whose name the "
        "daemon's tools have while they are on, a name given twice, more than 32, or parameters that are not a "
        "JSON Schema of an object.",
        lambda c: shape(c, {"tools": array(answers.client_tool(c))}), body=ToolsBody, errors=(409, 507)),
    ("POST", _CONV + "/tool_result"): Op(
        "The client's answer to a call of its tool that waits (`waiting_client`): `result`, or `error`, not both. "
        "404 for an item that is no call of a client tool here; 409 not_waiting for one that waits no more.",
        lambda c: shape(c, {"item": str, "state": {"enum": ["done", "error"]}}), body=request_bodies.tool_result,
        errors=(409,)),
    ("GET", _CONV + "/helpers"): Op(
        "The conversation's helpers (subagents) as a tree: each with its kind, state, rounds, whether it works in "
        "the background, `progress` (when it last wrote something) and `stalled` (working, nothing written for "
        "`stall_s` seconds); `parent` null is the conversation's own run, `message` the message it worked.",
        lambda c: shape(c, {"conversation": str, "stall_s": float, "working": bool, "helpers": array(shape(c, {
            "id": str, "kind": {"enum": ["explore", "general"]}, "description": str,
            "state": {"enum": ["waiting", "running", "done", "error", "stopped"]}, "rounds": int,
            "background": bool, "progress": float, "stalled": bool, "parent": str | None, "message": str | None,
            "children": list[dict[str, Any]]}))}),
        query=(Param("stall_s", {"type": "number", "exclusiveMinimum": 0, "maximum": 86400},
                     "Seconds without progress before a working helper is flagged `stalled` (default 120)."),),
        errors=(400,)),
    ("GET", _CONV + "/plan"): Op(
        "The conversation's plan: text, revision and state.",
        lambda c: shape(c, {"text": str, "revision": int, "state": PlanState, "plan_mode": bool})),
    ("POST", _CONV + "/resume"): Op("Go on with a run that was stopped, failed or ran out of rounds.",
                                    answers.conversation_info, status=202, errors=(400, 409, 507)),
    ("POST", _CONV + "/compact"): Op("Summarise the conversation before its last message.", answers.conversation_info,
                                     status=202, errors=(400, 409, 507)),
    ("GET", _CONV + "/file"): Op(
        "A workspace file, for the preview (served under a sandbox).", errors=(400,),
        query=(Param("path", {"type": "string", "minLength": 1}, "The file, relative to the workspace."),),
        media={"*/*": {}}),
    ("GET", _CONV + "/changes"): Op(
        "What each message's runs (and each rewind) changed in the workspace; with `item`, its unified diff; "
        "with `item` and `path`, one file's. A file changed since by someone else is marked `changed_since`.",
        answers.changes, errors=(400, 409),
        query=(Param("item", {"type": "string", "minLength": 1}, "A message's id (or a rewind's): its diff."),
               Param("path", {"type": "string", "minLength": 1}, "With `item`: one file's diff."))),
    ("POST", _CONV + "/rewind"): Op(
        "Put the files the runs from a message on changed back (`files`), drop the message and what follows "
        "(`conversation`), or both; 409 changed_since names files changed since (nothing changes) unless `force`. "
        "Undo a rewind by rewinding to its `rewind` id with `files`.",
        answers.rewind, body=Rewind, errors=(400, 409, 507)),
    ("POST", _CONV + "/fork"): Op(
        "A new conversation with the same workspace, mode, route and agent and the items up to `item`.",
        answers.conversation, status=201, body=Fork, errors=(400, 409, 507), links=_conversation_links()),
    ("GET", _CONV + "/export"): Op(
        "The conversation as a file: JSON (the default; what POST /api/conversations/import takes, with a format "
        "version, no ids, workspace, route or session) or Markdown to read (`format=markdown`: the tool calls "
        "folded).", errors=(400,),
        query=(Param("format", {"enum": ["json", "markdown"]}, "json (importable) or markdown (to read)."),),
        media={"application/json": {"type": "object", "required": ["format", "version", "conversation", "items"]},
               "text/markdown": {"type": "string"}}),
    ("POST", "/api/conversations/import"): Op(
        "A new conversation from a file GET .../export gave, with new ids (it never overwrites one), in the "
        "workspace named (`workspace`, local clients only), else in none. A malformed file, or one over 32 MiB, "
        "is a 400 and nothing is written; what was under way when it was exported ends as after a restart.",
        answers.conversation, status=201, body=request_bodies.conversation_file, errors=(400, 403, 507),
        query=(Param("workspace", {"type": "string", "minLength": 1}, "The workspace to put it in."),),
        links=_conversation_links()),
    ("GET", "/api/workspaces"): Op("The workspaces.", lambda c: array(c.ref(Workspace, answer=True))),
    ("POST", "/api/workspaces"): Op(
        "Add a folder as a workspace (`network`: its sandboxed commands may use the network, loopback "
        "included; off by default).", lambda c: c.ref(Workspace, answer=True), status=201, body=NewWorkspace,
        errors=(507,), links={
            "Remove": Link(("DELETE", _WS), {"workspace_id": _FROM_ID}),
            "Rules": Link(("GET", _WS + "/rules"), {"workspace_id": _FROM_ID}),
            "AddRule": Link(("POST", _WS + "/rules"), {"workspace_id": _FROM_ID}),
            "Memories": Link(("GET", _WS + "/memories"), {"workspace_id": _FROM_ID})}),
    ("GET", "/api/folders"): Op(
        "The folders under the home folder whose path starts with `prefix` (`~/...`, absolute, or relative to "
        "home), written `~/...`, at most 50 (`truncated`: there were more); never outside home, after `..` and "
        "links; hidden ones only with `hidden=1` or a prefix whose last part starts with a dot.",
        lambda c: shape(c, {"home": str, "folders": list[str], "truncated": bool}), errors=(400,),
        query=(Param("prefix", {"type": "string", "maxLength": 4096}, "The start of a folder's path."),
               Param("hidden", {"enum": ["0", "1", "true", "false"]}, "1: hidden folders too."))),
    ("PATCH", _WS): Op("Rename a workspace, allow its sandboxed commands the network (`network`), or let its "
                       "read-only conversations write memories (`memory_in_read_only`).",
                       lambda c: c.ref(Workspace, answer=True), body=WorkspaceChange, errors=(404, 507)),
    ("DELETE", _WS): Op("Forget a workspace (its folder stays).", answers.deleted, errors=(409, 507)),
    ("GET", _WS + "/files"): Op(
        "The workspace's files whose path holds `q` (case ignored), best first, at most `limit` (1 to 50): for the "
        "message box's @-mentions. The walk follows no link, skips .git, node_modules and the like, and stops "
        "after 50,000 entries or 2 seconds (`truncated`).",
        lambda c: shape(c, {"files": list[str], "truncated": bool}),
        query=(Param("q", {"type": "string", "maxLength": 200}, "Part of the path."),
               Param("limit", {"type": "integer", "minimum": 1, "maximum": 50}, "At most this many; 50.")),
        errors=(400, 404)),
    ("GET", _WS + "/rules"): Op("A workspace's always-allow rules.", lambda c: array(c.ref(Rule, answer=True))),
    ("POST", _WS + "/rules"): Op(
        "Keep an always-allow rule.", lambda c: c.ref(Rule, answer=True), status=201, body=NewRule, errors=(507,),
        links={"Remove": Link(("DELETE", _WS + "/rules/<rule_id>"),
                              {"workspace_id": "$request.path.workspace_id", "rule_id": _FROM_ID})}),
    ("DELETE", _WS + "/rules/<rule_id>"): Op("Remove an always-allow rule.", answers.deleted, errors=(507,)),
    ("GET", _WS + "/memories"): Op(
        "What the agent remembered of the workspace (memory_write), the newest first, at most 1,000.",
        lambda c: array(c.ref(Memory, answer=True))),
    ("PATCH", _WS + "/memories/<memory_id>"): Op(
        "Change a memory's `text` (at most 2,000 characters) or `tags` (at most 8 lower-case words).",
        lambda c: c.ref(Memory, answer=True), body=MemoryChange, errors=(400, 507)),
    ("DELETE", _WS + "/memories/<memory_id>"): Op("Forget a memory.", answers.deleted, errors=(507,)),
    ("GET", "/api/debug/actors"): Op("The live actor tree.", answers.actor),
    ("GET", "/api/providers"): Op("The saved providers (never their keys).", lambda c: array(answers.provider(c))),
    ("POST", "/api/providers"): Op(
        "Save an OpenAI-compatible provider.", answers.provider, status=201, body=request_bodies.provider_body,
        errors=(507,),
        links={"Change": Link(("PUT", "/api/providers/<provider_id>"), {"provider_id": _FROM_ID}),
               "Forget": Link(("DELETE", "/api/providers/<provider_id>"), {"provider_id": _FROM_ID})}),
    ("POST", "/api/providers/probe"): Op(
        "Ask an address for its models (GET <base_url>/models) with a key typed, or a saved provider's key (sent "
        "only to its own host): the model ids, or what failed in plain words (`failure`: unreachable, timeout, "
        "key_refused, not_found, not_openai, too_large, refused). Never answers or logs the key.",
        answers.probe, body=ProbeBody, errors=(404,)),
    ("PUT", "/api/providers/<provider_id>"): Op("Change a provider.", answers.provider,
                                                body=request_bodies.provider_body, errors=(507,)),
    ("DELETE", "/api/providers/<provider_id>"): Op("Forget a provider and its key.", answers.deleted, errors=(507,)),
    ("POST", "/api/mcp/<server>/prompts/<name>"): Op(
        "An MCP server's prompt (`prompts/get` with `{arguments}`) as text, for a person to start a message with; "
        "409 busy when the server cannot give it now.",
        lambda c: shape(c, {"text": str}), body=PromptArguments, body_required=False, errors=(400, 404, 409)),
    ("POST", "/api/mcp/servers"): Op(
        "Add an MCP server to the daemon's MCP config (`<data>/mcp.json`), written whole, and start it: `{name, "
        "command, args?, env?, cwd?, timeout_ms?}` for a program of this computer (`cwd` the full path of an "
        "existing folder) or `{name, url, type?, headers?, timeout_ms?}` for a remote one (`type: \"sse\"` for the "
        "older HTTP+SSE transport, else Streamable HTTP), `timeout_ms` 1 to 3600000, `enabled: false` to keep it "
        "switched off; answers its row of GET /api/agent. 409 exists for a name taken; the file is unchanged on any "
        "refusal.",
        answers.mcp_server, status=201, body=ServerBody, errors=(400, 409, 507),
        links={"Change": Link(("PUT", "/api/mcp/servers/<name>"), {"name": "$response.body#/name"}),
               "Switch": Link(("PATCH", "/api/mcp/servers/<name>"), {"name": "$response.body#/name"}),
               "Remove": Link(("DELETE", "/api/mcp/servers/<name>"), {"name": "$response.body#/name"})}),
    ("PUT", "/api/mcp/servers/<name>"): Op(
        "Replace an MCP server's entry (the same fields; keys of the entry this does not know are kept) and start "
        "it again; an `env` or `headers` value of null keeps the saved one, and an address as the listing shows it "
        "keeps the saved one. A `name` other than the path's renames the server (its program ended under the old "
        "name, started under the new; 409 exists when that name is taken). A secret the old entry named that no "
        "server in the file names any more is deleted from the key store.",
        answers.mcp_server, body=ServerBody, errors=(400, 404, 409, 507)),
    ("PATCH", "/api/mcp/servers/<name>"): Op(
        "Switch an MCP server on or off (`{enabled}`): a switched-off server stays in the file (`\"enabled\": "
        "false`), is ended and is not started nor offered.",
        answers.mcp_server, body=ServerSwitch, errors=(400, 404, 409, 507)),
    ("DELETE", "/api/mcp/servers/<name>"): Op(
        "Remove an MCP server from the config; its program is ended, and each secret it named that no other "
        "server in the file names is deleted from the key store (`secrets_deleted`).", answers.mcp_server_deleted,
        errors=(400, 404, 409, 507)),
    ("GET", "/api/secrets"): Op(
        "The key store's named secrets (never their values) and the MCP servers whose headers name each; a name a "
        "server wants that is not stored yet is listed with `stored: false`.", answers.secrets),
    ("PUT", "/api/secrets/<name>"): Op(
        "Keep a secret for remote MCP servers' headers (`${secret:NAME}` in mcp.json); a server that failed for "
        "want of it is tried again.", answers.secret, body=SecretBody, errors=(400, 507)),
    ("DELETE", "/api/secrets/<name>"): Op("Forget a secret.", answers.deleted, errors=(404, 507)),
    ("GET", "/api/usage"): Op(
        "What the answers used and cost, from the usage ledger: prompt, completion and cached tokens and the "
        "cost in US dollars (where the provider has prices), local and provider routes apart, in all and per "
        "group of `by`.",
        answers.usage, errors=(400,),
        query=(Param("by", {"enum": list(GROUPINGS)}, "How to group the answers (default provider); `day` is "
                     "the local date."),
               Param("since", {"type": "string"}, 'Only answers from then on: a date "YYYY-MM-DD" (its local '
                     "midnight) or an ISO date and time."),
               Param("conversation", {"type": "string", "minLength": 1}, "Only this conversation's answers."),
               Param("task", {"type": "string", "minLength": 1}, "Only the answers of this task's runs."))),
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
        "The skills: bundled, the person's and (with `workspace`) the workspace's.", lambda c: array(answers.skill(c)),
        query=(Param("workspace", {"type": "string"}, "A workspace's id."),), errors=(404,)),
    ("GET", "/api/skills/<name>"): Op(
        "One skill to read: its fields, its `allowed-tools` (null when it names none) and its SKILL.md as read.",
        answers.skill_reading, query=(Param("workspace", {"type": "string"}, "A workspace's id."),), errors=(404,)),
    ("POST", "/api/skills"): Op(
        "Write a skill of the person's.", answers.skill, status=201, body=SkillBody, errors=(409, 507),
        links={"Write": Link(("PUT", "/api/skills/<name>"), {"name": "$response.body#/name"}),
               "Switch": Link(("PATCH", "/api/skills/<name>"), {"name": "$response.body#/name"}),
               "Delete": Link(("DELETE", "/api/skills/<name>"), {"name": "$response.body#/name"})}),
    ("PUT", "/api/skills/<name>"): Op("Write the person's version of a skill.", answers.skill, body=SkillBody,
                                      errors=(507,)),
    ("PATCH", "/api/skills/<name>"): Op(
        "Switch a skill on or off.", answers.skill, body=SkillSwitch, errors=(507,),
        query=(Param("workspace", {"type": "string"}, "A workspace's id: switch it there only."),)),
    ("DELETE", "/api/skills/<name>"): Op("Delete a skill of the person's.", answers.deleted, errors=(400, 507)),
    ("GET", "/api/tasks"): Op("The scheduled tasks.", lambda c: array(answers.task(c)), errors=(400,)),
    ("POST", "/api/tasks"): Op(
        "Create a task: a prompt run as a conversation on a schedule.", answers.task, status=201,
        body=request_bodies.task_body, errors=(507,),
        links={"Change": Link(("PUT", "/api/tasks/<task_id>"), {"task_id": _FROM_ID}),
               "Run": Link(("POST", "/api/tasks/<task_id>/run"), {"task_id": _FROM_ID}),
               "Delete": Link(("DELETE", "/api/tasks/<task_id>"), {"task_id": _FROM_ID})}),
    ("PUT", "/api/tasks/<task_id>"): Op("Change a task's fields (the others are kept).", answers.task,
                                        body=request_bodies.task_change, errors=(507,)),
    ("DELETE", "/api/tasks/<task_id>"): Op("Delete a task.", answers.deleted, errors=(400, 507)),
    ("POST", "/api/tasks/<task_id>/run"): Op("Run a task now.", answers.task, status=202, errors=(400, 409, 507)),
    ("GET", "/api/hooks"): Op(
        "The person's hooks with their last outcomes.",
        lambda c: shape(c, {"enabled": bool, "file": str | None, "error": str | None, "error_at": float | None,
                            "hooks": array({"type": "object"})}, optional=["enabled"])),
    ("GET", "/api/models"): Op(
        "The GGUF models on this computer, and the one loaded.",
        lambda c: shape(c, {"models": array(c.ref(ModelFile, answer=True)), "notices": list[str],
                            "loaded": {"anyOf": [answers.loaded(c), {"type": "null"}]}})),
    ("GET", "/api/model"): Op(
        "The model that serves, or null (its file's path to a client on this computer only).",
        lambda c: {"anyOf": [answers.loaded(c, path=False), {"type": "null"}]}),
    ("PUT", "/api/model"): Op(
        "Load another model between turns (kept for the next start); with `chat_template`, give it a chat "
        "template of the person's (kept for that file; \"\" goes back to the file's).",
        lambda c: {"anyOf": [answers.loaded(c), {"type": "null"}]}, body=ModelChoice, errors=(409,)),
}


