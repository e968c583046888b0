"""How a run leads a small local model (under small/size.SMALL_MODEL_PARAMS; SmolLM2-135M,
the bundled one) through a small job.

What such a model did in the evaluation (ops/eval) without it, and what it is given
instead:

- It filled optional arguments with values it had no use for (`start_line:
  1234567890`, `timeout: 0`) and varied them to make a call it had made look new. It
  is told of and held to each tool's required arguments only, and `include`
  (`small_parameters`).
- It began a `todo_write` call in the first round of most jobs and looped inside it.
  It is offered none of the run's own tools that only organise work (the todo list,
  questions, starting plan mode) and no skills (`own_tools.small_specs`); the helpers stay, and
  a phase's own (while planning the todo list and exit_plan_mode; with a goal,
  update_goal).
- Asked to change one line, it wrote the whole file over with `10000`. Its write_file
  may not replace a file of the workspace that the conversation did not make
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
  reply, the tools still described so the prompt's cache holds), unless the job is
  still open (`still_open`: a job of two values, or a command's output to be saved,
  takes more than one change). A failed call leaves the next round free, the same
  call ruled out (ledger.Ledger.avoided). (Made to call again after a failure, with
  nothing done yet, it varied the failed command a character at a time to the round
  cap, where it had answered that it failed: tried, and left out.)
- It answered with the worked examples' words, or named the file where a name was
  used when asked where it was defined. Such an answer is sent back too
  (`find_fault`: `copied`, `unfound`).

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

from actors.model.backends import string_exclusion
from actors.model.turns import ToolSpec
from actors.runs.agent.small import faults, quotes, set_values
from actors.runs.agent.small.echo import SENTENCE_END as _SENTENCE_END
from actors.runs.agent.small.echo import echoed, first_sentence, parrots
from actors.runs.agent.small.faults import Fault
from actors.runs.agent.small.request_forms import asks_question, asks_where, question_mark
from actors.tools.grep_search import CASE_IGNORED_HEAD

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


# The tools a round after a claimed change may call (step "change").
CHANGE_TOOLS = (EDIT_TOOL, WRITE_TOOL)


def named_files(text: str, exists: Callable[[str], bool]) -> list[str]:
    """The files of the workspace that `text` (the person's request) names, in its order."""
    return [path for path in file_names(text) if exists(path)]


# A product's name written like a file's (`Node.js`, `Vue.js`): a capitalised word and `.js`.
_PRODUCT = re.compile(r"[A-Z][a-z]+\.js")


# A whole text that is a file's name, with any dots in its stem (`a.rst.txt`).
_FILE_NAME = re.compile(r"(?:\./)?(?:[\w-]+/)*[\w-]+(?:\.[\w-]+)*\.[A-Za-z][A-Za-z0-9]{0,7}")


def file_name(text: str) -> bool:
    """Whether `text` is, whole, a file's name (`log.rst`, `src/app.ts`, `a.rst.txt`)."""
    return _FILE_NAME.fullmatch(text) is not None and not _PRODUCT.fullmatch(text)


def file_names(text: str) -> list[str]:
    """The names of files `text` gives, each once, in its order (not a product's name
    written like one, `Node.js`)."""
    out: list[str] = []
    for m in _PATH.finditer(text):
        path = posixpath.normpath(m.group(1))
        if path not in out and not _PRODUCT.fullmatch(path):
            out.append(path)
    return out


# ---- more than one change ----

# Changes a run makes at most before its answer, while the request is still open.
MAX_CHANGES = 3
# A value a request gives: a quoted text, a number of two digits or more, or a word that
# is a value in code and settings (`true`, `None`).
_VALUE = re.compile(r"'([^'\n]{1,80})'|\"([^\"\n]{1,80})\"|`([^`\n]{1,80})`|(?<![\w.#-])(\d{2,}(?:\.\d+)?)(?![\w.])"
                    r"|\b(true|false|True|False|null|None)\b")


# What comes before a value the request asks a file to take: `… to 9090`, `… = 'x'`.
_TO_VALUE = re.compile(r"(?:\bto|=)\s*$", re.IGNORECASE)


def values_given(text: str, *, to_set: bool = False) -> list[str]:
    """The values `text` gives (quoted texts, numbers), not those that name a file; with
    `to_set`, only those it asks to be set (after `to` or `=`: `target_values`)."""
    out: list[str] = []
    for m in _VALUE.finditer(text):
        value = next(g for g in m.groups() if g is not None).strip()
        if value and value not in out and not _PATH.fullmatch(value) \
                and (not to_set or _TO_VALUE.search(text[:m.start()])):
            out.append(value)
    return out


def target_values(text: str) -> list[str]:
    """The values `text` asks to be set (values_given that follow `to` or `=`: `set X to
    'v'`, `X = 8`), not a number it only refers to (`the bug on line 12`)."""
    return values_given(text, to_set=True)


def still_open(asked: str, new: Iterable[str], exists: Callable[[str], bool],
               read: Callable[[str], str | None]) -> bool:
    """Whether a job is still open after a change: a file the request (`asked`) names
    that was not there when the run began (`new`) is still missing, a value it gives is
    in none of the files it names (a word to put in place of another is no such value),
    or a line of theirs is still to edit (set_values.still_to_edit: a word to replace, a
    line to comment out). A question is never open (it is answered, not done); a file
    named to be renamed or deleted may go."""
    if question_mark(asked) or not (names := [n for n in file_names(asked) if exists(n)]):
        return any(not exists(name) for name in new) and not question_mark(asked)
    texts, to_set = {name: t for name in names if (t := read(name)) is not None}, target_values(asked)
    if any(not exists(name) for name in new) or set_values.still_to_edit(asked, texts, to_set):
        return True
    pairs = set_values.swaps(asked, to_set)
    values = [v for v in values_given(asked) if not any(v in pair for pair in pairs)]
    return any(not any(v in t for t in texts.values()) for v in values)





# The least of an answer kept before its loop: fewer words are no answer.
KEPT_WORDS = 4


def before_loop(text: str, unit: str) -> str | None:
    """What an answer cut for repeating `unit` said before the repeats began (the
    unit's first place), when that is words enough (KEPT_WORDS) to be an answer and
    holds no call's braces; None when not."""
    at = text.find(unit) if unit else -1
    kept = text[:at].rstrip(" ,;:-\n") if at > 0 else ""
    if len(kept.split()) < KEPT_WORDS or "{" in kept:
        return None
    return kept


def write_shape(parameters: dict[str, object], new: list[str]) -> dict[str, object] | None:
    """write_file's parameters with its path one of `new` (files the request names that
    are not there yet); None when its parameters have no path to hold."""
    props = parameters.get("properties")
    if not new or not isinstance(props, dict) or not isinstance(props.get("path"), dict):
        return None
    return {**parameters, "properties": {**props, "path": {"enum": list(new)}}}


# A search's result line: `path:line:text`.
_FOUND = re.compile(r"^((?:\./)?[^\s:]+\.[A-Za-z][A-Za-z0-9]{0,7}):(\d+):(.*)$", re.MULTILINE)
SEARCH_TOOL = "grep_search"
SEARCH_TOOLS = (SEARCH_TOOL,)
# Words before a name that a line defines: a function, a class, a type, a constant, a variable.
_DEFINING = (r"^\s*(?:(?:export|pub|public|private|protected|static|async|default|abstract)\s+)*"
             r"(?:def|class|function|fn|func|struct|enum|interface|type|trait|const|let|var)\s+")
_NAME = re.compile(r"[A-Za-z_$][\w$]*")


def defines(line: str, name: str, *, fold: bool = False) -> bool:
    """Whether `line` defines `name`: `def name`, `class name`, `name = …` and their kin
    (`fold`: the name's case ignored)."""
    n = re.escape(name)
    return re.match(rf"{_DEFINING}{n}(?![\w$])|^\s*(?:self\.)?{n}\s*(?::[^=\n]*)?=(?!=)", line,
                    re.IGNORECASE if fold else 0) is not None


def search_found(result: str, pattern: str = "") -> list[str]:
    """The files a search's `result` names, each once: those of the lines that define
    the name searched for (`pattern`'s last name: `def area` searches for area; its
    case ignored when the search found them so) when there are such lines (asked where
    something is, the answer is where it is defined, not where it is used), else all."""
    lines = [(path, text) for path, _, text in search_places(result)]
    names = _NAME.findall(pattern)
    fold = result.startswith(CASE_IGNORED_HEAD)  # what the search found with case ignored
    defining = [path for path, text in lines if names and defines(text, names[-1], fold=fold)]
    return list(dict.fromkeys(defining or [path for path, _ in lines]))


def search_places(result: str) -> list[tuple[str, int, str]]:
    """The lines a search's `result` shows (`path:line:text`), as (path, line, text)."""
    return [(posixpath.normpath(m.group(1)), int(m.group(2)), m.group(3)) for m in _FOUND.finditer(result)]


def search_lines(result: str) -> dict[str, list[str]]:
    """The lines a search's `result` shows, by file."""
    out: dict[str, list[str]] = {}
    for path, _, text in search_places(result):
        out.setdefault(path, []).append(text)
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


def edit_shape(files: Iterable[tuple[str, str]], *, removing: bool = False, only: dict[str, list[str]] | None = None,
               avoided: Iterable[tuple[str, str, str]] = ()) -> dict[str, object] | None:
    """edit_file's parameters for a small model (TurnInput.shapes): the path one of
    `files` (path, text), each old_text one of that file's lines that occurs once in
    it (as edit_file requires; a blank line or a long one is not offered). None when
    no file has such a line: edit_file is then left out, to be offered once the model
    has read the file it means to change. `removing` (the request asks to remove
    something: `removes`): each old_text a whole line with its line's end, new_text
    empty (asked to remove a line, SmolLM2 changed its value instead). `only`: for a
    file it has, the lines offered are those of its list that the file has (the lines a
    search found: the place of the change), when any is. `avoided` (run_record.avoided_edits): an
    edit of the run that failed is not offered again (a removal's line; another edit's
    new_text: refused, SmolLM2 wrote the same edit three times over)."""
    branches: list[dict[str, object]] = []
    gone = list(avoided)
    for path, text in files:
        lines = [line for line in text.splitlines() if line.strip() and len(line) <= EDIT_LINE_CHARS]
        unique = [line for line in dict.fromkeys(lines) if text.count(line) == 1][:EDIT_LINES]
        failed = [(old, new) for p, old, new in gone if posixpath.normpath(p) == path]
        if removing:
            unique = [line for line in unique if (line, "") not in failed and (line + "\n", "") not in failed]
        found = [line for line in unique if line in (only or {}).get(path, ())]
        unique = found or unique
        if not unique:
            continue
        new_text: dict[str, object]
        if removing:
            unique = [line + "\n" if text.count(line + "\n") == 1 else line for line in unique]
            new_text = {"const": ""}
        else:
            # new_text is none of the lines (an edit that changes nothing was refused, and
            # SmolLM2 made it again with another line), where the grammar can say so.
            not_again = tuple(dict.fromkeys(unique + [new for _, new in failed]))
            new_text = string_exclusion.string_without({"type": "string"}, values=not_again) or {"type": "string"}
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
# `src/app.ts`, `./lib.py`, `plan.txt.bak`); the stem has two characters at least (`e.g.`
# is not one).
_PATH = re.compile(r"(?<![\w/.@:-])((?:\./)?(?:[\w-]+/)*[\w-]{2,}(?:\.[\w-]+)*"
                   r"\.(?!(?:com|org|net|io|dev)\b)[A-Za-z][A-Za-z0-9]{0,7})(?![\w/-]|\.\w)")
# A path as an edit's diff names a file (`a/config.py`, `b/config.py`): the file is the rest.
_DIFF_SIDE = re.compile(r"[ab]/")
# An answer that says it changed something.
_CLAIMS_CHANGE = re.compile(
    r"\b(?:is now|are now|now (?:says|holds|contains|reads)|(?:has|have) been (?:changed|updated|set|created|"
    r"written|renamed|deleted|removed|added|replaced|fixed|edited)|I (?:have |'ve )?(?:created|changed|updated|"
    r"edited|wrote|set|renamed|deleted|removed|added|replaced|fixed)"
    # or that begins with what it did, as the files example's answer does ("Moved: …")
    r"|^\s*(?:moved|removed|deleted|renamed|copied|created|changed|updated|edited|fixed|added|replaced|sorted|"
    r"written|wrote|saved)\b(?!\s+(?:nothing|no)\b))\b",
    re.IGNORECASE,
)
# Answers a run checks at most before it lets one stand.
ANSWER_CHECKS = 1


# How much of a claimed change the person is shown (`faults.could_not`).
CLAIM_CHARS = 80
# How much of a refusal an answer repeats before it is no answer: its first sentence, this long at least.
REFUSAL_CHARS = 24


def find_fault(text: str, *, exists: Callable[[str], bool], changed: bool, asked: str = "",
               found: tuple[str, ...] | None = None, copied: Callable[[str], str | None] = lambda _: None,
               refusals: Iterable[str] = (), new: Iterable[str] = (), ours: Iterable[str] = (),
               change_asked: bool = False, printed: str = "",
               lines_of: Callable[[str], list[str] | None] = lambda _: None) -> Fault | None:
    """What a small model's answer says that the run's record contradicts, None when
    nothing does. From the evaluation: a file the workspace does not have (asked which
    file defines greet, SmolLM2 searched for the example's `def total`, found nothing
    and answered "greet.py"); a change when none ran (asked to change PORT, it read
    config.py and answered "PORT is now 8080 and is set to 9090"); after a search that
    found files (`found`, the files of the run's last call when it was a search), an
    answer naming none of them; the worked examples' own words (`copied` says which)
    or a refusal's first sentence (`refusals`, what the run's refused calls were told)
    repeated as the answer, or mostly the words of one of the daemon's notes (`ours`,
    `echoed`); a new file the request names (`new`) still not there when the answer
    comes; no file at all when asked where something is, or which
    file has it (`asks_where`); asked for a change (`change_asked`) when none ran, an
    answer with no word of its own, every one from what the run's tools printed
    (`printed`): asked to convert files' line endings, SmolLM2 searched, read one and
    answered with the search's line; asked for a .gitignore, it ran `git status` and
    answered with git's error. A change is not looked for in the answer to a question
    (`asked`, the request, ends with a question mark): asked which file defines greet,
    SmolLM2 answered "This function has been added to the lib.py module", right but
    for its verb, and sent back to make the change it claimed, wrote a file of nonsense.
    Asked for a change (not a question), when none ran, any answer that does not say why
    not (it cannot, it is so already, there is nothing to change) nor ask the person back
    is `idle`: asked to sort files into folders, SmolLM2 searched its own words and
    answered "No matches found"; asked to move prints to logging, its edits were refused
    and it answered with a helper's task."""
    missing = [m.group(1) for m in _PATH.finditer(text) if not _there(m.group(1), exists)]
    if missing:
        return Fault(file=missing[0])
    question = question_mark(asked)
    notmade = None if question else next((n for n in new if not exists(n)), None)
    if notmade is not None:
        return Fault(notmade=notmade)
    said = " ".join(text.split())
    if said and not _A_WORD.search(said):  # after a cut loop, SmolLM2 answered "{"
        return Fault(wordless=_shown(said))
    # Asked where something is, the answer is its file (judged below), not a line's words.
    misquote = None if asks_where(asked) else quotes.misquoted(text, lines_of, changed=changed)
    if misquote is not None:
        return Fault(misquote=misquote)
    repeated = copied(text) or next((r for r in (first_sentence(r) for r in refusals)
                                     if len(r) >= REFUSAL_CHARS and r in said), None) or echoed(text, ours)
    if repeated:
        return Fault(copied=repeated)
    if _HOW_MANY.search(asked) and not _NUMBER.search(text):
        return Fault(nonumber=True)
    if change_asked and not changed and parrots(text, printed):
        return Fault(parroted=_shown(" ".join(text.split())))
    named = {posixpath.normpath(m.group(1)) for m in _PATH.finditer(text)}
    if found:
        names = {posixpath.basename(f) for f in found}
        if not (named & set(found)) and not any(posixpath.basename(n) in names for n in named):
            return Fault(unfound=tuple(found[:FOUND_SHOWN]))
    if not named and asks_where(asked) and not asked.lstrip().lower().startswith(("when", "why", "how")):
        return Fault(nofile=True)
    claimed = None if changed or question_mark(asked) else _CLAIMS_CHANGE.search(text)
    if claimed is None:
        idle = change_asked and not changed and not asks_question(asked) and not _SAYS_WHY_NOT.search(text)
        return Fault(idle=_shown(said)) if idle and said else None
    # The claim's sentence, as the person is shown it.
    start = max((m.end() for m in _SENTENCE_END.finditer(text, 0, claimed.start())), default=0)
    end = _SENTENCE_END.search(text, claimed.end())
    return Fault(claim=_shown(" ".join(text[start:end.start() if end else len(text)].split())))


def _there(path: str, exists: Callable[[str], bool]) -> bool:
    """Whether the workspace has the file `path` names, as written or as an edit's diff
    names it (`a/config.py`: SmolLM2 answered with its diff's header)."""
    return exists(posixpath.normpath(path)) or bool(_DIFF_SIDE.match(path)) and exists(posixpath.normpath(path[2:]))


def _shown(text: str) -> str:
    """`text` as the person is shown it in a could-not: CLAIM_CHARS at most."""
    return text if len(text) <= CLAIM_CHARS else text[:CLAIM_CHARS - 1] + "…"



# An answer that says why nothing changed, or asks the person back: it stands.
_SAYS_WHY_NOT = re.compile(
    r"\b(?:can\s*not|can'?t|could\s*n[o']?t|unable|not\s+able|(?:do|did)\s*n[o']?t\s+know|already|"
    r"nothing\s+(?:to|needs?|needed)|no\s+need|not\s+needed|no\s+change\s+(?:is\s+)?needed)\b|\?\s*$",
    re.IGNORECASE)
# A word of an answer: two letters or more, a digit, or a letter of a script past Latin's (一 is a word).
_A_WORD = re.compile(r"[^\W\d_]{2,}|\d|[^\W\d_\u0000-\u024f]")
_HOW_MANY = re.compile(r"\bhow many\b", re.IGNORECASE)
_NUMBER = re.compile(r"\d|\b(?:no|none|zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b",
                     re.IGNORECASE)

# Files of a search an answer sent back is told of at most.
FOUND_SHOWN = 5


def answer_fault(text: str, *, exists: Callable[[str], bool], changed: bool, asked: str = "",
                 found: tuple[str, ...] | None = None, copied: Callable[[str], str | None] = lambda _: None,
                 refusals: Iterable[str] = (), new: Iterable[str] = (), ours: Iterable[str] = (),
                 change_asked: bool = False, printed: str = "",
                 lines_of: Callable[[str], list[str] | None] = lambda _: None) -> str | None:
    """What the model is told of its answer's fault (`find_fault`), a notice it reads so
    it can look again; None when nothing is at fault."""
    fault = find_fault(text, exists=exists, changed=changed, asked=asked, found=found, copied=copied,
                       refusals=refusals, new=new, ours=ours, change_asked=change_asked, printed=printed,
                       lines_of=lines_of)
    return None if fault is None else faults.told(fault)
