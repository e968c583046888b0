"""exec_shell_command (actors/tools/shell.py): output, limits, process groups, consent."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest
import trio

from actors.errors import ToolError
from actors.tools.registry import ToolContext
from actors.tools.shell import MAX_OUTPUT_BYTES, ExecShellCommand, arguments_stay_inside
from tests.test_conversation import tool_items
from tests.waiting import wait_for, wait_state


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    (tmp_path / "secret.txt").write_text("TOP SECRET\n")
    return root.resolve()


def ctx(ws: Path) -> ToolContext:
    return ToolContext(conversation="c", workspace=ws, mode="full")


async def test_output_and_exit_code(ws):
    out = await ExecShellCommand().run({"command": "cat a.txt; echo err >&2; exit 3"}, ctx(ws))
    assert out.result == "alpha\nerr\n\n[exit code: 3]"


async def test_a_script_named_as_a_program_is_told_how_to_run(ws):
    """`tally.py` as a command exits 127 (126 as `./tally.py`, not executable): the
    result says how to run it, before the status, which stays the last line."""
    (ws / "tally.py").write_text("print(7)\n")
    (ws / "tools").mkdir()
    (ws / "tools" / "go.sh").write_text("echo go\n")
    hint = "[tally.py is a file here, not a program: run it as `python3 tally.py`.]"
    out = await ExecShellCommand().run({"command": "tally.py"}, ctx(ws))
    assert out.result.endswith(f"\n{hint}\n[exit code: 127]")
    out = await ExecShellCommand().run({"command": "echo a && ./tally.py > out.txt"}, ctx(ws))
    assert out.result.endswith(f"\n{hint}\n[exit code: 126]")
    out = await ExecShellCommand().run({"command": "tools/go.sh"}, ctx(ws))
    assert "run it as `sh tools/go.sh`" in out.result
    ran = await ExecShellCommand().run({"command": "python3 tally.py"}, ctx(ws))
    assert ran.result == "7\n\n[exit code: 0]"
    # Nothing to say: a program that is not there, a script that is not, another failure.
    for command in ("no-such-program", "missing.py", "cat nothing.txt"):
        out = await ExecShellCommand().run({"command": command}, ctx(ws))
        assert "[exit code: " in out.result and " is a file here" not in out.result, command


async def test_runs_in_the_workspace(ws):
    out = await ExecShellCommand().run({"command": "pwd"}, ctx(ws))
    assert out.result.splitlines()[0] == str(ws)


async def test_output_is_capped_and_drained(ws):
    command = "head -c 1000000 /dev/zero | tr '\\0' x; echo; echo done >&2"
    out = await ExecShellCommand().run({"command": command}, ctx(ws))
    assert len(out.result) < MAX_OUTPUT_BYTES + 200
    assert "[output truncated:" in out.result and out.result.endswith("[exit code: 0]")
    small = await ExecShellCommand().run({"command": "seq 1 10000", "max_output_size": 100}, ctx(ws))
    assert small.result.startswith("1\n2\n") and "[output truncated:" in small.result


async def test_timeout_is_an_error_and_kills_the_group(ws):
    with pytest.raises(ToolError) as info:
        await ExecShellCommand().run({"command": "echo started; sleep 30", "timeout": 1}, ctx(ws))
    assert "started" in str(info.value) and "time limit" in str(info.value)


async def test_bad_arguments(ws):
    for args in ({}, {"command": ""}, {"command": 5}, {"command": "ls", "timeout": "x"}):
        with pytest.raises(ToolError):
            await ExecShellCommand().run(args, ctx(ws))


def _group_members(pgid: int) -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return out


async def test_stop_kills_the_whole_group_within_2s(real_tools, tmp_path):
    folder = tmp_path / "proj"
    folder.mkdir()
    ws = await real_tools.hub.add_workspace(str(folder))
    command = "sh -c 'sleep 60 & sleep 60; wait'"
    call = {"name": "exec_shell_command", "arguments": {"command": command, "timeout": 100}}
    real_tools.backend.push({"tool_calls": [call]})
    conv = await real_tools.hub.create(workspace=ws.id, mode="full")
    await conv.send_message("run it")
    await wait_for(lambda: any(i.kind == "tool" and i.state == "running" for i in conv.items))
    sleepers: list[psutil.Process] = []
    with trio.fail_after(10):
        while len(sleepers) < 2:
            sleepers = [p for p in psutil.process_iter(["cmdline", "cwd"])
                        if p.info["cmdline"] == ["sleep", "60"] and p.info["cwd"] == str(folder.resolve())]
            await trio.sleep(0.05)
    pgid = os.getpgid(sleepers[0].pid)
    assert all(os.getpgid(p.pid) == pgid for p in sleepers)
    assert pgid != os.getpgid(0)  # its own group, not the daemon's
    before = trio.current_time()
    assert await conv.stop() is True
    with trio.fail_after(2):
        while _group_members(pgid):
            await trio.sleep(0.02)
    assert trio.current_time() - before < 2
    assert tool_items(conv)[0].state == "error"
    await wait_state(conv, "idle")


def test_read_only_commands_skip_the_question_only_inside(ws, tmp_path):
    tool = ExecShellCommand()
    assert tool.is_change({"command": "cat a.txt"}, ws) is False
    assert tool.is_change({"command": "rm a.txt"}, ws) is True
    assert tool.is_change({"command": "git status"}, ws) is True
    os.symlink(tmp_path / "secret.txt", ws / "leak")
    os.symlink(tmp_path, ws / "up")
    assert tool.is_change({"command": "cat leak"}, ws) is True
    assert tool.is_change({"command": "cat up/secret.txt"}, ws) is True
    assert tool.is_change({"command": "cat *"}, ws) is True  # the glob would reach the link
    assert tool.is_change({"command": "grep -n alpha a.txt"}, ws) is False
    assert not arguments_stay_inside("cat l*", ws)
    assert arguments_stay_inside("cat a*", ws)


def test_title(ws):
    assert ExecShellCommand().title({"command": "npm test"}) == "Run npm test"
    assert ExecShellCommand().title({}) == "Run a command"
