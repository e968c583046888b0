"""How a run leads a small local model (under small/leader.SMALL_MODEL_PARAMS; SmolLM2-135M,
the bundled one) through a small job.

What such a model did in the evaluation (ops/eval) without it, and what it is given
instead:

- It filled optional arguments with values it had no use for (`start_line:
  1234567890`, `timeout: 0`) and varied them to make a call it had made look new. It
  is told of and held to each tool's required arguments only, and `include`
  (`small_parameters`).
- It began a `todo_write` call in the first round of most jobs and looped inside it.
  It is offered none of the run's own tools that only organise work (the todo list,
  questions, starting plan mode) and no skills (`small_specs`); the helpers stay, and
  a phase's own (while planning the todo list and exit_plan_mode; with a goal,
  update_goal).
- Asked to change one line, it wrote the whole file over with `10000`. Its write_file
  may not replace a file of the workspace that the conversation did not write
  (`replace_refused`), and its edit_file names only the files the request names and
  those it read lately, each old_text one of their lines (`edit_shape`,
  TurnInput.shapes): an edit that cannot miss.
- It answered from nothing: a file that is not there ("greet is defined in
  greet.py"), a change it had not made ("PORT is now 9090" after a read). Such an
  answer is sent back once, with why (`answer_fault`); after a change it only
  claimed, the next round is a call of a tool that changes files (`CHANGE_TOOLS`:
  told to make the change, it read app.py and lib.py instead, round after round).
- After a change that ran (a write, an edit, a command that exited 0) it went on
  calling tools until the round cap. The round after a change is the answer
  (`next_step`: `tool_choice: "none"`, which the generic format's grammar makes a
  reply, the tools still described so the prompt's cache holds). A failed call leaves
  the next round free, the same call ruled out (ledger.Ledger.avoided).

A round after reads alone is left free: made to change something instead of reading
(tried), the model wrote files named after its tools and ran `get_info` as a command.
A larger model, or a provider's, is not led: its rounds are its own.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from typing import Literal

import attrs

from actors import notices
from actors.model.backends import generic_grammar
from actors.model.turns import ToolSpec
from actors.record import cards
from actors.runs.agent.run_tools import goals, helpers, plans

Step = Literal["any", "answer", "change"]


# Rounds a claimed change's step ("change") lasts at most while no change runs.
CHANGE_ROUNDS = 3


def next_step(calls: Iterable[tuple[str, bool]], *, changing: bool = False) -> Step:
    """The step after a round, from its calls as (state, whether it only read): the
    answer after a change that ran, when no call failed; after a round that had to
    change a file (`changing`) and did not, another such round (the call was refused,
    or cut while the model wrote it); else a free round."""
    seen = list(calls)
    if seen and all(state == "done" for state, _ in seen) and not all(read for _, read in seen):
        return "answer"
    if changing and not any(state == "done" and not read for state, read in seen):
        return "change"
    return "any"


def small_specs(specs: tuple[ToolSpec, ...], *, planning: bool) -> tuple[ToolSpec, ...]:
    """The run's own tools a small model is offered: the helpers (a way of doing the
    work, which a person may ask for by name) and a phase's own (the goal's update;
    while planning the todo list, questions and the plan's exit), not the todo list,
    questions or plan mode otherwise."""
    kept = {goals.UPDATE_GOAL, helpers.TASK, helpers.SEND}
    if planning:
        kept |= {cards.EXIT_PLAN} | {s.name for s in specs if s.name not in {plans.ENTER}}
    # The task without `background`: get_task_output, wait_tasks and kill_task are not
    # offered to a small model (not measured to help it), so a background helper would be lost to it.
    return tuple(helpers.TASK_SPEC if s.name == helpers.TASK else s for s in specs if s.name in kept)


# edit_file for a small model: the files it read lately, each old_text one of their lines.
EDIT_TOOL = "edit_file"
WRITE_TOOL = "write_file"
EDIT_FILES = 2  # the latest files read (or written) that edit_file may name
EDIT_FILE_BYTES = 64 * 1024  # a larger file is not offered: its lines would make a huge grammar
EDIT_LINES = 200  # lines of a file offered as old_text at most
EDIT_LINE_CHARS = 200
# One edit a call: two edits of one call could name the same line (SmolLM2 did, sampling on
# another CPU), which edit_file refuses as overlapping and a small model cannot merge; a
# change of several lines is several calls.
EDITS_IN_A_CALL = 1
# The tools whose done call shows the model a file's content or writes it.
SEEN_BY = ("read_file", WRITE_TOOL, EDIT_TOOL)
WRITTEN_BY = (WRITE_TOOL, EDIT_TOOL)


# The tools a round after a claimed change may call (step "change").
CHANGE_TOOLS = (EDIT_TOOL, WRITE_TOOL)


def named_files(text: str, exists: Callable[[str], bool]) -> list[str]:
    """The files of the workspace that `text` (the person's request) names, in its order."""
    out: list[str] = []
    for m in _PATH.finditer(text):
        path = posixpath.normpath(m.group(1))
        if path not in out and exists(path):
            out.append(path)
    return out


def seen_files(items: Iterable[tuple[str | None, str | None, object]], by: tuple[str, ...] = SEEN_BY) -> list[str]:
    """The files a conversation's done calls of `by` read or wrote (`items`: each tool
    card's tool, state and arguments), the latest first, each once."""
    out: list[str] = []
    for tool, state, args in items:
        path = args.get("path") if isinstance(args, dict) else None
        if tool in by and state == "done" and isinstance(path, str) and path:
            path = posixpath.normpath(path)
            if path not in out:
                out.append(path)
    return out


def edit_shape(files: Iterable[tuple[str, str]]) -> dict[str, object] | None:
    """edit_file's parameters for a small model (TurnInput.shapes): the path one of
    `files` (path, text), each old_text one of that file's lines that occurs once in
    it (as edit_file requires; a blank line or a long one is not offered). None when
    no file has such a line: edit_file is then left out, to be offered once the model
    has read the file it means to change."""
    branches: list[dict[str, object]] = []
    for path, text in files:
        lines = [line for line in text.splitlines() if line.strip() and len(line) <= EDIT_LINE_CHARS]
        unique = [line for line in dict.fromkeys(lines) if text.count(line) == 1][:EDIT_LINES]
        if not unique:
            continue
        # new_text is none of the lines (an edit that changes nothing was refused, and
        # SmolLM2 made it again with another line), where the grammar can say so.
        new_text = generic_grammar.string_without({"type": "string"}, values=tuple(unique)) or {"type": "string"}
        edit = {"type": "object", "properties": {"old_text": {"enum": unique}, "new_text": new_text},
                "required": ["old_text", "new_text"]}
        branches.append({
            "type": "object",
            "properties": {"path": {"const": path},
                           "edits": {"type": "array", "items": edit, "minItems": 1, "maxItems": EDITS_IN_A_CALL}},
            "required": ["path", "edits"],
        })
    if not branches:
        return None
    return branches[0] if len(branches) == 1 else {"oneOf": branches}


def replace_refused(tool: str, path: object, exists: bool, written: Iterable[str]) -> str | None:
    """Why a small model's write_file may not replace `path`: it is a file of the
    workspace that this conversation did not write. Asked to change one line,
    SmolLM2 wrote config.py over with `10000`, and after reading it with `ready` (a
    word of the worked examples); its edit_file can only replace a line that is
    there. None when the write may go on (a new file, or one it wrote)."""
    if tool != WRITE_TOOL or not isinstance(path, str) or not exists or posixpath.normpath(path) in set(written):
        return None
    return notices.WRITE_OVER_REFUSED.format(path=path)


# The optional arguments a small model is offered beside a tool's required ones.
SMALL_OPTIONAL = frozenset({"include"})


def small_parameters(spec: ToolSpec) -> ToolSpec:
    """`spec` with only its required arguments and those of SMALL_OPTIONAL, as a small
    model is told of it and held to. Offered them all, SmolLM2 filled the optional
    ones with values it had no use for (`start_line: 1234567890`, `timeout: 0`,
    `max_output_size: 10000000`), read past a file's end round after round, and
    varied them to make a call it had made look new."""
    props = spec.parameters.get("properties")
    if not isinstance(props, dict):
        return spec
    required = spec.parameters.get("required") or []
    kept = {name: prop for name, prop in props.items() if name in required or name in SMALL_OPTIONAL}
    if len(kept) == len(props):
        return spec
    return attrs.evolve(spec, parameters={**spec.parameters, "properties": kept})


# ---- the answer checked against what the run did ----

# A path the answer names: a name with an extension, maybe under folders (`lib.py`,
# `src/app.ts`, `./lib.py`); the stem has two characters at least (`e.g.` is not one).
_PATH = re.compile(r"(?<![\w/.@:-])((?:\./)?(?:[\w-]+/)*[\w-]{2,}"
                   r"\.(?!(?:com|org|net|io|dev)\b)[A-Za-z][A-Za-z0-9]{0,7})(?![\w/-])")
# An answer that says it changed something.
_CLAIMS_CHANGE = re.compile(
    r"\b(?:is now|are now|now (?:says|holds|contains|reads)|(?:has|have) been (?:changed|updated|set|created|"
    r"written|renamed|deleted|removed|added|replaced|fixed|edited)|I (?:have |'ve )?(?:created|changed|updated|"
    r"edited|wrote|set|renamed|deleted|removed|added|replaced|fixed))\b",
    re.IGNORECASE,
)
# Answers a run checks at most before it lets one stand.
ANSWER_CHECKS = 1


@attrs.frozen
class Fault:
    """What an answer says that the run's record contradicts: `file` a file it names
    that the workspace does not have, or else `claim` the words in which it claims a
    change when none ran."""

    file: str | None = None
    claim: str | None = None


# Where a sentence ends (a dot in `config.py` does not).
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n")
# How much of a claimed change the person is shown (`could_not`).
CLAIM_CHARS = 80


def find_fault(text: str, *, exists: Callable[[str], bool], changed: bool, asked: str = "") -> Fault | None:
    """What a small model's answer says that the run's record contradicts, None when
    nothing does. Two kinds, both from the evaluation: a file the workspace does not
    have (asked which file defines greet, SmolLM2 searched for the example's `def
    total`, found nothing and answered "greet.py"), and a change when none ran (asked
    to change PORT, it read config.py and answered "PORT is now 8080 and is set to
    9090"). A change is not looked for in the answer to a question (`asked`, the
    request, ends with a question mark): asked which file defines greet, SmolLM2
    answered "This function has been added to the lib.py module", right but for its
    verb, and sent back to make the change it claimed, wrote a file of nonsense."""
    missing = [m.group(1) for m in _PATH.finditer(text) if not exists(posixpath.normpath(m.group(1)))]
    if missing:
        return Fault(file=missing[0])
    found = None if changed or asked.rstrip().endswith(("?", "？")) else _CLAIMS_CHANGE.search(text)
    if found is None:
        return None
    # The claim's sentence, as the person is shown it.
    start = max((m.end() for m in _SENTENCE_END.finditer(text, 0, found.start())), default=0)
    end = _SENTENCE_END.search(text, found.end())
    claim = " ".join(text[start:end.start() if end else len(text)].split())
    return Fault(claim=claim if len(claim) <= CLAIM_CHARS else claim[:CLAIM_CHARS - 1] + "…")


def answer_fault(text: str, *, exists: Callable[[str], bool], changed: bool, asked: str = "") -> str | None:
    """What the model is told of its answer's fault (`find_fault`), a notice it reads so
    it can look again; None when nothing is at fault."""
    fault = find_fault(text, exists=exists, changed=changed, asked=asked)
    if fault is None:
        return None
    if fault.file is not None:
        return (f"Your answer names {fault.file}, which is not a file of this workspace. Look again with the "
                "tools (search the text, or read the file that has it), then answer from what they show.")
    return CLAIMED_CHANGE


def fault_for_person(told: str) -> str:
    """The person's words beside `told`, what `answer_fault` told the model."""
    if told == CLAIMED_CHANGE:
        return notices.ANSWER_CLAIMED_CHANGE
    named = told.removeprefix("Your answer names ").split(", which is not a file", 1)[0]
    return notices.ANSWER_NAMED_MISSING.format(file=named)


CLAIMED_CHANGE = ("Your answer says something changed, but no change was made in this run. Make the change with a "
                  "tool (edit_file changes a line of a file), then answer.")


def could_not(fault: Fault) -> str:
    """What the person reads instead of an answer still at fault once it was sent back:
    that the model could not do it, and what to try."""
    if fault.file is not None:
        return (f"The model could not do this: it named {fault.file}, which is not a file of this workspace. "
                "Try a larger model (the models page) or say exactly which file to look in.")
    return (f"The model could not do this: it said it changed something (\u201c{fault.claim}\u201d) but no file "
            "changed. Try a larger model (the models page) or say exactly which file to change.")
