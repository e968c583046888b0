"""The conversation routes. A conversation with a workspace or a provider route is
this computer's alone: from the network it is neither listed nor reachable.

Export and import (actors/record/exchange.py): GET .../export gives the conversation as
a JSON file (`?format=json`, the default: what the import takes) or as Markdown to read
(`?format=markdown`); POST /api/conversations/import takes such a JSON file and makes a
new conversation of it, with new ids, bound to the workspace the person names
(`?workspace=`) and to none otherwise. A file that is malformed or over MAX_IMPORT_BYTES
is a 400, and nothing is written."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import attrs
from quart import Blueprint, Response, jsonify, request

from actors.ids import new_id
from actors.record import exchange, listing
from actors.record.budget import check_budget
from actors.record.items import Item
from bmoe_daemon import access
from bmoe_daemon.bodies import (
    MAX_SEED_ITEMS,
    Answer,
    Approval,
    EditMessage,
    Fork,
    NewConversation,
    Rewind,
    SendMessage,
    ToolsBody,
    check_answer_schema,
    check_images,
    check_route,
    client_tool_set,
    parse_json,
    patch_fields,
    structure,
    tool_result,
)
from bmoe_daemon.context import daemon, is_local
from bmoe_daemon.errors import BadRequest, NoVision
from bmoe_daemon.fulltext import BadQuery

if TYPE_CHECKING:
    from actors.conversations.actor import Conversation

bp = Blueprint("conversations", __name__)
MAX_STALL_S = 86_400.0


async def _conversation(conversation_id: str) -> Conversation:
    """The conversation, its items read if they were not (checked before they are)."""
    hub = daemon().hub
    access.check_conversation(hub.peek(conversation_id).local_only, is_local())
    return await hub.open(conversation_id)


def _require_provider(route: str) -> None:
    """A `<provider>/<model>` route must name a saved provider."""
    providers = daemon().providers
    if route != "local" and (providers is None or not providers.knows(route)):
        name = route.partition("/")[0]
        raise BadRequest(
            f"There is no saved provider {name!r}; save it first (POST /api/providers) or pick another route."
        )


def _check_agent(agent: str, workspace: str | None, *, installed: bool = True) -> None:
    """Another agent must be offered here, given a workspace, and (`installed`) have
    its programs on PATH."""
    if agent == "builtin":
        return
    acp = daemon().acp
    spec = acp.spec(agent) if acp is not None else None
    if spec is None:
        raise BadRequest(f"Unknown agent {agent!r}; GET /api/agent lists the ones offered here.")
    if workspace is None:
        raise BadRequest("Another agent works in a folder: give the conversation a workspace.")
    missing = spec.missing() if installed else []
    if missing:
        raise BadRequest(
            f"{spec.name} is not installed here: install {', '.join(missing)} so the daemon finds it on its PATH, "
            "then try again."
        )


async def _body() -> dict[str, Any]:
    return parse_json(await request.get_data())


@bp.get("/api/conversations")
async def get_conversations() -> Response:
    """Every conversation newest first; with `limit`, `before`, `q`, `match`, `state` or
    `task`, one page of them, and the next page's cursor in X-Next-Before (none after the
    last page). `q` matches a part of the title, and (unless `match=title`) the words of
    the messages, answers and tool cards, from the search index: such a row carries
    `found`, the snippet that matched; the order and the cursor stay the list's."""
    try:
        query = listing.parse_query(request.args.to_dict())
    except listing.BadPage as exc:
        raise BadRequest(str(exc)) from None
    d, local = daemon(), is_local()
    raw_q = request.args.get("q", "")
    inside: set[str] = set()
    if query.q is not None and not query.titles_only and d.search is not None:
        try:
            inside = await d.search.matching(raw_q)
        except BadQuery:
            inside = set()  # words the index cannot look for (punctuation only): titles only
    rows, after = listing.page_of_ordered(d.hub.newest_first(query.before), query,
                                          lambda i: local or not i.local_only, inside)
    found = {}
    if inside and d.search is not None:
        found = await d.search.snippets(raw_q, [i.id for i in rows if i.id in inside])
    response = jsonify([{**i.to_json(), "found": found[i.id].to_json()} if i.id in found else i.to_json()
                        for i in rows])
    if after is not None:
        response.headers["X-Next-Before"] = after
    return response


