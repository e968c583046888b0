"""GET /api/conversations/<id>/file?path=: a workspace file for the preview; and
GET /api/workspaces/<id>/files?q=: the workspace's files whose path holds `q`, for the
message box's @-mentions.

The listing walks the workspace as the search tools do (actors/tools/globs.py's walk:
no link followed, .git, node_modules and the like not entered), at most
MENTION_SCAN_ENTRIES entries and MENTION_BUDGET_S seconds, and answers at most
MENTION_MAX_RESULTS (50) workspace-relative paths, best first: a file name that starts
with `q`, then a path that does, then one that holds it (case ignored); shallower and
shorter first. `truncated` says a limit cut the walk.

Confined like the tools (actors/fs/paths.py), local clients only, a regular file
only (a FIFO or a device is refused, never waited on), at most PREVIEW_MAX_BYTES, and
served under a Content-Security-Policy sandbox of its own, so an HTML file the agent
wrote cannot run script against the daemon's origin.
"""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path

import trio
from quart import Blueprint, Response, jsonify, request

from actors.fs.paths import NotRegularFile, PathRefused, open_regular, read_fd, resolve
from actors.tools.globs import walk
from actors.tools.search_common import OutOfTime, poller
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import BadRequest, NotFoundError

bp = Blueprint("files", __name__)

PREVIEW_MAX_BYTES = 16 * 1024 * 1024
MENTION_MAX_RESULTS = 50
MENTION_SCAN_ENTRIES = 50_000
MENTION_BUDGET_S = 2.0
MENTION_MAX_QUERY_CHARS = 200
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


def _rank(path: str, q: str) -> tuple[int, int, int, str] | None:
    low = path.lower()
    name = low.rsplit("/", 1)[-1]
    if name.startswith(q):
        kind = 0
    elif low.startswith(q):
        kind = 1
    elif q in low:
        kind = 2
    else:
        return None
    return kind, low.count("/"), len(path), path


def find_files(root: Path, q: str, limit: int) -> tuple[list[str], bool]:
    """The files under `root` whose relative path holds `q` (lower case), best first;
    and whether a limit cut the walk short. Runs in a worker thread."""
    check = poller(None, MENTION_BUDGET_S)
    found: list[tuple[int, int, int, str]] = []
    truncated = False
    try:
        for seen, entry in enumerate(walk(root, sizes=False, check=check)):
            if seen >= MENTION_SCAN_ENTRIES:
                truncated = True
                break
            if entry.is_file and not entry.is_link:
                rel = entry.path.replace(os.sep, "/")
                ranked = _rank(rel, q)
                if ranked is not None:
                    found.append(ranked)
    except OutOfTime:
        truncated = True
    found.sort()
    return [r[3] for r in found[:limit]], truncated


@bp.get("/api/workspaces/<workspace_id>/files")
async def get_workspace_files(workspace_id: str) -> Response:
    root = daemon().hub.workspace_path(workspace_id)
    if root is None:
        raise NotFoundError("There is no such workspace.")
    q = request.args.get("q", "")
    if len(q) > MENTION_MAX_QUERY_CHARS:
        raise BadRequest(f"q is longer than {MENTION_MAX_QUERY_CHARS} characters; type less of the path.")
    raw_limit = request.args.get("limit", str(MENTION_MAX_RESULTS))
    if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= MENTION_MAX_RESULTS:
        raise BadRequest(f"limit is a whole number from 1 to {MENTION_MAX_RESULTS}.")
    try:
        files, truncated = await trio.to_thread.run_sync(find_files, root, q.lower(), int(raw_limit))
    except OSError as exc:
        raise NotFoundError(f"The workspace's folder cannot be read: {exc.strerror}.") from None
    return jsonify({"files": files, "truncated": truncated})
