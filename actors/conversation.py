"""The conversation actor: one conversation, its items, and at most one run.

The actor serves its mailbox (send, edit, stop, approval, patch) and owns the run
task. A run lives in its own cancel scope: a stop cancels exactly that scope, and the
run's shielded clean-up (bounded by CLEANUP_S) leaves the conversation consistent for
the next message: no item left streaming or composing, an open approval denied, a
notice saying it stopped, the state `idle`, and the file saved.
"""

from __future__ import annotations

import datetime
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import attrs
import trio

from actors.acp_run import AcpRun
from actors.base import MAILBOX_SIZE, ActorStats, Reply, fail_pending, mailbox_depth
from actors.bus import EventBus
from actors.engine import Backend, Engine, Piece, TurnInput, TurnResult, direct_turn
from actors.errors import ActorGone, Busy, ContextFull, EngineError, Invalid, NoModel, NotFound
from actors.items import (
    ConversationInfo,
    ConversationRecord,
    Item,
    ToolCall,
    new_id,
    notice_item,
    now,
    user_item,
)
from actors.prompt import read_agents_md, system_prompt, user_content
from actors.runstate import MAX_ROUNDS, FailureStreak, PartialCall, parse_arguments
from actors.streaming import AssistantStream
from actors.tools.registry import (
    RESULT_CAP_BYTES,
    STORED_RESULT_CAP_BYTES,
    Registry,
    Tool,
    ToolContext,
    ToolError,
    cap_text,
)

if TYPE_CHECKING:
    from actors.acp import AcpAgents

log = logging.getLogger("bmoe.conversation")

STOP_WAIT_S = 30.0
CLEANUP_S = 5.0
STREAM_SAVE_INTERVAL_S = 0.3
CHAT_ONLY_NO_WORKSPACE = "This daemon runs as plain chat (--chat-only): a conversation has no workspace."
SHORT_RESULT_LINES = 8
SHORT_RESULT_BYTES = 1024

NOTICE_STOPPED = "Stopped. Send another message to go on."
NOTICE_ROUNDS = (
    f"The agent used its {MAX_ROUNDS} rounds for this message and stopped. "
    "Send another message to let it go on."
)
NOTICE_REPEATS = (
    "The same call failed the same way three times in a row, so the run stopped. "
    "Tell the agent what to do differently, or change the mode, and send again."
)
NOTICE_SHORTENED = "The context ran short, so older tool results are shortened for the model (you still see them whole)."
NOTICE_CONTEXT_FULL = (
    "This conversation no longer fits the model's context, even with every tool result shortened. "
    "Start a new conversation, or load the model with a larger --ctx-size."
)
NOTICE_INTERNAL = "Something went wrong inside the daemon and this run stopped; the log has the details. Send the message again to retry."
NOTICE_SHUTDOWN = "The daemon shut down during this run, so it stopped here. Send a message to go on."
NOTICE_RESTARTED = "The daemon stopped while this conversation was running; the run ended there. Send a message to go on."
# An unattended run (a scheduled task's) has nobody at the screen: an approval is
# answered "no" at once, the model reads why, and a notice at the end counts them.
DENIED_UNATTENDED = (
    "Not done: this is a scheduled run with nobody at the screen to approve changes, so the call was refused. "
    "Do not try it again; say in your answer what you would have changed instead."
)


def notice_refused(count: int) -> str:
    what = "1 change was" if count == 1 else f"{count} changes were"
    return (
        f"Nobody was at the screen during this scheduled run, so {what} refused. "
        "Read the refused calls above, then run them yourself or give the task a mode that allows them."
    )


class Store(Protocol):
    async def save_conversation(self, record: ConversationRecord, *, durable: bool = True) -> None: ...

    async def delete_conversation(self, conversation_id: str) -> None: ...


