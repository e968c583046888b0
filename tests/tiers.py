"""The suite's two tiers, decided by what each test uses.

The fast tier (`pytest -m "not slow"`) is what to run while working: pure tests and
tests of the daemon in-process with the scripted backend. A test is `slow` when it
uses, itself or through any helper, fixture or class of tests/ it reaches:

- the daemon as a process (tests/daemon_proc.py's `run_daemon`, tests/browser.py's),
- the browser (tests/browser.py's `chromium`, `require_browser`),
- a real peer that may be missing (tests/peers.py's `need_peer`, `need_modules`),
- a process of its own (`subprocess`, `trio.run_process`, `os.fork`...), or one of
  the peer programs of tests/ (a file there with a `__main__` block) named in it,
- a model (`LocalBackend.load`, `llama_cpp.Llama`) or the `model` marker.

That is read from the source (`conftest.py` calls `slow_reason` for each collected
test), so a new test that starts a daemon or a process is slow without a marker. A
test whose cost is inside the code it tests (a language server the daemon starts, a
long property test) is marked `@pytest.mark.slow` by hand.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import importlib
import inspect
import multiprocessing
import os
import subprocess
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

TESTS = Path(__file__).resolve().parent

# Helpers of tests/, by file and name, and what using one means.
HELPERS = {
    ("daemon_proc.py", "run_daemon"): "starts the daemon as a process (tests/daemon_proc.py)",
    ("browser.py", "start_daemon"): "starts the daemon as a process (tests/browser.py)",
    ("browser.py", "running_daemon"): "starts the daemon as a process (tests/browser.py)",
    ("browser.py", "chromium"): "drives the browser (tests/browser.py)",
    ("browser.py", "require_browser"): "drives the browser (tests/browser.py)",
    ("peers.py", "need_peer"): "needs a real peer (tests/peers.py)",
    ("peers.py", "need_modules"): "needs a real peer (tests/peers.py)",
}


# What loads a model, by module and name (not imported here: importing llama_cpp loads
# llama.cpp, and the actors' modules may move).
MODEL_LOADERS = {("actors.", "LocalBackend.load"), ("llama_cpp.", "Llama")}


def _loads_a_model(obj: Any) -> bool:
    module, name = getattr(obj, "__module__", None) or "", getattr(obj, "__qualname__", None)
    return any(module.startswith(prefix) and name == qualname for prefix, qualname in MODEL_LOADERS)


def _process_starters() -> dict[int, str]:
    starters: list[Any] = [
        subprocess.Popen, subprocess.run, subprocess.call, subprocess.check_call, subprocess.check_output,
        subprocess.getoutput, subprocess.getstatusoutput,
        os.system, os.popen, os.fork, os.forkpty, os.posix_spawn, os.posix_spawnp,
        trio.run_process, trio.lowlevel.open_process,
        asyncio.create_subprocess_exec, asyncio.create_subprocess_shell,
        multiprocessing.Process,
    ]
    return {id(f): f"starts a process ({getattr(f, '__module__', '?')}.{f.__qualname__})" for f in starters}


PROCESS_STARTERS = _process_starters()


@functools.cache
def peer_programs() -> frozenset[str]:
    """The files of tests/ that run as programs of their own (the test peers)."""
    return frozenset(
        p.name for p in TESTS.glob("*.py")
        if not p.name.startswith("test_") and "__main__" in p.read_text(encoding="utf-8")
    )


def _program(text: str, programs: frozenset[str]) -> str | None:
    """The peer program `text` names (a path or a file name ending in one), or None."""
    return next((p for p in programs if text == p or text.endswith("/" + p)), None)


@functools.cache
def _source_file(obj: Any) -> Path | None:
    try:
        name = inspect.getsourcefile(obj)
    except TypeError:
        return None
    return _resolved(name) if name else None


@functools.cache
def _resolved(name: str) -> Path:
    return Path(name).resolve()


def _ours(obj: Any) -> bool:
    """A function or class written in tests/: what it uses counts as the test's."""
    if not (inspect.isfunction(obj) or inspect.isclass(obj)):
        return False
    path = _source_file(obj)
    return path is not None and path.parent == TESTS


def _unwrap(obj: Any) -> Any:
    inner = getattr(getattr(obj, "hypothesis", None), "inner_test", None)  # @given
    if inner is not None:
        obj = inner
    wrapped = getattr(obj, "_get_wrapped_function", None)  # a @pytest.fixture (pytest 8.4)
    if callable(wrapped):
        obj = wrapped()
    try:
        return inspect.unwrap(obj)
    except ValueError:
        return obj


