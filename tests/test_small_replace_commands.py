"""Chores over many files at once (actors/runs/agent/small/replace_commands.py): text
replaced wherever it is written, a folder's files given a prefix or suffix, a backup
copy; each command read off a real tree and run by the real shell, and at run level, on
the scripted backend made to say it is small, held in the first round."""

from __future__ import annotations

import subprocess
from pathlib import Path

from actors.runs.agent.small.commands import for_request
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

FILES = {"guide/a.md": "the colour red\n", "guide/b.md": "colour blue, colours\n", "app.py": "COLOUR = 'colour'\n",
         "pics/cat.jpg": "c", "pics/dog.jpg": "d", "list.txt": "a\nb\n", "misc/none.md": "nothing\n"}


def _tree(root: Path) -> None:
    write_tree(root, FILES)


def _run(root: Path, command: str) -> None:
    subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True)


def test_text_is_replaced_where_it_is_written_in_the_files_the_request_means(tmp_path):
    _tree(tmp_path)
    whole = lambda ask: for_request(ask, tmp_path).whole  # noqa: E731
    everywhere = "sed -i 's/\\bcolour\\b/color/g' app.py guide/a.md guide/b.md"
    assert whole("replace colour with color everywhere") == {"sed": [everywhere]}
    assert whole("change every 'colour' to 'color' in guide/") == \
        {"sed": ["sed -i 's/\\bcolour\\b/color/g' guide/a.md guide/b.md"]}
    assert whole("replace all the occurrences of colour with color in the .md files") == \
        {"sed": ["sed -i 's/\\bcolour\\b/color/g' guide/a.md guide/b.md"]}
    assert whole("replace 'colour' with 'color' in guide/a.md") == \
        {"sed": ["sed -i 's/\\bcolour\\b/color/g' guide/a.md"]}
    for no in ("replace mauve with violet everywhere", "change the colour to blue", "replace it with color"):
        assert "sed" not in whole(no), no
    _run(tmp_path, everywhere)
    assert (tmp_path / "guide/b.md").read_text() == "color blue, colours\n"  # a word whole, not inside another
    assert (tmp_path / "app.py").read_text() == "COLOUR = 'color'\n"


def test_a_folders_files_get_a_prefix_or_suffix_and_a_file_a_backup_beside_it(tmp_path):
    _tree(tmp_path)
    whole = lambda ask: for_request(ask, tmp_path).whole  # noqa: E731
    prefix = "mv pics/cat.jpg pics/old_cat.jpg && mv pics/dog.jpg pics/old_dog.jpg"
    for ask in ("add the prefix old_ to all the files in pics/", "prefix every file in pics/ with old_",
                "put old_ in front of the names of the files in the pics folder"):
        assert whole(ask) == {"mv": [prefix]}, ask
    assert whole("add _v2 to the end of each file name in pics/") == \
        {"mv": ["mv pics/cat.jpg pics/cat_v2.jpg && mv pics/dog.jpg pics/dog_v2.jpg"]}
    for ask in ("make a backup of list.txt", "back up list.txt before I change it"):
        assert whole(ask) == {"cp": ["cp list.txt list.txt.bak"]}, ask
    _run(tmp_path, prefix)
    assert sorted(p.name for p in (tmp_path / "pics").iterdir()) == ["old_cat.jpg", "old_dog.jpg"]
    assert "mv" not in whole("add the prefix old_ to all the files in pics/")  # they have it
    _run(tmp_path, "cp list.txt list.txt.bak")
    assert (tmp_path / "list.txt.bak").read_text() == "a\nb\n"
    assert "cp" not in whole("make a backup of list.txt")  # one is there: not overwritten


async def test_asked_to_replace_text_everywhere_the_first_round_runs_the_sed(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"guide/a.md": "the colour red\n", "guide/b.md": "colour\n"})
    ask = "replace colour with color in all the docs"
    (command,) = for_request(ask, folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Replaced colour with color."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert left_open(d.backend.turns[0]) == {"exec_shell_command"}
    assert (folder / "guide/a.md").read_text() == "the color red\n" and (folder / "guide/b.md").read_text() == "color\n"
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
