"""What a small model's first search looks for: a word of the person's request that
the workspace has.

Asked about code, or to change something in a file the request does not name, a
model has to find the place first. SmolLM2-135M searched for words nobody wrote (a
file's name made up from the request, the worked examples' own pattern, "is a
test.This" 25 times in the web UI) and then answered from the empty result. Its first
search is held to the request's own words that occur in the workspace's text files:
those written like a name in code (`Invoice`, `parse_date`, a quoted text) when the
request has such a word, else the rarest. Only the pattern is held: the model picks
among them, reads the result and goes on as it would.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from actors.model.backends.worked_examples import FILE_IN_TEXT, FUNCTION_WORDS
from actors.runs.agent.small import request_forms, set_values, steps
from actors.tools.globs import walk

# Files read at most, each one's size at most, and their bytes in all at most: a search
# word is found in a large workspace's first files, or not held at all (the first round
# waits for this walk, so it stays short: 8 MiB read, not 400 files of 256 KiB).
LOOKUP_FILES = 400
LOOKUP_FILE_BYTES = 256 * 1024
LOOKUP_BYTES = 8 * 1024 * 1024
# Words a first search may look for at most.
LOOKUP_WORDS = 3
# A word shorter than this is not looked for (`id`, `to`).
MIN_WORD = 3

_WORD = re.compile(r"[A-Za-z_][\w-]*[A-Za-z0-9_]|[A-Za-z_]\w")
_QUOTED = re.compile(r"'([^'\n]+)'|\"([^\"\n]+)\"|`([^`\n]+)`")
# A word written as a name in code: a capital after the first word, an underscore, a digit,
# or a capital inside it (`parseDate`).
_NAME_LIKE = re.compile(r"_|\d|^[A-Z]|[a-z][A-Z]")
# A request's own verbs of kind, never a thing to look for.
_ASKING = frozenset({"fix", "change", "update", "edit", "find", "look", "search", "defined", "define", "defines",
                     "typo", "file", "files", "code", "line", "lines", "function", "class", "method",
                     "variable", "value", "set", "called", "call", "calls", "used", "uses", "use", "instead"})


def request_words(asked: str) -> list[tuple[str, bool]]:
    """The words of `asked` a search may look for, each once in its order, with whether
    it is written like a name in code: not a function word, a verb of asking or a file's
    name, MIN_WORD letters at least, nor a value or a word the request wants written; a
    quoted word is one (a quoted text with blanks is not looked for: grep reads it as it
    is written, and the model's search may differ)."""
    out: dict[str, bool] = {}
    # What the request wants written is not there yet: not a word to look for (asked to
    # put Hello for Helo, SmolLM2 searched for Hello, and found an import of hello_app).
    values = steps.target_values(asked)
    wanted = set(values) | {b for _, b in set_values.swaps(asked, values)}
    for m in _QUOTED.finditer(asked):
        text = next(g for g in m.groups() if g is not None).strip()
        if len(text) >= MIN_WORD and re.fullmatch(r"[\w-]+", text) and text not in wanted:  # a word, as grep reads it
            out.setdefault(text, True)
    first = True
    for m in _WORD.finditer(FILE_IN_TEXT.sub(" ", asked)):
        word = m.group(0)
        low = word.lower()
        if len(word) >= MIN_WORD and low not in FUNCTION_WORDS and low not in _ASKING and word not in wanted:
            out.setdefault(word, not first and _NAME_LIKE.search(word) is not None)
        first = False
    return list(out.items())


def file_counts(ws: Path, words: Iterable[str]) -> dict[str, int]:
    """In how many of the workspace's text files each word occurs as a whole word or as
    a part of a name between underscores ("row" in ROW_LIMIT_KB), its case ignored
    (LOOKUP_FILES files of LOOKUP_FILE_BYTES at most, LOOKUP_BYTES in all, in the walk's
    order).
    Blocking: call it in a thread."""
    wanted = list(dict.fromkeys(words))
    counts = dict.fromkeys(wanted, 0)
    if not wanted:
        return counts
    patterns = {w: re.compile(rf"(?<![A-Za-z0-9-]){re.escape(w)}(?![A-Za-z0-9-])", re.IGNORECASE) for w in wanted}
    try:
        for _, text in text_files(ws):
            for w, pattern in patterns.items():
                counts[w] += pattern.search(text) is not None
    except OSError:
        return dict.fromkeys(wanted, 0)
    return counts


def text_files(ws: Path, suffix: str = "") -> Iterator[tuple[str, str]]:
    """The workspace's text files whose names end in `suffix`, as (path, text), in the
    walk's order, not hidden nor in a hidden folder: LOOKUP_FILES files of
    LOOKUP_FILE_BYTES at most, LOOKUP_BYTES in all. Blocking: call it in a thread; a
    folder that cannot be walked raises OSError."""
    read = size = 0
    for entry in walk(ws, sizes=True, prune=lambda rel: rel.rsplit("/", 1)[-1].startswith(".")):
        if not entry.is_file or entry.is_link or entry.size > LOOKUP_FILE_BYTES or not entry.path.endswith(suffix):
            continue
        if entry.path.rsplit("/", 1)[-1].startswith("."):
            continue
        try:
            data = (ws / entry.path).read_bytes()
        except OSError:
            continue
        if b"\0" in data[:4096]:
            continue  # not text
        yield entry.path, data.decode("utf-8", "replace")
        read, size = read + 1, size + len(data)
        if read >= LOOKUP_FILES or size >= LOOKUP_BYTES:
            return


def search_words(words: list[tuple[str, bool]], counts: dict[str, int]) -> list[str]:
    """The words a first search may look for: of those the workspace has (`counts`),
    the ones written like a name in code when there are any, else the rarest (in at
    most twice as many files as the rarest); LOOKUP_WORDS at most, rarest first."""
    there = [(w, named) for w, named in words if counts.get(w, 0) > 0]
    if any(named for _, named in there):
        there = [(w, named) for w, named in there if named]
    else:
        least = min((counts[w] for w, _ in there), default=0)
        there = [(w, named) for w, named in there if counts[w] <= 2 * least]
    ranked = sorted(there, key=lambda pair: counts[pair[0]])  # stable: the request's order among equals
    return [w for w, _ in ranked[:LOOKUP_WORDS]]


def search_shape(parameters: dict[str, object], words: list[str]) -> dict[str, object] | None:
    """grep_search's parameters held to a pattern of `words` (and no other argument but
    `ignore_case`, true where every word is written in small letters: a word of prose was
    counted in any case, as a name's part too, and "limit" is to find ROW_LIMIT, not only
    the word `limits` of a line that imports it); None when there is no word or no
    pattern to hold."""
    props = parameters.get("properties")
    if not words or not isinstance(props, dict) or not isinstance(props.get("pattern"), dict):
        return None
    held: dict[str, object] = {"pattern": {"enum": list(words)}}
    if all(w == w.lower() for w in words):  # grep_search's own, left out of the small model's spec
        held["ignore_case"] = {"const": True}
    return {**parameters, "properties": held, "required": list(held)}


# Kinds of file a search's `include` may name at most (more: the first, by name).
INCLUDE_KINDS = 24


def kinds_in(ws: Path) -> list[str]:
    """The globs of the kinds of file the workspace's text files are (`*.py`, `*.md`),
    sorted, INCLUDE_KINDS at most; none where it cannot be walked. Blocking: call it in
    a thread."""
    try:
        kinds = {"*" + posixpath.splitext(path)[1] for path, _ in text_files(ws) if posixpath.splitext(path)[1]}
    except OSError:
        return []
    return sorted(kinds)[:INCLUDE_KINDS]


def include_shape(parameters: dict[str, object], kinds: list[str]) -> dict[str, object] | None:
    """grep_search's parameters with its `include`, where it writes one, held to a glob of
    a kind of file the workspace has (`kinds_in`): one that names no file there can only
    find nothing, and SmolLM2 filled it with words of its own (`"bold"`, then
    `"bold_bold"`), each search finding nothing. None when it has no `include`."""
    props = parameters.get("properties")
    if not isinstance(props, dict) or not isinstance(props.get("include"), dict):
        return None
    if not kinds:
        return {**parameters, "properties": {k: v for k, v in props.items() if k != "include"}}
    return {**parameters, "properties": {**props, "include": {"enum": list(kinds)}}}


# ---- what a question's search found, read ----

READ_TOOL = "read_file"
# A question's search whose lines are in more files than this is not followed by a read.
READ_FOUND = 2
# A question about what uses a name: its answer is where the name is used, not defined.
_ASKS_USE = re.compile(r"\b(?:calls?|calling|uses?|using|imports?|importing|invokes?|references?)\b", re.IGNORECASE)


def to_read(asked: str, result: str, pattern: str) -> list[str]:
    """The files a question's search (`result`, of `pattern`) found, to be read next:
    asked what code does, SmolLM2 answered with a line of the search's result as it
    was (a function's `def` line, asked what the function raises), where the answer is
    in the lines around it. None for a question that asks where or which file
    (the search's files answer it: request_forms.asks_where) or a search whose lines are in more
    than READ_FOUND files; of the others, those where the name is defined first, or, for
    a question about what uses it ("which function calls …"), those that use it first."""
    if request_forms.asks_where(asked):
        return []
    lines = steps.search_lines(result)
    if not lines or len(lines) > READ_FOUND:
        return []
    defining = steps.search_found(result, pattern)
    defining = defining if len(defining) < len(lines) else []
    using = [path for path in lines if path not in defining]
    return list(dict.fromkeys(using + defining if _ASKS_USE.search(asked) else defining + using))


def where_found(asked: str, result: str, pattern: str) -> list[str]:
    """The files that answer a question that asks where (request_forms.asks_where), from its
    search's `result`: those it found the place in (where the name is defined, when a
    line defines it: steps.search_found), when they are one to READ_FOUND; else none.
    After such a search, SmolLM2 searched on with one more word each time, or began an
    answer that looped."""
    found = steps.search_found(result, pattern) if request_forms.asks_where(asked) else []
    return found if 0 < len(found) <= READ_FOUND else []


def answers_where(asked: str, result: str, pattern: str) -> bool:
    """Whether a where-question is answered by its search's `result` (`where_found`)."""
    return bool(where_found(asked, result, pattern))


def one_of(parameters: dict[str, object], argument: str, values: list[str]) -> dict[str, object]:
    """A tool's parameters held to its `argument` one of `values`, and no other argument
    (read_file's path: what a question's search found; file_glob_search's include: the
    globs of `kind_patterns`)."""
    return {**parameters, "properties": {argument: {"enum": list(values)}}, "required": [argument]}


# ---- files named by their kind, listed ----

GLOB_TOOL = "file_glob_search"
# Files by their kind: an extension, maybe after `*` (`.bak`, `*.log`).
KIND = re.compile(r"(?<![\w/-])\*?(\.[A-Za-z][A-Za-z0-9]{0,7})(?![\w/-])")
# A folder the request names by that word ("the data folder", "into archive/"), or
# names after it ("a folder called old", "a new directory named out").
NAMED_FOLDER = re.compile(
    r"\b(?:the\s+)?([\w.-]+)\s+(?:folder|directory|dir)\b|(?<![\w/.-])([\w.-]+(?:/[\w.-]+)*)/(?![\w.-])", re.IGNORECASE)
CALLED_FOLDER = re.compile(r"\b(?:folder|directory|dir)\s+(?:called|named)\s+([\w.-]*\w)", re.IGNORECASE)
# Words before "folder" that say which or what kind of folder, not its name ("a new
# folder named x" named no folder `new`).
_NOT_A_FOLDER = frozenset({
    "a", "an", "the", "new", "same", "other", "another", "empty", "own", "my", "your", "its", "their", "our", "this",
    "that", "one", "each", "every", "whole", "entire", "some", "any", "separate", "different", "parent", "current",
    "root", "working", "project", "second", "which", "what", "sub", "that's", "whose"})


def named_folders(asked: str) -> list[str]:
    """The folders a request names (NAMED_FOLDER), each once, in its order, normalised
    ("archive/" is archive); not a word before "folder" that says which folder
    (`_NOT_A_FOLDER`: "a sub folder"; "sub/" is a folder's name)."""
    found = sorted((m.start(), m.group(1) is not None or m.re is CALLED_FOLDER, next(g for g in m.groups() if g))
                   for m in (*NAMED_FOLDER.finditer(asked), *CALLED_FOLDER.finditer(asked)))
    names = ((posixpath.normpath(name), worded) for _, worded, name in found)  # (a path written `sub/` is one)
    return list(dict.fromkeys(n for n, worded in names if not (worded and n.lower() in _NOT_A_FOLDER)
                              and n not in (".", "..")))


def kind_patterns(asked: str) -> list[str]:
    """Globs of the files a request names by their kind, under the folder it names, if
    one ("the .py files in parts/": `parts/**/*.py`; "the .md files": `*.md`, at any
    depth)."""
    folders = named_folders(asked)
    under = folders[0] + "/**/" if len(folders) == 1 else ""
    return [f"{under}*{kind}" for kind in dict.fromkeys(KIND.findall(asked))]


# A request for every (all, each) one of something, put in a new file: "put every TODO into
# a new todo.md, with the file and line of each". Having found them, SmolLM2 looped
# writing the file, then wrote it empty.
_EVERY = re.compile(r"\b(?:every|all|each)\b", re.IGNORECASE)
_TOTAL = re.compile(r"^Total matches: (\d+)$", re.MULTILINE)
# Lines such a list holds at most (each is written token by token, within a round's tokens).
LISTED_LINES = 40


def found_listing(asked: str, found: str) -> str | None:
    """What a search found (`found`, grep_search's result), a line each as `file:line:
    text`, where the request asks for every (all, each) one of something and the result
    shows each match (none cut off), LISTED_LINES at most; else None."""
    if not _EVERY.search(asked):
        return None
    lines = [f"{path}:{n}: {text.strip()}" for path, n, text in steps.search_places(found)]
    total = _TOTAL.search(found)
    if not lines or len(lines) > LISTED_LINES or total is None or int(total.group(1)) != len(lines):
        return None
    return "\n".join(lines) + "\n"
