"""The skill routes: list, write, switch and delete skills, for a client on this computer only.

`GET /api/skills?workspace=<id>` lists the bundled, the person's and (with a workspace)
the workspace's skills, a later place replacing an earlier one of the same name;
`GET /api/skills/<name>` answers one to read, with its allowed tools and its SKILL.md. A
person writes only their own (`<data>/skills/`): a `PUT` on a bundled skill writes the
person's version of it, and `DELETE` removes the person's own only.
"""

from __future__ import annotations

from pathlib import Path

import attrs
from quart import Blueprint, Response, jsonify, request

from actors.skills.catalog import SkillCatalog, SkillExists
from bmoe_daemon.bodies import parse_json, structure
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import ApiError, BadRequest, Exists, NotFoundError

bp = Blueprint("skills", __name__)


@attrs.frozen
class SkillBody:
    name: str
    description: str
    body: str
    title: str | None = None


@attrs.frozen
class SkillSwitch:
    enabled: bool


def _catalog() -> SkillCatalog:
    skills = daemon().skills
    if skills is None:
        raise ApiError("Skills are not available in this daemon.")
    return skills


def _workspace() -> Path | None:
    ws = request.args.get("workspace")
    if ws is None or ws == "":
        return None
    path = daemon().hub.workspace_path(ws)
    if path is None:
        raise NotFoundError("There is no such workspace.")
    return path


async def _body() -> SkillBody:
    return structure(parse_json(await request.get_data()), SkillBody)


@bp.get("/api/skills")
async def get_skills() -> Response:
    catalog = _catalog()
    return jsonify([s.to_json() for s in await catalog.listing(_workspace())])


@bp.get("/api/skills/<name>")
async def get_skill(name: str) -> Response:
    """One skill to read: its fields, its allowed tools and its SKILL.md as the daemon reads it."""
    skill = await _catalog().find(name, _workspace())
    if skill is None:
        raise NotFoundError(f"There is no skill named {name}.")
    return jsonify(skill.reading())


@bp.post("/api/skills")
async def post_skills() -> tuple[Response, int]:
    catalog = _catalog()
    body = await _body()
    try:
        skill = await catalog.create(body.name, body.description, body.body, body.title)
    except SkillExists as exc:
        raise Exists(str(exc)) from None
    return jsonify(skill.to_json()), 201


@bp.put("/api/skills/<name>")
async def put_skill(name: str) -> Response:
    catalog = _catalog()
    if await catalog.find(name) is None:  # an unknown name is 404 before the body is read
        raise NotFoundError(f"There is no skill named {name}.")
    body = await _body()
    if body.name != name:
        raise BadRequest(f"body.name ({body.name}) must be the skill's name in the path ({name}).")
    skill = await catalog.put(name, body.description, body.body, body.title)
    return jsonify(skill.to_json())


@bp.patch("/api/skills/<name>")
async def patch_skill(name: str) -> Response:
    catalog = _catalog()
    workspace = _workspace()
    if await catalog.find(name, workspace) is None:
        raise NotFoundError(f"There is no skill named {name}.")
    body = structure(parse_json(await request.get_data()), SkillSwitch)
    skill = await catalog.set_enabled(name, body.enabled, workspace)
    return jsonify(skill.to_json())


@bp.delete("/api/skills/<name>")
async def delete_skill(name: str) -> Response:
    catalog = _catalog()
    await catalog.delete(name)
    return jsonify({"deleted": name})
