"""The tools the built-in run carries out itself, since what they change is the
conversation rather than the workspace: the todo list and questions
(todos_and_questions.py beside this), plan mode (plans.py) and the goal (goals.py).

`OwnTools` belongs to one run (actors/runs/agent/run.py), which offers its specs, sends it
the calls of those names, and reads back what it settled: planning began or ended
(`replan`: the next round gets the new phase's tools and prompt), or the run is to end
after this round (`settled`: a goal reached or blocked, a plan nobody can approve).
"""

from __future__ import annotations

from typing import Any

import attrs
import trio

from actors import notices
from actors.errors import ToolError
from actors.model.turns import ToolSpec, TurnInput
from actors.record import cards
from actors.record.items import EndReason, Goal, PlanInfo, ToolState
from actors.record.transcript import Transcript
from actors.runs.agent.run_tools import background, goals, helpers, plans, todos_and_questions
from actors.runs.agent.side_turn import SideTurnFailed, side_turn
from actors.runs.base import RunRequest
from actors.runs.env import Env
from actors.tools.registry import Tool, ToolContext

# The tools that write the plan file while the conversation plans.
PLAN_WRITERS = ("write_file", "edit_file")


@attrs.frozen
class Call:
    card: str  # the card's item id
    name: str
    raw: str  # the arguments as the model wrote them


@attrs.frozen
class Done:
    state: ToolState
    result: str
    diff: str | None = None
    file: str | None = None
    narrow: tuple[str, ...] | None = None  # the tools the rest of the run may use


