"""GET /api/usage: what the answers used and cost, summed from the usage ledger
(actors/model/usage.py, never the conversations' files), for a client on this computer
only (it names every conversation and provider).

Query: `by` one of conversation, task, provider, model, day (default provider);
`since` a date "YYYY-MM-DD" (local midnight) or an ISO date and time; `conversation`
or `task` an id, to sum one conversation's or one task's answers only. Anything else,
or a value that does not read, is a 400 saying what is taken.
"""

from __future__ import annotations

from typing import Any

from quart import Blueprint, Response, jsonify, request

from actors.errors import NotFound
from actors.model.usage import GROUPINGS, Grouping, UsageLedger, parse_since
from actors.scheduling.schedule import local_zone
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import BadRequest

bp = Blueprint("usage", __name__)

PARAMS = ("by", "since", "conversation", "task")
MAX_ID_CHARS = 200


def _ledger() -> UsageLedger:
    ledger = daemon().usage
    if ledger is None:
        raise BadRequest("This daemon keeps no usage ledger, so it has no usage to sum.")
    return ledger


def _query(args: dict[str, str]) -> tuple[Grouping, float | None, str | None, str | None]:
    unknown = sorted(set(args) - set(PARAMS))
    if unknown:
        raise BadRequest(f"Unknown query parameter {', '.join(unknown)}; GET /api/usage takes {', '.join(PARAMS)}.")
    by = args.get("by", "provider")
    if by not in GROUPINGS:
        raise BadRequest(f"by must be one of {', '.join(GROUPINGS)}.")
    since = None
    if "since" in args:
        try:
            since = parse_since(args["since"], local_zone())
        except (ValueError, OverflowError, OSError) as exc:
            raise BadRequest(str(exc) if isinstance(exc, ValueError) else "since is out of range.") from None
    conversation, task = args.get("conversation"), args.get("task")
    for name, value in (("conversation", conversation), ("task", task)):
        if value is not None and not 0 < len(value) <= MAX_ID_CHARS:
            raise BadRequest(f"{name} must be an id of 1 to {MAX_ID_CHARS} characters.")
    return by, since, conversation, task


def _label(by: str, key: str | None) -> str | None:
    """What the person calls the group: a conversation's or a task's title, a provider's name."""
    ctx = daemon()
    if key is None:
        return None
    try:
        if by == "conversation":
            return ctx.hub.peek(key).title or None
        if by == "task" and ctx.scheduler is not None:
            return str(ctx.scheduler.get(key)["title"])
    except NotFound:
        return None  # deleted since: what it spent stays
    if by == "provider":
        if key == "local":
            return "This computer"
        if ctx.providers is not None:
            found = next((p for p in ctx.providers.listing() if p["id"] == key), None)
            return str(found["name"]) if found is not None else None
    return None


@bp.get("/api/usage")
async def get_usage() -> Response:
    by, since, conversation, task = _query(request.args.to_dict())
    ledger = _ledger()
    await ledger.wait_loaded()  # read in the background as the daemon starts
    report: dict[str, Any] = ledger.report(by, since=since, conversation=conversation, task=task)
    for group in report["groups"]:
        group["label"] = _label(by, group["key"])
    return jsonify(report)
