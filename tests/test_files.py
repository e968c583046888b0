"""read_file, write_file, edit_file and get_info (actors/tools/files.py)."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
import trio

from actors.errors import ToolError
from actors.fs.paths import PathRefused
from actors.tools.files import MAX_READ_BYTES, EditFile, GetInfo, ReadFile, WriteFile, plan_edit
from actors.tools.registry import RESULT_CAP_BYTES, ToolContext
from tests.special_files import BOUND_S, fifo, sparse, watchdog, zero_link


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("import os\n\ndef main():\n    print('hi')\n    return 0\n")
    (tmp_path / "outside.txt").write_text("TOP SECRET\n")
    os.symlink(tmp_path / "outside.txt", root / "leak.txt")
    return root.resolve()


def ctx(ws: Path) -> ToolContext:
    return ToolContext(conversation="c", workspace=ws, mode="full")


async def test_read_file_numbers_lines_and_ranges(ws):
    tool = ReadFile()
    out = await tool.run({"path": "src/main.py", "append_loc": True}, ctx(ws))
    assert out.result.splitlines()[0] == "1\u2192import os"
    assert out.result.splitlines()[3] == "4\u2192    print('hi')"
    assert out.file == "src/main.py"
    out = await tool.run({"path": "src/main.py", "start_line": 3, "end_line": 4}, ctx(ws))
    assert out.result == "def main():\n    print('hi')\n"
    assert tool.title({"path": "src/main.py"}) == "Read src/main.py"


async def test_read_file_errors(ws):
    tool = ReadFile()
    with pytest.raises(ToolError, match="no file"):
        await tool.run({"path": "nope.txt"}, ctx(ws))
    with pytest.raises(ToolError, match="folder"):
        await tool.run({"path": "src"}, ctx(ws))
    with pytest.raises(PathRefused) as info:
        await tool.run({"path": "leak.txt"}, ctx(ws))
    assert "SECRET" not in str(info.value)
    with pytest.raises(ToolError, match="path"):
        await tool.run({}, ctx(ws))
    with pytest.raises(ToolError, match="before start_line"):
        await tool.run({"path": "src/main.py", "start_line": 5, "end_line": 2}, ctx(ws))
    (ws / "bin.dat").write_bytes(b"\x00\x01\x02abc")
    with pytest.raises(ToolError, match="binary"):
        await tool.run({"path": "bin.dat"}, ctx(ws))
    (ws / "huge.txt").write_bytes(b"x" * (MAX_READ_BYTES + 1))
    with pytest.raises(ToolError, match="too large"):
        await tool.run({"path": "huge.txt"}, ctx(ws))


async def test_read_file_past_the_cap_says_where_to_go_on(ws):
    (ws / "big.txt").write_text("".join(f"line {i} " + "x" * 100 + "\n" for i in range(1, 2001)))
    out = await ReadFile().run({"path": "big.txt", "append_loc": True}, ctx(ws))
    assert len(out.result.encode()) <= RESULT_CAP_BYTES + 100
    last = out.result.splitlines()[-1]
    assert last.startswith("[output truncated: read on from line ")
    n = int(last.split("line ")[1].split(" ")[0])
    assert out.result.splitlines()[-2].startswith(f"{n - 1}\u2192")
    more = await ReadFile().run({"path": "big.txt", "start_line": n, "end_line": n}, ctx(ws))
    assert more.result.startswith(f"line {n} ")


async def test_write_file_creates_and_replaces(ws):
    tool = WriteFile()
    out = await tool.run({"path": "new/dir/a.txt", "content": "one\ntwo\n"}, ctx(ws))
    assert (ws / "new" / "dir" / "a.txt").read_text() == "one\ntwo\n"
    assert out.result == "Created new/dir/a.txt: 2 lines, 8 bytes."
    assert out.file == "new/dir/a.txt" and "+one" in out.diff
    out = await tool.run({"path": "new/dir/a.txt", "content": "one\nTWO\nthree\n"}, ctx(ws))
    assert out.result == "Replaced new/dir/a.txt: 3 lines, 14 bytes; the changed span had 1 lines and has 2."
    assert "-two" in out.diff and "+TWO" in out.diff
    assert "TWO" not in out.result  # the effect, not the content
    assert tool.title({"path": "page.html"}) == "Write page.html"


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
async def test_a_file_the_agent_creates_gets_the_mode_the_umask_gives_as_any_program(ws, tmp_path, umask):
    """write_file, edit_file's new files and an ACP agent's writes share write_whole; the
    daemon's own files (rules, credentials) stay private by their own mode."""
    from actors.fs.atomic import current_umask, write_atomic
    from actors.tools.files import write_whole

    old = os.umask(umask)
    try:
        assert current_umask() == umask
        await WriteFile().run({"path": "new/made.txt", "content": "x\n"}, ctx(ws))
        write_whole(ws / "by-acp.txt", b"y\n")
        (ws / "by-hand.txt").write_text("z\n")  # what a program gives a new file
        secret = tmp_path / "secret.json"
        write_atomic(secret, b"{}", mode=0o600)
    finally:
        os.umask(old)
    expected = stat.S_IMODE((ws / "by-hand.txt").stat().st_mode)
    assert expected == 0o666 & ~umask
    for made in (ws / "new" / "made.txt", ws / "by-acp.txt"):
        assert stat.S_IMODE(made.stat().st_mode) == expected, made
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600


