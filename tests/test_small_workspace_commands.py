"""Questions about the workspace's files and unpacking an archive (actors/runs/agent/
small/workspace_commands.py), and kinds of file said in words: each command read off a
real tree and run by the real shell, and at run level, on the scripted backend made to
say it is small, held in the first round with the answer begun with what it printed."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from actors.runs.agent.small.commands import for_request
from actors.runs.agent.small.lookup import named_folders
from actors.runs.agent.small.workspace_commands import with_kinds
from tests.test_small_steps import call, left_open, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

FILES = {"app.py": "import os\nfrom json import dumps\n\nprint(dumps(os.sep))\n", "tools/a_tool.py": "x = 1\n",
         "tools/big.log": "line\n" * 50, "run.log": "ok\n", ".hidden/h.py": "", "readme.md": "hi\n"}


def _tree(root: Path) -> None:
    write_tree(root, FILES)


def _sh(root: Path, command: str) -> str:
    return subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True, text=True).stdout.strip()


def test_kinds_said_in_words_are_read_as_extensions_and_a_path_named_sub_is_a_folder():
    assert with_kinds("delete the log files") == "delete the .log files"
    assert with_kinds("how many Python scripts are there") == "how many .py scripts are there"
    assert with_kinds("fix the text file notes.md") == "fix the text file notes.md"  # one file, named
    assert with_kinds("the .text files should end in .md") == "the .text files should end in .md"
    assert named_folders("how many .py files in sub/") == ["sub"]
    assert named_folders("put it in a sub folder") == []


def test_questions_of_the_files_are_answered_by_the_command_that_prints_it(tmp_path):
    _tree(tmp_path)
    answer = lambda ask: _sh(tmp_path, next(iter(for_request(ask, tmp_path).whole.values()))[0])  # noqa: E731
    assert answer("how many python files are there?") == "2"  # not the hidden one
    assert answer("how many .py files in tools/") == "1"
    assert answer("count the log files in the tools folder") == "1"
    assert answer("what's the biggest file here") == "250 ./tools/big.log"
    assert answer("which is the smallest .py file") == "6 ./tools/a_tool.py"
    assert answer("what does app.py import?") == "1:import os\n2:from json import dumps"
    assert answer("which modules does app.py depend on") == "1:import os\n2:from json import dumps"
    (listed,) = for_request("put the names of the .py files in tools/ into tools.txt, one per line",
                            tmp_path).whole["find"]
    _sh(tmp_path, listed)
    assert (tmp_path / "tools.txt").read_text() == "a_tool.py\n"
    _sh(tmp_path, for_request("write the paths of the python files to every.txt", tmp_path).whole["find"][0])
    assert (tmp_path / "every.txt").read_text() == "app.py\ntools/a_tool.py\n"
    assert "rm" in for_request("delete the log files", tmp_path).whole
    _sh(tmp_path, for_request("delete the log files", tmp_path).whole["rm"][0])
    assert not (tmp_path / "run.log").exists() and not (tmp_path / "tools/big.log").exists()
    for no in ("sort the imports in app.py", "how many lines are in app.py", "what's the biggest number in app.py"):
        assert "find" not in for_request(no, tmp_path).whole and "grep" not in for_request(no, tmp_path).whole, no


def test_an_archive_is_unpacked_where_asked_and_nothing_there_overwritten(tmp_path):
    _tree(tmp_path)
    with zipfile.ZipFile(tmp_path / "kit.zip", "w") as z:
        z.writestr("kit/a.txt", "new\n")
        z.writestr("readme.md", "from the zip\n")
    assert for_request("unzip kit.zip", tmp_path).whole == {"unzip": ["unzip -n kit.zip"]}
    (command,) = for_request("extract kit.zip into unpacked/", tmp_path).whole["unzip"]
    assert command == "unzip -n kit.zip -d unpacked"
    _sh(tmp_path, command)
    assert (tmp_path / "unpacked/kit/a.txt").read_text() == "new\n"
    _sh(tmp_path, "unzip -n kit.zip")
    assert (tmp_path / "readme.md").read_text() == "hi\n"  # there already: kept
    _sh(tmp_path, "tar -czf kit.tar.gz unpacked")
    (command,) = for_request("untar kit.tar.gz into restored", tmp_path).whole["tar"]
    assert command == "mkdir -p restored && tar --skip-old-files -xzf kit.tar.gz -C restored"
    _sh(tmp_path, command)
    assert (tmp_path / "restored/unpacked/kit/a.txt").read_text() == "new\n"
    assert for_request("unzip missing.zip", tmp_path).whole.get("unzip") is None


async def test_asked_how_many_files_of_a_kind_the_first_round_counts_and_the_answer_begins_with_it(
        real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"a_one.py": "", "b_two.py": "", "notes.md": ""})
    ask = "how many python files are there?"
    (command,) = for_request(ask, folder).whole["find"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "2 Python files."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    first, second = d.backend.turns
    assert left_open(first) == {"exec_shell_command"}
    assert second.reply_starts == ("2",)
    assert conv.info.end_reason == "answered"