class _Uses(ast.NodeVisitor):
    """Names, dotted names, `from X import Y` inside, and strings, of code, leaving out
    annotations and docstrings (they use nothing)."""

    def __init__(self) -> None:
        self.dotted: list[list[str]] = []
        self.imported: list[tuple[str, str]] = []
        self.strings: list[str] = []

    def visit_Name(self, node: ast.Name) -> None:
        self.dotted.append([node.id])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        parts: list[str] = []
        cur: ast.expr = node
        while isinstance(cur, ast.Attribute):
            parts.append(cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Name):
            self.dotted.append([cur.id, *reversed(parts)])
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module and node.level == 0:
            self.imported.extend((node.module, alias.name) for alias in node.names)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str):
            self.strings.append(node.value)

    def _body(self, body: list[ast.stmt]) -> None:
        start = 1 if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) else 0
        for stmt in body[start:]:
            self.visit(stmt)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for deco in node.decorator_list:
            self.visit(deco)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        self._body(node.body)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            self.visit(base)
        self._body(node.body)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)


@functools.cache
def _definitions(filename: str) -> dict[int, ast.AST]:
    """A file's functions and classes by their first line (the first decorator's, if any),
    the line a function's code starts at."""
    try:
        tree = ast.parse(Path(filename).read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return {}
    found: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[min([node.lineno, *(d.lineno for d in node.decorator_list)])] = node
    return found


def _node(obj: Any) -> ast.AST | None:
    """The syntax tree of a function or class, from its file parsed once (inspect.getsource
    for what is not found there, a lambda's line)."""
    code = getattr(obj, "__code__", None)
    if code is not None:
        node = _definitions(code.co_filename).get(code.co_firstlineno)
        if node is not None:
            return node
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(obj)))
    except (OSError, TypeError, SyntaxError):
        return None


def _resolve(names: list[str], scope: dict[str, Any]) -> Iterator[Any]:
    """Each object along a dotted name found in `scope` (`a`, `a.b`, `a.b.c`)."""
    if names[0] not in scope:
        return
    obj = scope[names[0]]
    yield obj
    for attr in names[1:]:
        try:
            obj = inspect.getattr_static(obj, attr)
        except AttributeError:
            return
        yield obj


def _imported(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name, None)
    except Exception:  # a module that does not import here is no use to name
        return None


class Tiers:
    """What makes each function slow, worked out once per function."""

    def __init__(self) -> None:
        self._reasons: dict[Any, str | None] = {}

    def reason(self, obj: Any) -> str | None:
        """Why calling `obj` (a test, a fixture, a helper, a class of tests/) is slow, or None."""
        obj = _unwrap(obj)
        direct = self._direct(obj)
        if direct is not None or not _ours(obj):
            return direct
        if obj in self._reasons:
            return self._reasons[obj]
        self._reasons[obj] = None  # a cycle adds nothing
        found = self._read(obj)
        self._reasons[obj] = found
        return found

    def _direct(self, obj: Any) -> str | None:
        why = PROCESS_STARTERS.get(id(obj))
        if why is not None:
            return why
        if _loads_a_model(obj):
            return f"loads a model ({obj.__qualname__})"
        if inspect.isfunction(obj) or inspect.isclass(obj):
            path = _source_file(obj)
            if path is not None and path.parent == TESTS:
                return HELPERS.get((path.name, obj.__qualname__))
        return None

    def _read(self, obj: Any) -> str | None:
        tree = _node(obj)
        if tree is None:
            return None
        uses = _Uses()
        uses.visit(tree)
        programs = peer_programs()
        for text in uses.strings:
            if (program := _program(text, programs)) is not None:
                return f"runs tests/{program}, a peer program"
        scope = vars(inspect.getmodule(obj)) if inspect.isclass(obj) else obj.__globals__
        seen: list[Any] = []
        for names in uses.dotted:
            seen.extend(_resolve(names, scope))
        seen.extend(_imported(module, name) for module, name in uses.imported)
        for used in seen:
            if used is None or used is obj:
                continue
            if isinstance(used, (str, os.PathLike)):  # SERVER = Path(__file__).with_name("mcp_server.py")
                name = os.fspath(used)
                if isinstance(name, str) and (program := _program(name, programs)) is not None:
                    return f"runs tests/{program}, a peer program"
                continue
            why = self._direct(_unwrap(used)) if not _ours(_unwrap(used)) else self.reason(used)
            if why is not None:
                return why
        return None


def fixture_functions(item: pytest.Item) -> list[Callable[..., Any]]:
    """The functions of the fixtures `item` requests, its own and those they request."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [d.func for defs in info.name2fixturedefs.values() for d in defs]


def slow_reason(item: pytest.Item, tiers: Tiers) -> str | None:
    """Why `item` belongs to the slow tier, or None: its markers, then what it uses."""
    if item.get_closest_marker("model") is not None:
        return "loads the bundled model (marked model)"
    marker = item.get_closest_marker("slow")
    if marker is not None:
        return str(marker.kwargs.get("reason") or "marked slow")
    function = getattr(item, "obj", None)
    for obj in [function, *fixture_functions(item)]:
        if obj is not None:
            why = tiers.reason(obj)
            if why is not None:
                return why
    return None
