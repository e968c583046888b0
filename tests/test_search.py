"""The search tools: file_glob_search and grep_search (actors/tools/search.py)."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.errors import ToolError
from actors.fs.paths import PathRefused
from actors.tools import search
from actors.tools.grep_search import CASE_IGNORED_HEAD
from actors.tools.registry import ToolContext
from actors.tools.search import (
    MAX_CONTEXT_LINES,
    MAX_GLOB_RESULTS,
    MAX_GREP_FILE_BYTES,
    MAX_GREP_MATCHES,
    FileGlobSearch,
    GrepSearch,
    compile_query,
    matching_lines,
)
from tests.trees import write_tree

SECRET = "TOP-SECRET-OUTSIDE"


def _tree(root: Path, files: dict[str, str | bytes]) -> None:
    write_tree(root, files)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    _tree(out, {"secret.txt": f"{SECRET}\n", "inner/deep.txt": f"{SECRET} deep\n"})
    return out


@pytest.fixture
def ws(tmp_path: Path, outside: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    _tree(
        root,
        {
            "README.md": "# readme\nTODO: write\n",
            "setup.py": "import setuptools\n",
            "src/app.py": "import os\n\ndef main():\n    # TODO: more\n    return os.getcwd()\n",
            "src/util.py": "def helper(x):\n    return x + 1\n",
            "src/pkg/deep.py": "VALUE = 'a.b'\nOTHER = 'axb'\n",
            "src/pkg/notes.md": "todo lower\n",
            "tests/test_app.py": "def test_main():\n    assert True  # TODO\n",
            "node_modules/lib/index.js": "// TODO in deps\n",
            ".git/HEAD": "ref: refs/heads/main TODO\n",
        },
    )
    (root / "link_out").symlink_to(outside, target_is_directory=True)
    (root / "secret_link.txt").symlink_to(outside / "secret.txt")
    return root


def ctx_for(ws: Path | None) -> ToolContext:
    return ToolContext("conv", ws, "auto")


async def glob(ws: Path, **args: object) -> str:
    return (await FileGlobSearch().run(dict(args), ctx_for(ws))).result


async def grep(ws: Path, **args: object) -> str:
    return (await GrepSearch().run(dict(args), ctx_for(ws))).result


def listed(result: str) -> list[str]:
    """The result's lines before its `---` and total."""
    lines = result[: result.index("---\nTotal matches:")].splitlines()
    assert lines[-1] == "", result
    return lines[:-1]


def total(result: str) -> int:
    m = re.search(r"^Total matches: (\d+)$", result, re.MULTILINE)
    assert m, result
    return int(m.group(1))


# ---- the tools as objects ----


def test_tool_shapes() -> None:
    f, g = FileGlobSearch(), GrepSearch()
    assert (f.name, g.name) == ("file_glob_search", "grep_search")
    assert set(f.parameters["properties"]) == {"path", "include", "exclude", "type", "max_depth", "limit"}
    assert set(g.parameters["properties"]) == {
        "path", "pattern", "include", "exclude", "return_line_numbers", "literal", "ignore_case", "context_lines",
    }  # fmt: skip
    assert g.parameters["required"] == ["pattern"]
    for tool in (f, g):
        assert tool.needs_workspace and not tool.is_change({}) and not tool.is_change({"path": "x"})
    assert f.title({"include": "*.py", "path": "src"}) == "Find *.py in src"
    assert f.title({}) == "Find files in the workspace"
    assert f.title({"type": "dir"}) == "Find folders in the workspace"
    assert g.title({"pattern": "TODO", "path": "src"}) == "Search for TODO in src"
    assert len(g.title({"pattern": "x" * 500})) < 100
    assert [t.name for t in search.search_tools()] == ["file_glob_search", "grep_search"]


async def test_preview_is_none_for_read_tools(ws: Path) -> None:
    assert await FileGlobSearch().preview({}, ctx_for(ws)) is None
    assert await GrepSearch().preview({"pattern": "x"}, ctx_for(ws)) is None


async def test_without_a_workspace_both_refuse() -> None:
    with pytest.raises(ToolError, match="no workspace"):
        await FileGlobSearch().run({}, ctx_for(None))
    with pytest.raises(ToolError, match="no workspace"):
        await GrepSearch().run({"pattern": "x"}, ctx_for(None))


