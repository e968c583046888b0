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
passed, as they wrote it, read back by `ast`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from actors.runs.agent.small.lookup import text_files

# "what does NAME return for VALUES", "what would NAME(VALUES) give", "what's NAME(VALUES)".
_ASKED = re.compile(
    r"\bwhat(?:'s|\s+is|\s+(?:does|do|would|will)|\s+gets?)\s+(?:the\s+function\s+)?"
    r"(?P<name>[A-Za-z_]\w*)(?:\s*\((?P<inside>.*)\))?"
    r"(?:\s+(?:return|returns|give|gives|output|outputs|print|prints|produce|produces|evaluate\s+to|come\s+out\s+as)"
    r"(?:\s+(?:for|with|when\s+given|given|on|when\s+called\s+with|if\s+given)\s+(?P<after>.+?))?)?"
    r"\s*[?.!]*\s*$", re.IGNORECASE | re.DOTALL)
# Characters the command may not hold: the shell's own inside double quotes, and a line's end.
_SHELL_SPECIAL = frozenset('"$`\\!\n\r')
PROGRAM = "python3"


def asked_call(asked: str) -> tuple[str, str] | None:
    """The function a request asks the result of and the values it gives, as Python
    writes them after `ast` read them back (`'a', [1, 2]`); None when it asks no such
    thing, gives no values, or a value is not a literal."""
    m = _ASKED.search(asked.strip())
    if m is None:
        return None
    values = m.group("inside") if m.group("inside") is not None else m.group("after")
    if values is None or not values.strip():
        return None
    try:
        call = ast.parse(f"f({values.strip()})", mode="eval").body
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
    return (m.group("name"), text) if text and not _SHELL_SPECIAL & set(text) else None


def defining_module(ws: Path, name: str) -> str | None:
    """The module (dotted, from the workspace's folder) of the one Python file that
    defines the function `name` at its top level, of those lookup.text_files reads;
    None where none does, or more than one. Blocking: call it in a thread."""
    pattern = re.compile(rf"^def\s+{re.escape(name)}\s*\(", re.MULTILINE)
    try:
        found = [path for path, text in text_files(ws, ".py") if pattern.search(text)]
    except OSError:
        return None
    if len(found) != 1:
        return None
    parts = found[0].removesuffix(".py").split("/")
    return ".".join(parts) if all(p.isidentifier() for p in parts) else None


def call_commands(asked: str, ws: Path) -> dict[str, list[str]]:
    """The whole command of a request asking what a function returns for values it
    gives (`asked_call`), where a file of the workspace `ws` defines it
    (`defining_module`): the function called and its result printed. Blocking."""
    call = asked_call(asked)
    if call is None:
        return {}
    name, values = call
    module = defining_module(ws, name)
    if module is None:
        return {}
    return {PROGRAM: [f'{PROGRAM} -c "from {module} import {name}; print({name}({values}))"']}
