"""The exception trees drawn at the top of actors/errors.py and bmoe_daemon/errors.py,
held to the code: every exception class a package defines is in its drawing, under the
class it derives from and with the module that defines it, and every name the drawing
shows is a class that exists.

A drawing is a tree of lines under a root (`Exception`):

    Exception
    ├── Name            what it is                       (defined in the package's errors.py)
    │   └── Child       some/module.py: what it is       (defined in <package>/some/module.py)
    │                   a description may go on over lines that hold no branch
    └── ValueError      a builtin may be drawn as a parent of the package's classes

A line's depth is its column of `├──`/`└──` divided by four; its parent is the nearest
line above it one level up.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

from actors import errors as actor_errors
from actors.fs.paths import NotRegularFile, PathRefused

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("actors", "bmoe_daemon")
# Modules that cannot be imported to be looked at (importing runs the command line);
# their classes are still read (ast), and any class in them is a fault.
NOT_IMPORTED = ("__main__",)

_BRANCH = re.compile(r"^(?P<prefix>(?:│   |    )*)(?:├── |└── )(?P<name>\w+)(?P<rest>.*)$")
_ROOT = re.compile(r"^(?P<indent> +)(?P<name>\w+)\s*$")
_MODULE = re.compile(r"^(?P<path>[\w/]+\.py):")


@attrs.frozen
class Node:
    name: str
    parent: str | None
    module: str | None  # the path the line names (`fs/paths.py`), None when it names none
    line: int  # within the drawing's text, from 1


class DrawingError(ValueError):
    """A drawing whose lines do not make a tree; the text says which line and why."""


def parse_drawing(text: str) -> list[Node]:
    """The tree drawn in `text` (a module docstring): the first line that holds only a
    name and is followed by a branch line is the root; the tree ends at the first line
    that is blank or less indented than the root. A line without a branch carries the
    description above it on. Raises DrawingError when there is no tree, a line's depth
    skips a level, or a branch is off the grid of four columns."""
    lines = text.splitlines()
    for start, line in enumerate(lines[:-1]):
        root = _ROOT.match(line)
        if root is not None and _BRANCH.match(lines[start + 1].removeprefix(root["indent"])):
            break
    else:
        raise DrawingError("no tree: no line holding only a name followed by a `├──` or `└──` line")
    indent = root["indent"]
    nodes = [Node(root["name"], None, None, start + 1)]
    stack = [root["name"]]  # the names on the path from the root to the last node
    for i, line in enumerate(lines[start + 1:], start + 2):
        if not line.startswith(indent):
            break
        body = line[len(indent):]
        branch = _BRANCH.match(body)
        if branch is None:
            if "├──" in body or "└──" in body:
                raise DrawingError(f"line {i}: a branch off the four-column grid")
            if not body.strip(" │"):
                break
            continue  # a description carried over from the line above
        depth = len(branch["prefix"]) // 4 + 1
        if depth > len(stack):
            raise DrawingError(f"line {i}: {branch['name']} is {depth} levels in, under a line {len(stack) - 1} in")
        del stack[depth:]
        module = _MODULE.match(branch["rest"].strip())
        nodes.append(Node(branch["name"], stack[-1], module["path"] if module else None, i))
        stack.append(branch["name"])
    return nodes


def _module_names(package: str) -> dict[str, Path]:
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _resolve(expr: ast.expr, namespace: dict[str, Any], imported: dict[str, str]) -> Any:
    """What a base-class expression names, or None when it cannot be told."""
    if isinstance(expr, ast.Name):
        if expr.id in namespace:
            return namespace[expr.id]
        if expr.id in imported:
            module, _, attr = imported[expr.id].rpartition(":")
            try:
                return getattr(importlib.import_module(module), attr) if attr else importlib.import_module(module)
            except (ImportError, AttributeError):
                return None
        return getattr(builtins, expr.id, None)
    if isinstance(expr, ast.Attribute):
        owner = _resolve(expr.value, namespace, imported)
        return getattr(owner, expr.attr, None) if owner is not None else None
    return None


def _imports_anywhere(tree: ast.Module) -> dict[str, str]:
    """Every name an import binds anywhere in the module (inside functions too), as
    `module:attr` (`module:` for a module)."""
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.partition(".")[0]] = f"{a.name if a.asname else a.name.partition('.')[0]}:"
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module}:{a.name}"
    return out


def exception_classes(package: str) -> tuple[dict[str, type[BaseException]], list[str]]:
    """Every exception class defined in `package` by name, and the faults met finding
    them: a class that cannot be looked at, and a name defined twice. Every `class`
    statement in every module is read (ast), nested ones too; one inside a function is
    judged by what its bases name."""
    found: dict[str, type[BaseException]] = {}
    faults: list[str] = []
    for modname, path in _module_names(package).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = _imports_anywhere(tree)
        module = None if modname.rpartition(".")[2] in NOT_IMPORTED else importlib.import_module(modname)

        def visit(node: ast.AST, owner: Any, in_function: bool, modname: str = modname, path: Path = path,
                  module: Any = module, imported: dict[str, str] = imported) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.ClassDef):
                    where = f"{path.relative_to(ROOT)}:{child.lineno} {child.name}"
                    if module is None:
                        faults.append(f"{where}: a class in a module this test does not import")
                        continue
                    if in_function or owner is None:
                        bases = [_resolve(b, vars(module), imported) for b in child.bases]
                        if any(isinstance(b, type) and issubclass(b, BaseException) for b in bases):
                            faults.append(f"{where}: an exception class inside a function; define it at module level")
                        visit(child, None, True)
                        continue
                    cls = getattr(owner, child.name, None)
                    if not isinstance(cls, type):
                        faults.append(f"{where}: defined but not found on {owner.__name__} after import")
                        continue
                    if issubclass(cls, BaseException) and cls.__module__ == modname:
                        if cls.__name__ in found and found[cls.__name__] is not cls:
                            other = found[cls.__name__]
                            faults.append(f"{where}: the name is defined twice ({other.__module__} too)")
                        found[cls.__name__] = cls
                    visit(child, cls, False)
                elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    visit(child, None, True)
                else:
                    visit(child, owner, in_function)

        visit(tree, module, False)
    return found, faults


def tree_faults(nodes: list[Node], classes: dict[str, type[BaseException]], package: str) -> list[str]:
    """What is wrong between a drawing and the classes: a class missing, drawn twice,
    under a class it does not derive from, or with a module that is not its own; a name
    drawn that is no class of the package nor a builtin exception."""
    faults: list[str] = []
    drawn: dict[str, Node] = {}
    for node in nodes:
        if node.name in drawn:
            faults.append(f"{node.name} is drawn twice (lines {drawn[node.name].line} and {node.line})")
        drawn[node.name] = node

    def class_of(name: str) -> type[BaseException] | None:
        if name in classes:
            return classes[name]
        obj = getattr(builtins, name, None)
        return obj if isinstance(obj, type) and issubclass(obj, BaseException) else None

    for node in nodes:
        cls = class_of(node.name)
        if cls is None:
            faults.append(f"{node.name} (line {node.line}) is drawn but no such exception class exists in {package}/")
            continue
        if node.parent is not None:
            parent = class_of(node.parent)
            if node.name in classes:
                if parent not in cls.__bases__:
                    bases = ", ".join(b.__name__ for b in cls.__bases__)
                    faults.append(f"{node.name} is drawn under {node.parent} but derives from {bases}")
            elif parent is not None and not issubclass(cls, parent):
                faults.append(f"{node.name} (a builtin) is drawn under {node.parent}, which it does not derive from")
        if node.name in classes:
            module = f"{package}." + (node.module or "errors.py").removesuffix(".py").replace("/", ".")
            if cls.__module__ != module:
                shown = node.module or "errors.py (no module named)"
                faults.append(f"{node.name} is drawn in {shown} but defined in {cls.__module__}")
        elif node.module is not None:
            faults.append(f"{node.name} is a builtin, drawn with a module ({node.module})")
    for name, cls in sorted(classes.items()):
        if name not in drawn:
            bases = ", ".join(b.__name__ for b in cls.__bases__)
            faults.append(f"{name} ({cls.__module__}, derives from {bases}) is not in the drawing")
    return faults


def drawing_of(package: str) -> list[Node]:
    doc = importlib.import_module(f"{package}.errors").__doc__
    assert doc is not None
    return parse_drawing(doc)


@pytest.mark.parametrize("package", PACKAGES)
def test_the_drawing_names_every_exception_class_under_its_base(package):
    classes, faults = exception_classes(package)
    assert faults == []
    assert len(classes) > 10  # the walk found the package's classes, not none
    assert tree_faults(drawing_of(package), classes, package) == []


def test_no_two_exception_classes_share_a_name():
    """One name, one class, across both packages: a reader (and this test) can tell
    which one a drawing, a log or a traceback means."""
    seen: dict[str, str] = {}
    twice = []
    for package in PACKAGES:
        for name, cls in exception_classes(package)[0].items():
            if name in seen:
                twice.append(f"{name}: {seen[name]} and {cls.__module__}")
            seen[name] = cls.__module__
    assert twice == []


# ---- the parser and the checks, on drawings that are wrong on purpose ----

SOME = {
    "ActorError": actor_errors.ActorError,
    "Busy": actor_errors.Busy,
    "NothingToResume": actor_errors.NothingToResume,
    "ToolError": actor_errors.ToolError,
    "PathRefused": PathRefused,
    "NotRegularFile": NotRegularFile,
}

RIGHT = '''Errors.

    Exception
    ├── ActorError          base
    │   └── Busy            running
    │       └── NothingToResume
    ├── ToolError           a call that failed,
    │                       over two lines
    │   └── PathRefused     fs/paths.py: out of the workspace
    └── OSError
        └── NotRegularFile  fs/paths.py: a folder

After the drawing.
'''


def test_a_right_drawing_parses_into_its_tree():
    nodes = parse_drawing(RIGHT)
    assert [(n.name, n.parent, n.module) for n in nodes] == [
        ("Exception", None, None),
        ("ActorError", "Exception", None),
        ("Busy", "ActorError", None),
        ("NothingToResume", "Busy", None),
        ("ToolError", "Exception", None),
        ("PathRefused", "ToolError", "fs/paths.py"),
        ("OSError", "Exception", None),
        ("NotRegularFile", "OSError", "fs/paths.py"),
    ]
    assert tree_faults(nodes, SOME, "actors") == []


@pytest.mark.parametrize(
    ("old", "new", "fault"),
    [
        # a class left out
        ("    │       └── NothingToResume\n", "",
         "NothingToResume (actors.errors, derives from Busy) is not in the drawing"),
        # under the wrong parent: one level up, so under ActorError
        ("    │       └── NothingToResume", "    │   └── NothingToResume",
         "NothingToResume is drawn under ActorError but derives from Busy"),
        # a class that does not exist
        ("    │   └── Busy            running", "    │   └── Busy            running\n    │   └── Gone",
         "Gone (line 6) is drawn but no such exception class exists in actors/"),
        # the module before the reorganisation
        ("PathRefused     fs/paths.py", "PathRefused     tools/paths.py",
         "PathRefused is drawn in tools/paths.py but defined in actors.fs.paths"),
        # no module named, so errors.py
        ("NotRegularFile  fs/paths.py: a folder", "NotRegularFile  a folder",
         "NotRegularFile is drawn in errors.py (no module named) but defined in actors.fs.paths"),
        # drawn twice
        ("    └── OSError\n", "    ├── Busy\n    └── OSError\n", "Busy is drawn twice (lines 5 and 10)"),
        # a builtin under one it does not derive from
        ("    └── OSError\n        └── NotRegularFile",
         "    └── ValueError\n        └── OSError\n            └── NotRegularFile",
         "OSError (a builtin) is drawn under ValueError, which it does not derive from"),
    ],
)
def test_a_wrong_drawing_is_caught(old, new, fault):
    assert old in RIGHT
    faults = tree_faults(parse_drawing(RIGHT.replace(old, new)), SOME, "actors")
    assert fault in faults


def test_a_line_off_the_tree_does_not_parse():
    with pytest.raises(DrawingError, match="line 5: Busy is 3 levels in"):
        parse_drawing(RIGHT.replace("    │   └── Busy", "    │   │   └── Busy"))
    with pytest.raises(DrawingError, match="line 6: a branch off the four-column grid"):
        parse_drawing(RIGHT.replace("    │       └── NothingToResume", "    │      └── NothingToResume"))
    with pytest.raises(DrawingError, match="no tree"):
        parse_drawing("Errors, and no drawing.\n")


def test_an_exception_class_inside_a_function_is_a_fault(tmp_path, monkeypatch):
    """A class the import cannot reach is still read, and one that derives from an
    exception is refused: the drawing could not be checked for it."""
    pkg = tmp_path / "errtree_sample"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "mod.py").write_text(
        "class Top(ValueError):\n    class Inner(KeyError):\n        pass\n\n\n"
        "def f():\n    class Hidden(LookupError):\n        pass\n\n    class Plain:\n        pass\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    classes, faults = exception_classes("errtree_sample")
    assert set(classes) == {"Top", "Inner"}
    assert faults == ["errtree_sample/mod.py:7 Hidden: an exception class inside a function; define it at module level"]