@bp.post("/api/conversations")
async def post_conversations() -> tuple[Response, int]:
    body = structure(await _body(), NewConversation)
    if body.items is not None and len(body.items) > MAX_SEED_ITEMS:
        raise BadRequest(f"A conversation can start with at most {MAX_SEED_ITEMS} messages (items).")
    check_route(body.route)
    access.check_settings(is_local(), workspace=body.workspace, route=body.route, mode=body.mode)
    _require_provider(body.route)
    _check_agent(body.agent, body.workspace)
    items = [Item(id=new_id("i"), kind=s.kind, text=s.text) for s in body.items or ()]
    budget = check_budget(body.budget)
    conv = await daemon().hub.create(
        workspace=body.workspace, mode=body.mode, route=body.route, agent=body.agent, title=body.title, items=items,
        budget=budget,
        client_tools=client_tool_set(body.tools), workspace_tools=body.workspace_tools, mcp_tools=body.mcp_tools,
    )
    return jsonify(_with_clients(conv)), 201


def _with_clients(conv: Conversation) -> dict[str, Any]:
    """The conversation, and how many event streams answer its tools' calls now."""
    return {**conv.to_json(), "tool_clients": daemon().hub.tool_clients.count(conv.id)}


@bp.get("/api/conversations/<conversation_id>")
async def get_conversation(conversation_id: str) -> Response:
    return jsonify(_with_clients(await _conversation(conversation_id)))


@bp.put("/api/conversations/<conversation_id>/tools")
async def put_tools(conversation_id: str) -> Response:
    """Replace the client's tools, from the next message on."""
    conv = await _conversation(conversation_id)
    tools = client_tool_set(structure(await _body(), ToolsBody).tools)
    kept = conv.client.replace(tools)
    return jsonify({"tools": [t.to_json() for t in kept]})


@bp.post("/api/conversations/<conversation_id>/tool_result")
async def post_tool_result(conversation_id: str) -> Response:
    """The client's answer to a call of its tool that waits (`waiting_client`)."""
    conv = await _conversation(conversation_id)
    item, result, error = tool_result(await _body())
    conv.client.result(item, result=result, error=error)
    return jsonify({"item": item, "state": "error" if error is not None else "done"})


@bp.patch("/api/conversations/<conversation_id>")
async def patch_conversation(conversation_id: str) -> Response:
    conv = await _conversation(conversation_id)
    changes = patch_fields(await _body())
    if "budget" in changes:
        changes["budget"] = check_budget(changes["budget"])
    local = is_local()
    if "route" in changes:
        check_route(changes["route"])
    access.check_settings(
        local, workspace=changes.get("workspace"), route=changes.get("route"), mode=changes.get("mode")
    )
    if "route" in changes and not conv.running:  # while it runs, the actor answers 409 busy
        _require_provider(changes["route"])
    if changes.get("workspace") is not None and daemon().hub.workspace_path(changes["workspace"]) is None:
        raise BadRequest("There is no such workspace; add the folder first.")
    if "agent" in changes or "workspace" in changes:
        agent = changes.get("agent", conv.info.agent)
        _check_agent(agent, changes["workspace"] if "workspace" in changes else conv.info.workspace,
                     installed=agent != conv.info.agent)
    info = await conv.patch(changes)
    return jsonify(info.to_json())


@bp.delete("/api/conversations/<conversation_id>")
async def delete_conversation(conversation_id: str) -> Response:
    await _conversation(conversation_id)
    await daemon().hub.delete(conversation_id)
    return jsonify({"deleted": conversation_id})


