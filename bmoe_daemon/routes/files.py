"""GET /api/conversations/<id>/file?path=: a workspace file for the preview.

Confined like the tools (actors/tools/paths.py), local clients only, at most
PREVIEW_MAX_BYTES, and served under a Content-Security-Policy sandbox of its own, so an
HTML file the agent wrote cannot run script against the daemon's origin.
"""

from __future__ import annotations

import mimetypes
import os
import stat

import trio
from quart import Blueprint, Response, request

from actors.tools.paths import PathRefused, resolve
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import BadRequest, NotFoundError

bp = Blueprint("files", __name__)

PREVIEW_MAX_BYTES = 16 * 1024 * 1024
PREVIEW_CSP = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; media-src 'self'"


def _read(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(path)
        if st.st_size > PREVIEW_MAX_BYTES:
            raise OverflowError(st.st_size)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(PREVIEW_MAX_BYTES + 1)
    finally:
        os.close(fd)


@bp.get("/api/conversations/<conversation_id>/file")
async def get_conversation_file(conversation_id: str) -> Response:
    conv = daemon().hub.get(conversation_id)
    raw = request.args.get("path")
    if not raw:
        raise BadRequest("Give the file with ?path=<path relative to the workspace>.")
    ws_id = conv.info.workspace
    root = daemon().hub.workspace_path(ws_id) if ws_id else None
    if root is None:
        raise NotFoundError("This conversation has no workspace.")
    try:
        path = resolve(root, raw)
    except PathRefused as exc:
        raise NotFoundError(str(exc)) from None
    try:
        data = await trio.to_thread.run_sync(_read, str(path))
    except FileNotFoundError:
        raise NotFoundError("There is no such file in the workspace.") from None
    except IsADirectoryError:
        raise BadRequest("That path is a folder, not a file.") from None
    except OverflowError:
        limit = PREVIEW_MAX_BYTES // (1024 * 1024)
        raise BadRequest(f"The file is larger than {limit} MiB; it is not previewed.") from None
    except OSError as exc:
        raise NotFoundError(f"The file cannot be read: {exc.strerror}.") from None
    if len(data) > PREVIEW_MAX_BYTES:
        raise BadRequest("The file grew past the preview limit while it was read.")
    ctype = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if ctype.startswith("text/") or ctype in ("application/json", "application/javascript"):
        ctype += "; charset=utf-8"
    resp = Response(data, status=200, content_type=ctype)
    resp.headers["Content-Security-Policy"] = PREVIEW_CSP
    resp.headers["X-Content-Type-Options"] = "nosniff"
    resp.headers["Cache-Control"] = "no-store"
    return resp
