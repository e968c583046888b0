"""The hub actor: the workspaces, and a supervisor for every conversation actor.

It loads what the store holds at start (a conversation that was running reads
`idle` with a notice), starts one actor per conversation in its nursery, and on
shutdown closes each, which stops its run and saves it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Protocol

import attrs
import trio

from actors.base import ActorStats
from actors.conversation import Conversation, save_problem
from actors.env import Env
from actors.errors import DiskFull, Invalid, NotAFolder, NotFound
from actors.items import MODES, ConversationInfo, ConversationRecord, Item, Mode, new_id, now
from actors.notices import CHAT_ONLY_NO_WORKSPACE
from actors.transcript import info_event, restored

log = logging.getLogger("bmoe.hub")

AGENTS = ("builtin",)
MAX_RESTARTS = 5


@attrs.frozen
class Workspace:
    id: str
    name: str
    path: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "path": self.path}


class HubStore(Protocol):
    def load_conversations(self) -> list[ConversationRecord]: ...

    def load_workspaces(self) -> list[Workspace]: ...

    async def save_workspaces(self, workspaces: list[Workspace]) -> None: ...

    async def save_conversation(self, record: ConversationRecord, *, durable: bool = True) -> None: ...

    async def delete_conversation(self, conversation_id: str) -> None: ...


def _readable_folder(path: str) -> str | None:
    """The folder's canonical path, or None when it is not a folder this user can read."""
    real = os.path.realpath(os.path.expanduser(path))
    return real if os.path.isdir(real) and os.access(real, os.R_OK | os.X_OK) else None


