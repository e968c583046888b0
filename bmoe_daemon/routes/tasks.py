"""The task routes: prompts the scheduler runs as conversations, for a client on this
computer only (a task runs in a workspace here, unattended)."""

from __future__ import annotations

from typing import Any

import attrs
from quart import Blueprint, Response, jsonify, request

from actors.record.budget import check_budget
from actors.record.modes import Mode
from actors.scheduling.schedule import InvalidSchedule, parse_schedule
from actors.scheduling.scheduler import DEFAULT_KEEP_RUNS, Scheduler, TaskSpec
from bmoe_daemon.bodies import check_route, parse_json, structure
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import BadRequest

bp = Blueprint("tasks", __name__)


@attrs.frozen
class TaskBody:
    """`POST /api/tasks`; `PUT /api/tasks/<id>` takes any of these fields and keeps the rest."""

    prompt: str
    schedule: dict[str, Any]
    title: str | None = None
    workspace: str | None = None
    mode: Mode = "read_only"
    route: str = "local"
    enabled: bool = True
    keep_runs: int = DEFAULT_KEEP_RUNS  # the runs kept, newest first; older ones are deleted
    # {tokens, cost}: what each run may spend (its conversation carries it); null: no limit
    budget: dict[str, Any] | None = None


_FIELD_TYPES: dict[str, Any] = {f.name: f.type for f in attrs.fields(TaskBody)}


def _scheduler() -> Scheduler:
    scheduler = daemon().scheduler
    if scheduler is None:
        raise BadRequest("This daemon runs as plain chat (--chat-only): it has no tasks.")
    return scheduler


def _check_route(route: str) -> None:
    check_route(route)
    providers = daemon().providers
    if route != "local" and (providers is None or not providers.knows(route)):
        name = route.partition("/")[0]
        raise BadRequest(f"There is no saved provider {name!r}; save it first or pick another route.")


def _schedule(raw: Any) -> Any:
    try:
        return parse_schedule(raw)
    except InvalidSchedule as exc:
        raise BadRequest(str(exc)) from None


async def _body() -> dict[str, Any]:
    return parse_json(await request.get_data())


@bp.get("/api/tasks")
async def get_tasks() -> Response:
    return jsonify(_scheduler().tasks())


@bp.post("/api/tasks")
async def post_tasks() -> tuple[Response, int]:
    scheduler = _scheduler()
    body = structure(await _body(), TaskBody)
    schedule = _schedule(body.schedule)
    _check_route(body.route)
    spec = TaskSpec(prompt=body.prompt, schedule=schedule, title=body.title, workspace=body.workspace,
                    mode=body.mode, route=body.route, enabled=body.enabled, keep_runs=body.keep_runs,
                    budget=check_budget(body.budget))
    return jsonify(await scheduler.create(spec)), 201


@bp.put("/api/tasks/<task_id>")
async def put_task(task_id: str) -> Response:
    scheduler = _scheduler()
    scheduler.get(task_id)  # an unknown id is 404 before the body is read
    data = await _body()
    unknown = sorted(set(data) - set(_FIELD_TYPES))
    if unknown:
        raise BadRequest(f"Unknown task fields: {', '.join(unknown)}.")
    # Each field given is checked as a POST checks it; the ones not given are kept.
    partial = structure({"prompt": "", "schedule": {}, **data}, TaskBody)
    changes: dict[str, Any] = {name: getattr(partial, name) for name in data}
    if "schedule" in changes:
        changes["schedule"] = _schedule(changes["schedule"])
    if "route" in changes:
        _check_route(changes["route"])
    if "budget" in changes:
        changes["budget"] = check_budget(changes["budget"])
    return jsonify(await scheduler.update(task_id, changes))


@bp.delete("/api/tasks/<task_id>")
async def delete_task(task_id: str) -> Response:
    await _scheduler().delete(task_id)
    return jsonify({"deleted": task_id})


@bp.post("/api/tasks/<task_id>/run")
async def post_task_run(task_id: str) -> tuple[Response, int]:
    return jsonify(await _scheduler().run_now(task_id)), 202
