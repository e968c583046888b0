"""A conversation's file as a journal of its saves (pure: no I/O; bmoe_daemon/store.py
writes and reads the files).

The first line is the base, the whole record as it was when the file was last written
whole: `{"log":1,"head":{...},"items":[...]}`. Each later line is one save, appended:
`{"head":{...},"items":[...]}`, with the head when it changed and only the items that
are new or changed since the line before. An item's newest line wins and keeps the
place its first one gave it, so a card that streams, completes, waits and is approved
is one item in the end, wherever its versions were written.

A save counts only whole: its line up to and including its newline, parsed as JSON.
A crash (or a power cut) in the middle of an append leaves at most its own line torn
at the end of the file (cut short, or bytes that never reached the disk): reading
stops at the first line that is not whole, so what is read is the record of the last
save that was, never a mix of two and never a failure of the whole conversation. The
base line is written only whole (to a temporary file renamed over the old one).

A file from before the journal (one JSON document: the head with its `items`) reads
as it always did; the store writes it as a journal at its next save.

Once the file has grown to COMPACT_RATIO times its base (and COMPACT_MIN_BYTES more),
the next save writes it whole again: a base and nothing after it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from actors.record.items import ConversationRecord, Item

FORMAT = 1
BASE_PREFIX = b'{"log":%d,' % FORMAT
COMPACT_RATIO = 2
COMPACT_MIN_BYTES = 256 * 1024

Encode = Callable[[Sequence[Item]], list[bytes]]
Stamp = tuple[int, int, int]


def dumps(value: Any) -> bytes:
    """The compact JSON the files hold (UTF-8; a newline in a text is escaped, so a
    line of the journal never holds one)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def head_bytes(record: ConversationRecord) -> bytes:
    return dumps(record.head_json())


def base_line(head: bytes, items: Sequence[bytes]) -> bytes:
    """The whole file for a record: its head's and its items' encodings as the base."""
    return b"".join((BASE_PREFIX, b'"head":', head, b',"items":[', b",".join(items), b"]}\n"))


def save_line(head: bytes | None, items: Sequence[bytes]) -> bytes:
    """One save's line: the head when it changed, the items new or changed."""
    lead = b'{"head":' + head + b',"items":[' if head is not None else b'{"items":['
    return b"".join((lead, b",".join(items), b"]}\n"))


@attrs.frozen
class Read:
    """A file as read: `document` is the record's JSON (the head with its `items`, the
    shape ConversationRecord.from_json reads); `whole` the bytes of the file that were
    read (the rest, a torn save at the end, is not); `base` the base line's bytes (0 for
    a file from before the journal, which is not one)."""

    document: dict[str, Any]
    whole: int
    base: int

    @property
    def journal(self) -> bool:
        return self.base > 0


def _object(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{what} is a JSON object, not {type(value).__name__}")
    return value


def _entry(value: object, *, base: bool) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """A line's head (None when it has none) and items; ValueError when it is not a
    line of the journal."""
    line = _object(value, "a line of the journal")
    head = line.get("head")
    if head is not None or base:
        head = _object(head, "the head")
    items = line.get("items")
    if not isinstance(items, list):
        raise ValueError("a line of the journal lists its items")
    return head, items


def _ids(items: list[dict[str, Any]]) -> list[str]:
    """The items' ids; ValueError when one is not an object with an id."""
    ids = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise ValueError("an item of the journal is an object with an id")
        ids.append(item["id"])
    return ids


def read(raw: bytes) -> Read:
    """What a conversation's file holds, either form. Raises ValueError (or what json
    raises, RecursionError included) for a file that is neither: a base line that does
    not parse, a document that is no object. (The items of a base alone are checked by
    ConversationRecord.from_json, as a whole document's are.) A save after the base
    that is not whole ends what is read, with everything after it."""
    if not raw.startswith(BASE_PREFIX):
        return Read(_object(json.loads(raw), "a conversation"), len(raw), 0)
    end = raw.find(b"\n")
    if end < 0:
        raise ValueError("the file ends inside its base line")
    # A file that is its base alone (one just written whole) is parsed without a copy.
    head, items = _entry(json.loads(raw if end + 1 == len(raw) else raw[:end]), base=True)
    assert head is not None
    # The base keeps every item it lists (as the whole document did); a later version
    # replaces the last one of its id.
    where: dict[str, int] | None = None
    pos = base = end + 1
    while pos < len(raw):
        end = raw.find(b"\n", pos)
        if end < 0:
            break  # the last save's line, torn before its newline
        try:
            new_head, changed = _entry(json.loads(raw[pos:end]), base=False)
            ids = _ids(changed)
        except (ValueError, RecursionError):
            break  # bytes a power cut never wrote, or a line cut and then followed
        if new_head is not None:
            head = new_head
        if where is None:
            where = {item_id: n for n, item_id in enumerate(_ids(items))}
        for item_id, item in zip(ids, changed, strict=True):
            n = where.get(item_id)
            if n is None:
                where[item_id] = len(items)
                items.append(item)
            else:
                items[n] = item
        pos = end + 1
    document = dict(head)
    document["items"] = items
    return Read(document, pos, base)


@attrs.frozen
class Change:
    """What a save appends: its `line` (empty when nothing changed), and the record it
    leaves the file holding."""

    line: bytes
    record: ConversationRecord
    head: bytes


class Journal:
    """What a conversation's file holds, as the one writer of it last wrote or read
    it: the items (the very values), the head's encoding, the file's size, its base
    line's, whether all of its bytes are fsynced (`synced`) and its name too (`named`:
    the rename that put it in place was, with its folder), and `stamp`: the file's
    (inode, size, mtime in ns) then, to see it is still the one the writer left."""

    def __init__(self, record: ConversationRecord, *, head: bytes, size: int, base: int, synced: bool,
                 stamp: Stamp) -> None:
        """A file just written whole, or read: `synced` says of its bytes and its name."""
        self._items: tuple[Item, ...] = record.items
        self._head = head
        self._ids_unique = len({i.id for i in record.items}) == len(record.items)
        self.size = size
        self.base = base
        self.synced = synced
        self.named = synced
        self.stamp = stamp

    def change(self, record: ConversationRecord, head: bytes, encode: Encode) -> Change | None:
        """The line that takes the file from what it holds to `record`; None when no
        line can (an item is gone, moved or put before others, or two items share an
        id): then the file is written whole. `encode` gives the encodings of the items
        the line holds."""
        items = record.items
        mine = self._items
        if len(items) < len(mine) or not self._ids_unique:
            return None
        changed: list[Item] = []
        for new, old in zip(items, mine, strict=False):  # `items` may be longer: the added ones
            if new is not old:
                if new.id != old.id:
                    return None
                changed.append(new)
        added = items[len(mine):]
        if added:
            known = {i.id for i in mine}
            ids = [i.id for i in added]
            if len(set(ids)) != len(ids) or not known.isdisjoint(ids):
                return None
            changed.extend(added)
        if not changed and head == self._head:
            return Change(b"", record, head)
        return Change(save_line(head if head != self._head else None, encode(changed)), record, head)

    def due(self, change: Change) -> bool:
        """Whether the file, with `change` appended, is to be written whole instead."""
        return self.size + len(change.line) > COMPACT_RATIO * self.base + COMPACT_MIN_BYTES

    def appended(self, change: Change, *, durable: bool, stamp: Stamp) -> None:
        """`change` is in the file now (fsynced with all before it when `durable`)."""
        self._items = change.record.items
        self._head = change.head
        self.size += len(change.line)
        self.synced = durable or (self.synced and not change.line)
        self.named = self.named or durable
        self.stamp = stamp
