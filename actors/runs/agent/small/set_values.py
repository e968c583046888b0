"""A small model's edit held to write the value the request asks to be set.

Asked to "set NAME to 'v'" (steps.target_values), SmolLM2 replaced the right line
with words of its own (another name, a number nobody asked for, a file's name), each
refused after the fact for holding none of the values (guards.value_missing_refused),
and then answered with the refusal's words; held only to write a value somewhere in
new_text, it wrote two hundred tokens of anything around it. Where the request gives
values to set that a file does not hold yet, and lines of the file that name a word of
the request set a value (`NAME = value`, `name: value`, the value quoted or not),
edit_file's grammar (steps.edit_shape's, one branch a file) now offers those lines as
old_text, each with its new_text one of the line with its value replaced by a value
still missing: which line and which value stay the model's choice. A job of several
values takes several changes, each offered what is still missing on a line that holds
none of the values yet. The same for a word the request asks to put in place of
another (`swaps`: "says A instead of B", "replace 'A' with 'B'", the two quoted or alike,
as a misspelt word and the right one): the lines that hold the word there are offered,
each with the wanted word put for it. Elsewhere (no value to set or word to put, no
such line, a removal) the edit is left as steps.edit_shape gives it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping
from typing import Any

from actors.model.backends.worked_examples import FUNCTION_WORDS
from actors.runs.agent.small import docstrings

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{1,}")
# A line that sets a value: what comes before it (a name, or a key in quotes as JSON
# writes one, `=` or `:`, blanks), the value (quoted, or a run of no blank, comma or
# semicolon), and what follows (a comma, a semicolon, a comment).
_SETS = re.compile(r"""^(\s*(?:[\w.$-]+|"[\w.$-]+"|'[\w.$-]+')\s*[:=]\s*)"""
                   r"""(?:(['"])([^'"]*)\2|([^\s,;'"#]+))(\s*[,;]?\s*(?:(?:#|//).*)?)$""")


def request_words(asked: str, values: Collection[str]) -> frozenset[str]:
    """The words the request writes outside its values, lower case, no function word
    (`set RED to 'x'`: set, red), each a name or a part of one (`max_rows`: max, rows)."""
    for value in values:
        asked = asked.replace(value, " ")
    return frozenset(p for w in _WORD.findall(asked) for p in name_parts(w) if p not in FUNCTION_WORDS)


# Where a name of code parts into words: an underscore, or a capital after a small letter.
_PARTS = re.compile(r"_+|(?<=[a-z0-9])(?=[A-Z])")


def name_parts(name: str) -> set[str]:
    """The words a name is written of, lower case, with the name itself
    (`ROW_LIMIT_KB`: row, limit, kb; `maxRows`: max, rows)."""
    return {name.lower()} | {p.lower() for p in _PARTS.split(name) if p}


def named(line: str, words: frozenset[str]) -> int:
    """How many of `words` (request_words) the names of `line` write: "the row limit"
    names ROW_LIMIT_KB twice, PAGE_LIMIT_KB once."""
    return len(words & {p for name in _WORD.findall(line) for p in name_parts(name)})


# A request that names a word to replace and the one to write for it: `A instead of B`
# (A is there, B wanted; after `use`, `write` and their kin, the other way), `change A
# to B`, `replace A with B`, `A should be B` (needs to, has to, must), `from A to B`.
_SWAP = re.compile(r"(?:\b(use|write|put|want|prefer)\s+)?(\S+)\s+instead\s+of\s+(\S+)"
                   r"|\b(?:change|replace|correct|fix|update|bump|switch|turn)\s+"
                   r"(?:(?:every|each|all|any|the)\s+(?:of\s+the\s+)?)?(\S+)\s+(?:to|with|into|by|for)\s+(\S+)"
                   r"|(\S+)\s+(?:should|needs?\s+to|has\s+to|have\s+to|must|ought\s+to)\s+(?:be|read|say)\s+(\S+)"
                   r"|\bfrom\s+(\S+)\s+(?:to|into)\s+(\S+)", re.IGNORECASE)
_QUOTES = "'\"`"
_EDGE = _QUOTES + ".,;:!?()[]{}"
# Two words alike at least this much (difflib's ratio): one written for the other.
ALIKE = 0.6
# A number as a text writes one (a year, a version, a price, a size with its unit).
_NUMBER = re.compile(r"[-+]?\d+(?:[.,:]\d+)*[A-Za-z%]{0,3}")


def swaps(asked: str, values: Collection[str] = ()) -> list[tuple[str, str]]:
    """The pairs (there, wanted) of words the request asks to put one for the other:
    both quoted, two numbers (`2019` and `2025`, `1.2` and `1.3`: the one there may be
    anywhere on its line, not only as a setting's value), or alike (a word misspelt and
    the right one; not after `from`, where two names alike are files); not a value to
    set (set_lines does those)."""
    out: list[tuple[str, str]] = []
    for m in _SWAP.finditer(asked):
        wanted_first = m.group(1) is not None
        a, b = (g for g in m.groups()[1:] if g is not None)
        quoted = a[:1] in _QUOTES and b[:1] in _QUOTES
        a, b = a.strip(_EDGE), b.strip(_EDGE)
        if wanted_first:
            a, b = b, a
        numbers = bool(_NUMBER.fullmatch(a) and _NUMBER.fullmatch(b))
        if len(a) < 2 or len(b) < 2 or a == b or a in values or (b in values and not numbers):
            continue
        alike = m.group(8) is None and difflib.SequenceMatcher(None, a.lower(), b.lower()).ratio() >= ALIKE
        if quoted or numbers or alike:
            out.append((a, b))
    return list(dict.fromkeys(out))


def swapped(line: str, pairs: Collection[tuple[str, str]]) -> list[str]:
    """`line` with the wanted word of a pair put for the one there, wherever it holds
    that one as a whole word (no letter, digit or underscore on either side); each once."""
    out = []
    for there, wanted in pairs:
        new, n = re.subn(rf"(?<!\w){re.escape(there)}(?!\w)", wanted.replace("\\", "\\\\"), line)
        if n:
            out.append(new)
    return list(dict.fromkeys(out))


def set_lines(line: str, values: Collection[str]) -> list[str]:
    """`line` with its value replaced by each of `values` (its quotes kept), each once and
    none the line itself; none when the line sets no value."""
    m = _SETS.match(line)
    if m is None:
        return []
    before, quote, after = m.group(1), m.group(2) or "", m.group(5)
    out = [f"{before}{quote}{value}{quote}{after}" for value in values]
    return [new for new in dict.fromkeys(out) if new != line]


def hold_values(shape: dict[str, Any] | None, texts: Mapping[str, str], values: list[str],
                words: Collection[str], pairs: Collection[tuple[str, str]] = (),
                comment: str | None = None) -> dict[str, Any] | None:
    """`shape` (edit_file's, from steps.edit_shape) with each file's edit held, where it
    can be, to a line that names one of `words` and sets a value, and new_text that line
    with one of `values` its text (`texts`, by path) does not hold yet written in, or to
    a line that holds a word of one of `pairs` (`swaps`) with the other put for it, or,
    asked to `comment` lines out or in (`comment_asked`), to a line that names the most
    of `words` made a comment or made code again (`comment_lines`); a branch that cannot
    be held so as it was."""
    if shape is None or not (values or pairs or comment):
        return shape
    branches = shape.get("oneOf", [shape])
    held = [_held(b, texts, values, frozenset(words), pairs, comment) for b in branches]
    # A file with a line to set is the one to change: one without is not offered beside it
    # (asked to set a limit, the model may not edit a line that imports its name).
    held = [h for h, b in zip(held, branches, strict=True) if h is not b] or held
    return held[0] if len(held) == 1 else {**shape, "oneOf": held}


def _held(branch: dict[str, Any], texts: Mapping[str, str], values: list[str],
          words: frozenset[str], pairs: Collection[tuple[str, str]], comment: str | None) -> dict[str, Any]:
    try:
        path = branch["properties"]["path"]["const"]
        edits = branch["properties"]["edits"]
        edit = edits["items"]
        lines = edit["properties"]["old_text"]["enum"]
    except (KeyError, TypeError):
        return branch
    text = texts.get(path)
    if text is None or edit["properties"]["new_text"].get("const") == "":  # a removal writes nothing
        return branch
    missing = [v for v in values if v not in text]
    # A line that holds a value asked for is done: not offered again (with one value set,
    # SmolLM2 wrote the next over it, then the first back). Of the others, those whose
    # names write the most of the request's words.
    counts = {line: named(line, words) for line in lines if set_lines(line, missing)
              and not any(v in line for v in values)}
    most = max(counts.values(), default=0)
    naming = [line for line, n in counts.items() if n and n == most]
    commenting = comment_lines(lines, path, words, comment) if comment else {}
    offered = [(line, (set_lines(line, missing) if line in naming else []) + swapped(line, pairs)
                + ([commenting[line]] if line in commenting else [])) for line in lines]
    options = [(line, news) for line, sets in offered if (news := list(dict.fromkeys(sets)))]
    if not options:
        return branch
    items = [{"type": "object", "properties": {"old_text": {"const": line}, "new_text": {"enum": news}},
              "required": ["old_text", "new_text"]} for line, news in options]
    edit = items[0] if len(items) == 1 else {"oneOf": items}
    return {**branch, "properties": {**branch["properties"], "edits": {**edits, "items": edit}}}


# ---- lines commented out, or in ----

# A request to make lines comments ("comment out the debug prints", "comment the log
# line out") or code again ("uncomment …").
_COMMENT_OUT = re.compile(r"\bcomment(?:\s+\S+){0,5}?\s+out\b", re.IGNORECASE)
_UNCOMMENT = re.compile(r"\buncomment", re.IGNORECASE)
# A line comment's mark, by the file's extension (or its name, for those that have none).
_MARKS = {"#": (".py", ".sh", ".bash", ".zsh", ".rb", ".pl", ".r", ".yaml", ".yml", ".toml", ".cfg", ".conf",
                ".ini", ".env", "makefile", "dockerfile", ".mk", ".cmake", ".ps1", ".tf"),
          "//": (".js", ".mjs", ".cjs", ".ts", ".jsx", ".tsx", ".c", ".h", ".cc", ".cpp", ".hpp", ".java", ".go",
                 ".rs", ".swift", ".kt", ".cs", ".php", ".scala", ".dart", ".groovy"),
          "--": (".sql", ".lua", ".hs", ".elm"), ";": (".el", ".lisp", ".clj", ".asm")}
# Words of the request that say what to do, not which lines.
_COMMENT_WORDS = frozenset({"comment", "comments", "commented", "uncomment", "uncommented", "line", "lines"})


def comment_asked(asked: str) -> str | None:
    """"in" where the request asks to uncomment lines, "out" where it asks to comment
    them out, else None."""
    return "in" if _UNCOMMENT.search(asked) else "out" if _COMMENT_OUT.search(asked) else None


def comment_mark(path: str) -> str | None:
    """The mark a line comment of `path` starts with (None for a kind of file not known)."""
    low = path.lower().rsplit("/", 1)[-1]
    return next((mark for mark, ends in _MARKS.items() if low.endswith(ends) or low in ends), None)


def comment_lines(lines: Collection[str], path: str, words: frozenset[str], comment: str) -> dict[str, str]:
    """Of `lines` (a file's, offered as old_text), those to make comments (`comment`
    "out": code lines) or code again ("in": comment lines) that name the most of `words`,
    each with its new text: the mark and a blank put after its indent, or taken away.
    Asked to comment out three prints, SmolLM2 wrote a brace after another line."""
    mark = comment_mark(path)
    if mark is None:
        return {}
    wanted = words - _COMMENT_WORDS
    out: dict[str, str] = {}
    for line in lines:
        indent, rest = line[:len(line) - len(line.lstrip())], line.lstrip()
        if comment == "out" and rest and not rest.startswith(mark):
            out[line] = f"{indent}{mark} {rest}"
        elif comment == "in" and rest.startswith(mark) and rest[len(mark):].strip():
            out[line] = indent + rest[len(mark):].removeprefix(" ")
    counts = {line: named(new, wanted) for line, new in out.items()}
    most = max(counts.values(), default=0)
    return {line: new for line, new in out.items() if most and counts[line] == most}


def still_to_edit(asked: str, texts: Mapping[str, str], values: Collection[str]) -> bool:
    """Whether a file of `texts` (by path) still holds a word the request asks to put
    another in place of (`swaps`), a line it asks to comment out or in (`comment_lines`),
    or, asked for docstrings, a function without one (docstrings.missing)."""
    pairs, comment = swaps(asked, values), comment_asked(asked)
    words = request_words(asked, values)
    if docstrings.asked(asked) and any(docstrings.missing(t) for p, t in texts.items() if p.endswith(".py")):
        return True  # a function still without one
    return any(swapped(text, pairs) for text in texts.values()) or bool(comment) and any(
        comment_lines(text.splitlines(), path, words, comment or "") for path, text in texts.items())


# ---- a new file's text, where the request gives it ----

# What a request gives as a new file's text: after `containing`, `saying`, `that says`,
# `with the text` and their kin, or a heading or a title after `with a heading`, to the
# request's end.
_GIVEN_TEXT = re.compile(r"\b(?:containing|saying|(?:that|which) (?:says|reads)|with (?:the|a) (?:text|line|words?|"
                         r"contents?))\s+(?P<text>.+?)\s*$", re.IGNORECASE)
_GIVEN_HEADING = re.compile(r"\bwith (?:a|an|the) (?:heading|title|header)(?:\s+(?:of|saying|that says))?"
                            r"\s+(?P<text>.+?)\s*$", re.IGNORECASE)
# A text given so has this many words at most, and, unquoted, no `and` or `then` (the
# request goes on to something else: "with a title X and a list of Y").
GIVEN_WORDS = 8
_GOES_ON = re.compile(r"\b(?:and|then|but|also)\b|[,;]", re.IGNORECASE)
_MARKDOWN = (".md", ".markdown")


def given_content(asked: str, path: str) -> str | None:
    """The text the request gives for the new file `path` ("containing hi": hi; "with a
    heading Intro": `# Intro` in Markdown, the words elsewhere), with its line's end;
    None where it gives none, or more than a short text. SmolLM2 wrote the file's own
    name as its text ("Intro.md"), refused, and then the refusal's words."""
    for pattern, heading in ((_GIVEN_HEADING, True), (_GIVEN_TEXT, False)):
        m = pattern.search(asked)
        if m is None:
            continue
        text = m.group("text").rstrip(".!")
        quoted = len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES
        text = text[1:-1] if quoted else text
        if not text.strip() or len(text.split()) > GIVEN_WORDS or (not quoted and _GOES_ON.search(text)):
            return None
        return ("# " if heading and path.lower().endswith(_MARKDOWN) else "") + text + "\n"
    return None


def hold_content(shape: dict[str, Any] | None, asked: str, listing: str | None = None) -> dict[str, Any] | None:
    """write_file's `shape` (steps.write_shape) with its content the text the request
    gives (`given_content`), or else the `listing` of what the run found that it asks for
    (lookup.found_listing), where it names one new file; else `shape` as it was."""
    props = shape.get("properties") if shape is not None else None
    paths = props.get("path", {}).get("enum") if isinstance(props, dict) else None
    if shape is None or not isinstance(props, dict) or "content" not in props or not paths or len(paths) != 1:
        return shape
    text = given_content(asked, paths[0]) or listing
    return shape if text is None else {**shape, "properties": {**props, "content": {"enum": [text]}}}