def _check_send(conv: Conversation, images: list[str] | None) -> tuple[str, ...] | None:
    """The message's images, refused (`no_vision`) only where a loaded model would be
    given them: no model the daemon loads has a vision projector. With no model loaded
    the message is kept, images and all, and its run ends with the no-model notice."""
    imgs = check_images(images)
    if imgs and conv.info.route == "local" and daemon().engine.model_id is not None:
        raise NoVision("The loaded model cannot see images (it has no vision projector); send text only.")
    return imgs


@bp.post("/api/conversations/<conversation_id>/messages")
async def post_messages(conversation_id: str) -> tuple[Response, int]:
    conv = await _conversation(conversation_id)
    body = structure(await _body(), SendMessage)
    images = _check_send(conv, body.images)
    from actors.runs.agent.ledger import MAX_ROUNDS  # loaded with the conversation's actor

    if body.max_rounds is not None and not 1 <= body.max_rounds <= MAX_ROUNDS:
        raise BadRequest(f"max_rounds is between 1 and {MAX_ROUNDS}.")
    item = await conv.send_message(body.text, images=images, local=is_local(), think=body.think, plan=body.plan,
                                   goal=body.goal, verify=body.verify,
                                   answer_schema=check_answer_schema(body.answer_schema),
                                   max_rounds=body.max_rounds, unattended=body.unattended,
                                   budget=check_budget(body.budget))
    return jsonify({"item": item.to_json()}), 202


@bp.post("/api/conversations/<conversation_id>/edit")
async def post_edit(conversation_id: str) -> tuple[Response, int]:
    conv = await _conversation(conversation_id)
    body = structure(await _body(), EditMessage)
    _check_send(conv, None)
    item = await conv.send_message(body.text, local=is_local(), edit_of=body.item, think=body.think)
    return jsonify({"item": item.to_json()}), 202


@bp.post("/api/conversations/<conversation_id>/approval")
async def post_approval(conversation_id: str) -> Response:
    conv = await _conversation(conversation_id)
    body = structure(await _body(), Approval)
    if body.rule is not None and body.decision != "approve_always":
        raise BadRequest("A `rule` goes with the decision approve_always only.")
    picked = attrs.asdict(body.rule) if body.rule is not None else None
    await conv.approve(body.item, body.decision != "deny", feedback=body.feedback, local=is_local(),
                       always=body.decision == "approve_always", rule=picked)
    return jsonify({"item": body.item, "decision": body.decision})


@bp.get("/api/conversations/<conversation_id>/plan")
async def get_plan(conversation_id: str) -> Response:
    conv = await _conversation(conversation_id)
    return jsonify(await conv.plan_view())


@bp.post("/api/conversations/<conversation_id>/answer")
async def post_answer(conversation_id: str) -> Response:
    conv = await _conversation(conversation_id)
    body = structure(await _body(), Answer)
    await conv.answer(body.item, body.answer, local=is_local())
    return jsonify({"item": body.item, "answer": body.answer})


@bp.post("/api/conversations/<conversation_id>/compact")
async def post_compact(conversation_id: str) -> tuple[Response, int]:
    conv = await _conversation(conversation_id)
    await conv.compact(local=is_local())
    return jsonify(conv.info.to_json()), 202


@bp.post("/api/conversations/<conversation_id>/resume")
async def post_resume(conversation_id: str) -> tuple[Response, int]:
    conv = await _conversation(conversation_id)
    await conv.resume(local=is_local())
    return jsonify(conv.info.to_json()), 202


@bp.post("/api/conversations/<conversation_id>/stop")
async def post_stop(conversation_id: str) -> Response:
    conv = await _conversation(conversation_id)
    stopped = await conv.stop()
    return jsonify({"stopped": stopped})


