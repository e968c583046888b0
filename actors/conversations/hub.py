"""The hub actor: the workspaces, and a supervisor for every conversation actor.

At start it reads the store's index of conversations, not the conversations: each
is a light entry (its ConversationInfo) until something needs its items (it is
opened, messaged, answered, edited or deleted: `open`), and only then is its file
read and its actor started in the hub's nursery. An actor that nothing has needed
for `idle_s` (no run, no card waiting, nothing unsaved, no request) is closed the
way shutdown closes it, and its conversation is a light entry again until `open`
reads it anew. (The event stream is one for every conversation, so a client that
follows it does not keep one awake: a GET or a message wakes it.) Memory is bounded
too: when the live actors hold more than `max_live_items` items together, the quiet
ones go to sleep sooner, the longest quiet first, until they hold at most
LIVE_ITEMS_AFTER of the bound (an actor a run, a card or a request keeps is never
put to sleep, so the bound can be passed while those last). A conversation that was running
when the daemon stopped is read at start (it reads `idle` with a notice, on disk
before serving). On shutdown the hub closes each live actor, which stops its run and
saves it, then writes the index a last time.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Container, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import trio

from actors.actor import ActorStats
from actors.conversations.client_tools import ToolClients, check_new
from actors.conversations.saver import save_problem
from actors.errors import Busy, DiskFull, Invalid, NotAFolder, NotFound
from actors.ids import new_id, now
from actors.notices import CHAT_ONLY_NO_WORKSPACE
from actors.record import listing
from actors.record.budget import Budget
from actors.record.client_tools import ClientTool
from actors.record.items import ConversationInfo, ConversationRecord, Item
from actors.record.modes import MODES, Mode
from actors.record.transcript import info_event, restored
from actors.runs.env import Env

if TYPE_CHECKING:
    from actors.conversations.actor import Conversation

log = logging.getLogger("bmoe.hub")

AGENTS = ("builtin",)
MAX_RESTARTS = 5
INDEX_SAVE_S = 2.0  # the index is written at most this often while conversations change
INDEX_STOP_S = 10.0
SLEEP_CHECK_MAX_S = 30.0  # how often, at most, live actors are looked at for one to put to sleep
LIVE_ITEMS_AFTER = 0.8  # past the bound, quiet actors sleep until the live ones hold this share of it
# A conversation read at start whatever needs it: its last run was going when the daemon stopped.
RESTORE_AT_START = ("running", "waiting")


@attrs.frozen
class Workspace:
    id: str
    name: str
    path: str
    # Commands in the sandbox may use the network (loopback included): the person's choice.
    network: bool = False
    # A read-only conversation may write memories (actors/tools/memory.py): the person's choice.
    memory_in_read_only: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "path": self.path, "network": self.network,
                "memory_in_read_only": self.memory_in_read_only}


def _actor(record: ConversationRecord, env: Env) -> Conversation:
    """A conversation's actor. Its module (and the run's machinery) loads with the first
    conversation that wakes, not at the daemon's start."""
    from actors.conversations.actor import Conversation

    return Conversation(record, env)


class HubStore(Protocol):
    def load_index(self) -> list[ConversationInfo]: ...

    def load_conversation(self, conversation_id: str) -> ConversationRecord: ...

    async def save_index(self) -> None: ...

    async def keep_index(self, every_s: float) -> None: ...

    def load_workspaces(self) -> list[Workspace]: ...

    async def save_workspaces(self, workspaces: list[Workspace]) -> None: ...

    async def save_conversation(self, record: ConversationRecord, *, durable: bool = True) -> None: ...

    async def delete_conversation(self, conversation_id: str) -> None: ...


def _readable_folder(path: str) -> str | None:
    """The folder's canonical path, or None when it is not a folder this user can read."""
    real = os.path.realpath(os.path.expanduser(path))
    return real if os.path.isdir(real) and os.access(real, os.R_OK | os.X_OK) else None


