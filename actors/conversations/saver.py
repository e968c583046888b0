"""A conversation's saver: it writes the record whenever it changed.

At once for a completed item, at most every STREAM_SAVE_INTERVAL_S while only a
streaming item grows. A save that fails (a full disk) leaves everything in memory,
says so once (a notice and the log), and is tried again with backoff until it succeeds;
nothing the conversation holds is lost meanwhile. The conversation actor
(actors/conversations/actor.py) runs one in its nursery.
"""

from __future__ import annotations

import errno
import logging
import math

import trio

from actors import notices
from actors.record.items import ConversationRecord
from actors.record.transcript import Transcript
from actors.runs.env import Store

log = logging.getLogger("bmoe.conversation")

STREAM_SAVE_INTERVAL_S = 0.3
SAVE_RETRY_FIRST_S = 0.5
SAVE_RETRY_MAX_S = 30.0


def save_problem(exc: OSError) -> str:
    """A failed save in plain words."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    return exc.strerror or str(exc)


class Saver:
    """See the module docstring. `start` serves it in a nursery; it serves until that
    nursery is cancelled, or until `drop` (the conversation was deleted)."""

    def __init__(self, transcript: Transcript, store: Store) -> None:
        self._t = transcript
        self._store = store
        self._serving = False
        self._dropped = False
        self._saved_version = 0
        self._attempt = trio.Event()  # set after every save attempt, then replaced
        self._error: str | None = None  # why the last save failed; None once one succeeds

    @property
    def error(self) -> str | None:
        """Why the record could not be saved, while it cannot; None when saved."""
        return self._error

    @property
    def saved(self) -> bool:
        """Whether what the record holds now is what was last written."""
        return self._saved_version == self._t.version

    def start(self, nursery: trio.Nursery) -> None:
        """Serve in `nursery`; `flush` waits for this saver from now on."""
        self._serving = True
        nursery.start_soon(self._serve)

    def stopped(self) -> None:
        """The nursery the saver served in has ended: `flush` no longer waits for it."""
        self._serving = False

    def drop(self) -> None:
        """Never write again (the conversation is deleted)."""
        self._dropped = True

    async def _serve(self) -> None:
        last = -math.inf
        retry = SAVE_RETRY_FIRST_S
        while True:
            await self._t.wait_changed()
            if not self._t.urgent:
                wait = last + STREAM_SAVE_INTERVAL_S - trio.current_time()
                if wait > 0:
                    with trio.move_on_after(wait):
                        await self._t.wait_urgent()
            # Only a streaming item grew: an interim save, without fsync. Anything else
            # (an item completed, the state changed, a flush) is saved durably.
            version, durable = self._t.take_changes()
            if self._dropped:
                return
            try:
                await self._store.save_conversation(self._record(), durable=durable)
            except OSError as exc:
                self._failed(exc)
                self._announce_attempt()
                self._t.mark_urgent()  # what failed is still to be written, durably
                await trio.sleep(retry)
                retry = min(retry * 2, SAVE_RETRY_MAX_S)
                continue
            retry = SAVE_RETRY_FIRST_S
            last = trio.current_time()
            self._saved_version = version
            if self._error is not None:
                self._error = None
                log.warning("conversation %s: saved again", self._t.id)
                self._t.notice(notices.SAVED_AGAIN, "info")
            self._announce_attempt()

    def _record(self) -> ConversationRecord:
        return self._t.record()

    def _failed(self, exc: OSError) -> None:
        why = save_problem(exc)
        if self._error is None:
            log.error("conversation %s: could not save: %s; retrying", self._t.id, why)
            self._t.notice(notices.SAVE_FAILED.format(why=why), "error")
        self._error = why

    def _announce_attempt(self) -> None:
        self._attempt.set()
        self._attempt = trio.Event()

    async def flush(self, *, unsaved: bool = False) -> None:
        """Wait until what has happened so far is on disk, or a save of it failed
        (`error` says why; the saver goes on trying). `unsaved`: the record the actor
        started from is not the file's either (one `restored` at start), so it is
        written even when nothing happened since. Returns at once when the saver does
        not serve."""
        if unsaved and self._saved_version == self._t.version:
            self._saved_version -= 1
        target = self._t.version
        while self._saved_version < target and self._serving and self._error is None:
            attempt = self._attempt
            self._t.mark_urgent()
            await attempt.wait()

    async def save_last(self) -> None:
        """Write the record once more, unless it is saved or dropped (the actor closes);
        a failure is logged. Cancelled: the write already started finishes in its thread."""
        if self._dropped or self.saved:
            return
        try:
            await self._store.save_conversation(self._record())
        except OSError as exc:
            log.error("conversation %s: could not save at close: %s", self._t.id, save_problem(exc))
