"""A script made to take its file from the command line by one command (the one file
name written in it read from sys.argv[1], the old one kept for a run given none), and
run on the file the request names where it asks (actors/runs/agent/small/argv_commands.py):
run by the real shell, the script run after with each file and with none."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from actors.runs.agent.small.commands import for_request
from tests.test_small_steps import call, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

HIVES = {
    "honey.py": ('"""Totals the jars."""\nimport json\n\nSOURCE = \'spring.csv\'\n\ntotal = 0\n'
                 "with open(SOURCE) as f:\n    for line in f:\n        total += int(line.split(',')[1])\n"
                 "print('jars:', total)\n"),
    "spring.csv": "north,3\nsouth,4\n",
    "autumn.csv": "north,10\neast,1\n",
}


def _tree(root: Path) -> None:
    write_tree(root, HIVES)


def _honey(root: Path, *args: str) -> str:
    return subprocess.run([sys.executable, "honey.py", *args], cwd=root, capture_output=True, text=True).stdout


@pytest.mark.parametrize("ask", [
    "honey.py is stuck on spring.csv; have it read the file from the command line, then run it on autumn and "
    "say the total",
    "make honey.py take the filename as an argument and run it on autumn.csv",
])
def test_the_script_reads_its_file_from_argv_and_is_run_on_the_one_asked(tmp_path, ask):
    _tree(tmp_path)
    (command,) = for_request(ask, tmp_path).whole["sed"]
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert done.stdout == "jars: 11\n"  # run on autumn.csv
    assert _honey(tmp_path, "autumn.csv") == "jars: 11\n" and _honey(tmp_path) == "jars: 7\n"
    assert (tmp_path / "honey.py").read_text().startswith('"""Totals the jars."""\nimport json\nimport sys\n')


def test_without_a_run_asked_only_the_script_changes_and_what_is_left_alone(tmp_path):
    _tree(tmp_path)
    (command,) = for_request("let honey.py read its input file from the command line", tmp_path).whole["sed"]
    assert "python3" not in command
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    assert _honey(tmp_path, "autumn.csv") == "jars: 11\n"
    # It reads argv already now; a script naming two files; no script named.
    assert "sed" not in for_request("make honey.py take the file from the command line", tmp_path).whole
    (tmp_path / "two.py").write_text("a = open('spring.csv').read()\nb = open('autumn.csv').read()\n")
    assert "sed" not in for_request("make two.py take the file from the command line", tmp_path).whole
    assert "sed" not in for_request("make it take the file from the command line", tmp_path).whole


async def test_asked_to_take_the_file_from_the_command_line_the_first_round_does_it(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, HIVES)
    ask = "make honey.py take the filename as an argument and run it on autumn.csv"
    (command,) = for_request(ask, folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "jars: 11"})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert d.backend.turns[1].reply_starts == ("jars: 11",)
    assert _honey(folder, "autumn.csv") == "jars: 11\n"
