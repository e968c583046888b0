"""The house's rules, read from the code: the layers of actors/ and who may import whom,
no import cycle at any level, and the sizes that keep modules readable.

Every import counts: at the top, inside a function (lazy), and under TYPE_CHECKING.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("actors", "bmoe_daemon")

# The layers of actors/, lowest first. A module may import from its own package and
# from the layers below its own; the packages of one layer may not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("actors.errors", "actors.ids", "actors.notices"),
    ("actors.actor", "actors.bus", "actors.process", "actors.fs", "actors.sandbox"),
    ("actors.model",),
    ("actors.tools",),
    ("actors.skills", "actors.record", "actors.checkpoints"),
    ("actors.policy", "actors.peers"),
    ("actors.runs",),
    ("actors.conversations",),
    ("actors.scheduling",),
)
MAX_TOP_MODULES = 15  # modules directly in actors/
MAX_MODULE_LINES = 600
MAX_CLASS_LINES = 400



def module_files() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


MODULES = module_files()


def imports_of(name: str, path: Path) -> set[str]:
    """The modules of this project that `name` imports, anywhere in its file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_pkg = path.name == "__init__.py"
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = name.split(".") if is_pkg else name.split(".")[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in MODULES:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


GRAPH = {name: imports_of(name, path) for name, path in MODULES.items()}


def owner(name: str, depth: int) -> str:
    """`name` seen at a package depth: its first `depth` parts."""
    return ".".join(name.split(".")[:depth])


def cycle_in(edges: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5])
def test_no_import_cycle_at_any_level(depth: int) -> None:
    """No cycle among the modules, nor among the packages at any depth (a module that
    imports a sibling package's module, and back, is one)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for src, targets in GRAPH.items():
        for dst in targets:
            # The nodes at this depth: a package's module and a subpackage of it are
            # apart; an edge inside one node is no edge.
            a, b = owner(src, depth), owner(dst, depth)
            if a != b and not b.startswith(a + ".") and not a.startswith(b + "."):
                edges[a].add(b)
    assert cycle_in(edges) is None, " -> ".join(cycle_in(edges) or ())


def test_no_module_cycle() -> None:
    assert cycle_in(dict(GRAPH)) is None, " -> ".join(cycle_in(dict(GRAPH)) or ())


def layer_of(name: str) -> int | None:
    for i, layer in enumerate(LAYERS):
        for part in layer:
            if name == part or name.startswith(part + "."):
                return i
    return None


def part_of(name: str) -> str | None:
    for layer in LAYERS:
        for part in layer:
            if name == part or name.startswith(part + "."):
                return part
    return None


def test_every_module_of_actors_has_a_layer() -> None:
    lost = [m for m in MODULES if m.startswith("actors.") and layer_of(m) is None]
    assert not lost, f"modules in no layer (add them to LAYERS): {lost}"


def test_imports_run_down_the_layers() -> None:
    wrong = []
    for src, targets in GRAPH.items():
        if not src.startswith("actors"):
            continue
        for dst in targets:
            if dst.startswith("bmoe_daemon"):
                wrong.append(f"{src} -> {dst} (actors never imports bmoe_daemon)")
                continue
            ls, ld = layer_of(src), layer_of(dst)
            if ls is None or ld is None or part_of(src) == part_of(dst):
                continue
            if ld >= ls:
                wrong.append(f"{src} -> {dst}")
    assert not wrong, "imports that do not run down the layers:\n" + "\n".join(wrong)


def test_at_most_15_modules_directly_in_actors() -> None:
    top = sorted(p.name for p in (ROOT / "actors").glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, top


def test_no_module_over_600_lines() -> None:
    long = {n: len(p.read_text(encoding="utf-8").splitlines()) for n, p in MODULES.items()}
    assert not {n: c for n, c in long.items() if c > MAX_MODULE_LINES}


def test_no_class_over_400_lines() -> None:
    long = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            size = (node.end_lineno or node.lineno) - node.lineno + 1
            if size > MAX_CLASS_LINES:
                long.append(f"{name}.{node.name}: {size} lines")
    assert not long


def test_no_private_name_imported_from_another_module() -> None:
    found = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES:
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):  # a dunder is public
                        found.append(f"{name}: from {node.module} import {alias.name}")
    assert not found


def test_the_checks_see_a_cycle_and_a_wrong_way_import() -> None:
    """The walker itself: a cycle and an upward edge are found in a made-up graph."""
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": set()}) is None
    assert layer_of("actors.model.engine") == 2 and layer_of("actors.runs.agent.run") == 6


def test_every_package_is_in_the_wheel() -> None:
    """pyproject.toml lists the packages by name (the data packages catalog and skills
    have no __init__.py): a package folder left out of it is missing from the wheel and
    from a pipx install, which only the slow wheel test would see."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(d.relative_to(ROOT).parts) for pkg in PACKAGES for d in [ROOT / pkg, *(ROOT / pkg).rglob("*")]
             if d.is_dir() and (d / "__init__.py").exists()}
    assert found - listed == set()
