"""The whole command that mends a classic slip of Python code a person reports as a bug
without saying where or how: found by Python's parser in the code, not in the request's
words, so it holds for any wording of the report.

Told that a price came out wrong, or that something leaked from one call into the next,
SmolLM2-135M searched for the report's nouns and answered with a line it found, or
edited a line into its worked example's text. The slips below are the ones a reader of
Python spots on sight, each with one mend:

- a mutable default argument (`def add(item, into=[])`), shared by every call that
  leaves it out: `None`, and a new one made in the body;
- a value worked out and thrown away: `total * rate` on a line of its own (meant
  `total *= rate`), `name.strip()` (meant `name = name.strip()`), `count == 0` (meant
  `count = 0`);
- text joined to a number with `+` (a TypeError when it runs): the number made `str(…)`;
- the same name added twice in one sum (`base + fee + fee`): once;
- a list's `.sort()` or `.reverse()` kept as if it gave the list (it gives None):
  `sorted(…)`, `list(reversed(…))`;
- `is` or `is not` against a literal number or text (true only by chance): `==`, `!=`;
- the slips of names (name_slips.py: a name misspelt, a module never imported, `self.`
  left out) and of flow (flow_slips.py: a value never returned, a total started again
  in every turn of its loop, a function tested and not called) and of values
  (value_slips.py: a key misspelt, text typed in and met with a number).

A slip is mended only where the request reads as a report of something wrong and the
slip is the one its words point at: the file's path, the function it is in or the
names on its line share a word with the request (or the workspace has one module). None
where no slip fits, or more than one does and the words do not tell which:

    sed -i -e '4s/total \\* rate/total *= rate/' shop/bill.py && echo 'Mended shop/bill.py line 4: …'

(what it echoes is where the answer begins).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Collection, Iterable, Iterator

from actors.runs.agent.small.files_of import PLAIN_PATH, is_test, sed_pattern
from actors.runs.agent.small.flow_slips import flow_slip, values_used
from actors.runs.agent.small.name_slips import NameSlip, name_slips
from actors.runs.agent.small.slip_base import Slip, context, is_docstring, on_line, one_line, params, words
from actors.runs.agent.small.value_slips import value_slips

# A report of something wrong: a symptom, or a request to mend it.
_REPORT = re.compile(
    r"\b(?:bugs?|buggy|broken|wrong|weird|odd|crash\w*|blows?\s+up|errors?|\w+Error|raises|exceptions?|traceback|"
    r"fails?|failing|even\s+though|"
    r"(?:does|do|is|are)\s*n[o']?t\s+work\w*|not\s+working|still|twice|doubled?|meant\s+to|supposed\s+to|"
    r"should(?:n'?t)?\s+be|instead\s+of|too\s+(?:high|low|big|small|much|many|long|short)|fix|mend|repair|"
    r"sort\s+(?:it|this)\s*(?:out)?|track\s+(?:it\s+)?down|debug|one\s+short|stops?\s+(?:\w+\s+)?short|"
    r"never\s+(?:shows?|prints?|lists?|gets?|includes?|appears?|reaches?)|(?:is|are|goes|went)\s+missing|"
    r"(?:gets?|is|are)\s+(?:left|cut)\s+off)\b", re.IGNORECASE)
# A report that the code fails when it runs.
_CRASH = re.compile(r"\b(?:crash\w*|blows?\s+up|errors?|exceptions?|traceback|\w+Error|dies|"
                    r"(?:wo|ca|does|did)n'?t\s+run|fails?\s+to\s+run)\b", re.IGNORECASE)
# Words of a request that say nothing of where the slip is.
_PLAIN = frozenset(
    "the and you can for fix but when run one its too get out not why with that this have still meant like looks "
    "take look some idea weird bug them they into from what which where there here just also even every been does "
    "doesn done dont isnt keep keeps make made come comes came seems seem code file files script scripts function "
    "value values wrong right thing things work works working should would could please sort track down crash "
    "crashes blows error errors fails twice instead supposed never always stops short shows missing".split())
# Files looked at at most.
SLIP_FILES = 60
# Methods of a text that give a new one (the text itself is left as it was).
# (each with the numbers of arguments it takes)
_TEXT_METHODS: dict[str, tuple[int, ...]] = {
    "strip": (0, 1), "lstrip": (0, 1), "rstrip": (0, 1), "lower": (0,), "upper": (0,), "title": (0,),
    "capitalize": (0,), "casefold": (0,), "replace": (2, 3), "removeprefix": (1,), "removesuffix": (1,),
    "zfill": (1,), "center": (1, 2), "ljust": (1, 2), "rjust": (1, 2)}
# Calls that give a new list or value from their first argument, left as it was.
_NEW_FROM = frozenset({"sorted", "reversed"})
_OPS: dict[type[ast.operator], str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/",
                                        ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
_MUTABLE_CALLS = frozenset({"list", "dict", "set"})


def reports(asked: str) -> bool:
    """Whether the request `asked` reports something wrong (a symptom, or a mend asked)."""
    return _REPORT.search(asked) is not None


def slip_commands(asked: str, texts: Callable[[], Iterable[tuple[str, str]]],
                  named: Iterable[str] = ()) -> dict[str, list[str]]:
    """The whole command mending the one slip a report of a bug (`asked`) points at, in
    the Python files it names, else (none there: the code they run may be in another)
    all the workspace's (`texts`: (path, text) of each); none otherwise."""
    if not reports(asked):
        return {}
    names = set(named)
    files = [(p, t) for p, t in texts() if p.endswith(".py") and PLAIN_PATH.fullmatch(p)
             and not is_test(p)][:SLIP_FILES]
    trees = {p: parsed(t) for p, t in files}  # each file parsed once
    used = values_used(trees.values())
    found = [s for p, t in files if p in names for s in slips_in(p, t, used, trees[p])]
    if not found:
        found = [s for p, t in files for s in slips_in(p, t, used, trees[p])]
        if len([p for p, t in files if t.strip()]) > 1:  # of several modules, the slip the words point at
            said = words(asked) - _PLAIN
            crash = _CRASH.search(asked) is not None and sum(s.crashes for s in found) == 1
            found = [s for s in found if _shares(said, s.words) or crash and s.crashes]
    if len(found) != 1:
        return {}
    slip = found[0]
    told = f"Mended {slip.path} line {slip.line}: {slip.what}."
    if "'" in told:
        return {}
    return {"sed": [f"sed -i {' '.join(slip.edits)} {slip.path} && echo '{told}'"]}


