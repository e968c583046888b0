"""GET /api/conversations/<id>/file?path=: a workspace file for the preview.

Confined like the tools (actors/fs/paths.py), local clients only, a regular file
only (a FIFO or a device is refused, never waited on), at most PREVIEW_MAX_BYTES, and
served under a Content-Security-Policy sandbox of its own, so an HTML file the agent
wrote cannot run script against the daemon's origin.
"""

from __future__ import annotations

import mimetypes
import os

import trio
from quart import Blueprint, Response, request

from actors.fs.paths import NotRegularFile, PathRefused, open_regular, read_fd, resolve
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import BadRequest, NotFoundError

bp = Blueprint("files", __name__)

PREVIEW_MAX_BYTES = 16 * 1024 * 1024
PREVIEW_CSP = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; media-src 'self'"


def _read(path: str) -> bytes:
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size > PREVIEW_MAX_BYTES:
            raise OverflowError(size)
        return read_fd(fd, PREVIEW_MAX_BYTES + 1)
    finally:
        os.close(fd)


@bp.get("/api/conversations/<conversation_id>/file")
async def get_conversation_file(conversation_id: str) -> Response:
    info = daemon().hub.peek(conversation_id)
    raw = request.args.get("path")
    if not raw:
        raise BadRequest("Give the file with ?path=<path relative to the workspace>.")
    ws_id = info.workspace
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
    except NotRegularFile as exc:
        if exc.is_folder:
            raise BadRequest("That path is a folder, not a file.") from None
        raise BadRequest(f"That path is {exc.kind}, not a regular file; it is not previewed.") from None
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
