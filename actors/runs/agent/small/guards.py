"""Calls a small model may not make (actors/runs/agent/small/leader.py asks before each
runs): a write over a file of the person's, a text that repeats the daemon's own notes
to it or is only a file's name, a new file of an odd name, an edit that breaks a file
that parses or changes only its spaces, a command that removes a file the request names
and does not ask to remove.
Each refusal is a card the person reads, with the words of actors/notices.py."""

from __future__ import annotations

import ast
import fnmatch
import json
import posixpath
import re
import shlex
import tomllib
import warnings
from collections.abc import Callable, Iterable

import attrs

from actors import notices
from actors.runs.agent.small.echo import echoed
from actors.runs.agent.small.names_of import unbound_names
from actors.runs.agent.small.steps import EDIT_TOOL, WRITE_TOOL, file_name, target_values

# ---- a file the person's, not written over ----


def created_files(items: Iterable[tuple[str | None, str | None, object, str | None]]) -> set[str]:
    """The files a conversation's write_file calls made new (`items`: each tool card's
    tool, state, arguments and diff): a file it only edited stays the person's."""
    return {posixpath.normpath(path) for tool, state, args, diff in items
            if tool == WRITE_TOOL and state == "done" and isinstance(args, dict)
            and isinstance(path := args.get("path"), str) and path and made_new(diff)}


def made_new(diff: str | None) -> bool:
    """Whether a write's diff makes its file from nothing (its first hunk starts at line 0
    of an empty file)."""
    hunk = re.search(r"^@@ [^\n]*", diff or "", re.M)
    return hunk is not None and hunk.group(0).startswith("@@ -0,0 ")


@attrs.frozen
class Refusal:
    """Why a small model's call may not go on (`text`, the model's), and whether the next
    round may not call its tool at all (`bars`: varying the call's arguments does not
    mend it)."""

    text: str
    bars: bool


def replace_refused(tool: str, path: object, exists: bool, created: Iterable[str]) -> str | None:
    """Why a small model's write_file may not replace `path`: it is a file of the
    workspace that this conversation did not make. Asked to change one line,
    SmolLM2 wrote config.py over with `10000`, and after reading it with `ready` (a
    word of the worked examples); after an edit of a file of constants it wrote the
    file over with a file's name; its edit_file can only replace a line that is there. None when the
    write may go on (a new file, or one it made)."""
    if tool != WRITE_TOOL or not isinstance(path, str) or not exists or posixpath.normpath(path) in set(created):
        return None
    return notices.WRITE_OVER_REFUSED.format(path=path)


def written_text(tool: str, args: dict[str, object]) -> str:
    """The text a call of write_file or edit_file puts into its file ("" for another)."""
    if tool == WRITE_TOOL:
        content = args.get("content")
        return content if isinstance(content, str) else ""
    if tool == EDIT_TOOL and isinstance(edits := args.get("edits"), list):
        return "\n".join(e["new_text"] for e in edits if isinstance(e, dict) and isinstance(e.get("new_text"), str))
    return ""


def echo_refused(tool: str, args: dict[str, object], ours: Iterable[str]) -> str | None:
    """Why a small model's write_file or edit_file may not go on: the text it would
    write repeats what the daemon told it (`echoed`). None when it may."""
    note = echoed(written_text(tool, args), ours)
    if note is None:
        return None
    path = args.get("path")
    return notices.ECHO_REFUSED.format(path=path if isinstance(path, str) else "the file", note=note)


def name_refused(tool: str, args: dict[str, object], asked: str) -> str | None:
    """Why a small model's write_file may not go on: the whole text it would write is a
    file's name (its own path, or another), which the request does not give. Asked for a
    document with a heading, SmolLM2 wrote the document's file name as its text, and
    wrote a file of constants over with a file's name, and a new file's own name as its
    text where the request names the file (so that its name is in the request, which
    exempts only another file's name). An edit_file's new text likewise, where the text
    it replaces is no file's name: asked about a folder's name with a space, SmolLM2
    replaced that line of a list with the list's own file name. None when it may."""
    if tool == EDIT_TOOL and isinstance(edits := args.get("edits"), list):
        for e in edits:
            old, new = (e.get("old_text"), e.get("new_text")) if isinstance(e, dict) else (None, None)
            if isinstance(old, str) and isinstance(new, str) and not file_name(old.strip()):
                why = name_refused(WRITE_TOOL, {"path": args.get("path"), "content": new}, asked)
                if why is not None:
                    return why
        return None
    content = args.get("content")
    if tool != WRITE_TOOL or not isinstance(content, str):
        return None
    text, path = content.strip(), args.get("path")
    own = isinstance(path, str) and text.lower() == posixpath.basename(path).lower()
    if not text or "\n" in text or not file_name(text) or (text.lower() in asked.lower() and not own):
        return None
    return notices.NAME_AS_TEXT_REFUSED.format(path=path if isinstance(path, str) else "the file", name=text)


