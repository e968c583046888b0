"""The web UI: `/` and `/static/<path>`, plain files from bmoe_daemon/web/ (the
third-party modules it imports under web/vendor/, see its README.md).

The UI uses only the public API and `/api/events`, so it needs nothing the routes do
not give any client. Its pages run under a strict Content-Security-Policy: script,
style and everything else only from the daemon itself, no inline script, images also
from data URLs (pasted images), frames from the daemon (the file preview, itself
sandboxed) or a blob the page made (the preview when the daemon needs a key).
"""

from __future__ import annotations

from pathlib import Path

import trio
from quart import Blueprint, Response

from bmoe_daemon.errors import NotFoundError

bp = Blueprint("web", __name__)

WEB_DIR = Path(__file__).resolve().parent.parent / "web"

UI_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; frame-src 'self' blob:; font-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",  # DOMPurify's ES module build is named so
    ".css": "text/css; charset=utf-8",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}


def _headers(resp: Response) -> Response:
    resp.headers["Content-Security-Policy"] = UI_CSP
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Referrer-Policy"] = "no-referrer"
    resp.headers["X-Frame-Options"] = "DENY"
    # Small files, served from memory: always revalidate so an upgrade shows at once.
    resp.headers["Cache-Control"] = "no-cache"
    return resp


def _file(name: str) -> Path:
    """A file of the web folder, in a subfolder or not: no part empty or starting with a
    dot (so none leads out), no backslash or NUL, a known type, nothing behind a link."""
    parts = name.split("/")
    if any(not part or part.startswith(".") or "\\" in part or "\0" in part for part in parts):
        raise NotFoundError("There is no such file in the web UI.")
    path = WEB_DIR.joinpath(*parts)
    if path.suffix not in CONTENT_TYPES or not path.is_file() or not path.resolve().is_relative_to(WEB_DIR):
        raise NotFoundError("There is no such file in the web UI.")
    return path


async def _serve(path: Path) -> Response:
    data = await trio.Path(path).read_bytes()
    return _headers(Response(data, status=200, content_type=CONTENT_TYPES[path.suffix]))


@bp.get("/")
async def get_index() -> Response:
    return await _serve(_file("index.html"))


@bp.get("/static/<path:name>")
async def get_static(name: str) -> Response:
    return await _serve(_file(name))