def _check_workspace(env: Env, workspace: str | None, known: Container[str]) -> None:
    """Invalid when a new conversation may not have `workspace`: in chat-only mode, or
    one that is not `known`."""
    if workspace is not None and env.chat_only:
        raise Invalid(CHAT_ONLY_NO_WORKSPACE)
    if workspace is not None and workspace not in known:
        # A body's field, not the path's id: 400, as a PATCH or a task naming it answers.
        raise Invalid("There is no such workspace; add the folder first.")


async def _save_new(store: HubStore, record: ConversationRecord) -> None:
    """Save a new conversation before its actor starts: one that cannot be written (a
    full disk) is refused (DiskFull) and leaves nothing behind."""
    try:
        await store.save_conversation(record)
    except OSError as exc:
        raise DiskFull(
            f"The conversation could not be saved: {save_problem(exc)}. "
            "Free some space on the disk of the data folder, then try again."
        ) from None


def _check_new(env: Env, workspace: str | None, mode: str, agent: str) -> None:
    """Invalid, saying why, when a new conversation may not have this mode or agent
    (another agent's needs a workspace)."""
    if mode not in MODES:
        raise Invalid(f"Unknown mode {mode!r}.")
    if agent not in AGENTS and (env.acp is None or not env.acp.knows(agent)):
        raise Invalid(f"Unknown agent {agent!r}.")
    if agent not in AGENTS and workspace is None:
        raise Invalid("Another agent works in a folder: give the conversation a workspace.")


