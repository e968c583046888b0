"""GET /api/debug/actors: the live actor tree, for a person on this computer."""

from __future__ import annotations

from typing import Any

import attrs
from quart import Blueprint, Response, jsonify

from actors.actor import ActorStats
from bmoe_daemon.context import DaemonContext, daemon

bp = Blueprint("debug", __name__)


def _tree(stats: ActorStats) -> dict[str, Any]:
    out = attrs.asdict(stats, recurse=False)
    out["children"] = [_tree(c) for c in stats.children]
    return out


def _children(d: DaemonContext) -> tuple[ActorStats, ...]:
    """Every actor the daemon runs: the engine, the hub with its conversations, the MCP
    servers, the other agents (ACP), the scheduler and the search index, where this daemon has them."""
    out = [d.engine.statistics(), d.hub.statistics()]
    if d.mcp is not None:
        out.append(d.mcp.statistics())
    if d.acp is not None:
        out.append(d.acp.statistics())
    if d.scheduler is not None:
        out.append(d.scheduler.statistics())
    if d.search is not None:
        out.append(d.search.statistics())
    return tuple(out)


@bp.get("/api/debug/actors")
async def get_debug_actors() -> Response:
    d = daemon()
    root = ActorStats(
        kind="daemon",
        id="bmoe-daemon",
        state="serving",
        mailbox=0,
        children=_children(d),
    )
    body = _tree(root)
    body["events"] = {"last_id": d.bus.last_id, "subscribers": d.bus.subscribers}
    if d.writes is not None:
        body["http"] = {"writes_in_progress": d.writes.writes_in_progress,
                        "oldest_write_s": round(d.writes.oldest_write_s(), 3),
                        "connections_cut": d.writes.cut}
    return jsonify(body)
