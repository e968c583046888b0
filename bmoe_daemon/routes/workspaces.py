from __future__ import annotations

from quart import Blueprint, Response, jsonify, request

from bmoe_daemon.bodies import NewWorkspace, parse_json, structure
from bmoe_daemon.context import daemon

bp = Blueprint("workspaces", __name__)


@bp.get("/api/workspaces")
async def get_workspaces() -> Response:
    return jsonify([w.to_json() for w in daemon().hub.workspaces()])


@bp.post("/api/workspaces")
async def post_workspaces() -> tuple[Response, int]:
    body = structure(parse_json(await request.get_data()), NewWorkspace)
    ws = await daemon().hub.add_workspace(body.path, body.name)
    return jsonify(ws.to_json()), 201


@bp.delete("/api/workspaces/<workspace_id>")
async def delete_workspace(workspace_id: str) -> Response:
    await daemon().hub.remove_workspace(workspace_id)
    return jsonify({"deleted": workspace_id})
