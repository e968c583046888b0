"""What a slip of code found for mending is (slips.py): where, what, the `sed` that
mends it and the words around it, by which a report of a bug points at it."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

import attrs

from actors.runs.agent.small.files_of import sed_pattern, sed_replacement


@attrs.frozen
class Slip:
    """One slip found: where, what it is (in plain words), the `sed -e` expressions that
    mend it, the words around it (its path's, its function's, its line's names), and
    whether it makes the code fail when it runs."""

    path: str
    line: int
    what: str
    edits: tuple[str, ...]
    words: frozenset[str]
    crashes: bool = False  # it makes the code fail when it runs (a TypeError, a NameError)


def on_line(path: str, node: ast.AST, old: str, new: str, what: str, fname: str, *,
             crashes: bool = False) -> Slip | None:
    """The slip of `node`'s `old` written `new` (on its one line), the words around it
    its function's (`fname`) and its names'."""
    line = getattr(node, "lineno", 0)
    if not line or line != getattr(node, "end_lineno", 0):
        return None
    names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    return one_line(path, line, old, new, what, context(path, fname, names), crashes=crashes)


def one_line(path: str, line: int, old: str, new: str, what: str, context: frozenset[str], *, nth: int = 1,
              crashes: bool = False) -> Slip | None:
    """The slip of line `line`'s `old` (its `nth`) written `new`, None where it spans
    lines or cannot be put in a `sed` expression the shell leaves as it is."""
    if not line or "\n" in old or not old:
        return None
    body = f"{line}s/{sed_pattern(old)}/{sed_replacement(new)}/{nth if nth > 1 else ''}"
    if "'" not in body:
        quoted = f"'{body}'"
    elif not re.search(r'["$`\\]', old + new):  # (in double quotes, as the shell leaves them)
        quoted = f'"{body}"'
    else:
        return None
    return Slip(path, line, what, (f"-e {quoted}",), context, crashes=crashes)


def context(path: str, func: str, names: Iterable[str]) -> frozenset[str]:
    """The words around a slip: its path's parts, its function's name's and parameters'
    (`func`), its line's names'."""
    return words(" ".join([path.removesuffix(".py"), func, *names]))


def words(text: str) -> frozenset[str]:
    """The words of `text` of three letters or more, lower case, names split at `_`,
    capitals and digits."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return frozenset(w.lower() for w in re.findall(r"[A-Za-z]{3,}", spaced.replace("_", " ")))


def params(func: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> set[str]:
    """The names of `func`'s parameters (positional-only, plain and keyword-only)."""
    return {a.arg for a in [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs]}


def is_docstring(node: ast.stmt) -> bool:
    """Whether `node` is a statement of a string alone (a docstring where it comes first)."""
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def first_import_line(body: Iterable[ast.stmt]) -> int | None:
    """The line of the first import among `body`'s statements other than a
    `from __future__` one (where a new import goes: after __future__'s, which must come
    first); None when there is none."""
    return next((n.lineno for n in body if isinstance(n, ast.Import)
                 or isinstance(n, ast.ImportFrom) and n.module != "__future__"), None)
