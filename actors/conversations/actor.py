"""The conversation actor: one conversation, its saver, and at most one run.

The actor serves its mailbox (send, edit, stop, approval, patch, delete: the messages of
actors/conversations/messages.py) and owns the run task. The record lives in a
`Transcript` (actors/record/transcript.py); a run (actors/runs/base.py) changes it only
through that. A run lives in its own cancel scope: a stop cancels exactly that scope,
and the run's `finish` plus a bounded, shielded flush leave the conversation consistent
for the next message: no item left streaming or composing, an open approval denied, a
notice saying it stopped, the state `idle`, and the file saved.

Kept beside it, each owning its part: the saver that writes the record whenever it
changed and retries a failed save (actors/conversations/saver.py), the answers to the
cards (answers.py), the tools its client brought (client_tools.py), what a PATCH may
change (patching.py), which run works a message (new_run.py), the checkpoints around each run and the rewinds (undo.py).
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from actors import notices
from actors.actor import MAILBOX_SIZE, ActorStats, Reply, fail_pending, mailbox_depth, next_id
from actors.conversations import answers
from actors.conversations.client_tools import ClientTools
from actors.conversations.messages import (
    AnswerMsg,
    ApprovalMsg,
    CompactMsg,
    DeleteMsg,
    Msg,
    PatchMsg,
    ResumeMsg,
    RewindMsg,
    SendMsg,
    StopMsg,
)
from actors.conversations.patching import checked_changes
from actors.conversations.saver import Saver
from actors.conversations.undo import Undo
from actors.errors import ActorGone, Busy, Invalid, NotFound, NothingToResume
from actors.policy.rules import Offer
from actors.record import cards
from actors.record.budget import Budget
from actors.record.items import (
    ConversationInfo,
    ConversationRecord,
    EndReason,
    Goal,
    Item,
    model_notice,
    user_item,
)
from actors.record.transcript import Transcript
from actors.runs.agent.run_tools.background import Background
from actors.runs.base import Run, RunRequest
from actors.runs.env import Env

log = logging.getLogger("bmoe.conversation")

STOP_WAIT_S = 30.0
CLEANUP_S = 5.0
TITLE_CHARS = 60
# How a run may have ended for `resume` to go on with it.
RESUMABLE = ("stopped", "error", "max_rounds", "stuck", "cut_off", "budget")


def new_run(transcript: Transcript, env: Env, request: RunRequest, background: Background | None = None) -> Run:
    """actors/conversations/new_run.py's, imported with the first run: the runs' code (the agent
    loop and its tools, ~40 modules) is not the daemon's start's to pay for."""
    from actors.conversations import new_run as runs

    return runs.new_run(transcript, env, request, background)


class Conversation:
    """See the module docstring."""

    def __init__(self, record: ConversationRecord, env: Env) -> None:
        self._t = Transcript(record, env.bus)
        self._env = env
        self._send, self._rx = trio.open_memory_channel[Msg](MAILBOX_SIZE)
        self._nursery: trio.Nursery | None = None
        self._run_scope: trio.CancelScope | None = None
        self._run_done: trio.Event | None = None
        self._run_id: str | None = None
        self._saver = Saver(self._t, env.store)
        self.undo = Undo(self._t, env)
        self.client = ClientTools(self._t, env)  # the tools its client brought
        self.background = Background()  # its helpers working in the background (task {background: true})
        self._deleted = False
        self._stopped = trio.Event()
        self._keep_reason: tuple[EndReason | None] | None = None  # see _compact
        self._quiet_since = 0.0  # trio time of the last request or run end (see quiet_since)
        self.served = False  # True once the actor has started serving its mailbox
        self.last_outcome: str | None = None  # "done" | "error" | "stopped": how the last run ended

    # ---- reading (synchronous snapshots; trio runs one task at a time) ----

    @property
    def id(self) -> str:
        return self._t.id

    @property
    def info(self) -> ConversationInfo:
        return self._t.info

    @property
    def items(self) -> tuple[Item, ...]:
        return self._t.items

    @property
    def item_count(self) -> int:
        return self._t.count

    @property
    def deleted(self) -> bool:
        return self._deleted

    @property
    def running(self) -> bool:
        return self._run_scope is not None

    @property
    def local_only(self) -> bool:
        return self._t.local_only

    @property
    def save_error(self) -> str | None:
        """Why the conversation could not be saved, while it cannot; None when saved."""
        return self._saver.error

    def record(self) -> ConversationRecord:
        return self._t.record()

    def touch(self) -> None:
        """Someone needed this conversation now (its idle time starts again)."""
        self._quiet_since = trio.current_time()

    def quiet_since(self) -> float | None:
        """Since when (trio time) nothing keeps this actor: no run, no card waiting, no
        request in its mailbox, everything saved; None while something does."""
        if (not self.served or self._nursery is None or self.running or self._deleted or self.undo.rewinding
                or self.background.working
                or self.info.state in ("running", "waiting") or mailbox_depth(self._rx)
                or self._rx.statistics().tasks_waiting_send
                or not self._saver.saved or self._saver.error is not None
                or (self._run_done is not None and not self._run_done.is_set())):
            return None
        return None if any(i.state == "waiting" for i in self._t.items) else self._quiet_since

    def to_json(self) -> dict[str, Any]:
        return self._t.to_json()

    def statistics(self) -> ActorStats:
        return ActorStats(
            kind="conversation", id=self.id, state=self.info.state, mailbox=mailbox_depth(self._rx), run=self._run_id
        )

    # ---- the actor ----

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the mailbox until `close()`; a run still going is stopped first."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self.background.nursery = nursery
                self._saver.start(nursery)
                await self.undo.settle()
                self.served = True
                self.touch()
                task_status.started()
                async with self._rx:
                    async for msg in self._rx:
                        self._handle(msg)
                await self._stop_run_and_wait()
                nursery.cancel_scope.cancel()
        finally:
            self._nursery = None
            self._saver.stopped()
            fail_pending(self._rx, "the conversation closed")
            if not self._deleted and not self._saver.saved:
                with trio.move_on_after(CLEANUP_S) as cs:
                    cs.shield = True
                    await self._saver.save_last()
            self._stopped.set()

    def close(self) -> None:
        """Stop serving; a run still going is stopped with the shutdown notice."""
        self._t.daemon_stops()
        self._send.close()

    async def wait_stopped(self) -> None:
        """Wait until the actor has ended (its run stopped, its record saved)."""
        await self._stopped.wait()

    async def request(self, msg: Msg) -> Any:
        try:
            await self._send.send(msg)
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            raise ActorGone("this conversation is closing") from None
        return await msg.reply.wait()

    def _handle(self, msg: Msg) -> None:
        self.touch()
        if isinstance(msg, SendMsg):
            msg.reply.capture(self._start, msg)
        elif isinstance(msg, StopMsg):
            msg.reply.set(self._request_stop())
        elif isinstance(msg, ApprovalMsg):
            msg.reply.capture(self._approve, msg)
        elif isinstance(msg, AnswerMsg):
            msg.reply.capture(self._answer_question, msg)
        elif isinstance(msg, ResumeMsg):
            msg.reply.capture(self._resume, msg)
        elif isinstance(msg, CompactMsg):
            msg.reply.capture(self._compact, msg)
        elif isinstance(msg, PatchMsg):
            msg.reply.capture(self._patch, msg.changes)
        elif isinstance(msg, RewindMsg):
            msg.reply.capture(self._rewind, msg)
        elif isinstance(msg, DeleteMsg):
            if self.running or self.background.working:
                msg.reply.fail(Busy("The conversation is running; stop it first."))
            else:
                self._deleted = True
                self._saver.drop()
                msg.reply.set(None)
                self._send.close()

    # ---- public requests ----

    async def send_message(
        self, text: str, *, images: tuple[str, ...] | None = None, local: bool = True, edit_of: str | None = None,
        unattended: bool = False, think: bool | None = None, plan: bool = False, goal: str | None = None,
        verify: bool = True, answer_schema: dict[str, Any] | None = None, max_rounds: int | None = None,
        budget: Budget | None = None,
    ) -> Item:
        """Start a run; `unattended` (a scheduled task's run) answers every approval "no" at once;
        `think` switches the model's thinking where it has a switch; `plan` starts it in plan mode;
        `goal` sets what the run works to reach (`verify`: a verifier turn checks a completion)."""
        request = RunRequest(local=local, unattended=unattended, think=think, answer_schema=answer_schema,
                             max_rounds=max_rounds, budget=budget)
        reply: Reply[Item] = Reply()
        aim = Goal(goal.strip(), verify=verify) if goal and goal.strip() else None
        item: Item = await self.request(SendMsg(text, images, request, reply, edit_of, plan, aim))
        return item

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

    async def approve(
        self, item_id: str, approve: bool, *, feedback: str | None = None, local: bool = True, always: bool = False,
        rule: dict[str, Any] | None = None,
    ) -> None:
        """Answer an approval card; `feedback` goes with a no (a plan's rejection, a
        call's denial: the model reads it), Invalid past MAX_FEEDBACK_CHARS. A plan card
        answered after a restart starts a run. `always` (a local client's yes for good)
        also keeps a rule the card offers for the conversation's workspace: `rule`
        ({kind, text, exact}) when it is one of the card's `rules`, else the narrowest.
        Invalid, and the card left waiting, when it offers none or not that one."""
        if feedback is not None and len(feedback) > cards.MAX_FEEDBACK_CHARS:
            raise Invalid(f"The feedback is {len(feedback)} characters; at most {cards.MAX_FEEDBACK_CHARS} are taken.")
        keep = await self.request(ApprovalMsg(item_id, approve, Reply(), feedback, local, always, rule))
        if keep is not None and self._env.rules is not None:
            await answers.keep_rule(self._env.rules, keep)

    async def plan_view(self) -> dict[str, Any]:
        """What GET .../plan answers: the plan's text, revision and state."""
        files = self._env.plans
        text = await trio.to_thread.run_sync(files.read, self.id) if files is not None else ""
        return cards.view(text, self.info.plan, self.info.plan_mode)

    async def answer(self, item_id: str, answer: object, *, local: bool = True) -> None:
        """The person's answer to a question card (a string, or a list of strings for a
        question that takes several). A card answered after a restart starts a run
        that goes on from the answer. NotFound when the card is not waiting; Invalid
        when the answer's shape is wrong."""
        await self.request(AnswerMsg(item_id, answer, local, Reply()))

    async def compact(self, *, local: bool = True) -> None:
        """Summarise what is before the last message for the model now (a run of its
        own, on the conversation's route). Busy while a run is on."""
        await self.request(CompactMsg(local, Reply()))

    async def resume(self, *, local: bool = True) -> None:
        """Go on with a run that was stopped, failed, or ended at its round limit or
        stuck, without a new message. Busy while a run is on; NothingToResume when the
        last run answered."""
        await self.request(ResumeMsg(local, Reply()))

    async def patch(self, changes: dict[str, Any]) -> ConversationInfo:
        info: ConversationInfo = await self.request(PatchMsg(changes, Reply()))
        return info

    async def rewind(self, item: str, *, files: bool, conversation: bool, force: bool = False) -> dict[str, Any]:
        """Rewind the files, the conversation, or both (undo.py); Busy while a run is on."""
        done: Reply[dict[str, Any]] = await self.request(RewindMsg(item, files, conversation, force, Reply()))
        return await done.wait()

    async def delete(self) -> None:
        await self.request(DeleteMsg(Reply()))
        await self.undo.forget()
        await self._env.store.delete_conversation(self.id)
        # Every client's list drops it (one deleted elsewhere, or a task's old run the
        # scheduler let go), to the streams that could see it.
        self._env.bus.publish("conversation_deleted", {"id": self.id}, local_only=self.local_only)
        if self._env.plans is not None:
            await trio.to_thread.run_sync(self._env.plans.remove, self.id)

    # ---- handlers (synchronous, run in the actor's task) ----

    def _start(self, msg: SendMsg) -> Item:
        if self.running or self.undo.rewinding or (msg.edit_of is not None and self.background.working):
            raise Busy("The conversation is already running; wait for it or stop it.")
        for card in self._open_questions():
            self._t.update(card.id, state="denied", result=notices.ANSWERED_INSTEAD)
        if msg.plan:
            self._t.set_info(plan_mode=True)
        if msg.goal is not None:
            self._t.set_info(goal=msg.goal)
        images = msg.images
        if msg.edit_of is not None:
            if self.info.agent != "builtin":
                raise Busy("Another agent's session cannot be rewritten: send a new message instead of editing one.")
            edited = self._t.find(msg.edit_of)
            if edited is None or edited.kind != "user":
                raise NotFound("That message is not in this conversation.")
            if images is None:
                images = edited.images  # an edit of the text keeps the message's pictures
            self._t.drop_from(msg.edit_of)
        item = user_item(msg.text, images)
        self._t.upsert(item, urgent=True)
        self._launch(msg.request, title=self.info.title or _title_from(msg.text))
        return item

    def _launch(self, request: RunRequest, **info: Any) -> None:
        """Start a run on the record as it stands."""
        assert self._nursery is not None
        if self.undo.rewinding:
            raise Busy("The conversation is being rewound; send again once it is.")
        self._run_id = next_id("run")
        self._run_scope = trio.CancelScope()
        self._run_done = trio.Event()
        self._keep_reason = None
        self._t.set_info(state="running", end_reason=None, **info)
        run = new_run(self._t, self._env, request, self.background)
        self._nursery.start_soon(self._run, run, self._run_scope, self._run_done, request)

    def _open_questions(self) -> list[Item]:
        """Question and plan cards still waiting with no run to wait for them (a restart came)."""
        return [] if self.running else answers.open_cards(self._t)

    def _approve(self, msg: ApprovalMsg) -> tuple[str, Offer] | None:
        """Answer the card; with `always`, the rule to keep: (workspace id, kind, text)."""
        keep, go_on = answers.approve(self._t, msg, self._env.rules)
        if go_on:
            self._launch(RunRequest(local=msg.local))
        return keep

    def _answer_question(self, msg: AnswerMsg) -> None:
        if answers.answer_question(self._t, msg):
            self._launch(RunRequest(local=msg.local))

    def _compact(self, msg: CompactMsg) -> None:
        if self.running:
            raise Busy("The conversation is running; compact it once the run ends.")
        if self.info.agent != "builtin":
            raise Invalid("Another agent keeps its own context; there is nothing to compact here.")
        reason = self.info.end_reason
        self._launch(RunRequest(local=msg.local, compact=True))
        self._keep_reason = (reason,)  # a compaction is not a run's end: the last one's reason stays

    def _resume(self, msg: ResumeMsg) -> None:
        if self.running:
            raise Busy("The conversation is running; there is nothing to resume.")
        if self.info.agent != "builtin":
            raise NothingToResume("Another agent's run cannot be resumed here; send it a message to go on.")
        if self._open_questions():
            raise NothingToResume("A question is waiting for an answer; answer it to go on.")
        reason = self.info.end_reason
        if reason not in RESUMABLE:
            why = "no run has ended here yet" if reason is None else f"the last run ended {reason}"
            raise NothingToResume(f"There is nothing to resume: {why}. Send a message instead.")
        if reason == "cut_off":
            # The model reads why it is asked again with no new message: to go on.
            self._t.upsert(model_notice(notices.CONTINUE_CUT, notices.CONTINUING_CUT), urgent=True)
        self._launch(RunRequest(local=msg.local))

    def _request_stop(self) -> trio.Event | None:
        """Cancel the run and the background helpers; the event the run's (else their) end sets, or None."""
        helpers_ended = self.background.stop_all()
        if self._run_scope is None or self._run_done is None:
            return helpers_ended
        self._run_scope.cancel()
        return self._run_done

    async def _stop_run_and_wait(self) -> None:
        # A run that already ended may still be saving its last state (its flush needs
        # the saver alive): wait for it too, not only for a run still going.
        self._request_stop()
        done = self._run_done
        if done is not None and not done.is_set():
            with trio.move_on_after(STOP_WAIT_S) as cs:
                cs.shield = True
                await done.wait()

    def _rewind(self, msg: RewindMsg) -> Reply[dict[str, Any]]:
        if self.running or self.undo.rewinding or self._nursery is None or self.background.working:
            raise Busy("The conversation is running; stop it, or wait for it, before rewinding.")
        return self.undo.start(self._nursery, msg.item, msg.files, msg.conversation, msg.force)

    def _patch(self, changes: dict[str, Any]) -> ConversationInfo:
        self._t.set_info(**checked_changes(self.info, changes, running=self.running, has_items=bool(self._t.items),
                                           chat_only=self._env.chat_only))
        return self.info

    # ---- saving ----

    async def flush(self, *, unsaved: bool = False) -> None:
        """Wait until what has happened so far is on disk, or a save of it failed
        (`save_error` says why; the saver goes on trying). `unsaved`: the record the
        actor started from is not the file's either (one `restored` at start), so it is
        written even when nothing happened since."""
        await self._saver.flush(unsaved=unsaved)

    # ---- the run ----

    async def _run(self, run: Run, scope: trio.CancelScope, done: trio.Event, request: RunRequest) -> None:
        item = None
        try:
            with scope:
                try:
                    item = await self.undo.before(request)
                    await run.loop()
                except Exception:
                    # A bug in the loop ends this run, not the conversation or the daemon.
                    log.exception("run of conversation %s failed", self.id)
                    run.abandon_round()
                    run.fail(notices.INTERNAL)
        finally:
            # finish() is synchronous: the items are consistent before anyone can
            # send again, and the state says idle only once a message is accepted.
            stopped = scope.cancelled_caught or scope.cancel_called
            end = run.finish((notices.SHUTDOWN if self._t.daemon_stopping else notices.STOPPED) if stopped else None)
            if item is not None and self._nursery is not None:
                self.undo.after(item, self._nursery)  # taken in the background; the next run waits for it
            self.last_outcome = "stopped" if stopped else ("error" if end.state == "error" else "done")
            self._run_scope = None
            self._run_id = None
            reason = end.reason if self._keep_reason is None or end.reason == "stopped" else self._keep_reason[0]
            self._keep_reason = None
            # A card left to answer once the run is over (a scheduled run's plan) keeps it waiting.
            state = "waiting" if end.state == "idle" and self._open_questions() else end.state
            self._t.set_info(state=state, end_reason=reason)
            with trio.move_on_after(CLEANUP_S) as cs:
                cs.shield = True
                await self.flush()
            self.touch()
            done.set()


def _title_from(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "New conversation"
    return line[:TITLE_CHARS] + ("…" if len(line) > TITLE_CHARS else "")


__all__ = ["Conversation"]
