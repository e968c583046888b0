"""Slips of a program's flow (slips.py mends them): a function that works out a value
and never returns it, a total set back to its start in every turn of the loop that adds
to it, a function tested as if called (`if ready:`)."""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable

from actors.runs.agent.small.slip_base import Slip, context, one_line


def flow_slip(node: ast.AST, func: ast.FunctionDef | ast.AsyncFunctionDef | None, tree: ast.Module, path: str,
               lines: list[str], used: Collection[str]) -> Slip | None:
    """The slip of the code's flow `node` is: a function that works out a value and
    never returns it (its callers use what it gives); a total set back to its start in
    every turn of the loop that adds to it; a function tested as if called (`if ready:`)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in used:
        return _no_return(node, path, lines)
    scope: ast.AST = func if func is not None else tree
    if isinstance(node, ast.For | ast.While):
        return _reset_in_loop(node, scope, path, lines, func.name if func is not None else "")
    if isinstance(node, ast.If | ast.While | ast.IfExp):
        test = node.test.operand if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) \
            else node.test
        if isinstance(test, ast.Name) and test.id in _functions(tree) and test.lineno == test.end_lineno:
            line = lines[test.lineno - 1] if test.lineno <= len(lines) else ""
            nth = line[:test.col_offset].count(test.id) + 1
            return one_line(path, test.lineno, test.id, f"{test.id}()", f"the function {test.id} tested, not called",
                             context(path, func.name if func is not None else "", [test.id]), nth=nth)
    return None


def _no_return(func: ast.FunctionDef | ast.AsyncFunctionDef, path: str, lines: list[str]) -> Slip | None:
    """`return <name>` after a function's last line, where it ends keeping a value in a
    name and returns nothing."""
    if any(isinstance(n, ast.Return) and n.value is not None or isinstance(n, ast.Yield | ast.YieldFrom)
           for n in ast.walk(func)):
        return None
    last = func.body[-1]
    target = last.targets[0] if isinstance(last, ast.Assign) and len(last.targets) == 1 else \
        last.target if isinstance(last, ast.AugAssign | ast.AnnAssign) else None
    end = last.end_lineno or last.lineno
    if not isinstance(target, ast.Name) or target.id == "_" or last.lineno == func.lineno or end > len(lines):
        return None
    text = lines[last.lineno - 1]
    indent = text[:len(text) - len(text.lstrip())]
    if indent.strip(" "):
        return None
    return Slip(path, end, f"{func.name} works out {target.id} and never returns it",
                (f"-e '{end}a\\{indent}return {target.id}'",), context(path, func.name, [target.id]))


def _reset_in_loop(loop: ast.For | ast.While, scope: ast.AST, path: str, lines: list[str], fname: str
                   ) -> Slip | None:
    """The start of a total moved from inside the loop that adds to it to before it,
    where the total is read after the loop and nowhere set before it."""
    for stmt in loop.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and _empty(stmt.value) and stmt.lineno == stmt.end_lineno):
            continue
        name = stmt.targets[0].id
        adds = any(isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name) and n.target.id == name
                   or isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("append", "add")
                   and isinstance(n.func.value, ast.Name) and n.func.value.id == name for n in ast.walk(loop))
        end = loop.end_lineno or loop.lineno
        after = any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id == name and n.lineno > end
                    for n in ast.walk(scope))
        before = any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id == name
                     and n.lineno < loop.lineno for n in ast.walk(scope))
        if not adds or not after or before:
            continue
        head = lines[loop.lineno - 1]
        indent = head[:len(head) - len(head.lstrip())]
        said = lines[stmt.lineno - 1].strip()
        if indent.strip(" ") or "'" in said or "\\" in said:
            return None
        return Slip(path, stmt.lineno, f"{name} set back to its start in every turn of the loop",
                    (f"-e '{stmt.lineno}d'", f"-e '{loop.lineno}i\\{indent}{said}'"),
                    context(path, fname, [name]))
    return None


def _empty(node: ast.expr) -> bool:
    """Whether `node` is a start of a total: 0, 0.0, "", [], {}."""
    return isinstance(node, ast.Constant) and node.value in (0, "") and not isinstance(node.value, bool) \
        or isinstance(node, ast.List | ast.Dict) and not getattr(node, "elts", None) and not getattr(node, "keys", None)


def _functions(tree: ast.Module) -> set[str]:
    """The module's functions that take no argument they need and whose name nothing else binds."""
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef)
            and len(n.args.args) + len(n.args.posonlyargs) == len(n.args.defaults)]
    stored = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return {d.name for d in defs} - stored


def values_used(texts: Iterable[str]) -> set[str]:
    """The names of the functions whose calls' values some file uses (not only calls)."""
    used: set[str] = set()
    for text in texts:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        bare = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and id(n) not in bare:
                used.add(n.func.id if isinstance(n.func, ast.Name) else n.func.attr
                         if isinstance(n.func, ast.Attribute) else "")
    return used
