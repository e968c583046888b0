"""Slips of a program's flow (slips.py mends them): a function that works out a value
and never returns it, or returns its parameter instead; a total set back to its start in
every turn of the loop that adds to it; a list changed while a loop walks it (the loop
walks a copy); a loop whose every turn returns (`if found: return True` / `else: return
False`: only the first item is ever looked at; the second return goes after the loop);
a function tested as if called (`if ready:`); a function named for one operation that
does another (`def add(a, b): return a - b`); a loop over a list's places that stops one
short (`for i in range(len(xs) - 1)` whose turns take only `xs[i]`: the last is never
reached)."""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterable

from actors.runs.agent.small.slip_base import Slip, context, one_line, params


def flow_slip(node: ast.AST, func: ast.FunctionDef | ast.AsyncFunctionDef | None, tree: ast.Module, path: str,
               lines: list[str], used: Collection[str]) -> Slip | None:
    """The slip of the code's flow `node` is: a function that works out a value and
    never returns it (its callers use what it gives), or returns its parameter in place
    of what it worked out from it; a total set back to its start in every turn of the
    loop that adds to it; a list changed by the loop that walks it; a loop that returns
    on its first turn whatever it finds; a function tested as if called (`if ready:`)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return (_no_return(node, path, lines) if node.name in used else None) or _param_returned(node, path) \
            or _op_unlike_name(node, path, lines)
    scope: ast.AST = func if func is not None else tree
    fname = func.name if func is not None else ""
    if isinstance(node, ast.For):
        slip = _reset_in_loop(node, scope, path, lines, fname) or _changed_while_looped(node, path, lines, fname) \
            or _one_short(node, scope, path, lines, fname)
        if slip is not None:
            return slip
        return _returns_in_loop(node, func, path, lines) if func is not None and node is func.body[-1] else None
    if isinstance(node, ast.While):
        slip = _reset_in_loop(node, scope, path, lines, fname)
        if slip is not None:
            return slip
    if isinstance(node, ast.If | ast.While | ast.IfExp):
        test = node.test.operand if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) \
            else node.test
        own = set() if func is None else params(func)
        if isinstance(test, ast.Name) and test.id in _functions(tree) - own and test.lineno == test.end_lineno:
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
        last.target if isinstance(last, ast.AugAssign) else None
    end = last.end_lineno or last.lineno
    outer = {n for g in ast.walk(func) if isinstance(g, ast.Global | ast.Nonlocal) for n in g.names}
    own = params(func)
    if not isinstance(target, ast.Name) or target.id == "_" or target.id in outer | own \
            or last.lineno == func.lineno or end > len(lines):
        return None  # (a global's or a parameter's new value is kept where it is)
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
        adders = {id(n.func.value) for n in ast.walk(loop) if isinstance(n, ast.Call)
                  and isinstance(n.func, ast.Attribute) and n.func.attr in ("append", "add")}
        inside = any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id == name
                     and id(n) not in adders for n in ast.walk(loop))
        stops = any(isinstance(n, ast.Break) for n in ast.walk(loop))
        if not adds or not after or before or inside or stops:
            continue  # (read in each turn, or the loop stops at the turn it wants: a start for each turn, on purpose)
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


def values_used(trees: Iterable[ast.Module | None]) -> set[str]:
    """The names of the functions whose calls' values some module uses (not only calls);
    `trees`: the modules' syntax trees (None for one that does not parse)."""
    used: set[str] = set()
    for tree in trees:
        if tree is None:
            continue
        bare = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and id(n) not in bare:
                used.add(n.func.id if isinstance(n.func, ast.Name) else n.func.attr
                         if isinstance(n.func, ast.Attribute) else "")
    return used


