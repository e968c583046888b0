"""The full-text index (bmoe_daemon/fulltext.py) and its indexer (bmoe_daemon/indexer.py),
over a real SQLite file and a real store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.record.items import ConversationInfo, ConversationRecord, Item
from bmoe_daemon import fulltext
from bmoe_daemon.fulltext import BadQuery, Terms, TextIndex, match_expression, searchable, snippet
from bmoe_daemon.indexer import Indexer
from bmoe_daemon.store import Store


def info(cid: str, title: str = "", workspace: str | None = None, route: str = "local") -> ConversationInfo:
    return ConversationInfo(id=cid, title=title, workspace=workspace, mode="ask", route=route, agent="builtin",
                            state="idle", created=1.0, updated=1.0)


def rec(cid: str, *items: Item, title: str = "", workspace: str | None = None) -> ConversationRecord:
    return ConversationRecord(info(cid, title, workspace), items)


def user(iid: str, text: str) -> Item:
    return Item(id=iid, kind="user", text=text)


def answer(iid: str, text: str, **kw: object) -> Item:
    return Item(id=iid, kind="assistant", text=text, **kw)  # type: ignore[arg-type]


def found(index: TextIndex, q: str, **kw: object) -> list[tuple[str, str | None]]:
    hits, _ = index.search(q, **kw)  # type: ignore[arg-type]
    return [(h.conversation, h.item) for h in hits]


@pytest.fixture
def index(tmp_path: Path) -> TextIndex:
    idx = TextIndex(tmp_path)
    assert idx.open() is False  # made anew: there was none
    return idx


def test_what_is_searchable_and_what_is_not() -> None:
    assert searchable(user("u", "hello there")) == "hello there"
    assert searchable(answer("a", "the answer")) == "the answer"
    assert searchable(answer("a", "half an ans", streaming=True)) is None
    assert searchable(answer("a", "contradicted", not_answer=True)) is None
    card = Item(id="t", kind="tool", tool="read_file", title="Read .env", file=".env", state="done",
                args={"path": ".env"}, result="API_KEY=sk-secret-value")
    text = searchable(card)
    assert text is not None and "Read .env" in text and "sk-secret-value" not in text
    assert searchable(Item(id="n", kind="notice", text="Stopped.", level="info")) is None
    assert searchable(user("u", "   ")) is None
    assert len(searchable(user("u", "x" * (fulltext.MAX_DOC_CHARS + 10))) or "") == fulltext.MAX_DOC_CHARS


def test_items_titles_changes_and_removals_follow_each_apply(index: TextIndex) -> None:
    first = rec("c1", user("u1", "where is the marmalade"), answer("a1", "The marmalade is in the pantry"),
                title="Breakfast plans")
    index.apply([(first, (1, 0, 0))])
    assert set(found(index, "marmalade")) == {("c1", "u1"), ("c1", "a1")}
    assert found(index, "breakfast") == [("c1", None)]  # the title: no item
    # The answer changes, a message goes, the title changes.
    second = rec("c1", answer("a1", "The jam is on the shelf"), title="Jam")
    index.apply([(second, (2, 0, 0))])
    assert found(index, "marmalade") == [] and found(index, "breakfast") == []
    assert found(index, "shelf") == [("c1", "a1")] and set(found(index, "jam")) == {("c1", None), ("c1", "a1")}
    index.apply([], removed=["c1"])
    assert found(index, "shelf") == [] and found(index, "jam") == []
    assert index.stale({}) == ([], [])


def test_an_apply_remembering_the_items_reads_only_the_new_ones(index: TextIndex) -> None:
    known: fulltext.Known = {}
    items = [user("u1", "alpha words"), answer("a1", "beta words")]
    index.apply([(rec("c1", *items), (1, 0, 0))], known=known)
    items.append(answer("a2", "gamma words"))
    index.apply([(rec("c1", *items), (2, 0, 0))], known=known)
    items[0] = user("u1", "delta words")  # a new value under the same id: read again
    index.apply([(rec("c1", *items), (3, 0, 0))], known=known)
    assert found(index, "gamma") == [("c1", "a2")] and found(index, "delta") == [("c1", "u1")]
    assert found(index, "alpha") == []
    # What is remembered is what the rows say: an apply without memory finds nothing to change.
    rows = index._writer().execute("SELECT count(*) FROM docs").fetchone()[0]
    index.apply([(rec("c1", *items), (3, 0, 0))])
    assert index._writer().execute("SELECT count(*) FROM docs").fetchone()[0] == rows == 3


def test_a_network_client_and_a_workspace_see_only_their_conversations(index: TextIndex) -> None:
    index.apply([(rec("open", user("u1", "shared word")), (1, 0, 0)),
                 (rec("mine", user("u2", "shared word"), workspace="w1"), (2, 0, 0)),
                 (ConversationRecord(info("paid", route="prov/model"), (user("u3", "shared word"),)), (3, 0, 0))])
    assert {c for c, _ in found(index, "shared")} == {"open", "mine", "paid"}
    assert found(index, "shared", local=False) == [("open", "u1")]
    assert found(index, "shared", workspace="w1") == [("mine", "u2")]


def test_pages_follow_each_other_without_repeats(index: TextIndex) -> None:
    index.apply([(rec(f"c{n:02}", user(f"u{n}", f"common word number{n}")), (n, 0, 0)) for n in range(25)])
    first, more = index.search("common", limit=10)
    second, more2 = index.search("common", limit=10, offset=10)
    third, more3 = index.search("common", limit=10, offset=20)
    ids = [h.conversation for h in first + second + third]
    assert more and more2 and not more3 and len(ids) == len(set(ids)) == 25


@pytest.fixture(scope="module")
def operators_index(tmp_path_factory: pytest.TempPathFactory) -> TextIndex:
    idx = TextIndex(tmp_path_factory.mktemp("q"))
    idx.open()
    idx.apply([(rec("c1", user("u1", 'NEAR(a b) "quoted" AND OR NOT col:x ^start * - + ( )')), (1, 0, 0))])
    return idx


@settings(max_examples=300, deadline=None)
@given(q=st.text(min_size=1, max_size=60))
def test_no_text_is_read_as_query_syntax(operators_index: TextIndex, q: str) -> None:
    """Whatever a person types is a query that runs (or a BadQuery): never an SQLite
    error, the FTS5 operators and quotes included."""
    try:
        operators_index.search(q)
    except BadQuery:
        words = q.replace("\0", " ").split()
        assert not words or len(words) > fulltext.MAX_TERMS


@pytest.mark.parametrize("q", ['NEAR(a b)', '"', 'AND', 'col:x', '^start', '*', '-', '(', 'a OR', '""quoted""'])
def test_operators_are_words(index: TextIndex, q: str) -> None:
    index.apply([(rec("c1", user("u1", "plain text")), (1, 0, 0))])
    index.search(q)  # runs: no sqlite3.OperationalError


@pytest.mark.parametrize("q", ["", "   ", "x" * (fulltext.MAX_QUERY_CHARS + 1), " ".join(["w"] * 17)])
def test_a_query_that_cannot_be_one_is_refused_with_what_to_send(q: str) -> None:
    with pytest.raises(BadQuery) as exc:
        match_expression(q)
    assert "`q`" in str(exc.value)


def test_the_last_word_matches_as_a_beginning_until_a_space(index: TextIndex) -> None:
    index.apply([(rec("c1", user("u1", "we compile it")), (1, 0, 0))])
    assert found(index, "comp") == [("c1", "u1")]
    assert found(index, "comp ") == []
    assert found(index, "compile ") == [("c1", "u1")]
    assert found(index, "cómpile") == [("c1", "u1")]  # diacritics and case do not matter


@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.text(alphabet="abcdéZ-_. ", min_size=1, max_size=8), min_size=1, max_size=40),
       pick=st.integers(0, 39))
def test_each_mark_is_a_match_and_the_snippet_is_the_body_s(words: list[str], pick: int) -> None:
    body = " ".join(words)
    term = words[pick % len(words)].split()
    q = term[0] if term else "zz"
    terms = Terms.of(q + " ")
    text, marks = snippet(body, terms)
    core = text.removeprefix("…").removesuffix("…")
    assert core in body
    for a, b in marks:
        assert terms.match(text[a:b])


def test_a_snippet_starts_near_its_first_match() -> None:
    body = "lorem " * 500 + "needle in the hay " + "ipsum " * 500
    text, marks = snippet(body, Terms.of("needle "))
    assert text.startswith("…") and text.endswith("…") and len(text) < 200
    assert [text[a:b] for a, b in marks] == ["needle"]


def test_stale_names_the_changed_the_unindexed_and_the_gone(index: TextIndex) -> None:
    index.apply([(rec("same", user("u", "a")), (1, 1, 1)), (rec("changed", user("u", "b")), (2, 2, 2)),
                 (rec("gone", user("u", "c")), (3, 3, 3))])
    stale, gone = index.stale({"same": (1, 1, 1), "changed": (2, 2, 9), "new": (4, 4, 4)})
    assert sorted(stale) == ["changed", "new"] and gone == ["gone"]


@pytest.mark.parametrize("damage", [b"not a database at all" * 100, b""])
def test_a_damaged_or_empty_file_is_made_anew(tmp_path: Path, damage: bytes) -> None:
    (tmp_path / fulltext.INDEX_FILE).write_bytes(damage)
    idx = TextIndex(tmp_path)
    assert idx.open() is False
    idx.apply([(rec("c1", user("u1", "works again")), (1, 0, 0))])
    assert found(idx, "works") == [("c1", "u1")]
    idx.close()
    assert TextIndex(tmp_path).open() is True  # kept across an open


def test_another_version_is_made_anew(tmp_path: Path) -> None:
    idx = TextIndex(tmp_path)
    idx.open()
    idx.apply([(rec("c1", user("u1", "old rows")), (1, 0, 0))])
    idx._writer().execute("UPDATE meta SET v = 'old' WHERE k = 'version'")
    idx.close()
    again = TextIndex(tmp_path)
    assert again.open() is False and found(again, "old") == []


# ---- the indexer, over a real store ----


def conversation(cid: str, *items: Item, title: str = "") -> ConversationRecord:
    return rec(cid, *items, title=title)


@asynccontextmanager
async def serving(data: Path) -> AsyncIterator[tuple[Store, Indexer]]:
    """A store over `data` (its index read, as the hub reads it) and an indexer told of its saves."""
    store = Store(data)
    store.load_index()
    indexer = Indexer(store.agent_dir, store.stamps, store.load_with_stamp)
    store.watcher = indexer
    async with trio.open_nursery() as nursery:
        await nursery.start(indexer.run)
        yield store, indexer
        nursery.cancel_scope.cancel()


async def hits(indexer: Indexer, q: str) -> list[tuple[str, str | None]]:
    answer = await indexer.search(q)
    return [(h.conversation, h.item) for h in answer.hits]


async def wait_found(indexer: Indexer, q: str, want: list[tuple[str, str | None]]) -> None:
    with trio.fail_after(10):
        while (got := await hits(indexer, q)) != want:
            await trio.sleep(0.01)
    assert got == want


async def test_saves_and_deletions_reach_the_index_in_the_background(tmp_path: Path) -> None:
    async with serving(tmp_path) as (store, indexer):
        await store.save_conversation(conversation("c1", user("u1", "the walrus speaks")))
        await wait_found(indexer, "walrus", [("c1", "u1")])
        # An interim save (a streaming item) is not indexed; the durable one is.
        partial = conversation("c1", user("u1", "the walrus speaks"), answer("a1", "carpenter", streaming=True))
        await store.save_conversation(partial, durable=False)
        await store.save_conversation(conversation("c1", user("u1", "the walrus speaks"),
                                                   answer("a1", "and the carpenter")))
        await wait_found(indexer, "carpenter", [("c1", "a1")])
        await store.delete_conversation("c1")
        await wait_found(indexer, "walrus", [])


async def test_a_start_reads_again_what_changed_and_rebuilds_a_deleted_index(tmp_path: Path) -> None:
    async with serving(tmp_path) as (store, indexer):
        await store.save_conversation(conversation("c1", user("u1", "oyster one")))
        await store.save_conversation(conversation("c2", user("u2", "oyster two")))
        await wait_found(indexer, "oyster", [("c2", "u2"), ("c1", "u1")])
    # Without the indexer: one conversation changes, one goes, one comes (a crash
    # between the saves and their indexing).
    store.watcher = None
    await store.save_conversation(conversation("c1", user("u1", "lobster one")))
    await store.delete_conversation("c2")
    await store.save_conversation(conversation("c3", user("u3", "oyster three")))
    await store.save_index()
    async with serving(tmp_path) as (store, indexer):
        await wait_found(indexer, "oyster", [("c3", "u3")])
        assert await hits(indexer, "lobster") == [("c1", "u1")]
    # The index deleted: built again from the files.
    (tmp_path / "agent" / fulltext.INDEX_FILE).unlink()
    async with serving(tmp_path) as (store, indexer):
        await wait_found(indexer, "oyster", [("c3", "u3")])
        await wait_found(indexer, "lobster", [("c1", "u1")])
        assert not (await indexer.search("lobster")).indexing


async def test_a_damaged_index_is_built_again_from_the_files(tmp_path: Path) -> None:
    async with serving(tmp_path) as (store, indexer):
        await store.save_conversation(conversation("c1", user("u1", "narwhal tusk")))
        await wait_found(indexer, "narwhal", [("c1", "u1")])
    await store.save_index()
    path = tmp_path / "agent" / fulltext.INDEX_FILE
    with open(path, "r+b") as fh:  # its first pages overwritten (a disk error, another program)
        fh.write(b"\xff" * 8192)
    async with serving(tmp_path) as (store, indexer):
        await wait_found(indexer, "narwhal", [("c1", "u1")])


def test_records_with_the_same_items_in_two_conversations_are_apart(index: TextIndex) -> None:
    item = user("same-id", "twin words")
    index.apply([(rec("c1", item), (1, 0, 0)), (rec("c2", attrs.evolve(item)), (2, 0, 0))])
    index.apply([(rec("c1"), (3, 0, 0))])
    assert found(index, "twin") == [("c2", "same-id")]


def test_the_lists_q_names_the_conversations_and_the_newest_item_with_every_word(index: TextIndex) -> None:
    index.apply([(rec("c1", user("u1", "the heron and the pond"), answer("a1", "a heron flew"),
                      user("u2", "nothing here"), title="Birds"), (1, 0, 0)),
                 (rec("c2", user("u1", "a pond only"), title="Water"), (1, 0, 0)),
                 (rec("c3", user("u1", "herons elsewhere"), title="Herons"), (1, 0, 0))], [])
    assert index.conversations_matching("heron pond") == {"c1"}
    assert index.conversations_matching("heron") == {"c1", "c3"}  # a whole word: not "herons"
    assert index.conversations_matching("hero") == {"c1", "c3"}  # a beginning, being typed
    got = index.snippets("heron pond", ["c1"])
    # The newest item holding both words: the message, not the newer answer with one.
    assert (got["c1"].item, got["c1"].kind) == ("u1", "user")
    assert [got["c1"].snippet[a:b] for a, b in got["c1"].marks] == ["heron", "pond"]
    got = index.snippets("hero", ["c1", "c3"])
    assert (got["c1"].item, got["c3"].kind) == ("a1", "title")
    with pytest.raises(BadQuery):
        index.conversations_matching("   ")