@attrs.frozen
class Env:
    """What a conversation needs from the daemon around it."""

    engine: Engine
    bus: EventBus
    store: Store
    registry: Registry
    resolve_workspace: Callable[[str], Path | None]
    chat_only: bool = False
    # Saved OpenAI-compatible providers: the backend for a "<provider>/<model>" route.
    providers: Providers | None = None
    # The skills (actors/skills.py): the switched-on ones are named in the prompt.
    skills: Skills | None = None
    # Other agents over ACP (actors/acp.py): a conversation whose `agent` is not
    # "builtin" is worked by one of them instead of the run loop here.
    acp: AcpAgents | None = None


class Providers(Protocol):
    def backend(self, route: str) -> Backend:
        """The backend for a provider route; raises NotFound when it is not saved."""
        ...


class Skills(Protocol):
    async def switched_on(self, workspace: Path | None = None) -> list[tuple[str, str]]:
        """(name, description) of each switched-on skill, the workspace's included."""
        ...


# Messages of the mailbox.


@attrs.frozen
class SendMsg:
    text: str
    images: tuple[str, ...] | None
    local: bool
    reply: Reply[Item]
    edit_of: str | None = None
    unattended: bool = False


@attrs.frozen
class StopMsg:
    reply: Reply[trio.Event | None]


@attrs.frozen
class ApprovalMsg:
    item: str
    approve: bool
    reply: Reply[None]


@attrs.frozen
class PatchMsg:
    changes: dict[str, Any]
    reply: Reply[ConversationInfo]


@attrs.frozen
class DeleteMsg:
    reply: Reply[None]


Msg = SendMsg | StopMsg | ApprovalMsg | PatchMsg | DeleteMsg


class _Denied(Exception):
    pass