def _param_returned(func: ast.FunctionDef | ast.AsyncFunctionDef, path: str) -> Slip | None:
    """`return <the local>` where a function ends returning its parameter, and the one
    local it worked out from that parameter is never used."""
    last = func.body[-1] if func.body else None
    own = params(func)
    if not isinstance(last, ast.Return) or not isinstance(last.value, ast.Name) or last.value.id not in own \
            or last.lineno != last.end_lineno:
        return None
    param = last.value.id
    loads = [n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
    made = [t.id for stmt in func.body[:-1] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            for t in stmt.targets if isinstance(t, ast.Name) and t.id not in own and loads.count(t.id) == 0
            and any(isinstance(n, ast.Name) and n.id == param for n in ast.walk(stmt.value))]
    if len(made) != 1:
        return None
    return one_line(path, last.lineno, f"return {param}", f"return {made[0]}",
                    f"{func.name} returns {param} as it was, not {made[0]}", context(path, func.name, [param, made[0]]))


def _changed_while_looped(loop: ast.For, path: str, lines: list[str], fname: str) -> Slip | None:
    """The loop walks a copy of the list (`list(xs)`) where its body takes from or adds
    to the list it walks (items skipped, or a loop without end)."""
    if not isinstance(loop.iter, ast.Name) or loop.iter.lineno != loop.lineno or loop.iter.id in ("self", "cls"):
        return None  # (an object that walks itself may keep what it walks apart)
    name = loop.iter.id
    changes = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                  and n.func.attr in ("remove", "pop", "clear")
                  and isinstance(n.func.value, ast.Name) and n.func.value.id == name
                  or isinstance(n, ast.Delete) and any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                                                       and t.value.id == name for t in n.targets)
                  for stmt in loop.body for n in ast.walk(stmt))
    if not changes or any(isinstance(n, ast.Break | ast.Return) for stmt in loop.body for n in ast.walk(stmt)):
        return None  # (a loop that stops once it changed the list walks no further)
    head = lines[loop.lineno - 1]
    nth = head[:loop.iter.col_offset].count(name) + 1
    return one_line(path, loop.lineno, name, f"list({name})", f"{name} changed while the loop walks it",
                    context(path, fname, [name]), nth=nth)


def _one_short(loop: ast.For, scope: ast.AST, path: str, lines: list[str], fname: str) -> Slip | None:
    """The loop `for i in range(len(xs) - 1)` (or `range(0, len(xs) - 1)`) walks the
    places of `xs` and stops one short, where its turns take `xs[i]` and never a
    neighbour (`xs[i + 1]`), and nothing after it takes the last (`xs[-1]`, `xs[i]`):
    those are why a loop stops short on purpose. Mended: `len(xs)`."""
    it = loop.iter
    if not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
            and not it.keywords and isinstance(loop.target, ast.Name)) or not 1 <= len(it.args) <= 2:
        return None
    if len(it.args) == 2 and not (isinstance(it.args[0], ast.Constant) and it.args[0].value == 0):
        return None
    stop = it.args[-1]
    if not (isinstance(stop, ast.BinOp) and isinstance(stop.op, ast.Sub) and isinstance(stop.right, ast.Constant)
            and stop.right.value == 1 and isinstance(stop.left, ast.Call) and isinstance(stop.left.func, ast.Name)
            and stop.left.func.id == "len" and len(stop.left.args) == 1 and isinstance(stop.left.args[0], ast.Name)):
        return None
    walked, place = stop.left.args[0].id, loop.target.id
    taken = [n.slice for stmt in loop.body for n in ast.walk(stmt)
             if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == walked]
    if not taken or not all(isinstance(t, ast.Name) and t.id == place for t in taken):
        return None  # (a neighbour taken, or a place of its own: it stops short on purpose)
    inside = {id(n) for stmt in loop.body for n in ast.walk(stmt)}
    if any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == walked
           and id(n) not in inside for n in ast.walk(scope)):
        return None  # (the last taken apart: `print(xs[-1])` after the loop)
    if stop.lineno != stop.end_lineno or stop.end_col_offset is None or not 0 < stop.lineno <= len(lines):
        return None
    old = lines[stop.lineno - 1].encode()[stop.col_offset:stop.end_col_offset].decode(errors="replace")
    return one_line(path, stop.lineno, old, f"len({walked})",
                    f"the loop over {walked} stopped one short of its last", context(path, fname, [walked, place]))


