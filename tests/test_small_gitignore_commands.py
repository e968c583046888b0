"""A request to make git ignore files answered by one command that adds the patterns
it names to .gitignore (actors/runs/agent/small/gitignore_commands.py): run by the real
shell, then judged by git itself (`git check-ignore`) on the files there and on new ones
of the same kinds, in a fresh repository with no global excludes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from actors.runs.agent.small.commands import for_request
from tests.test_small_steps import call, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

KILN = {
    "glaze.py": "print('glaze')\n",
    "firing.log": "cone 6\n",
    "notes/bisque.log": "cone 04\n",
    "shots/pot_01.png": "png\n",
    "shots/deep/pot_02.png": "png\n",
    "kiln.md": "# Kiln\n",
    "__pycache__/glaze.cpython-311.pyc": "x\n",
}
ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def _tree(root: Path) -> None:
    write_tree(root, KILN)


def _run(command: str, cwd: Path) -> str:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _ignored(root: Path, rels: list[str]) -> set[str]:
    assert shutil.which("git"), "git is needed to judge a .gitignore"
    subprocess.run(["git", "init", "-q"], cwd=root, env=ENV, check=True)
    done = subprocess.run(["git", "-c", f"core.excludesFile={os.devnull}", "check-ignore", "--no-index", "--", *rels],
                          cwd=root, env=ENV, capture_output=True, text=True)
    return set(done.stdout.splitlines())


@pytest.mark.parametrize("ask", [
    "git status is cluttered by .log files and shots/, ignore them in git",
    "make git ignore the log files and the shots folder",
    "add *.log and shots/ to the gitignore",
])
def test_what_the_request_names_is_ignored_new_files_too_and_nothing_else(tmp_path, ask):
    _tree(tmp_path)
    (command,) = for_request(ask, tmp_path).whole["printf"]
    _run(command, tmp_path)
    for rel in ("new.log", "shots/x/new.png", "deep/er/more.log"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    wanted = ["firing.log", "notes/bisque.log", "shots/pot_01.png", "shots/deep/pot_02.png", "new.log",
              "shots/x/new.png", "deep/er/more.log"]
    kept = ["glaze.py", "kiln.md"]
    assert _ignored(tmp_path, wanted + kept) == set(wanted)
    assert all((tmp_path / rel).exists() for rel in KILN)  # ignored, not removed


def test_the_usual_folders_by_name_an_old_gitignore_kept_and_nothing_twice(tmp_path):
    _tree(tmp_path)
    (tmp_path / ".gitignore").write_text("# mine\n*.log")  # no newline at its end
    (command,) = for_request("make git ignore __pycache__ and the log files", tmp_path).whole["printf"]
    _run(command, tmp_path)
    assert (tmp_path / ".gitignore").read_text() == "# mine\n*.log\n__pycache__/\n"
    assert _ignored(tmp_path, ["__pycache__/glaze.cpython-311.pyc", "firing.log", "glaze.py"]) == {
        "__pycache__/glaze.cpython-311.pyc", "firing.log"}
    (again,) = for_request("make git ignore __pycache__", tmp_path).whole["echo"]
    assert "already has __pycache__/" in _run(again, tmp_path)


def test_questions_and_other_git_requests_are_left_alone(tmp_path):
    _tree(tmp_path)
    for other in ("what does the .gitignore ignore?", "why does git ignore firing.log?", "commit glaze.py to git",
                  "add a .gitignore", "run git status"):
        assert ".gitignore" not in " ".join(c for cs in for_request(other, tmp_path).whole.values() for c in cs), \
            other


async def test_asked_to_ignore_logs_the_run_adds_them_in_its_first_round(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, KILN)
    ask = "make git ignore the log files"
    (command,) = for_request(ask, folder).whole["printf"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Added *.log to .gitignore."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert (folder / ".gitignore").read_text() == "*.log\n" and conv.info.end_reason == "answered"