async def test_write_file_keeps_mode_and_refuses_outside(ws, tmp_path):
    target = ws / "run.sh"
    target.write_text("#!/bin/sh\n")
    os.chmod(target, 0o755)
    await WriteFile().run({"path": "run.sh", "content": "#!/bin/sh\necho hi\n"}, ctx(ws))
    assert os.stat(target).st_mode & 0o777 == 0o755
    for bad in ("../escape.txt", "/tmp/escape.txt", "leak.txt", "~/x"):
        with pytest.raises(PathRefused):
            await WriteFile().run({"path": bad, "content": "x"}, ctx(ws))
    assert (tmp_path / "outside.txt").read_text() == "TOP SECRET\n"
    assert not (tmp_path / "escape.txt").exists()
    os.symlink(ws / "nowhere.txt", ws / "dangle")
    with pytest.raises(PathRefused):
        await WriteFile().run({"path": "dangle", "content": "x"}, ctx(ws))
    assert not (ws / "nowhere.txt").exists()
    assert not [p for p in os.listdir(ws) if p.endswith(".bmoe-tmp")]


async def test_edit_file_applies_exact_edits_at_once(ws):
    tool = EditFile()
    args = {
        "path": "src/main.py",
        "edits": [
            {"old_text": "print('hi')", "new_text": "print('hello')"},
            {"old_text": "return 0", "new_text": "return 1"},
        ],
    }
    preview = await tool.preview(args, ctx(ws))
    assert preview is not None and "+    print('hello')" in preview.diff
    assert "print('hi')" in (ws / "src" / "main.py").read_text()  # a preview changes nothing
    out = await tool.run(args, ctx(ws))
    assert (ws / "src" / "main.py").read_text() == "import os\n\ndef main():\n    print('hello')\n    return 1\n"
    assert out.result.startswith("--- a/src/main.py\n+++ b/src/main.py\n@@")
    assert " def main():" in out.result  # surrounding lines show where it landed
    assert out.diff == out.result and out.file == "src/main.py"


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ([{"old_text": "absent", "new_text": "x"}], "was not found"),
        ([{"old_text": "    ", "new_text": "x"}], "occurs 2 times"),
        (
            [{"old_text": "def main():\n    print", "new_text": "a"}, {"old_text": "print('hi')", "new_text": "b"}],
            "overlap",
        ),
        ([{"old_text": "", "new_text": "x"}], "must not be empty"),
        ([], "non-empty array"),
        ("nope", "non-empty array"),
        ([{"old_text": "import os", "new_text": "import os"}], "No change"),
        ([{"old_text": "print('hi')  ", "new_text": "x"}], "was not found"),  # no whitespace-tolerant fallback
        ([{"old_text": 5, "new_text": "x"}], "strings"),
    ],
)
async def test_edit_file_refusals_change_nothing(ws, edits, message):
    before = (ws / "src" / "main.py").read_text()
    with pytest.raises(ToolError, match=message):
        await EditFile().run({"path": "src/main.py", "edits": edits}, ctx(ws))
    assert (ws / "src" / "main.py").read_text() == before