class Conversation:
    """See the module docstring."""

    def __init__(self, record: ConversationRecord, env: Env) -> None:
        self._info = record.info
        self._items: list[Item] = list(record.items)
        self._env = env
        self._send, self._rx = trio.open_memory_channel[Msg](MAILBOX_SIZE)
        self._nursery: trio.Nursery | None = None
        self._run_scope: trio.CancelScope | None = None
        self._run_done: trio.Event | None = None
        self._run_id: str | None = None
        self._approvals: dict[str, tuple[trio.Event, list[bool]]] = {}
        self._version = 0
        self._saved_version = 0
        self._saved = trio.Event()
        self._dirty = trio.Event()
        self._urgent = False
        self._deleted = False
        self._stopped_by_person = False
        self._stop_notice = NOTICE_STOPPED
        self.served = False  # True once the actor has started serving its mailbox
        self.last_outcome: str | None = None  # "done" | "error" | "stopped": how the last run ended

    # ---- reading (synchronous snapshots; trio runs one task at a time) ----

    @property
    def id(self) -> str:
        return self._info.id

    @property
    def info(self) -> ConversationInfo:
        return self._info

    @property
    def items(self) -> tuple[Item, ...]:
        return tuple(self._items)

    @property
    def deleted(self) -> bool:
        return self._deleted

    @property
    def running(self) -> bool:
        return self._run_scope is not None

    @property
    def local_only(self) -> bool:
        return self._info.workspace is not None or self._info.route != "local"

    def record(self) -> ConversationRecord:
        return ConversationRecord(self._info, tuple(self._items))

    def to_json(self) -> dict[str, Any]:
        out = self._info.to_json()
        out["items"] = [i.to_json() for i in self._items]
        return out

    def statistics(self) -> ActorStats:
        return ActorStats(
            kind="conversation",
            id=self.id,
            state=self._info.state,
            mailbox=mailbox_depth(self._rx),
            run=self._run_id,
        )

    # ---- the actor ----

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the mailbox until `close()`; a run still going is stopped first."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._saver)
                self.served = True
                task_status.started()
                async with self._rx:
                    async for msg in self._rx:
                        self._handle(msg)
                await self._stop_run_and_wait()
                nursery.cancel_scope.cancel()
        finally:
            self._nursery = None
            fail_pending(self._rx, "the conversation closed")
            if not self._deleted and self._version != self._saved_version:
                with trio.move_on_after(CLEANUP_S) as cs:
                    cs.shield = True
                    await self._env.store.save_conversation(self.record())

    def close(self) -> None:
        """Stop serving; a run still going is stopped with the shutdown notice."""
        self._stop_notice = NOTICE_SHUTDOWN
        self._send.close()

    async def request(self, msg: Msg) -> Any:
        try:
            await self._send.send(msg)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ActorGone("this conversation is closing") from None
        return await msg.reply.wait()

    def _handle(self, msg: Msg) -> None:
        if isinstance(msg, SendMsg):
            msg.reply.capture(self._start, msg)
        elif isinstance(msg, StopMsg):
            msg.reply.set(self._request_stop())
        elif isinstance(msg, ApprovalMsg):
            msg.reply.capture(self._answer, msg.item, msg.approve)
        elif isinstance(msg, PatchMsg):
            msg.reply.capture(self._patch, msg.changes)
        elif isinstance(msg, DeleteMsg):
            if self.running:
                msg.reply.fail(Busy("The conversation is running; stop it first."))
            else:
                self._deleted = True
                msg.reply.set(None)
                self._send.close()

    # ---- public requests ----

    async def send_message(
        self, text: str, *, images: tuple[str, ...] | None = None, local: bool = True, edit_of: str | None = None,
        unattended: bool = False,
    ) -> Item:
        """Start a run; `unattended` (a scheduled task's run) answers every approval "no" at once."""
        return await self.request(SendMsg(text, images, local, Reply(), edit_of, unattended))

    async def wait_run_end(self) -> str | None:
        """Wait until the last run started ends; how it ended ("done", "error",
        "stopped"), or None when no run was ever started. Cancelled: stops waiting only."""
        if self._run_done is not None:
            await self._run_done.wait()
        return self.last_outcome

    async def stop(self) -> bool:
        """Request a stop and wait up to STOP_WAIT_S for the run to end; False if none ran."""
        done = await self.request(StopMsg(Reply()))
        if done is None:
            return False
        with trio.move_on_after(STOP_WAIT_S):
            await done.wait()
        return True

    async def approve(self, item_id: str, approve: bool) -> None:
        await self.request(ApprovalMsg(item_id, approve, Reply()))

    async def patch(self, changes: dict[str, Any]) -> ConversationInfo:
        return await self.request(PatchMsg(changes, Reply()))

    async def delete(self) -> None:
        await self.request(DeleteMsg(Reply()))
        await self._env.store.delete_conversation(self.id)

    # ---- handlers (synchronous, run in the actor's task) ----

    def _start(self, msg: SendMsg) -> Item:
        if self.running:
            raise Busy("The conversation is already running; wait for it or stop it.")
        if msg.edit_of is not None and self._info.agent != "builtin":
            raise Busy("Another agent's session cannot be rewritten: send a new message instead of editing one.")
        if msg.edit_of is not None:
            pos = self._position(msg.edit_of)
            if pos is None or self._items[pos].kind != "user":
                raise NotFound("That message is not in this conversation.")
            del self._items[pos:]
            self._touch()
        item = user_item(msg.text, msg.images)
        self._upsert(item, urgent=True)
        assert self._nursery is not None
        self._run_id = new_id("run")
        self._run_scope = trio.CancelScope()
        self._run_done = trio.Event()
        self._stopped_by_person = False
        title = self._info.title or _title_from(msg.text)
        self._set_info(state="running", title=title)
        self._nursery.start_soon(self._run, msg.local, self._run_scope, self._run_done, msg.unattended)
        return item

    def _request_stop(self) -> trio.Event | None:
        if self._run_scope is None or self._run_done is None:
            return None
        self._stopped_by_person = True
        self._run_scope.cancel()
        return self._run_done

    async def _stop_run_and_wait(self) -> None:
        # A run that already ended may still be saving its last state (its flush needs
        # the saver alive): wait for it too, not only for a run still going.
        done = self._request_stop() or self._run_done
        if done is not None and not done.is_set():
            with trio.move_on_after(STOP_WAIT_S) as cs:
                cs.shield = True
                await done.wait()

    def _answer(self, item_id: str, approve: bool) -> None:
        slot = self._approvals.get(item_id)
        if slot is None:
            raise NotFound("That card is not waiting for an answer.")
        event, answer = slot
        answer.append(approve)
        event.set()

    def _patch(self, changes: dict[str, Any]) -> ConversationInfo:
        if changes.get("workspace") is not None and self._env.chat_only:
            raise Invalid(CHAT_ONLY_NO_WORKSPACE)
        if self.running and ("workspace" in changes or "route" in changes):
            raise Busy("The workspace and the model route cannot change while the conversation runs.")
        if "agent" in changes and changes["agent"] != self._info.agent and self._items:
            raise Busy("The agent is chosen before the first message; start a new conversation for another.")
        self._set_info(**changes)
        return self._info

    # ---- state changes and events ----

    def _position(self, item_id: str) -> int | None:
        for i in range(len(self._items) - 1, -1, -1):
            if self._items[i].id == item_id:
                return i
        return None

    def _touch(self) -> None:
        self._version += 1
        self._dirty.set()

    def _set_info(self, **changes: Any) -> None:
        before = (self._info.title, self._info.state)
        self._info = attrs.evolve(self._info, updated=now(), **changes)
        self._urgent = True
        self._touch()
        if (self._info.title, self._info.state) != before or set(changes) - {"title", "state"}:
            self._env.bus.publish(
                "conversation",
                {"id": self.id, "title": self._info.title, "state": self._info.state, "updated": self._info.updated},
                local_only=self.local_only,
            )

    def _upsert(self, item: Item, *, urgent: bool, publish: bool = True) -> None:
        pos = self._position(item.id)
        if pos is None:
            self._items.append(item)
        else:
            self._items[pos] = item
        if urgent:
            self._urgent = True
        self._touch()
        if publish:
            self._env.bus.publish("item", {"conversation": self.id, "item": item.to_json()}, local_only=self.local_only)

    def _item(self, item_id: str) -> Item:
        pos = self._position(item_id)
        assert pos is not None
        return self._items[pos]

    def _drop_item(self, item_id: str) -> None:
        pos = self._position(item_id)
        if pos is not None:
            del self._items[pos]
            self._touch()

    def _notice(self, text: str, level: str = "info") -> None:
        self._upsert(notice_item(text, level), urgent=True)

    # ---- saving ----

    async def _saver(self) -> None:
        """Write the conversation whenever it changed: at once for a completed item,
        at most every STREAM_SAVE_INTERVAL_S while only a streaming item grows."""
        last = 0.0
        while True:
            await self._dirty.wait()
            if not self._urgent:
                wait = last + STREAM_SAVE_INTERVAL_S - trio.current_time()
                if wait > 0:
                    with trio.move_on_after(wait):
                        while not self._urgent:
                            self._dirty = trio.Event()
                            await self._dirty.wait()
            self._dirty = trio.Event()
            # Only a streaming item grew: an interim save, without fsync. Anything else
            # (an item completed, the state changed, a flush) is saved durably.
            durable = self._urgent
            self._urgent = False
            version = self._version
            if self._deleted:
                return
            await self._env.store.save_conversation(self.record(), durable=durable)
            last = trio.current_time()
            self._saved_version = version
            self._saved.set()
            self._saved = trio.Event()

    async def flush(self) -> None:
        """Wait until what has happened so far is on disk."""
        target = self._version
        while self._saved_version < target and self._nursery is not None:
            self._urgent = True
            self._dirty.set()
            await self._saved.wait()

    # ---- the run ----

    async def _run(self, local: bool, scope: trio.CancelScope, done: trio.Event, unattended: bool = False) -> None:
        run: _Run | AcpRun = _Run(self, local, unattended) if self._info.agent == "builtin" else AcpRun(
            self, local, unattended
        )
        try:
            with scope:
                try:
                    await run.loop()
                except Exception:
                    # A bug in the loop ends this run, not the conversation or the daemon.
                    log.exception("run of conversation %s failed", self.id)
                    run.drop_partial_round()
                    run.fail(NOTICE_INTERNAL)
        finally:
            # finish() is synchronous: the items are consistent before anyone can
            # send again, and the state says idle only once a message is accepted.
            stopped = scope.cancelled_caught or scope.cancel_called
            state = run.finish(stopped=stopped)
            self.last_outcome = "stopped" if stopped else ("error" if state == "error" else "done")
            self._run_scope = None
            self._run_id = None
            self._set_info(state=state)
            with trio.move_on_after(CLEANUP_S) as cs:
                cs.shield = True
                await self.flush()
            done.set()


