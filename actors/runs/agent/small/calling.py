"""A question of what a function returns for values the request gives, answered by
calling it: the one whole command a small model's run is held to.

Asked what a function of the workspace returns for given values, SmolLM2-135M read the
function and answered with prose about it ("a Python function that opens…"), or with
the values it was given: working out what code returns is beyond it. Python can say:
where the request asks what a function returns (gives, prints) for values written as
Python writes them (a string in quotes, a number, a list), and a Python file of the
workspace defines that function at its top level, the command is that function called
with those values and its result printed, from the workspace's folder:

    python3 -c "from shop.prices import total; print(total([3, 4]))"

The command is shown as any other and runs as any other (the mode decides whether it
runs, asks or is refused; the sandbox what it may touch). Values that are not literals
(a name, a call, an expression) make no command: only what the person wrote is
passed, as they wrote it, read back by `ast`. People seldom write the call as Python
does: "what does f hand back for width 3 and depth 7" gives each value after the name of
its parameter, "for 3 and 7" the values in order; the function's own parameters (read
from its `def`) say which is which, and the call is written with them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path

from actors.runs.agent.small.lookup import text_files

# "what does NAME return for VALUES", "what would NAME(VALUES) give", "what's NAME(VALUES)".
_ASKED = re.compile(
    r"\bwhat(?:'s|\s+is|\s+(?:does|do|would|will)|\s+gets?)\s+(?:the\s+function\s+)?"
    r"(?P<name>[A-Za-z_]\w*)(?:\s*\((?P<inside>.*)\))?"
    r"(?:\s+(?:return|returns|give|gives|output|outputs|print|prints|produce|produces|evaluate\s+to|come\s+out\s+as)"
    r"(?:\s+(?:for|with|when\s+given|given|on|when\s+called\s+with|if\s+given)\s+(?P<after>.+?))?)?"
    r"\s*[?.!]*\s*$", re.IGNORECASE | re.DOTALL)
# The same with other words for what it returns ("hand back", "spit out", "come back
# with": up to three words) before what gives the values.
_ASKED_LOOSE = re.compile(
    r"\bwhat(?:'s|\s+is|\s+(?:does|do|would|will)|\s+gets?)\s+(?:the\s+function\s+)?"
    r"(?P<name>[A-Za-z_]\w*)(?:\s+[A-Za-z]+){1,3}?\s+(?:for|with|when\s+given|given|when\s+called\s+with|"
    r"when\s+passed|if\s+(?:you|i|we)\s+(?:pass|give)(?:\s+it)?|if\s+given)\s+(?!if\s)(?P<after>.+?)\s*[?.!]*\s*$",
    re.IGNORECASE | re.DOTALL)
# Where values written in words part: a comma, a semicolon, `and`.
_PARTS = re.compile(r"\s*[,;]\s*(?:and\s+)?|\s+and\s+", re.IGNORECASE)
# One value in words: an article, its parameter's name (and `=`, `:`, `of`, `is`, `as`), the value.
_PART = re.compile(r"(?:(?:a|an|the)\s+)?(?:(?P<key>[A-Za-z_]\w*)\s*(?:=|:|\s(?:of|is|as|at|=)\s|\s)\s*)?"
                   r"(?P<value>.+)", re.IGNORECASE | re.DOTALL)
# Characters the command may not hold: the shell's own inside double quotes, and a line's end.
_SHELL_SPECIAL = frozenset('"$`\\!\n\r')
PROGRAM = "python3"


def asked_call(asked: str, parameters: Sequence[str] | None = None) -> tuple[str, str] | None:
    """The function a request asks the result of and the values it gives, as Python
    writes them after `ast` read them back (`'a', [1, 2]`); None when it asks no such
    thing, gives no values, or a value is not a literal. Given the function's
    `parameters`, values written in words are read too (`_in_words`)."""
    text = asked.strip()
    m = _ASKED.search(text)
    values = None if m is None else m.group("inside") if m.group("inside") is not None else m.group("after")
    if values is None and parameters is not None:
        m = _ASKED_LOOSE.search(text)
        values = None if m is None else m.group("after")
    if m is None or values is None or not values.strip():
        return None
    call = _as_call(values.strip())
    if call is None and parameters is not None:
        call = _in_words(values.strip(), parameters)
    return None if call is None else (m.group("name"), call)


def _as_call(values: str) -> str | None:
    """`values` as Python writes a call's arguments after `ast` read them back; None
    where they are not literals, or hold a character the shell reads."""
    try:
        call = ast.parse(f"f({values})", mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or any(k.arg is None for k in call.keywords):
        return None
    parts = [*call.args, *(k.value for k in call.keywords)]
    try:
        for part in parts:
            ast.literal_eval(part)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    text = ", ".join([ast.unparse(a) for a in call.args] + [f"{k.arg}={ast.unparse(k.value)}" for k in call.keywords])
    return text if text and not _SHELL_SPECIAL & set(text) else None


def _in_words(values: str, parameters: Sequence[str]) -> str | None:
    """Values written in words (`3 and 7`, `width 3 and depth 7`, `a depth of 7`) as a
    call's arguments: each part a literal, after the name of one of `parameters` or
    alone, in order; None where a part is no literal, a name is no parameter, a
    parameter is given twice, or there are more values than parameters."""
    given: list[tuple[str | None, str]] = []
    for part in _PARTS.split(values):
        m = _PART.fullmatch(part.strip())
        if m is None:
            return None
        key, value = m.group("key"), m.group("value")
        if key is not None and key not in parameters:  # (`-3`, `'a'`: no name before them)
            if _as_call(part.strip()) is None:
                return None
            key, value = None, part.strip()
        one = _as_call(value)
        if one is None or "," in one and not value.strip().startswith(("[", "(", "{")):
            return None
        given.append((key, one))
    keys = [k for k, _ in given if k is not None]
    if not given or len(given) > len(parameters) or len(set(keys)) != len(keys):
        return None
    if keys and len(keys) < len(given):  # some named, some not: by order, where they agree
        return None
    if keys:
        given.sort(key=lambda kv: parameters.index(kv[0] or ""))
        return ", ".join(f"{k}={v}" for k, v in given) if any(
            parameters.index(k or "") != i for i, (k, _) in enumerate(given)) else ", ".join(v for _, v in given)
    return ", ".join(v for _, v in given)


def defining_module(ws: Path, name: str) -> str | None:
    """The module (dotted, from the workspace's folder) of the one Python file that
    defines the function `name` at its top level, of those lookup.text_files reads;
    None where none does, or more than one. Blocking: call it in a thread."""
    found = _defining(ws, name)
    return found[0] if found is not None else None


def _defining(ws: Path, name: str) -> tuple[str, list[str]] | None:
    """`defining_module`, with the function's parameters in order (none of `*args`)."""
    pattern = re.compile(rf"^(?:async\s+)?def\s+{re.escape(name)}\s*\(", re.MULTILINE)
    try:
        found = [(path, text) for path, text in text_files(ws, ".py") if pattern.search(text)]
    except OSError:
        return None
    if len(found) != 1:
        return None
    path, text = found[0]
    parts = path.removesuffix(".py").split("/")
    if not all(p.isidentifier() for p in parts):
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ".".join(parts), []
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name]
    params = [a.arg for d in defs[:1] for a in (*d.args.posonlyargs, *d.args.args, *d.args.kwonlyargs)]
    return ".".join(parts), params


def _name_asked(asked: str) -> str | None:
    """The function a request asks the result of, written as Python would or in words."""
    m = _ASKED.search(asked.strip()) or _ASKED_LOOSE.search(asked.strip())
    return m.group("name") if m is not None else None


def call_commands(asked: str, ws: Path) -> dict[str, list[str]]:
    """The whole command of a request asking what a function returns for values it
    gives (`asked_call`, with the function's parameters), where a file of the
    workspace `ws` defines it (`defining_module`): the function called and its result
    printed. Blocking."""
    name = _name_asked(asked)
    found = _defining(ws, name) if name is not None else None
    call = asked_call(asked, found[1]) if found is not None else None
    if found is None or call is None:
        return {}
    return {PROGRAM: [f'{PROGRAM} -c "from {found[0]} import {call[0]}; print({call[0]}({call[1]}))"']}