def parsed(text: str) -> ast.Module | None:
    """The syntax tree of the Python `text`, None where it does not parse."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def slips_in(path: str, text: str, used: Collection[str] = (), tree: ast.Module | None = None) -> list[Slip]:
    """The slips of the Python file `path` (its `text`, its syntax tree `tree` where it
    was parsed already), one each where a line holds two (`used`: the functions whose
    calls' values the workspace uses)."""
    tree = tree if tree is not None else parsed(text)
    if tree is None:
        return []
    lines = text.splitlines()
    numbers = _numbers(tree)
    out: dict[int, Slip] = {}
    for node, func in _walk(tree, None):
        slip = _slip(node, func, path, text, lines, numbers) or flow_slip(node, func, tree, path, lines, used)
        if slip is not None and slip.line not in out:
            out[slip.line] = slip
    for named in [*name_slips(tree, text), *value_slips(tree, text)]:
        slip = _name_slip(named, path, lines)
        if slip is not None and slip.line not in out:
            out[slip.line] = slip
    return [out[n] for n in sorted(out)]


def _name_slip(named: NameSlip, path: str, lines: list[str]) -> Slip | None:
    """The Slip of a name slip (name_slips): its line written again, or a line put in."""
    around = context(path, named.func, named.names)
    if named.new_line:
        at = f"{named.line}a" if named.line else "1i"
        if "'" in named.new_line:
            return None
        return Slip(path, named.line + 1, named.what, (f"-e '{at}\\{named.new_line}'",), around, crashes=True)
    line = lines[named.line - 1] if 0 < named.line <= len(lines) else ""
    nth = line[:named.col].count(named.old) + 1
    return one_line(path, named.line, named.old, named.new, named.what, around, nth=nth, crashes=True)


def _slip(node: ast.AST, func: ast.FunctionDef | ast.AsyncFunctionDef | None, path: str, text: str,
          lines: list[str], numbers: set[str]) -> Slip | None:
    """The slip `node` is (in `func`, None at module level), None where it is none."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return _mutable_default(node, path, lines)
    fname = " ".join([func.name, *(a.arg for a in func.args.args)]) if func is not None else ""
    if isinstance(node, ast.Expr):
        new = _kept(node.value, text, func)
        old = ast.get_source_segment(text, node.value)
        if new is None or old is None:
            return None
        return on_line(path, node, old, new, "a value worked out and thrown away", fname)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        joined = _joined(node, text, numbers)
        mended = joined or _twice(node, text)
        old = ast.get_source_segment(text, node)
        if mended is None or old is None:
            return None
        return on_line(path, node, old, mended[0], mended[1], fname, crashes=joined is not None)
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.value, ast.Call):
        new = _in_place(node.value, text)
        old = ast.get_source_segment(text, node.value)
        if new is None or old is None:
            return None
        attr = node.value.func.attr if isinstance(node.value.func, ast.Attribute) else ""
        what = f"the None of .{attr}() kept as if it were the list"
        return on_line(path, node.value, old, new, what, fname)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Is | ast.IsNot) \
            and _literal(node.comparators[0]):
        old = ast.get_source_segment(text, node)
        left, right = ast.get_source_segment(text, node.left), ast.get_source_segment(text, node.comparators[0])
        if old is None or left is None or right is None:
            return None
        new = f"{left} {'==' if isinstance(node.ops[0], ast.Is) else '!='} {right}"
        return on_line(path, node, old, new, "`is` used to compare with a literal", fname)
    return None


def _mutable_default(func: ast.FunctionDef | ast.AsyncFunctionDef, path: str, lines: list[str]) -> Slip | None:
    """The mend of `func`'s one mutable default argument (`=[]`, `={}`, `=set()`): None
    in its place, and the first lines of its body making a new one."""
    args = func.args
    positional = [*args.posonlyargs, *args.args]  # (the defaults are the last of both)
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True)) + [
        (a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    mutable = [(a, d) for a, d in pairs if _mutable(d)]
    if len(mutable) != 1 or not func.body or func.lineno != getattr(mutable[0][1], "end_lineno", 0):
        return None
    arg, default = mutable[0]
    if not _leaks(func, arg.arg) or re.search(r"cache|memo|seen|registry", arg.arg, re.IGNORECASE):
        return None  # (kept on purpose between calls, or never changed: no slip)
    made = "[]" if isinstance(default, ast.List) else "{}" if isinstance(default, ast.Dict) else \
        f"{default.func.id}()" if isinstance(default, ast.Call) and isinstance(default.func, ast.Name) else None
    if made is None or isinstance(default, ast.List | ast.Dict | ast.Set) and (
            getattr(default, "elts", None) or getattr(default, "keys", None)):
        return None  # (a default with items in it: its items would be written again; left to the model)
    line = lines[func.lineno - 1]
    said = line[default.col_offset:default.end_col_offset] if default.end_col_offset is not None else ""
    first = func.body[0]
    after = first.end_lineno if is_docstring(first) else first.lineno - 1
    body = lines[first.lineno - 1]
    indent = body[:len(body) - len(body.lstrip())]
    if not said or after is None or indent.strip(" ") or "'" in said or first.lineno == func.lineno:
        return None  # (a body on the def's own line: none to put a line under)
    pattern = rf"\(\b{arg.arg}\s*\(:[^=]*\)\?=\s*\){sed_pattern(said)}"
    edits = (f"-e '{func.lineno}s/{pattern}/\\1None/'",
             f"-e '{after}a\\{indent}if {arg.arg} is None:\\n{indent}    {arg.arg} = {made}'")
    return Slip(path, func.lineno, f"a mutable default argument ({arg.arg}={said}) shared by every call", edits,
                context(path, func.name, [a.arg for a in args.args]))


def _leaks(func: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether `func` changes its parameter `name` (appends to it, sets an item of it)
    and hands it out (returns it, or keeps it elsewhere): the calls then share it."""
    def is_it(n: ast.AST) -> bool:
        return isinstance(n, ast.Name) and n.id == name
    changed = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and is_it(n.func.value)
                  and n.func.attr in ("append", "add", "update", "extend", "insert", "setdefault")
                  or isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) and is_it(n.value)
                  or isinstance(n, ast.AugAssign) and is_it(n.target) for n in ast.walk(func))
    handed = any(isinstance(n, ast.Return) and n.value is not None and any(map(is_it, ast.walk(n.value)))
                 or isinstance(n, ast.Assign) and is_it(n.value) for n in ast.walk(func))
    return changed and handed