# ---- file_glob_search ----


async def test_glob_defaults_list_files_sorted_with_total(ws: Path) -> None:
    result = await glob(ws)
    assert listed(result) == [
        "README.md",
        "secret_link.txt",  # a link is listed by its own name (llama.cpp's walker does too)
        "setup.py",
        "src/app.py",
        "src/pkg/deep.py",
        "src/pkg/notes.md",
        "src/util.py",
        "tests/test_app.py",
    ]
    assert total(result) == 8
    # The linked folder is not entered; .git and node_modules are not entered.
    assert SECRET not in result and "secret.txt" not in result and "deep.txt" not in result
    assert "[not searched inside: .git, node_modules" in result


async def test_glob_include_without_slash_matches_names_at_any_depth(ws: Path) -> None:
    assert listed(await glob(ws, include="*.py")) == [
        "setup.py", "src/app.py", "src/pkg/deep.py", "src/util.py", "tests/test_app.py",
    ]  # fmt: skip


async def test_glob_include_with_slash_is_relative_to_the_folder_searched(ws: Path) -> None:
    assert listed(await glob(ws, include="src/*.py")) == ["src/app.py", "src/util.py"]
    assert listed(await glob(ws, include="src/**/*.py")) == ["src/app.py", "src/pkg/deep.py", "src/util.py"]
    assert listed(await glob(ws, include="pkg/*.py")) == []
    assert listed(await glob(ws, path="src", include="pkg/*.py")) == ["pkg/deep.py"]
    assert listed(await glob(ws, path="src", include="*.md")) == ["pkg/notes.md"]


async def test_glob_exclude_drops_entries_and_whole_folders(ws: Path) -> None:
    assert listed(await glob(ws, include="*.py", exclude="test_*")) == [
        "setup.py", "src/app.py", "src/pkg/deep.py", "src/util.py",
    ]  # fmt: skip
    assert listed(await glob(ws, exclude="src")) == ["README.md", "secret_link.txt", "setup.py", "tests/test_app.py"]
    assert listed(await glob(ws, include="*.*", exclude="src/pkg")) == [
        "README.md", "secret_link.txt", "setup.py", "src/app.py", "src/util.py", "tests/test_app.py",
    ]  # fmt: skip


async def test_glob_type_dir_and_all(ws: Path) -> None:
    assert listed(await glob(ws, type="dir")) == [
        ".git/", "link_out/", "node_modules/", "src/", "src/pkg/", "tests/",
    ]  # fmt: skip
    everything = listed(await glob(ws, type="all", max_depth=1))
    assert everything == [
        ".git/", "README.md", "link_out/", "node_modules/", "secret_link.txt", "setup.py", "src/", "tests/",
    ]  # fmt: skip
    with pytest.raises(ToolError, match='"type" must be "file", "dir" or "all"'):
        await glob(ws, type="folders")


async def test_glob_max_depth(ws: Path) -> None:
    assert listed(await glob(ws, max_depth=1, include="*.py")) == ["setup.py"]
    assert listed(await glob(ws, max_depth=2, include="*.py")) == [
        "setup.py", "src/app.py", "src/util.py", "tests/test_app.py",
    ]  # fmt: skip
    assert total(await glob(ws, max_depth=0)) == 8
    with pytest.raises(ToolError, match="max_depth"):
        await glob(ws, max_depth=-1)
    with pytest.raises(ToolError, match="whole number"):
        await glob(ws, max_depth=1.5)


async def test_glob_limit_and_total(ws: Path) -> None:
    result = await glob(ws, limit=2, include="*.py")
    assert listed(result) == ["setup.py", "src/app.py"]
    assert total(result) == 5
    assert "[2 results limit reached (5 total matches); 3 more not shown." in result
    assert "limit reached" not in await glob(ws, limit=5, include="*.py")
    with pytest.raises(ToolError, match="limit"):
        await glob(ws, limit=0)


async def test_glob_limit_is_capped(tmp_path: Path) -> None:
    _tree(tmp_path, {f"f{i:03}.txt": "" for i in range(MAX_GLOB_RESULTS + 20)})
    result = await glob(tmp_path, limit=1000)
    assert len(listed(result)) == MAX_GLOB_RESULTS
    assert total(result) == MAX_GLOB_RESULTS + 20
    assert "20 more not shown" in result