def _returns_in_loop(loop: ast.For, func: ast.FunctionDef | ast.AsyncFunctionDef, path: str, lines: list[str]
                     ) -> Slip | None:
    """The return that ends every turn of a function's last loop moved after it: the loop
    returned on its first item, found or not."""
    body = loop.body
    last = body[-1]
    if loop.orelse or not isinstance(last, ast.If | ast.Return):
        return None
    if isinstance(last, ast.If):  # if …: return A / else: return B
        if len(last.orelse) != 1 or not isinstance(last.orelse[0], ast.Return) or not last.body \
                or not isinstance(last.body[-1], ast.Return):
            return None
        ret, els = last.orelse[0], last.orelse[0].lineno - 1
        if els < 1 or lines[els - 1].strip() != "else:":
            return None
    else:  # if …: return A / return B
        if len(body) < 2 or not isinstance(body[-2], ast.If) or not body[-2].body \
                or not isinstance(body[-2].body[-1], ast.Return) or body[-2].orelse:
            return None
        ret, els = last, 0
    if ret.lineno != ret.end_lineno:
        return None
    said = lines[ret.lineno - 1].strip()
    head = lines[loop.lineno - 1]
    indent = head[:len(head) - len(head.lstrip())]
    if indent.strip(" ") or "'" in said or "\\" in said:
        return None
    edits = ((f"-e '{els}d'",) if els else ()) + (f"-e '{ret.lineno}c\\{indent}{said}'",)
    return Slip(path, ret.lineno, f"the loop of {func.name} returns on its first item", edits,
                context(path, func.name, [n.id for n in ast.walk(loop.iter) if isinstance(n, ast.Name)]))



# The operation a function's name says, by the words it is made of.
_NAMED_OPS: dict[str, type[ast.operator]] = {
    "add": ast.Add, "plus": ast.Add, "sum": ast.Add, "sub": ast.Sub, "subtract": ast.Sub, "minus": ast.Sub,
    "mul": ast.Mult, "multiply": ast.Mult, "times": ast.Mult, "product": ast.Mult, "div": ast.Div,
    "divide": ast.Div}
_OP_SIGNS: dict[type[ast.operator], str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def _op_unlike_name(func: ast.FunctionDef | ast.AsyncFunctionDef, path: str, lines: list[str]) -> Slip | None:
    """The operator of a function named for one operation (`add`, `multiply`) whose one
    statement returns its two parameters joined by another (`return a - b`): the named one."""
    said = [_NAMED_OPS[w] for w in func.name.lower().split("_") if w in _NAMED_OPS]
    pair = [a.arg for a in func.args.args]
    body = [s for s in func.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(set(said)) != 1 or len(pair) != 2 or len(body) != 1 or not isinstance(body[0], ast.Return):
        return None
    value = body[0].value
    if not isinstance(value, ast.BinOp) or type(value.op) not in _OP_SIGNS or isinstance(value.op, said[0]) \
            or not all(isinstance(s, ast.Name) and s.id in pair for s in (value.left, value.right)) \
            or value.lineno != value.end_lineno:
        return None
    left, right = value.left.id, value.right.id  # type: ignore[attr-defined]
    old, new = f"{left} {_OP_SIGNS[type(value.op)]} {right}", f"{left} {_OP_SIGNS[said[0]]} {right}"
    if old not in lines[value.lineno - 1]:
        return None
    what = f"{func.name} does {_OP_SIGNS[type(value.op)]}, not what its name says"
    return one_line(path, value.lineno, old, new, what, context(path, func.name, pair))
