"""Housekeeping asked of files found by what they are (actors/runs/agent/small/
housekeeping.py): the empty files or folders removed, all but one of each set of files
with the same bytes, the spaces in names; each command read off a real tree and run by
the real shell, and, at run level on the scripted backend made to say it is small, held
in the first round."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from actors.runs.agent.small import commands
from actors.runs.agent.small.housekeeping import Found, housekeeping_commands
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state


def _tree(root: Path, files: dict[str, str], folders: tuple[str, ...] = ()) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    for rel in folders:
        (root / rel).mkdir(parents=True, exist_ok=True)


def _run(root: Path, command: str) -> None:
    subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True)


def _left(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_the_empty_files_and_folders_asked_away_are_removed_and_nothing_else(tmp_path):
    _tree(tmp_path, {"ferns/a.txt": "", "ferns/deep/b.txt": "", "ferns/deep/c.txt": "kept\n", "log.log": "",
                     "pkg/__init__.py": "", ".hidden/e.txt": "", "notes.md": "n\n"}, ("bare/inner", "ferns/none"))
    whole = lambda ask: commands.for_request(ask, tmp_path).whole  # noqa: E731
    files = "rm ferns/a.txt ferns/deep/b.txt log.log"
    for ask in ("There are a bunch of empty files lying around in here. Clear them out",
                "delete all the empty files", "get rid of files that are empty", "remove the 0 byte files",
                "can you clean up the zero-length files"):
        assert whole(ask).get("rm") == [files], ask
    assert whole("delete the empty folders").get("rmdir") == ["rmdir bare/inner ferns/none bare"]
    assert whole("remove the empty files and any empty directories").get("rm") == \
        [f"{files} && rmdir bare/inner ferns/none bare"]
    assert whole("remove the empty files in ferns/").get("rm") == ["rm ferns/a.txt ferns/deep/b.txt"]
    for no in ("which files are empty?", "empty the trash folder", "delete log.log", "remove the blank lines"):
        assert not set(whole(no)) & {"rm", "rmdir"} or whole(no).get("rm") != [files], no
    _run(tmp_path, whole("remove the empty files and any empty directories")["rm"][0])
    assert _left(tmp_path) == [".hidden", ".hidden/e.txt", "ferns", "ferns/deep", "ferns/deep/c.txt", "notes.md",
                               "pkg", "pkg/__init__.py"]


def test_all_but_one_of_each_set_of_files_alike_are_removed_the_copy_named_ones_first(tmp_path):
    _tree(tmp_path, {"photos/cat.jpg": "meow", "photos/cat-copy.jpg": "meow", "old/cat.jpg": "meow",
                     "b (1).txt": "bee", "b.txt": "bee", "c.txt": "sea", "e1.txt": "", "e2.txt": ""})
    whole = lambda ask: commands.for_request(ask, tmp_path).whole  # noqa: E731
    gone = "rm b (1).txt"  # not written plain: no command
    assert whole("get rid of the duplicate files").get("rm") != [gone]
    (tmp_path / "b (1).txt").rename(tmp_path / "b_2.txt")
    expected = ["rm b_2.txt photos/cat-copy.jpg photos/cat.jpg"]  # old/cat.jpg: the shortest
    for ask in ("get rid of the duplicate files", "delete the dupes", "remove files that are identical",
                "there are exact copies of some photos, delete them",
                "i think some pictures are saved twice under other names, delete the extra copies",
                "a few files are in here more than once, clear out the spare copies"):
        assert whole(ask).get("rm") == expected, ask
    assert whole("remove the duplicate photos in photos/").get("rm") == ["rm photos/cat-copy.jpg"]
    assert "rm" not in whole("remove the duplicate lines in c.txt")
    assert "rm" not in whole("are there duplicate files?")
    _run(tmp_path, expected[0])
    assert _left(tmp_path) == ["b.txt", "c.txt", "e1.txt", "e2.txt", "old", "old/cat.jpg", "photos"]


def test_spaces_in_names_become_underscores_or_dashes_deepest_first(tmp_path):
    _tree(tmp_path, {"my notes/todo list.txt": "t\n", "plain.txt": "p\n", "a  b.md": "ab\n"})
    whole = lambda ask: commands.for_request(ask, tmp_path).whole  # noqa: E731
    command = whole("replace the spaces in file names with underscores")["mv"][0]
    assert command == ("mv 'my notes/todo list.txt' 'my notes/todo_list.txt' && mv 'a  b.md' a_b.md"
                       " && mv 'my notes' my_notes")
    assert "my-notes" in whole("no spaces in filenames please, use dashes")["mv"][0]
    _run(tmp_path, command)
    assert _left(tmp_path) == ["a_b.md", "my_notes", "my_notes/todo_list.txt", "plain.txt"]
    assert (tmp_path / "my_notes/todo_list.txt").read_text() == "t\n"
    entries = [Found("a b", False, 1), Found("a_b", False, 1)]
    assert housekeeping_commands("replace spaces in names with underscores", lambda: entries, lambda _: b"") == {}


async def test_asked_to_clear_out_empty_files_the_first_round_removes_them(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"ferns/a.txt": "", "notes.md": "n\n", "log.log": ""})
    command = "rm ferns/a.txt log.log"
    d.backend.push(call("exec_shell_command", command=command), {"text": "Removed ferns/a.txt and log.log."})
    await conv.send_message("There are a bunch of empty files lying around in here. Clear them out")
    await wait_state(conv, "idle", "error")
    first = d.backend.turns[0]
    assert left_open(first) == {"exec_shell_command"}
    pattern = dict(first.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, command) and not re.fullmatch(pattern, "rm notes.md")
    assert sorted(p.name for p in folder.rglob("*") if p.is_file()) == ["notes.md"]
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]


def test_scripts_that_may_not_run_are_made_runnable_and_nothing_else(tmp_path):
    _tree(tmp_path, {"tools/build.sh": "#!/bin/sh\necho built\n",
                     "tools/clean.py": "#!/usr/bin/env python3\nprint(1)\n", "tools/notes.txt": "build first\n",
                     "tools/ok.sh": "#!/bin/sh\necho ok\n", "run.sh": "#!/bin/sh\n"})
    (tmp_path / "tools/ok.sh").chmod(0o755)
    whole = lambda ask: commands.for_request(ask, tmp_path).whole  # noqa: E731
    expected = {"chmod": ["chmod +x tools/build.sh tools/clean.py"]}
    for ask in ("the scripts in tools/ won't run, it just says permission denied", "make the tools/ scripts executable",
                "tools/build.sh: Permission denied, can you sort it out"):
        got = whole(ask)
        assert got == expected or "tools/build.sh" in ask and got == {"chmod": ["chmod +x tools/build.sh"]}, ask
    _run(tmp_path, expected["chmod"][0])
    assert (tmp_path / "tools/build.sh").stat().st_mode & 0o100 and (tmp_path / "tools/clean.py").stat().st_mode & 0o100
    assert not (tmp_path / "tools/notes.txt").stat().st_mode & 0o111  # no script: left as it was
    assert "chmod" not in whole("the scripts in tools/ won't run, permission denied")  # every one may run now
    assert whole("permission denied when I run run.sh") == {"chmod": ["chmod +x run.sh"]}
    assert "chmod" not in whole("who has permission to edit tools/notes.txt?")
