"""GET /openapi.json: the OpenAPI 3.1 description of every route (bmoe_daemon/openapi/,
built from the routes' own bodies: so this stands beside bmoe_daemon/routes/, not in it).

Open like /health: it says what the routes take and answer, nothing of this
computer's (no path, no key, no conversation). Built on the first request, then kept.
"""

from __future__ import annotations

from quart import Blueprint, Response, current_app, jsonify

bp = Blueprint("api_doc", __name__)

_KEPT = "bmoe.openapi"


@bp.get("/openapi.json")
async def get_openapi_json() -> Response:
    doc = current_app.extensions.get(_KEPT)
    if doc is None:
        from bmoe_daemon import openapi  # the builder (and jsonschema's) on the first request, not at start

        doc = current_app.extensions[_KEPT] = openapi.build(current_app)
    return jsonify(doc)
