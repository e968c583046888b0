"""A script that works only when started from its own folder, mended by one command
that opens its files from its own file's folder (actors/runs/agent/small/cwd_commands.py):
run by the real shell, then the script run from the top of the workspace, from its own
folder and from elsewhere, each printing what it printed before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from actors.runs.agent.small.commands import for_request
from tests.test_small_steps import call, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

BEEHIVE = {
    "apiary/count.py": ('"""Counts the frames."""\nfrom __future__ import annotations\n\nimport sys\n\n'
                        "FRAMES = 'frames.txt'\n\n\ndef total():\n    with open(FRAMES) as f:\n"
                        "        return sum(int(x) for x in f)\n\n\n"
                        "print(total(), open('queens/list.txt').read().strip())\n"),
    "apiary/frames.txt": "3\n4\n",
    "apiary/queens/list.txt": "buckfast\n",
    "apiary/notes.md": "# notes\n",
    "top.py": "print(open('apiary/notes.md').read().strip())\n",
}


def _tree(root: Path) -> None:
    write_tree(root, BEEHIVE)


def _py(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True, text=True)


@pytest.mark.parametrize("ask", [
    "the frame counter breaks with FileNotFoundError unless I run it inside its own directory",
    "count.py breaks when I run it from another directory",
    "make the apiary script work from anywhere, not just its own folder",
])
def test_the_script_opens_its_files_from_its_own_folder_and_runs_from_anywhere(tmp_path, ask):
    _tree(tmp_path)
    script = tmp_path / "apiary/count.py"
    assert _py(script, tmp_path).returncode != 0 and _py(script, script.parent).stdout == "7 buckfast\n"
    (command,) = for_request(ask, tmp_path).whole["sed"]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True)
    for where in (tmp_path, script.parent, tmp_path / "apiary/queens"):
        done = _py(script, where)
        assert done.stdout == "7 buckfast\n", (where, done.stderr)
    text = script.read_text()
    assert text.startswith('"""Counts the frames."""\nfrom __future__ import annotations\n\nimport sys\nimport os\n')
    assert (tmp_path / "top.py").read_text() == BEEHIVE["top.py"]  # a path from the top is right as it is


def test_other_requests_and_scripts_that_find_their_folder_are_left_alone(tmp_path):
    _tree(tmp_path)
    for other in ("count the lines of apiary/frames.txt", "what does count.py print?",
                  "add a queen to apiary/queens/list.txt", "add a line saying cd build to apiary/notes.md"):
        assert not any("__file__" in c for cs in for_request(other, tmp_path).whole.values() for c in cs), other
    found = BEEHIVE["apiary/count.py"].replace("import sys\n", "import sys\nHERE = __file__\n")
    (tmp_path / "apiary/count.py").write_text(found)
    assert "sed" not in for_request("count.py fails from the top folder", tmp_path).whole


async def test_told_it_dies_from_the_top_folder_the_run_mends_it_in_its_first_round(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, BEEHIVE)
    ask = "count.py dies with FileNotFoundError unless I cd into apiary"
    (command,) = for_request(ask, folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "It runs from anywhere now."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert _py(folder / "apiary/count.py", folder).stdout == "7 buckfast\n"
    assert conv.info.end_reason == "answered"
