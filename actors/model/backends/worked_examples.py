"""Worked examples for a small model in the generic format: short exchanges, each a
request, the call that does it, its result and the answer, put between the system
message and the conversation.

A model of a few hundred million parameters does not follow a description of a
format as well as it copies one it has seen done. Without them SmolLM2-135M copied the
descriptions' own words into its calls (`exec_shell_command {"command":
"get_info"}`, a grep for the description's example pattern) and rarely answered after
a call. The examples show one shape each (read and answer, write, edit, run, a file
moved, helper, search) on neutral material, an astronomy club's files, that no job of a person's
workspace is meant to resemble: the model is to copy their grammar, not their words.
Each is shown only when its tools are offered; their order is the same for a whole
conversation, so they stay in the prompt's cache.

The example nearest the request comes last (a small model follows it most), and the
first round of a led run calls the tool it begins with (small/leader.py): nearest by
the request's kind (`request_kind`: a question about a named file or about the code,
a new file, a change, a command, a helper) and then by the content words it shares.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

import attrs

Call = tuple[str, dict[str, Any], str]


@attrs.frozen
class Example:
    """One worked example: its `kind` (request_kind's), the request, its calls as
    (tool, arguments, result) and the answer, which quotes what the tools said."""

    kind: str
    asked: str
    calls: tuple[Call, ...]
    answer: str


EXAMPLES: tuple[Example, ...] = (
    Example("read", "What aperture does telescopes.csv give the Dobsonian?",
            (("read_file", {"path": "telescopes.csv"},
              "1→name,aperture_mm\n2→Dobsonian,254\n3→Refractor,80\n"),),
            "telescopes.csv has Dobsonian,254 (aperture_mm): 254."),
    Example("new", "Start observing/tonight.md saying Clear skies",
            (("write_file", {"path": "observing/tonight.md", "content": "Clear skies\n"},
              "Created observing/tonight.md: 1 lines, 12 bytes."),),
            "observing/tonight.md holds: Clear skies"),
    Example("change", "Swap Vega for Deneb as the target in plan.txt",
            (("edit_file", {"path": "plan.txt", "edits": [{"old_text": "target: Vega", "new_text": "target: Deneb"}]},
              "Edited plan.txt."),),
            "Edited plan.txt: target: Deneb."),
    Example("run", "Execute moonphase.py and tell me its output",
            (("exec_shell_command", {"command": "python3 moonphase.py"}, "waxing gibbous\n\n[exit code: 0]"),),
            "Output: waxing gibbous"),
    Example("files", "Move observing/jan.md into archive/",
            (("exec_shell_command", {"command": "mv observing/jan.md archive/"}, "\n[exit code: 0]"),),
            "Moved: mv observing/jan.md archive/ exited 0."),
    Example("helper", "Ask a helper to look up which script draws the sky chart.",
            (("task", {"description": "Look up the sky chart", "prompt": "Which script draws the sky chart?"},
              "skychart.py draws it (line 3)."),),
            "The helper found: skychart.py draws it."),
    Example("search", "Where does the code compute altitude?",
            (("grep_search", {"pattern": "altitude"},
              "sky/show.py:4:print(altitude(vega, 21))\nsky/position.py:12:def altitude(star, hour):\n"),),
            "sky/position.py:12:def altitude(star, hour):"),
)


# ---- what a request is ----

# Words that carry no content of their own: left out when requests are compared.
FUNCTION_WORDS = frozenset("""
a an the this that these those it its it's i me my you your we our they them their he she him her
is are was were be been being am do does did done doing have has had having will would shall should
can could may might must of in on at to for from by with without about into onto over under as and or
but nor not no so if then than too very just also only up down out off there here what which who whom
whose where when why how all any each every some such own same other more most few new please let
tell say show give get make me's s t
""".split())

# A request that begins with one of these is a question (as is one that ends with "?").
_QUESTION_START = frozenset({"what", "which", "where", "who", "whom", "whose", "why", "when", "how", "is", "are",
                             "does", "do", "did", "was", "were", "has", "have"})
# Verbs of a job done by a command: a program run, files listed.
_COMMAND_VERBS = frozenset({"run", "execute", "launch", "install", "build", "compile", "list"})
# Verbs of a job on whole files (moved, copied, deleted), a command's when a file follows them.
_FILE_VERBS = frozenset({"rename", "move", "copy", "duplicate", "backup", "delete", "remove", "mv", "cp", "rm"})
# Words between such a verb and the file it names at most.
_FILE_VERB_REACH = 4
# Programs a request may name as the start of a command.
_PROGRAMS = frozenset({"python", "python3", "node", "bash", "sh", "npm", "npx", "pytest", "make", "cargo", "go",
                       "git", "ls", "cat", "wc", "grep", "pip", "ruby", "perl", "java", "deno"})
# The Go tool's commands: `go` before one of them is the program, before any other word
# a verb of prose (`_verb_of_prose`).
_GO_COMMANDS = frozenset({"build", "run", "test", "vet", "fmt", "mod", "get", "install", "generate", "doc", "env",
                          "version", "clean", "list", "tool", "work", "fix"})
# Verbs of a job that makes a file that is not there yet.
_NEW_VERBS = frozenset({"create", "make", "write", "new", "start", "generate", "save"})
# Verbs of a request that changes a file.
_CHANGE_VERBS = frozenset({"add", "change", "replace", "set", "update", "convert", "fix", "turn", "swap", "sort",
                           "split", "merge", "append", "insert", "put", "drop", "strip", "rewrite", "edit", "bump",
                           "tidy", "clean", "clear", "format", "comment", "uncomment"})
# Words that ask for a helper.
_HELPER_WORDS = frozenset({"helper", "subagent", "sub-agent", "agent"})
# A file's name in a request: a name with an extension, maybe under folders.
FILE_IN_TEXT = re.compile(r"(?<![\w/.@:-])(?:\./)?(?:[\w-]+/)*[\w-]+\.[A-Za-z][A-Za-z0-9]{0,7}(?![\w/-]|\.\w)")
_WORD = re.compile(r"[a-z0-9_#'-]+")
# Words before the request itself ("can you fix it", "please run").
POLITE = re.compile(r"^\s*(?:(?:can|could|would|will) (?:you|u)\s+|please\s+|do you know\s+|tell me\s+)+",
                    re.IGNORECASE)


def names_a_file(text: str) -> bool:
    return FILE_IN_TEXT.search(text) is not None


def content_words(text: str) -> set[str]:
    """The words of `text` that carry its content, by their first five letters
    (`defines` is `defined`): no function word, no file's extension, no digits alone."""
    bare = FILE_IN_TEXT.sub(
        lambda m: " " + re.sub(r"\.[A-Za-z][A-Za-z0-9]{0,7}$", "", m.group(0)).replace("/", " "), text)
    words = (w.strip("'-") for w in _WORD.findall(bare.lower()))
    return {w[:5] for w in words if w and w not in FUNCTION_WORDS and not w.isdigit()}


def request_kind(text: str) -> str:
    """What a request asks, by its form: a question about a named file ("read") or
    about the code ("search"); a job for a helper ("helper"), for a command (a program
    run or files listed, "run"; a file moved, copied or deleted, "files": the verb
    followed by a file's name), for a file not there yet ("new"),
    or a change of a file ("change")."""
    text = POLITE.sub("", text)
    words = [w.strip("'-") for w in _WORD.findall(text.lower())]
    first = words[0].split("'")[0] if words else ""  # "where's", "what's": a question's word
    if any(w in _HELPER_WORDS for w in words):
        return "helper"
    # "could you rename them?": a request for a change put as a question, its verb first;
    # or the problem told first, then asked so ("… comes out wrong. can you sort it out?").
    asks = text.rstrip().endswith(("?", "\uff1f"))
    tail_first = _first_word(POLITE.sub("", last_sentence(text)))
    if asks and not _verb_first(first) and _verb_first(tail_first):
        first = tail_first  # the verb asked for decides
    question = asks and not _verb_first(first) or first in _QUESTION_START
    if question:
        return "read" if names_a_file(text) else "search"
    programs = [w for n, w in enumerate(words[:3]) if w in _PROGRAMS and not _verb_of_prose(w, words[n + 1:])]
    if first in _COMMAND_VERBS or programs:
        return "run"
    if file_verbs(text):
        return "files"
    if first in _NEW_VERBS:
        return "new"
    return "change"


_SENTENCE_END = re.compile(r"(?<=[.!?\uff1f])\s+")


def last_sentence(text: str) -> str:
    """The request's last sentence: the one its question mark belongs to."""
    parts = [p for p in _SENTENCE_END.split(text.strip()) if p.strip()]
    return parts[-1] if parts else ""


def _first_word(text: str) -> str:
    words = _WORD.findall(text.lower())
    return words[0].strip("'-").split("'")[0] if words else ""


def _verb_first(word: str) -> bool:
    return word in _COMMAND_VERBS | _FILE_VERBS | _NEW_VERBS | _CHANGE_VERBS


def _verb_of_prose(word: str, after: list[str]) -> bool:
    """Whether a program's name is a verb of the request's prose: `make` before a
    function word ("make a copy of …", "make it shorter"), not `make test`; `go` before
    any word but one of the Go tool's commands ("go through the parser", "go over it"),
    not `go test`."""
    if word == "go":
        return bool(after) and after[0] not in _GO_COMMANDS
    return word in _NEW_VERBS and bool(after) and after[0] in FUNCTION_WORDS


# What a verb of files may act on: a file's name, a kind of file by its extension
# (`.bak`, `*.log`), or files, folders by that word.
_FILES_OBJECT = re.compile(
    r"(?<![\w/-])\*?\.[A-Za-z][A-Za-z0-9]{0,7}\b|\b(?:files?|folders?|director(?:y|ies)|dirs?)\b", re.IGNORECASE)
# Words that stand for files the request has named ("rename them", after "the .text files").
_PRONOUNS = frozenset({"them", "it", "those", "these", "all", "both", "each"})


def file_verbs(text: str) -> list[str]:
    """The verbs of files (_FILE_VERBS) the request writes before what they act on, in
    its order: a file, files of a kind, files or folders by that word, within
    _FILE_VERB_REACH words after the verb, or a pronoun for files the request names so
    ("the .text files …, rename them"); "remove the third line of a.txt" has none (a
    line is what goes)."""
    out = []
    for m in re.finditer(rf"\b(?:{'|'.join(sorted(_FILE_VERBS))})\b", text, re.IGNORECASE):
        reach = " ".join(text[m.end():].split()[:_FILE_VERB_REACH])
        first = next(iter(_WORD.findall(reach.lower())), "")
        if names_a_file(reach) or _FILES_OBJECT.search(reach) or (
                first in _PRONOUNS and _FILES_OBJECT.search(text) is not None):
            out.append(m.group(0).lower())
    return list(dict.fromkeys(out))


def shown(tool_names: set[str]) -> list[Example]:
    """The examples whose tools are all among `tool_names`."""
    return [e for e in EXAMPLES if all(tool in tool_names for tool, _, _ in e.calls)]


def names_tool(request: str, tool: str) -> bool:
    """Whether `request` asks for `tool` by name (`grep_search`, `the task tool`)."""
    t = re.escape(tool)
    return re.search(rf"\b{t}\s+tool\b" + (rf"|\b{t}\b" if "_" in tool else ""), request, re.IGNORECASE) is not None


def by_likeness(examples: Iterable[Example], request: str) -> list[Example]:
    """`examples` ordered so that the one nearest `request` is last: one whose tool the
    request names, then of its kind, then sharing most content words with it; ties
    keep the examples' own order."""
    kind, wanted = request_kind(request), content_words(request)
    listed = list(examples)

    def likeness(pair: tuple[int, Example]) -> tuple[bool, bool, float, int]:
        i, e = pair
        words = content_words(e.asked)
        return (names_tool(request, e.calls[0][0]), e.kind == kind, len(words & wanted) / (len(words | wanted) or 1),
                -i)

    return [e for _, e in sorted(enumerate(listed), key=likeness)]


def nearest(tool_names: set[str], request: str) -> Example | None:
    """The shown example nearest `request` (None when none is shown)."""
    ordered = by_likeness(shown(tool_names), request)
    return ordered[-1] if ordered else None


def example_messages(tool_names: set[str], request: str = "") -> list[dict[str, Any]]:
    """The examples whose tools are all among `tool_names`, as template messages of
    the generic format (calls and a reply written as the model writes them), the one
    nearest `request` last. `request` is the conversation's first, so that the order
    holds for all its messages (and the prompt's cache with it)."""
    out: list[dict[str, Any]] = []
    for e in by_likeness(shown(tool_names), request):
        out.append({"role": "user", "content": e.asked})
        for tool, args, result in e.calls:
            call = {"tool_calls": [{"name": tool, "arguments": args}]}
            out.append({"role": "assistant", "content": json.dumps(call, ensure_ascii=False)})
            out.append({"role": "tool", "content": result})
        out.append({"role": "assistant", "content": json.dumps({"response": e.answer}, ensure_ascii=False)})
    return out


# ---- the examples' own values ----


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# Every argument value of the examples' calls (a path, a command, a pattern, an edit's texts).
EXAMPLE_VALUES: tuple[str, ...] = tuple(dict.fromkeys(
    s for e in EXAMPLES for _, args, _ in e.calls for s in _strings(args)))


def _said(messages: Iterable[dict[str, Any]]) -> str:
    return " ".join(str(m.get("content") or "") for m in messages if m.get("role") != "assistant").lower()


def example_values(messages: tuple[dict[str, Any], ...] | list[dict[str, Any]]) -> tuple[str, ...]:
    """The examples' argument values that the conversation (`messages`, without the
    examples) has nowhere but in the model's own words: those its calls may not be
    (string_exclusion.with_banned bans them as whole values, not as words in a string)."""
    said = _said(messages)
    return tuple(v for v in EXAMPLE_VALUES if v.lower() not in said)


# The examples' own words that an answer of the model may not repeat unless the
# conversation has them: their files' names and the values their tools showed.
EXAMPLE_MARKS: tuple[str, ...] = tuple(dict.fromkeys(
    [m.group(0) for e in EXAMPLES for m in FILE_IN_TEXT.finditer(" ".join([e.asked, e.answer]))]
    + ["observing/", "archive/", "sky/", "Dobsonian", "Deneb", "Vega", "waxing gibbous", "Clear skies", "altitude"]))


def example_words_in(answer: str, said: str) -> str | None:
    """The first of the examples' own words (EXAMPLE_MARKS) that `answer` repeats and
    `said` (what the person and the tools said) does not have; None when it has none."""
    low, heard = answer.lower(), said.lower()
    return next((w for w in EXAMPLE_MARKS if w.lower() in low and w.lower() not in heard), None)
