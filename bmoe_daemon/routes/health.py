from __future__ import annotations

from quart import Blueprint, Response, jsonify

from bmoe_daemon import __version__
from bmoe_daemon.context import daemon

bp = Blueprint("health", __name__)


@bp.get("/health")
async def health() -> Response:
    engine = daemon().engine
    # Where a local model runs (GPU or CPU, and how many layers are offloaded); None
    # for no model or one that is not llama.cpp's (a test's scripted one).
    where = getattr(engine.backend, "device", None)
    state = engine.model_state()
    # `loaded`: the model is in memory now (--idle-unload lets it go; the next turn loads it again).
    return jsonify({"status": "ok", "version": __version__, "model": engine.model_id,
                    "device": where() if callable(where) else None,
                    "loaded": engine.loaded, "model_state": state.state if state is not None else None,
                    "sandbox": sandbox_status()})


def sandbox_status() -> dict[str, object] | None:
    """`{kind, available, why, setting, confined}`: whether the model's commands run in a
    sandbox (None where no command runs: chat-only)."""
    sandbox = daemon().sandbox
    return sandbox.status.to_json() if sandbox is not None else None