async def test_glob_path_errors(ws: Path) -> None:
    with pytest.raises(ToolError, match="not a folder"):
        await glob(ws, path="setup.py")
    with pytest.raises(ToolError, match="does not exist"):
        await glob(ws, path="nope")


@pytest.mark.parametrize("path", ["..", "../outside", "/etc", "~", "link_out", "link_out/inner"])
async def test_glob_refuses_paths_outside(ws: Path, path: str) -> None:
    with pytest.raises(PathRefused) as info:
        await glob(ws, path=path)
    assert SECRET not in str(info.value) and "deep.txt" not in str(info.value)


async def test_glob_pattern_with_dotdot_finds_nothing_outside(ws: Path) -> None:
    result = await glob(ws, include="../outside/*", type="all")
    assert listed(result) == [] and SECRET not in result


# ---- grep_search ----


async def test_grep_lines_with_paths_relative_to_the_workspace(ws: Path) -> None:
    result = await grep(ws, pattern="TODO")
    assert listed(result) == [
        "README.md:2:TODO: write",
        "src/app.py:4:    # TODO: more",
        "tests/test_app.py:2:    assert True  # TODO",
    ]
    assert total(result) == 3
    assert SECRET not in result  # neither link was followed
    assert "[not searched inside: .git, node_modules" in result
    assert listed(await grep(ws, pattern="TODO", path="src")) == ["src/app.py:4:    # TODO: more"]
    assert listed(await grep(ws, pattern="TODO", path="./src/app.py")) == ["src/app.py:4:    # TODO: more"]


async def test_grep_without_line_numbers(ws: Path) -> None:
    assert listed(await grep(ws, pattern="TODO", path="src", return_line_numbers=False)) == [
        "src/app.py:    # TODO: more"
    ]


async def test_grep_literal_and_regex(ws: Path) -> None:
    assert listed(await grep(ws, pattern="'a.b'", path="src/pkg")) == [
        "src/pkg/deep.py:1:VALUE = 'a.b'",
        "src/pkg/deep.py:2:OTHER = 'axb'",
    ]
    assert listed(await grep(ws, pattern="'a.b'", path="src/pkg", literal=True)) == ["src/pkg/deep.py:1:VALUE = 'a.b'"]
    assert listed(await grep(ws, pattern="^def \\w+\\(x\\):$")) == ["src/util.py:1:def helper(x):"]
    assert listed(await grep(ws, pattern="(", literal=True, path="src/util.py")) == ["src/util.py:1:def helper(x):"]


async def test_grep_ignore_case(ws: Path) -> None:
    assert listed(await grep(ws, pattern="todo", path="src")) == ["src/pkg/notes.md:1:todo lower"]
    assert listed(await grep(ws, pattern="todo", path="src", ignore_case=True)) == [
        "src/app.py:4:    # TODO: more",
        "src/pkg/notes.md:1:todo lower",
    ]
    assert listed(await grep(ws, pattern="ToDo", path="src", ignore_case=True, literal=True)) == [
        "src/app.py:4:    # TODO: more",
        "src/pkg/notes.md:1:todo lower",
    ]


async def test_grep_include_exclude(ws: Path) -> None:
    assert listed(await grep(ws, pattern="TODO", include="*.py")) == [
        "src/app.py:4:    # TODO: more",
        "tests/test_app.py:2:    assert True  # TODO",
    ]
    assert listed(await grep(ws, pattern="TODO", exclude="tests")) == [
        "README.md:2:TODO: write",
        "src/app.py:4:    # TODO: more",
    ]
    assert listed(await grep(ws, pattern="TODO", path="src", include="pkg/*")) == [
        CASE_IGNORED_HEAD, "src/pkg/notes.md:1:todo lower"]
    assert listed(await grep(ws, pattern="todo", path="src", include="pkg/*")) == ["src/pkg/notes.md:1:todo lower"]
    assert listed(await grep(ws, pattern="TODO", path="src", include="pkg/*.py")) == []