def test_plan_edit_is_against_the_original():
    plan = plan_edit("a b c", "f", [("a", "b"), ("b", "c")])
    assert plan.new == "b c c"


async def test_get_info(ws):
    out = await GetInfo().run({}, ctx(ws))
    info = json.loads(out.result)
    assert info["cwd"] == str(ws) and info["os"]


async def test_read_file_takes_append_loc_written_as_a_string(ws):
    tool = ReadFile()
    plain = await tool.run({"path": "src/main.py", "append_loc": "false"}, ctx(ws))
    assert plain.result.splitlines()[0] == "import os"
    numbered = await tool.run({"path": "src/main.py", "append_loc": "true"}, ctx(ws))
    assert numbered.result.splitlines()[0] == "1\u2192import os"
    with pytest.raises(ToolError, match="append_loc"):
        await tool.run({"path": "src/main.py", "append_loc": "sometimes"}, ctx(ws))


# ---- special files: a FIFO is never waited on, a device never read, a link out refused ----


async def test_read_file_refuses_a_fifo_at_once(ws):
    pipe = fifo(ws / "pipe")
    started = time.monotonic()
    with watchdog(pipe), pytest.raises(ToolError) as info:
        await ReadFile().run({"path": "pipe"}, ctx(ws))
    assert time.monotonic() - started < BOUND_S
    assert "FIFO" in str(info.value) and "regular" in str(info.value)


async def test_edit_and_write_refuse_a_fifo_at_once_and_leave_it(ws):
    pipe = fifo(ws / "pipe")
    edit = {"path": "pipe", "edits": [{"old_text": "a", "new_text": "b"}]}
    for tool, args in ((EditFile(), edit), (WriteFile(), {"path": "pipe", "content": "x"})):
        started = time.monotonic()
        with watchdog(pipe), pytest.raises(ToolError) as info:
            await tool.preview(args, ctx(ws))
        assert time.monotonic() - started < BOUND_S, tool.name
        assert "FIFO" in str(info.value)
    with watchdog(pipe), pytest.raises(ToolError):
        await WriteFile().run({"path": "pipe", "content": "x"}, ctx(ws))
    assert pipe.is_fifo()


async def test_a_device_behind_a_link_and_a_huge_sparse_file_are_not_read(ws):
    zero_link(ws / "zero")
    sparse(ws / "huge.log")
    for tool, args in (
        (ReadFile(), {"path": "zero"}),
        (EditFile(), {"path": "zero", "edits": [{"old_text": "a", "new_text": "b"}]}),
        (WriteFile(), {"path": "zero", "content": "x"}),
    ):
        with pytest.raises(PathRefused):
            await bounded_tool(tool, args, ws)
    with pytest.raises(ToolError) as info:
        await bounded_tool(ReadFile(), {"path": "huge.log"}, ws)
    assert "too large" in str(info.value)
    with pytest.raises(ToolError) as info:
        await bounded_tool(EditFile(), {"path": "huge.log", "edits": [{"old_text": "a", "new_text": "b"}]}, ws)
    assert "too large" in str(info.value)


async def bounded_tool(tool, args, ws):
    with trio.fail_after(BOUND_S):
        return await tool.preview(args, ctx(ws)) if tool.name != "read_file" else await tool.run(args, ctx(ws))


async def test_an_edit_of_a_huge_repetitive_file_gets_its_diff_at_once(ws):
    """difflib alone took 26 s for this; the bounded diff compares only the changed part."""
    import trio

    (ws / "big.txt").write_text("same line\n" * 50_000 + "old\n" + "same line\n" * 50_000)
    with trio.fail_after(10):
        out = await EditFile().run({"path": "big.txt", "edits": [{"old_text": "old\n", "new_text": "new\n"}]}, ctx(ws))
    assert "@@ -49998,7 +49998,7 @@\n" in out.diff and "-old\n+new\n" in out.diff  # the whole file's numbers
    whole = await WriteFile().run({"path": "other.txt", "content": "x\n" * 9000}, ctx(ws))
    assert "too large to show as a diff" in whole.diff
