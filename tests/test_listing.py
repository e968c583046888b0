"""The conversation list's pages (actors/record/listing.py)."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.record import listing
from actors.record.items import ConversationInfo


def info(n: int, updated: float, created: float, title: str = "", task: str | None = None) -> ConversationInfo:
    return ConversationInfo(id=f"c{n}", title=title, workspace=None, mode="ask", route="local", agent="builtin",
                            state="idle", created=created, updated=updated, task=task)


_times = st.sampled_from([1.0, 2.0, 2.5, 3.0])  # few values: many ties, which the id breaks


@settings(max_examples=200, deadline=None)
@given(
    first=st.lists(st.tuples(_times, _times, st.sampled_from([None, "t1"])), max_size=30),
    limit=st.integers(1, 7),
    created_between=st.lists(st.integers(0, 4), max_size=12),
    task=st.sampled_from([None, "t1"]),
)
def test_paging_never_skips_or_repeats_while_conversations_are_created(first, limit, created_between, task) -> None:
    rows = [info(n, u, c, task=t) for n, (u, c, t) in enumerate(first)]
    clock = 10.0
    seen: list[str] = []
    before = None
    for step in range(len(rows) + sum(created_between) + 2):  # a page for every row there will be, and the end
        # New conversations come between the pages: newer than anything listed so far.
        for _ in range(created_between[step] if step < len(created_between) else 0):
            clock += 1
            rows.append(info(len(rows), clock, clock, task=task))
        got, before_next = listing.page(rows, listing.PageQuery(limit=limit, before=before, task=task))
        assert len(got) <= limit
        seen += [i.id for i in got]
        if before_next is None:
            break
        before = listing.parse_cursor(before_next)
    wanted = [i.id for i in rows[: len(first)] if task is None or i.task == task]
    assert len(seen) == len(set(seen)), "a conversation was listed twice"
    assert set(wanted) <= set(seen), "a conversation that was there from the start was skipped"
    order = {i.id: listing.key(i) for i in rows}
    assert [order[i] for i in seen] == sorted((order[i] for i in seen), reverse=True)


def test_without_a_limit_the_answer_is_the_whole_list_newest_first() -> None:
    rows = [info(1, 5.0, 1.0), info(2, 9.0, 2.0), info(3, 5.0, 3.0)]
    got, after = listing.page(rows, listing.PageQuery())
    assert [i.id for i in got] == ["c2", "c3", "c1"] and after is None


def test_q_searches_titles_in_any_case() -> None:
    rows = [info(1, 1.0, 1.0, "Fix the Build"), info(2, 2.0, 2.0, "notes"), info(3, 3.0, 3.0, "build again")]
    got, _ = listing.page(rows, listing.parse_query({"q": "BUILD"}))
    assert [i.id for i in got] == ["c3", "c1"]


def test_state_lists_the_conversations_in_that_state_only() -> None:
    waiting = [attrs.evolve(info(int(n), n, n), state="waiting") for n in (1.0, 3.0)]
    rows = [waiting[0], info(2, 2.0, 2.0), waiting[1]]
    got, after = listing.page(rows, listing.parse_query({"state": "waiting", "limit": "1"}))
    assert [i.id for i in got] == ["c3"] and after is not None
    got, _ = listing.page(rows, listing.parse_query({"state": "waiting", "before": after}))
    assert [i.id for i in got] == ["c1"]


@pytest.mark.parametrize("args", [{"limit": "0"}, {"limit": "-1"}, {"limit": "x"}, {"limit": "1001"}, {"limit": ""},
                                  {"before": "nope"}, {"before": "1.0_2.0_"}, {"before": "a_b_c"}, {"task": ""},
                                  {"q": "x" * 201}, {"state": "asleep"}, {"state": ""}])
def test_bad_parameters_are_refused_with_what_to_send(args: dict[str, str]) -> None:
    with pytest.raises(listing.BadPage) as exc:
        listing.parse_query(args)
    assert str(exc.value)


def test_a_cursor_round_trips() -> None:
    row = info(7, 1700000000.123456, 1699999999.5)
    assert listing.parse_cursor(listing.cursor(row)) == listing.key(row)


@settings(max_examples=200, deadline=None)
@given(
    rows=st.lists(st.tuples(_times, _times), min_size=1, max_size=25),
    moves=st.lists(st.tuples(st.integers(0, 24), st.booleans(), _times), max_size=30),
    before_at=st.integers(0, 30),
)
def test_a_shelf_and_the_live_ones_merge_into_the_list_order_as_they_come_and_go(rows, moves, before_at) -> None:
    """The hub's asleep conversations on a Shelf and its live ones (whose `updated`
    changes) give the same order as sorting them all, after any wakes and sleeps."""
    infos = {f"c{n}": info(n, u, c) for n, (u, c) in enumerate(rows)}
    shelf = listing.Shelf()
    shelf.fill(infos.values())
    live: dict[str, ConversationInfo] = {}
    for n, wake, updated in moves:
        cid = f"c{n % len(rows)}"
        if wake and cid in shelf:
            live[cid] = shelf.pop(cid)
        elif not wake and cid in live:  # it changed while live, then went to sleep
            changed = attrs.evolve(live.pop(cid), updated=updated + 10)
            infos[cid] = changed
            shelf.put(changed)
        assert len(shelf) + len(live) == len(infos)
    everything = sorted(infos.values(), key=listing.key, reverse=True)
    before = listing.key(everything[before_at]) if before_at < len(everything) else None
    merged = list(listing.merged_newest_first(shelf, live.values(), before))
    assert merged == [i for i in everything if before is None or listing.key(i) < before]
