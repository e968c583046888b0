"""GET /api/folders?prefix=: the folders under the home folder whose path starts with
what was typed, for the web UI's path field (adding a workspace). Local clients only:
it names this computer's folders.

The answer never reaches outside the home folder: the folder the prefix names is
resolved (`..` and symbolic links followed) before it is read, and each folder in it is
resolved again, so a link that points out of home is left out. At most MAX_FOLDERS are
answered (`truncated` says there were more); hidden ones (a leading dot) only when asked
(`hidden=1`) or when the prefix's last part starts with a dot.
"""

from __future__ import annotations

import os
from pathlib import Path

import trio
from quart import Blueprint, Response, jsonify, request

from bmoe_daemon.errors import BadRequest

bp = Blueprint("folders", __name__)

MAX_FOLDERS = 50
MAX_PREFIX_CHARS = 4096
# A folder with more entries than this is read this far only: the field completes, it does not list.
MAX_SCANNED = 20_000
HIDDEN_VALUES = {"1": True, "true": True, "0": False, "false": False}


def _within(path: Path, home: Path) -> bool:
    return path == home or path.is_relative_to(home)


def folder_completions(home: Path, prefix: str, *, hidden: bool = False,
                       limit: int = MAX_FOLDERS) -> tuple[list[str], bool]:
    """The folders under `home` (itself resolved) whose path starts with `prefix`, written
    `~/...`, sorted by name without regard to case, at most `limit`; and whether there
    were more. `prefix` is `~/...`, an absolute path, or a path relative to home; one
    that names a folder outside home (after `..` and links) answers none."""
    home = home.resolve()
    typed = prefix.strip()
    if typed == "~" or typed.startswith("~/"):
        full = str(home) + typed[1:]
    elif os.path.isabs(typed):
        full = typed
    else:
        full = os.path.join(str(home), typed)
    if full.endswith("/") or typed in ("", "~"):
        parent, start = full, ""
    else:
        parent, start = os.path.split(full)
    try:
        folder = Path(parent).resolve(strict=True)
    except (OSError, RuntimeError):
        return [], False
    if not _within(folder, home) or not folder.is_dir():
        return [], False
    show_hidden = hidden or start.startswith(".")
    names: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for n, entry in enumerate(entries):
                if n >= MAX_SCANNED:
                    break
                name = entry.name
                if not name.startswith(start) or (name.startswith(".") and not show_hidden):
                    continue
                try:
                    if not entry.is_dir():  # follows a link: a link to a folder is a folder
                        continue
                    real = Path(entry.path).resolve(strict=True)
                except (OSError, RuntimeError):
                    continue
                if _within(real, home):
                    names.append(name)
    except OSError:
        return [], False
    names.sort(key=lambda s: (s.casefold(), s))
    # Written as typed (a link inside home keeps its name), else as resolved.
    lexical = Path(os.path.normpath(parent))
    shown = (lexical if _within(lexical, home) else folder).relative_to(home).as_posix()
    base = "~/" if shown == "." else f"~/{shown}/"
    return [base + name for name in names[:limit]], len(names) > limit


@bp.get("/api/folders")
async def get_folders() -> Response:
    prefix = request.args.get("prefix", "")
    if len(prefix) > MAX_PREFIX_CHARS:
        raise BadRequest(f"prefix is at most {MAX_PREFIX_CHARS} characters.")
    shown = request.args.getlist("hidden")
    if any(v not in HIDDEN_VALUES for v in shown):
        raise BadRequest("hidden is 1 (hidden folders too) or 0.")
    hidden = bool(shown) and HIDDEN_VALUES[shown[-1]]
    home = Path.home()
    folders, more = await trio.to_thread.run_sync(lambda: folder_completions(home, prefix, hidden=hidden))
    return jsonify({"home": str(home.resolve()), "folders": folders, "truncated": more})
