"""A conversation's side of the checkpoints (actors/checkpoints/store.py): one taken
before each run that may change the workspace and one after it, what each message's
runs changed, and a rewind of the files, the conversation, or both.

A run is checkpointed when the conversation has a workspace and its mode is not
`read_only` (a compaction changes no file): the built-in agent's runs (their helpers
inside them), a scheduled task's, another agent's over ACP alike, since the
checkpoint is of the folder, whoever writes in it. A checkpoint that cannot be taken
(git missing, a full disk) does not stop the run: a notice says its changes cannot be
undone.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import trio

from actors.actor import Reply
from actors.checkpoints.git import GitFailed
from actors.checkpoints.restore import RestoreFailed
from actors.checkpoints.store import Checkpoints
from actors.errors import ActorError, ActorGone, Invalid, NoCheckpoints, NotFound
from actors.record.transcript import Transcript
from actors.runs.base import RunRequest
from actors.runs.env import Env

log = logging.getLogger("bmoe.undo")

CHECKPOINT_S = 60.0  # the after-run checkpoint, shielded (a stop, a shutdown), gets this long
NO_CHECKPOINT = "No checkpoint could be taken ({why}): what this run changes cannot be undone from here."


class Undo:
    """See the module docstring."""

    def __init__(self, transcript: Transcript, env: Env) -> None:
        self._t = transcript
        self._env = env
        self.rewinding = False  # a rewind is going on: the actor starts no run meanwhile
        # Held while the store is written or read. The after-run checkpoint goes on in the
        # background once the conversation is idle again (`_settled` set when it is done):
        # the next run's before-checkpoint, a rewind and a read of the changes wait for it,
        # so none sees a run half recorded.
        self._taking = trio.Lock()
        self._settled = trio.Event()
        self._settled.set()

    def _where(self) -> tuple[Checkpoints, str, Path] | None:
        cp, ws = self._env.checkpoints, self._t.info.workspace
        path = self._env.resolve_workspace(ws) if ws and cp is not None else None
        return (cp, ws, path) if cp is not None and ws and path is not None else None

    def messages(self) -> list[str]:
        """The ids of the conversation's messages, in order."""
        return [i.id for i in self._t.items if i.kind == "user"]

    async def before(self, request: RunRequest) -> str | None:
        """Checkpoint before a run; the message it works (None: no checkpoint taken)."""
        where, messages = self._where(), self.messages()
        if where is None or request.compact or self._t.info.mode == "read_only" or not messages:
            return None
        cp, ws, path = where
        try:
            await self._wait_settled()
            async with self._taking:
                await cp.before_run(ws, path, self._t.id, messages[-1])
        except GitFailed as exc:
            self._t.notice(NO_CHECKPOINT.format(why=exc), "warn")
            return None
        return messages[-1]

    def after(self, item: str, nursery: trio.Nursery) -> None:
        """Start the checkpoint after a run of `item` in `nursery` and return at once, so
        the conversation says it is idle (and takes a message) while the files are read;
        the next run's before-checkpoint, a rewind and a read of the changes wait for it.
        It is bounded and shielded from its first step: taken when the run was stopped,
        and during a shutdown, too. Now and then the store is tidied afterwards."""
        where = self._where()
        if where is None:
            return
        settled = self._settled = trio.Event()
        nursery.start_soon(self._after, where, item, settled, nursery)

    async def _after(self, where: tuple[Checkpoints, str, Path], item: str, settled: trio.Event,
                     nursery: trio.Nursery) -> None:
        cp, ws, path = where
        due = False
        with trio.move_on_after(CHECKPOINT_S) as cs:
            cs.shield = True
            try:
                async with self._taking:
                    due = await cp.after_run(ws, path, self._t.id, item)
            except GitFailed as exc:
                log.warning("conversation %s: no checkpoint after the run: %s", self._t.id, exc)
            finally:
                settled.set()
        if due:
            nursery.start_soon(self._tidy, cp, ws, path)

    async def _wait_settled(self) -> None:
        """Once the last after-run checkpoint is taken."""
        await self._settled.wait()

    @staticmethod
    async def _tidy(cp: Checkpoints, ws: str, path: Path) -> None:
        try:
            await cp.tidy(ws, path)
        except GitFailed as exc:
            log.warning("the checkpoints of workspace %s could not be tidied: %s", ws, exc)

    async def settle(self) -> None:
        """A run the daemon died in gets its after-checkpoint (the actor's start)."""
        where = self._where()
        if where is not None:
            try:
                await where[0].settle(where[1], where[2], self._t.id)
            except GitFailed as exc:
                log.warning("conversation %s: checkpoints not settled: %s", self._t.id, exc)

    def _need(self) -> tuple[Checkpoints, str, Path]:
        where = self._where()
        if where is None:
            raise NotFound("This conversation has no workspace, so no checkpoints.")
        return where

    async def changes(self) -> list[dict[str, Any]]:
        """What GET .../changes answers: each message's runs (and each rewind) that changed files."""
        if self._where() is None:
            return []
        cp, ws, path = self._need()
        try:
            await self._wait_settled()
            async with self._taking:
                return await cp.changes(ws, path, self._t.id, self.messages())
        except GitFailed as exc:
            raise NoCheckpoints(f"The checkpoints cannot be read: {exc}.") from None

    async def diff(self, item: str, file: str | None) -> dict[str, Any]:
        cp, ws, path = self._need()
        try:
            await self._wait_settled()
            async with self._taking:
                text, cut = await cp.diff(ws, path, self._t.id, item, file)
        except GitFailed as exc:
            raise NoCheckpoints(f"The checkpoints cannot be read: {exc}.") from None
        return {"item": item, "path": file, "diff": text, "truncated": cut}

    def check_rewind(self, item: str, files: bool, conversation: bool) -> None:
        """Invalid or NotFound for a rewind that cannot be (checked before it starts)."""
        if not files and not conversation:
            raise Invalid("Say what to rewind: `files`, `conversation`, or both.")
        if conversation:
            found = self._t.find(item)
            if found is None or found.kind != "user":
                raise NotFound("That message is not in this conversation.")
            if self._t.info.agent != "builtin":
                raise Invalid("Another agent's session cannot be rewritten; rewind the files only.")
        if files:
            self._need()

    def start(self, nursery: trio.Nursery, item: str, files: bool, conversation: bool,
              force: bool) -> Reply[dict[str, Any]]:
        """Check and start a rewind in `nursery`; its reply, set when it is done.
        `rewinding` is up until then."""
        self.check_rewind(item, files, conversation)
        self.rewinding, done = True, Reply[dict[str, Any]]()

        async def rewinding() -> None:
            try:
                done.set(await self.rewind(item, files, conversation, force))
            except ActorError as exc:
                done.fail(exc)
            finally:
                self.rewinding = False
                if not done.done:
                    done.fail(ActorGone("the conversation closed during the rewind"))

        nursery.start_soon(rewinding)
        return done

    async def rewind(self, item: str, files: bool, conversation: bool, force: bool) -> dict[str, Any]:
        """The rewind (the caller has checked it, and no run can start meanwhile): the
        files first (ChangedSince: nothing changed), then the conversation."""
        out: dict[str, Any] = {"item": item, "files": None}
        if files:
            cp, ws, path = self._need()
            try:
                await self._wait_settled()
                async with self._taking:
                    result = await cp.rewind(ws, path, self._t.id, item, self.messages(), force=force)
            except (GitFailed, RestoreFailed) as exc:
                raise NoCheckpoints(f"The files could not be rewound: {exc}.") from None
            out["files"] = result.to_json()
        if conversation and self._t.find(item) is not None:
            messages = self.messages()
            gone = messages[messages.index(item):]
            self._t.drop_from(item)
            self._t.publish_info()
            where = self._where()
            if where is not None:
                try:
                    await where[0].forget(where[1], where[2], self._t.id, gone)
                except GitFailed as exc:
                    log.warning("conversation %s: checkpoints of dropped messages kept: %s", self._t.id, exc)
        return out

    async def forget(self) -> None:
        """The conversation is deleted: its checkpoints go too."""
        where = self._where()
        if where is not None:
            try:
                await where[0].forget(where[1], where[2], self._t.id)
            except GitFailed as exc:
                log.warning("conversation %s: checkpoints kept: %s", self._t.id, exc)
