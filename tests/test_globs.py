"""Globs and the folder walk (actors/tools/globs.py)."""

from __future__ import annotations

import fnmatch
import os
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.tools import globs
from actors.tools.globs import UNENTERED_DIRS, Entry, compile_glob, glob_match, walk

# ---- a reference matcher, written the slow and obvious way ----


def ref_match(pattern: str, path: str) -> bool:
    """Backtracking over components; fnmatch for one name; `**` tried at every split."""
    comps = [c for c in pattern.split("/") if c]
    if not comps:
        return False
    parts = path.split("/")
    if "/" not in pattern:
        return pattern == "**" or fnmatch.fnmatchcase(parts[-1], pattern)
    return _ref(comps, parts)


def _ref(comps: list[str], parts: list[str]) -> bool:
    if not comps:
        return not parts
    head, rest = comps[0], comps[1:]
    if head == "**":
        return any(_ref(rest, parts[i:]) for i in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and _ref(rest, parts[1:])


NAMES = ["a", "b", "ab", "ba", ".x", "a.py", "b.py", "x.a", "[a"]
TOKENS = ["a", "b", ".", "py", "x", "*", "?", "[ab]", "[!a]", "[.-b]", "["]

names = st.sampled_from(NAMES)
paths = st.lists(names, min_size=1, max_size=5).map("/".join)
component = st.one_of(
    st.just("**"),
    st.lists(st.sampled_from(TOKENS), min_size=1, max_size=4).map("".join),
)
patterns = st.builds(
    lambda lead, comps, trail: lead + "/".join(comps) + trail,
    st.sampled_from(["", "", "", "/", "**/"]),
    st.lists(component, min_size=1, max_size=4),
    st.sampled_from(["", "", "", "/"]),
)


@st.composite
def derived(draw: st.DrawFn) -> tuple[str, str]:
    """A pattern made from a path (so that it often matches), and that path or a
    near miss (a component added, dropped or changed)."""
    parts = draw(st.lists(names, min_size=1, max_size=5))
    comps: list[str] = []
    for part in parts:
        how = draw(st.sampled_from(["keep", "keep", "star", "question", "class", "globstar", "swallow"]))
        if how == "star":
            comps.append(part[:1] + "*" if draw(st.booleans()) else "*")
        elif how == "question":
            i = draw(st.integers(0, len(part) - 1))
            comps.append(part[:i] + "?" + part[i + 1 :])
        elif how == "class":
            comps.append(f"[{part[0]}z]" + part[1:] if part[0] not in "[]!^" else part)
        elif how == "globstar":
            comps.extend(["**", part])
        elif how == "swallow":
            comps.append("**")
        else:
            comps.append(part)
    if draw(st.booleans()):
        comps.append("**")
    target = list(parts)
    change = draw(st.sampled_from(["same", "same", "add", "drop", "other"]))
    if change == "add":
        target.insert(draw(st.integers(0, len(target))), draw(names))
    elif change == "drop" and len(target) > 1:
        del target[draw(st.integers(0, len(target) - 1))]
    elif change == "other":
        target[draw(st.integers(0, len(target) - 1))] = draw(names)
    lead = draw(st.sampled_from(["", "/"])) if len(comps) > 1 else ""
    return lead + "/".join(comps), "/".join(target)


@pytest.mark.slow(reason="a long property test; CI runs it")
@settings(max_examples=2000, deadline=None)
@given(patterns, paths)
def test_glob_agrees_with_reference(pattern: str, path: str) -> None:
    assert glob_match(pattern, path) == ref_match(pattern, path), (pattern, path)


@pytest.mark.slow(reason="a long property test; CI runs it")
@settings(max_examples=3000, deadline=None)
@given(derived())
def test_glob_made_from_a_path_agrees_with_reference(case: tuple[str, str]) -> None:
    pattern, path = case
    assert glob_match(pattern, path) == ref_match(pattern, path), (pattern, path)


@settings(max_examples=500, deadline=None)
@given(st.lists(component, min_size=1, max_size=4), paths)
def test_star_and_question_never_cross_a_slash(comps: list[str], path: str) -> None:
    # Without `**`, a pattern matches only paths with exactly as many components.
    comps = [c for c in comps if c != "**"] or ["*"]
    pattern = "/".join(["x", *comps])  # a '/' makes it a path pattern
    if glob_match(pattern, path):
        assert path.count("/") == pattern.count("/")


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/deep/a.py", True),
        ("*.py", "a.pyc", False),
        ("*.py", "src.py/a.txt", False),
        ("*", ".env", True),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "lib/src/a.py", False),
        ("src/*.py", "src/x/a.py", False),
        ("**/src/*.py", "lib/src/a.py", True),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("src/**/*.py", "srcx/a.py", False),
        ("a/**", "a", True),
        ("a/**", "a/b/c", True),
        ("a/**", "ab/c", False),
        ("**", "anything/at/all", True),
        ("**/**/x", "x", True),
        ("/setup.py", "setup.py", True),
        ("/setup.py", "pkg/setup.py", False),
        ("?.py", "a.py", True),
        ("?.py", "ab.py", False),
        ("[ab].txt", "b.txt", True),
        ("[ab].txt", "c.txt", False),
        ("[!ab].txt", "c.txt", True),
        ("[^ab].txt", "a.txt", False),
        ("[]].txt", "].txt", True),
        ("[a", "[a", True),
        ("[z-a]", "[z-a]", True),
        ("x/a[.-0]b", "x/a/b", False),  # a range spanning '/' still stops at '/'
        ("a**b", "a/b", False),
        ("a**b", "axxb", True),
        ("", "a", False),
        ("/", "a", False),
        ("a+b(c)", "a+b(c)", True),  # regex characters are plain
    ],
)
def test_concrete_globs(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


# ---- no glob takes long, whatever it holds ----

GLOB_WITHIN_S = 1.0  # of CPU time: a match takes microseconds; backtracking took hours


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["*", "a", "?", "[ab]", "*a", "a*"]), min_size=8, max_size=40).map("".join),
    st.integers(1, 16),
    st.sampled_from(["", "**/", "x/**/"]),
    st.sampled_from(["c", "", "a"]),
)
def test_a_glob_over_long_names_ends_at_once(comp: str, depth: int, lead: str, tail: str) -> None:
    name = "a" * 250 + tail
    pattern = lead + "/".join([comp] * depth) + "c"
    path = "x/" + "/".join([name] * depth)
    started = time.process_time()
    glob_match(pattern, path)
    glob_match(comp + "c", name)
    assert time.process_time() - started < GLOB_WITHIN_S, pattern


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["**", "a", "*", "?", "*a*", "a*a*"]), min_size=4, max_size=24), st.integers(100, 2000))
def test_a_globstar_pattern_over_a_deep_path_ends_at_once(comps: list[str], depth: int) -> None:
    pattern = "/".join([*comps, "c"])
    path = "/".join(["a"] * depth) + "/b"
    started = time.process_time()
    assert not glob_match(pattern, path)
    assert time.process_time() - started < GLOB_WITHIN_S, pattern