def _title_from(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "New conversation"
    return line[:60] + ("…" if len(line) > 60 else "")


class _Run(AssistantStream):
    """One run of a conversation: its rounds, its streaming item, its tool cards."""

    def __init__(self, conv: Conversation, local: bool, unattended: bool = False) -> None:
        self.c = conv
        self.env = conv._env
        self.local = local
        self.unattended = unattended
        self.refused = 0  # calls refused in an unattended run, for the closing notice
        self.today = datetime.date.today()
        self.assistant: str | None = None  # the streaming assistant item's id
        self.text = ""
        self.reasoning = ""
        self.partials: dict[int, PartialCall] = {}
        self.streak = FailureStreak()
        self.shortened_notice = False
        self.waiting: str | None = None
        self.running_card: str | None = None
        self.error: str | None = None
        self.skills: list[tuple[str, str]] | None = None  # read once per message

    # -- what the model is sent --

    def workspace(self) -> Path | None:
        ws = self.c.info.workspace
        return self.env.resolve_workspace(ws) if ws else None

    async def tools(self) -> list[Tool]:
        """The tools of this round. Tools known only at run time (an MCP server's) are
        got ready first; the skills are read once per message, so the prompt stays the
        same every round. Skills reach local requests only: they are this computer's text.
        They come with a workspace: every skill is a way of working in a folder, and
        offering `use_skill` in plain chat pushes a small model into calling it instead
        of answering (the generic format then constrains every answer to JSON)."""
        if self.env.chat_only:
            return []
        ws, mode = self.workspace(), self.c.info.mode
        if self.skills is None:
            wanted = self.env.skills is not None and self.local and ws is not None
            self.skills = await self.env.skills.switched_on(ws) if wanted and self.env.skills else []
        await self.env.registry.prepare(workspace=ws, mode=mode, local=self.local)
        return self.env.registry.offered(workspace=ws, mode=mode, local=self.local, skills=bool(self.skills))

    def messages(self, tools: list[Tool]) -> tuple[dict[str, Any], ...]:
        out: list[dict[str, Any]] = []
        if not self.env.chat_only:
            ws = self.workspace()
            out.append(
                {
                    "role": "system",
                    "content": system_prompt(
                        workspace=ws,
                        mode=self.c.info.mode,
                        today=self.today,
                        tools=bool(tools),
                        skills=self.skills or None,
                        agents_md=read_agents_md(ws) if ws else None,
                    ),
                }
            )
        calls: set[str] = set()
        for item in self.c._items:
            if item.kind == "user":
                out.append({"role": "user", "content": user_content(item.text or "", item.images)})
            elif item.kind == "assistant":
                msg: dict[str, Any] = {"role": "assistant", "content": item.text or ""}
                if item.tool_calls:
                    msg["tool_calls"] = [
                        {"id": tc.id, "type": "function", "function": {"name": tc.name, "arguments": _shown_args(tc.arguments)}}
                        for tc in item.tool_calls
                    ]
                    calls.update(tc.id for tc in item.tool_calls)
                if msg["content"] or item.tool_calls:
                    out.append(msg)
            elif item.kind == "tool" and item.call_id in calls and item.state in ("done", "denied", "error"):
                out.append({"role": "tool", "tool_call_id": item.call_id, "content": _model_result(item)})
        return tuple(out)

    # -- the loop --

    async def loop(self) -> None:
        rounds = 0
        while True:
            if rounds >= MAX_ROUNDS:
                self.c._notice(NOTICE_ROUNDS, "warn")
                return
            rounds += 1
            tools = await self.tools()
            result = await self.ask(tools)
            if result is None:
                return
            calls = self.end_round(result)
            if not calls:
                return
            for call in calls:
                if await self.call(call, tools):
                    self.c._notice(NOTICE_REPEATS, "warn")
                    return

    async def ask(self, tools: list[Tool]) -> TurnResult | None:
        """One round with the engine; shortens old results while the context is full."""
        while True:
            turn = TurnInput(self.messages(tools), self.env.registry.specs(tools))
            try:
                route = self.c.info.route
                if route == "local":
                    return await self.env.engine.turn(turn, self.on_piece, owner=self.c.id)
                if self.env.providers is None:
                    raise NotFound("no providers")
                # A provider's round runs here, not on the local turn line.
                return await direct_turn(self.env.providers.backend(route), turn, self.on_piece)
            except NotFound:
                self.fail(
                    f"The provider of this conversation's route ({self.c.info.route}) is not saved any more. "
                    "Pick another model for the conversation, then send the message again."
                )
                return None
            except ContextFull:
                self.drop_partial_round()
                if not self.shorten_one():
                    self.fail(NOTICE_CONTEXT_FULL)
                    return None
                if not self.shortened_notice:
                    self.shortened_notice = True
                    self.c._notice(NOTICE_SHORTENED, "info")
            except NoModel as exc:
                self.fail(str(exc))
                return None
            except EngineError as exc:
                self.drop_partial_round()
                self.fail(f"The model could not answer: {exc}. Send the message again to retry.")
                return None

    def fail(self, text: str) -> None:
        self.c._notice(text, "error")
        self.error = text

    def shorten_one(self) -> bool:
        for item in self.c._items:
            if item.kind == "tool" and not item.shortened and item.result and _is_long(item.result):
                self.c._upsert(attrs.evolve(item, shortened=True), urgent=True)
                return True
        return False

    async def on_piece(self, piece: Piece) -> None:
        if piece.kind == "tool_call":
            self.ensure_assistant()
            self.on_call_piece(piece)
            return
        if piece.kind == "retract":
            # The parser took back text it showed (it was reasoning): the item whole.
            item_id = self.ensure_assistant()
            self.text, self.reasoning = piece.text, piece.reasoning
            item = self.c._item(item_id)
            self.c._upsert(attrs.evolve(item, text=self.text, reasoning=self.reasoning), urgent=False)
            return
        self.stream(piece.text, reasoning=piece.kind == "reasoning")

    def on_call_piece(self, piece: Piece) -> None:
        partial = self.partials.get(piece.index)
        if partial is None:
            call_id = piece.call_id or new_id("call_")
            name = piece.name or "unknown"
            card = Item(
                id=new_id("i"), kind="tool", tool=name, title=self.title(name, {}), args={},
                state="composing", bytes=0, call_id=call_id,
            )
            partial = PartialCall(piece.index, call_id, name, card.id)
            self.partials[piece.index] = partial
            self.c._upsert(card, urgent=False)
        reparsed = partial.feed(piece.text)
        card = self.c._item(partial.item_id)
        partial.bytes += len(piece.text.encode("utf-8"))
        changes: dict[str, Any] = {"bytes": partial.bytes}
        if reparsed:
            changes["title"] = self.title(partial.name, partial.args)
        self.c._upsert(attrs.evolve(card, **changes), urgent=False)

    def title(self, name: str, args: dict[str, Any]) -> str:
        tool = self.env.registry.get(name)
        if tool is None:
            return f"Call {name}"
        try:
            return tool.title(args)
        except Exception:
            return f"Call {name}"

    def end_round(self, result: TurnResult) -> list[tuple[str, str, str]]:
        """Finish the streaming item; the calls to run as (card id, name, arguments)."""
        calls = result.tool_calls
        if self.assistant is None and (calls or result.text or result.reasoning):
            self.ensure_assistant()
        if self.assistant is not None:
            item = self.c._item(self.assistant)
            self.c._upsert(
                attrs.evolve(
                    item,
                    text=self.text or result.text,
                    reasoning=(self.reasoning or result.reasoning) or None,
                    streaming=False,
                    tool_calls=tuple(ToolCall(c.id, c.name, c.arguments) for c in calls) or None,
                ),
                urgent=True,
            )
        out: list[tuple[str, str, str]] = []
        by_id = {p.call_id: p for p in self.partials.values()}
        for call in calls:
            partial = by_id.pop(call.id, None)
            if partial is None:
                card = Item(id=new_id("i"), kind="tool", tool=call.name, title=call.name, args={},
                            state="composing", bytes=len(call.arguments.encode()), call_id=call.id)
                self.c._upsert(card, urgent=False)
                out.append((card.id, call.name, call.arguments))
            else:
                out.append((partial.item_id, call.name, call.arguments))
        for partial in by_id.values():  # cards of calls the answer did not keep
            self.end_card_live(partial.item_id, "error", "The answer ended before this call was complete; it was not run.")
        self.assistant, self.text, self.reasoning, self.partials = None, "", "", {}
        return out

    def end_card_live(self, card_id: str, state: str, why: str) -> None:
        """End a card whose call will not run: shown to the person, not stored."""
        pos = self.c._position(card_id)
        if pos is None:
            return
        card = attrs.evolve(self.c._items[pos], state=state, result=why)
        self.env.bus.publish("item", {"conversation": self.c.id, "item": card.to_json()}, local_only=self.c.local_only)
        self.c._drop_item(card_id)

    def drop_partial_round(self) -> None:
        """Forget what a round that failed streamed; its cards end live."""
        for partial in self.partials.values():
            self.end_card_live(partial.item_id, "error", "The round failed before this call was complete; it was not run.")
        if self.assistant is not None:
            item = self.c._item(self.assistant)
            if item.text or item.reasoning:
                self.c._upsert(attrs.evolve(item, streaming=False), urgent=True)
            else:
                self.c._drop_item(self.assistant)
        self.assistant, self.text, self.reasoning, self.partials = None, "", "", {}

    async def call(self, call: tuple[str, str, str], offered: list[Tool]) -> bool:
        """Run one call under the mode; True when the run must stop for repeats."""
        card_id, name, raw = call
        card = self.c._item(card_id)
        args, why = parse_arguments(raw)
        state, result, diff, file = "error", "", None, None
        shown_args = args if args is not None else {}
        tool = self.env.registry.get(name)
        card = attrs.evolve(card, args=shown_args, raw_args=None if args is not None else raw,
                            title=self.title(name, shown_args), mcp=getattr(tool, "mcp", None))
        self.c._upsert(card, urgent=False)
        if args is None:
            result = f"The call was not run: {why}. Write the call again with a JSON object of its parameters."
        elif tool is None or tool not in offered:
            names = ", ".join(t.name for t in offered) or "none"
            result = f"There is no tool named {name!r} here. The tools you can use: {names}."
        else:
            try:
                state, result, diff, file = await self.run_tool(tool, card, args)
            except _Denied as exc:
                state, result = "denied", str(exc)
        result = cap_text(result, STORED_RESULT_CAP_BYTES)
        card = attrs.evolve(self.c._item(card_id), state=state, result=result, diff=diff, file=file)
        self.c._upsert(card, urgent=True)
        return self.streak.record(name, raw, state, result)

    async def run_tool(self, tool: Tool, card: Item, args: dict[str, Any]) -> tuple[str, str, str | None, str | None]:
        mode = self.c.info.mode
        ws = self.workspace()
        change = tool.is_change(args, ws)
        if change and mode == "read_only":
            raise _Denied("Not done: this conversation is read-only, so changes are refused. Say what you would change instead.")
        ctx = ToolContext(conversation=self.c.id, workspace=ws, mode=mode)
        if change and mode == "ask":
            if self.unattended:
                self.refused += 1
                raise _Denied(DENIED_UNATTENDED)
            # The card shows what the change will do (an edit's diff), computed before
            # it appears; a change that cannot be made as asked fails without a card.
            try:
                shown = await tool.preview(args, ctx) if hasattr(tool, "preview") else None
            except ToolError as exc:
                return "error", str(exc), None, None
            if shown is not None:
                card = attrs.evolve(card, diff=shown.diff, file=shown.file)
            self.c._upsert(attrs.evolve(card, state="waiting"), urgent=True)
            if not await self.wait_approval(card.id):
                raise _Denied("The person denied this call; it was not run. Ask them what to do instead.")
            card = self.c._item(card.id)
        self.c._upsert(attrs.evolve(card, state="running"), urgent=True)
        self.running_card = card.id
        ctx = ToolContext(conversation=self.c.id, workspace=ws, mode=self.c.info.mode)
        try:
            outcome = await tool.run(args, ctx)
        except ToolError as exc:
            self.running_card = None
            return "error", str(exc), None, None
        except Exception as exc:  # a tool's bug is a failed call, not a dead run
            self.running_card = None
            return "error", f"The tool failed unexpectedly ({type(exc).__name__}: {exc}).", None, None
        # Cleared only on completion: a stop leaves it set for finish() to mark.
        self.running_card = None
        return "done", outcome.result, outcome.diff, outcome.file

    async def wait_approval(self, card_id: str) -> bool:
        event = trio.Event()
        answer: list[bool] = []
        self.c._approvals[card_id] = (event, answer)
        self.waiting = card_id
        self.c._set_info(state="waiting")
        try:
            await event.wait()
        finally:
            self.c._approvals.pop(card_id, None)
        # Cleared only when answered: a stop leaves it set for finish() to deny.
        self.waiting = None
        self.c._set_info(state="running")
        return bool(answer and answer[0])

    # -- the end --

    def finish(self, *, stopped: bool) -> str:
        """Leave the items consistent and return the conversation's next state;
        synchronous so it cannot be interrupted."""
        if self.refused:
            self.c._notice(notice_refused(self.refused), "warn")
        if stopped:
            for partial in self.partials.values():
                self.end_card_live(partial.item_id, "denied", "Stopped before this call was complete; it was not run.")
            self.partials = {}
            if self.assistant is not None:
                item = self.c._item(self.assistant)
                if item.text or item.reasoning:
                    self.c._upsert(attrs.evolve(item, streaming=False), urgent=True)
                else:
                    self.c._drop_item(self.assistant)
            if self.waiting is not None:
                card = self.c._item(self.waiting)
                self.c._upsert(attrs.evolve(card, state="denied", result="Stopped while waiting for approval; it was not run."), urgent=True)
            if self.running_card is not None:
                card = self.c._item(self.running_card)
                self.c._upsert(attrs.evolve(card, state="error", result="Stopped before it finished."), urgent=True)
            self.c._notice(self.c._stop_notice, "info")
        return "error" if self.error and not stopped else "idle"


def _shown_args(raw: str) -> str:
    """What the model is shown of a call's arguments: an object, or `{}`."""
    args, _ = parse_arguments(raw)
    return raw if args is not None and raw.strip() else "{}"


def _is_long(text: str) -> bool:
    return len(text.encode("utf-8")) > SHORT_RESULT_BYTES or text.count("\n") >= SHORT_RESULT_LINES


def _model_result(item: Item) -> str:
    text = item.result or ""
    if item.shortened:
        head = "\n".join(text.splitlines()[:SHORT_RESULT_LINES])
        head = cap_text(head, SHORT_RESULT_BYTES)
        return head + "\n[result shortened to fit the context; run the tool again for the rest]"
    return cap_text(text, RESULT_CAP_BYTES)


def restored(record: ConversationRecord) -> ConversationRecord:
    """A record read at start: a conversation that was running reads `idle` with a notice."""
    info = record.info
    if info.state not in ("running", "waiting"):
        return record
    items: list[Item] = []
    for item in record.items:
        if item.kind == "assistant" and item.streaming:
            item = attrs.evolve(item, streaming=False)
        elif item.kind == "tool" and item.state in ("composing", "running", "waiting"):
            item = attrs.evolve(item, state="error", result="The daemon stopped before this call finished.")
        items.append(item)
    items.append(notice_item(NOTICE_RESTARTED, "warn"))
    return ConversationRecord(attrs.evolve(info, state="idle", updated=now()), tuple(items))


def json_size(record: ConversationRecord) -> int:
    return len(json.dumps(record.to_json()))


__all__ = ["Conversation", "Env", "Invalid", "restored"]
