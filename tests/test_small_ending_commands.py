"""A request to change text files' line endings, Windows' (CR LF) to Unix's or back,
answered by one `sed` over the files whose bytes have the endings to change, in the files
or folder it names, else in the whole workspace with Windows' own scripts kept
(actors/runs/agent/small/ending_commands.py): run by the real shell, the bytes checked."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from actors.runs.agent.small.commands import for_request
from tests.test_small_steps import call, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

ORCHARD = {
    "orchard/rows.txt": b"row 1 bramley\r\nrow 2 cox\r\n",
    "orchard/pruning.md": b"# Pruning\r\n\r\nwinter, not summer\r\n",
    "orchard/deep/grafts.csv": b"stock,scion\r\nM9,gala\r\n",
    "orchard/already.txt": b"lf only\n",
    "setup.bat": b"@echo off\r\necho hi\r\n",
    "press.py": b"print('cider')\r\n",
    "readme.txt": b"top level\r\n",
}


def _tree(root: Path) -> None:
    write_tree(root, ORCHARD)


def _run(command: str, cwd: Path) -> str:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("ask", [
    "all of orchard/ has CRLF endings from windows, turn them into unix ones",
    "diffs in the orchard folder are full of ^M, fix the line endings",
    "convert orchard/ from CRLF to LF",
    "strip the carriage returns from the files in orchard/",
])
def test_a_folders_files_lose_their_carriage_returns_and_nothing_else_changes(tmp_path, ask):
    _tree(tmp_path)
    (command,) = for_request(ask, tmp_path).whole["sed"]
    _run(command, tmp_path)
    for rel, data in ORCHARD.items():
        now = (tmp_path / rel).read_bytes()
        assert now == (data.replace(b"\r\n", b"\n") if rel.startswith("orchard/") else data), rel


def test_unasked_for_a_place_every_text_file_but_windows_scripts(tmp_path):
    _tree(tmp_path)
    (command,) = for_request("make all the files use unix line endings", tmp_path).whole["sed"]
    _run(command, tmp_path)
    assert (tmp_path / "setup.bat").read_bytes() == ORCHARD["setup.bat"]
    assert (tmp_path / "press.py").read_bytes() == b"print('cider')\n"
    assert (tmp_path / "orchard/deep/grafts.csv").read_bytes() == b"stock,scion\nM9,gala\n"
    # Nothing left to change: the command says so.
    (again,) = for_request("make all the files use unix line endings", tmp_path).whole["echo"]
    assert "No file asked for has CR LF" in _run(again, tmp_path)


def test_to_windows_only_where_named_and_never_doubled(tmp_path):
    _tree(tmp_path)
    (command,) = for_request("convert orchard/already.txt and orchard/rows.txt to windows line endings",
                             tmp_path).whole["sed"]
    _run(command, tmp_path)
    assert (tmp_path / "orchard/already.txt").read_bytes() == b"lf only\r\n"
    assert (tmp_path / "orchard/rows.txt").read_bytes() == ORCHARD["orchard/rows.txt"]
    assert not for_request("convert everything to windows line endings", tmp_path).whole.get("sed")
    for other in ("how many lines does readme.txt have?", "add a line to readme.txt saying hello",
                  "which files have windows line endings?", "fix the missing newline at the end of readme.txt",
                  "fix the line breaks in readme.txt"):
        assert not any("\\r" in c for cs in for_request(other, tmp_path).whole.values() for c in cs), other


async def test_asked_to_convert_line_endings_the_run_does_it_in_its_first_round(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"notes/a.txt": "x\n"})
    (folder / "notes/a.txt").write_bytes(b"one\r\ntwo\r\n")
    ask = "convert the files in notes/ to unix line endings"
    (command,) = for_request(ask, folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Converted notes/a.txt to LF."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert (folder / "notes/a.txt").read_bytes() == b"one\ntwo\n"
    assert conv.info.end_reason == "answered"
