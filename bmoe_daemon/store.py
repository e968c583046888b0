"""The store: conversations and workspaces as JSON files under the data folder.

A conversation's file is a journal (actors/record/journal.py): a base line with the
whole record, then one line appended per save with only what changed, so saving one
item of a long conversation writes that item, not the conversation. The file is
written whole again (a temporary file, fsynced, renamed over the old one) when it is
new, from before the journal, not as this store last left it, grown to twice its base,
or when items were removed or moved (an undo, an edit). A crash at any moment leaves
the old file, the new one, or the journal with a torn last line that reading leaves
out: always a record that was saved. Every other file is written whole. Writes run in
a worker thread; one lock per file keeps them in order.

The index (`agent/conversations-index.json`) lets the daemon start without reading
every conversation: for each file, its name, the (inode, size, mtime) it had when the
store last wrote or read it, and its head (everything but the items). Each save
updates the entry in memory; `save_index` writes the whole index (atomically, like
every file) when it changed. At start `load_index` takes an entry only while its
file's (inode, size, mtime) still match, and reads any other file whole, so an index
that is missing, damaged, or older than the files (a crash between a save and the
next index write) is rebuilt from the files, as far as it must be.

The index is a line of its own header (`{"version":2}`), then one entry a line, so
an entry the files still match is kept as the very bytes it was read as: a start
parses each head once and writes nothing back (version 1, one JSON document, is still
read, and written again in the new form).
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

import jiter
import trio

from actors.conversations.hub import Workspace
from actors.fs.atomic import append_whole, read_own_file, write_atomic
from actors.record import journal
from actors.record.items import ConversationInfo, ConversationRecord, Item
from actors.record.journal import Journal

log = logging.getLogger("bmoe.store")

# What the files this store reads may hold at most.
MAX_CONVERSATION_FILE_BYTES = 1024 * 1024 * 1024
MAX_SETTINGS_FILE_BYTES = 16 * 1024 * 1024
# How many conversations keep their items' encodings and their journals between saves.
ENCODED_CONVERSATIONS = 32
INDEX_FILE = "conversations-index.json"
INDEX_VERSION = 2
INDEX_HEADER = b'{"version":2}'
MAX_INDEX_FILE_BYTES = 1024 * 1024 * 1024

_SAFE_ID = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


_dumps = journal.dumps


Stamp = journal.Stamp  # a file's (inode, size, mtime in ns): a save writes a new inode or a new size


def _stamp(st: os.stat_result) -> Stamp:
    return (st.st_ino, st.st_size, st.st_mtime_ns)


# A head's field that says nothing (None, False, an empty list, an empty title: what
# ConversationInfo.from_json reads a missing field as) is left out of the index's lines,
# which a start parses by the hundred thousand and the daemon keeps in memory.
def _says_nothing(key: str, value: object) -> bool:
    # An empty text reads back as itself only where its default is one (the title);
    # elsewhere (a workspace, a task, a session) it is not None and stays. So does a
    # zero: only the count of cards waiting reads a missing one as 0.
    # The daemon's own tools read a missing `workspace_tools` as on: there a True is
    # what says nothing, and a False must stay.
    if key == "workspace_tools":
        return value is True
    return (value is None or value is False or value == [] or (key == "title" and value == "")
            or (key == "waiting_cards" and value == 0))


def _entry_bytes(name: str, stamp: Stamp, record: ConversationRecord) -> bytes:
    head = {k: v for k, v in record.head_json().items() if k == "id" or not _says_nothing(k, v)}
    return _dumps({"file": name, "stamp": list(stamp), "head": head})


def _read_index(raw: bytes) -> dict[str, tuple[Stamp, ConversationInfo, bytes | None]]:
    """An index file's entries by file name: each one's stamp, conversation (its head)
    and (version 2) the bytes of its line. Raises what a damaged file makes the parse
    or the reading raise."""
    header, _, body = raw.partition(b"\n")
    head = json.loads(header)
    version = head.get("version")
    out: dict[str, tuple[Stamp, ConversationInfo, bytes | None]] = {}
    if version == 1:  # one document, as written before the line form
        for entry in head["entries"]:
            ino, size, mtime = entry["stamp"]
            info = ConversationInfo.from_json(entry["head"])
            out[str(entry["file"])] = ((int(ino), int(size), int(mtime)), info, None)
        return out
    if version != INDEX_VERSION:
        raise ValueError(f"version {version!r}")
    if body and not body.endswith(b"\n"):
        raise ValueError("the index ends in the middle of an entry")
    for line in body.split(b"\n"):
        if not line:
            continue
        # jiter: a third of json's time a line here, and each parsed entry is let go
        # before the next (a start's peak memory stays near what it keeps).
        entry = jiter.from_json(line)
        ino, size, mtime = entry["stamp"]
        out[str(entry["file"])] = ((int(ino), int(size), int(mtime)), ConversationInfo.from_json(entry["head"]), line)
    return out


class SaveWatcher(Protocol):
    """Told of each durable save and each deletion, in trio's thread, right after it (the
    search index, bmoe_daemon/indexer.py): it must only note it, and never raise."""

    def saved(self, record: ConversationRecord, stamp: Stamp) -> None: ...

    def deleted(self, conversation_id: str) -> None: ...


def _unreadable(path: Path, exc: Exception) -> None:
    log.warning("skipping unreadable conversation file %s: %s", path, exc)


_READ_ERRORS = (OSError, ValueError, KeyError, TypeError, RecursionError)


class Store:
    """See the module docstring."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir
        self.agent_dir = data_dir / "agent"
        self.conv_dir = self.agent_dir / "conversations"
        self.conv_dir.mkdir(parents=True, exist_ok=True)
        self._locks: dict[str, trio.Lock] = {}
        # Per conversation (the last ENCODED_CONVERSATIONS saved or read): its items'
        # encodings by id, and what its file holds as this store last wrote or read it.
        # (OrderedDicts: the least recently used is let go in O(1); a dict's first key
        # is found slower and slower as keys are popped from its front.)
        self._encoded: OrderedDict[str, dict[str, tuple[Item, bytes]]] = OrderedDict()
        self._journals: OrderedDict[str, Journal] = OrderedDict()
        self._encoded_lock = threading.Lock()
        self._limiter = trio.CapacityLimiter(4)
        # The index: conversation id -> (file name, stamp, its encoded entry).
        self._index: dict[str, tuple[str, Stamp, bytes]] = {}
        self._index_version = 0  # counts changes to _index; _index_saved is the one on disk
        self._index_saved = 0
        self._index_changed = trio.Event()
        self.watcher: SaveWatcher | None = None
        self._cleanup_temporaries()

    def _cleanup_temporaries(self) -> None:
        # A crash between mkstemp and rename leaves a hidden temporary; it never
        # replaced anything, so it can go.
        for folder in (self.agent_dir, self.conv_dir):
            for tmp in folder.glob(".*.tmp"):
                try:
                    tmp.unlink()
                except OSError:
                    pass

    def _lock(self, key: str) -> trio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = trio.Lock()
        return lock

    def conversation_path(self, conversation_id: str) -> Path:
        if not conversation_id or not set(conversation_id) <= _SAFE_ID:
            raise ValueError(f"unsafe conversation id {conversation_id!r}")
        return self.conv_dir / f"{conversation_id}.json"

    # ---- conversations ----

    def load_conversations(self) -> list[ConversationRecord]:
        out: list[ConversationRecord] = []
        for path in sorted(self.conv_dir.glob("*.json")):
            try:
                out.append(self._read(path))
            except _READ_ERRORS as exc:
                _unreadable(path, exc)
        return out

    def _read(self, path: Path) -> ConversationRecord:
        return self._read_file(path)[0]

    def _read_file(self, path: Path) -> tuple[ConversationRecord, journal.Read, int]:
        """The record a file holds, how it was read, and the file's size."""
        raw = read_own_file(path, MAX_CONVERSATION_FILE_BYTES)
        read = journal.read(raw)
        if read.whole < len(raw):
            log.warning("%s: the last %d bytes are a save that was cut short (a crash); read without it",
                        path, len(raw) - read.whole)
        return ConversationRecord.from_json(read.document), read, len(raw)

    def load_conversation(self, conversation_id: str) -> ConversationRecord:
        """One conversation whole, from the file the index names (blocking: call it in a
        thread). NotFound-like KeyError when the index has no such conversation; a file
        that cannot be read now raises as it does (OSError, ValueError, ...). A journal
        read whole and unchanged while read is what the next save appends to."""
        name = self._index[conversation_id][0]
        path = self.conv_dir / name
        before = _stamp(os.stat(path))
        record, read, size = self._read_file(path)
        if record.info.id != conversation_id:
            raise ValueError(f"{name} now holds conversation {record.info.id!r}")
        if read.journal and read.whole == size == before[1]:
            stamp = _stamp(os.stat(path))
            if stamp == before:
                # Its head's encoding is left unknown (a start may read many files): the
                # first save writes the head again, whatever it is.
                self._keep(conversation_id, Journal(record, head=b"", size=size, base=read.base, synced=True,
                                                    stamp=stamp))
        return record

    def stamps(self) -> Mapping[str, Stamp]:
        """Each conversation the index holds, with its file's stamp as last written or read."""
        return {cid: entry[1] for cid, entry in self._index.items()}

    def load_with_stamp(self, conversation_id: str) -> tuple[ConversationRecord, Stamp]:
        """load_conversation, and the stamp the index held for its file just before."""
        stamp = self._index[conversation_id][1]
        return self.load_conversation(conversation_id), stamp

    def load_index(self) -> list[ConversationInfo]:
        """The head of every readable conversation, from the index where its entry still
        matches the file, else from the file itself (a file that cannot be read is named
        in the log and left in place, as load_conversations does). Writes the index
        again when it was not exact. Blocking: runs once at start."""
        # file name -> its stamp, head and (version 2) the entry's bytes, as the index says
        kept: dict[str, tuple[Stamp, ConversationInfo, bytes | None]] = {}
        try:
            kept = _read_index(read_own_file(self.agent_dir / INDEX_FILE, MAX_INDEX_FILE_BYTES))
        except FileNotFoundError:
            log.info("no conversation index yet: reading every conversation file")
        except (*_READ_ERRORS, AttributeError) as exc:
            log.warning("the conversation index cannot be used (%s): reading every conversation file", exc)
            kept = {}
        infos: list[ConversationInfo] = []
        index: dict[str, tuple[str, Stamp, bytes]] = {}
        exact = True
        with os.scandir(self.conv_dir) as it:
            entries = sorted((e for e in it if e.name.endswith(".json") and not e.name.startswith(".")),
                             key=lambda e: e.name)
        for entry in entries:
            try:
                stamp = _stamp(entry.stat(follow_symlinks=True))
            except OSError as exc:
                _unreadable(Path(entry.path), exc)
                exact = False
                continue
            old = kept.pop(entry.name, None)
            line: bytes | None = None
            try:
                if old is not None and old[0] == stamp:
                    info, line = old[1], old[2]
                else:
                    exact = False
                    info = self._read(Path(entry.path)).info
            except _READ_ERRORS as exc:
                _unreadable(Path(entry.path), exc)
                exact = False
                continue
            if info.id in index:
                _unreadable(Path(entry.path), ValueError(f"conversation {info.id!r} is also in {index[info.id][0]}"))
                exact = False
                continue
            if line is None:
                exact = False  # read from the file, or from a version 1 index: written again
                line = _entry_bytes(entry.name, stamp, ConversationRecord(info, ()))
            index[info.id] = (entry.name, stamp, line)
            infos.append(info)
        self._index = index
        if kept or not exact:
            self._write_index()
        return infos

    def _index_bytes(self) -> bytes:
        return b"\n".join((INDEX_HEADER, *(e[2] for e in self._index.values()))) + b"\n"

    def _write_index(self) -> None:
        write_atomic(self.agent_dir / INDEX_FILE, self._index_bytes())

    def _index_set(self, conversation_id: str, value: tuple[str, Stamp, bytes] | None) -> None:
        if value is None:
            if self._index.pop(conversation_id, None) is None:
                return
        else:
            self._index[conversation_id] = value
        self._index_version += 1
        self._index_changed.set()

    async def save_index(self) -> None:
        """Write the index when it changed since it was last written. Cancelled: a write
        already started finishes in its thread."""
        version = self._index_version
        if version == self._index_saved:
            return
        data = self._index_bytes()  # a snapshot, taken in trio's thread
        async with self._lock(INDEX_FILE):
            await trio.to_thread.run_sync(write_atomic, self.agent_dir / INDEX_FILE, data, limiter=self._limiter)
        self._index_saved = max(self._index_saved, version)

    async def keep_index(self, every_s: float) -> None:
        """Write the index at most every `every_s` seconds while conversations change;
        runs until cancelled (then call save_index once more)."""
        while True:
            await self._index_changed.wait()
            self._index_changed = trio.Event()
            await trio.sleep(every_s)
            try:
                await self.save_index()
            except OSError as exc:
                log.error("could not write the conversation index: %s", exc)

    async def save_conversation(self, record: ConversationRecord, *, durable: bool = True) -> None:
        """Write the conversation: append what changed since this store last wrote or
        read its file, or write it whole (see the module docstring). Cancelled: the
        write already started finishes in its thread; the file holds the old version or
        the new one. `durable=False`: an interim save while an item streams, without
        fsync (a power cut may lose it; see write_atomic)."""
        path = self.conversation_path(record.info.id)
        async with self._lock(path.name):
            stamp = await trio.to_thread.run_sync(self._write_record, path, record, durable, limiter=self._limiter)
            self._index_set(record.info.id, (path.name, stamp, _entry_bytes(path.name, stamp, record)))
        if durable and self.watcher is not None:
            self.watcher.saved(record, stamp)

    def _write_record(self, path: Path, record: ConversationRecord, durable: bool = True) -> Stamp:
        cid = record.info.id
        head = journal.head_bytes(record)
        with self._encoded_lock:
            book = self._journals.get(cid)
        change = None if book is None else book.change(record, head, lambda items: self._encode(cid, items))
        if book is None or change is None:
            return self._write_whole(path, record, head, durable)
        if book.due(change):
            try:
                return self._write_whole(path, record, head, durable)
            except OSError as exc:  # appending may still fit (a nearly full disk)
                log.warning("could not write %s whole (%s): appending to it instead", path.name, exc)
        if not change.line and ((book.synced and book.named) or not durable):
            return book.stamp  # nothing to write
        try:
            st = append_whole(path, change.line, expect=lambda st: _stamp(st) == book.stamp, durable=durable,
                              sync_folder=not book.named)
        except BaseException:
            self._forget(cid, book)
            raise
        if st is None:  # not the file this store left: written whole
            return self._write_whole(path, record, head, durable)
        stamp = _stamp(st)
        book.appended(change, durable=durable, stamp=stamp)
        self._keep(cid, book)
        return stamp

    def _write_whole(self, path: Path, record: ConversationRecord, head: bytes, durable: bool) -> Stamp:
        cid = record.info.id
        with self._encoded_lock:
            self._journals.pop(cid, None)  # until the new file is in place
        data = journal.base_line(head, self._encode(cid, record.items, whole=True))
        write_atomic(path, data, durable=durable)
        stamp = _stamp(os.stat(path))
        self._keep(cid, Journal(record, head=head, size=len(data), base=len(data), synced=durable, stamp=stamp))
        return stamp

    def _keep(self, cid: str, book: Journal) -> None:
        with self._encoded_lock:
            self._journals[cid] = book
            self._journals.move_to_end(cid)  # most recently used last
            while len(self._journals) > ENCODED_CONVERSATIONS:
                self._journals.popitem(last=False)

    def _forget(self, cid: str, book: Journal | None = None) -> None:
        """No journal for `cid` (only if it is still `book`, when given): its next save
        writes the file whole."""
        with self._encoded_lock:
            if book is None or self._journals.get(cid) is book:
                self._journals.pop(cid, None)

    def encode_record(self, record: ConversationRecord) -> bytes:
        """The record as the bytes of its file written whole (a journal's base line)."""
        return journal.base_line(journal.head_bytes(record), self._encode(record.info.id, record.items, whole=True))

    def _encode(self, cid: str, items: Sequence[Item], *, whole: bool = False) -> list[bytes]:
        """The items' encodings. Items are immutable values, so each one's encoding is
        kept (for the last ENCODED_CONVERSATIONS saved) and only the items that are new
        or changed since are encoded. `whole`: `items` are all the conversation's, and
        the encodings of others are let go."""
        with self._encoded_lock:
            cache = self._encoded.setdefault(cid, {})
            self._encoded.move_to_end(cid)  # most recently saved last
            while len(self._encoded) > ENCODED_CONVERSATIONS:
                self._encoded.popitem(last=False)
        parts: list[bytes] = []
        append, get = parts.append, cache.get
        for item in items:
            hit = get(item.id)
            if hit is not None and hit[0] is item:
                append(hit[1])
            else:
                data = _dumps(item.to_json())
                cache[item.id] = (item, data)
                append(data)
        if whole and len(cache) > len(parts):  # every item is in the cache now: the rest are gone
            keep = {item.id for item in items}
            for gone in [key for key in cache if key not in keep]:
                del cache[gone]
        return parts

    async def delete_conversation(self, conversation_id: str) -> None:
        path = self.conversation_path(conversation_id)
        async with self._lock(path.name):
            self._forget(conversation_id)
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            self._index_set(conversation_id, None)
        if self.watcher is not None:
            self.watcher.deleted(conversation_id)

    # ---- workspaces ----

    def load_workspaces(self) -> list[Workspace]:
        path = self.agent_dir / "workspaces.json"
        try:
            data = json.loads(read_own_file(path, MAX_SETTINGS_FILE_BYTES))
        except FileNotFoundError:
            return []
        except (OSError, ValueError) as exc:
            log.warning("cannot read %s: %s", path, exc)
            return []
        out = []
        for row in data if isinstance(data, list) else []:
            try:
                out.append(Workspace(str(row["id"]), str(row["name"]), str(row["path"]), row.get("network") is True,
                                     row.get("memory_in_read_only") is True))
            except (KeyError, TypeError):
                continue
        return out

    async def save_workspaces(self, workspaces: list[Workspace]) -> None:
        path = self.agent_dir / "workspaces.json"
        data = _dumps([w.to_json() for w in workspaces])
        async with self._lock(path.name):
            await trio.to_thread.run_sync(write_atomic, path, data, limiter=self._limiter)
