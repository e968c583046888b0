"""Slips of values that make Python code fail when it runs (slips.py mends them):

- a key read once, a letter or two off a key the code sets (`row['nmae']` where the dict
  is made with `'name'`): a KeyError; that key;
- text typed in or given on the command line (`input(…)`, `sys.argv[1]`) kept as text and
  compared with, or worked out against, a number: a TypeError; made a number where it is
  read (`int(input(…))`, `float(…)` where the number it meets is one).
"""

from __future__ import annotations

import ast
import difflib
import re

from actors.runs.agent.small.name_slips import NEAR, NameSlip

_NUMBER_OPS = (ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Pow)


def value_slips(tree: ast.Module, text: str) -> list[NameSlip]:
    """The value slips of the module `tree` (its `text`)."""
    return [*_key_slips(tree, text), *_typed_in(tree, text)]


def _key_slips(tree: ast.Module, text: str) -> list[NameSlip]:
    """A key read once from a dict the code makes (a name it sets to a dict, or an item of
    a list of dicts it loops over), a letter or two off a key the code gives that dict."""
    keys: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            keys.setdefault(node.targets[0].id, set()).update(_keys_of(node.value))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) \
                and _text_key(node) is not None:
            keys.setdefault(node.value.id, set()).add(_text_key(node) or "")
    for node in ast.walk(tree):  # (a dict filled by other means: its keys are not all known here)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and isinstance(node.func.value, ast.Name) \
                and node.func.attr in ("update", "setdefault", "fromkeys"):
            keys.pop(node.func.value.id, None)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            keys.pop(node.target.id, None)
    for node in ast.walk(tree):  # (an item of a list of dicts: the keys of the list's dicts)
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name) and isinstance(node.iter, ast.Name) \
                and node.iter.id in keys and node.target.id not in keys:
            keys[node.target.id] = set(keys[node.iter.id])
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript) or not isinstance(node.ctx, ast.Load) \
                or not isinstance(node.value, ast.Name) or not keys.get(node.value.id):
            continue
        key, known = _text_key(node), keys[node.value.id]
        if key is None or key in known or _quoted_times(key, text) != 1:
            continue
        near = difflib.get_close_matches(key, sorted(known), n=2, cutoff=NEAR)
        said = ast.get_source_segment(text, node.slice) or ""
        if len(near) != 1 or node.lineno != node.end_lineno or said[:1] not in ("'", '"'):
            continue
        q = said[0]
        out.append(NameSlip(node.lineno, f"the key {key} is set nowhere ({near[0]} is)", node.slice.col_offset,
                            said, f"{q}{near[0]}{q}", names=(key, near[0], node.value.id)))
    return out


def _keys_of(value: ast.expr) -> set[str]:
    """The text keys a dict literal, `dict(…)`, or a list of dict literals gives."""
    if isinstance(value, ast.Dict):
        return {k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict":
        return {k.arg for k in value.keywords if k.arg}
    if isinstance(value, ast.List | ast.Tuple):
        return set().union(*(_keys_of(e) for e in value.elts if isinstance(e, ast.Dict)))
    return set()


def _typed_in(tree: ast.Module, text: str) -> list[NameSlip]:
    """Text read in and met with a number: made a number where it is read."""
    reads: dict[str, list[ast.Assign]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            reads.setdefault(node.targets[0].id, []).append(node)
    out = []
    for name, sets in reads.items():
        if len(sets) != 1 or not _read_in(sets[0].value):
            continue
        kind = _number_met(tree, name)
        value = sets[0].value
        said = ast.get_source_segment(text, value) or ""
        if kind is None or not said or value.lineno != value.end_lineno:
            continue
        out.append(NameSlip(value.lineno, f"{name} is text and is met with a number", value.col_offset, said,
                            f"{kind}({said})", names=(name,)))
    return out


def _text_key(node: ast.Subscript) -> str | None:
    """The text key of `x['key']`, None for another subscript."""
    key = node.slice
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def _quoted_times(key: str, text: str) -> int:
    """How many times `key` is written in quotes in `text`."""
    return len(re.findall(rf"""(['"]){re.escape(key)}\1""", text))


def _read_in(value: ast.expr) -> bool:
    """Whether `value` is text typed in (`input(…)`) or given (`sys.argv[i]`), as it is."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "input":
        return True
    return isinstance(value, ast.Subscript) and isinstance(value.value, ast.Attribute) \
        and value.value.attr == "argv" and isinstance(value.value.value, ast.Name) and value.value.value.id == "sys"


def _number_met(tree: ast.Module, name: str) -> str | None:
    """"int" or "float" where `name` is compared with, or worked out against, a literal
    number (a float: "float"); None where it never is, or is also used as text."""
    kind = None
    for node in ast.walk(tree):
        others: list[ast.expr] = []
        if isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.Lt | ast.LtE | ast.Gt | ast.GtE):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Name) and s.id == name for s in sides):
                others = [s for s in sides if not (isinstance(s, ast.Name) and s.id == name)]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _NUMBER_OPS):
            if any(isinstance(s, ast.Name) and s.id == name for s in (node.left, node.right)):
                others = [s for s in (node.left, node.right) if not (isinstance(s, ast.Name) and s.id == name)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("int", "float") \
                and any(isinstance(a, ast.Name) and a.id == name for a in node.args):
            return None  # (made a number where it is used: no slip)
        for other in others:
            if isinstance(other, ast.Constant) and isinstance(other.value, int | float) \
                    and not isinstance(other.value, bool):
                kind = "float" if isinstance(other.value, float) or kind == "float" else "int"
    return kind
