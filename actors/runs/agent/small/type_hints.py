"""The whole command of a request to add type hints to a Python file's functions, where
every hint can be read off the code: a parameter's type from its default and the values
the workspace calls the function with, a return's from what it returns.

Asked to add type hints to a file's functions, SmolLM2-135M rewrote a `def` line as a
version number, and the edit was refused as breaking the file. The hints of a small
script are there to be read: `gear(34, 28)` is called with whole numbers, `round(x, 1)`
gives a float, an f-string a str, a function that returns nothing `None`. So the
command is known: each `def` line written again with its hints (`sed`, one line each).

    sed -i -e '1s/.*/def gear(front: int, back: int) -> float:/' bike.py

None where a hint cannot be read for every parameter and return of the functions that
lack one (the person's own words are needed there), or a `def` spans lines.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH, PY_FILE, sed_replacement

_ASKS = re.compile(r"\b(?:type[\s-]*hints?|type\s+annotations?|typing|annotat(?:e|ions?)|(?:add|put)\s+types)\b",
                   re.IGNORECASE)
_BUILTIN_RETURNS = {"len": "int", "int": "int", "float": "float", "str": "str", "bool": "bool", "repr": "str",
                    "abs": None, "sorted": "list", "list": "list", "dict": "dict", "set": "set", "tuple": "tuple",
                    "sum": None, "min": None, "max": None, "input": "str", "format": "str", "ord": "int", "chr": "str"}
# Call sites and functions looked at at most.
HINT_FILES = 40


def hint_commands(asked: str, read: Callable[[str], str | None],
                  texts: Callable[[], Iterable[tuple[str, str]]]) -> dict[str, list[str]]:
    """The whole command of a request to add type hints to the one Python file it names
    (`read` gives its text; `texts` the workspace's, where it is called from); none
    otherwise."""
    if not _ASKS.search(asked):
        return {}
    files = [f for f in dict.fromkeys(PY_FILE.findall(asked)) if PLAIN_PATH.fullmatch(f) and read(f) is not None]
    if len(files) != 1:
        return {}
    try:
        tree = ast.parse(read(files[0]) or "")
        others = [ast.parse(t) for p, t in list(texts())[:HINT_FILES] if p.endswith(".py") and p != files[0]]
    except (SyntaxError, ValueError):
        return {}
    command = hints_command(files[0], read(files[0]) or "", tree, [tree, *others])
    return {"sed": [command]} if command else {}


def hints_command(path: str, text: str, tree: ast.Module, trees: list[ast.Module]) -> str | None:
    """The `sed` writing each top-level function of `path` that lacks a hint again with
    all of them; None where one cannot be read."""
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    calls = [c for t in trees for c in ast.walk(t) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
             and c.func.id in functions]
    constants = {t.id: v for tr in trees for n in tr.body if isinstance(n, ast.Assign) and len(n.targets) == 1
                 and isinstance(t := n.targets[0], ast.Name) for v in (n.value,)}
    returns: dict[str, str | None] = {}
    params: dict[str, dict[str, str]] = {}

    def kind(node: ast.expr | None, scope: dict[str, str], depth: int = 0) -> str | None:
        if node is None or depth > 6:
            return None
        if isinstance(node, ast.Constant):
            return "None" if node.value is None else type(node.value).__name__ if isinstance(
                node.value, bool | int | float | str) else None
        if isinstance(node, ast.JoinedStr):
            return "str"
        if isinstance(node, ast.List | ast.ListComp):
            return "list"
        if isinstance(node, ast.Dict | ast.DictComp):
            return "dict"
        if isinstance(node, ast.Compare | ast.BoolOp) or isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return "bool"
        if isinstance(node, ast.Name):
            return scope.get(node.id) or (kind(constants[node.id], {}, depth + 1) if node.id in constants else None)
        if isinstance(node, ast.UnaryOp):
            return kind(node.operand, scope, depth + 1)
        if isinstance(node, ast.BinOp):
            left, right = kind(node.left, scope, depth + 1), kind(node.right, scope, depth + 1)
            if isinstance(node.op, ast.Div) and left in ("int", "float") and right in ("int", "float"):
                return "float"
            if left == right and left in ("int", "float", "str", "list"):
                return left
            return "float" if {left, right} == {"int", "float"} else None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name == "round":
                return "float" if len(node.args) > 1 else "int"
            if name in functions:
                return returned(name, depth + 1)
            return _BUILTIN_RETURNS.get(name)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "join", "format", "upper", "lower", "strip", "replace", "title", "strftime"):
            return "str"
        return None

    def parameters(name: str) -> dict[str, str] | None:
        if name in params:
            return params[name]
        f = functions[name]
        args = [*f.args.posonlyargs, *f.args.args]
        seen: dict[str, set[str | None]] = {a.arg: set() for a in args}
        for a, d in zip(args[len(args) - len(f.args.defaults):], f.args.defaults, strict=True):
            seen[a.arg].add(kind(d, {}))
        for call in calls:
            if call.func.id != name:  # type: ignore[attr-defined]
                continue
            for a, value in zip(args, call.args, strict=False):
                seen[a.arg].add(kind(value, {}))
            for k in call.keywords:
                if k.arg in seen:
                    seen[k.arg].add(kind(k.value, {}))
        out = {}
        for arg, kinds in seen.items():
            said = _one(kinds)
            if said is None:
                return None
            out[arg] = said
        params[name] = out
        return out

    def returned(name: str, depth: int = 0) -> str | None:
        if name in returns:
            return returns[name]
        returns[name] = None  # (while it is read: a call of itself says nothing)
        scope = parameters(name)
        if scope is None:
            return None
        values = [n.value for n in ast.walk(functions[name]) if isinstance(n, ast.Return)]
        said = "None" if not any(v is not None for v in values) else _one(
            {kind(v, scope, depth) if v is not None else "None" for v in values})
        returns[name] = said
        return said

    if any(isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef) and (m.returns is None or any(
            x.annotation is None and x.arg not in ("self", "cls") for x in m.args.args))
           for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body):
        return None  # (methods: not read here; all of a file's hints or none)
    lines = text.split("\n")
    edits = []
    for name, f in functions.items():
        a = f.args
        if f.args.vararg or f.args.kwarg or a.kwonlyargs or f.decorator_list:
            return None
        if f.returns is not None and all(x.annotation is not None for x in a.posonlyargs + a.args):
            continue
        if f.lineno != f.body[0].lineno - 1 or any(x.annotation is not None for x in a.args) or f.returns:
            return None  # (a def of several lines, or hints in part: the person's)
        scope, ret = parameters(name), returned(name)
        if scope is None or ret is None:
            return None
        args = [*a.posonlyargs, *a.args]
        defaults = [None] * (len(args) - len(a.defaults)) + list(a.defaults)
        said = ", ".join(f"{x.arg}: {scope[x.arg]}" + (f" = {ast.get_source_segment(text, d)}" if d is not None else "")
                         for x, d in zip(args, defaults, strict=True))
        line = lines[f.lineno - 1]
        indent = line[:len(line) - len(line.lstrip())]
        new = f"{indent}{'async ' if isinstance(f, ast.AsyncFunctionDef) else ''}def {name}({said}) -> {ret}:"
        if "\\" in new or "\n" in new or "'" in new and re.search(r"[\"$`!]", new):
            return None
        escaped = sed_replacement(new)
        quote = '"' if "'" in new else "'"  # (a default written in single quotes)
        edits.append(f"-e {quote}{f.lineno}s/.*/{escaped}/{quote}")
    if not edits or not PLAIN_PATH.fullmatch(path):
        return None
    return f"sed -i {' '.join(edits)} {path}"


def _one(kinds: set[str | None]) -> str | None:
    """The one type of the values seen (whole numbers beside others: a float), None where
    they are none, unknown, or of several types."""
    if not kinds or None in kinds:
        return None
    if kinds == {"int", "float"}:
        return "float"
    if len(kinds) == 2 and "None" in kinds:
        (other,) = kinds - {"None"}
        return f"{other} | None"
    return next(iter(kinds)) if len(kinds) == 1 else None
