"""GET /api/hooks: the person's hooks (`<data>/agent/hooks.json`), for a client on this
computer only: each with its last outcome (ran, blocked, failed, timed_out, stopped,
dropped; when), and why the file cannot be used when it cannot (its last good version
is). A daemon without hooks (--chat-only) answers `enabled: false` and no hooks.
"""

from __future__ import annotations

from quart import Blueprint, Response, jsonify

from bmoe_daemon.context import daemon

bp = Blueprint("hooks", __name__)


@bp.get("/api/hooks")
async def get_hooks() -> Response:
    hooks = daemon().hooks
    if hooks is None:
        return jsonify({"enabled": False, "file": None, "error": None, "error_at": None, "hooks": []})
    return jsonify({"enabled": True, **hooks.listing()})
