"""One page of the conversation list (pure: no I/O, no actor).

The list is newest first by (updated, created, id), a total order, so a page ends at
a row whose key is the cursor of the next: `before` answers the rows strictly after
it in that order. A conversation created while someone pages is newer than every
cursor handed out, so it never moves a row across one: paging neither skips nor
repeats a row for it. (A conversation that changes while someone pages moves to the
top, as it does in the whole list.)
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Container, Iterable, Iterator

import attrs

from actors.record.items import CONVERSATION_STATES, ConversationInfo, ConversationState

MAX_PAGE = 1000
MAX_QUERY_CHARS = 200

Key = tuple[float, float, str]


class BadPage(ValueError):
    """A page asked for in a way that cannot be answered; the text says what to send."""


@attrs.frozen
class PageQuery:
    limit: int | None = None  # None: every row that matches
    before: Key | None = None
    q: str | None = None  # a part of the title, any case (or the words inside: the route's `inside`)
    task: str | None = None
    state: ConversationState | None = None  # only the conversations in this state (`waiting`: the person's turn)
    titles_only: bool = False  # `match=title`: `q` looks at titles only


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
    state = next((s for s in CONVERSATION_STATES if s == args.get("state")), None)
    if state is None and "state" in args:
        raise BadPage(f"`state` is one of {', '.join(CONVERSATION_STATES)}; leave it out to list every state.")
    match = args.get("match", "all")
    if match not in ("all", "title"):
        raise BadPage("`match` is `all` (titles and the words inside) or `title`; leave it out for `all`.")
    return PageQuery(limit, before, q.casefold() if q else None, task, state, match == "title")


def page(infos: Iterable[ConversationInfo], query: PageQuery) -> tuple[list[ConversationInfo], str | None]:
    """The rows of the page, newest first, and the cursor of the next page (None when
    this one is the last), from rows in any order."""
    shelf = Shelf()
    shelf.fill(infos)
    return page_of_ordered(shelf.newest_first(query.before), query)


def page_of_ordered(
    rows: Iterable[ConversationInfo], query: PageQuery, visible: Callable[[ConversationInfo], bool] = lambda _: True,
    inside: Container[str] = frozenset(),
) -> tuple[list[ConversationInfo], str | None]:
    """As `page`, from rows already newest first and after `query.before` (a Shelf's
    `newest_first`): the walk ends once the page and one more row are found, so the
    first page costs what it holds, not what the history holds. `inside`: the ids of
    the conversations whose words match `query.q` (the search index's), which match it
    as well as a title that holds it."""
    out: list[ConversationInfo] = []
    want = None if query.limit is None else query.limit + 1
    for info in rows:
        if query.task is not None and info.task != query.task:
            continue
        if query.q is not None and query.q not in info.title.casefold() and info.id not in inside:
            continue
        if query.state is not None and info.state != query.state:
            continue
        if not visible(info):
            continue
        out.append(info)
        if want is not None and len(out) == want:
            break
    if query.limit is None or len(out) <= query.limit:
        return out, None
    return out[: query.limit], cursor(out[query.limit - 1])


class Shelf:
    """Conversations kept in list order (their keys sorted), for the ones that do not
    change while they rest (the hub's asleep ones): a page walks from the newest
    without sorting the rest. Pure: no I/O."""

    def __init__(self) -> None:
        self._by_id: dict[str, ConversationInfo] = {}
        self._keys: list[Key] = []  # ascending

    def fill(self, infos: Iterable[ConversationInfo]) -> None:
        """Put many at once (one sort)."""
        for info in infos:
            old = self._by_id.get(info.id)
            if old is not None:
                self._keys.remove(key(old))
            self._by_id[info.id] = info
        self._keys = sorted(key(i) for i in self._by_id.values())

    def put(self, info: ConversationInfo) -> None:
        self.pop(info.id)
        self._by_id[info.id] = info
        bisect.insort(self._keys, key(info))

    def pop(self, conversation_id: str) -> ConversationInfo | None:
        info = self._by_id.pop(conversation_id, None)
        if info is not None:
            k = key(info)
            i = bisect.bisect_left(self._keys, k)
            if i < len(self._keys) and self._keys[i] == k:
                del self._keys[i]
        return info

    def get(self, conversation_id: str) -> ConversationInfo | None:
        return self._by_id.get(conversation_id)

    def __contains__(self, conversation_id: object) -> bool:
        return conversation_id in self._by_id

    def __len__(self) -> int:
        return len(self._by_id)

    def values(self) -> Iterable[ConversationInfo]:
        return self._by_id.values()

    def newest_first(self, before: Key | None = None) -> Iterator[ConversationInfo]:
        """Newest first, from the first row strictly after `before` in list order."""
        end = len(self._keys) if before is None else bisect.bisect_left(self._keys, before)
        for i in range(end - 1, -1, -1):
            yield self._by_id[self._keys[i][2]]


def merged_newest_first(
    shelf: Shelf, others: Iterable[ConversationInfo], before: Key | None = None,
) -> Iterator[ConversationInfo]:
    """The shelf's rows and `others` (a few, in any order: the live ones) as one list,
    newest first, after `before`."""
    live = sorted((i for i in others if before is None or key(i) < before), key=key, reverse=True)
    return heapq.merge(shelf.newest_first(before), live, key=key, reverse=True)