def _kept(value: ast.expr, text: str, func: ast.FunctionDef | ast.AsyncFunctionDef | None) -> str | None:
    """What a statement of only `value` meant to write, where its value is worked out
    and thrown away: an arithmetic on a local name kept in it, a text method's result
    kept in the text's name, `==` meant as `=`; None where it is no such statement."""
    if isinstance(value, ast.BinOp) and type(value.op) in _OPS and isinstance(value.left, ast.Name) \
            and func is not None and value.left.id in _assigned(func):
        right = ast.get_source_segment(text, value.right)
        return None if right is None else f"{value.left.id} {_OPS[type(value.op)]}= {right}"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
            and len(value.args) in _TEXT_METHODS.get(value.func.attr, ()) and not value.keywords \
            and isinstance(value.func.value, ast.Name) and _is_text_name(value.func.value.id, func) \
            and (value.func.attr != "replace" or all(map(_is_text, value.args[:2]))):
        # (a path's `.replace(target)` moves the file; a window's `.title("…")` names it: statements of their own)
        call = ast.get_source_segment(text, value)
        return None if call is None else f"{value.func.value.id} = {call}"
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in _NEW_FROM \
            and len(value.args) == 1 and isinstance(value.args[0], ast.Name):
        call = ast.get_source_segment(text, value)
        wrap = "list(" + (call or "") + ")" if value.func.id == "reversed" else call
        return None if call is None else f"{value.args[0].id} = {wrap}"
    if isinstance(value, ast.Compare) and len(value.ops) == 1 and isinstance(value.ops[0], ast.Eq) \
            and isinstance(value.left, ast.Name):
        right = ast.get_source_segment(text, value.comparators[0])
        return None if right is None else f"{value.left.id} = {right}"
    return None


