"""The full-text index of what people and the model wrote in conversations (SQLite FTS5).

What is indexed, one row each (`searchable`): a conversation's title, each message a
person sent, each answer (once it has streamed whole) and each tool card's title and
file. Not indexed: a tool's arguments and results (a command's output, a file read: what
the model saw, possibly a secret from a file), reasoning, notices, images.

The index is a cache of the conversation files, in `agent/search.sqlite`: when it is
missing, damaged or of another version it is deleted and built again from the records,
in the background (a search meanwhile says `indexing`). Each conversation's row keeps
the stamp (inode, size, mtime) of the file it was indexed from, so a start reads again
only the files that changed since (a crash between a save and its indexing) and drops
the conversations that are gone.

This module is the index itself: blocking calls, each made in a worker thread by the
Indexer (bmoe_daemon/indexer.py), writes on one connection and searches on another (WAL:
a search never waits for a write).
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from actors.record.items import ConversationRecord, Item

INDEX_FILE = "search.sqlite"
SCHEMA_VERSION = "1"
MAX_DOC_CHARS = 32_000  # of one item's text: a longer answer is found by its beginning
MAX_QUERY_CHARS = 200
MAX_TERMS = 16
MAX_LIMIT = 100
MAX_OFFSET = 1_000
SNIPPET_TOKENS = 16
# A search that matches more rows than this ranks the newest of them only, so a common
# word costs what this many rows cost, not what the whole history holds.
RANK_WINDOW = 2_000

Stamp = tuple[int, int, int]
# Per conversation, what its last apply indexed: key -> (the item, or the title, and its signature).
Known = dict[str, dict[str, tuple[object, bytes]]]

_SCHEMA = (
    "CREATE TABLE meta(k TEXT PRIMARY KEY, v TEXT NOT NULL)",
    "CREATE TABLE convs(id TEXT PRIMARY KEY, stamp TEXT NOT NULL, title TEXT NOT NULL, workspace TEXT,"
    " local_only INTEGER NOT NULL, updated REAL NOT NULL)",
    "CREATE TABLE docs(rowid INTEGER PRIMARY KEY, conv TEXT NOT NULL, item TEXT NOT NULL, kind TEXT NOT NULL,"
    " sig BLOB NOT NULL)",
    "CREATE INDEX docs_conv ON docs(conv, item)",
    "CREATE VIRTUAL TABLE fts USING fts5(body, tokenize='unicode61 remove_diacritics 2', prefix='2 3')",
)


class BadQuery(ValueError):
    """A search asked for in a way that cannot be answered; the text says what to send."""


def searchable(item: Item) -> str | None:
    """The words of an item a person may look for; None for an item that has none."""
    if item.kind == "user":
        text = item.text
    elif item.kind == "assistant":
        text = None if item.streaming or item.not_answer else item.text
    elif item.kind == "tool":
        text = " ".join(p for p in (item.title or item.tool, item.file) if p)
    else:
        return None
    if not text or not text.strip():
        return None
    return text[:MAX_DOC_CHARS]


def match_expression(q: str) -> str:
    """The FTS5 expression for what a person typed: each word a quoted phrase (so no
    text is read as FTS5's syntax), all of them required, the last one a prefix while
    it is being typed (no space after it). BadQuery for an empty or oversized one."""
    if len(q) > MAX_QUERY_CHARS:
        raise BadQuery(f"`q` is at most {MAX_QUERY_CHARS} characters.")
    q = q.replace("\0", " ")  # SQLite would end the expression there
    terms = q.split()
    if not terms:
        raise BadQuery("`q` is empty: give the words to look for.")
    if len(terms) > MAX_TERMS:
        raise BadQuery(f"`q` has at most {MAX_TERMS} words.")
    phrases = ['"' + t.replace('"', '""') + '"' for t in terms]
    if not q[-1].isspace():
        phrases[-1] += "*"
    return " ".join(phrases)


def _sig(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def _stamp_text(stamp: Stamp) -> str:
    return f"{stamp[0]}:{stamp[1]}:{stamp[2]}"


@attrs.frozen
class Hit:
    """One match: the conversation, the item (None: the title matched), the item's kind
    (`title` for the title) and a snippet with the matches' [start, end) in it."""

    conversation: str
    title: str
    item: str | None
    kind: str
    snippet: str
    marks: tuple[tuple[int, int], ...]
    updated: float
    workspace: str | None

    def to_json(self) -> dict[str, Any]:
        return {"conversation": self.conversation, "title": self.title, "item": self.item, "kind": self.kind,
                "snippet": self.snippet, "marks": [list(m) for m in self.marks], "updated": self.updated,
                "workspace": self.workspace}


@attrs.frozen
class Snippet:
    """Where a conversation matched, for its row in the list: the item (None: the
    title), its kind (`title` for the title), the snippet and its marks."""

    item: str | None
    kind: str
    snippet: str
    marks: tuple[tuple[int, int], ...]

    def to_json(self) -> dict[str, Any]:
        return {"item": self.item, "kind": self.kind, "snippet": self.snippet, "marks": [list(m) for m in self.marks]}


_WORD = re.compile(r"[^\W_]+")  # a token as FTS5's unicode61 reads one: letters and digits


def _fold(text: str) -> str:
    """A token as the index keeps it: without diacritics, in lower case."""
    if text.isascii():
        return text.lower()
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).casefold()


