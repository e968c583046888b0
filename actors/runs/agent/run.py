"""The built-in agent's run: rounds with the model, and its tool calls under the mode.

A round sends the conversation (actors/runs/agent/history.py) with a system prompt and a set of
tools fixed when the message starts, so every round of a message sends the same prefix
and the engine reuses the prompt its cache holds. What the model writes streams into an
assistant item; a call it writes is a `composing` card from its first piece. When the
round ends, its calls run one after another under the policy (actors/policy/modes.py), which
reads the mode as it is then. A run that stops, fails or gives up in the middle of a
round ends every card of that round with why (`finish`), so the history sent next is
whole.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import attrs
import trio

from actors import notices
from actors.errors import ContextFull, EngineError, NoModel, NotFound, ToolError
from actors.fs.paths import PathRefused, read_workspace_text, resolve
from actors.ids import new_id
from actors.model.backends.repeats import shown_unit
from actors.model.engine import direct_turn
from actors.model.turns import Piece, ToolSpec, TurnInput, TurnResult, is_small_model
from actors.policy.hooks_config import HookEvent, HookName
from actors.policy.modes import ModeWatch, decide
from actors.policy.rules import PATH_TOOLS, card_fields, offered_rules
from actors.record import cards
from actors.record.items import EndReason, Item, Mode, PlanInfo, ToolCall, ToolState, notice_item
from actors.record.transcript import Transcript
from actors.runs.agent import history, instructions
from actors.runs.agent import real_names as names
from actors.runs.agent.compaction_turn import Compactor
from actors.runs.agent.ledger import (
    MAX_ROUNDS,
    SHELL_TOOL,
    FailureStreak,
    PartialCall,
    call_key,
    ended_as,
    parse_arguments,
)
from actors.runs.agent.prompt import system_prompt
from actors.runs.agent.run_tools import goals, plans
from actors.runs.agent.run_tools import helpers as subagents
from actors.runs.agent.run_tools import todos_and_questions as run_tools
from actors.runs.agent.run_tools.carrier import PLAN_WRITERS, Call, Done, OwnTools
from actors.runs.agent.small import steps as small_steps
from actors.runs.base import RunEnd, RunRequest
from actors.runs.env import Env
from actors.runs.streaming import AssistantStream
from actors.tools.links import why_read_leaves
from actors.tools.registry import STORED_RESULT_CAP_BYTES, Tool, ToolContext, ToolOutcome, cap_text

# How many times a card is shown again because its file changed while it waited.
APPROVAL_REDRAWS = 3
# The tools after whose edit the language server's diagnostics join the result.
DIAGNOSED = ("write_file", "edit_file")
# How long the session_end hooks may take once the run is over (a stop included).
HOOK_END_S = 5.0
# How many calls that change nothing run at once within a round.
PARALLEL_CALLS = 4
# The run's latest failed calls a local model's grammar rules out of its next rounds.
AVOIDED_CALLS = 4
# A small local model's answering round (the one after a change) is greedy: sampled at
# the backend's 0.3, SmolLM2 copied the worked examples' words into its answers ("It
# printed: server: 8080" for "Hello, world!"); greedy, it quoted the output. Its other
# rounds are sampled: greedy, every try of a plan, or of a request to hand a search to
# a helper, was the same loop, which sampling leaves (tests/test_plan_e2e.py,
# tests/test_subagents_model.py).
SMALL_TEMPERATURE = 0.0
# Answers in a row cut where the model repeated itself (actors/model/backends/repeats.py)
# before the run ends `stuck`: the ones before are told to the model, which tries again.
LOOPS_IN_A_ROW = 3


class AgentRun(AssistantStream):
    """See the module docstring."""

    def __init__(self, transcript: Transcript, env: Env, request: RunRequest) -> None:
        self.t = transcript
        self.env = env
        self.req = request
        self.today = datetime.date.today()
        self.assistant: str | None = None  # the streaming assistant item's id
        self.text = ""
        self.reasoning = ""
        self.partials: dict[int, PartialCall] = {}  # calls the model is still writing
        self.pending: list[Call] = []  # calls of the round that have not ended, in order
        self.streak = FailureStreak()
        self.modes = ModeWatch(transcript.info.mode)
        self.refused = 0  # calls refused in an unattended run, for the closing notice
        self.error: str | None = None
        self.end_reason: EndReason = "answered"
        # Fixed for the whole message (see the module docstring).
        self.system: str | None = None
        self.offered: list[Tool] = []
        self.run_specs: tuple[ToolSpec, ...] = ()  # the tools the run carries out itself
        self.nested_known: set[str] | None = None  # every nested instruction file, when the index is whole
        self.narrowed: frozenset[str] | None = None  # a loaded skill's allowed-tools, for the rest of the run
        self.skill_names: tuple[str, ...] = ()  # the switched-on skills (use_skill's real names)
        self.rounds = 0
        self.own = OwnTools(transcript, env, request)  # the tools the run carries out itself
        self.own.owner = self
        self.compactor = Compactor(transcript, env)
        self.nudges = 0  # answers in a row without a call while the goal is open
        self.loops = 0  # answers in a row cut where the model repeated itself
        self.failed: list[tuple[str, Any]] = []  # the run's latest failed calls (TurnInput.avoid)
        self.looped_tools: tuple[str, ...] = ()  # tools whose call the last round's loop cut
        self.reads: list[tuple[str, Any]] = []  # reads made since the last change (TurnInput.avoid)
        self.copies: set[str] = set()  # cards of calls this round's answer had made already
        # A small local model's next step (actors/runs/agent/small/steps.py), from the last round's
        # calls as (state, whether it only read).
        self.step: small_steps.Step = "any"
        self.change_rounds = 0  # rounds of this run that had to change a file (step "change")
        self.round_calls: list[tuple[str, bool]] = []
        self.changed = False  # a change ran in this run (a write, an edit, a command that exited 0)
        self.checks = 0  # answers of this run sent back (small_steps.answer_fault)

    def workspace(self) -> Path | None:
        ws = self.t.info.workspace
        return self.env.resolve_workspace(ws) if ws else None

    # ---- the loop ----

    async def loop(self) -> None:
        await self.hook("session_start")
        try:
            await self.work()
        finally:
            with trio.move_on_after(HOOK_END_S) as cs:
                cs.shield = True  # a stop too is the end of the session
                await self.hook("session_end")

    async def work(self) -> None:
        await self.prepare()
        if self.req.compact:  # POST .../compact: only that
            specs = self.env.registry.specs(self.offered) + self.run_specs
            if not await self.compactor.compact(self.system, specs, self.workspace(), asked=True):
                self.t.notice(notices.NOTHING_TO_COMPACT, "info")
            return
        limit = self.req.max_rounds or MAX_ROUNDS
        while True:
            if self.rounds >= limit:
                # A plan that was never shown is said so: every round of it was a call.
                # A helper's limit is its own (subagents.HELPER_ROUNDS), not MAX_ROUNDS.
                used = (notices.PLAN_ROUNDS_OF if self.must_call() else notices.ROUNDS_OF).format(n=limit)
                self.t.notice(used, "warn", "max_rounds")
                self.end_reason = "max_rounds"
                return
            self.rounds += 1
            result = await self.ask()
            if result is None:
                return
            self.pending = self.end_round(result)
            if result.repeated is None:
                self.loops = 0
            if not self.pending:
                if result.repeated is not None:
                    if self.looped(result.repeated):
                        continue
                    return
                if await self.answer_checked(result.text):
                    continue
                if result.finish_reason == "length" and self.req.helper is None:
                    # Cut by the token limit, not finished: said, and Resume goes on with it.
                    self.t.notice(notices.CUT_OFF, "warn", "cut_off")
                    self.end_reason = "cut_off"
                    return
                if self.goal_open() and self.nudge():
                    self.step = "any"  # told what is open: the goal's work goes on
                    continue
                return
            self.nudges = 0
            if await self.run_calls():
                self.end_pending("denied", notices.DENIED_NOT_REACHED_REPEATS)
                self.t.notice(notices.REPEATS, "warn", "stuck")
                self.end_reason = "stuck"
                return
            if self.own.settled is not None:
                self.end_reason = self.own.settled  # a goal reached or blocked, a plan nobody can approve
                return
            if self.small_local_model():
                self.change_rounds += self.step == "change"
                self.step = small_steps.next_step(
                    self.round_calls, changing=self.step == "change" and self.change_rounds < small_steps.CHANGE_ROUNDS)
            if result.repeated is not None and not self.looped(result.repeated):
                return  # the calls made before the loop ran; then the model looped once too often
            if self.own.replan:
                # Planning began or ended with this round: the tools and the prompt
                # are those of the new phase from the next round on.
                self.own.replan = False
                await self.prepare()

    async def prepare(self) -> None:
        """The tools and the system prompt of this message. Tools known only at run time
        (an MCP server's) are got ready first. Skills reach local requests only (they
        are this computer's text) and come with a workspace: every skill is a way of
        working in a folder, and offering `use_skill` in plain chat pushes a small
        model into calling it instead of answering."""
        if self.env.chat_only:
            return
        ws, mode, local = self.workspace(), self.t.info.mode, self.req.local
        planning = self.planning()
        skills: list[tuple[str, str]] = []
        small = self.small_local_model()
        if self.env.skills is not None and local and ws is not None and not small:
            skills = await self.env.skills.switched_on(ws)
        # Planning offers what cannot change the workspace (read_only's tools: no MCP
        # tool, whose effect is unknown) and the two file tools, for the plan file only.
        offer_mode: Mode = "read_only" if planning or self.req.helper == "explore" else mode
        await self.env.registry.prepare(workspace=ws, mode=offer_mode, local=local)
        self.offered = self.env.registry.offered(workspace=ws, mode=offer_mode, local=local, skills=bool(skills))
        if planning:
            self.offered += [t for t in map(self.env.registry.get, PLAN_WRITERS) if t is not None]
        # The run's own tools come with a workspace, as skills do: plain chat gets none
        # (a small model offered a tool calls it instead of answering).
        specs = self.own.specs(planning=planning, mode=mode) if self.offered and ws is not None and local else ()
        if self.req.helper is not None:
            specs = ()  # a helper has the workspace's tools only: it cannot start another
        elif small:
            specs = small_steps.small_specs(specs, planning=planning)
        if self.narrowed is not None:
            self.offered = [t for t in self.offered if t.name in self.narrowed]
            specs = tuple(s for s in specs if s.name in self.narrowed)
        self.run_specs = specs
        self.skill_names = tuple(name for name, _ in skills)
        # The workspace's files, shown to a local model (its prompt's index): read once
        # a run, so the prompt stays the same from round to round (its cache holds).
        files = await self.workspace_files() if local else None
        goal = self.t.info.goal
        self.system = system_prompt(
            workspace=ws, mode=mode, today=self.today, tools=bool(self.offered), skills=skills or None,
            instructions=await self.instructions(ws) if ws else None,
            planning=plans.prompt_lines(self.env.plans.path(self.t.id)) if planning and self.env.plans else None,
            goal=goal.text if goal and goal.state == "active" and goals.UPDATE_SPEC in specs else None,
            helper=subagents.HELPER_LINES[self.req.helper] if self.req.helper else None,
            files=names.prompt_index(files) if files else None,
        )

    async def workspace_files(self) -> tuple[str, ...] | None:
        """The workspace's files when an offered tool names existing ones (actors/runs/agent/real_names.py)."""
        ws = self.workspace()
        if ws is None or not any(getattr(t, "existing_file_args", ()) for t in self.offered):
            return None
        return await trio.to_thread.run_sync(names.workspace_files, ws)

    async def call_names(self) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
        """This round's real names for a local model's grammar (TurnInput.names): the
        files as they are now (the last round may have made one), the skills."""
        if self.t.info.route != "local":
            return ()
        return names.call_names(self.offered, await self.workspace_files(), self.skill_names)

    async def instructions(self, ws: Path) -> str | None:
        """The project's instruction files for the prompt; the conversation records
        which it used."""
        files, index = await trio.to_thread.run_sync(
            lambda: (instructions.root_files(ws), instructions.nested_index(ws))
        )
        self.nested_known = set(index) if len(index) < instructions.INDEX_MAX else None
        used = tuple(f.path for f in files) + tuple(self.t.info.instructions_delivered)
        if used != self.t.info.instructions:
            self.t.set_info(instructions=used)
        return instructions.prompt_block(files, index)

    async def nested_instructions(self, ws: Path, rel: str) -> str | None:
        """A folder's own instruction files, the first time a file tool touches it, as
        text for the call's result (once per conversation)."""
        delivered = set(self.t.info.instructions_delivered)
        wanted = instructions.candidates(rel) - delivered
        if self.nested_known is not None:
            wanted &= self.nested_known  # the index of this message knows every nested file
        if not wanted:
            return None
        found = await trio.to_thread.run_sync(instructions.read_all, ws, sorted(wanted, key=len))
        if not found:
            return None
        paths = tuple(f.path for f in found)
        self.t.set_info(instructions_delivered=self.t.info.instructions_delivered + paths,
                        instructions=self.t.info.instructions + paths)
        return "\n\n".join(f"[The instructions of {f.path}:]\n{f.text}" for f in found)

    def goal_open(self) -> bool:
        goal = self.t.info.goal
        return goal is not None and goal.state == "active" and goals.UPDATE_SPEC in self.run_specs

    def nudge(self) -> bool:
        """The model answered while its goal is open: tell it what is open and go on
        (True), or end the run `stuck` once it has answered so too often in a row."""
        goal = self.t.info.goal
        assert goal is not None
        if self.nudges >= goals.NUDGES_IN_A_ROW:
            self.t.notice(notices.GOAL_STUCK.format(n=goals.NUDGES_IN_A_ROW), "warn", "stuck")
            self.end_reason = "stuck"
            return False
        self.nudges += 1
        self.t.upsert(attrs.evolve(notice_item(goals.nudge(goal.text, self.t.info.todos), "info"), for_model=True),
                      urgent=True)
        return True

    def looped(self, unit: str) -> bool:
        """The round was cut where the model began to repeat `unit` without end: tell it
        (and the person) and ask again (True), or end the run `stuck` when its answers
        loop LOOPS_IN_A_ROW times in a row."""
        self.loops += 1
        if self.loops >= LOOPS_IN_A_ROW:
            self.t.notice(notices.LOOPING_STUCK.format(n=self.loops, unit=shown_unit(unit)), "warn", "stuck")
            self.end_reason = "stuck"
            return False
        self.t.upsert(attrs.evolve(notice_item(notices.LOOPED.format(unit=shown_unit(unit)), "warn"), for_model=True),
                      urgent=True)
        return True

    def small_local_model(self) -> bool:
        """Whether this run's model is a small local one (engine.SMALL_MODEL_PARAMS; known
        only when the backend says its size). Such a model makes one call a round
        (TurnInput.parallel_calls off): given room for four, SmolLM2-135M filled it
        with calls it had no use for (get_info, an `echo`, a glob of the file it was
        reading) beside the one it needed. And it is led step by step
        (actors/runs/agent/small/steps.py)."""
        if self.t.info.route != "local":
            return False
        size = int(getattr(self.env.engine.backend, "n_params", 0) or 0)
        return is_small_model(size)

    async def answer_checked(self, text: str) -> bool:
        """A small model's answer that the run's record contradicts (small_steps.answer_fault)
        is sent back once: the model reads why and goes on (True)."""
        ws = self.workspace()
        if not text or ws is None or not self.small_local_model() or self.checks >= small_steps.ANSWER_CHECKS:
            return False

        asked = self.asked()
        fault = await trio.to_thread.run_sync(lambda: small_steps.answer_fault(
            text, exists=lambda rel: exists_in(ws, rel), changed=self.changed, asked=asked))
        if fault is None:
            return False
        self.checks += 1
        self.step = "change" if fault == small_steps.CLAIMED_CHANGE else "any"
        self.t.upsert(attrs.evolve(notice_item(fault, "info"), for_model=True), urgent=True)
        return True

    def asked(self) -> str:
        """The person's latest message, as text."""
        return next((i.text or "" for i in reversed(self.t.items) if i.kind == "user"), "")

    def seen_files(self, by: tuple[str, ...] = small_steps.SEEN_BY) -> list[str]:
        """The files this conversation's calls of `by` read or wrote, the latest first."""
        cards = ((i.tool, i.state, i.args) for i in reversed(self.t.items) if i.kind == "tool")
        return small_steps.seen_files(cards, by)

    async def edit_shape(self) -> dict[str, Any] | None:
        """A small model's edit_file this round (actors/runs/agent/small/steps.py `edit_shape`):
        the files the person's latest message names, then the latest it read, as they
        are now."""
        ws = self.workspace()
        if ws is None:
            return None
        asked = self.asked()
        limit = small_steps.EDIT_FILE_BYTES

        def read() -> list[tuple[str, str]]:
            named = small_steps.named_files(asked, lambda rel: exists_in(ws, rel))
            wanted = list(dict.fromkeys(named + self.seen_files()))[:small_steps.EDIT_FILES]
            found = ((rel, read_workspace_text(ws, rel, limit + 1)) for rel in wanted)
            return [(rel, text) for rel, text in found if text is not None and len(text) <= limit]

        return small_steps.edit_shape(await trio.to_thread.run_sync(read))

    async def replace_refused(self, name: str, args: dict[str, Any]) -> str | None:
        """Why a small model's write_file may not go on (small_steps.replace_refused)."""
        ws, path = self.workspace(), args.get("path")
        if not self.small_local_model() or name != small_steps.WRITE_TOOL or ws is None or not isinstance(path, str):
            return None

        return small_steps.replace_refused(name, path, await trio.to_thread.run_sync(exists_in, ws, path),
                                           self.seen_files(small_steps.WRITTEN_BY))

    def planning(self) -> bool:
        return self.t.info.plan_mode and self.env.plans is not None

    def must_call(self) -> bool:
        """Planning ends only with exit_plan_mode or a question (the prompt says so), so
        while those are offered each round must be a call: the local grammar then admits
        only calls, a provider is sent tool_choice "required"."""
        return self.planning() and cards.EXIT_PLAN in self.own_names()

    async def ask(self) -> TurnResult | None:
        """One round with the model. While the context is full: shortens the oldest long
        result or call arguments, then compacts once, then shortens a huge message of
        the person's (history.oldest_long_item). None when the run ends here (its
        notice is written)."""
        specs = self.env.registry.specs(self.offered)
        if self.small_local_model():
            specs = tuple(map(small_steps.small_parameters, specs))
        specs += self.run_specs
        compacted = False  # at most one compaction a round
        while True:
            messages = tuple(history.messages(self.t.items, self.system))
            if not compacted and await self.compactor.too_long(messages, specs):
                compacted = await self.compactor.compact(self.system, specs, self.workspace())
                messages = tuple(history.messages(self.t.items, self.system))
            # Still past the whole context by the estimate: a huge item is shortened first.
            while await self.compactor.past_context(messages, specs) and self.shorten(messages_too=True):
                messages = tuple(history.messages(self.t.items, self.system))
            small = self.small_local_model()
            answer = self.step == "answer" and small and not self.must_call()
            change = self.step == "change" and small and not self.must_call()
            choice = "required" if self.must_call() or change else ("none" if answer else None)
            avoid = self.avoided()
            if change:  # after a change it only claimed: a call that changes a file
                avoid += tuple((t.name, None) for t in specs if t.name not in small_steps.CHANGE_TOOLS)
            shapes: tuple[tuple[str, dict[str, Any]], ...] = ()
            if small and any(t.name == small_steps.EDIT_TOOL for t in self.offered):
                shape = await self.edit_shape()
                if shape is None:
                    avoid += ((small_steps.EDIT_TOOL, None),)
                else:
                    shapes = ((small_steps.EDIT_TOOL, shape),)
            turn = TurnInput(messages, specs, think=self.req.think, cache_key=self.t.id, shapes=shapes,
                             tool_choice=choice, stop_repeats=True, watch_calls_closely=small, avoid=avoid,
                             names=await self.call_names(), parallel_calls=not small,
                             temperature=SMALL_TEMPERATURE if answer else None)
            route = self.t.info.route
            try:
                if route == "local":
                    return await self.env.engine.turn(turn, self.on_piece, owner=self.t.id)
                if self.env.providers is None:
                    raise NotFound("no providers")
                # A provider's round runs here, not on the local turn line.
                return await direct_turn(self.env.providers.backend(route), turn, self.on_piece)
            except NotFound:
                self.fail(notices.PROVIDER_GONE.format(route=route))
                return None
            except ContextFull:
                self.abandon_round()
                if self.shorten():
                    continue
                # Every result and call is short: what is before this message goes, summarised.
                if not compacted and await self.compactor.compact(self.system, specs, self.workspace()):
                    compacted = True
                    continue
                if not self.shorten(messages_too=True):  # a huge message of the person's, last
                    self.fail(notices.CONTEXT_FULL)
                    return None
            except NoModel as exc:
                self.fail(str(exc))
                return None
            except EngineError as exc:
                self.abandon_round()
                self.fail(notices.MODEL_FAILED.format(why=exc))
                return None

    def fail(self, text: str) -> None:
        self.t.notice(text, "error", "error")
        self.error = text
        self.end_reason = "error"

    # ---- what the model writes ----

    async def on_piece(self, piece: Piece) -> None:
        if piece.kind == "prefill":
            self.t.prefill(piece.done, piece.total)
        elif piece.kind == "tool_call":
            self.ensure_assistant()
            self.on_call_piece(piece)
        elif piece.kind == "retract":
            # The parser took back text it showed (it was reasoning): the item whole.
            item_id = self.ensure_assistant()
            self.text, self.reasoning = piece.text, piece.reasoning
            self.t.update(item_id, urgent=False, text=self.text, reasoning=self.reasoning)
        else:
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
            self.t.upsert(card, urgent=False)
        reparsed = partial.feed(piece.text)
        partial.bytes += len(piece.text.encode("utf-8"))
        changes: dict[str, Any] = {"bytes": partial.bytes}
        if reparsed:
            changes["title"] = self.title(partial.name, partial.args)
        self.t.update(partial.item_id, urgent=False, **changes)

    def title(self, name: str, args: dict[str, Any]) -> str:
        own = self.own.title(name, args)
        if own is not None:
            return own
        tool = self.env.registry.get(name)
        if tool is None:
            return f"Call {name}"
        try:
            return tool.title(args)
        except Exception:
            return f"Call {name}"

    def shorten(self, *, messages_too: bool = False) -> bool:
        """Mark the next item to shorten for the model (history.oldest_long_item), the
        record keeping it whole; False when nothing is left to shorten."""
        item = history.oldest_long_item(self.t.items, messages_too=messages_too)
        if item is None:
            return False
        self.t.upsert(attrs.evolve(item, shortened=True), urgent=True)
        if not self.t.has_notice(notices.SHORTENED):
            self.t.notice(notices.SHORTENED, "info")
        return True

    def end_round(self, result: TurnResult) -> list[Call]:
        """Finish the streaming item; the calls to run, in order. An answer cut where it
        looped keeps the calls it had finished; the one it was writing is not a call
        (whatever backend handed it over): its card ends live, as the notice says."""
        calls = result.tool_calls
        self.looped_tools = ()
        if result.repeated is not None:
            calls = tuple(c for c in calls if _whole_object(c.arguments))
            kept = {c.id for c in calls}
            cut = [c.name for c in result.tool_calls if c.id not in kept]
            cut += [p.name for p in self.partials.values() if p.call_id not in {c.id for c in result.tool_calls}]
            self.looped_tools = tuple(dict.fromkeys(cut))
        if self.assistant is None and (calls or result.text or result.reasoning):
            self.ensure_assistant()
        if self.assistant is not None:
            self.t.update(
                self.assistant,
                text=self.text or result.text,
                reasoning=(self.reasoning or result.reasoning) or None,
                streaming=False,
                tool_calls=tuple(ToolCall(c.id, c.name, c.arguments) for c in calls) or None,
                usage=usage_of(result),
            )
        if result.prompt_tokens and self.req.helper is None:
            used = result.prompt_tokens + result.completion_tokens
            self.t.set_info(context=(used, self.compactor.context_tokens()))
        out: list[Call] = []
        by_id = {p.call_id: p for p in self.partials.values()}
        for call in calls:
            partial = by_id.pop(call.id, None)
            if partial is None:
                card = Item(id=new_id("i"), kind="tool", tool=call.name, title=call.name, args={},
                            state="composing", bytes=len(call.arguments.encode()), call_id=call.id)
                self.t.upsert(card, urgent=False)
                out.append(Call(card.id, call.name, call.arguments))
            else:
                out.append(Call(partial.item_id, call.name, call.arguments))
        for partial in by_id.values():  # cards of calls the answer did not keep
            self.end_card_live(partial.item_id, "error", notices.ERROR_ANSWER_ENDED)
        self.partials = {}
        self.assistant, self.text, self.reasoning = None, "", ""
        return out

    def end_card_live(self, card_id: str, state: ToolState, why: str) -> None:
        """End a card whose call was never part of a round: shown, not stored."""
        card = self.t.find(card_id)
        if card is not None:
            self.t.publish_item(attrs.evolve(card, state=state, result=why))
            self.t.drop(card_id)

    def abandon_round(self) -> None:
        """Forget what a round that failed streamed; its cards end live."""
        for partial in self.partials.values():
            self.end_card_live(partial.item_id, "error", notices.ERROR_ROUND_FAILED)
        self.partials = {}
        self.end_assistant()

    # ---- the calls ----

    async def run_calls(self) -> bool:
        """Run the round's calls: those that change nothing at once (at most
        PARALLEL_CALLS), each change alone, in the order the model gave them, after every
        call before it has ended; so two calls that touch one path never overlap. The
        model reads the results in the order of the calls. True when the run must stop
        for repeats (the calls after the one that made it are not run)."""
        # A call the answer made twice runs once: the copies are refused (a small
        # model writes one call four times over in a parallel answer).
        seen: set[tuple[str, str]] = set()
        self.copies = set()
        self.round_calls = []
        ws = self.workspace()
        for call in self.pending:
            key = call_key(call.name, call.raw)
            if key in seen:
                self.copies.add(call.card)
            seen.add(key)
        while self.pending:
            batch = await self.next_batch()
            done: dict[str, Done] = {}
            if len(batch) == 1:
                done[batch[0].card] = await self.call(batch[0])
            else:
                limit = trio.CapacityLimiter(PARALLEL_CALLS)
                async with trio.open_nursery() as nursery:
                    for call in batch:
                        nursery.start_soon(self.call_into, call, done, limit)
            for call in batch:
                self.pending.remove(call)
                if call.card in self.copies:
                    continue  # neither a failure of its own nor a call to avoid: its first is
                state, result = done[call.card].state, done[call.card].result
                ended = ended_as(call.name, state, result)  # a command that exited non-zero failed
                read = await self.reads_only(call, ws)
                self.avoid_again(call, state)
                self.read_once(call, ended, read)
                self.round_calls.append((ended, read))
                self.changed = self.changed or (ended == "done" and not read)
                if self.streak.record(call.name, call.raw, ended, result):
                    return True
        return False

    def read_once(self, call: Call, state: str, read: bool) -> None:
        """A read that ran is one the model need not make again while nothing changed:
        its result is in the conversation already (a small model reads one file or
        globs one pattern round after round). So is a command that failed (`state`
        "error" from runstate.ended_as: it exited non-zero), which fails the same way
        until something changes (SmolLM2 ran `greet` 29 times). The last AVOIDED_CALLS
        of them are ruled out of the next rounds (TurnInput.avoid); a change that ran
        clears them, since a read or the command may then answer otherwise. `read`:
        the call surely changes nothing (`reads_only`)."""
        if call.name in self.own_names():
            return
        failed_command = state == "error" and call.name == SHELL_TOOL
        if state != "done" and not failed_command:
            return
        if not failed_command and not read:
            self.reads = []
            return
        try:
            args = json.loads(call.raw)
        except (json.JSONDecodeError, TypeError):
            return
        if isinstance(args, dict):
            made = (call.name, args)
            self.reads = [r for r in self.reads if r != made][-(AVOIDED_CALLS - 1):] + [made]

    def avoided(self) -> tuple[tuple[str, Any], ...]:
        """What the next round's grammar rules out (TurnInput.avoid): the latest failed
        calls and reads already made, the paused tools, and for one round the tools
        whose call the last round's loop cut (a small model that looped inside a call
        writes the same call again: made to pick something else, it goes on)."""
        out = list(self.failed) + [r for r in self.reads if r not in self.failed] + list(self.paused())
        out += [(name, None) for name in dict.fromkeys(self.looped_tools) if (name, None) not in out]
        return tuple(out)

    def paused(self) -> tuple[tuple[str, None], ...]:
        """The tools a local model's grammar leaves out of the next round (TurnInput.avoid,
        arguments None), from the record as it stands: the todo list's when the last
        call wrote it (nothing was done since that it could record), and while planning,
        exit_plan_mode until the todo list has a step (a plan is shown with its steps)."""
        out: list[tuple[str, None]] = []
        last = next((i for i in reversed(self.t.items) if i.kind == "tool"), None)
        if last is not None and last.tool == run_tools.TODO_WRITE and last.state == "done":
            out.append((run_tools.TODO_WRITE, None))
        if self.planning() and not self.t.info.todos:
            out.append((cards.EXIT_PLAN, None))
        return tuple(out)

    def avoid_again(self, call: Call, state: str) -> None:
        """A call that failed or was denied is one the rest of the run must not make the
        same again (a local model's grammar rules out the last AVOIDED_CALLS of them:
        TurnInput.avoid)."""
        if state not in ("error", "denied"):
            return
        try:
            args = json.loads(call.raw)
        except (json.JSONDecodeError, TypeError):
            return  # not JSON: the grammar cannot write it anyway
        if isinstance(args, dict):
            failed = (call.name, args)
            self.failed = [f for f in self.failed if f != failed][-(AVOIDED_CALLS - 1):] + [failed]

    async def call_into(self, call: Call, done: dict[str, Done], limit: trio.CapacityLimiter) -> None:
        async with limit:
            done[call.card] = await self.call(call)

    async def next_batch(self) -> list[Call]:
        """The next calls that may run together: the leading ones that change nothing,
        or else the first call alone."""
        ws = self.workspace()
        batch: list[Call] = []
        for call in self.pending:
            if not await self.reads_only(call, ws):
                break
            batch.append(call)
        return batch or self.pending[:1]

    async def reads_only(self, call: Call, ws: Path | None) -> bool:
        """Whether the call surely changes nothing (a read, a command that needs no card);
        the run's own tools and anything unknown count as changes."""
        args, _ = parse_arguments(call.raw)
        tool = self.env.registry.get(call.name)
        if args is not None and call.name == subagents.TASK and call.name in self.own_names():
            return args.get("subagent_type", "explore") in ("explore", None)  # explore tasks run at once
        if args is None or tool is None or tool not in self.offered or call.name in self.own_names():
            return False
        try:
            return not await is_change(tool, args, ws)
        except Exception:
            return False

    async def call(self, call: Call) -> Done:
        """Run one call under the policy and end its card; what it ended with."""
        args, why = parse_arguments(call.raw)
        shown = args if args is not None else {}
        tool = self.env.registry.get(call.name)
        self.t.update(
            call.card, urgent=False, args=shown, raw_args=None if args is not None else call.raw,
            title=self.title(call.name, shown), mcp=getattr(tool, "mcp", None),
        )
        note = self.modes.note(self.t.info.mode)
        if args is None:
            done = Done("error", notices.ARGUMENTS_NOT_JSON.format(why=why))
        elif call.card in self.copies:
            done = Done("error", notices.SAME_CALL_IN_ANSWER)
        elif call.name in self.own_names():
            self.t.update(call.card, state="running")  # as any card: a question or a plan then waits
            done = await self.own.run(call, args)
        elif self.own.writes_plan(call.name, args):
            done = await self.own.write_plan(tool, args)
        elif tool is None or tool not in self.offered:
            names = ", ".join([t.name for t in self.offered] + [s.name for s in self.run_specs]) or "none"
            done = Done("error", f"There is no tool named {call.name!r} here. The tools you can use: {names}.")
        elif (refused := await self.replace_refused(call.name, args)) is not None:
            done = Done("error", refused)
            # And the next round may not write at all: varying the content, SmolLM2
            # wrote config.py over again round after round (each refused).
            self.looped_tools += (call.name,)
        else:
            done = await self.run_tool(tool, call.card, args)
        result = cap_text(done.result if note is None else f"{note}\n{done.result}", STORED_RESULT_CAP_BYTES)
        self.t.update(call.card, state=done.state, result=result, diff=done.diff, file=done.file)
        if done.narrow is not None:
            self.narrowed = frozenset(done.narrow)
            self.own.replan = True  # the next round offers only those
        return done

    async def run_tool(self, tool: Tool, card_id: str, args: dict[str, Any]) -> Done:
        ws = self.workspace()
        mode = self.t.info.mode
        change = await is_change(tool, args, ws)
        rule = await self.rule_for(tool, args, ws) if change and mode == "ask" else None
        verdict = decide(mode=mode, change=change, unattended=self.req.unattended,
                         planning=self.t.info.plan_mode, rule=rule)
        if verdict.allowed_by is not None:
            self.t.update(card_id, urgent=False, allowed_by=verdict.allowed_by)
        if verdict.action == "refuse":
            self.refused += int(verdict.unattended)
            leaves = None  # a read refused for leading out is told so, not taken for a change
            if tool.name == SHELL_TOOL and ws is not None:
                leaves = await trio.to_thread.run_sync(why_read_leaves, args.get("command"), ws)
            return Done("denied", notices.read_leads_out(leaves) if leaves else verdict.why or notices.DENIED_READ_ONLY)
        blocked = await self.hook("pre_tool_use", tool=tool.name, args=args)
        if blocked is not None:
            return Done("denied", notices.BLOCKED_BY_HOOK.format(why=blocked))
        ctx = ToolContext(conversation=self.t.id, workspace=ws, mode=mode)
        if verdict.action == "ask":
            refusal = await self.ask_person(tool, card_id, args, ctx)
            if refusal is not None:
                return refusal
        self.t.update(card_id, state="running")
        try:
            outcome = await tool.run(args, ctx)
        except ToolError as exc:
            done = Done("error", str(exc))
        except Exception as exc:  # a tool's bug is a failed call, not a dead run
            done = Done("error", f"The tool failed unexpectedly ({type(exc).__name__}: {exc}).")
        else:
            result = outcome.result
            if ws is not None and outcome.file and tool.name in DIAGNOSED and self.env.diagnostics is not None:
                found = await self.env.diagnostics.after_edit(ws, outcome.file)
                result = f"{result}\n\n{found}" if found else result
            touched = outcome.file or args.get("path")
            if ws is not None and isinstance(touched, str) and touched:
                nested = await self.nested_instructions(ws, touched)
                result = f"{result}\n\n{nested}" if nested else result
            done = Done("done", result, outcome.diff, outcome.file, outcome.narrow)
        await self.hook("post_tool_use", tool=tool.name, args=args, result=done.result, state=done.state)
        return done

    async def rule_for(self, tool: Tool, args: dict[str, Any], ws: Path | None) -> str | None:
        """The always-allow rule that matches this call, for a local client's run only."""
        rules, ws_id = self.env.rules, self.t.info.workspace
        if rules is None or ws is None or ws_id is None or not self.req.local or self.t.info.plan_mode:
            return None
        if not rules.listing(ws_id):
            return None
        if tool.name in PATH_TOOLS:  # a path's resolution costs less than a thread's hop
            rule = rules.allowing(ws_id, ws, tool.name, args)
        else:  # a command's words are checked on disk, its walks included: bounded, but not tiny
            rule = await trio.to_thread.run_sync(rules.allowing, ws_id, ws, tool.name, args)
        return rule.text if rule is not None else None

    async def hook(self, name: HookName, **fields: Any) -> str | None:
        """Fire the person's hooks for an event of this run (see actors/runs/env.py Hooks)."""
        if self.env.hooks is None:
            return None
        return await self.env.hooks.fire(HookEvent(name, self.t.id, self.workspace(), **fields))

    async def ask_person(self, tool: Tool, card_id: str, args: dict[str, Any], ctx: ToolContext) -> Done | None:
        """Show the card and wait for the person: None when they said yes to what will
        happen. The card shows what the change will do (its diff), computed before it
        appears; after a yes it is computed again, and when the file changed meanwhile
        the card is shown again with the change as it now stands. A tool whose run
        applies exactly what was approved to the file as it is then, or fails (an
        edit's replacements: `redraw_if_changed = False`), runs at once."""
        try:
            shown = await tool.preview(args, ctx) if hasattr(tool, "preview") else None
        except ToolError as exc:
            return Done("error", str(exc))
        note: str | None = None
        offered = []
        if self.env.rules is not None and self.req.local and self.t.info.workspace is not None:
            offered = await trio.to_thread.run_sync(offered_rules, tool.name, args, ctx.workspace)
        for _ in range(APPROVAL_REDRAWS + 1):
            self.t.update(card_id, state="waiting", result=note, **card_fields(offered), **_preview_fields(shown))
            answer = await self.t.wait_approval(card_id)
            if answer is None:
                return Done("denied", notices.DENIED_WAITING_STOPPED)
            if not answer.approve:
                return Done("denied", notices.denied_by_person(answer.feedback))
            if shown is None or not getattr(tool, "redraw_if_changed", True):
                return None
            try:
                now = await tool.preview(args, ctx)
            except ToolError as exc:
                return Done("error", f"{notices.FILE_KEEPS_CHANGING} {exc}")
            if now is None or now.diff == shown.diff:
                return None
            shown, note = now, notices.FILE_CHANGED
        return Done("error", notices.FILE_KEEPS_CHANGING)

    def own_names(self) -> set[str]:
        return {s.name for s in self.run_specs}

    def end_pending(self, state: ToolState, why: str) -> None:
        """End the round's calls that did not run (stored: the round decided them)."""
        for call in self.pending:
            args, _ = parse_arguments(call.raw)
            card = self.t.find(call.card)
            if card is None or card.state in ("done", "denied", "error"):
                continue
            if card.state == "waiting":
                waited = notices.QUESTION_STOPPED if card.tool == cards.ASK_USER else notices.DENIED_WAITING_STOPPED
                changes: dict[str, Any] = {"state": "denied", "result": waited}
                plan = self.t.info.plan
                if card.tool == cards.EXIT_PLAN and plan is not None and plan.state == "proposed":
                    # Its card is gone: the plan goes back to drafting, to be shown again.
                    self.t.set_info(plan=PlanInfo(plan.revision, "drafting"))
            elif card.state == "running":
                changes = {"state": "error", "result": notices.ERROR_RUNNING_STOPPED}
            else:
                changes = {"state": state, "result": why, "args": args if args is not None else {}}
                if args is not None:
                    changes["title"] = self.title(call.name, args)
            self.t.update(call.card, **changes)
        self.pending = []

    # ---- the end ----

    def child_run(self, transcript: Transcript, request: RunRequest) -> AgentRun:
        """A run of the built-in agent for one of this run's helpers (subagents.Parent)."""
        return AgentRun(transcript, self.env, request)

    def finish(self, stop_notice: str | None) -> RunEnd:
        stopped = stop_notice is not None
        if self.refused:
            self.t.notice(notices.refused_unattended(self.refused), "warn")
        for partial in self.partials.values():
            if stopped:
                self.end_card_live(partial.item_id, "denied", notices.DENIED_PARTIAL_STOPPED)
            else:
                self.end_card_live(partial.item_id, "error", notices.ERROR_ROUND_FAILED)
        self.partials = {}
        self.end_assistant()
        if stopped:
            self.end_pending("denied", notices.DENIED_NOT_REACHED)
        else:
            self.end_pending("error", notices.ERROR_NOT_REACHED_FAILED)
        if stop_notice is not None:
            self.t.notice(stop_notice, "info", "stopped")
            return RunEnd("idle", "stopped")
        return RunEnd("error", "error") if self.error else RunEnd("idle", self.end_reason)


def exists_in(ws: Path, rel: str) -> bool:
    """Whether `rel` names something inside the workspace (a path that leads out of it
    does not: the tool that would use it says why). Blocking: call it in a thread."""
    try:
        return resolve(ws, rel).exists()
    except PathRefused:
        return False


def usage_of(result: TurnResult) -> dict[str, int] | None:
    """An answer's token counts, as the backend reported them (none: no usage)."""
    if not result.prompt_tokens and not result.completion_tokens:
        return None
    cached = max(0, result.prompt_tokens - result.prefill_tokens) if result.prefill_tokens else 0
    return {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "cached_tokens": cached}


async def is_change(tool: Tool, args: dict[str, Any], ws: Path | None) -> bool:
    """`tool.is_change`, in a worker thread for a tool whose answer looks at the disk
    (`checks_disk`: a command's words and the walks its programs make, bounded but not
    tiny), so the event loop never waits for it."""
    if getattr(tool, "checks_disk", False):
        return await trio.to_thread.run_sync(tool.is_change, args, ws)
    return tool.is_change(args, ws)


def _preview_fields(shown: ToolOutcome | None) -> dict[str, Any]:
    return {} if shown is None else {"diff": shown.diff, "file": shown.file}


def _whole_object(arguments: str) -> bool:
    """Whether a call's arguments are a finished JSON object (not one cut mid-way)."""
    try:
        return isinstance(json.loads(arguments or "{}"), dict)
    except ValueError:
        return False
