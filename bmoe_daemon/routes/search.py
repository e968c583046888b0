"""GET /api/search: the matches of words inside conversations (bmoe_daemon/fulltext.py).

The list's own `q` (GET /api/conversations) keeps the list's order and cursor and asks
the same index only which conversations hold the words (one snippet a row); this route
answers ranked matches, one row per item (or title) with its snippet, paged by `offset`. A client on
the network searches only the conversations it may list (none with a workspace or a
provider route)."""

from __future__ import annotations

from quart import Blueprint, Response, jsonify, request

from bmoe_daemon.context import daemon, is_local
from bmoe_daemon.errors import BadRequest, NotFoundError
from bmoe_daemon.fulltext import MAX_LIMIT, MAX_OFFSET, BadQuery

bp = Blueprint("search", __name__)

DEFAULT_LIMIT = 20


def _whole(name: str, low: int, high: int, default: int) -> int:
    raw = request.args.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise BadRequest(f"`{name}` is a whole number from {low} to {high}.")
    return int(raw)


@bp.get("/api/search")
async def get_search() -> Response:
    """`q` (the words; the last one may be a beginning), `workspace`, `limit`, `offset`:
    {results: [{conversation, title, item, kind, snippet, marks, updated, workspace}],
    next_offset, indexing}."""
    d = daemon()
    q = request.args.get("q")
    if q is None:
        raise BadRequest("Give `q`: the words to look for.")
    workspace = request.args.get("workspace")
    if workspace is not None and d.hub.workspace_path(workspace) is None:
        raise BadRequest("There is no such workspace: leave `workspace` out to search every conversation.")
    limit = _whole("limit", 1, MAX_LIMIT, DEFAULT_LIMIT)
    offset = _whole("offset", 0, MAX_OFFSET, 0)
    if d.search is None:
        raise NotFoundError("This daemon keeps no search index (an app built without one, as in some tests).")
    try:
        answer = await d.search.search(q, workspace=workspace, local=is_local(), limit=limit, offset=offset)
    except BadQuery as exc:
        raise BadRequest(str(exc)) from None
    return jsonify({"results": [h.to_json() for h in answer.hits],
                    "next_offset": offset + limit if answer.more and offset + limit <= MAX_OFFSET else None,
                    "indexing": answer.indexing})
