"""What file_glob_search and grep_search share: the per-call time budget (and the
`poll` that enforces it with a stop), the thread
limiter both run behind, reading their common arguments (workspace, path, globs),
the titles' shortening, running a search in the worker thread with the path resolved
there, and the notes a walk leaves at the end of a result (out of time, unreadable
folders, folders not entered).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Concatenate, ParamSpec

import trio

from actors.errors import ToolError
from actors.fs.paths import resolve
from actors.tools import args as args_
from actors.tools.globs import Glob, compile_glob
from actors.tools.registry import ToolContext

SEARCH_BUDGET_S = 20.0  # one call stops walking/reading after this long
SEARCH_THREADS = 2  # calls searching at once; more wait for a thread
TITLE_CHARS = 60
MAX_GLOB_CHARS = 1000  # a longer include/exclude is refused (its compiled form grows with it)
MAX_UNENTERED_NAMED = 6  # how many unentered folder names the result lists

SEARCH_LIMITER = trio.CapacityLimiter(SEARCH_THREADS)

P = ParamSpec("P")


def search_root(ctx: ToolContext) -> Path:
    if ctx.workspace is None:
        raise ToolError("This conversation has no workspace, so there is nothing to search.")
    return Path(ctx.workspace)


def short(text: str, limit: int = TITLE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def where(args: dict[str, Any]) -> str:
    path = args.get("path")
    return short(path) if isinstance(path, str) and path not in ("", ".", "./") else "the workspace"


def glob_arg(args: dict[str, Any], name: str) -> Glob | None:
    pattern = args_.string(args, name, required=False)
    if pattern is None or (name == "include" and pattern.strip("/") == "**"):
        return None  # everything: no need to match
    if len(pattern) > MAX_GLOB_CHARS:
        raise ToolError(f'"{name}" is longer than {MAX_GLOB_CHARS} characters. Give a shorter glob.')
    return compile_glob(pattern)


def in_thread(search_fn: Callable[Concatenate[Path, P], str]) -> Callable[Concatenate[Path, str | None, P], str]:
    """`search_fn(base, ...)` taking the workspace and the path as given instead, so
    that resolving it (realpath, lstat) happens in the worker thread too."""

    def job(workspace: Path, path: str | None, /, *args: P.args, **kwargs: P.kwargs) -> str:
        return search_fn(resolve(workspace, path), *args, **kwargs)

    return job


def walk_notes(out_of_time: bool, unreadable: list[str], unentered: set[str], budget_s: float) -> list[str]:
    notes = []
    if out_of_time:
        notes.append(f"[results truncated: the search stopped after {budget_s:g} s. Search a smaller folder.]")
    if unreadable:
        notes.append(f"[{len(unreadable)} folders could not be read and were skipped]")
    if unentered:
        names = sorted(unentered)
        more = f" and {len(names) - MAX_UNENTERED_NAMED} more" if len(names) > MAX_UNENTERED_NAMED else ""
        notes.append(
            f"[not searched inside: {', '.join(names[:MAX_UNENTERED_NAMED])}{more}"
            " (pass such a folder as path to search it)]"
        )
    return notes


class OutOfTime(Exception):
    """A search ran past its time budget."""


def poller(check: Callable[[], None] | None, budget_s: float) -> Callable[[], None]:
    """A function a search calls between steps: it runs `check` (which raises on a
    stop) and raises OutOfTime once `budget_s` has passed since now."""
    deadline = time.monotonic() + budget_s

    def poll() -> None:
        if check is not None:
            check()
        if time.monotonic() > deadline:
            raise OutOfTime

    return poll
