"""The whole command of a request to move a function (or class) out of a Python file into
another, new one, and to import it back where it was used.

Asked to move a function out of a file into a new one and import it from there,
SmolLM2-135M renamed the whole file (`mv a.py b.py`) and answered that it had moved it.
Which lines are the function's, which module-level names only it uses (they go with
it), which imports it needs (copied) and where the import of it goes back are all read
by Python's own parser, so the command is known:

    sed -n -e '1{G;G;p}' -e '4,6p' -e '7,8p' a.py > b.py && sed -i -e '4,6d' -e '7,10d' a.py \
        && sed -i '1a from b import f' a.py

None where the function is not defined at the top of the file named, where a name it
needs is used by what stays (moving it would break that, copying it would make two), or
where the new file is there already.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Callable

from actors.runs.agent.small.files_of import PLAIN_PATH

# "move f out of a.py into (a new file) b.py", "put f in its own file b.py", "split f out
# into b.py", "extract the f function from a.py to b.py".
_MOVE = re.compile(r"\b(?:move|put|split|extract|pull|shift|relocate|take|break|factor)\b(?P<between>.*?)"
                   r"\b(?:into|to|in|inside)\s+(?:a\s+)?(?:new\s+|separate\s+|its\s+own\s+)?(?:file|module)?\s*"
                   r"(?:called\s+|named\s+)?`?(?P<to>[\w./-]+\.py)\b", re.IGNORECASE | re.DOTALL)
_FILE = re.compile(r"`?([\w./-]+\.py)\b")
_NAME = re.compile(r"`?\b([A-Za-z_]\w*)\b`?(?:\(\))?")


def move_commands(asked: str, read: Callable[[str], str | None],
                  exists: Callable[[str], bool]) -> dict[str, list[str]]:
    """The whole command of a request to move a function or class of a file it names
    (`read` gives its text) into a new file it names (not there: `exists`); none
    otherwise."""
    move = _MOVE.search(asked)
    if move is None:
        return {}
    to = move.group("to").strip("`")
    sources = [f for f in dict.fromkeys(_FILE.findall(asked)) if f != to and read(f) is not None]
    if exists(to) or len(sources) != 1 or not PLAIN_PATH.fullmatch(to) or not PLAIN_PATH.fullmatch(sources[0]):
        return {}
    source = sources[0]
    text = read(source) or ""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
    named = [w for w in _NAME.findall(move.group("between") + " " + asked[move.end():]) if w in defined]
    if len(dict.fromkeys(named)) != 1:
        return {}
    command = move_command(source, text, tree, named[0], to)
    return {"sed": [command]} if command else {}


def move_command(source: str, text: str, tree: ast.Module, name: str, to: str) -> str | None:
    """The definition `name` of `source` (its `text`, parsed: `tree`) moved into the new
    file `to`, with the module-level names only it uses and the imports it needs, and
    imported back where what stays uses it; None where that cannot be done plainly."""
    lines = text.split("\n")
    body = tree.body
    index = next(i for i, n in enumerate(body) if getattr(n, "name", None) == name)
    moved = {index}
    # Module-level assignments the moved code reads and nothing staying reads go with it.
    while True:
        reads = _reads([body[i] for i in moved])
        more = {i for i, n in enumerate(body) if i not in moved and isinstance(n, ast.Assign | ast.AnnAssign)
                and _targets(n) and _targets(n) <= reads}
        if not more:
            break
        moved |= more
    staying = [n for i, n in enumerate(body) if i not in moved]
    given = set().union(*(_targets(body[i]) for i in moved if i != index))
    if given & _reads(staying) or _reads([body[i] for i in moved]) & _assigned(staying) - _imported(staying):
        return None  # a name both sides need
    needed = _reads([body[i] for i in moved])
    imports = [n for n in staying if isinstance(n, ast.Import | ast.ImportFrom) and _imported([n]) & needed]
    if any(n.end_lineno != n.lineno for n in imports):
        return None
    spans = [_span(body, i, lines) for i in sorted(moved)]
    # Each line printed as it is, two blank lines after the imports and after a block that
    # has none after it (`G`: the empty hold space appended), but the last.
    printed = [f"{n.lineno}p" for n in imports[:-1]] + [f"{n.lineno}{{G;G;p}}" for n in imports[-1:]]
    for k, (a, b, c) in enumerate(spans):
        if k == len(spans) - 1:
            printed.append(f"{a},{b}p")
        elif c > b:
            printed.append(f"{a},{c}p")
        else:
            printed += ([f"{a},{b - 1}p"] if b > a else []) + [f"{b}{{G;G;p}}"]
    deleted = " ".join(f"-e '{a},{c}d'" for a, _, c in spans)
    command = f"sed -n {' '.join(f'-e {p!r}' for p in printed)} {source} > {to} && sed -i {deleted} {source}"
    if name in _reads(staying):
        module = _module(source, to)
        if module is None:
            return None
        after = _import_line(tree, moved)
        said = f"from {module} import {name}"
        command += f" && sed -i '{after}a {said}' {source}" if after else f" && sed -i '1i {said}\\n\\n' {source}"
    return command


def _span(body: list[ast.stmt], i: int, lines: list[str]) -> tuple[int, int, int]:
    """The first and last line of `body[i]` (its decorators with it), and the last of the
    blank lines after it (taken away with it)."""
    node = body[i]
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    last = node.end_lineno or node.lineno
    end = last
    while end < len(lines) and not lines[end].strip() and (i + 1 >= len(body) or end + 1 < body[i + 1].lineno):
        end += 1
    return first, last, end


def _import_line(tree: ast.Module, moved: set[int]) -> int:
    """The line after which an import goes: the last import at the top of what stays,
    else the module's docstring, else none (0: before the first line)."""
    last = 0
    for i, node in enumerate(tree.body):
        if i in moved:
            continue
        if isinstance(node, ast.Import | ast.ImportFrom) or (i == 0 and isinstance(node, ast.Expr)
                                                               and isinstance(node.value, ast.Constant)
                                                               and isinstance(node.value.value, str)):
            last = node.end_lineno or node.lineno
        else:
            break
    return last


def _module(source: str, to: str) -> str | None:
    """The module `to` is imported as from `source`: its name where both are in one
    folder (the folder's dotted path before it where that is a package: the caller
    sees), none otherwise."""
    folder, to_folder = posixpath.dirname(source), posixpath.dirname(to)
    stem = posixpath.basename(to)[:-3]
    if folder != to_folder or not stem.isidentifier():
        return None
    return ".".join([*filter(None, folder.split("/")), stem]) if folder else stem


def _targets(node: ast.stmt) -> set[str]:
    """The names an assignment at module level sets."""
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    return {t.id for t in targets if isinstance(t, ast.Name)} if all(isinstance(t, ast.Name) for t in targets) \
        else set()


def _assigned(nodes: list[ast.stmt]) -> set[str]:
    """The names the module-level `nodes` define (assignments, functions, classes)."""
    out: set[str] = set()
    for n in nodes:
        out |= _targets(n)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(n.name)
    return out | _imported(nodes)


def _imported(nodes: list[ast.stmt]) -> set[str]:
    """The names the imports among `nodes` bind."""
    return {(a.asname or a.name).split(".")[0] for n in nodes if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names}


def _reads(nodes: list[ast.stmt]) -> set[str]:
    """The names the `nodes` read."""
    return {n.id for node in nodes for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}

