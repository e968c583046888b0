"""The calls of a round of the built-in run, carried out under the policy.

When a round ends its calls run in the order the model gave them: those that change
nothing together (at most PARALLEL_CALLS), each change alone, after every call before
it has ended; so two calls that touch one path never overlap, and the model reads the
results in the order of the calls. A change runs under the policy (actors/policy/modes.py),
which reads the mode as it is then: refused, run, or shown on a card for the person to
approve (with an always-allow rule, actors/policy/rules.py); the person's hooks see it
before and after. A call the run carries out itself goes to its own tools
(actors/runs/agent/run_tools/carrier.py). What each call ended with is fed to the
run's ledger (actors/runs/agent/ledger.py), which says when the run is stuck.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from actors import notices
from actors.errors import ToolError
from actors.policy.hooks_config import HookEvent, HookName
from actors.policy.modes import ModeWatch, decide
from actors.policy.rules import PATH_TOOLS, card_fields, offered_rules
from actors.record import cards
from actors.record.items import PlanInfo, ToolState
from actors.record.transcript import Transcript
from actors.runs.agent.client_calls import ask_client
from actors.runs.agent.ledger import SHELL_TOOL, CallEnded, Ledger, Verdict, WriteRefused, call_key, parse_arguments
from actors.runs.agent.prepare import Offer
from actors.runs.agent.round_stream import RoundStream
from actors.runs.agent.run_tools import helpers
from actors.runs.agent.run_tools.carrier import Call, Done, OwnTools
from actors.runs.agent.small.leader import Leading
from actors.runs.base import RunRequest
from actors.runs.env import Env
from actors.tools.links import why_read_leaves
from actors.tools.registry import STORED_RESULT_CAP_BYTES, Tool, ToolContext, ToolOutcome, cap_text
from actors.tools.shell import asks_outside

# How many times a card is shown again because its file changed while it waited.
APPROVAL_REDRAWS = 3
# The tools after whose edit the language server's diagnostics join the result.
DIAGNOSED = ("write_file", "edit_file")
# How many calls that change nothing run at once within a round.
PARALLEL_CALLS = 4


class CallRunner:
    """The calls of one run's rounds; see the module docstring."""

    def __init__(self, transcript: Transcript, env: Env, request: RunRequest, *, offer: Offer, own: OwnTools,
                 leader: Leading, ledger: Ledger, stream: RoundStream) -> None:
        self._t = transcript
        self._env = env
        self._req = request
        self._offer = offer
        self._own = own
        self._leader = leader
        self._ledger = ledger
        self._stream = stream
        self._modes = ModeWatch(transcript.info.mode)
        self._pending: list[Call] = []  # calls of the round that have not ended, in order
        self._copies: set[str] = set()  # cards of calls this round's answer had made already
        self._again: set[str] = set()  # cards of calls refused as made already while nothing changed
        self._refused = 0  # calls refused in an unattended run, for the closing notice

    def take(self, calls: list[Call]) -> None:
        """The round's calls, to run next (`run_round`)."""
        self._pending = list(calls)

    async def run_round(self) -> Verdict:
        """Run the round's calls (see the module docstring). "go_on", or why the run must
        stop as the ledger says ("stuck": the same call failing the same way; "failing":
        too many calls in a row failed); the calls after the one that made it are not run."""
        # A call the answer made twice runs once: the copies are refused (a small
        # model writes one call four times over in a parallel answer).
        seen: set[tuple[str, str]] = set()
        self._copies, self._again = set(), set()
        ws = self._offer.workspace()
        for call in self._pending:
            key = call_key(call.name, call.raw)
            if key in seen:
                self._copies.add(call.card)
            seen.add(key)
        while self._pending:
            batch = await self._next_batch()
            done: dict[str, Done] = {}
            if len(batch) == 1:
                done[batch[0].card] = await self._call(batch[0])
            else:
                limit = trio.CapacityLimiter(PARALLEL_CALLS)
                async with trio.open_nursery() as nursery:
                    for call in batch:
                        nursery.start_soon(self._call_into, call, done, limit)
            for call in batch:
                self._pending.remove(call)
                if call.card in self._copies:
                    continue  # neither a failure of its own nor a call to avoid: its first is
                ended = CallEnded(call.name, call.raw, done[call.card].state, done[call.card].result,
                                  read=await self._reads_only(call, ws), own=self._changes_no_file(call),
                                  again=call.card in self._again)
                verdict = self._ledger.feed(ended)
                if verdict != "go_on":
                    return verdict
        return "go_on"

    async def seed(self) -> None:
        """Tell the ledger the calls an earlier run of the same message made (those after
        the person's latest message: a run resumed, or one that goes on after an approval
        or an answer), so what it made while nothing changed is not made again."""
        items = self._t.items
        last_user = max((n for n, i in enumerate(items) if i.kind == "user"), default=-1)
        ws = self._offer.workspace()
        for item in items[last_user + 1:]:
            if item.kind != "tool" or item.tool is None or item.state not in ("done", "error", "denied"):
                continue
            raw = item.raw_args if item.raw_args is not None else json.dumps(item.args or {})
            call = Call(item.id, item.tool, raw)
            self._ledger.feed(CallEnded(call.name, raw, item.state, item.result or "", read=await self._reads_only(
                call, ws), own=self._changes_no_file(call), earlier=True))

    def _changes_no_file(self, call: Call) -> bool:
        """Whether a call that is no read surely changes no file of the workspace: one
        of the run's own tools (a general helper's excepted), or the plan's file."""
        args, _ = parse_arguments(call.raw)
        if call.name in self._offer.own_names():
            return not (call.name == helpers.TASK and args is not None and args.get("subagent_type") == "general")
        return args is not None and self._own.writes_plan(call.name, args)

    async def _call_into(self, call: Call, done: dict[str, Done], limit: trio.CapacityLimiter) -> None:
        async with limit:
            done[call.card] = await self._call(call)

    async def _next_batch(self) -> list[Call]:
        """The next calls that may run together: the leading ones that change nothing,
        or else the first call alone."""
        ws = self._offer.workspace()
        batch: list[Call] = []
        for call in self._pending:
            if not await self._reads_only(call, ws):
                break
            batch.append(call)
        return batch or self._pending[:1]

    async def _reads_only(self, call: Call, ws: Path | None) -> bool:
        """Whether the call surely changes nothing (a read, a command that needs no card);
        the run's own tools and anything unknown count as changes."""
        args, _ = parse_arguments(call.raw)
        tool = self._env.registry.get(call.name)
        own = self._offer.own_names()
        if args is not None and call.name == helpers.TASK and call.name in own:
            return args.get("subagent_type", "explore") in ("explore", None)  # explore tasks run at once
        if args is None or tool is None or not self._offer.offers(tool) or call.name in own:
            return False
        try:
            return not await is_change(tool, args, ws)
        except Exception:
            return False

    async def _call(self, call: Call) -> Done:
        """Run one call under the policy and end its card; what it ended with."""
        args, why = parse_arguments(call.raw)
        shown = args if args is not None else {}
        client = self._offer.client_tool(call.name)  # a client's tool may take a built-in's name
        tool = None if client is not None else self._env.registry.get(call.name)
        self._t.update(
            call.card, urgent=False, args=shown, raw_args=None if args is not None else call.raw,
            title=self._stream.title(call.name, shown), mcp=getattr(tool, "mcp", None),
            mcp_host=getattr(tool, "mcp_host", None),
        )
        note = self._modes.note(self._t.info.mode)
        if args is None:
            done = Done("error", notices.ARGUMENTS_NOT_JSON.format(why=why))
        elif call.card in self._copies:
            done = Done("error", notices.SAME_CALL_IN_ANSWER)
        elif self._ledger.made(call.name, call.raw):
            # Made while nothing changed since: refused here, on every route (a
            # provider's model is not held by a grammar; in the web UI the bundled one
            # searched for one text 25 times).
            done = Done("error", notices.MADE_ALREADY)
            self._again.add(call.card)
        elif client is not None:
            done = await ask_client(self._t, call.card, client, args)
        elif call.name in self._offer.own_names():
            self._t.update(call.card, state="running")  # as any card: a question or a plan then waits
            done = await self._own.run(call, args)
        elif self._own.writes_plan(call.name, args):
            done = await self._own.write_plan(tool, args)
        elif tool is None or not self._offer.offers(tool):
            done = Done("error", notices.NO_SUCH_TOOL.format(name=call.name, names=self._offer.tool_names()))
        elif (refused := await self._leader.call_refused(call.name, args)) is not None:
            done = Done("error", refused.text)
            if refused.bars:
                # And the next round may not write at all: varying the content, SmolLM2
                # wrote config.py over again round after round (each refused).
                self._ledger.feed(WriteRefused(call.name))
        else:
            done = await self.run_tool(tool, call.card, args)
        result = cap_text(done.result if note is None else f"{note}\n{done.result}", STORED_RESULT_CAP_BYTES)
        ended_by, person = notices.card_end(done.result, daemon_stopping=self._t.daemon_stopping)
        if note is not None and person is None:
            person = cap_text(done.result, STORED_RESULT_CAP_BYTES)  # the mode's note is the model's
        self._t.update(call.card, state=done.state, result=result, diff=done.diff, file=done.file,
                       ended_by=ended_by, person_text=person)
        if done.narrow is not None:
            self._offer.narrow(done.narrow)
            self._own.replan = True  # the next round offers only those
        return done

    async def run_tool(self, tool: Tool, card_id: str, args: dict[str, Any]) -> Done:
        """A workspace tool's call under the policy and the hooks: refused, asked of the
        person, or run; with what the language server and the instruction files add."""
        ws = self._offer.workspace()
        mode = self._t.info.mode
        change = await is_change(tool, args, ws)
        outside = asks_outside(tool.name, args)  # always a card (actors/policy/modes.py), no rule
        rule = await self.rule_for(tool, args, ws) if change and mode == "ask" and not outside else None
        verdict = decide(mode=mode, change=change, unattended=self._req.unattended,
                         planning=self._t.info.plan_mode, rule=rule, outside=outside)
        if verdict.allowed_by is not None:
            self._t.update(card_id, urgent=False, allowed_by=verdict.allowed_by)
        if verdict.action == "refuse":
            self._refused += int(verdict.unattended)
            leaves = None  # a read refused for leading out is told so, not taken for a change
            if tool.name == SHELL_TOOL and ws is not None:
                leaves = await trio.to_thread.run_sync(why_read_leaves, args.get("command"), ws)
            return Done("denied", notices.read_leads_out(leaves) if leaves else verdict.why or notices.DENIED_READ_ONLY)
        blocked = await self.hook("pre_tool_use", tool=tool.name, args=args)
        if blocked is not None:
            return Done("denied", notices.BLOCKED_BY_HOOK.format(why=blocked))
        ctx = ToolContext(conversation=self._t.id, workspace=ws, mode=mode)
        if verdict.action == "ask":
            refusal = await self._ask_person(tool, card_id, args, ctx)
            if refusal is not None:
                return refusal
        self._t.update(card_id, state="running")
        try:
            outcome = await tool.run(args, ctx)
        except ToolError as exc:
            done = Done("error", str(exc))
        except Exception as exc:  # a tool's bug is a failed call, not a dead run
            done = Done("error", f"The tool failed unexpectedly ({type(exc).__name__}: {exc}).")
        else:
            result = outcome.result
            if ws is not None and outcome.file and tool.name in DIAGNOSED and self._env.diagnostics is not None:
                found = await self._env.diagnostics.after_edit(ws, outcome.file)
                result = f"{result}\n\n{found}" if found else result
            touched = outcome.file or args.get("path")
            if ws is not None and isinstance(touched, str) and touched:
                nested = await self._offer.nested_instructions(ws, touched)
                result = f"{result}\n\n{nested}" if nested else result
            done = Done("done", result, outcome.diff, outcome.file, outcome.narrow)
        await self.hook("post_tool_use", tool=tool.name, args=args, result=done.result, state=done.state)
        return done

    async def rule_for(self, tool: Tool, args: dict[str, Any], ws: Path | None) -> str | None:
        """The always-allow rule that matches this call, for a local client's run only."""
        rules, ws_id = self._env.rules, self._t.info.workspace
        if rules is None or ws is None or ws_id is None or not self._req.local or self._t.info.plan_mode:
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
        if self._env.hooks is None:
            return None
        return await self._env.hooks.fire(HookEvent(name, self._t.id, self._offer.workspace(), **fields))

    async def _ask_person(self, tool: Tool, card_id: str, args: dict[str, Any], ctx: ToolContext) -> Done | None:
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
        if self._env.rules is not None and self._req.local and self._t.info.workspace is not None \
                and not asks_outside(tool.name, args):
            offered = await trio.to_thread.run_sync(offered_rules, tool.name, args, ctx.workspace)
        for _ in range(APPROVAL_REDRAWS + 1):
            self._t.update(card_id, state="waiting", result=note, **card_fields(offered), **_preview_fields(shown))
            answer = await self._t.wait_approval(card_id)
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

    def end_pending(self, state: ToolState, why: str) -> None:
        """End the round's calls that did not run (stored: the round decided them)."""
        for call in self._pending:
            args, _ = parse_arguments(call.raw)
            card = self._t.find(call.card)
            if card is None or card.state in ("done", "denied", "error"):
                continue
            if card.state == "waiting":
                waited = notices.QUESTION_STOPPED if card.tool == cards.ASK_USER else notices.DENIED_WAITING_STOPPED
                changes: dict[str, Any] = {"state": "denied", "result": waited}
                plan = self._t.info.plan
                if card.tool == cards.EXIT_PLAN and plan is not None and plan.state == "proposed":
                    # Its card is gone: the plan goes back to drafting, to be shown again.
                    self._t.set_info(plan=PlanInfo(plan.revision, "drafting"))
            elif card.state == "running":
                changes = {"state": "error", "result": notices.ERROR_RUNNING_STOPPED}
            elif card.state == "waiting_client":
                changes = {"state": "error", "result": notices.CLIENT_STOPPED}
            else:
                changes = {"state": state, "result": why, "args": args if args is not None else {}}
                if args is not None:
                    changes["title"] = self._stream.title(call.name, args)
            self._t.update(call.card, **changes)
        self._pending = []

    def tell_refused(self) -> None:
        """Say how many calls the policy refused because nobody was there to approve them."""
        if self._refused:
            self._t.notice(notices.refused_unattended(self._refused), "warn")


async def is_change(tool: Tool, args: dict[str, Any], ws: Path | None) -> bool:
    """`tool.is_change`, in a worker thread for a tool whose answer looks at the disk
    (`checks_disk`: a command's words and the walks its programs make, bounded but not
    tiny), so the event loop never waits for it."""
    if getattr(tool, "checks_disk", False):
        return await trio.to_thread.run_sync(tool.is_change, args, ws)
    return tool.is_change(args, ws)


def _preview_fields(shown: ToolOutcome | None) -> dict[str, Any]:
    return {} if shown is None else {"diff": shown.diff, "file": shown.file}
