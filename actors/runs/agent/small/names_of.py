"""Which names a Python module binds, and which it uses that nothing binds: read by the
name slips (name_slips.py) and by the guard that keeps a small model's edit from
leaving a name undefined (guards.break_refused)."""

from __future__ import annotations

import ast
import builtins

# The names every module has without binding them.
BUILTINS = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__path__", "__package__",
                                       "__builtins__", "__loader__", "__annotations__", "__dict__"}


def bound_names(tree: ast.Module) -> set[str]:
    """Every name the module binds anywhere (assigned, defined, imported, a parameter, a
    loop's, a handler's), and the built-in ones."""
    names = set(BUILTINS)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            names.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


def star_imported(tree: ast.Module) -> bool:
    """Whether the module imports `*` (then what it binds cannot all be read here)."""
    return any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in ast.walk(tree))


def unbound_names(tree: ast.Module) -> dict[str, int]:
    """The names the module uses that nothing in it binds, each with the first line that
    uses it; none for a module that imports `*`. Every scope is read as one (a name bound
    anywhere counts as bound), so what this finds fails at run time wherever it runs."""
    if star_imported(tree):
        return {}
    bound = bound_names(tree)
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
            out[node.id] = min(out.get(node.id, node.lineno), node.lineno)
    return out
