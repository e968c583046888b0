"""The built-in agent's run: rounds with the model, and its tool calls under the mode.

A round sends the conversation (actors/runs/agent/history.py) with a system prompt and a set of
tools fixed when the message starts (actors/runs/agent/prepare.py), so every round of a
message sends the same prefix and the engine reuses the prompt its cache holds. What
the model writes streams into an assistant item and its calls' cards
(actors/runs/agent/round_stream.py). When the round ends, its calls run under the policy
(actors/runs/agent/calls.py), which reads the mode as it is then; what they ended with
is the ledger's (actors/runs/agent/ledger.py), which says what the next round rules out
and when the run is stuck. A small model is led (actors/runs/agent/small/leader.py); the
loop asks its leading at a few points and is the same for every model. A run that
stops, fails or gives up in the middle of a round ends every card of that round with
why (`finish`), so the history sent next is whole.
"""

from __future__ import annotations

import logging

import attrs
import trio

from actors import notices
from actors.errors import ContextFull, EngineError, NoModel, NotFound
from actors.model.backends.chat_template import TemplateRefused
from actors.model.backends.repeats import shown_unit
from actors.model.engine import direct_turn
from actors.model.turns import ToolSpec, TurnInput, TurnResult
from actors.record import cards
from actors.record.items import EndReason, Item, model_notice
from actors.record.transcript import Transcript
from actors.runs.agent import answer_schema, history
from actors.runs.agent.calls import CallRunner
from actors.runs.agent.compaction_turn import Compactor
from actors.runs.agent.ledger import MAX_ROUNDS, Forgot, Ledger, Looped, Nudged, RoundEnded
from actors.runs.agent.meter import Meter
from actors.runs.agent.prepare import Offer
from actors.runs.agent.round_stream import RoundStream, usage_of
from actors.runs.agent.run_tools import goals, todos_and_questions
from actors.runs.agent.run_tools.background import Background
from actors.runs.agent.run_tools.carrier import OwnTools
from actors.runs.agent.small import steps
from actors.runs.agent.small.leader import leader_for
from actors.runs.base import RunEnd, RunRequest
from actors.runs.env import Env

log = logging.getLogger("bmoe.run")

# How long the session_end hooks may take once the run is over (a stop included).
HOOK_END_S = 5.0