async def test_a_grep_that_finds_nothing_as_written_shows_what_matches_with_case_ignored(ws: Path) -> None:
    """Asked where `invoice` is, a model learns of `class Invoice`, said to be matched
    with case ignored, rather than that nothing is there."""
    result = await grep(ws, pattern="# todo: MORE", path="src")
    assert listed(result) == [CASE_IGNORED_HEAD, "src/app.py:4:    # TODO: more"]
    assert total(result) == 1
    found = ["src/app.py:4:    # TODO: more"]
    assert listed(await grep(ws, pattern="Todo: More", literal=True)) == [CASE_IGNORED_HEAD, *found]
    # found as written: only that, never what case ignored would add
    assert listed(await grep(ws, pattern="todo", path="src")) == ["src/pkg/notes.md:1:todo lower"]
    # nothing either way, or a pattern without letters: the plain empty result
    assert listed(await grep(ws, pattern="Nowhere")) == []
    assert listed(await grep(ws, pattern="12345")) == []
    # asked with case ignored already: no second search, no head
    assert listed(await grep(ws, pattern="nowhere", ignore_case=True)) == []


async def test_grep_context_lines(tmp_path: Path) -> None:
    _tree(tmp_path, {"f.txt": "".join(f"line {i}{' hit' if i in (3, 5, 12) else ''}\n" for i in range(1, 16))})
    result = await grep(tmp_path, pattern="hit", context_lines=1)
    assert listed(result) == [
        "f.txt-2-line 2",
        "f.txt:3:line 3 hit",
        "f.txt-4-line 4",
        "f.txt:5:line 5 hit",
        "f.txt-6-line 6",
        "--",
        "f.txt-11-line 11",
        "f.txt:12:line 12 hit",
        "f.txt-13-line 13",
        "--",
    ]
    assert total(result) == 3
    # At the edges of the file the window is cut short.
    edge = listed(await grep(tmp_path, pattern="line (1|15)$", context_lines=2))
    assert edge == ["f.txt:1:line 1", "f.txt-2-line 2", "f.txt-3-line 3 hit", "--",
                    "f.txt-13-line 13", "f.txt-14-line 14", "f.txt:15:line 15", "--"]  # fmt: skip


async def test_grep_context_lines_are_capped(tmp_path: Path) -> None:
    before, after = "".join(f"l{i}\n" for i in range(100)), "".join(f"m{i}\n" for i in range(100))
    _tree(tmp_path, {"f.txt": before + "hit\n" + after})
    lines = listed(await grep(tmp_path, pattern="hit", context_lines=50))
    assert len(lines) == 2 * MAX_CONTEXT_LINES + 2  # the window and "--"