@attrs.frozen
class Terms:
    """What a query matches, token by token: whole tokens, and beginnings (the last
    word's last token while it is being typed)."""

    whole: frozenset[str]
    starts: tuple[str, ...]

    @classmethod
    def of(cls, q: str) -> Terms:
        q = q.replace("\0", " ")
        tokens = [_fold(m.group()) for m in _WORD.finditer(q)]
        if tokens and q and not q[-1].isspace() and _WORD.search(q.split()[-1]):
            return cls(frozenset(tokens[:-1]), (tokens[-1],))
        return cls(frozenset(tokens), ())

    def match(self, token: str) -> bool:
        folded = _fold(token)
        return folded in self.whole or any(folded.startswith(s) for s in self.starts)

    def all_in(self, body: str) -> bool:
        """Whether `body` holds every word (as FTS5's MATCH of match_expression does)."""
        tokens = {_fold(t) for t in _WORD.findall(body)}
        return self.whole <= tokens and all(any(t.startswith(s) for t in tokens) for s in self.starts)

    def pattern(self) -> re.Pattern[str] | None:
        """Where a match may start in the raw text: a quick first look (a token with
        diacritics is found by the token walk instead)."""
        words = sorted({*self.whole, *self.starts}, key=len, reverse=True)
        if not words:
            return None
        return re.compile(r"(?<![^\W_])(?:" + "|".join(re.escape(w) for w in words) + ")", re.IGNORECASE)


def _first_match(body: str, terms: Terms) -> re.Match[str] | None:
    quick = terms.pattern()
    if quick is None:
        return None
    found = quick.search(body)
    for origin in ((found.start(),) if found is not None else ()) + (0,):
        for m in _WORD.finditer(body, origin):
            if terms.match(m.group()):
                return m
    return None


