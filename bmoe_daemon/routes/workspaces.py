from __future__ import annotations

from quart import Blueprint, Response, jsonify, request

from actors.policy.rules import BadRule, RuleBook
from actors.tools.memory_store import Memories
from bmoe_daemon.bodies import MemoryChange, NewRule, NewWorkspace, WorkspaceChange, parse_json, structure
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import BadRequest, NotFoundError

bp = Blueprint("workspaces", __name__)


@bp.get("/api/workspaces")
async def get_workspaces() -> Response:
    return jsonify([w.to_json() for w in daemon().hub.workspaces()])


@bp.post("/api/workspaces")
async def post_workspaces() -> tuple[Response, int]:
    body = structure(parse_json(await request.get_data()), NewWorkspace)
    ws = await daemon().hub.add_workspace(body.path, body.name, body.network)
    return jsonify(ws.to_json()), 201


@bp.patch("/api/workspaces/<workspace_id>")
async def patch_workspace(workspace_id: str) -> Response:
    body = structure(parse_json(await request.get_data()), WorkspaceChange)
    ws = await daemon().hub.change_workspace(workspace_id, name=body.name, network=body.network,
                                             memory_in_read_only=body.memory_in_read_only)
    return jsonify(ws.to_json())


@bp.delete("/api/workspaces/<workspace_id>")
async def delete_workspace(workspace_id: str) -> Response:
    await daemon().hub.remove_workspace(workspace_id)
    return jsonify({"deleted": workspace_id})


def _rules(workspace_id: str) -> RuleBook:
    """The rule book, once the workspace is known to exist."""
    if daemon().hub.workspace_path(workspace_id) is None:
        raise NotFoundError("There is no such workspace.")
    rules = daemon().rules
    if rules is None:
        raise NotFoundError("This daemon keeps no always-allow rules (--chat-only).")
    return rules


@bp.get("/api/workspaces/<workspace_id>/rules")
async def get_rules(workspace_id: str) -> Response:
    return jsonify([r.to_json() for r in _rules(workspace_id).listing(workspace_id)])


@bp.post("/api/workspaces/<workspace_id>/rules")
async def post_rules(workspace_id: str) -> tuple[Response, int]:
    rules = _rules(workspace_id)
    body = structure(parse_json(await request.get_data()), NewRule)
    try:
        rule = await rules.add(workspace_id, body.kind, body.text, body.exact)
    except BadRule as exc:
        raise BadRequest(str(exc)) from None
    return jsonify(rule.to_json()), 201


@bp.delete("/api/workspaces/<workspace_id>/rules/<rule_id>")
async def delete_rule(workspace_id: str, rule_id: str) -> Response:
    if not await _rules(workspace_id).remove(workspace_id, rule_id):
        raise NotFoundError("There is no such rule in this workspace.")
    return jsonify({"deleted": rule_id})


def _memories(workspace_id: str) -> tuple[Memories, str]:
    """The memory store and the workspace's folder (what its memories are kept by)."""
    path = daemon().hub.workspace_path(workspace_id)
    if path is None:
        raise NotFoundError("There is no such workspace.")
    memory = daemon().memory
    if memory is None:
        raise NotFoundError("This daemon keeps no memories (--chat-only).")
    return memory.store, str(path)


@bp.get("/api/workspaces/<workspace_id>/memories")
async def get_memories(workspace_id: str) -> Response:
    store, path = _memories(workspace_id)
    return jsonify([m.to_json() for m in await store.listing(path)])


@bp.patch("/api/workspaces/<workspace_id>/memories/<memory_id>")
async def patch_memory(workspace_id: str, memory_id: str) -> Response:
    store, path = _memories(workspace_id)
    body = structure(parse_json(await request.get_data()), MemoryChange)
    if body.text is None and body.tags is None:
        raise BadRequest("Give the memory's new text, its new tags, or both.")
    return jsonify((await store.change(path, memory_id, text=body.text, tags=body.tags)).to_json())


@bp.delete("/api/workspaces/<workspace_id>/memories/<memory_id>")
async def delete_memory(workspace_id: str, memory_id: str) -> Response:
    store, path = _memories(workspace_id)
    await store.delete(path, memory_id)
    return jsonify({"deleted": memory_id})