class Hub:
    """See the module docstring."""

    def __init__(self, env: Env, store: HubStore) -> None:
        self._store = store
        self._env = attrs.evolve(env, resolve_workspace=self.workspace_path)
        self._workspaces: dict[str, Workspace] = {}
        self._convs: dict[str, Conversation] = {}
        self._nursery: trio.Nursery | None = None
        self._state = "starting"
        self._closing = trio.Event()
        self._stopped = trio.Event()

    @property
    def env(self) -> Env:
        return self._env

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        for ws in self._store.load_workspaces():
            self._workspaces[ws.id] = ws
        loaded = self._store.load_conversations()
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                for record in loaded:
                    fixed = restored(record)
                    conv = await nursery.start(self._supervise, fixed)
                    if fixed is not record:
                        await conv.flush()  # the restart notice is on disk before serving
                self._state = "serving"
                task_status.started()
                await self._closing.wait()
                for conv in self._convs.values():
                    conv.close()
        finally:
            self._state = "stopped"
            self._nursery = None
            self._stopped.set()

    async def _supervise(
        self, record: ConversationRecord, *, task_status: trio.TaskStatus[Conversation] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run a conversation actor; one that fails is logged and started again from
        its last state, with a notice, so one conversation's bug never ends the daemon."""
        status: trio.TaskStatus[Conversation] | None = task_status
        restarts = 0
        while True:
            conv = Conversation(record, self._env)
            self._convs[conv.id] = conv
            try:
                # Returns when the actor ends: closed, deleted, or failed.
                await self._run_actor(conv, status)
                return
            except Exception:
                if status is not None and not conv.served:
                    raise
                status = None
                log.exception("conversation %s failed; starting it again", conv.id)
                restarts += 1
                if self._closing.is_set() or conv.deleted or restarts > MAX_RESTARTS:
                    self._convs.pop(conv.id, None)
                    return
                record = restored(attrs.evolve(conv.record(), info=attrs.evolve(conv.info, state="running")))

    async def _run_actor(self, conv: Conversation, status: trio.TaskStatus[Conversation] | None) -> None:
        async with trio.open_nursery() as nursery:
            await nursery.start(conv.run)
            if status is not None:
                status.started(conv)

    def close(self) -> None:
        """Close every conversation: each stops its run with a notice and saves."""
        self._state = "stopping"
        self._closing.set()

    async def wait_stopped(self) -> None:
        """Wait until `run` has returned: every conversation's actor ended and saved."""
        await self._stopped.wait()

    # ---- workspaces ----

    def workspaces(self) -> list[Workspace]:
        return list(self._workspaces.values())

    def workspace_path(self, workspace_id: str) -> Path | None:
        ws = self._workspaces.get(workspace_id)
        return Path(ws.path) if ws else None

    async def add_workspace(self, path: str, name: str | None = None) -> Workspace:
        if self._env.chat_only:
            raise Invalid("This daemon runs as plain chat (--chat-only): conversations have no folders.")
        if not os.path.isabs(path) and not path.startswith("~"):
            raise NotAFolder("Give the folder's absolute path.")
        real = await trio.to_thread.run_sync(_readable_folder, path)
        if real is None:
            raise NotAFolder(f"{path} is not a folder this daemon can read.")
        for ws in self._workspaces.values():
            if ws.path == real:
                return ws
        ws = Workspace(new_id("w"), (name or "").strip() or os.path.basename(real) or real, real)
        self._workspaces[ws.id] = ws
        await self._store.save_workspaces(self.workspaces())
        return ws

    async def remove_workspace(self, workspace_id: str) -> None:
        if workspace_id not in self._workspaces:
            raise NotFound("There is no such workspace.")
        del self._workspaces[workspace_id]
        await self._store.save_workspaces(self.workspaces())

    # ---- conversations ----

    def conversations(self) -> list[Conversation]:
        return sorted(self._convs.values(), key=lambda c: (c.info.updated, c.info.created), reverse=True)

    def get(self, conversation_id: str) -> Conversation:
        conv = self._convs.get(conversation_id)
        if conv is None:
            raise NotFound("There is no such conversation.")
        return conv

    async def create(
        self,
        *,
        workspace: str | None = None,
        mode: Mode = "ask",
        route: str = "local",
        agent: str = "builtin",
        title: str | None = None,
        items: list[Item] | None = None,
        task: str | None = None,
    ) -> Conversation:
        if workspace is not None and self._env.chat_only:
            raise Invalid(CHAT_ONLY_NO_WORKSPACE)
        if workspace is not None and workspace not in self._workspaces:
            raise NotFound("There is no such workspace; add the folder first.")
        if mode not in MODES:
            raise Invalid(f"Unknown mode {mode!r}.")
        if agent not in AGENTS and (self._env.acp is None or not self._env.acp.knows(agent)):
            raise Invalid(f"Unknown agent {agent!r}.")
        if agent not in AGENTS and workspace is None:
            raise Invalid("Another agent works in a folder: give the conversation a workspace.")
        if self._nursery is None or self._state != "serving":
            raise Invalid("The daemon is shutting down.")
        t = now()
        info = ConversationInfo(
            id=new_id("c"), title=title or "", workspace=workspace, mode=mode, route=route,
            agent=agent, state="idle", created=t, updated=t, task=task,
        )
        record = ConversationRecord(info, tuple(items or ()))
        # Saved before its actor starts: a conversation that cannot be written (a full
        # disk) is refused and leaves nothing behind.
        try:
            await self._store.save_conversation(record)
        except OSError as exc:
            raise DiskFull(
                f"The conversation could not be saved: {save_problem(exc)}. "
                "Free some space on the disk of the data folder, then try again."
            ) from None
        conv: Conversation = await self._nursery.start(self._supervise, record)
        self._env.bus.publish("conversation", info_event(info), local_only=conv.local_only)
        return conv

    async def delete(self, conversation_id: str) -> None:
        conv = self.get(conversation_id)
        await conv.delete()
        self._convs.pop(conversation_id, None)
        if self._env.acp is not None:
            # Its agent's program (if one ran) ends with it, its whole group.
            await self._env.acp.discard(conversation_id)

    def statistics(self) -> ActorStats:
        return ActorStats(
            kind="hub",
            id="conversations",
            state=self._state,
            mailbox=0,
            children=tuple(c.statistics() for c in self.conversations()),
        )
