"""The whole command of a request to turn a class into a dataclass: its `__init__`, that
does nothing but keep each parameter as the attribute of its name, written as the
dataclass's fields (in order, each with its default and a type: the parameter's own, else
its default's, else the one the workspace's calls of the class all give it), the class
decorated `@dataclass`, and `dataclass` imported:

    sed -i -e '1i\\from dataclasses import dataclass' -e '3i\\@dataclass' \\
        -e '4,7c\\\\    name: str\\n    size: float = 1.0' shapes.py

Asked to turn a class into a dataclass, SmolLM2-135M searched the class's name with
words of its own, over and over. A class's fields are its `__init__`'s to say, read by
Python's parser. None where the `__init__` does anything else, the class has a base or a
decorator, or is defined in more than one file.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH, PY_FILE
from actors.runs.agent.small.name_slips import import_line
from actors.runs.agent.small.slip_base import is_docstring

_ASKS = re.compile(r"\bdata\s*class(?:es)?\b|@dataclass\b", re.IGNORECASE)
_NAME = re.compile(r"`?\b([A-Z][A-Za-z0-9_]*)\b`?")
_FACTORIES = {ast.List: "list", ast.Dict: "dict", ast.Set: "set"}


def dataclass_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]]) -> dict[str, list[str]]:
    """The whole command of a request to make the one class it names a dataclass."""
    if not _ASKS.search(asked):
        return {}
    named = set(PY_FILE.findall(asked))
    wanted = set(_NAME.findall(asked))
    files = [(p, t) for p, t in texts() if p.endswith(".py")]
    found: list[tuple[str, str, ast.Module, ast.ClassDef]] = []
    trees: list[ast.Module] = []
    for path, text in files:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        trees.append(tree)
        if named and path not in named:
            continue
        found += [(path, text, tree, c) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and c.name in wanted]
    if len(found) != 1:
        return {}
    path, text, tree, cls = found[0]
    command = dataclass_command(path, text, tree, cls, trees)
    return {"sed": [command]} if command else {}


def dataclass_command(path: str, text: str, tree: ast.Module, cls: ast.ClassDef,
                      trees: list[ast.Module]) -> str | None:
    """The `sed` that makes `cls` of `path` a dataclass; None where its `__init__` does
    more than keep its parameters, or the class is made from another or decorated."""
    if not PLAIN_PATH.fullmatch(path) or cls.bases or cls.keywords or cls.decorator_list:
        return None
    init = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
    if init is None or init.decorator_list or init.args.vararg or init.args.kwarg or init.args.posonlyargs:
        return None
    params = [*init.args.args[1:], *init.args.kwonlyargs]
    me = init.args.args[0].arg if init.args.args else ""
    body = [s for s in init.body if not is_docstring(s)]
    kept = [(t.attr, _kept(s.value)) for s in body if isinstance(s, ast.Assign) and len(s.targets) == 1
            for t in s.targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
            and t.value.id == me]
    if not params or len(kept) != len(body) or [(a, k[0] if k else None) for a, k in kept] != [
            (p.arg, p.arg) for p in params]:
        return None  # (it does more than keep each parameter as the attribute of its name)
    defaults: list[ast.expr | None] = [None] * (len(init.args.args) - 1 - len(init.args.defaults)) \
        + list(init.args.defaults) + list(init.args.kw_defaults)
    for n, (_, how) in enumerate(kept):  # `x if x is not None else []`, `x or []`: the empty one by default
        if how is not None and how[1] is not None:
            if not (isinstance(defaults[n], ast.Constant) and defaults[n].value is None):  # type: ignore[union-attr]
                return None
            defaults[n] = how[1]
    first_default = next((n for n, d in enumerate(defaults) if d is not None), len(defaults))
    if any(d is None for d in defaults[first_default:]):
        return None  # (a field with no default after one with: a dataclass takes none such)
    given = _given(cls.name, [p.arg for p in init.args.args[1:]], trees)
    fields: list[str] = []
    factory = False
    for param, default in zip(params, defaults, strict=True):
        kind = ast.unparse(param.annotation) if param.annotation is not None else _kind(default) or \
            given.get(param.arg) or "object"
        if default is None:
            fields.append(f"{param.arg}: {kind}")
        elif type(default) in _FACTORIES and not getattr(default, "elts", getattr(default, "keys", [1])):
            fields.append(f"{param.arg}: {kind} = field(default_factory={_FACTORIES[type(default)]})")
            factory = True
        elif isinstance(default, ast.Constant):
            fields.append(f"{param.arg}: {kind} = {ast.unparse(default)}")
        else:
            return None
    if any("\\" in f or "\n" in f for f in fields) or init.end_lineno is None:
        return None
    lines = text.splitlines()
    indent = lines[init.lineno - 1][:init.col_offset]
    imported = "from dataclasses import dataclass" in text
    at = import_line(tree)
    names = "dataclass, field" if factory else "dataclass"
    first = [] if imported else [f"-e '{at}a\\from dataclasses import {names}'" if at
                                 else f"-e '1i\\from dataclasses import {names}\\n\\n'"]
    start = init.lineno
    fields_text = "\\n".join(indent + f for f in fields).replace("'", "'\"'\"'")  # (a quote, in the shell's words)
    return " ".join(["sed -i", *first, f"-e '{cls.lineno}i\\@dataclass'",
                     f"-e '{start},{init.end_lineno}c\\\\{fields_text}'", path])


def _kind(default: ast.expr | None) -> str | None:
    """The type a default says (1: int, 'a': str, []: list), None where it says none."""
    if isinstance(default, ast.Constant) and default.value is not None:
        return type(default.value).__name__
    return _FACTORIES.get(type(default)) if default is not None else None


def _given(name: str, params: list[str], trees: list[ast.Module]) -> dict[str, str]:
    """The type each parameter of `name`'s calls is given, where every call in `trees`
    that gives it a constant gives one of the same type."""
    seen: dict[str, set[str]] = {}
    for tree in trees:
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.func.id != name:
                continue
            pairs = list(zip(params, call.args, strict=False)) + [(k.arg, k.value) for k in call.keywords if k.arg]
            for param, value in pairs:
                kind = _kind(value)
                if kind is not None:
                    seen.setdefault(param, set()).add(kind)
    return {p: next(iter(k)) for p, k in seen.items() if len(k) == 1}


def _kept(value: ast.expr) -> tuple[str, ast.expr | None] | None:
    """The parameter an `__init__` line keeps (`self.x = x`: "x"), and the empty list,
    dict or set it keeps in its place when it is None (`x if x is not None else []`,
    `x or []`); None for any other value."""
    if isinstance(value, ast.Name):
        return value.id, None
    empty: ast.expr | None = None
    name: ast.expr | None = None
    if isinstance(value, ast.IfExp) and isinstance(value.test, ast.Compare) and len(value.test.ops) == 1 \
            and isinstance(value.test.ops[0], ast.IsNot) and isinstance(value.test.comparators[0], ast.Constant) \
            and value.test.comparators[0].value is None and ast.dump(value.test.left) == ast.dump(value.body):
        name, empty = value.body, value.orelse
    elif isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and len(value.values) == 2:
        name, empty = value.values
    if not isinstance(name, ast.Name) or type(empty) not in _FACTORIES \
            or getattr(empty, "elts", getattr(empty, "keys", [1])):
        return None
    return name.id, empty
