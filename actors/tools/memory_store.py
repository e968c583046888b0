"""What the agent remembers of each workspace: short notes in one SQLite file.

`<data>/agent/memory.sqlite` holds every workspace's memories, each kept by the
workspace's folder (its real path: a workspace removed and added again finds them), with
a full-text index (SQLite's FTS5, in Python's own sqlite3) over the text and the tags.
A search is of words and tags, ranked by bm25 (a tag counts twice a word of the text),
each word also as a prefix (`test` finds `tests`), at most SEARCH_MAX results.

Every call is blocking SQLite work and goes through `trio.to_thread.run_sync` behind one
limiter (one connection, one writer); a write is one transaction, so a crash leaves the
memory whole or absent. A full disk is DiskFull; another SQLite failure (a damaged file)
is sqlite3.Error, which the tools and the compaction turn into words or nothing.

Limits: TEXT_MAX characters a memory, TAGS_MAX tags of TAG_MAX characters (lower-case
letters, digits, `-`, `_`), PER_WORKSPACE_MAX memories a workspace (the oldest go first).
Text is stored as given: it is data the model reads, never instructions
(actors/tools/memory.py frames it so).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import trio

from actors.errors import DiskFull, Invalid, NotFound
from actors.ids import new_id, now

TEXT_MAX = 2000
TAGS_MAX = 8
TAG_MAX = 40
SEARCH_MAX = 8
QUERY_WORDS_MAX = 16
PER_WORKSPACE_MAX = 20_000
LIST_MAX = 1000
FILE_MODE = 0o600  # what the agent learned of the person's folders is theirs alone

_TAG = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
_WORD = re.compile(r"\w+", re.UNICODE)
T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY,
    mid TEXT NOT NULL UNIQUE,
    workspace TEXT NOT NULL,
    text TEXT NOT NULL,
    tags TEXT NOT NULL DEFAULT '',
    conversation TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS memories_by_workspace ON memories (workspace, created);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(text, tags, content='memories', content_rowid='rowid');
CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, text, tags) VALUES (new.rowid, new.text, new.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, tags) VALUES ('delete', old.rowid, old.text, old.tags);
END;
CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, text, tags) VALUES ('delete', old.rowid, old.text, old.tags);
    INSERT INTO memories_fts (rowid, text, tags) VALUES (new.rowid, new.text, new.tags);
END;
"""


@attrs.frozen
class Memory:
    id: str
    text: str
    tags: tuple[str, ...]
    conversation: str | None
    created: float
    updated: float

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "tags": list(self.tags), "conversation": self.conversation,
                "created": self.created, "updated": self.updated}


def clean_text(text: object) -> str:
    """The memory's text, stripped; Invalid when it is not a string, empty or too long."""
    if not isinstance(text, str) or not text.strip():
        raise Invalid("text: write what to remember, in a sentence or two.")
    text = text.strip()
    if "\x00" in text:
        raise Invalid("text: it holds a NUL character; take it out.")
    if len(text) > TEXT_MAX:
        raise Invalid(f"text: at most {TEXT_MAX} characters; keep one fact a memory.")
    return text


def clean_tags(tags: object) -> tuple[str, ...]:
    """The tags, lower-cased and deduplicated in order; Invalid when one cannot be kept."""
    if tags is None:
        return ()
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise Invalid("tags: a list of short words, such as [\"build\", \"tests\"].")
    out: list[str] = []
    for tag in tags:
        tag = tag.strip().lower()
        if not _TAG.match(tag) or len(tag) > TAG_MAX:
            raise Invalid(f"tags: {tag[:TAG_MAX]!r} is not a tag: lower-case letters, digits, - and _, "
                          f"at most {TAG_MAX} characters.")
        if tag not in out:
            out.append(tag)
    if len(out) > TAGS_MAX:
        raise Invalid(f"tags: at most {TAGS_MAX}.")
    return tuple(out)


# Words that match nearly every memory: left out of a query that has others.
STOPWORDS = frozenset(
    "a an and are as at be but by can do does for from has have how i if in into is it its me my no not of on "
    "or our please so that the their then there these this to was we what when where which who why will with "
    "you your".split()
)


def match_query(query: str) -> str | None:
    """The FTS5 query for the words of `query` (less STOPWORDS, unless it has no other):
    any of them, each also as a prefix; None when it has no word. Every word is quoted,
    so nothing in it is FTS5 syntax. Pure."""
    words: list[str] = []
    for word in _WORD.findall(query.lower()):
        if word not in words:
            words.append(word)
    if not words:
        return None
    words = [w for w in words if w not in STOPWORDS] or words
    return " OR ".join(f'"{w}"*' for w in words[:QUERY_WORDS_MAX])


def _row(row: Sequence[Any]) -> Memory:
    mid, text, tags, conversation, created, updated = row
    return Memory(mid, text, tuple(t for t in tags.split(" ") if t), conversation, created, updated)


_COLUMNS = "m.mid, m.text, m.tags, m.conversation, m.created, m.updated"