class AgentRun:
    """See the module docstring. Its parts, each owning its state: the offer (tools and
    prompt), the round's stream into cards, the calls under the policy, the ledger, and
    the leading of a small model (absent for other models)."""

    def __init__(self, transcript: Transcript, env: Env, request: RunRequest, meter: Meter | None = None,
                 background: Background | None = None) -> None:
        """`meter`: the parent's, for a helper's run (what it spends counts for the conversation);
        `background`: the conversation's background helpers (none for a helper's run)."""
        self._t = transcript
        self._env = env
        self._req = request
        self._rounds = 0
        self._error: str | None = None
        self._end_reason: EndReason = "answered"
        self._held = False  # the next round is the answer, without tools, held to answer_schema
        self._own = OwnTools(transcript, env, request)  # the tools the run carries out itself
        self._own.owner = self
        self._own.background = background
        self._leader = leader_for(transcript, env)
        self._compactor = Compactor(transcript, env, dress=self._leader.dressed)
        self._ledger = Ledger(goals.NUDGES_IN_A_ROW, fail_limit=self._leader.fails_to_stop)
        self._offer = Offer(transcript, env, request, self._own, self._leader)
        self._stream = RoundStream(transcript, env, request, self._own, self._compactor)
        self._stream.checking = self._leader.checks_answers
        self._calls = CallRunner(transcript, env, request, offer=self._offer, own=self._own, leader=self._leader,
                                 ledger=self._ledger, stream=self._stream)
        self._meter = meter if meter is not None else Meter(transcript, env, request)
        self.inbox: list[str] = []  # a helper's: messages sent to it while it works, read at its next round

    # What a helper sees of its parent (run_tools.helpers.Parent), and a helper's run of it.

    @property
    def t(self) -> Transcript:
        return self._t

    @property
    def env(self) -> Env:
        return self._env

    @property
    def req(self) -> RunRequest:
        return self._req

    @property
    def rounds(self) -> int:
        """The rounds this run has had with the model."""
        return self._rounds

    @property
    def error(self) -> str | None:
        """Why the run ended in an error (`fail`), None while it has not."""
        return self._error

    @property
    def offer(self) -> Offer:
        return self._offer

    @property
    def calls(self) -> CallRunner:
        return self._calls

    # ---- the loop ----

    async def loop(self) -> None:
        await self._calls.hook("session_start")
        try:
            await self._work()
        finally:
            with trio.move_on_after(HOOK_END_S) as cs:
                cs.shield = True  # a stop too is the end of the session
                await self._calls.hook("session_end")

    async def prepare(self) -> None:
        """The tools and the system prompt of this message (Offer.prepare)."""
        await self._offer.prepare()

    def must_call(self) -> bool:
        """Whether each round must be a call (Offer.must_call)."""
        return self._offer.must_call()

    async def _work(self) -> None:
        await self.prepare()
        if self._req.compact:  # POST .../compact: only that
            specs = self._offer.specs()
            if not await self._compactor.compact(self._offer.system, specs, self._offer.workspace(), asked=True):
                self._t.notice(notices.NOTHING_TO_COMPACT, "info")
            return
        await self._calls.seed()  # what an earlier run of this message made is made
        limit = self._req.max_rounds or MAX_ROUNDS
        while True:
            over = await self._meter.reached()
            if over is not None:  # before the first round too: a budget used up asks nothing
                self._t.notice(over, "warn", "budget")
                self._end_reason = "budget"
                return
            if self._rounds >= limit:
                # A plan that was never shown is said so: every round of it was a call.
                # A helper's limit is its own (subagents.HELPER_ROUNDS, or serve --helper-rounds), not MAX_ROUNDS.
                used = (notices.PLAN_ROUNDS_OF if self.must_call() else notices.ROUNDS_OF).format(n=limit)
                self._t.notice(used, "warn", "max_rounds")
                self._end_reason = "max_rounds"
                return
            self._rounds += 1
            self._read_inbox()
            result = await self._ask()
            if result is None:
                return
            self._count(result)  # before the answer is shown whole: a page that reads the totals then finds it
            pending, cut = self._stream.end_round(result)
            self._ledger.feed(RoundEnded(looped=result.repeated is not None, cut=cut))
            if not pending:
                if not await self._answered(result):
                    return
                continue
            self._calls.take(pending)
            verdict = await self._calls.run_round()
            if verdict == "stuck":
                self._calls.end_pending("denied", notices.DENIED_NOT_REACHED_REPEATS)
                self._t.notice(notices.REPEATS, "warn", "stuck")
            elif verdict == "failing":
                self._calls.end_pending("denied", notices.DENIED_NOT_REACHED_FAILING)
                self._t.notice(notices.FAILING.format(n=self._ledger.fails), "warn", "stuck")
            if verdict != "go_on":
                self._end_reason = "stuck"
                return
            if self._own.settled is not None:
                self._end_reason = self._own.settled  # a goal reached or blocked, a plan nobody can approve
                return
            self._leader.after_round(self._ledger.round_calls)
            if result.repeated is not None and not self._looped(result.repeated):
                return  # the calls made before the loop ran; then the model looped once too often
            if self._own.replan:
                # Planning began or ended with this round: the tools and the prompt
                # are those of the new phase from the next round on.
                self._own.replan = False
                await self.prepare()

    def _read_inbox(self) -> None:
        """What was sent to this helper since its last round, for the model to read now."""
        while self.inbox:
            text = notices.HELPER_MESSAGE.format(text=self.inbox.pop(0))
            self._t.upsert(model_notice(text, notices.for_person(text)), urgent=True)

    def _count(self, result: TurnResult) -> None:
        """The answer's usage into the meter; a ledger that cannot be written is logged,
        and the run goes on (its own count keeps it)."""
        try:
            self._meter.count(self._stream.assistant or "", usage_of(result))
        except OSError as exc:
            log.warning("cannot write the usage ledger: %s", exc)

    async def _answered(self, result: TurnResult) -> bool:
        """The round was an answer without calls: whether the run goes on (the loop was
        told to the model, the answer sent back, the goal still open) or ends here. An
        answer held while it was checked (Item.checking) is shown once that is settled,
        unless it was found not to be the answer."""
        try:
            return await self._answer_settled(result)
        finally:
            answer = self._last_answer()
            if answer is not None and answer.checking:
                self._t.upsert(attrs.evolve(answer, checking=None), urgent=True)

    async def _answer_settled(self, result: TurnResult) -> bool:
        if result.repeated is not None:
            # A led model's answer that began well, then looped ("4 functions, 1 function,
            # 1 function, ..."): what came before the loop is the answer, checked as any.
            kept = steps.before_loop(result.text, result.repeated) if self._leader.checks_answers else None
            if kept is None:
                # The job's whole command did it already: what it did is the answer, and no
                # round more is given to a model that loops (SmolLM2 went on to write files).
                done = await self._leader.done_answer()
                return self._done_by_command(done) if done is not None else self._looped(result.repeated)
            result = self._kept_before_loop(result, kept)
        if await self._leader.sent_back(result.text, changed=self._ledger.changed):
            self._not_the_answer()
            return True
        could_not = await self._leader.could_not(result.text, changed=self._ledger.changed)
        done = await self._leader.done_answer() if could_not is not None else None
        if done is not None:  # the job's whole command did it: what it did is the answer, not the model's words
            return self._done_by_command(done)
        if could_not is not None:
            self._not_the_answer()  # the person reads that the model could not do it instead
            self._t.notice(could_not, "warn", "could_not")
            self._end_reason = "could_not"
            return False
        if result.finish_reason == "length" and self._req.helper is None:
            # Cut by the token limit, not finished: said, and Resume goes on with it.
            self._t.notice(notices.CUT_OFF, "warn", "cut_off")
            self._end_reason = "cut_off"
            return False
        if self._offer.goal_open() and self._nudge():
            self._leader.free()  # told what is open: the goal's work goes on
            return True
        return self._schema_retry(result.text)

    def _schema_retry(self, text: str) -> bool:
        """The answer ends the run: with an answer_schema it does not meet, one more
        round held to the schema, the error told to the model (True); else False."""
        schema = self._req.answer_schema
        if schema is None or self._held:
            return False
        why = answer_schema.problem(text, schema)
        if why is None:
            return False
        self._held = True
        self._t.upsert(model_notice(answer_schema.retry_text(schema, why), notices.SCHEMA_RETRIED.format(why=why)),
                       urgent=True)
        return True

    def _not_the_answer(self) -> None:
        """Mark the round's answer as one the record contradicts: the model reads it, the
        person is never shown it as the answer (Item.not_answer)."""
        answer = self._last_answer()
        if answer is not None:
            self._t.upsert(attrs.evolve(answer, not_answer=True), urgent=True)

    def _nudge(self) -> bool:
        """The model answered while its goal is open: tell it what is open and go on
        (True), or end the run `stuck` once it has answered so too often in a row."""
        goal = self._t.info.goal
        assert goal is not None
        if self._ledger.feed(Nudged()) == "stuck":
            self._t.notice(notices.GOAL_STUCK.format(n=goals.NUDGES_IN_A_ROW), "warn", "stuck")
            self._end_reason = "stuck"
            return False
        self._t.upsert(model_notice(goals.nudge(goal.text, self._t.info.todos), notices.GOAL_NUDGED), urgent=True)
        return True

    def _looped(self, unit: str) -> bool:
        """The round was cut where the model began to repeat `unit` without end: tell it
        (and the person) and ask again (True), or end the run `stuck` when its answers
        loop ledger.LOOPS_IN_A_ROW times in a row."""
        if self._ledger.feed(Looped()) == "stuck":
            self._t.notice(notices.LOOPING_STUCK.format(n=self._ledger.loops, unit=shown_unit(unit)), "warn", "stuck")
            self._end_reason = "stuck"
            return False
        told = notices.LOOPED.format(unit=shown_unit(unit))
        self._t.upsert(model_notice(told, notices.for_person(told), "warn"), urgent=True)
        return True

    def _done_by_command(self, done: str) -> bool:
        """The answer is `done`, what the job's whole command did (Leader.done_answer), in
        place of the model's words, and the person told why; the run ends (False)."""
        answer = self._last_answer()
        if answer is not None:
            self._t.upsert(attrs.evolve(answer, text=done), urgent=True)
        self._t.notice(notices.ANSWER_FROM_COMMAND, "warn")
        return False

    def _last_answer(self) -> Item | None:
        """The conversation's latest assistant item (this round's, where it wrote one)."""
        return next((i for i in reversed(self._t.items) if i.kind == "assistant"), None)

    def _kept_before_loop(self, result: TurnResult, kept: str) -> TurnResult:
        """The answer shown as `kept` (its words before the loop), and the person told."""
        answer = self._last_answer()
        if answer is not None:
            self._t.upsert(attrs.evolve(answer, text=kept), urgent=True)
        assert result.repeated is not None
        self._t.notice(notices.ANSWER_KEPT_BEFORE_LOOP.format(unit=shown_unit(result.repeated)), "warn")
        return attrs.evolve(result, text=kept, repeated=None, finish_reason="stop")

    async def _local_turn(self, turn: TurnInput) -> TurnResult:
        """The round on the local model's turn line; while another conversation's turn
        holds it, the person is told whose (a `turn_line` event), and told again when
        this one's comes."""
        engine = self._env.engine
        behind = engine.serving()
        if behind is None or behind == self._t.id:
            return await engine.turn(turn, self._stream.on_piece, owner=self._t.id)
        self._t.turn_line(behind)
        return await engine.turn(turn, self._stream.on_piece, owner=self._t.id,
                                 on_start=lambda: self._t.turn_line(None))

    def _paused(self) -> tuple[tuple[str, None], ...]:
        """The tools a local model's grammar leaves out of the next round (TurnInput.avoid,
        arguments None), from the record as it stands: the todo list's when the last
        call wrote it (nothing was done since that it could record), and while planning,
        exit_plan_mode until the todo list has a step (a plan is shown with its steps)."""
        out: list[tuple[str, None]] = []
        last = next((i for i in reversed(self._t.items) if i.kind == "tool"), None)
        if last is not None and last.tool == todos_and_questions.TODO_WRITE and last.state == "done":
            out.append((todos_and_questions.TODO_WRITE, None))
        if self._offer.planning() and not self._t.info.todos:
            out.append((cards.EXIT_PLAN, None))
        return tuple(out)

    async def _ask(self) -> TurnResult | None:
        """One round with the model. While the context is full: shortens the oldest long
        result or call arguments, then compacts once, then shortens a huge message of
        the person's (history.oldest_long_item). None when the run ends here (its
        notice is written)."""
        specs = self._offer.round_specs()
        system = self._offer.system
        compacted = False  # at most one compaction a round
        while True:
            messages = tuple(history.messages(self._t.items, system))
            if not compacted and await self._compactor.too_long(messages, specs):
                compacted = await self._compact(system, specs)
                messages = tuple(history.messages(self._t.items, system))
            # Still past the whole context by the estimate: a huge item is shortened first.
            while await self._compactor.past_context(messages, specs) and self._shorten(messages_too=True):
                messages = tuple(history.messages(self._t.items, system))
            schema = self._req.answer_schema
            if schema is not None and (self._held or not specs):
                # The answer held to its schema: no tools, not led (a grammar of its own).
                turn = TurnInput(messages, (), think=self._req.think, cache_key=self._t.id, stop_repeats=True,
                                 answer_schema=schema)
            else:
                must_call = self.must_call()
                turn = TurnInput(messages, specs, think=self._req.think, cache_key=self._t.id,
                                 tool_choice="required" if must_call else None, stop_repeats=True,
                                 avoid=self._ledger.avoided(self._paused()), names=await self._offer.call_names())
                turn = await self._leader.round_turn(turn, must_call=must_call,
                                                     offered={t.name for t in self._offer.offered},
                                                     cut=self._ledger.cut)
            route = self._t.info.route
            try:
                if route == "local":
                    return await self._local_turn(turn)
                if self._env.providers is None:
                    raise NotFound("no providers")
                # A provider's round runs here, not on the local turn line.
                return await direct_turn(self._env.providers.backend(route), turn, self._stream.on_piece)
            except NotFound:
                self.fail(notices.PROVIDER_GONE.format(route=route))
                return None
            except ContextFull:
                self.abandon_round()
                if self._shorten():
                    continue
                # Every result and call is short: what is before this message goes, summarised.
                if not compacted and await self._compact(system, specs):
                    compacted = True
                    continue
                if not self._shorten(messages_too=True):  # a huge message of the person's, last
                    self.fail(notices.CONTEXT_FULL)
                    return None
            except NoModel as exc:
                self.fail(str(exc))
                return None
            except TemplateRefused as exc:  # retrying cannot help: the person gives the model a template
                self.abandon_round()
                self.fail(str(exc))
                return None
            except EngineError as exc:
                self.abandon_round()
                self.fail(notices.MODEL_FAILED.format(why=exc))
                return None

    async def _compact(self, system: str | None, specs: tuple[ToolSpec, ...]) -> bool:
        """Compact what is before this message (Compactor.compact); the calls made are
        then summarised away, so the model may make them again (ledger.Forgot)."""
        if not await self._compactor.compact(system, specs, self._offer.workspace()):
            return False
        self._ledger.feed(Forgot())
        return True

    def fail(self, text: str) -> None:
        """End the run with an error notice (runs.base.Run)."""
        self._t.notice(text, "error", "error")
        self._error = text
        self._end_reason = "error"

    def abandon_round(self) -> None:
        """Forget what a round that raised streamed; its cards end live (runs.base.Run)."""
        self._stream.abandon_round()

    def _shorten(self, *, messages_too: bool = False) -> bool:
        """Mark the next item to shorten for the model (history.oldest_long_item), the
        record keeping it whole; False when nothing is left to shorten."""
        item = history.oldest_long_item(self._t.items, messages_too=messages_too)
        if item is None:
            return False
        self._t.upsert(attrs.evolve(item, shortened=True), urgent=True)
        if not self._t.has_notice(notices.SHORTENED):
            self._t.notice(notices.SHORTENED, "info")
        return True

    # ---- the end ----

    def child_run(self, transcript: Transcript, request: RunRequest) -> AgentRun:
        """A run of the built-in agent for one of this run's helpers (subagents.Parent)."""
        return AgentRun(transcript, self._env, request, self._meter)

    def finish(self, stop_notice: str | None) -> RunEnd:
        stopped = stop_notice is not None
        self._calls.tell_refused()
        self._stream.abandon_round(stopped=stopped)
        if stopped:
            self._calls.end_pending("denied", notices.DENIED_NOT_REACHED)
        else:
            self._calls.end_pending("error", notices.ERROR_NOT_REACHED_FAILED)
        if stop_notice is not None:
            self._t.notice(stop_notice, "info", "stopped")
            return RunEnd("idle", "stopped")
        return RunEnd("error", "error") if self._error else RunEnd("idle", self._end_reason)