def snippet(body: str, terms: Terms, tokens: int = SNIPPET_TOKENS) -> tuple[str, tuple[tuple[int, int], ...]]:
    """About `tokens` tokens of `body` from a little before its first match ("…" where
    cut), and each match's [start, end) in the snippet."""
    first = _first_match(body, terms)
    lo = 0
    if first is not None:
        lead = [m for m in _WORD.finditer(body, max(0, first.start() - 200), first.start())]
        if lead and lead[0].start() > 0 and _WORD.match(body, lead[0].start() - 1):
            lead = lead[1:]  # the window began inside a word
        lead = lead[-(tokens // 4):]  # a few tokens before it, for its context
        lo = lead[0].start() if lead else first.start()
    picked = list(itertools.islice(_WORD.finditer(body, lo), tokens))
    if not picked:
        return body[:200], ()
    lo, hi = picked[0].start(), picked[-1].end()
    head = "…" if body[:lo].strip() else ""
    tail = "…" if body[hi:].strip() else ""
    marks = tuple((len(head) + m.start() - lo, len(head) + m.end() - lo) for m in picked if terms.match(m.group()))
    return head + body[lo:hi] + tail, marks


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")  # a cache: a crash loses at most the last writes, found by stamps
    return conn


class TextIndex:
    """See the module docstring. Every method blocks: call it from one worker thread at a
    time for the writes (`apply`, `remove`, `stale`, `reset`), any thread for `search`.
    A sqlite3.DatabaseError from any of them means the file is damaged: `reset` it."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / INDEX_FILE
        self._w: sqlite3.Connection | None = None
        self._r: sqlite3.Connection | None = None
        self._r_lock = threading.Lock()
        self._generation = 0  # counts resets: a reader opened before one opens again
        self._r_generation = -1

    def open(self) -> bool:
        """Open the index, made anew when it is missing, damaged or of another version;
        False when it was made anew (every conversation must be indexed)."""
        try:
            conn = _connect(self.path)
            row = conn.execute("SELECT v FROM meta WHERE k = 'version'").fetchone()
            conn.execute("SELECT count(*) FROM convs").fetchone()
            if row is not None and row[0] == SCHEMA_VERSION:
                self._w = conn
                return True
            conn.close()
        except sqlite3.DatabaseError:
            pass
        self.reset()
        return False

    def reset(self) -> None:
        """Delete the file (and its journal) and make an empty index."""
        self.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                os.unlink(f"{self.path}{suffix}")
            except FileNotFoundError:
                pass
        conn = _connect(self.path)
        with conn:
            conn.execute("BEGIN")
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute("INSERT INTO meta VALUES ('version', ?)", (SCHEMA_VERSION,))
        self._w = conn
        self._generation += 1

    def close(self) -> None:
        if self._w is not None:
            self._w.close()
        with self._r_lock:  # not under a search
            if self._r is not None:
                self._r.close()
        self._w = self._r = None

    def _writer(self) -> sqlite3.Connection:
        if self._w is None:
            raise sqlite3.DatabaseError("the index is not open")
        return self._w

    def stale(self, stamps: Mapping[str, Stamp]) -> tuple[list[str], list[str]]:
        """Of the conversations the store holds (`stamps`), those indexed from another
        version of their file or not at all (oldest first by their last index), and the
        conversations indexed that the store no longer holds."""
        have = dict(self._writer().execute("SELECT id, stamp FROM convs").fetchall())
        stale = [cid for cid, stamp in stamps.items() if have.get(cid) != _stamp_text(stamp)]
        gone = [cid for cid in have if cid not in stamps]
        return stale, gone

    def apply(self, records: Iterable[tuple[ConversationRecord, Stamp]], removed: Iterable[str] = (),
              known: Known | None = None) -> None:
        """Bring the conversations to what the records hold (in one transaction), and
        drop `removed`. `known`: per conversation, each indexed item with its signature
        as the last apply left it; kept up to date here, it spares re-reading the rows
        and re-hashing items that are the same objects as last time."""
        conn = self._writer()
        with conn:
            conn.execute("BEGIN")
            for cid in removed:
                self._remove(conn, cid)
                if known is not None:
                    known.pop(cid, None)
            for record, stamp in records:
                self._apply_one(conn, record, stamp, known)

    @staticmethod
    def _remove(conn: sqlite3.Connection, cid: str) -> None:
        conn.execute("DELETE FROM fts WHERE rowid IN (SELECT rowid FROM docs WHERE conv = ?)", (cid,))
        conn.execute("DELETE FROM docs WHERE conv = ?", (cid,))
        conn.execute("DELETE FROM convs WHERE id = ?", (cid,))

    def _apply_one(self, conn: sqlite3.Connection, record: ConversationRecord, stamp: Stamp,
                   known: Known | None) -> None:
        info = record.info
        cid = info.id
        mine = known.get(cid) if known is not None else None
        if mine is None:
            before = dict(conn.execute("SELECT item, sig FROM docs WHERE conv = ?", (cid,)).fetchall())
        else:
            before = {key: sig for key, (_, sig) in mine.items()}
        now: dict[str, tuple[object, bytes]] = {}
        wanted: dict[str, tuple[str, str, bytes]] = {}  # key -> (kind, text, signature): new or changed
        for item in record.items:
            old = mine.get(item.id) if mine is not None else None
            if old is not None and old[0] is item:  # the same value as last time: nothing to read
                now[item.id] = old
                continue
            text = searchable(item)
            if text is None:
                continue
            sig = _sig(text)
            now[item.id] = (item, sig)
            if before.get(item.id) != sig:
                wanted[item.id] = (item.kind, text, sig)
        # The title, as a row of its own under the key "" (never an item's id).
        title = info.title.strip()
        if title:
            sig = _sig(title)
            now[""] = (title, sig)
            if before.get("") != sig:
                wanted[""] = ("title", title, sig)
        for key in before:
            if key not in now:
                conn.execute("DELETE FROM fts WHERE rowid = (SELECT rowid FROM docs WHERE conv = ? AND item = ?)",
                             (cid, key))
                conn.execute("DELETE FROM docs WHERE conv = ? AND item = ?", (cid, key))
        for key, (kind, text, sig) in wanted.items():
            if key in before:
                rowid = conn.execute("SELECT rowid FROM docs WHERE conv = ? AND item = ?", (cid, key)).fetchone()[0]
                conn.execute("UPDATE docs SET sig = ?, kind = ? WHERE rowid = ?", (sig, kind, rowid))
                conn.execute("UPDATE fts SET body = ? WHERE rowid = ?", (text, rowid))
            else:
                cur = conn.execute("INSERT INTO docs(conv, item, kind, sig) VALUES (?, ?, ?, ?)", (cid, key, kind, sig))
                conn.execute("INSERT INTO fts(rowid, body) VALUES (?, ?)", (cur.lastrowid, text))
        conn.execute("INSERT OR REPLACE INTO convs VALUES (?, ?, ?, ?, ?, ?)",
                     (cid, _stamp_text(stamp), info.title, info.workspace, int(info.local_only), info.updated))
        if known is not None:
            known[cid] = now

    def _reader(self) -> sqlite3.Connection:
        if self._r is None or self._r_generation != self._generation:
            if self._r is not None:
                self._r.close()
            self._r = _connect(self.path)
            self._r_generation = self._generation
        return self._r

    def conversations_matching(self, q: str) -> set[str]:
        """Every conversation whose words match `q` (see match_expression): the list's own
        `q` (GET /api/conversations) keeps its order, cursor and visibility and asks only
        which rows match. One pass over the matches, no ranking: about 30 ms for a word
        in every item of 10,000 conversations (ops/bench/conversation_search.py)."""
        expr = match_expression(q)
        with self._r_lock:
            rows = self._reader().execute(
                "SELECT DISTINCT d.conv FROM fts f JOIN docs d ON d.rowid = f.rowid WHERE fts MATCH ?",
                (expr,)).fetchall()
        return {r[0] for r in rows}

    def snippets(self, q: str, conversations: list[str]) -> dict[str, Snippet]:
        """Where each of `conversations` (from `conversations_matching`) matches `q`: its
        newest item (or its title) that holds every word, as a snippet. Read from the
        conversation's own rows, not by MATCH: FTS5 would walk the whole doclist again
        for each of them."""
        terms = Terms.of(q)
        out: dict[str, Snippet] = {}
        with self._r_lock:
            conn = self._reader()
            for cid in conversations:
                # Newest first, read only as far as the first row with every word.
                best = some = None
                for r in conn.execute("SELECT d.item, d.kind, f.body FROM docs d JOIN fts f ON f.rowid = d.rowid"
                                      " WHERE d.conv = ? ORDER BY d.rowid DESC", (cid,)):
                    if terms.all_in(r[2]):
                        best = r
                        break
                    if some is None and _first_match(r[2], terms) is not None:
                        some = r
                best = best or some
                if best is not None:
                    text, spans = snippet(best[2], terms)
                    out[cid] = Snippet(best[0] or None, best[1], text, spans)
        return out

    def search(self, q: str, *, workspace: str | None = None, local: bool = True, limit: int = 20,
               offset: int = 0) -> tuple[list[Hit], bool]:
        """The matches of `q` (see match_expression), best first, and whether there are
        more after them. `local` False leaves out the conversations only this computer
        sees (a workspace, a provider route); `workspace`: only that workspace's."""
        expr = match_expression(q)
        filters, args = "", [expr]
        if not local:
            filters += " AND c.local_only = 0"
        if workspace is not None:
            filters += " AND c.workspace = ?"
            args.append(workspace)
        # The newest RANK_WINDOW matches (rowids grow as items are indexed), the best of
        # those by bm25 (computed for the window only), then the snippets of the page only.
        ranked = (
            "SELECT rowid, conv, title, item, kind, updated, workspace FROM"
            " (SELECT f.rowid AS rowid, f.rank AS score, d.conv AS conv, c.title AS title, d.item AS item,"
            "   d.kind AS kind, c.updated AS updated, c.workspace AS workspace"
            "  FROM fts f JOIN docs d ON d.rowid = f.rowid JOIN convs c ON c.id = d.conv"
            f"  WHERE fts MATCH ?{filters} ORDER BY f.rowid DESC LIMIT ?)"
            " ORDER BY score, updated DESC LIMIT ? OFFSET ?"
        )
        with self._r_lock:
            conn = self._reader()
            rows = conn.execute(ranked, (*args, RANK_WINDOW, limit + 1, offset)).fetchall()
            page = rows[:limit]
            marks = "?" + ",?" * (len(page) - 1) if page else ""
            # The bodies by rowid, no MATCH: FTS5's own snippet() would merge a prefix's
            # whole doclist again for each row; the snippet is cut here instead.
            bodies = dict(conn.execute(f"SELECT rowid, body FROM fts WHERE rowid IN ({marks})",
                                       [r[0] for r in page]).fetchall()) if page else {}
        terms = Terms.of(q)
        hits = []
        for rowid, cid, title, item, kind, updated, ws in page:
            text, spans = snippet(bodies.get(rowid, ""), terms)
            hits.append(Hit(cid, title, item or None, kind, text, spans, updated, ws))
        return hits, len(rows) > limit
