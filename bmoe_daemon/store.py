"""The store: conversations and workspaces as JSON files under the data folder.

Every file is written whole to a temporary file in the same folder, fsynced, then
renamed over the old one, so a crash at any moment leaves either the previous
version or the new one, never a torn file. Writes run in a worker thread; one lock
per file keeps them in order.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import trio

from actors.atomic import read_own_file, write_atomic
from actors.hub import Workspace
from actors.items import ConversationRecord, Item

log = logging.getLogger("bmoe.store")

# What the files this store reads may hold at most (a conversation is written whole).
MAX_CONVERSATION_FILE_BYTES = 1024 * 1024 * 1024
MAX_SETTINGS_FILE_BYTES = 16 * 1024 * 1024
# How many conversations keep their items' encodings between saves.
ENCODED_CONVERSATIONS = 32

_SAFE_ID = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_")


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class Store:
    """See the module docstring."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir
        self.agent_dir = data_dir / "agent"
        self.conv_dir = self.agent_dir / "conversations"
        self.conv_dir.mkdir(parents=True, exist_ok=True)
        self._locks: dict[str, trio.Lock] = {}
        self._encoded: dict[str, dict[str, tuple[Item, bytes]]] = {}
        self._encoded_lock = threading.Lock()
        self._limiter = trio.CapacityLimiter(4)
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
                data = json.loads(read_own_file(path, MAX_CONVERSATION_FILE_BYTES))
                out.append(ConversationRecord.from_json(data))
            except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
                log.warning("skipping unreadable conversation file %s: %s", path, exc)
        return out

    async def save_conversation(self, record: ConversationRecord, *, durable: bool = True) -> None:
        """Write the conversation whole. Cancelled: the write already started finishes
        in its thread; the file is the old version or the new one. `durable=False`: an
        interim save while an item streams, without fsync (see write_atomic)."""
        path = self.conversation_path(record.info.id)
        async with self._lock(path.name):
            await trio.to_thread.run_sync(self._write_record, path, record, durable, limiter=self._limiter)

    def _write_record(self, path: Path, record: ConversationRecord, durable: bool = True) -> None:
        write_atomic(path, self.encode_record(record), durable=durable)

    def encode_record(self, record: ConversationRecord) -> bytes:
        """The record as the file's bytes. Items are immutable values, so each one's
        encoding is kept (for the last ENCODED_CONVERSATIONS saved) and a save encodes
        only the items that are new or changed since, not the whole conversation."""
        cid = record.info.id
        with self._encoded_lock:
            cache = self._encoded.pop(cid, None) or {}
            self._encoded[cid] = cache  # most recently saved last
            while len(self._encoded) > ENCODED_CONVERSATIONS:
                self._encoded.pop(next(iter(self._encoded)))
        parts: list[bytes] = []
        append, get = parts.append, cache.get
        for item in record.items:
            hit = get(item.id)
            if hit is not None and hit[0] is item:
                append(hit[1])
            else:
                data = _dumps(item.to_json())
                cache[item.id] = (item, data)
                append(data)
        if len(cache) > len(parts):  # every item is in the cache now: the rest are gone
            keep = {item.id for item in record.items}
            for gone in [key for key in cache if key not in keep]:
                del cache[gone]
        head = record.head_json()
        head["items"] = []  # last, so the items' bytes go where its brackets are
        out = _dumps(head)
        assert out.endswith(b'"items":[]}')
        return b"".join((out[: -len(b"]}")], b",".join(parts), b"]}"))

    async def delete_conversation(self, conversation_id: str) -> None:
        path = self.conversation_path(conversation_id)
        async with self._lock(path.name):
            try:
                path.unlink()
            except FileNotFoundError:
                pass

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
                out.append(Workspace(str(row["id"]), str(row["name"]), str(row["path"])))
            except (KeyError, TypeError):
                continue
        return out

    async def save_workspaces(self, workspaces: list[Workspace]) -> None:
        path = self.agent_dir / "workspaces.json"
        data = _dumps([w.to_json() for w in workspaces])
        async with self._lock(path.name):
            await trio.to_thread.run_sync(write_atomic, path, data, limiter=self._limiter)
