"""Slips of names that make Python code fail when it runs (a NameError, an
AttributeError), found by reading which names a module binds (slips.py mends them):

- a name used that nothing binds, one letter or two from one that is bound
  (`totl` where `total` is): that one;
- a standard module used (`math.sqrt`) and never imported: `import math` at the top;
- in a method, a name nothing binds that the class keeps on `self` (`count` where
  `self.count` is set): `self.count`;
- in a method, `self.speeed` where the class sets `self.speed` and no `speeed`: that one.

A module that imports `*`, or a class made from another (its names may be the
other's), is left alone: what it binds cannot all be read here.
"""

from __future__ import annotations

import ast
import difflib
import re
import sys
from collections.abc import Iterator

import attrs

from actors.runs.agent.small.names_of import BUILTINS, bound_names, star_imported
from actors.runs.agent.small.slip_base import is_docstring

# How near a name must be to the one meant (difflib's ratio).
NEAR = 0.75


@attrs.frozen
class NameSlip:
    """A name slip: its line, what it is, where on the line the part to write again
    begins (`col`) and how (`old`, `new`; `new_line` for a line put in after `line`
    instead), the names and function around it."""

    line: int
    what: str
    col: int = 0
    old: str = ""
    new: str = ""
    new_line: str = ""
    names: tuple[str, ...] = ()
    func: str = ""


def name_slips(tree: ast.Module, text: str) -> list[NameSlip]:
    """The name slips of the module `tree` (its `text`)."""
    if star_imported(tree):
        return []
    bound = bound_names(tree)
    lines = text.splitlines()
    out: list[NameSlip] = []
    missing: dict[str, int] = {}
    for node, cls, func in _scoped(tree, None, None):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            slip = _unbound(node, cls, func, bound, lines)
            if slip is not None:
                out.append(slip)
            elif node.id in sys.stdlib_module_names and _used_as_module(node, tree):
                missing.setdefault(node.id, node.lineno)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and cls is not None \
                and func is not None and isinstance(node.value, ast.Name) and node.value.id == _self(func):
            slip = _attribute(node, cls, func, lines)
            if slip is not None:
                out.append(slip)
    if len(missing) == 1:
        name, line = next(iter(missing.items()))
        out.append(NameSlip(import_line(tree), f"{name} used and never imported", new_line=f"import {name}",
                            names=(name,), func=_func_at(tree, line)))
    return out


def _unbound(node: ast.Name, cls: ast.ClassDef | None, func: ast.FunctionDef | ast.AsyncFunctionDef | None,
             bound: set[str], lines: list[str]) -> NameSlip | None:
    """The mend of a name nothing binds: `self.` before it where the class keeps it on
    self, else the one bound name it is a slip of; None where there is none."""
    line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
    said = line[node.col_offset:node.end_col_offset] if node.end_col_offset is not None else ""
    fname = func.name if func is not None else ""
    if said != node.id or node.lineno != node.end_lineno:
        return None
    if cls is not None and func is not None and _self(func) and node.id in _kept_on_self(cls, _self(func)):
        return NameSlip(node.lineno, f"{node.id} used without {_self(func)}.", node.col_offset, node.id,
                        f"{_self(func)}.{node.id}", names=(node.id, cls.name), func=fname)
    near = difflib.get_close_matches(node.id, sorted(bound - BUILTINS), n=2, cutoff=NEAR)
    if len(near) != 1 or node.id in sys.stdlib_module_names or _times(node.id, lines) != 1:
        return None  # (a name written more than once is meant: it is bound where this cannot see)
    return NameSlip(node.lineno, f"{node.id} is no name of the code ({near[0]} is)", node.col_offset,
                    node.id, near[0], names=(node.id, near[0]), func=fname)


def _attribute(node: ast.Attribute, cls: ast.ClassDef, func: ast.FunctionDef | ast.AsyncFunctionDef,
               lines: list[str]) -> NameSlip | None:
    """The mend of `self.<name>` where the class has no such name and one near it."""
    if cls.bases or cls.keywords or node.lineno != node.end_lineno or any(
            isinstance(n, ast.Raise) and "NotImplementedError" in ast.dump(n) for n in ast.walk(cls)):
        return None  # (made from another class, or made to be made from: its names may be another's)
    me = _self(func)
    has = _kept_on_self(cls, me) | {n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef
                                                                         | ast.ClassDef)} \
        | {t.id for n in cls.body if isinstance(n, ast.Assign | ast.AnnAssign)
           for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    if node.attr in has or node.attr.startswith("__") or any(isinstance(d, ast.Name) and d.id == "dataclass"
                                                             or isinstance(d, ast.Call) for d in cls.decorator_list):
        return None
    near = difflib.get_close_matches(node.attr, sorted(has), n=2, cutoff=NEAR)
    line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
    old = f"{me}.{node.attr}"
    if len(near) != 1 or old not in line or _times(node.attr, lines) != 1:
        return None  # (a name written more than once is meant: a class made from this one may set it)
    return NameSlip(node.lineno, f"{old} is no name of the class ({me}.{near[0]} is)", node.col_offset,
                    old, f"{me}.{near[0]}", names=(node.attr, near[0], cls.name), func=func.name)


def _scoped(node: ast.AST, cls: ast.ClassDef | None, func: ast.FunctionDef | ast.AsyncFunctionDef | None
            ) -> Iterator[tuple[ast.AST, ast.ClassDef | None, ast.FunctionDef | ast.AsyncFunctionDef | None]]:
    """Every node under `node`, with the class whose method it is in and that method."""
    for child in ast.iter_child_nodes(node):
        yield child, cls, func
        if isinstance(child, ast.ClassDef):
            yield from _scoped(child, child, None)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _scoped(child, cls if func is None else None, child)
        else:
            yield from _scoped(child, cls, func)


def _self(func: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """A method's first parameter's name (`self`), "" where it has none or is static."""
    if any(isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in func.decorator_list):
        return ""
    return func.args.args[0].arg if func.args.args else ""


def _kept_on_self(cls: ast.ClassDef, me: str) -> set[str]:
    """The names the class's methods set on `me` (`self.count = …`)."""
    return {t.attr for n in ast.walk(cls) for t in _targets(n)
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me}


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    return []


def _used_as_module(node: ast.Name, tree: ast.Module) -> bool:
    """Whether the name is used as a module is (`math.sqrt`), there and nowhere bound."""
    return any(isinstance(n, ast.Attribute) and n.value is node for n in ast.walk(tree))


def import_line(tree: ast.Module) -> int:
    """The line after which an import goes: after the docstring and the imports at the
    top (0: the first line)."""
    after = 0
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom) or node is tree.body[0] and is_docstring(node):
            after = node.end_lineno or node.lineno
        else:
            break
    return after


def _func_at(tree: ast.Module, line: int) -> str:
    """The name of the function that holds `line`, "" at module level."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.lineno <= line <= (node.end_lineno or 0):
            return node.name
    return ""



def _times(name: str, lines: list[str]) -> int:
    """How many times `name` is written in the module, as a whole word."""
    said = re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")
    return sum(len(said.findall(line)) for line in lines)