def test_the_issues_glob_example_ends_at_once() -> None:
    pattern = "*a" * 12 + "*c"
    started = time.process_time()
    assert not glob_match(pattern, "a" * 255)
    assert glob_match(pattern, "a" * 254 + "c")
    assert glob_match("**/" + pattern, "x/" * 1000 + "a" * 254 + "c")
    assert time.process_time() - started < GLOB_WITHIN_S


def test_compile_is_cached() -> None:
    assert compile_glob("src/**/*.py") is compile_glob("src/**/*.py")


# ---- the walk ----


def _tree(root: Path, files: list[str]) -> None:
    for rel in files:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(rel)


def _paths(root: Path, **kw: object) -> list[str]:
    return [e.path for e in walk(root, **kw)]  # type: ignore[arg-type]


def test_walk_order_is_sorted_preorder(tmp_path: Path) -> None:
    _tree(tmp_path, ["b.txt", "a/y/z.txt", "a/x.txt", "a-b.txt"])
    assert _paths(tmp_path) == ["a", "a/x.txt", "a/y", "a/y/z.txt", "a-b.txt", "b.txt"]


def test_walk_entries_say_what_they_are(tmp_path: Path) -> None:
    _tree(tmp_path, ["d/f.txt"])
    entries = {e.path: e for e in walk(tmp_path)}
    assert entries["d"] == Entry("d", True, False, 0, False)
    assert entries["d/f.txt"] == Entry("d/f.txt", False, True, len("d/f.txt"), False)
    assert all(e.size == 0 for e in walk(tmp_path, sizes=False))