class Hub:
    """See the module docstring."""

    def __init__(self, env: Env, store: HubStore, *, idle_s: float = 0.0, max_live_items: int = 0) -> None:
        """`idle_s`: how long an actor nothing needs stays live (0: for good).
        `max_live_items`: the items the live actors may hold together before quiet
        ones sleep sooner (0: no bound)."""
        self._store = store
        self._idle_s = idle_s
        self._max_live_items = max_live_items
        self._env = attrs.evolve(env, resolve_workspace=self.workspace_path)
        self._workspaces: dict[str, Workspace] = {}
        self._convs: dict[str, Conversation] = {}  # the live actors
        self._asleep = listing.Shelf()  # the others, in list order: their items are on disk only
        self._waking: dict[str, trio.Event] = {}  # conversations being read, set once they are live (or not)
        self._sleeping: dict[str, trio.Event] = {}  # actors being closed for idleness, set once ended
        self.tool_clients = ToolClients(env.bus, self.peek)  # the event streams that answer tool calls
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
        infos = await trio.to_thread.run_sync(self._store.load_index)
        try:
            async with trio.open_nursery() as keeper:
                keeper.start_soon(self._store.keep_index, INDEX_SAVE_S)
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    self._asleep.fill(i for i in infos if i.state not in RESTORE_AT_START)
                    for info in infos:
                        if info.state in RESTORE_AT_START:
                            await self._wake(info.id)
                    self._state = "serving"
                    if self._idle_s > 0 or self._max_live_items > 0:
                        nursery.start_soon(self._put_idle_to_sleep)
                    task_status.started()
                    await self._closing.wait()
                    for conv in self._convs.values():
                        conv.close()
                keeper.cancel_scope.cancel()
        finally:
            self._state = "stopped"
            self._nursery = None
            with trio.move_on_after(INDEX_STOP_S) as cs:
                cs.shield = True
                try:
                    await self._store.save_index()
                except OSError as exc:
                    log.error("could not write the conversation index at stop: %s", exc)
            self._stopped.set()

    async def _wake(self, conversation_id: str) -> Conversation | None:
        """Read a conversation's file and start its actor (restored, as at start, and
        on disk so before it serves); None when its file cannot be read any more (named
        in the log, left in place, and no longer listed)."""
        assert self._nursery is not None
        try:
            record = await trio.to_thread.run_sync(self._store.load_conversation, conversation_id)
        except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
            log.warning("conversation %s cannot be read: %s", conversation_id, exc)
            self._asleep.pop(conversation_id)
            return None
        fixed = restored(record)
        info = self._asleep.get(conversation_id)  # listed asleep until its actor is (_supervise)
        try:
            conv: Conversation = await self._nursery.start(self._supervise, fixed)
        except BaseException:
            if info is not None and conversation_id not in self._asleep:
                self._asleep.put(info)
            raise
        if fixed is not record:
            await conv.flush(unsaved=True)  # the restart notice is on disk before serving
        return conv

    async def _put_idle_to_sleep(self) -> None:
        """Until the hub closes: now and then, close every actor quiet for `idle_s`,
        and the quietest while the live ones hold more than the bound."""
        every = min(self._idle_s / 4, SLEEP_CHECK_MAX_S) if self._idle_s > 0 else SLEEP_CHECK_MAX_S
        while not self._closing.is_set():
            with trio.move_on_after(every):
                await self._closing.wait()
            if self._closing.is_set() or self._nursery is None:
                return
            t = trio.current_time()
            idle = [c for c in self._convs.values()
                    if self._idle_s > 0 and (q := c.quiet_since()) is not None and t - q >= self._idle_s]
            for conv in [*idle, *self.past_bound(leaving=idle)]:
                self._nursery.start_soon(self._sleep, conv)

    def _make_room(self, newcomer: str) -> None:
        """A conversation's items came into memory: past the bound, others go to sleep."""
        if self._nursery is not None:
            for conv in self.past_bound(keep=newcomer):
                self._nursery.start_soon(self._sleep, conv)

    def live_items(self) -> int:
        """The items the live actors hold together."""
        return sum(c.item_count for c in self._convs.values())

    def past_bound(self, *, leaving: Sequence[Conversation] = (), keep: str | None = None) -> list[Conversation]:
        """The quiet actors to put to sleep, longest quiet first, so the live ones hold
        at most LIVE_ITEMS_AFTER of `max_live_items` (none while within the bound).
        `leaving`: actors already going; `keep`: one not to put to sleep (just opened)."""
        if self._max_live_items <= 0:
            return []
        going = {c.id for c in leaving}
        total = sum(c.item_count for c in self._convs.values() if c.id not in going)
        if total <= self._max_live_items:
            return []
        quiet = sorted(((q, c) for c in self._convs.values()
                        if c.id not in going and c.id != keep and (q := c.quiet_since()) is not None),
                       key=lambda qc: qc[0])
        out: list[Conversation] = []
        for _, conv in quiet:
            if total <= self._max_live_items * LIVE_ITEMS_AFTER:
                break
            out.append(conv)
            total -= conv.item_count
        return out

    async def _sleep(self, conv: Conversation) -> None:
        """Close an idle actor through its own close (which saves it), keeping its info; `open` waits for it."""
        if self._convs.get(conv.id) is not conv:
            return
        done = self._sleeping[conv.id] = trio.Event()
        del self._convs[conv.id]
        self._asleep.put(conv.info)
        try:
            conv.close()  # nothing runs and its mailbox is empty: no notice, nothing lost
            await conv.wait_stopped()
            log.debug("conversation %s asleep", conv.id)
        finally:
            del self._sleeping[conv.id]
            done.set()

    async def _supervise(
        self, record: ConversationRecord, *, task_status: trio.TaskStatus[Conversation] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Run a conversation actor; one that fails is logged and started again from
        its last state, with a notice, so one conversation's bug never ends the daemon."""
        status: trio.TaskStatus[Conversation] | None = task_status
        restarts = 0
        while True:
            conv = _actor(record, self._env)
            self._convs[conv.id] = conv
            self._asleep.pop(conv.id)  # listed by its actor from here on, never by both nor by none
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
                asleep = self._convs.get(conv.id) is not conv  # put to sleep: `open` starts it again
                if self._closing.is_set() or conv.deleted or asleep or restarts > MAX_RESTARTS:
                    if not asleep:
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

    def network_of(self, workspace: Path) -> bool:
        """Whether commands in the workspace at `workspace` may use the network."""
        real = str(workspace)
        return any(ws.network for ws in self._workspaces.values() if ws.path == real)

    def memory_allowed_read_only(self, workspace: Path) -> bool:
        """Whether read-only conversations in the workspace at `workspace` may write memories."""
        real = str(workspace)
        return any(ws.memory_in_read_only for ws in self._workspaces.values() if ws.path == real)

    async def change_workspace(self, workspace_id: str, *, name: str | None = None,
                               network: bool | None = None, memory_in_read_only: bool | None = None) -> Workspace:
        """Rename a workspace, allow or forbid its commands the network, or its read-only
        conversations memories; saved at once."""
        ws = self._workspaces.get(workspace_id)
        if ws is None:
            raise NotFound("There is no such workspace.")
        changed = attrs.evolve(ws, name=ws.name if name is None or not name.strip() else name.strip(),
                               network=ws.network if network is None else network,
                               memory_in_read_only=(ws.memory_in_read_only if memory_in_read_only is None
                                                    else memory_in_read_only))
        if changed != ws:
            self._workspaces[workspace_id] = changed
            await self._store.save_workspaces(self.workspaces())
        return changed

    async def add_workspace(self, path: str, name: str | None = None, network: bool | None = None) -> Workspace:
        if self._env.chat_only:
            raise Invalid("This daemon runs as plain chat (--chat-only): conversations have no folders.")
        if not os.path.isabs(path) and not path.startswith("~"):
            raise NotAFolder("Give the folder's absolute path.")
        real = await trio.to_thread.run_sync(_readable_folder, path)
        if real is None:
            raise NotAFolder(f"{path} is not a folder this daemon can read.")
        for ws in self._workspaces.values():
            if ws.path == real:
                return ws if network is None else await self.change_workspace(ws.id, network=network)
        ws = Workspace(new_id("w"), (name or "").strip() or os.path.basename(real) or real, real, bool(network))
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
        """The live conversations (their actors started), newest first."""
        return sorted(self._convs.values(), key=lambda c: (c.info.updated, c.info.created), reverse=True)

    def infos(self) -> list[ConversationInfo]:
        """Every conversation, live or not, in no particular order."""
        return [*self._asleep.values(), *(c.info for c in self._convs.values())]

    def newest_first(self, before: listing.Key | None = None) -> Iterator[ConversationInfo]:
        """Every conversation in list order (actors/record/listing.py), after `before`: the
        asleep ones from their sorted shelf, the live ones sorted as they are now."""
        return listing.merged_newest_first(self._asleep, (c.info for c in self._convs.values()), before)

    def get(self, conversation_id: str) -> Conversation:
        """A live conversation; NotFound for one that is not (see `open`)."""
        conv = self._convs.get(conversation_id)
        if conv is None:
            raise NotFound("There is no such conversation.")
        return conv

    def peek(self, conversation_id: str) -> ConversationInfo:
        """A conversation's info, live or not, without reading its items."""
        conv = self._convs.get(conversation_id)
        if conv is not None:
            return conv.info
        info = self._asleep.get(conversation_id)
        if info is None:
            raise NotFound("There is no such conversation.")
        return info

    async def open(self, conversation_id: str) -> Conversation:
        """The conversation, its actor started (its file read) if it was not live.
        NotFound when there is none, or its file can no longer be read. Cancelled while
        the file is read: the reading goes on for whoever asks next."""
        while True:
            conv = self._convs.get(conversation_id)
            if conv is not None:
                conv.touch()
                return conv
            waking = self._waking.get(conversation_id)  # being read, or put to sleep: wait for that first
            if waking is None:  # not `a or b`: a trio.Event has no truth value (it raises)
                waking = self._sleeping.get(conversation_id)
            if waking is not None:
                await waking.wait()
                continue
            if conversation_id not in self._asleep:
                raise NotFound("There is no such conversation.")
            if self._nursery is None or self._state != "serving":
                raise Invalid("The daemon is shutting down.")
            waking = self._waking[conversation_id] = trio.Event()
            try:
                await self._wake(conversation_id)
            finally:
                del self._waking[conversation_id]
                waking.set()
            self._make_room(conversation_id)

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
        budget: Budget | None = None,
        client_tools: tuple[ClientTool, ...] = (),
        workspace_tools: bool = True,
        mcp_tools: bool = False,
    ) -> Conversation:
        """`client_tools`: its client's (client_tools.check_new); without `workspace_tools`, none of the daemon's."""
        _check_workspace(self._env, workspace, self._workspaces)
        _check_new(self._env, workspace, mode, agent)
        check_new(self._env, agent=agent, tools=client_tools, workspace_tools=workspace_tools, mcp_tools=mcp_tools)
        t = now()
        info = ConversationInfo(
            id=new_id("c"), title=title or "", workspace=workspace, mode=mode, route=route,
            agent=agent, state="idle", created=t, updated=t, task=task, budget=budget,
            client_tools=client_tools, workspace_tools=workspace_tools, mcp_tools=mcp_tools,
        )
        return await self._start(ConversationRecord(info, tuple(items or ())))

    async def adopt(self, record: ConversationRecord) -> Conversation:
        """A record made elsewhere with new ids (an import), saved and started as `create` does."""
        _check_workspace(self._env, record.info.workspace, self._workspaces)
        return await self._start(record)

    async def _start(self, record: ConversationRecord) -> Conversation:
        if self._nursery is None or self._state != "serving":
            raise Invalid("The daemon is shutting down.")
        await _save_new(self._store, record)
        conv: Conversation = await self._nursery.start(self._supervise, record)
        self._env.bus.publish("conversation", info_event(record.info), local_only=conv.local_only)
        self._make_room(conv.id)
        return conv

    async def fork(self, conversation_id: str, item: str) -> Conversation:
        """A new conversation with the same workspace, mode, route and agent and a copy of
        the items up to and including `item`, titled after the original. NotFound for an
        item it does not have; Busy when the items copied are still being worked."""
        conv = await self.open(conversation_id)
        items = list(conv.items)
        pos = next((n for n, i in enumerate(items) if i.id == item), None)
        if pos is None:
            raise NotFound("That message is not in this conversation.")
        last_message = max((n for n, i in enumerate(items) if i.kind == "user"), default=-1)
        if (conv.running and pos >= last_message) or any(
                i.state in ("running", "waiting", "waiting_client", "composing") for i in items[:pos + 1]):
            raise Busy("That part of the conversation is still being worked; fork it once the run ends.")
        info = conv.info
        return await self.create(workspace=info.workspace, mode=info.mode, route=info.route, agent=info.agent,
                                 title=f"{info.title or 'Conversation'} (fork)", items=items[:pos + 1],
                                 client_tools=info.client_tools, workspace_tools=info.workspace_tools,
                                 mcp_tools=info.mcp_tools)

    async def delete(self, conversation_id: str) -> None:
        conv = await self.open(conversation_id)
        await conv.delete()
        self._convs.pop(conversation_id, None)
        if self._env.acp is not None:
            # Its agent's program (if one ran) ends with it, its whole group.
            await self._env.acp.discard(conversation_id)

    def held(self, info: ConversationInfo) -> bool:
        """Whether something holds a conversation (a task's old run is then not deleted):
        a client has it open (its actor is live: read or messaged within the idle
        time), its run goes on, or a card waits for the person."""
        cid = info.id
        return (cid in self._convs or cid in self._waking or cid in self._sleeping
                or info.state in ("running", "waiting"))

    async def prune_runs(self, task_id: str, keep: int) -> list[str]:
        """Delete the task's runs (conversations whose `task` is it) beyond the newest
        `keep`, except the ones something holds (`held`); the ids deleted."""
        runs = sorted((i for i in self.infos() if i.task == task_id), key=lambda i: (i.created, i.id), reverse=True)
        gone: list[str] = []
        for info in runs[keep:]:
            if self.held(info) or self._state != "serving":
                continue
            try:
                await self.delete(info.id)
            except NotFound:  # deleted meanwhile, or its file no longer reads
                continue
            gone.append(info.id)
        return gone

    def statistics(self) -> ActorStats:
        return ActorStats(
            kind="hub",
            id="conversations",
            state=self._state,
            mailbox=0,
            children=tuple(c.statistics() for c in self.conversations()),
        )
