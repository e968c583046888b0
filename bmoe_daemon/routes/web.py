"""The web UI: `/` and `/static/<file>`, plain files from bmoe_daemon/web/.

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
    """A file directly in the web folder: no folders, no dots that lead out, a known type."""
    if not name or "/" in name or "\\" in name or name.startswith(".") or "\0" in name:
        raise NotFoundError("There is no such file in the web UI.")
    path = WEB_DIR / name
    if path.suffix not in CONTENT_TYPES or not path.is_file():
        raise NotFoundError("There is no such file in the web UI.")
    return path


async def _serve(path: Path) -> Response:
    data = await trio.Path(path).read_bytes()
    return _headers(Response(data, status=200, content_type=CONTENT_TYPES[path.suffix]))


@bp.get("/")
async def get_index() -> Response:
    return await _serve(_file("index.html"))


@bp.get("/static/<name>")
async def get_static(name: str) -> Response:
    return await _serve(_file(name))
