"""The indexer actor: it keeps the full-text index (bmoe_daemon/fulltext.py) up to date
with the conversation files, off the save path.

The store tells it of each durable save (the record and its file's stamp) and each
deletion through `saved` and `deleted`, which only note it (a dict entry) and return:
a save never waits for the index. The indexer's loop takes what was noted, the newest
record of each conversation only, and applies it in a worker thread, at most BATCH
conversations to a transaction. At start it compares the index with the store's stamps
and reads again, in the background, each file changed since it was indexed (every file,
when the index was missing or damaged); a noted save goes first, and makes reading
that conversation's file unneeded. A damaged index found later (a read or a write
fails with sqlite3.DatabaseError) is made anew the same way.

`search` runs in a worker thread of its own on the index's reading connection.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs
import trio

from actors.actor import ActorStats
from actors.record.items import ConversationRecord
from bmoe_daemon.fulltext import Hit, Known, Snippet, Stamp, TextIndex

log = logging.getLogger("bmoe.search")

BATCH = 64  # conversations applied in one transaction
FILES_BATCH = 8  # conversation files read again in one go at start
# Between two such batches: reading files holds the interpreter's lock for its Python
# part, so a long rebuild leaves the event loop (and the searches) room to run.
FILES_PAUSE_S = 0.005
WRITE_RETRY_S = 30.0  # after a write the disk refused (full): the batch is tried again then
_DISK_ERRORS = ("SQLITE_FULL", "SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM")


def _disk_refused(exc: sqlite3.DatabaseError) -> bool:
    """The disk refused a write (full, read-only, an I/O error): not damage, so the index
    is kept and the write tried again later, never made anew in a loop."""
    return any(str(getattr(exc, "sqlite_errorname", "")).startswith(name) for name in _DISK_ERRORS)
KNOWN_CONVERSATIONS = 64  # whose indexed items are remembered between saves


@attrs.frozen
class SearchAnswer:
    hits: list[Hit]
    more: bool
    indexing: bool  # conversations are still being read into the index: some may be missing


class Indexer:
    """See the module docstring. `stamps` gives the store's conversations and their
    files' stamps; `load` reads one conversation (blocking; KeyError when it is gone)."""

    def __init__(self, folder: Path, stamps: Callable[[], Mapping[str, Stamp]],
                 load: Callable[[str], tuple[ConversationRecord, Stamp]]) -> None:
        self._index = TextIndex(folder)
        self._stamps = stamps
        self._load = load
        self._pending: dict[str, tuple[ConversationRecord, Stamp] | None] = {}  # None: deleted
        self._stale: dict[str, None] = {}  # conversations whose files are to be read again, in order
        self._wake = trio.Event()
        self._known: Known = {}
        self._writes = trio.CapacityLimiter(1)
        self._reads = trio.CapacityLimiter(2)
        self._state = "starting"
        self._damaged: Exception | None = None  # a search found the file damaged: made anew by the loop

    # ---- what the store calls (cheap: noted, applied later) ----

    def saved(self, record: ConversationRecord, stamp: Stamp) -> None:
        self._pending[record.info.id] = (record, stamp)
        self._stale.pop(record.info.id, None)
        self._wake.set()

    def deleted(self, conversation_id: str) -> None:
        self._pending[conversation_id] = None
        self._stale.pop(conversation_id, None)
        self._wake.set()

    # ---- the actor ----

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open the index (made anew when it cannot be used), then apply what is noted
        until cancelled. Cancelled: a transaction already started finishes in its thread."""
        try:
            if not await trio.to_thread.run_sync(self._index.open, limiter=self._writes):
                log.info("no usable search index (missing, damaged or older): building the search index from "
                         "the conversation files")
            await self._find_stale()
            self._state = "serving"
            task_status.started()
            while True:
                if not self._pending and not self._stale and self._damaged is None:
                    self._wake = trio.Event()
                    await self._wake.wait()
                try:
                    if self._damaged is not None:
                        raise sqlite3.DatabaseError(str(self._damaged))
                    await self._step()
                except sqlite3.DatabaseError as exc:
                    if not _disk_refused(exc):
                        await self._remake(exc)
                        continue
                    log.error("the search index cannot be written (%s): trying again in %g s", exc, WRITE_RETRY_S)
                    await trio.sleep(WRITE_RETRY_S)
                except Exception:
                    # A bug must not end the daemon: what the batch held is left out of the
                    # index until its conversation is saved again or the daemon starts again.
                    log.exception("search index: a batch could not be indexed")
                    self._known.clear()
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(self._index.close, limiter=self._writes)

    async def _find_stale(self) -> None:
        stamps = dict(self._stamps())
        try:
            stale, gone = await trio.to_thread.run_sync(self._index.stale, stamps, limiter=self._writes)
        except sqlite3.DatabaseError as exc:
            await self._remake(exc)
            return
        if gone:
            for cid in gone:
                self._pending.setdefault(cid, None)
        for cid in stale:
            if cid not in self._pending:
                self._stale[cid] = None
        if stale or gone:
            log.info("search index: %d conversations to read again, %d to drop", len(stale), len(gone))

    async def _remake(self, exc: Exception) -> None:
        log.warning("the search index failed (%s): building the search index from the conversation files", exc)
        self._known.clear()
        self._damaged = None
        await trio.to_thread.run_sync(self._index.reset, limiter=self._writes)
        stamps = self._stamps()
        self._stale = {cid: None for cid in stamps if cid not in self._pending}
        self._pending = {cid: v for cid, v in self._pending.items() if v is not None}

    async def _step(self) -> None:
        if self._pending:
            batch = [self._pending.popitem() for _ in range(min(BATCH, len(self._pending)))]
            records = [v for _, v in batch if v is not None]
            removed = [cid for cid, v in batch if v is None]
            try:
                await trio.to_thread.run_sync(self._index.apply, records, removed, self._known,
                                              limiter=self._writes)
            except sqlite3.DatabaseError:
                self._known.clear()  # what it remembered was not committed
                for cid, value in batch:
                    self._pending.setdefault(cid, value)  # a save noted since is newer: it stays
                raise
        else:
            cids = list(self._stale)[:FILES_BATCH]
            for cid in cids:
                del self._stale[cid]
            try:
                await trio.to_thread.run_sync(self._read_and_apply, cids, limiter=self._writes)
            except sqlite3.DatabaseError:
                for cid in cids:
                    if cid not in self._pending:
                        self._stale[cid] = None
                raise
            await trio.sleep(FILES_PAUSE_S)
        while len(self._known) > KNOWN_CONVERSATIONS:
            self._known.pop(next(iter(self._known)))

    def _read_and_apply(self, cids: list[str]) -> None:
        records, removed = [], []
        for cid in cids:
            try:
                records.append(self._load(cid))
            except KeyError:
                removed.append(cid)
            except (OSError, ValueError, TypeError, RecursionError) as exc:
                log.warning("search index: conversation %s cannot be read (%s); it is left out", cid, exc)
        # Read from files: nothing remembered of them (their items are new objects).
        self._index.apply(records, removed)

    async def search(self, q: str, *, workspace: str | None = None, local: bool = True, limit: int = 20,
                     offset: int = 0) -> SearchAnswer:
        """The matches (see TextIndex.search); BadQuery for a query that cannot be one. A
        damaged index answers no match and is made anew in the background."""
        try:
            hits, more = await trio.to_thread.run_sync(
                lambda: self._index.search(q, workspace=workspace, local=local, limit=limit, offset=offset),
                limiter=self._reads)
        except sqlite3.DatabaseError as exc:
            log.warning("search index: a search failed (%s)", exc)
            self._damaged = exc
            self._wake.set()
            return SearchAnswer([], False, True)
        return SearchAnswer(hits, more, bool(self._stale) or self._state != "serving")

    async def matching(self, q: str) -> set[str]:
        """The conversations whose words match `q` (TextIndex.conversations_matching);
        BadQuery for a query that cannot be one. A damaged index answers none (the list
        then matches titles only) and is made anew in the background."""
        try:
            return await trio.to_thread.run_sync(self._index.conversations_matching, q, limiter=self._reads)
        except sqlite3.DatabaseError as exc:
            log.warning("search index: a search failed (%s)", exc)
            self._damaged = exc
            self._wake.set()
            return set()

    async def snippets(self, q: str, conversations: list[str]) -> dict[str, Snippet]:
        """Where each of `conversations` matches `q` (TextIndex.snippets); none from a
        damaged index."""
        try:
            return await trio.to_thread.run_sync(self._index.snippets, q, conversations, limiter=self._reads)
        except sqlite3.DatabaseError as exc:
            log.warning("search index: a snippet could not be read (%s)", exc)
            return {}

    def statistics(self) -> ActorStats:
        return ActorStats(kind="indexer", id="search", state=self._state,
                          mailbox=len(self._pending) + len(self._stale))