@bp.get("/api/conversations/<conversation_id>/helpers")
async def get_helpers(conversation_id: str) -> Response:
    """The conversation's helpers as a tree, each flagged `stalled` when it is working
    and has written nothing for `stall_s` seconds (default background.STALL_S)."""
    conv = await _conversation(conversation_id)
    from actors.runs.agent.run_tools import background  # loaded with the conversation's actor

    raw = request.args.get("stall_s")
    stall_s = background.STALL_S
    if raw is not None:
        try:
            stall_s = float(raw)
        except ValueError:
            stall_s = -1.0
        if not 0 < stall_s <= MAX_STALL_S:
            raise BadRequest(f"stall_s is a number of seconds above 0 and at most {int(MAX_STALL_S)}; got {raw!r}.")
    nodes = background.tree(conv.items, stall_s=stall_s)
    return jsonify({"conversation": conv.id, "stall_s": stall_s, "working": conv.background.working,
                    "helpers": nodes})


@bp.get("/api/conversations/<conversation_id>/changes")
async def get_changes(conversation_id: str) -> Response:
    """Each message's runs (and each rewind) that changed files; with `item`, that one's
    unified diff; with `item` and `path`, one file's."""
    conv = await _conversation(conversation_id)
    item, path = request.args.get("item"), request.args.get("path")
    for name, value in (("item", item), ("path", path)):
        if value is not None and not value:
            raise BadRequest(f"`{name}` is empty: leave it out, or give the message's id (and a file's path).")
    if path is not None and item is None:
        raise BadRequest("`path` goes with `item`: the message whose run changed the file.")
    if item is not None:
        return jsonify(await conv.undo.diff(item, path))
    return jsonify({"conversation": conv.id, "changes": await conv.undo.changes()})


@bp.post("/api/conversations/<conversation_id>/rewind")
async def post_rewind(conversation_id: str) -> Response:
    conv = await _conversation(conversation_id)
    body = structure(await _body(), Rewind)
    result = await conv.rewind(body.item, files=body.files, conversation=body.conversation, force=body.force)
    return jsonify({**result, "conversation": conv.info.to_json()})


@bp.post("/api/conversations/<conversation_id>/fork")
async def post_fork(conversation_id: str) -> tuple[Response, int]:
    await _conversation(conversation_id)
    body = structure(await _body(), Fork)
    fork = await daemon().hub.fork(conversation_id, body.item)
    return jsonify(fork.to_json()), 201


# ---- export and import ----

MAX_IMPORT_BYTES = 32 * 1024 * 1024
FORMATS = ("json", "markdown")


def _file_name(title: str, suffix: str) -> str:
    """A file name from the title: letters, digits and dashes only (safe in any header)."""
    stem = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-")[:60] or "conversation"
    return f"{stem}{suffix}"


@bp.get("/api/conversations/<conversation_id>/export")
async def get_export(conversation_id: str) -> Response:
    fmt = request.args.get("format", "json")
    if fmt not in FORMATS:
        raise BadRequest("`format` is json (the file an import takes) or markdown (to read).")
    conv = await _conversation(conversation_id)
    record = conv.record()
    if fmt == "markdown":
        body, mime, suffix = exchange.markdown(record), "text/markdown; charset=utf-8", ".md"
    else:
        body = json.dumps(exchange.document(record), ensure_ascii=False, indent=1)
        mime, suffix = "application/json", ".bmoe.json"
    response = Response(body, mimetype=mime)
    response.headers["Content-Disposition"] = f'attachment; filename="{_file_name(record.info.title, suffix)}"'
    return response


@bp.post("/api/conversations/import")
async def post_import() -> tuple[Response, int]:
    raw = await request.get_data()
    if len(raw) > MAX_IMPORT_BYTES:
        raise BadRequest(f"The file is over {MAX_IMPORT_BYTES // (1024 * 1024)} MiB: this daemon imports smaller "
                         "conversations only.")
    data = parse_json(raw)
    workspace = request.args.get("workspace")
    if workspace is not None and not workspace:
        raise BadRequest("`workspace` names a workspace (its id); leave it out to import without one.")
    try:
        record = exchange.read_document(data, workspace=workspace)
    except exchange.BadDocument as exc:
        raise BadRequest(f"This file cannot be imported: {exc}") from None
    access.check_settings(is_local(), workspace=workspace, route=None, mode=record.info.mode)
    conv = await daemon().hub.adopt(record)
    return jsonify(conv.to_json()), 201