def test_walk_lists_but_does_not_enter_unentered_dirs(tmp_path: Path) -> None:
    _tree(tmp_path, [".git/config", "node_modules/pkg/index.js", "__pycache__/m.pyc", "src/build/out.o", "src/a.py"])
    got = _paths(tmp_path)
    assert {".git", "node_modules", "__pycache__", "src/build"} <= set(got)
    assert not [p for p in got if p.startswith((".git/", "node_modules/", "__pycache__/", "src/build/"))]
    assert "src/a.py" in got
    assert {".git", "node_modules", ".venv", "venv", "build", "dist", "target", "__pycache__"} <= UNENTERED_DIRS


def test_walk_does_not_enter_symlinked_folders(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _tree(outside, ["secret/key.txt"])
    root = tmp_path / "root"
    _tree(root, ["real/f.txt"])
    (root / "out").symlink_to(outside, target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "file_link").symlink_to(outside / "secret" / "key.txt")
    entries = {e.path: e for e in walk(root)}
    assert set(entries) == {"file_link", "loop", "out", "real", "real/f.txt"}
    assert entries["out"].is_link and entries["out"].is_dir
    assert entries["loop"].is_link
    assert entries["file_link"].is_link and entries["file_link"].is_file
    # The size is the link's own, not the outside file's.
    assert entries["file_link"].size == len(os.readlink(root / "file_link"))


def test_walk_never_consults_gitignore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path, [".gitignore", "ignored.py", "sub/.gitignore", "sub/x.log"])
    (tmp_path / ".gitignore").write_text("*.py\nsub/\n")
    (tmp_path / "sub" / ".gitignore").write_text("*\n")
    import subprocess

    def no_process(*args: object, **kw: object) -> None:
        raise AssertionError("the walk started a process")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    assert _paths(tmp_path) == [".gitignore", "ignored.py", "sub", "sub/.gitignore", "sub/x.log"]


def test_walk_max_depth(tmp_path: Path) -> None:
    _tree(tmp_path, ["a/b/c/d.txt", "top.txt"])
    assert _paths(tmp_path, max_depth=1) == ["a", "top.txt"]
    assert _paths(tmp_path, max_depth=2) == ["a", "a/b", "top.txt"]
    assert _paths(tmp_path, max_depth=0) == _paths(tmp_path)


def test_walk_prune_leaves_a_folder_out_with_all_under_it(tmp_path: Path) -> None:
    _tree(tmp_path, ["keep/a.txt", "drop/b.txt", "keep/drop/c.txt"])
    assert _paths(tmp_path, prune=lambda rel: rel.endswith("drop")) == ["keep", "keep/a.txt"]


def test_walk_check_can_stop_it(tmp_path: Path) -> None:
    _tree(tmp_path, [f"d{i}/f.txt" for i in range(5)])
    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt

    seen = []
    with pytest.raises(KeyboardInterrupt):
        for e in walk(tmp_path, check=check):
            seen.append(e.path)
    assert len(seen) < 10


def test_walk_skips_unreadable_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path, ["ok/a.txt", "locked/b.txt"])
    real_scan = globs._scan

    def scan(path: str) -> list[os.DirEntry[str]]:
        if path.endswith("locked"):
            raise PermissionError(13, "denied", path)
        return real_scan(path)

    monkeypatch.setattr(globs, "_scan", scan)
    errors: list[str] = []
    assert _paths(tmp_path, on_error=lambda rel, exc: errors.append(rel)) == ["locked", "ok", "ok/a.txt"]
    assert errors == ["locked"]


def test_walk_of_a_missing_root_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        list(walk(tmp_path / "nope"))


# A generated tree: the walk sees what os.walk sees, minus the unentered folders' insides.
tree_names = st.sampled_from(["a", "b", "c.txt", "d.py", "build", ".git", "node_modules", "e"])
trees = st.lists(st.lists(tree_names, min_size=1, max_size=4), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(trees)
def test_walk_matches_os_walk(spec: list[list[str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for parts in spec:
            d = root
            for part in parts[:-1]:
                d = d / part
                if d.exists() and not d.is_dir():
                    break
                d.mkdir(exist_ok=True)
            else:
                leaf = d / parts[-1]
                if not leaf.exists():
                    leaf.write_text("x")
        expected = []
        for dirpath, dirnames, filenames in os.walk(root):
            rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
            prefix = "" if rel == "." else rel + "/"
            expected.extend(prefix + n for n in dirnames + filenames)
            dirnames[:] = [n for n in dirnames if n not in UNENTERED_DIRS]
        got = _paths(root)
        assert sorted(got) == sorted(expected)
        assert len(got) == len(set(got))
