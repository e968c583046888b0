"""One page of the conversation list (pure: no I/O, no actor).

The list is newest first by (updated, created, id), a total order, so a page ends at
a row whose key is the cursor of the next: `before` answers the rows strictly after
it in that order. A conversation created while someone pages is newer than every
cursor handed out, so it never moves a row across one: paging neither skips nor
repeats a row for it. (A conversation that changes while someone pages moves to the
top, as it does in the whole list.)
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

import attrs

from actors.items import ConversationInfo

MAX_PAGE = 1000
MAX_QUERY_CHARS = 200

Key = tuple[float, float, str]


class BadPage(ValueError):
    """A page asked for in a way that cannot be answered; the text says what to send."""


@attrs.frozen
class PageQuery:
    limit: int | None = None  # None: every row that matches
    before: Key | None = None
    q: str | None = None  # a part of the title, any case
    task: str | None = None


def key(info: ConversationInfo) -> Key:
    return (info.updated, info.created, info.id)


def cursor(info: ConversationInfo) -> str:
    """The `before` that asks for the rows after this one."""
    return f"{info.updated!r}_{info.created!r}_{info.id}"


def parse_cursor(text: str) -> Key:
    parts = text.split("_", 2)
    try:
        if len(parts) != 3 or not parts[2]:
            raise ValueError(text)
        return (float(parts[0]), float(parts[1]), parts[2])
    except ValueError:
        raise BadPage("`before` is not a cursor this list gave: pass the X-Next-Before of the last page.") from None


def parse_query(args: dict[str, str]) -> PageQuery:
    """The page a request's query string asks for; BadPage for a parameter that is wrong."""
    limit = None
    raw = args.get("limit")
    if raw is not None:
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_PAGE:
            raise BadPage(f"`limit` is a whole number from 1 to {MAX_PAGE}.")
        limit = int(raw)
    before = parse_cursor(args["before"]) if "before" in args else None
    q = args.get("q")
    if q is not None and len(q) > MAX_QUERY_CHARS:
        raise BadPage(f"`q` is at most {MAX_QUERY_CHARS} characters.")
    task = args.get("task")
    if task is not None and not task:
        raise BadPage("`task` names a task (its id); leave it out to list every conversation.")
    return PageQuery(limit, before, q.casefold() if q else None, task)


def page(infos: Iterable[ConversationInfo], query: PageQuery) -> tuple[list[ConversationInfo], str | None]:
    """The rows of the page, newest first, and the cursor of the next page (None when
    this one is the last)."""
    rows: Iterable[ConversationInfo] = infos
    if query.task is not None:
        rows = (i for i in rows if i.task == query.task)
    if query.q is not None:
        needle = query.q
        rows = (i for i in rows if needle in i.title.casefold())
    if query.before is not None:
        before = query.before
        rows = (i for i in rows if key(i) < before)
    if query.limit is None:
        return sorted(rows, key=key, reverse=True), None
    top = heapq.nlargest(query.limit + 1, rows, key=key)
    if len(top) <= query.limit:
        return top, None
    return top[: query.limit], cursor(top[query.limit - 1])
