"""Whether a run leads its model, and everything the leading does, in one object.

`leader_for` is the one place that decides a model is led: a local model the backend
says is under size.SMALL_MODEL_PARAMS parameters (SmolLM2-135M, the bundled one),
unless the daemon was started with --leading off. Such a run gets a `Leader`; every
other run a `NotLed`, which changes nothing, so the run's loop
(actors/runs/agent/run.py) reads the same for both and knows nothing of the leading's
rules (actors/runs/agent/small/steps.py has them, and why).

What a `Leader` does: its model makes one call a round (TurnInput.parallel_calls off:
given room for four, SmolLM2-135M filled it with calls it had no use for, a `get_info`,
an `echo`, a glob of the file it was reading, beside the one it needed); its prompt
shows the worked examples and its tools one line each, and its calls' values may not be
the examples' own argument values (TurnInput.examples, terse_tools, banned: the backend
does as it is asked and decides nothing); it is offered fewer of the run's own tools,
no skill, and each tool's required arguments only; its first round calls the tool the
nearest worked example begins with (worked_examples.nearest); the round after a change
is the answer unless the request is still open (a file it names still missing, a value
it gives in none of its files: steps.still_open, up to steps.MAX_CHANGES changes), the
round after a change it only claimed a change; its edit_file names only lines that are
there; its write_file is offered only when the request names a new file, names that
file, and may not replace a file it did not make (an edit leaves a file the person's); and an answer the record
contradicts (a missing file, a change claimed, none of a search's files, the examples'
words or a refusal repeated) is sent back once, and when the next one is too, the
person reads that the model could not do it and what to try instead (`could_not`).

A larger model, or a provider's, is not led: its rounds are its own.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import attrs
import trio

from actors import notices
from actors.fs.paths import read_workspace_text
from actors.model.backends import worked_examples
from actors.model.turns import ToolSpec, TurnInput
from actors.record.items import model_notice
from actors.record.transcript import Transcript
from actors.runs.agent.ledger import SHELL_TOOL
from actors.runs.agent.small import (
    commands,
    docstrings,
    faults,
    guards,
    lookup,
    own_tools,
    read_answers,
    request_forms,
    set_values,
    steps,
)
from actors.runs.agent.small.files_of import command_refused, edit_refused, exists_in, lines_in, read_in
from actors.runs.agent.small.run_record import RunRecord, after_loop, avoided_edits, failing_tool
from actors.runs.agent.small.size import leads
from actors.runs.env import Env

# A small model's worked examples (about 400 tokens) come with a context of at least
# this many tokens: at 2,048 they crowded the conversation, which then compacted every
# other round (25 compactions in 55 rounds of the 60-round compaction test).
EXAMPLES_MIN_CTX = 4096
# A small local model's answering round (the one after a change) is greedy: sampled at
# the backend's 0.3, SmolLM2 copied the worked examples' words into its answers ("It
# printed: server: 8080" for "Hello, world!"); greedy, it quoted the output. Its other
# rounds are sampled: greedy, every try of a plan, or of a request to hand a search to
# a helper, was the same loop, which sampling leaves (tests/test_plan_e2e.py,
# tests/test_subagents_model.py).
SMALL_TEMPERATURE = 0.0
# The answer after one cut for a loop is sampled (at the turn's own temperature) with
# this penalty on the tokens written lately: greedy, SmolLM2 wrote the cut answer
# again word for word, loop and all, until the run stopped as stuck.
LOOP_PENALTY = 1.3
# Calls in a row that got nowhere (failed, refused, a search that found nothing: ledger.
# got_nowhere), whatever they are, after which a led run stops and says the model could
# not find a way (Ledger.fail_limit): each new, so neither the rule above nor the streak
# of identical failures ended them (SmolLM2 alternated a refused write and a refused
# edit, each a little other, to the time limit; it searched for its own looping words
# with one more character each round). Of 389 runs kept from the development set, 35
# had four failures in a row; the few that ran a call well after that were commands
# before they were held to a program this machine has.
FAILS_TO_STOP = 6


SEARCH_TOOL = steps.SEARCH_TOOL
_Judged = TypeVar("_Judged")


class Leading(Protocol):
    """What a run asks of its leading, led or not (`Leader`, `NotLed`)."""

    @property
    def offers_skills(self) -> bool: ...

    @property
    def checks_answers(self) -> bool: ...

    @property
    def offers_memory(self) -> bool: ...

    @property
    def fails_to_stop(self) -> int | None: ...

    @property
    def plans_by_reading(self) -> bool: ...

    def own_specs(self, specs: tuple[ToolSpec, ...], *, planning: bool) -> tuple[ToolSpec, ...]: ...

    def parameters(self, specs: tuple[ToolSpec, ...]) -> tuple[ToolSpec, ...]: ...

    def dressed(self, turn: TurnInput, *, planning: bool | None = None) -> TurnInput: ...

    async def round_turn(self, turn: TurnInput, *, must_call: bool, offered: Collection[str],
                         cut: Collection[str] = ()) -> TurnInput: ...

    def after_round(self, calls: Sequence[tuple[str, bool]]) -> None: ...

    def free(self) -> None: ...

    async def sent_back(self, text: str, *, changed: bool) -> bool: ...

    async def could_not(self, text: str, *, changed: bool) -> str | None: ...

    async def done_answer(self) -> str | None: ...

    async def call_refused(self, name: str, args: dict[str, Any]) -> guards.Refusal | None: ...


def leader_for(transcript: Transcript, env: Env) -> Leading:
    """The leading of a run on this conversation's route, decided once for the run (none
    when the daemon was started with --leading off)."""
    if env.leading and leads(transcript.info.route, env.engine.backend):
        return Leader(transcript, env)
    return NotLed()


class NotLed:
    """A model that is not led: its rounds are its own."""

    offers_skills = True
    checks_answers = False
    offers_memory = True
    fails_to_stop = None  # a model that is not led finds its own way out of failures
    plans_by_reading = False  # planning, the file tools for the plan file and read-only commands

    def own_specs(self, specs: tuple[ToolSpec, ...], *, planning: bool) -> tuple[ToolSpec, ...]:
        return specs

    def parameters(self, specs: tuple[ToolSpec, ...]) -> tuple[ToolSpec, ...]:
        return specs

    def dressed(self, turn: TurnInput, *, planning: bool | None = None) -> TurnInput:
        return turn

    async def round_turn(self, turn: TurnInput, *, must_call: bool, offered: Collection[str],
                         cut: Collection[str] = ()) -> TurnInput:
        return turn

    def after_round(self, calls: Sequence[tuple[str, bool]]) -> None:
        return None

    def free(self) -> None:
        return None

    async def sent_back(self, text: str, *, changed: bool) -> bool:
        return False

    async def could_not(self, text: str, *, changed: bool) -> str | None:
        return None

    async def done_answer(self) -> str | None:
        return None

    async def call_refused(self, name: str, args: dict[str, Any]) -> guards.Refusal | None:
        return None


class Leader:
    """The leading of one run's small model; see the module docstring."""

    # Skills are not offered: a small model offered `use_skill` calls it instead of working.
    offers_skills = False
    # Not the memory tools: a small model offered a tool calls it instead of answering, and
    # three more tool lines crowd its prompt; no run has shown it using them to any good.
    offers_memory = False
    fails_to_stop = FAILS_TO_STOP
    # Planning, it reads (files, searches): not the file tools for the plan file, with which
    # SmolLM2 wrote the workspace's files (refused) call after call and seldom the plan
    # file, nor commands, of which it ran `touch …` (refused) one after another; its plan
    # goes in exit_plan_mode's `plan` (tests/test_plan_e2e.py's tries, to the call bound).
    plans_by_reading = True

    def __init__(self, transcript: Transcript, env: Env) -> None:
        self._t = transcript
        self._rec = RunRecord(transcript)  # what the run's record says
        self._env = env
        self._step: steps.Step = "any"  # the next round's step, from the last round's calls
        self._change_rounds = 0  # rounds of this run that had to change a file (step "change")
        self._checks = 0  # answers of this run sent back (steps.answer_fault)
        self._rounds = 0  # rounds of this run whose calls ran
        self._changes = 0  # rounds of this run that changed something
        self._new: list[str] | None = None  # the files the request names that were not there at first
        self._finding = False  # this round searches for the place of a change (no file to edit yet)
        self._change_asked = False  # the request asks for a change (its nearest example's first call makes one)
        self._asking = False  # this round searches for what a question asks about
        self._to_read: list[str] = []  # the files the next round reads (what the question's search found)
        self._found_place = False  # the last round's search found it: the change round edits its lines
        self._echoes = 0  # writes of this run refused for their text (guards.echo_refused, name_refused)
        self._programs: commands.Offered | None = None  # what its commands may be (commands.for_request)
        self._starts: tuple[str, ...] = ()  # what the next answer begins with, one of them (TurnInput.reply_starts)
        self._read_for: tuple[str, str] | None = None  # the file a question's round read, and the name it asks of
        self._kinds: list[str] | None = None  # the kinds of file the workspace has (lookup.kinds_in), found once

    @property
    def checks_answers(self) -> bool:
        """Whether an answer is checked against the record before the person reads it
        (sent_back, could_not): with a workspace to check it in."""
        return self._workspace() is not None

    @property
    def step(self) -> steps.Step:
        """The next round's step (steps.next_step)."""
        return self._step

    def _workspace(self) -> Path | None:
        ws = self._t.info.workspace
        return self._env.resolve_workspace(ws) if ws else None

    # ---- what it is offered ----

    def own_specs(self, specs: tuple[ToolSpec, ...], *, planning: bool) -> tuple[ToolSpec, ...]:
        """The run's own tools it is offered (own_tools.small_specs): the helpers where
        the request asks for one (own_tools.asks_helper)."""
        return own_tools.small_specs(specs, planning=planning, helper_asked=own_tools.asks_helper(self._rec.asked()))

    def parameters(self, specs: tuple[ToolSpec, ...]) -> tuple[ToolSpec, ...]:
        """The workspace's tools with the arguments it is told of (steps.small_parameters)."""
        return tuple(map(steps.small_parameters, specs))

    # ---- its turns ----

    def dressed(self, turn: TurnInput, *, planning: bool | None = None) -> TurnInput:
        """`turn` as its prompt is shown (a round's, or one only counted): tools one line
        each; the worked examples when the context has room for them and the round may
        end with a reply (each example ends with one: while planning, every round a
        call, SmolLM2 wrote the write example's memo.txt over and over instead of its
        todo list); with the examples, their own argument values banned as its calls'
        values (not where the conversation has them); and its
        calls' arguments watched for loops as closely as its answers (it loops inside
        them; another model's repeated file content is content, repeats.TurnWatch)."""
        backend = self._env.engine.backend
        room = int(backend.n_ctx) if backend is not None else 0
        planning = turn.tool_choice == "required" if planning is None else planning
        examples = room >= EXAMPLES_MIN_CTX and not planning
        banned = worked_examples.example_values(turn.messages) if examples else ()
        return attrs.evolve(turn, examples=examples, terse_tools=True, banned=banned, watch_calls_closely=True)

    async def round_turn(self, turn: TurnInput, *, must_call: bool, offered: Collection[str],
                         cut: Collection[str] = ()) -> TurnInput:
        """The round's `turn` as it leads it: one call at most; after a change the
        answer (a reply, greedy); after a change it only claimed a call of a tool that
        changes files; edit_file held to lines that are there (or left out until it
        has read a file); dressed. A change round keeps a tool whose call a loop cut
        (`cut`), sampled with LOOP_PENALTY (left out, the round was free: SmolLM2
        searched on). A round that must be a call anyway (planning) is left free of the
        steps, and calls the todo list's tool until the list has a step, then
        exit_plan_mode (own_tools.planning_tool)."""
        if self._new is None:
            self._new = await self._new_files()
        if self._step == "answer" and not must_call and self._changes < steps.MAX_CHANGES and await self._open():
            self._step = "change"  # the request still wants a change: a file it names, a value it gives
        answer = self._step == "answer" and not must_call
        change = self._step == "change" and not must_call
        choice = "required" if must_call or change else ("none" if answer else None)
        again = {t for t in cut if t in steps.CHANGE_TOOLS} if change else set()  # the change once more
        avoid = tuple(a for a in turn.avoid if a[1] is not None or a[0] not in again)
        failing = failing_tool(self._rec.run_items())
        if failing is not None and not must_call and not change:  # a change round keeps its tools
            avoid += ((failing, None),)
        planned = own_tools.planning_tool(bool(self._t.info.todos)) if must_call else None
        if planned in {t.name for t in turn.tools}:  # planning: the list, then the plan
            avoid += tuple((t.name, None) for t in turn.tools if t.name != planned)
        if change:  # a change of files (or, asked to copy, move or delete them, a command)
            avoid += tuple((t.name, None) for t in turn.tools if t.name not in commands.change_tools(self._rec.asked()))
            if self._found_place and not self._new:
                avoid += ((steps.WRITE_TOOL, None),)  # the change is at the lines found, not a new file
        shapes: tuple[tuple[str, dict[str, Any]], ...] = ()
        nothing_to_edit = False
        if steps.EDIT_TOOL in offered:
            shape = await self._edit_shape(found_lines=self._step == "change" and self._found_place, avoid=avoid)
            if shape is None:
                avoid += ((steps.EDIT_TOOL, None),)
                nothing_to_edit = True
            else:
                shapes = ((steps.EDIT_TOOL, shape),)
        write = next((t for t in turn.tools if t.name == steps.WRITE_TOOL), None)
        if write is not None and not self._new:  # no new file asked for: none to write
            avoid += ((steps.WRITE_TOOL, None),)  # (asked to fix a word, it made `telescopes.csv.gz`)
        new = await self._new_files() if write is not None else []
        write_shape = set_values.hold_content(steps.write_shape(write.parameters, new), self._rec.asked(),
                                              lookup.found_listing(self._rec.asked(), self._rec.search_result())) \
            if write is not None and new else None  # (its text: the request's, or the list of what was found)
        if write_shape is not None:
            shapes += ((steps.WRITE_TOOL, write_shape),)
        first = (self._first_tool(turn, offered, avoid, nothing_to_edit=nothing_to_edit)
                 if self._step == "any" and not must_call else None)
        words, kinds = (await self._search_words(), lookup.kind_patterns(self._rec.asked())) \
            if first == SEARCH_TOOL else ([], [])  # (the search's words walk the files: once a round)
        glob = next((t for t in turn.tools if t.name == lookup.GLOB_TOOL and t.name in offered), None)
        if kinds and glob is not None and not words:  # no word to look for: the files
            first, shapes = glob.name, shapes + ((glob.name, lookup.one_of(glob.parameters, "include", kinds)),)
        reader = next((t for t in turn.tools if t.name == lookup.READ_TOOL), None)
        if first is None and self._to_read and not must_call and reader is not None and reader.name in offered:
            first = reader.name  # the question's search found its place: the file is read whole
            shapes += ((first, lookup.one_of(reader.parameters, "path", self._to_read)),)
        if not self._rounds and self._step == "any" and not must_call and SHELL_TOOL in offered \
                and (SHELL_TOOL, None) not in avoid and (await self._offered()).does_job:
            first = SHELL_TOOL  # the request's whole command is known: the first round runs it
        if first is not None:
            choice = "required"
            avoid += tuple((t.name, None) for t in turn.tools if t.name != first)
        if change and not {t.name for t in turn.tools} - {n for n, a in avoid if a is None}:  # none left: free,
            avoid, choice = tuple(a for a in avoid if a[1] is not None or a[0] in steps.CHANGE_TOOLS), None  # held
        shell = next((t for t in turn.tools if t.name == SHELL_TOOL), None)
        if shell is not None and (SHELL_TOOL, None) not in avoid:
            command_shape = commands.held_command(shell.parameters, await self._offered(), avoid, self._rec.asked())
            if command_shape is not None:
                shapes += ((SHELL_TOOL, command_shape),)
        search = next((t for t in turn.tools if t.name == SEARCH_TOOL), None)
        if first == SEARCH_TOOL and search is not None:
            search_shape = lookup.search_shape(search.parameters, words)
            if search_shape is not None:
                shapes += ((SEARCH_TOOL, search_shape),)
        if search is not None and SEARCH_TOOL not in dict(shapes) and (ws := self._workspace()) is not None:
            if self._kinds is None:  # (SmolLM2 searched `include: "bold"`, and found nothing)
                self._kinds = await trio.to_thread.run_sync(lookup.kinds_in, ws)
            include_shape = lookup.include_shape(search.parameters, self._kinds)
            if include_shape is not None:
                shapes += ((SEARCH_TOOL, include_shape),)
        # An answer only: a call round sampled with the penalty after a loop wrote a file
        # named with the loop's remains ("#ff0f#,blue:BLUE;…"), where greedy only repeats.
        looped = answer and after_loop(self._rec.run_items())
        if answer and (ws := self._workspace()) is not None:
            self._starts = await self._answer_starts(ws)
        return self.dressed(attrs.evolve(
            turn, tool_choice=choice, avoid=avoid, shapes=shapes, parallel_calls=False,
            temperature=SMALL_TEMPERATURE if answer and not looped else turn.temperature,
            repeat_penalty=LOOP_PENALTY if looped or again else None, reply_starts=self._starts if answer else (),
        ), planning=must_call)

    def _first_tool(self, turn: TurnInput, offered: Collection[str], avoid: tuple[tuple[str, Any], ...], *,
                    nothing_to_edit: bool = False) -> str | None:
        """The tool the run's first round calls: the one its nearest worked example
        begins with (worked_examples.nearest), when it is offered and not ruled out; for
        a change with no file to edit yet (`nothing_to_edit`: none named or read), a
        search for its place, and the round after a search that found it is a change."""
        self._finding = False
        if self._rounds:
            return None
        names = {t.name for t in turn.tools}
        example = worked_examples.nearest(names, self._rec.asked())
        if example is None:
            return None
        tool = example.calls[0][0]
        ruled_out = {name for name, args in avoid if args is None}
        where = request_forms.where_question(self._rec.asked())  # a question, whatever example is nearest
        self._change_asked = tool in (steps.EDIT_TOOL, steps.WRITE_TOOL) and not where \
            and bool(names & {steps.EDIT_TOOL, steps.WRITE_TOOL, SHELL_TOOL})  # (read only: no change to ask for)
        if tool == steps.EDIT_TOOL and (nothing_to_edit or where):
            tool = SEARCH_TOOL
        first = tool if tool in names and tool in offered and tool not in ruled_out else None
        self._finding = first == SEARCH_TOOL and example.calls[0][0] == steps.EDIT_TOOL and not where
        self._asking = first == SEARCH_TOOL and (example.calls[0][0] == SEARCH_TOOL or where)
        return first

    async def _answer_starts(self, ws: Path) -> tuple[str, ...]:
        """What an answer begins with, one of them: the names the file a question's round
        read gives (read_answers.answer_starts); after the job's whole command ran, the
        first line it printed, or where it printed none a file the request names (SmolLM2
        misspelt it: "Sorted: rote.txt"); else what was found."""
        asked = self._rec.asked()
        if self._read_for is not None:
            path, name = self._read_for

            def others() -> list[str]:  # (a class it is made from may be in another file)
                try:
                    return [t for p, t in lookup.text_files(ws, ".py") if p != path]
                except OSError:
                    return []
            text = await trio.to_thread.run_sync(read_in, ws, path)
            return await trio.to_thread.run_sync(read_answers.answer_starts, asked, text or "", name, others)
        if not self._starts and self._programs is not None and self._rec.ran(self._programs.job_commands):
            printed = self._rec.printed(self._programs.job_commands)
            if printed:  # what it printed is the answer (a count, a result: SmolLM2 quoted the request's value)
                return (printed,)
            return tuple(await trio.to_thread.run_sync(lambda: steps.named_files(asked, lambda n: exists_in(ws, n))))
        return self._starts

    async def _offered(self) -> commands.Offered:
        """What the run's commands may be (commands.for_request), found once."""
        if self._programs is None:
            self._programs = await trio.to_thread.run_sync(commands.for_request, self._rec.asked(), self._workspace())
        return self._programs

    async def _search_words(self) -> list[str]:
        """The words the run's first search may look for (lookup.search_words)."""
        ws = self._workspace()
        if ws is None:
            return []
        words = lookup.request_words(self._rec.asked())
        counts = await trio.to_thread.run_sync(lookup.file_counts, ws, [w for w, _ in words])
        return lookup.search_words(words, counts)

    async def _open(self) -> bool:
        """Whether the request is still open after a change (steps.still_open)."""
        ws = self._workspace()
        if ws is None:
            return False
        asked, new = self._rec.asked(), self._new or []
        return await trio.to_thread.run_sync(lambda: steps.still_open(
            asked, new, lambda rel: exists_in(ws, rel), lambda rel: read_in(ws, rel)))

    async def _new_files(self) -> list[str]:
        """The files the request names that are not there yet."""
        ws = self._workspace()
        if ws is None:
            return []
        names = steps.file_names(self._rec.asked())
        return await trio.to_thread.run_sync(lambda: [n for n in names if not exists_in(ws, n)])

    def after_round(self, calls: Sequence[tuple[str, bool]]) -> None:
        """The step after a round whose calls ran, as (state, whether it only read)."""
        seen = list(calls)
        self._rounds += 1
        self._changes += any(state == "done" and not read for state, read in seen)
        self._change_rounds += self._step == "change"
        self._step = steps.next_step(
            seen, changing=self._step == "change" and self._change_rounds < steps.CHANGE_ROUNDS)
        self._found_place = self._finding and any(state == "done" for state, _ in seen) and bool(self._rec.searched())
        if self._found_place:
            self._step = "change"  # the place of the change is found: the next round makes it there
        if self._programs is not None and self._rec.last_ran(self._programs.job_commands):
            self._step = "answer"  # the job's whole command ran (one that only reads, too: a count)
        self._read_for = None
        if self._to_read and seen and all(state == "done" for state, _ in seen):
            self._step = "answer"  # the question's place read whole: it answers (else it read on, and on)
            searched, read = self._rec.last_search(), self._rec.seen_files((lookup.READ_TOOL,))
            pattern = (searched.args or {}).get("pattern") if searched is not None else None
            self._read_for = (read[0], pattern) if read and isinstance(pattern, str) else None
        last = self._rec.last_search() if self._asking and self._step == "any" else None
        found = (self._rec.asked(), last.result or "", str((last.args or {}).get("pattern", ""))) if last else None
        self._to_read = lookup.to_read(*found) if found else []
        self._starts = tuple(lookup.where_found(*found)) if found else ()
        if self._starts:  # where it is, found: the answer (else it searched on, and on), from a file found
            self._step = "answer"  # (else it copied a line of the search's, of a file that only uses the name)
        self._finding = self._asking = False

    def free(self) -> None:
        """The next round is free (told what of the goal is open: its work goes on)."""
        self._step = "any"

    # ---- what it answers and calls ----

    async def sent_back(self, text: str, *, changed: bool) -> bool:
        """An answer that the run's record contradicts (steps.answer_fault) is sent back
        once: the model reads why and goes on (True). `changed`: a change ran."""
        if not text or self._checks >= steps.ANSWER_CHECKS:
            return False
        fault = await self._fault(text, changed=changed, judge=steps.answer_fault)
        if fault is None:
            return False
        self._checks += 1
        # A change claimed, or a new file not made: the next round makes one. The job's
        # whole command ran: the answer again (sent back so, SmolLM2 ran another command,
        # which wrote a file nobody asked for).
        done = self._programs is not None and self._rec.ran(self._programs.job_commands)
        self._step = "change" if fault in (faults.CLAIMED_CHANGE, faults.PARROTED, faults.IDLE) \
            or fault.startswith(faults.NOT_MADE_PREFIX) else \
            "answer" if done or changed and fault == faults.WORDLESS else "any"
        self._t.upsert(model_notice(fault, faults.fault_for_person(fault)), urgent=True)
        return True

    async def could_not(self, text: str, *, changed: bool) -> str | None:
        """What the person reads instead of an answer still at fault once answers were
        sent back as often as they may be (faults.could_not: the model could not do it,
        and what to try); None when the answer stands."""
        if not text or self._checks < steps.ANSWER_CHECKS:
            return None
        fault = await self._fault(text, changed=changed, judge=steps.find_fault)
        return None if fault is None else faults.could_not(fault)

    async def done_answer(self) -> str | None:
        """What the person reads in place of an answer still at fault where the job's
        whole command ran and exited 0 (the job is done; only the model's words about it
        are wrong): what the command printed, or that it ran; None where it did not run
        (then the model could not do it: could_not)."""
        if self._programs is None or not self._rec.ran(self._programs.job_commands):
            return None
        printed = self._rec.printed(self._programs.job_commands)
        return notices.JOB_DONE_PRINTED.format(printed=printed) if printed else notices.JOB_DONE

    async def _fault(self, text: str, *, changed: bool, judge: Callable[..., _Judged]) -> _Judged | None:
        """What `judge` (steps.answer_fault, or find_fault) finds wrong with the answer
        `text` by the run's record; None where nothing is (or there is no workspace)."""
        ws = self._workspace()
        if ws is None:
            return None
        rec, new = self._rec, self._new or []
        asked, found, said, refusals, ours, exists = (rec.asked(), rec.found(), rec.said(), rec.refusals(), rec.ours(),
                                                      rec.known_in(ws))
        printed = "\n".join(i.result or "" for i in rec.run_items() if i.kind == "tool")
        # A call the person (or a rule of the mode) said no to: the change was not theirs to make.
        denied = any(i.kind == "tool" and i.state == "denied" for i in rec.run_items())
        return await trio.to_thread.run_sync(lambda: judge(
            text, exists=exists, changed=changed, asked=asked, found=found,
            copied=lambda answer: worked_examples.example_words_in(answer, said), refusals=refusals,
            new=new, ours=ours, change_asked=self._change_asked and not denied, printed=printed,
            lines_of=lambda rel: lines_in(ws, rel)))

    async def call_refused(self, name: str, args: dict[str, Any]) -> guards.Refusal | None:
        """Why its call may not go on, None when it may: a write over a file of the
        person's (guards.replace_refused; the tool is then barred for a round), a write or
        an edit whose text repeats the daemon's own notes to it (guards.echo_refused), a
        write of only a file's name (guards.name_refused), a new file of an odd name
        (guards.odd_name_refused), an edit of spaces only (guards.spaces_only_refused),
        one with none of the values the request asks for (guards.value_missing_refused),
        an edit that would break a file
        that parses (guards.break_refused), or a command that removes a file the request
        names and does not ask to remove (guards.removal_refused), holds a placeholder
        path or the last command's error (call_slips)."""
        ws, path = self._workspace(), args.get("path")
        if name == SHELL_TOOL and ws is not None:
            asked, previous = self._rec.asked(), self._rec.previous_command()
            gone = await trio.to_thread.run_sync(command_refused, ws, args.get("command"), asked, previous)
            return None if gone is None else guards.Refusal(gone, bars=False)
        if name not in steps.CHANGE_TOOLS or ws is None or not isinstance(path, str):
            return None
        created = guards.created_files((i.tool, i.state, i.args, i.diff) for i in self._t.items if i.kind == "tool")
        exists = await trio.to_thread.run_sync(exists_in, ws, path)
        over = guards.replace_refused(name, path, exists, created)
        if over is not None:
            return guards.Refusal(over, bars=True)
        odd = guards.odd_name_refused(name, path, exists, self._rec.asked())
        if odd is not None:
            return guards.Refusal(odd, bars=False)
        echo = guards.echo_refused(name, args, self._rec.ours()) or guards.name_refused(name, args, self._rec.asked())
        if echo is None:
            asked = self._rec.asked()
            why = await trio.to_thread.run_sync(lambda: edit_refused(ws, path, name, args, asked))
            return None if why is None else guards.Refusal(why, bars=False)
        # Its next write may be the file's text; a second such write in the run bars the
        # tool for a round (refused, SmolLM2 wrote the note again, longer each time).
        self._echoes += 1
        return guards.Refusal(echo, bars=self._echoes > 1)

    async def _edit_shape(self, *, found_lines: bool = False, avoid: Sequence[tuple[str, Any]] = ()
                          ) -> dict[str, Any] | None:
        """Its edit_file this round (steps.edit_shape): the files the person's latest
        message names, then those this run's latest search found, then the latest it
        read, as they are now."""
        ws = self._workspace()
        if ws is None:
            return None
        asked, limit, searched = self._rec.asked(), steps.EDIT_FILE_BYTES, self._rec.searched()

        def read() -> list[tuple[str, str]]:
            named = steps.named_files(asked, lambda rel: exists_in(ws, rel))
            wanted = list(dict.fromkeys(named + searched + self._rec.seen_files()))[:steps.EDIT_FILES]
            found = ((rel, read_workspace_text(ws, rel, limit + 1)) for rel in wanted)
            return [(rel, text) for rel, text in found if text is not None and len(text) <= limit]

        files, only = await trio.to_thread.run_sync(read), self._rec.searched_lines() if found_lines else None
        shape = steps.edit_shape(files, removing=request_forms.removes(asked), only=only, avoided=avoided_edits(avoid))
        values = steps.target_values(asked)  # the values to set, written by the edit (set_values)
        held = set_values.hold_values(shape, dict(files), values, set_values.request_words(asked, values),
                                      set_values.swaps(asked, values), set_values.comment_asked(asked))
        return docstrings.hold(held, dict(files)) if docstrings.asked(asked) else held