class OwnTools:
    """See the module docstring."""

    def __init__(self, transcript: Transcript, env: Env, request: RunRequest) -> None:
        self.t = transcript
        self.env = env
        self.req = request
        self.replan = False  # plan mode began or ended: prepare again before the next round
        self.verifications = 0  # verifier turns this message
        self.settled: EndReason | None = None  # the run ends after this round, for this reason
        self.helpers: dict[str, helpers.Helper] = {}  # this run's helpers, by their card
        self.owner: helpers.Parent | None = None  # the run these tools belong to (helpers need it)
        self.background: background.Background | None = None  # the conversation's background helpers

    def planning(self) -> bool:
        return self.t.info.plan_mode and self.env.plans is not None

    def specs(self, *, planning: bool, mode: str) -> tuple[ToolSpec, ...]:
        """The run's own tools for this phase (the run offers them with a workspace)."""
        goal = self.t.info.goal
        # Planning offers reads, the todo list, questions and the plan, no helper: a
        # general one would work under the conversation's mode, and an explore one takes
        # the local model's turns for minutes while nothing is planned.
        helper_specs: tuple[ToolSpec, ...] = () if planning else helpers.SPECS
        if self.background is None:
            helper_specs = tuple(helpers.TASK_SPEC if s.name == helpers.TASK else s for s in helper_specs)
        elif not planning:
            helper_specs += background.SPECS
        goal_specs = (goals.UPDATE_SPEC,) if goal and goal.state == "active" else ()
        specs = todos_and_questions.SPECS + helper_specs + goal_specs
        if planning:
            specs += (plans.EXIT_SPEC,)
        elif mode != "read_only" and self.env.plans is not None:
            specs += (plans.ENTER_SPEC,)
        return specs

    @staticmethod
    def title(name: str, args: dict[str, Any]) -> str | None:
        """A card's title for one of these tools, None for another tool."""
        if name == plans.ENTER:
            return "Start planning"
        if name == cards.EXIT_PLAN:
            return "Show the plan"
        if name == goals.UPDATE_GOAL:
            return "Update the goal"
        if name == helpers.TASK:
            description = args.get("description")
            named = isinstance(description, str) and description
            return f"Helper: {description}" if named else "Hand a task to a helper"
        if name == helpers.SEND:
            return "Message a helper"
        if name in background.TITLES:
            return background.TITLES[name]
        if name == todos_and_questions.TODO_WRITE:
            return "Update the todo list"
        if name == cards.ASK_USER:
            question = args.get("question")
            return f"Ask: {question}" if isinstance(question, str) and question else "Ask the person"
        return None

    def writes_plan(self, name: str, args: dict[str, Any]) -> bool:
        files = self.env.plans
        return name in PLAN_WRITERS and self.planning() and files is not None and files.is_plan(self.t.id, args)

    async def write_plan(self, tool: Tool | None, args: dict[str, Any]) -> Done:
        """write_file or edit_file on the plan file: the run's own file, written at once."""
        assert self.env.plans is not None and tool is not None
        folder = self.env.plans.folder
        await trio.to_thread.run_sync(lambda: folder.mkdir(parents=True, exist_ok=True))
        ctx = ToolContext(conversation=self.t.id, workspace=folder, mode="full")
        try:
            outcome = await tool.run({**args, "path": self.env.plans.path(self.t.id).name}, ctx)
        except ToolError as exc:
            return Done("error", str(exc))
        plan = self.t.info.plan
        self.t.set_info(plan=PlanInfo(plan.revision if plan else 0, "drafting"))
        self.t.publish_plan(await trio.to_thread.run_sync(self.env.plans.read, self.t.id))
        return Done("done", outcome.result, outcome.diff)

    async def run_plan_tool(self, call: Call, args: dict[str, Any]) -> Done:
        """enter_plan_mode and exit_plan_mode (actors/runs/agent/run_tools/plans.py); exit_plan_mode's `plan`,
        when given, is written to the plan file before it is shown."""
        files = self.env.plans
        assert files is not None
        path = files.path(self.t.id)
        plan = self.t.info.plan
        revision = plan.revision if plan else 0
        if call.name == plans.ENTER:
            if self.t.info.plan_mode:
                return Done("error", plans.ALREADY_PLANNING.format(path=path))
            self.t.set_info(plan_mode=True, plan=PlanInfo(revision, "drafting"))
            self.replan = True
            self.t.publish_plan(await trio.to_thread.run_sync(files.read, self.t.id))
            return Done("done", plans.ENTERED.format(path=path))
        if not self.t.info.plan_mode:
            return Done("error", plans.NOT_PLANNING)
        given = args.get("plan")
        if given is not None and (not isinstance(given, str) or len(given.encode()) > cards.MAX_PLAN_BYTES):
            return Done("error", plans.BAD_PLAN.format(limit=cards.MAX_PLAN_BYTES))
        if given is not None and given.strip():
            await trio.to_thread.run_sync(files.write, self.t.id, given)
        text = await trio.to_thread.run_sync(files.read, self.t.id)
        if not text.strip():
            return Done("error", plans.NO_PLAN_YET.format(path=path))
        self.t.set_info(plan=PlanInfo(revision + 1, "proposed"))
        self.t.publish_plan(text)
        self.t.update(call.card, state="waiting", args={"plan": text, "revision": revision + 1})
        if self.req.unattended:
            # Nobody can answer now: the run ends, and the card waits for the person, who
            # approves (a run carries the plan out) or rejects it when they come.
            self.settled = "plan_proposed"
            return Done("waiting", plans.NOBODY_TO_APPROVE)
        answered, answer = await self.t.wait_answer(call.card, "approval")
        if not answered:
            return Done("denied", notices.DENIED_WAITING_STOPPED)
        decision = answer if isinstance(answer, cards.Decision) else cards.Decision(bool(answer))
        done = self.decide_plan(decision, text)
        return done

    def decide_plan(self, decision: cards.Decision, text: str) -> Done:
        """The person approved or rejected the plan shown: say so everywhere."""
        plan = self.t.info.plan
        revision = plan.revision if plan else 1
        if decision.approve:
            self.t.set_info(plan_mode=False, plan=PlanInfo(revision, "approved"))
            self.replan = True
            self.t.publish_plan(text)
            return Done("done", plans.APPROVED)
        self.t.set_info(plan=PlanInfo(revision, "rejected"))
        self.t.publish_plan(text)
        return Done("denied", plans.rejected(decision.feedback))

    async def run(self, call: Call, args: dict[str, Any]) -> Done:
        """A tool the run carries out itself (todos_and_questions.py, plans.py, goals.py beside this)."""
        if call.name in (plans.ENTER, cards.EXIT_PLAN):
            return await self.run_plan_tool(call, args)
        if call.name == goals.UPDATE_GOAL:
            return await self.update_goal(call, args)
        if call.name in (helpers.TASK, helpers.SEND):
            return await self.helper(call, args)
        if call.name in background.NAMES:
            return await self.background_call(call, args)
        try:
            if call.name == todos_and_questions.TODO_WRITE:
                todos = todos_and_questions.parse_todos(args)
                if todos == self.t.info.todos:
                    raise ToolError(todos_and_questions.todo_unchanged(todos))
                self.t.set_info(todos=todos)
                summary = todos_and_questions.todo_summary(todos)
                return Done("done", f"{summary}\n{plans.AFTER_TODOS}" if self.planning() else summary)
            question = todos_and_questions.parse_question(args)
        except ToolError as exc:
            return Done("error", str(exc))
        if self.req.unattended:
            return Done("done", notices.NOBODY_TO_ANSWER)
        self.t.update(call.card, state="waiting")
        answered, answer = await self.t.wait_answer(call.card, "question")
        if not answered:
            return Done("denied", notices.QUESTION_STOPPED)
        assert isinstance(answer, (str, list))
        return Done("done", todos_and_questions.answer_text(question, answer))

    async def update_goal(self, call: Call, args: dict[str, Any]) -> Done:
        """update_goal: the model says the goal is reached (checked before it counts) or blocked."""
        goal = self.t.info.goal
        if goal is None or goal.state != "active":
            return Done("error", notices.NO_OPEN_GOAL)
        try:
            update = goals.parse_update(args)
        except ToolError as exc:
            return Done("error", str(exc))
        if update.blocked_reason is not None:
            self.t.set_info(goal=attrs.evolve(goal, state="blocked", reason=update.blocked_reason))
            self.t.notice(notices.GOAL_BLOCKED.format(why=update.blocked_reason), "warn", "goal_blocked")
            self.settled = "goal_blocked"
            return Done("done", notices.GOAL_BLOCKED.format(why=update.blocked_reason))
        if goals.open_todos(self.t.info.todos):
            return Done("error", goals.refuse_completion(self.t.info.todos))
        if goal.verify:
            if self.verifications < goals.VERIFIER_TURNS:
                self.t.update(call.card, state="running")
                self.verifications += 1
                verdict = await self.check_goal(goal)
                if not verdict.complete:
                    self.t.set_info(goal=attrs.evolve(goal, reason=goals.gaps_text(verdict)))
                    return Done("error", goals.gaps_text(verdict))
            else:
                self.t.notice(notices.GOAL_UNCHECKED.format(n=goals.VERIFIER_TURNS), "warn")
        self.t.set_info(goal=attrs.evolve(goal, state="complete", reason=None))
        self.t.notice(notices.GOAL_COMPLETE, "info", "goal_complete")
        self.settled = "goal_complete"
        return Done("done", notices.GOAL_COMPLETE)

    async def check_goal(self, goal: Goal) -> goals.Verdict:
        """One verifier turn: tool-free, its own prompt, its answer held to the verdict's
        schema (a grammar on the local model, response_format on a provider)."""
        turn = TurnInput(tuple(goals.verifier_messages(goal.text, self.t.info.todos, self.t.items)), (),
                         max_tokens=goals.VERIFIER_MAX_TOKENS, temperature=0.0, answer_schema=goals.VERDICT_SCHEMA)
        try:
            verdict = goals.parse_verdict(await side_turn(self.env, self.t.info.route, self.t.id, turn))
        except SideTurnFailed as exc:
            verdict = goals.Verdict(False, (f"the check could not run ({exc})",))
        if verdict.complete:
            self.t.notice(notices.GOAL_CHECKED_COMPLETE, "info")
        else:
            self.t.notice(notices.GOAL_CHECKED_GAPS.format(gaps="; ".join(verdict.gaps) or "none named"), "info")
        return verdict

    async def helper(self, call: Call, args: dict[str, Any]) -> Done:
        """task: a new helper; send_subagent_message: a finished one goes on."""
        owner = self.owner
        assert owner is not None
        try:
            if call.name == helpers.TASK:
                description, prompt, kind = helpers.task_args(args)
                helper = self.helpers[call.card] = helpers.Helper(owner, call.card, kind, description)
                message, rounds = prompt, self.env.helper_rounds or helpers.HELPER_ROUNDS
            else:
                task, said = args.get("task"), args.get("message")
                if not isinstance(said, str) or not said.strip():
                    raise ToolError('The call needs "message": what to tell the helper.')
                message = said
                found = self.helpers.get(task) if isinstance(task, str) else None
                if found is None and self.background is not None and isinstance(task, str):
                    found = next((w.helper for w in self.background.helpers() if w.helper.card == task), None)
                card = self.t.find(task) if found is None and isinstance(task, str) else None
                if card is not None and card.tool == helpers.TASK:
                    found = helpers.Helper.from_card(owner, card)  # a helper of an earlier message
                    if found is not None:
                        self.helpers[card.id] = found
                if found is None:
                    known = ", ".join(self.helpers) or "none yet"
                    raise ToolError(f"There is no finished helper {task!r} here. Helpers of this run: {known}.")
                if found.state in ("waiting", "running"):
                    # A helper working in the background reads it at its next round.
                    found.inbox.append(message)
                    return Done("done", f"Sent: the helper {found.card} reads it at its next round.")
                helper, rounds = found, helpers.CONTINUE_ROUNDS
        except ToolError as exc:
            return Done("error", str(exc))
        if self.planning():
            # Not offered while planning (specs); called anyway (planning began after
            # the tools were chosen, or a bug offered it): refused. A general helper
            # works with the parent's tools under its mode, before any plan is approved.
            self.helpers.pop(call.card, None)
            return Done("denied", notices.NO_HELPER_WHILE_PLANNING)
        if call.name == helpers.TASK and args.get("background") is True and self.background is not None:
            try:
                self.background.start(helper, message, rounds)
            except ToolError as exc:
                return Done("error", str(exc))
            return Done("done", f"The helper works in the background. [task id: {helper.card}] Read it with "
                                "get_task_output, wait for it with wait_tasks, stop it with kill_task.")
        answer = await helper.work(message, rounds)
        state: ToolState = "error" if helper.state == "error" else "done"
        return Done(state, f"{answer}\n\n[task id: {helper.card}]")


    async def background_call(self, call: Call, args: dict[str, Any]) -> Done:
        """get_task_output, wait_tasks, kill_task (background.py)."""
        work = self.background
        try:
            if work is None:
                raise ToolError("There are no background helpers here.")
            if call.name == background.GET_OUTPUT:
                return Done("done", work.output(args.get("id")))
            if call.name == background.WAIT:
                self.t.update(call.card, state="running")
                return Done("done", await work.wait(args))
            return Done("done", await work.kill(args.get("id")))
        except ToolError as exc:
            return Done("error", str(exc))