# A request that asks about spacing may want an edit of spaces only.
_ASKS_ABOUT_SPACES = re.compile(r"\b(?:space|spaces|spacing|whitespace|indent\w*|dedent\w*|tabs?|blank|newlines?|"
                                r"line breaks?|trailing|format\w*|pep ?8|lint\w*)\b", re.I)


def spaces_only_refused(tool: str, args: dict[str, object], asked: str) -> str | None:
    """Why a small model's edit_file may not go on: each of its edits changes only spaces
    or line breaks, which the request does not ask about. Asked to fix a word of a line,
    SmolLM2 wrote the line again one space less indented and answered that it was fixed.
    None when it may."""
    edits, path = args.get("edits"), args.get("path")
    if tool != EDIT_TOOL or not isinstance(edits, list) or not edits or _ASKS_ABOUT_SPACES.search(asked):
        return None
    pairs = [(e.get("old_text"), e.get("new_text")) for e in edits if isinstance(e, dict)]
    if len(pairs) != len(edits) or not all(isinstance(o, str) and isinstance(n, str) for o, n in pairs):
        return None
    if any("".join(str(o).split()) != "".join(str(n).split()) for o, n in pairs):
        return None
    return notices.SPACES_ONLY_REFUSED.format(path=path if isinstance(path, str) else "the file")


# Characters of no file name a person gives by hand (quotes, brackets, a shell's
# punctuation, control characters).
_ODD_IN_A_NAME = re.compile(r"""["'`{}\[\]<>|;*?\\\x00-\x1f\x7f]""")
# A line's place after a file's name, as a search or a compiler shows it (`minutes.rst:4`,
# `a.py:3:7`): told that a line of its new file read otherwise, SmolLM2 wrote `minutes.rst:4`.
_PLACE = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}(:\d+){1,2}$")


def odd_name_refused(tool: str, path: object, exists: bool, asked: str) -> str | None:
    """Why a small model's write_file may not make `path`: a new file whose name holds a
    character no person's file name has (a quote, a bracket, `;`, ...), which the request
    does not give, or that ends with a line's place (`minutes.rst:4`). After a loop,
    SmolLM2 made a file named with the loop's remains (`#ff0f#,blue:BLUE;vega-1.23
    54}},'response': …`). None when it may."""
    if tool != WRITE_TOOL or not isinstance(path, str) or exists or path in asked:
        return None
    odd = _ODD_IN_A_NAME.search(path) or _PLACE.search(path)
    return None if odd is None else notices.ODD_NAME_REFUSED.format(path=path, char=repr(odd.group(0)))


def value_missing_refused(tool: str, args: dict[str, object], asked: str, text: str | None) -> str | None:
    """Why a small model's edit_file may not go on: the request asks for values (`set X
    to 'v'`: steps.target_values) that the file (`text`, as it is now) does not hold
    yet, and no new_text of the edit holds one of them. Asked to set two constants to
    values it gave, SmolLM2 wrote `BLUE = BLUE` over one and `RED = RED` over the other.
    None when it may (an edit that removes text, a file not read, a request that gives
    no value, every value there already)."""
    edits, path = args.get("edits"), args.get("path")
    if tool != EDIT_TOOL or text is None or not isinstance(edits, list) or not edits:
        return None
    new = [e.get("new_text") for e in edits if isinstance(e, dict)]
    if not all(isinstance(n, str) for n in new) or not any(new):
        return None
    missing = [v for v in target_values(asked) if v not in text]
    if not missing or any(v in str(n) for v in missing for n in new):
        return None
    return notices.VALUE_MISSING_REFUSED.format(path=path if isinstance(path, str) else "the file",
                                                values=", ".join(missing))


# ---- a file that parses, kept whole ----


def parse_error(path: str, text: str) -> tuple[int, str] | None:
    """Where and why `text` does not parse as the kind of file `path` names (Python, JSON,
    TOML), as (line, the parser's words); None when it parses, or is of a kind not read."""
    kind = posixpath.splitext(path)[1].lower()
    try:
        if kind in (".py", ".pyi"):
            with warnings.catch_warnings():  # an odd escape in a string is the file's, not an error
                warnings.simplefilter("ignore")
                ast.parse(text, filename=path)
        elif kind == ".json":
            json.loads(text)
        elif kind == ".toml":
            tomllib.loads(text)
    except SyntaxError as exc:
        return exc.lineno or 1, exc.msg
    except json.JSONDecodeError as exc:
        return exc.lineno, exc.msg
    except tomllib.TOMLDecodeError as exc:
        words = str(exc)
        at = re.search(r"\(at line (\d+)", words)
        line = int(at.group(1)) if at else text.count("\n") + 1
        return line, re.sub(r"\s*\(at (?:line \d+, column \d+|end of document)\)$", "", words)
    except (ValueError, RecursionError) as exc:  # a NUL byte; nesting too deep to read
        return 1, str(exc) or type(exc).__name__
    return None


