from __future__ import annotations

from quart import Blueprint, Response, jsonify

from bmoe_daemon import __version__
from bmoe_daemon.context import daemon

bp = Blueprint("health", __name__)


@bp.get("/health")
async def health() -> Response:
    return jsonify({"status": "ok", "version": __version__, "model": daemon().engine.model_id})
