"""A conversation's file as a journal: the base line, a line per save, a torn last
save left out (actors/record/journal.py; the store's use of it is in test_store.py)."""

from __future__ import annotations

import json

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.record import journal
from actors.record.items import ConversationInfo, ConversationRecord, Item
from actors.record.journal import Journal

INFO = ConversationInfo("c1", "t", None, "ask", "local", "builtin", "running", 1.0, 2.0)


def item(n: int, text: str = "x", **kw: object) -> Item:
    return Item(id=f"i{n}", kind="user", created=float(n), text=text, **kw)  # type: ignore[arg-type]


def encode(items: object) -> list[bytes]:
    return [journal.dumps(i.to_json()) for i in items]  # type: ignore[attr-defined]


def whole(record: ConversationRecord) -> tuple[bytes, Journal]:
    head = journal.head_bytes(record)
    data = journal.base_line(head, encode(record.items))
    return data, Journal(record, head=head, size=len(data), base=len(data), synced=True, stamp=(0, 0, 0))


def read_record(raw: bytes) -> ConversationRecord:
    return ConversationRecord.from_json(journal.read(raw).document)


def test_a_file_from_before_the_journal_reads_as_it_did() -> None:
    record = ConversationRecord(INFO, (item(1), item(2, "two")))
    old = journal.dumps(record.to_json())  # one document, the head with its items: no newline
    read = journal.read(old)
    assert not read.journal and read.whole == len(old)
    assert ConversationRecord.from_json(read.document) == record


def test_a_save_appends_only_what_changed_and_the_newest_version_wins_in_its_place() -> None:
    record = ConversationRecord(INFO, (item(1), item(2, "streaming", streaming=True)))
    data, book = whole(record)
    assert data.startswith(journal.BASE_PREFIX) and data.count(b"\n") == 1 and data.endswith(b"\n")
    done = attrs.evolve(record.items[1], text="streamed whole", streaming=False)
    later = ConversationRecord(attrs.evolve(INFO, state="idle"), (record.items[0], done, item(3, "new")))
    change = book.change(later, journal.head_bytes(later), encode)
    assert change is not None
    line = json.loads(change.line)
    assert [i["id"] for i in line["items"]] == ["i2", "i3"] and line["head"]["state"] == "idle"
    assert read_record(data + change.line) == later
    book.appended(change, durable=True, stamp=(0, 1, 1))
    # Nothing changed: nothing to write; only the head changed: the head alone.
    head = journal.head_bytes(later)
    assert book.change(later, head, encode) == journal.Change(b"", later, head)
    renamed = attrs.evolve(later, info=attrs.evolve(later.info, title="renamed"))
    change2 = book.change(renamed, journal.head_bytes(renamed), encode)
    assert change2 is not None and json.loads(change2.line)["items"] == []
    assert read_record(data + change.line + change2.line) == renamed


@pytest.mark.parametrize("how", ["removed", "moved", "inserted", "same id twice"])
def test_a_change_that_is_not_an_append_writes_the_file_whole(how: str) -> None:
    a, b, c = item(1), item(2), item(3)
    _, book = whole(ConversationRecord(INFO, (a, b, c)))
    items = {"removed": (a, c), "moved": (b, a, c), "inserted": (a, item(9), b, c),
             "same id twice": (a, b, c, attrs.evolve(c, text="again"))}[how]
    record = ConversationRecord(INFO, items)
    assert book.change(record, journal.head_bytes(record), encode) is None


def test_a_torn_last_save_is_left_out_and_so_is_all_after_a_line_never_written() -> None:
    first = ConversationRecord(INFO, (item(1),))
    data, book = whole(first)
    second = ConversationRecord(INFO, (item(1), item(2, "second")))
    change = book.change(second, journal.head_bytes(second), encode)
    assert change is not None
    # Cut anywhere inside the second save's line (its newline included): the first save.
    for cut in range(len(change.line)):
        read = journal.read(data + change.line[:cut])
        assert read.whole == len(data) and ConversationRecord.from_json(read.document) == first
    # Bytes a power cut never wrote (zeros) where the line was, then a line after them.
    holed = data + b"\0" * (len(change.line) - 1) + b"\n" + change.line
    assert journal.read(holed).whole == len(data) and read_record(holed) == first
    # Zeros inside a text are no JSON either.
    assert read_record(data + change.line.replace(b"second", b"sec\0nd")) == first


@pytest.mark.parametrize("raw", [
    journal.BASE_PREFIX + b'"head":{"id":"c1"},"items":[]}',  # the base without its newline
    journal.BASE_PREFIX + b'"head":{"id":"c1"},"items":[\n',
    journal.BASE_PREFIX + b'"head":5,"items":[]}\n',
    journal.BASE_PREFIX + b'"items":[]}\n',
    journal.BASE_PREFIX + b'"head":{"id":"c1"},"items":7}\n',
    b"[1, 2]",
    b"",
])
def test_a_file_whose_base_is_not_whole_is_no_conversation(raw: bytes) -> None:
    with pytest.raises(ValueError):
        journal.read(raw)


def test_a_base_whose_items_are_not_items_is_no_conversation() -> None:
    alone = journal.BASE_PREFIX + b'"head":{"id":"c1"},"items":[{"kind":"user"}]}\n'
    with pytest.raises(KeyError):
        ConversationRecord.from_json(journal.read(alone).document)
    with pytest.raises(ValueError):  # followed by a save: the ids are needed to apply it
        journal.read(alone + journal.save_line(None, encode([item(2)])))


def test_a_line_after_the_base_that_is_no_save_ends_the_reading() -> None:
    data, _ = whole(ConversationRecord(INFO, (item(1),)))
    for bad in (b"5\n", b'{"items":5}\n', b'{"head":[],"items":[]}\n', b'{"items":[{"id":3}]}\n', b"[" * 5000 + b"\n"):
        read = journal.read(data + bad + journal.save_line(None, encode([item(2)])))
        assert read.whole == len(data) and [i["id"] for i in read.document["items"]] == ["i1"]


# Each step changes the record (a new item, a new version of one, the head) and saves it.
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.text(max_size=20)),
        st.tuples(st.just("update"), st.integers(0, 30), st.text(max_size=20)),
        st.tuples(st.just("head"), st.text(max_size=8)),
        st.tuples(st.just("same"), st.just("")),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(steps=_steps, cut=st.integers(0, 10**6))
def test_any_saves_cut_at_any_byte_read_as_the_last_whole_save(steps: list, cut: int) -> None:
    items: list[Item] = [item(0, "first")]
    record = ConversationRecord(INFO, tuple(items))
    data, book = whole(record)
    saves = [(len(data), record)]  # (the file's size after each save, the record it holds)
    for step in steps:
        info = record.info
        if step[0] == "add":
            items.append(item(len(items), step[1]))
        elif step[0] == "update":
            old = items[step[1] % len(items)]
            items[step[1] % len(items)] = attrs.evolve(old, text=step[2], streaming=not old.streaming)
        elif step[0] == "head":
            info = attrs.evolve(info, title=step[1])
        record = ConversationRecord(info, tuple(items))
        change = book.change(record, journal.head_bytes(record), encode)
        assert change is not None  # only appends here: each is a line
        data += change.line
        book.appended(change, durable=True, stamp=(0, 0, 0))
        saves.append((len(data), record))
    assert read_record(data) == record
    cut %= len(data) + 1
    torn = data[:cut]
    if cut < saves[0][0]:
        with pytest.raises(ValueError):
            journal.read(torn)
        return
    expected = [r for size, r in saves if size <= cut][-1]
    assert read_record(torn) == expected
