"""Response helpers shared by the routes that stream."""

from __future__ import annotations

from quart import Response
from werkzeug.wrappers import Response as WerkzeugResponse


def no_timeout(resp: Response | WerkzeugResponse) -> Response:
    """A streamed response with Quart's response timeout off (it lasts as long as its
    client reads); `make_response` types its answer loosely, so this narrows it."""
    assert isinstance(resp, Response)
    resp.timeout = None
    return resp
