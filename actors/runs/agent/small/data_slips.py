"""The whole command that mends a JSON file that does not parse, where a person reports
something wrong and says JSON (its file, its decode error): found by Python's parser in
the workspace's files, not in the request's words, so it holds for any wording.

The slips are the ones a hand makes in a file that reads as JSON but is not, each mended
on its own line so that the file keeps its layout and everything else it holds:

- a comma after the last item of an object or a list (`"b": 2,` before `}`): taken out;
- a comma left out between two items (`"a": 1` followed by `"b": 2`): put in;
- text in single quotes (`'north'`): double quotes;
- a key not in quotes (`port: 80`): in quotes;
- Python's `True`, `False`, `None`: `true`, `false`, `null`;
- a `//` comment: taken out.

A file is mended only where these make the whole of it parse; none where any file said
broken cannot be mended so, or more than a few are broken:

    sed -i -e '5c\\  "retries": 3' conf/site.json && echo 'Mended conf/site.json: …'

(what it echoes is where the answer begins; a line the mend leaves empty is deleted).
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from collections.abc import Callable, Iterable

from actors.runs.agent.small.slips import reports

# A request that speaks of JSON: a file's kind, its decode error.
_SAYS_JSON = re.compile(r"json", re.IGNORECASE)
# Broken JSON files mended by one command at most.
DATA_FILES = 3
# Text in double quotes (its escapes kept), and what lies between.
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_SINGLE = re.compile(r"'((?:[^'\"\\\n]|\\.)*)'")
_BARE_KEY = re.compile(r"(^\s*|[{,]\s*)([A-Za-z_][\w-]*)(\s*:)")
_PYTHON = {"True": "true", "False": "false", "None": "null"}
_PYTHON_WORD = re.compile(r"\b(?:True|False|None)\b")
_INNER_TRAILING = re.compile(r",(\s*[}\]])")
# How a line ends where a value does, and how one begins where an item does.
_VALUE_END = re.compile(r'(?:"|\d|\}|\]|\btrue|\bfalse|\bnull)\s*$')
_ITEM_START = re.compile(r'\s*["{\[\d-]|\s*(?:true|false|null)\b')


def data_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]]) -> dict[str, list[str]]:
    """The whole command mending the JSON files of the workspace (`texts`: (path, text)
    of each) that do not parse, where `asked` reports something wrong and says JSON:
    those it names where it names any; none where one cannot be mended line by line."""
    if not reports(asked) or not _SAYS_JSON.search(asked):
        return {}
    broken = [(p, t) for p, t in texts() if p.endswith(".json") and not _parses(t)]
    named = [(p, t) for p, t in broken
             if re.search(rf"(?<![\w./-])(?:{re.escape(p)}|{re.escape(posixpath.basename(p))})(?![\w-])", asked)]
    broken = named or broken
    if not broken or len(broken) > DATA_FILES:
        return {}
    parts, told = [], []
    for path, text in broken:
        mended = mend_json(text)
        if mended is None:
            return {}
        changes, what = mended
        edits = [f"-e {shlex.quote(f'{n}d' if new is None else f'{n}c' + chr(92) + new.replace(chr(92), chr(92) * 2))}"
                 for n, new in changes]
        parts.append(f"sed -i {' '.join(edits)} {shlex.quote(path)}")
        told.append(f"Mended {path}: {what}; it parses as JSON now.")
    return {"sed": [" && ".join(parts) + " && echo " + shlex.quote(" ".join(told))]}


def mend_json(text: str) -> tuple[list[tuple[int, str | None]], str] | None:
    """The lines to change (line number, its new text, None to delete it) that make the
    JSON `text` parse, and what they mend in plain words; None where it parses already,
    holds a carriage return, or these mends do not make it parse."""
    if _parses(text) or "\r" in text:
        return None
    lines = text.split("\n")
    new = list(lines)
    what: dict[str, list[int]] = {}

    def note(kind: str, i: int) -> None:
        what.setdefault(kind, []).append(i + 1)

    for i in range(len(new)):
        for mend, kind in ((_no_comment, "a comment taken out"), (_doubled, "single quotes made double"),
                           (_json_words, "True, False or None written true, false, null"),
                           (_quoted_keys, "a key put in quotes"), (_no_inner_trailing, "a comma after a last item")):
            changed = mend(new[i])
            if changed != new[i]:
                new[i] = changed
                note(kind, i)
    for i, line in enumerate(new):
        after = next((n for n in new[i + 1:] if n.strip()), "")
        code = line.rstrip()
        if code.endswith(",") and after.lstrip().startswith(("}", "]")):
            new[i] = code[:-1]
            note("a comma after a last item", i)
        elif _VALUE_END.search(_outside(code)) and code and not code.endswith(("{", "[", ",")) \
                and _ITEM_START.match(after) and after.strip():
            new[i] = code + ","
            note("a comma left out between two items", i)
    if not _parses("\n".join(new)):
        return None
    changes: list[tuple[int, str | None]] = [(i + 1, None if not n.strip() and lines[i].strip() else n)
                                             for i, n in enumerate(new) if n != lines[i]]
    said = "; ".join(f"{kind} (line{'s' if len(at) > 1 else ''} {', '.join(map(str, at))})"
                     for kind, at in what.items())
    return changes, said


def _parses(text: str) -> bool:
    """Whether `text` is JSON."""
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _outside(line: str) -> str:
    """`line` with its double-quoted texts emptied (`""`)."""
    return _STRING.sub('""', line)


def _apart(line: str, mend: Callable[[str], str]) -> str:
    """`line` with `mend` applied to what lies outside its double-quoted texts."""
    out, at = [], 0
    for m in _STRING.finditer(line):
        out += [mend(line[at:m.start()]), m.group()]
        at = m.end()
    return "".join([*out, mend(line[at:])])


def _no_comment(line: str) -> str:
    """`line` without a `//` comment outside its texts."""
    marked = _apart(line, lambda part: part.replace("//", "\0", 1))
    start = marked.find("\0")
    return line if start < 0 else marked[:start].rstrip()


def _doubled(line: str) -> str:
    """`line` with its single-quoted texts (no double quote in them) in double quotes."""
    return _apart(line, lambda part: _SINGLE.sub(lambda m: f'"{m.group(1)}"', part)) if "'" in line else line


def _json_words(line: str) -> str:
    """`line` with Python's True, False and None outside texts written true, false, null."""
    return _apart(line, lambda part: _PYTHON_WORD.sub(lambda m: _PYTHON[m.group()], part))


def _quoted_keys(line: str) -> str:
    """`line` with a bare key (`name:`) outside texts put in double quotes."""
    return _apart(line, lambda part: _BARE_KEY.sub(
        lambda m: m.group(0) if m.group(2) in ("true", "false", "null") else f'{m.group(1)}"{m.group(2)}"{m.group(3)}',
        part))


def _no_inner_trailing(line: str) -> str:
    """`line` without a comma right before a `}` or `]` on it, outside texts."""
    return _apart(line, lambda part: _INNER_TRAILING.sub(r"\1", part))