def _is_text_name(name: str, func: ast.FunctionDef | ast.AsyncFunctionDef | None) -> bool:
    """Whether `name`, in `func`, is a text: a parameter it never sets again, or set only
    to texts (literal, formatted, a text method's, `str(…)`, `input(…)`)."""
    if func is None:
        return False
    sets = [n.value for n in ast.walk(func) if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
    if not sets:
        return name in params(func)
    return all(_is_text(v) or isinstance(v, ast.Call) and (
        isinstance(v.func, ast.Name) and v.func.id in ("str", "input")
        or isinstance(v.func, ast.Attribute) and v.func.attr in _TEXT_METHODS) for v in sets)


def _joined(node: ast.BinOp, text: str, numbers: set[str]) -> tuple[str, str] | None:
    """`text + number` (or `number + text`) with the number made `str(…)`, and what it
    was; None where neither side is text and the other a number."""
    left, right = node.left, node.right
    if _is_text(left) and _is_number(right, numbers):
        side, other = right, ast.get_source_segment(text, left)
        said = ast.get_source_segment(text, side)
        return None if said is None or other is None else (f"{other} + str({said})", "text joined to a number")
    if _is_number(left, numbers) and _is_text(right):
        said, other = ast.get_source_segment(text, left), ast.get_source_segment(text, right)
        return None if said is None or other is None else (f"str({said}) + {other}", "text joined to a number")
    return None


def _twice(node: ast.BinOp, text: str) -> tuple[str, str] | None:
    """The sum `node` with a name it adds twice added once (`a + b + b`: `a + b`), where
    it adds names only, at least two of them other; None otherwise."""
    terms = list(_terms(node))
    if terms is None or any(not isinstance(t, ast.Name) for t in terms):
        return None
    names = [t.id for t in terms if isinstance(t, ast.Name)]
    twice = [n for n in dict.fromkeys(names) if names.count(n) == 2]
    if len(twice) != 1 or len(set(names)) < 2 or len(names) != len(set(names)) + 1:
        return None
    if not any(a == b == twice[0] for a, b in zip(names, names[1:], strict=False)):
        return None  # (`mark + text + mark`: a wrapping, not a sum)
    kept = list(dict.fromkeys(names))
    return " + ".join(kept), f"{twice[0]} added twice"


def _terms(node: ast.expr) -> Iterator[ast.expr]:
    """The terms of a chain of `+` (`a + b + c`: a, b, c)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        yield from _terms(node.left)
        yield from _terms(node.right)
    else:
        yield node


def _in_place(call: ast.Call, text: str) -> str | None:
    """`x.sort(…)` as `sorted(x, …)`, `x.reverse()` as `list(reversed(x))`; None for
    another call."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in ("sort", "reverse"):
        return None
    owner = ast.get_source_segment(text, call.func.value)
    args = [ast.get_source_segment(text, a) for a in [*call.args, *call.keywords]]
    if owner is None or any(a is None for a in args) or call.func.attr == "reverse" and args:
        return None
    if call.func.attr == "reverse":
        return f"list(reversed({owner}))"
    return f"sorted({', '.join([owner, *(a for a in args if a)])})"


def _walk(node: ast.AST, func: ast.FunctionDef | ast.AsyncFunctionDef | None
          ) -> Iterator[tuple[ast.AST, ast.FunctionDef | ast.AsyncFunctionDef | None]]:
    """Every node under `node`, with the function it is in."""
    for child in ast.iter_child_nodes(node):
        yield child, func
        inner = child if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else func
        yield from _walk(child, inner)


def _numbers(tree: ast.Module) -> set[str]:
    """The module-level names bound once, to a number (`PICKS = 48`)."""
    bound: dict[str, int] = {}
    numeric: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    bound[t.id] = bound.get(t.id, 0) + 1
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and _is_number(node.value, set()):
            numeric.add(node.targets[0].id)
    return {n for n in numeric if bound.get(n) == 1}


def _is_number(node: ast.expr, numbers: set[str]) -> bool:
    """Whether `node` is a number: a literal one, a name bound to one, `len(…)`."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.Name):
        return node.id in numbers
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"


def _is_text(node: ast.expr) -> bool:
    """Whether `node` is a literal text (plain or formatted)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, str) or isinstance(node, ast.JoinedStr)


def _literal(node: ast.expr) -> bool:
    """Whether `node` is a literal number or text (not None, True or False)."""
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bytes) \
        and not isinstance(node.value, bool)


def _mutable(node: ast.expr | None) -> bool:
    """Whether a default is a new list, dict or set (shared by every call)."""
    return isinstance(node, ast.List | ast.Dict | ast.Set) or isinstance(node, ast.Call) \
        and isinstance(node.func, ast.Name) and node.func.id in _MUTABLE_CALLS and not node.args and not node.keywords


def _assigned(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The names `func` binds (its parameters, what it assigns)."""
    names = params(func)
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _shares(said: frozenset[str], context: frozenset[str]) -> bool:
    """Whether a request's words and a slip's share one (a word of four letters or more
    by its first five, as "prices" and "price")."""
    for w in said:
        for c in context:
            if w == c or len(w) >= 4 and len(c) >= 4 and w[:5] == c[:5]:
                return True
    return False
