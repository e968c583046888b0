"""The file_glob_search tool: the folder walk matched against include/exclude globs
(`glob_search`, run in a worker thread) and the tool that offers it (`FileGlobSearch`).

The result's shape and the walk's rules are in actors/tools/search.py's docstring.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import trio

from actors.errors import ToolError
from actors.tools import args as args_
from actors.tools.globs import UNENTERED_DIRS, Glob, walk
from actors.tools.registry import ToolContext, ToolOutcome
from actors.tools.search_common import (
    SEARCH_BUDGET_S,
    SEARCH_LIMITER,
    OutOfTime,
    glob_arg,
    in_thread,
    poller,
    search_root,
    short,
    walk_notes,
    where,
)

MAX_GLOB_RESULTS = 100  # file_glob_search: default and most entries shown
_KINDS = ("file", "dir", "all")


def glob_search(
    base: Path,
    *,
    include: Glob | None = None,
    exclude: Glob | None = None,
    kind: str = "file",
    max_depth: int = 0,
    limit: int = MAX_GLOB_RESULTS,
    check: Callable[[], None] | None = None,
    budget_s: float = SEARCH_BUDGET_S,
) -> str:
    """The file_glob_search result for the folder `base` (already confined).

    Raises ToolError when `base` is not a folder; whatever `check` raises stops it.
    """
    if not base.is_dir():
        raise ToolError(
            f"{base.name or base} is not a folder. Give a folder as path (or leave it out to search the workspace)."
            if base.exists()
            else "That folder does not exist. Leave path out to search the whole workspace."
        )
    unreadable: list[str] = []
    unentered: set[str] = set()
    shown: list[str] = []
    total = 0
    out_of_time = False

    poll = poller(check, budget_s)
    want_dirs, want_files = kind in ("dir", "all"), kind in ("file", "all")
    prune = exclude.match if exclude is not None else None
    try:
        for entry in walk(
            base, max_depth, sizes=False, prune=prune, check=poll, on_error=lambda rel, exc: unreadable.append(rel)
        ):
            if entry.is_dir:
                if not entry.is_link and entry.path.rpartition("/")[2] in UNENTERED_DIRS:
                    unentered.add(entry.path.rpartition("/")[2])
                if not want_dirs:
                    continue
            elif not (entry.is_file and want_files):
                continue
            if include is not None and not include.match(entry.path):
                continue
            if exclude is not None and not entry.is_dir and exclude.match(entry.path):
                continue
            total += 1
            if len(shown) < limit:
                shown.append(entry.path + "/" if entry.is_dir else entry.path)
    except OutOfTime:
        out_of_time = True

    lines = [*shown, "", "---", f"Total matches: {total}"]
    if total > len(shown):
        lines.append(
            f"[{len(shown)} results limit reached ({total} total matches); {total - len(shown)} more not shown."
            " Refine the glob pattern to narrow the search.]"
        )
    lines.extend(walk_notes(out_of_time, unreadable, unentered, budget_s))
    return "\n".join(lines) + "\n"


@attrs.frozen
class FileGlobSearch:
    """The `file_glob_search` tool. `limiter` bounds the worker threads (shared by default)."""

    limiter: trio.CapacityLimiter | None = None
    name: str = "file_glob_search"
    description: str = (
        "List the files whose path matches a glob (`*` inside a name, `**` across folders; no '/' matches "
        "the name at any depth). Dependency and build folders are not searched inside. "
        'Example: {"include": "*.py"}'
    )
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Folder to search in (default: the workspace)"},
                "include": {
                    "type": "string",
                    "description": 'Glob for the entries to list (e.g. "*.py" or "src/**/*.ts"). Default: **',
                },
                "exclude": {
                    "type": "string",
                    "description": "Glob for entries to leave out; a folder it matches is left out with all under it",
                },
                "type": {
                    "type": "string",
                    "enum": list(_KINDS),
                    "description": 'Entries to list: "file" (default), "dir" or "all"',
                },
                "max_depth": {
                    "type": "integer",
                    "description": "How deep to go (default 0 = no limit; 1 = the folder's own entries only)",
                },
                "limit": {
                    "type": "integer",
                    "description": f"Most entries to list, at most {MAX_GLOB_RESULTS} (default {MAX_GLOB_RESULTS})",
                },
            },
            "required": [],
        }
    )
    needs_workspace: bool = True

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return False

    def title(self, args: dict[str, Any]) -> str:
        include = args.get("include")
        kind = args.get("type")
        what = "folders" if kind == "dir" else "files and folders" if kind == "all" else "files"
        if isinstance(include, str) and include.strip("/") not in ("", "**"):
            what = short(include)
        return f"Find {what} in {where(args)}"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        """Cancelling the call stops the walk at its next folder."""
        workspace = search_root(ctx)
        path = args_.string(args, "path", required=False)
        kind = args_.string(args, "type", required=False) or "file"
        if kind not in _KINDS:
            raise ToolError(f'"type" must be "file", "dir" or "all" (got "{short(kind)}").')
        job = functools.partial(
            in_thread(glob_search),
            workspace,
            path,
            include=glob_arg(args, "include"),
            exclude=glob_arg(args, "exclude"),
            kind=kind,
            max_depth=args_.whole(args, "max_depth", 0, minimum=0),
            limit=min(args_.whole(args, "limit", MAX_GLOB_RESULTS, minimum=1), MAX_GLOB_RESULTS),
            check=trio.from_thread.check_cancelled,
        )
        return ToolOutcome(await trio.to_thread.run_sync(job, limiter=self.limiter or SEARCH_LIMITER))
