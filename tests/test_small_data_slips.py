"""A JSON file that does not parse, reported as a bug, mended line by line
(actors/runs/agent/small/data_slips.py): each slip a hand makes in a tree of its own,
the report in several wordings, the command run by the real shell and the data read
after it (every value kept, the layout kept); what it leaves alone; and at run level, on
the scripted backend made to say it is small, the first round held to the mend."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from actors.runs.agent.small.commands import for_request
from actors.runs.agent.small.data_slips import data_commands, mend_json
from tests.test_small_steps import runs_first, small_project
from tests.trees import one_command, write_tree

LOADER = ("import json, pathlib\n\nfor p in sorted(pathlib.Path('stock').glob('*.json')):\n"
          "    print(p.stem, json.loads(p.read_text()))\n")

# Each: the broken file's text, and the data it must hold once mended.
KINDS = {
    "comma after the last": ('{\n  "name": "fern",\n  "water_ml": 250,\n}\n', {"name": "fern", "water_ml": 250}),
    "comma after the last of a list": ('{\n  "pots": [\n    "clay",\n    "tin",\n  ]\n}\n',
                                       {"pots": ["clay", "tin"]}),
    "comma left out": ('{\n  "name": "ivy"\n  "water_ml": 90\n}\n', {"name": "ivy", "water_ml": 90}),
    "single quotes": ("{\n  'name': 'palm',\n  \"tags\": ['tall', \"green\"]\n}\n",
                      {"name": "palm", "tags": ["tall", "green"]}),
    "bare key and Python words": ('{\n  name: "cactus",\n  "indoor": True,\n  "shade": None\n}\n',
                                  {"name": "cactus", "indoor": True, "shade": None}),
    "a comment": ('{\n  // how much each week\n  "water_ml": 40, // a little\n  "url": "http://x.test/a//b"\n}\n',
                  {"water_ml": 40, "url": "http://x.test/a//b"}),
}
REPORTS = ("the plant app crashes with json.decoder.JSONDecodeError", "stock json is broken, can you fix it",
           "getting a JSONDecodeError: Expecting property name enclosed in double quotes when I run it")


def _tree(tmp_path, broken: str) -> None:
    write_tree(tmp_path, {"water.py": LOADER, "stock/basil.json": '{"name": "basil", "water_ml": 120}\n',
                          "stock/zz.json": broken})


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_json_file_that_does_not_parse_is_mended_and_then_read_whole(tmp_path, kind):
    broken, data = KINDS[kind]
    _tree(tmp_path, broken)
    command = one_command(tmp_path, REPORTS, "sed")
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True, text=True)
    assert done.stdout.startswith("Mended stock/zz.json: ") and "it parses as JSON now" in done.stdout
    mended = (tmp_path / "stock/zz.json").read_text()
    assert json.loads(mended) == data
    assert len(mended.splitlines()) >= len(broken.splitlines()) - 1  # line by line: its layout kept
    assert (tmp_path / "stock/basil.json").read_text() == '{"name": "basil", "water_ml": 120}\n'
    ran = subprocess.run([sys.executable, "water.py"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert ran.stdout.startswith("basil {")
    assert "sed" not in for_request(REPORTS[0], tmp_path).whole  # mended: nothing left to mend


def test_what_it_leaves_alone(tmp_path):
    broken = KINDS["comma after the last"][0]
    texts = lambda: [("stock/zz.json", broken)]  # noqa: E731
    assert data_commands("add a water_ml to every plant json", texts) == {}  # no report of anything wrong
    assert data_commands("the plant app crashes", texts) == {}  # JSON not said: the slips of code are looked at
    assert data_commands("the json is broken", lambda: [("stock/zz.json", '{"a": 1}\n')]) == {}  # it parses
    unmendable = '{\n  "a": 1,\n  "b": [1, 2\n}\n'
    assert mend_json(unmendable) is None and mend_json('{"a": 1}') is None
    assert data_commands("the json is broken", lambda: [("a.json", unmendable)]) == {}
    many = lambda: [(f"s/{n}.json", broken) for n in range(4)]  # noqa: E731
    assert data_commands("the json files are broken", many) == {}  # too many to mend at once
    assert data_commands("s/2.json is broken json", many)["sed"][0].startswith("sed -i -e '3c\\  \"water_ml\": 250' "
                                                                                "s/2.json && echo")  # the one named
    assert mend_json('{\n  "a": 1\r\n}\n') is None  # Windows' line ends: not mended line by line
    near = lambda: [("old.json", broken), ("bold.json", broken)]  # noqa: E731
    assert "old.json" not in data_commands("bold.json is broken json", near)["sed"][0].replace("bold.json", "")


async def test_broken_json_the_first_round_runs_the_mend(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"water.py": LOADER,
                                                     "stock/zz.json": KINDS["comma left out"][0]})
    (command,) = for_request(REPORTS[1], folder).whole["sed"]
    told = "Mended stock/zz.json: a comma left out between two items (line 2); it parses as JSON now."
    await runs_first(d, conv, REPORTS[1], command, told)
    assert d.backend.turns[1].reply_starts == (told,)
    assert json.loads((folder / "stock/zz.json").read_text()) == KINDS["comma left out"][1]
    assert conv.info.end_reason == "answered" and conv.items[-1].text == told