def break_refused(path: str, before: str, after: str) -> str | None:
    """Why a small model's edit may not go on: `path` parses as it is (`before`) and would
    not with the edit (`after`). Given the line to change, SmolLM2 wrote its new text
    without the line's start, or with a `}` after it, and answered that it was done. None
    when it may (a file of a kind not read, one that does not parse now, or the edit
    keeps it parsing). A Python file that would use a name nothing binds, where it does
    not now (`newly_unbound`), is refused too."""
    if parse_error(path, before) is not None:
        return None
    error = parse_error(path, after)
    if error is not None:
        line, words = error
        return notices.BREAKS_FILE_REFUSED.format(path=path, line=line, error=words)
    undefined = newly_unbound(path, before, after)
    if undefined is None:
        return None
    name, line = undefined
    return notices.UNDEFINES_NAME_REFUSED.format(path=path, name=name, line=line)


def newly_unbound(path: str, before: str, after: str) -> tuple[str, int] | None:
    """The first name (and its line) that the Python file `path` would use with nothing
    binding it, as `after`, where `before` (which parses) binds or does not use it. Asked
    to print prices with two decimals, SmolLM2 wrote the price table's line over as one
    number of another name, leaving the function that reads the table a NameError; asked
    to rename a package, it changed an import's name and left the old one in use. None
    for a file of another kind, or where no name is newly left unbound."""
    if posixpath.splitext(path)[1].lower() not in (".py", ".pyi"):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            was, now = unbound_names(ast.parse(before)), unbound_names(ast.parse(after))
        except (SyntaxError, ValueError, RecursionError):
            return None
    new = sorted((line, name) for name, line in now.items() if name not in was)
    return (new[0][1], new[0][0]) if new else None


# ---- a file the person named, kept ----

# Programs that remove the files they are given, and those that move them (the sources go).
_REMOVERS = frozenset({"rm", "unlink", "shred", "rmdir"})
_MOVERS = frozenset({"mv"})
# Words that only run the command after them.
_PREFIXES = frozenset({"sudo", "command", "env", "nice", "nohup", "time", "exec"})
# Words of a request that asks for something to go.
_GOES = r"remov|delet|drop|eras|clean|clear|purg|trash|discard|get rid|tidy|wip|prun|rm\b|del\b|unlink|shred"
# A request that asks for something to go, or to move.
_ASKS_TO_REMOVE = re.compile(rf"\b(?:{_GOES}|renam|mov|replac|overwrit|swap|mv\b)", re.IGNORECASE)
# A request that asks for something to go (not only to move).
_ASKS_TO_DELETE = re.compile(rf"\b(?:{_GOES}|rmdir\b)", re.IGNORECASE)


def unasked_programs(asked: str) -> frozenset[str]:
    """The programs a small model's command may not start with for this request: those
    that remove files, unless it asks for something to go; those that move them, unless
    it asks to move, rename or remove. Asked to rename a file, SmolLM2 ran `rm` on the new
    name; asked to copy one, `rm -rf` on it."""
    out = frozenset() if _ASKS_TO_DELETE.search(asked) else _REMOVERS
    return out if _ASKS_TO_REMOVE.search(asked) else out | _MOVERS


def removed_by(command: str, is_file: Callable[[str], bool]) -> list[str]:
    """The files a shell command removes or moves away, as its words give them: the
    operands of rm (unlink, shred, rmdir), the sources of mv and a destination that is a
    file already. Only what the words say: a script that removes files is not read."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    try:
        tokens = list(lex)
    except ValueError:
        return []
    out: list[str] = []
    stage: list[str] = []
    for token in [*tokens, ";"]:
        if token and set(token) <= set(";&|()"):
            out.extend(_stage_removes(stage, is_file))
            stage = []
        else:
            stage.append(token)
    return out


def _stage_removes(words: list[str], is_file: Callable[[str], bool]) -> list[str]:
    while words and (words[0] in _PREFIXES or re.fullmatch(r"\w+=.*", words[0])):
        words = words[1:]
    if not words:
        return []
    program = posixpath.basename(words[0])
    if program not in _REMOVERS | _MOVERS:
        return []
    operands, ended = [], False
    for word in words[1:]:
        if not ended and word == "--":
            ended = True
        elif ended or not word.startswith("-"):
            operands.append(word)
    if program in _REMOVERS:
        return operands
    last = operands[-1:] if len(operands) >= 2 and is_file(operands[-1]) else []
    return operands[:-1] + last


def removal_refused(command: object, asked: str, named: Iterable[str], is_file: Callable[[str], bool]) -> str | None:
    """Why a small model's command may not run: it removes or moves away a file the
    request names (`named`) that the request does not ask to remove or move. Asked to
    make a backup copy of a file, SmolLM2 ran `rm -rf` on it. None when it may run."""
    if not isinstance(command, str) or _ASKS_TO_REMOVE.search(asked):
        return None
    kept = [posixpath.normpath(n) for n in named]
    gone = next((k for p in removed_by(command, is_file) for k in kept
                 if k == posixpath.normpath(p) or (set(p) & set("*?[") and fnmatch.fnmatchcase(k, p))), None)
    return None if gone is None else notices.REMOVE_REFUSED.format(path=gone)