class Memories:
    """The memories of every workspace (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()  # one connection, used by one thread at a time
        self._limiter = trio.CapacityLimiter(1)

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            # Made the person's alone before SQLite opens it (its -wal and -shm take its mode).
            os.close(os.open(self._path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE))
            db = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(_SCHEMA)
            except BaseException:
                db.close()  # a damaged file: asked again next time, no connection left open
                raise
            self._db = db
        return self._db

    def _locked(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            try:
                return work(self._conn())
            except sqlite3.OperationalError as exc:
                if "full" in str(exc).lower():  # SQLITE_FULL: "database or disk is full"
                    raise DiskFull("The memories cannot be saved: the disk of the data folder is full.") from None
                raise

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await trio.to_thread.run_sync(self._locked, work, limiter=self._limiter)

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # ---- blocking work, one connection ----

    @staticmethod
    def _write(db: sqlite3.Connection, workspace: str, text: str, tags: tuple[str, ...],
               conversation: str | None) -> Memory:
        memory = Memory(new_id("m"), text, tags, conversation, now(), now())
        with db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("INSERT INTO memories (mid, workspace, text, tags, conversation, created, updated) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       (memory.id, workspace, text, " ".join(tags), conversation, memory.created, memory.updated))
            (count,) = db.execute("SELECT count(*) FROM memories WHERE workspace = ?", (workspace,)).fetchone()
            if count > PER_WORKSPACE_MAX:
                db.execute("DELETE FROM memories WHERE rowid IN (SELECT rowid FROM memories WHERE workspace = ? "
                           "ORDER BY created LIMIT ?)", (workspace, count - PER_WORKSPACE_MAX))
        return memory

    # ---- the calls ----

    async def write(self, workspace: str, text: object, tags: object = None, *,
                    conversation: str | None = None) -> Memory:
        """Keep a memory of `workspace` (a real path); Invalid when text or tags cannot be kept."""
        clean, tagged = clean_text(text), clean_tags(tags)
        return await self._run(lambda db: self._write(db, workspace, clean, tagged, conversation))

    async def search(self, workspace: str, query: str, limit: int = SEARCH_MAX) -> list[Memory]:
        """The workspace's memories that match any word of `query` (in the text or a tag),
        the best first, at most `limit`."""
        match = match_query(query)
        if match is None:
            return []
        sql = (f"SELECT {_COLUMNS} FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid "
               "WHERE memories_fts MATCH ? AND m.workspace = ? ORDER BY bm25(memories_fts, 1.0, 2.0) LIMIT ?")
        rows = await self._run(lambda db: db.execute(sql, (match, workspace, min(limit, SEARCH_MAX))).fetchall())
        return [_row(r) for r in rows]

    async def get(self, workspace: str, mid: str) -> Memory:
        """One memory of the workspace; NotFound when it has none of that id."""
        sql = f"SELECT {_COLUMNS} FROM memories m WHERE m.mid = ? AND m.workspace = ?"
        row = await self._run(lambda db: db.execute(sql, (mid, workspace)).fetchone())
        if row is None:
            raise NotFound(f"There is no memory {mid!r} in this workspace.")
        return _row(row)

    async def listing(self, workspace: str, limit: int = LIST_MAX) -> list[Memory]:
        """The workspace's memories, the newest first, at most `limit`."""
        sql = f"SELECT {_COLUMNS} FROM memories m WHERE m.workspace = ? ORDER BY m.created DESC LIMIT ?"
        rows = await self._run(lambda db: db.execute(sql, (workspace, limit)).fetchall())
        return [_row(r) for r in rows]

    async def count(self, workspace: str) -> int:
        rows = await self._run(lambda db: db.execute("SELECT count(*) FROM memories WHERE workspace = ?",
                                                     (workspace,)).fetchone())
        return int(rows[0])

    async def change(self, workspace: str, mid: str, *, text: object = None, tags: object = None) -> Memory:
        """Change a memory's text or tags (None: as it is); NotFound, Invalid."""
        new_text = None if text is None else clean_text(text)
        new_tags = None if tags is None else clean_tags(tags)

        def work(db: sqlite3.Connection) -> int:
            with db:
                sets: list[str] = ["updated = ?"]
                values: list[object] = [now()]
                if new_text is not None:
                    sets.append("text = ?")
                    values.append(new_text)
                if new_tags is not None:
                    sets.append("tags = ?")
                    values.append(" ".join(new_tags))
                cur = db.execute(f"UPDATE memories SET {', '.join(sets)} WHERE mid = ? AND workspace = ?",
                                 (*values, mid, workspace))
                return cur.rowcount

        if not await self._run(work):
            raise NotFound(f"There is no memory {mid!r} in this workspace.")
        return await self.get(workspace, mid)

    async def delete(self, workspace: str, mid: str) -> None:
        """Forget a memory; NotFound when the workspace has none of that id."""
        def work(db: sqlite3.Connection) -> int:
            with db:
                return db.execute("DELETE FROM memories WHERE mid = ? AND workspace = ?", (mid, workspace)).rowcount

        if not await self._run(work):
            raise NotFound(f"There is no memory {mid!r} in this workspace.")
