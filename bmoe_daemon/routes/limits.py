"""GET /api/limits: the limits the daemon enforces that the web UI shows or keeps to:
a field's bounds and default, how many images go with a message, how long a denial's
reason may be, the share of the context past which a run compacts, the most rows one
read of the conversation list gives.

Each is the named constant of the module that enforces it, so the page never writes
one a second time (bmoe_daemon/web/limits.js). Nothing here is this computer's: any
client that passes the key may read them.
"""

from __future__ import annotations

import functools

from quart import Blueprint, Response, jsonify

bp = Blueprint("limits", __name__)


@functools.cache
def limits() -> dict[str, dict[str, int | float]]:
    """The table, made at its first read: its constants live in the modules that enforce them,
    most of which a daemon does not import until a run needs them."""
    from actors.model.providers.entries import DEFAULT_CONTEXT_LENGTH, MAX_CONTEXT_LENGTH, MAX_PRICE, MIN_CONTEXT_LENGTH
    from actors.record.budget import MAX_BUDGET_COST, MAX_BUDGET_TOKENS
    from actors.record.cards import MAX_FEEDBACK_CHARS
    from actors.record.listing import MAX_PAGE
    from actors.runs.agent.compaction_cut import TRIGGER
    from actors.runs.agent.run_tools.background import STALL_S
    from actors.scheduling.schedule import MAX_EVERY_MINUTES, MIN_EVERY_MINUTES
    from actors.scheduling.scheduler import DEFAULT_KEEP_RUNS, MAX_KEEP_RUNS
    from bmoe_daemon.bodies import MAX_IMAGES
    from bmoe_daemon.models import MAX_CTX, MIN_CTX

    # Keyed by the field or parameter each bounds; `max` of `feedback` is in characters.
    return {
        "conversations_limit": {"max": MAX_PAGE},  # GET /api/conversations?limit=
        "images": {"max": MAX_IMAGES},  # a message's images
        "feedback": {"max": MAX_FEEDBACK_CHARS},  # the reason that goes with a deny
        "compaction": {"at": TRIGGER},  # of the context: a round whose prompt passes it compacts first
        "ctx_size": {"min": MIN_CTX, "max": MAX_CTX},  # PUT /api/model
        "context_length": {"min": MIN_CONTEXT_LENGTH, "max": MAX_CONTEXT_LENGTH,  # a provider's model's
                           "default": DEFAULT_CONTEXT_LENGTH},
        "keep_runs": {"max": MAX_KEEP_RUNS, "default": DEFAULT_KEEP_RUNS},  # a task's
        "every_minutes": {"min": MIN_EVERY_MINUTES, "max": MAX_EVERY_MINUTES},  # a task's interval schedule
        "budget_tokens": {"min": 1, "max": MAX_BUDGET_TOKENS},  # a conversation's, task's or message's budget
        "budget_cost": {"max": MAX_BUDGET_COST},  # US dollars, more than 0
        "price": {"min": 0, "max": MAX_PRICE},  # a provider's, US dollars per million tokens
        "helper_stall_s": {"default": STALL_S},  # seconds without progress before a working helper is flagged
    }


@bp.get("/api/limits")
async def get_limits() -> Response:
    return jsonify(limits())
