"""The whole command that answers which modules import each other, where a person asks
about a circular import (the ImportError of a partially initialised module, files that
import each other): the cycle found by Python's parser in the imports the workspace's
modules make when they load, not in the request's words.

Asked so, SmolLM2-135M read the script the request named and answered that "the module
is not imported", naming no file. The cycle is the shortest loop of module-level imports
among the workspace's own modules (an import inside a function runs later and closes no
loop), one through a file the request names where there is one; its import lines are
shown as they are written:

    grep -HnF -e 'from shop.prices import total' shop/cart.py && grep -HnF -e 'import shop.cart' shop/prices.py \\
      && echo 'These import each other: shop/cart.py, shop/prices.py (a circular import).'

(what it prints, each import line with its file, is where the answer begins). None where
no loop is found.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable, Iterable

from actors.runs.agent.small.files_of import PLAIN_PATH
from actors.runs.agent.small.slips import parsed

# A question of a circular import, or of modules that import each other.
_CYCLE = re.compile(r"\bcircular(?:\s+|-)?imports?\b|\bimport\s+(?:cycle|loop)s?\b|\bpartially\s+initiali[sz]ed\b|"
                    r"\bimport(?:s|ing)?\s+(?:each\s+other|one\s+another)\b|\bcyclic(?:al)?\s+imports?\b",
                    re.IGNORECASE)
# Python files looked at at most.
CYCLE_FILES = 200


def cycle_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]],
                   named: Iterable[str] = ()) -> dict[str, list[str]]:
    """The command showing the shortest loop of imports among the workspace's modules
    (`texts`: (path, text) of its files), through a file `named` where one is, where
    `asked` is of a circular import; none otherwise."""
    if not _CYCLE.search(asked):
        return {}
    files = {p: t for p, t in texts() if p.endswith(".py") and PLAIN_PATH.fullmatch(p)}
    if not files or len(files) > CYCLE_FILES:
        return {}
    modules = {_module(p): p for p in files}
    edges: dict[str, dict[str, str]] = {}  # path -> imported path -> the import's line
    for path, text in files.items():
        tree = parsed(text)
        if tree is None:
            continue
        lines = text.splitlines()
        for node in _loading(tree):
            for target in _targets(node, _module(path), path.endswith("__init__.py"), modules):
                if target != path and 0 < node.lineno <= len(lines):
                    edges.setdefault(path, {}).setdefault(target, lines[node.lineno - 1].strip())
    loops = {p: c for p in sorted(files) if (c := _shortest(p, edges))}
    through = [loops[p] for p in named if p in loops]  # (the script named may only start the loop's chain)
    loop = min(through or loops.values(), key=len, default=None)
    if loop is None:
        return {}
    pairs = zip(loop, loop[1:] + loop[:1], strict=True)
    shown = [f"grep -HnF -e {shlex.quote(edges[a][b])} {shlex.quote(a)}" for a, b in pairs]
    said = f"These import each other: {', '.join(loop)} (a circular import)."
    return {"grep": [" && ".join([*shown, f"echo {shlex.quote(said)}"])]}


def _module(path: str) -> str:
    """The dotted name the module at `path` is imported by (a package's by its folder)."""
    parts = path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _loading(tree: ast.Module) -> Iterable[ast.Import | ast.ImportFrom]:
    """The imports that run when the module loads: at its top level, or under an
    `if`/`try` there (not in a function, nor under `if TYPE_CHECKING`)."""
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop(0)
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.dump(node.test):
            todo += [*node.body, *node.orelse]
        elif isinstance(node, ast.Try):
            todo += [*node.body, *node.orelse, *node.finalbody, *(s for h in node.handlers for s in h.body)]


def _targets(node: ast.Import | ast.ImportFrom, module: str, package: bool, modules: dict[str, str]) -> list[str]:
    """The workspace's files the import `node` (in `module`) loads."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".") if package else module.split(".")[:-1]
            parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
            base = ".".join([*parts, *([base] if base else [])])
        names = [base, *(f"{base}.{a.name}" if base else a.name for a in node.names)]
    return list(dict.fromkeys(modules[n] for n in names if n in modules))


def _shortest(start: str, edges: dict[str, dict[str, str]]) -> list[str] | None:
    """The shortest loop of imports from `start` back to it (its files in order), None
    where there is none (a walk by breadth, so the first loop met is the shortest)."""
    paths = [[start]]
    seen = {start}
    while paths:
        longer = []
        for walk in paths:
            for nxt in edges.get(walk[-1], {}):
                if nxt == start:
                    return walk
                if nxt not in seen:
                    seen.add(nxt)
                    longer.append([*walk, nxt])
        paths = longer
    return None
