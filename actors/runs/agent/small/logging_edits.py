"""The whole command of a request to report through the `logging` module where a Python
file prints ("switch the prints in app.py over to logging"): each `print(...)` made a
call of the module's logger with the same message, the logger made once under the
imports.

Asked so, SmolLM2-135M tried to take the colon off a `def` line, then sent a helper a
description of a file to make. Python's parser finds every call of `print` and what it
is given, so the command is known: one argument as it is, several joined by spaces as
`print` joins them (`'%s %s'` and the values), each line written anew:

    sed -i -e '1i\\import logging\\n\\nlogger = logging.getLogger(__name__)\\n' \\
      -e '4c\\    logger.info("%s %s", name, total)' app.py && echo 'app.py logs …'

None where a print is given `sep`, `end` or `file`, or spreads over lines, or the file
has no print or already has a name `logger`.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH
from actors.runs.agent.small.slip_base import first_import_line, is_docstring
from actors.runs.agent.small.slips import parsed

_LOGGING = re.compile(r"\blogg(?:ing|er)\b|\blog\s+(?:module|calls?|messages?|instead)\b", re.IGNORECASE)
_PRINTS = re.compile(r"\bprint(?:s|ed|ing)?\b|\bprint\(\)", re.IGNORECASE)
_LEVEL = re.compile(r"\b(debug|warning|error)s?\b", re.IGNORECASE)


def logging_commands(asked: str, named: Iterable[str],
                     texts: Callable[[], Iterable[tuple[str, str]]]) -> dict[str, list[str]]:
    """The command making the prints of the Python file `asked` names (one of `named`;
    none named, the one file of `texts` that prints) calls of a `logging` logger at the
    level it says (info unless debug, warning or error); none where it is no such
    request."""
    if not _LOGGING.search(asked) or not _PRINTS.search(asked):
        return {}
    wanted = set(named)
    found = [(p, t, tree, lines) for p, t in texts() if p.endswith(".py") and PLAIN_PATH.fullmatch(p)
             and (not wanted or p in wanted) and (tree := parsed(t)) is not None and (lines := _prints(tree, t))]
    if len(found) != 1:
        return {}
    path, text, tree, lines = found[0]
    if any(lines[n] is None for n in lines):
        return {}
    said_level = _LEVEL.search(asked)
    level = said_level.group(1).lower() if said_level else "info"
    if "logger" in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}:
        return {}
    imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    head = "import logging\\n\\nlogger = logging.getLogger(__name__)\\n\\n"
    if imports:
        last = max(n.end_lineno or n.lineno for n in imports)
        if min(lines) <= last:  # a print before the logger is made
            return {}
        edits = [f"{last}a\\\\nlogger = logging.getLogger(__name__)"]
        if not any(isinstance(n, ast.Import) and any(a.name == "logging" and not a.asname for a in n.names)
                   for n in imports):
            first = first_import_line(imports) or last + 1
            edits.insert(0, f"{first}i\\import logging" if first <= last else f"{last}a\\import logging")
    else:
        at = tree.body[1].lineno if tree.body and is_docstring(tree.body[0]) and len(tree.body) > 1 else 1
        edits = [f"{at}i\\{head}"]
    source = text.split("\n")
    edits += [f"{n}c\\{_logged(source[n - 1], call, level)}" for n, call in sorted(lines.items()) if call]
    told = f"{path} logs what it printed through logging now ({len(lines)} print{'s' if len(lines) > 1 else ''})."
    command = f"sed -i {' '.join('-e ' + shlex.quote(e) for e in edits)} {shlex.quote(path)}"
    return {"sed": [f"{command} && echo {shlex.quote(told)}"]}


def _prints(tree: ast.Module, text: str) -> dict[int, tuple[int, int, str] | None]:
    """The lines of `text` (its syntax tree `tree`) with a call of `print` as a statement: where the call is on
    its line and the logger's call's arguments in its place; None for one that cannot
    be moved (it spreads over lines, shares its line, is given sep, end or file, or
    `print` is used otherwise in the file)."""
    out: dict[int, tuple[int, int, str] | None] = {}
    moved: set[int] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name) and node.value.func.id == "print"):
            continue
        call = node.value
        moved.add(id(call.func))
        segments = [ast.get_source_segment(text, a) for a in call.args]
        args = [a or "" for a in segments]
        whole = node.lineno == node.end_lineno and node.end_col_offset is not None and not call.keywords \
            and all(a is not None for a in segments) and not any(isinstance(a, ast.Starred) for a in call.args) \
            and node.lineno not in out
        if not whole:
            out[node.lineno] = None
            continue
        text_alone = len(call.args) == 1 and isinstance(call.args[0], ast.JoinedStr | ast.Constant) \
            and isinstance(getattr(call.args[0], "value", ""), str)
        said = args[0] if text_alone else f'"{" ".join(["%s"] * len(args))}", {", ".join(args)}' if args else '""'
        out[node.lineno] = (node.col_offset, node.end_col_offset or 0, said)
    if any(isinstance(n, ast.Name) and n.id == "print" and id(n) not in moved for n in ast.walk(tree)):
        return {n: None for n in out} or {0: None}
    return out


def _logged(line: str, call: tuple[int, int, str], level: str) -> str:
    """`line` with its print call made the logger's call at `level` (its backslashes
    doubled for `sed`'s text)."""
    start, end, said = call
    raw = line.encode()
    return (raw[:start] + f"logger.{level}({said})".encode() + raw[end:]).decode(errors="replace").replace("\\", "\\\\")