async def test_grep_cap_at_100_matches(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.txt": "hit\n" * 60, "b.txt": "hit\n" * 60})
    result = await grep(tmp_path, pattern="hit")
    assert len(listed(result)) == MAX_GREP_MATCHES
    assert listed(result)[-1] == "b.txt:40:hit"
    assert total(result) == MAX_GREP_MATCHES
    assert f"[{MAX_GREP_MATCHES} matches limit reached" in result


async def test_grep_exactly_100_matches_is_not_capped(tmp_path: Path) -> None:
    _tree(tmp_path, {"a.txt": "hit\n" * 60, "b.txt": "hit\n" * 40, "c.txt": "nothing\n"})
    result = await grep(tmp_path, pattern="hit")
    assert total(result) == MAX_GREP_MATCHES and "limit reached" not in result
    _tree(tmp_path, {"d.txt": "hit\n"})
    assert "limit reached" in await grep(tmp_path, pattern="hit")


async def test_grep_skips_files_over_2_mib(tmp_path: Path) -> None:
    filler = b"x" * 99 + b"\n"
    big = b"needle\n" + filler * (MAX_GREP_FILE_BYTES // len(filler) + 1)
    _tree(tmp_path, {"big.txt": big, "edge.txt": b"needle\n" + b"y" * (MAX_GREP_FILE_BYTES - 7)})
    assert (tmp_path / "edge.txt").stat().st_size == MAX_GREP_FILE_BYTES
    result = await grep(tmp_path, pattern="needle")
    assert listed(result) == ["edge.txt:1:needle"]
    assert "[files not searched: 1 over 2 MiB]" in result
    single = await grep(tmp_path, pattern="needle", path="big.txt")
    assert total(single) == 0 and "over 2 MiB" in single


async def test_grep_skips_binary_files(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "bin.dat": b"\x00\x01needle\n",
            "late_nul.txt": b"needle\n" + b"z" * (search.BINARY_SNIFF_BYTES + 10) + b"\x00\n",
        },
    )
    result = await grep(tmp_path, pattern="needle")
    assert listed(result) == ["late_nul.txt:1:needle"]
    assert "1 binary" in result


async def test_grep_invalid_regex_is_a_tool_error_with_the_parsers_message(ws: Path) -> None:
    with pytest.raises(ToolError) as info:
        await grep(ws, pattern="foo(bar")
    assert "invalid regex: missing ), unterminated subpattern" in str(info.value)
    assert "literal" in str(info.value)
    assert listed(await grep(ws, pattern="foo(bar", literal=True)) == []


async def test_a_glob_longer_than_the_limit_is_refused(ws: Path) -> None:
    # Its compiled form grows with it: a 200,000-character glob took 3.5 s to compile,
    # on the event loop.
    long = "*a" * (search.MAX_GLOB_CHARS // 2 + 1)
    with pytest.raises(ToolError, match='"include" is longer than'):
        await glob(ws, include=long)
    with pytest.raises(ToolError, match='"exclude" is longer than'):
        await grep(ws, pattern="x", exclude=long)


async def test_grep_argument_errors(ws: Path) -> None:
    with pytest.raises(ToolError, match='needs "pattern"'):
        await grep(ws)
    with pytest.raises(ToolError, match="empty"):
        await grep(ws, pattern="")
    with pytest.raises(ToolError, match="true or false"):
        await grep(ws, pattern="x", literal="maybe")
    with pytest.raises(ToolError, match="does not exist"):
        await grep(ws, pattern="x", path="missing.txt")


@pytest.mark.parametrize(
    "path", ["../outside/secret.txt", "../outside", "/etc/passwd", "secret_link.txt", "link_out", "link_out/secret.txt"]
)
async def test_grep_refuses_paths_outside_and_says_nothing_of_them(ws: Path, path: str) -> None:
    with pytest.raises(PathRefused) as info:
        await grep(ws, pattern="SECRET", path=path)
    assert SECRET not in str(info.value)


async def test_grep_symlinked_file_inside_the_workspace_is_searched_by_its_path(ws: Path) -> None:
    (ws / "alias.py").symlink_to(ws / "src" / "util.py")
    # Walking, a link is not followed; named, it resolves (inside) and is searched.
    assert listed(await grep(ws, pattern="helper")) == ["src/util.py:1:def helper(x):"]
    assert listed(await grep(ws, pattern="helper", path="alias.py")) == ["src/util.py:1:def helper(x):"]


async def test_grep_non_ascii_patterns(tmp_path: Path) -> None:
    _tree(tmp_path, {"f.txt": "café\nCAFÉ\nnaïve é+\nplain\n", "latin1.txt": b"caf\xe9\n"})
    assert listed(await grep(tmp_path, pattern="é+")) == ["f.txt:1:café", "f.txt:3:naïve é+"]
    assert listed(await grep(tmp_path, pattern="café", ignore_case=True)) == ["f.txt:1:café", "f.txt:2:CAFÉ"]
    assert listed(await grep(tmp_path, pattern="é+", literal=True)) == ["f.txt:3:naïve é+"]
    assert listed(await grep(tmp_path, pattern="caf.$", path="latin1.txt")) == ["latin1.txt:1:caf\ufffd"]


async def test_grep_a_line_matches_only_inside_itself(tmp_path: Path) -> None:
    _tree(tmp_path, {"f.txt": "foo\nbar\nfoo bar\n"})
    assert listed(await grep(tmp_path, pattern="foo\\s+bar")) == ["f.txt:3:foo bar"]
    assert listed(await grep(tmp_path, pattern="foo\nbar", literal=True)) == []
    assert listed(await grep(tmp_path, pattern="^bar$")) == ["f.txt:2:bar"]


async def test_grep_long_lines_are_cut(tmp_path: Path) -> None:
    _tree(tmp_path, {"min.js": "var a=1;" * 1000 + "needle\n"})
    line = listed(await grep(tmp_path, pattern="needle"))[0]
    assert len(line) < search.MAX_LINE_CHARS + 100 and "more characters]" in line


# ---- matching_lines against a line-by-line reference ----

REGEXES = ["a", "ab", "^a", "b$", "a\\s*b", "a|b$", "\\bab", "a.b", "(ab)+", "x*", "^$", "a\\nb", "abab", "ba ab",
           "^ab ab$", "[ab]{3}", "(?:ab)+ ?a", "b a$"]  # fmt: skip


def reference_lines(data: bytes, pattern: str, literal: bool, ignore_case: bool) -> list[int]:
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    rx = re.compile(re.escape(pattern.encode()) if literal else pattern.encode(), flags)
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline ends the last line; no empty line after it
    return [i + 1 for i, line in enumerate(lines) if rx.search(line)]


@pytest.mark.slow(reason="a long property test; CI runs it")
@settings(max_examples=1500, deadline=None)
@given(
    st.text(alphabet="abAB \n", max_size=60).map(str.encode),
    st.sampled_from(REGEXES),
    st.booleans(),
    st.booleans(),
)
def test_matching_lines_agrees_with_a_line_by_line_search(
    data: bytes, pattern: str, literal: bool, icase: bool
) -> None:
    query = compile_query(pattern, literal=literal, ignore_case=icase)
    got = [data.count(b"\n", 0, start) + 1 for start, _ in matching_lines(data, query)]
    assert got == reference_lines(data, pattern, literal, icase)


def test_a_regex_with_a_plain_run_is_found_first() -> None:
    assert compile_query(r"^\s*class \w+Warning\(\w*Deprecation").needle == b"Deprecation"
    assert compile_query(r"a(bcd)ef").needle == b"abcdef"
    assert compile_query(r"ab|cd").needle is None
    assert compile_query(r"(?i)abc").needle is None
    assert compile_query("abc", ignore_case=True).needle == b"abc"
    assert compile_query("def x", literal=True).exact


# ---- threads, cancellation, the event loop ----


async def test_search_runs_off_the_event_loop_and_stops_when_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path, {f"d{i // 50}/f{i}.txt": "needle\n" for i in range(400)})
    real_read = search.read_small
    reads: list[str] = []

    def slow_read(path: str | Path) -> bytes | str:
        reads.append(str(path))
        time.sleep(0.01)  # 400 files: 4 s if nothing stopped it
        return real_read(path)

    monkeypatch.setattr("actors.tools.grep_search.read_small", slow_read)  # where grep_search looks it up
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await trio.sleep(0.01)
            ticks += 1

    started = time.monotonic()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(ticker)
        with trio.move_on_after(0.3) as scope:
            await GrepSearch().run({"pattern": "zzz"}, ctx_for(tmp_path))
        nursery.cancel_scope.cancel()
    elapsed = time.monotonic() - started
    assert scope.cancelled_caught
    assert elapsed < 1.5
    assert 0 < len(reads) < 200
    assert ticks >= 5  # the loop kept running while the thread searched


async def test_glob_stops_when_cancelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path, {f"d{i}/f.txt": "" for i in range(300)})
    from actors.tools import globs

    real_scan = globs._scan
    scans: list[str] = []

    def slow_scan(path: str) -> list:
        scans.append(path)
        time.sleep(0.01)
        return real_scan(path)

    monkeypatch.setattr(globs, "_scan", slow_scan)
    with trio.move_on_after(0.2) as scope:
        await FileGlobSearch().run({}, ctx_for(tmp_path))
    assert scope.cancelled_caught
    assert len(scans) < 100


async def test_a_search_that_found_nothing_is_one_the_run_got_nowhere_with(ws: Path) -> None:
    """Both search tools end a result of no match as the run's ledger reads it
    (ledger.found_nothing: a led run stops after calls in a row that got nowhere), and
    a result with a match is not one."""
    from actors.runs.agent.ledger import found_nothing, got_nowhere

    for result in (await grep(ws, pattern="no-such-text-anywhere"), await glob(ws, include="*.nosuch")):
        assert total(result) == 0 and found_nothing("done", result) and got_nowhere("done", result), result
    for result in (await grep(ws, pattern="."), await glob(ws, include="*.py")):
        assert total(result) > 0 and not found_nothing("done", result) and not got_nowhere("done", result), result
