"""Two things asked at once (actors/runs/agent/small/commands.clauses: each part's whole
command, one after another) and a version bumped with its changelog entry
(release_commands.py); each command run by the real shell on a real tree, and at run
level, on the scripted backend made to say it is small, held in the first round."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from actors.runs.agent.small.commands import clauses, for_request
from actors.runs.agent.small.release_commands import release_commands
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.trees import write_tree
from tests.waiting import wait_state


def _tree(root: Path, files: dict[str, str]) -> None:
    write_tree(root, files)


def _run(root: Path, command: str) -> str:
    return subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True, text=True).stdout


def test_a_request_is_cut_into_the_things_it_asks_for_and_it_names_the_file_before():
    assert clauses("sort names.txt, then count the lines in it") == ["sort names.txt", "count the lines in names.txt"]
    assert clauses("rename alpha.txt to beta.txt and delete gamma.txt") == ["rename alpha.txt to beta.txt",
                                                                            "delete gamma.txt"]
    assert clauses("sort names.txt; tell me how many lines it has") == ["sort names.txt",
                                                                        "tell me how many lines names.txt has"]
    assert clauses("delete the logs. then zip up the pics folder") == ["delete the logs", "zip up the pics folder"]
    for one in ("count the lines in alpha.txt and beta.txt", "give prices.csv a total column (packets and price)",
                "move the cats and dogs into pets/", "fix the bug so it works"):
        assert clauses(one) == [one], one


def test_each_part_with_one_whole_command_makes_them_one_after_another(tmp_path):
    _tree(tmp_path, {"names.txt": "pear\napple\nfig\n", "alpha.txt": "a\n", "gamma.txt": "g\n", "keep.md": "k\n"})
    whole = lambda ask: for_request(ask, tmp_path).whole  # noqa: E731
    assert whole("sort names.txt, then count the lines in it") == \
        {"sort": ["sort -o names.txt names.txt && wc -l names.txt"]}
    assert whole("rename alpha.txt to beta.txt and delete gamma.txt") == \
        {"mv": ["mv alpha.txt beta.txt && rm gamma.txt"]}
    assert "&&" not in str(whole("rename alpha.txt to beta.txt and then fix the bug"))  # a part with none: no join
    assert whole("rename alpha.txt to beta.txt")["mv"] == ["mv alpha.txt beta.txt"]
    # A part that only runs a script: run, after the rest (alone, the request is the model's)
    (tmp_path / "calc.py").write_text("print(2)\n")
    assert whole("replace 2 with 3 in calc.py, then run it to check") == \
        {"sed": ["sed -i 's/\\b2\\b/3/g' calc.py && python3 calc.py"]}
    assert whole("run calc.py") == {} and whole("run calc.py and fix the error") == {}
    # "it" after a rename is the new name; a part that names a path an earlier part moves: no join
    assert clauses("copy keep.md to kept.md and then sort it") == ["copy keep.md to kept.md", "sort kept.md"]
    assert whole("append 'x' to keep.md and then rename it to kept.md") == \
        {"echo": ["echo 'x' >> keep.md && mv keep.md kept.md"]}
    assert "&&" not in str(whole("delete keep.md and count the lines in keep.md"))
    (tmp_path / "calc.py").unlink()
    assert _run(tmp_path, "sort -o names.txt names.txt && wc -l names.txt").strip() == "3 names.txt"
    _run(tmp_path, "mv alpha.txt beta.txt && rm gamma.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["beta.txt", "keep.md", "names.txt"]
    assert (tmp_path / "names.txt").read_text() == "apple\nfig\npear\n"


def test_a_version_bumped_where_it_is_written_and_its_changelog_entry_put_on_top_in_its_shape(tmp_path):
    files = {"jam/__init__.py": '"""Jam."""\n\n__version__ = "0.4.2"\n', "jam/boil.py": "LIMIT = '0.4.2'\n",
             "pyproject.toml": '[project]\nname = "jam"\nversion = "0.4.2"\n',
             "CHANGES.md": "# Changes\n\n## [0.4.2] - 2024-05-01\n* fixed rounding\n\n## [0.4.1]\n* first\n"}
    _tree(tmp_path, files)
    texts = lambda: [(p, (tmp_path / p).read_text()) for p in files]  # noqa: E731
    (command,) = release_commands("bump jam to 0.5.0 and put a line in CHANGES.md for it: added pectin support",
                                  texts)["sed"]
    assert command == ("sed -i '3s/0\\.4\\.2/0.5.0/' jam/__init__.py && sed -i '3s/0\\.4\\.2/0.5.0/' pyproject.toml"
                       " && sed -i '3i ## [0.5.0]\\n* added pectin support\\n' CHANGES.md")
    assert for_request("bump jam to 0.5.0 and put a line in CHANGES.md for it: added pectin support",
                       tmp_path).whole == {"sed": [command]}  # the whole request's, not its parts joined
    for ask in ("bump the version to 0.5.0", "set version to 0.5.0", "release 0.5.0", "update the version to v0.5.0"):
        (only,) = release_commands(ask, texts)["sed"]
        assert only == command.rsplit(" && ", 1)[0], ask
    assert release_commands("release 0.5.0 with a changelog entry saying 'faster boil'", texts)["sed"][0].endswith(
        "sed -i '3i ## [0.5.0]\\n* faster boil\\n' CHANGES.md")
    for no in ("change the limit to 0.5.0", "bump the version to 0.4.2", "what version is this?"):
        assert release_commands(no, texts) == {}, no
    two = [("a/__init__.py", '__version__ = "1.0"\n'), ("b/__init__.py", '__version__ = "2.0"\n')]
    assert release_commands("bump the version to 3.0", lambda: two) == {}  # which one moves is the person's to say
    _run(tmp_path, command)
    assert (tmp_path / "jam/__init__.py").read_text() == '"""Jam."""\n\n__version__ = "0.5.0"\n'
    assert (tmp_path / "jam/boil.py").read_text() == files["jam/boil.py"]
    assert 'version = "0.5.0"' in (tmp_path / "pyproject.toml").read_text()
    assert (tmp_path / "CHANGES.md").read_text() == \
        "# Changes\n\n## [0.5.0]\n* added pectin support\n\n" + files["CHANGES.md"].split("\n\n", 1)[1]


async def test_asked_for_two_things_the_first_round_runs_both_commands(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"names.txt": "pear\napple\n", "keep.md": "k\n"})
    command = "sort -o names.txt names.txt && wc -l names.txt"
    d.backend.push(call("exec_shell_command", command=command), {"text": "Sorted; it has 2 lines."})
    await conv.send_message("sort names.txt, then count the lines in it")
    await wait_state(conv, "idle", "error")
    first, second = d.backend.turns
    assert left_open(first) == {"exec_shell_command"}
    pattern = dict(first.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, command) and not re.fullmatch(pattern, "wc -l names.txt")
    assert (folder / "names.txt").read_text() == "apple\npear\n"
    assert second.reply_starts == ("2 names.txt",)
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
