"""A CSV file's column renamed, the code that reads it by name following
(actors/runs/agent/small/column_rename.py): the request in several wordings, the
command run by the real shell and the script run after it; what it leaves alone; and at
run level, on the scripted backend made to say it is small, the first round held to it."""

from __future__ import annotations

import subprocess
import sys

from actors.runs.agent.small.column_rename import column_commands
from tests.test_small_steps import runs_first, small_project
from tests.trees import one_command, write_tree

FILES = {"hives.csv": "hive,frames,kg\nA,10,12.5\nB,8,9.0\n",
         "weigh.py": "import csv\n\nwith open('hives.csv', newline='') as f:\n    for row in csv.DictReader(f):\n"
                     "        print(row['hive'], float(row[\"kg\"]) * 1000)\n",
         "notes.py": "KG = 'kg'\n"}
ASKED = ("rename the kg column in hives.csv to honey_kg", "rename column kg in hives.csv to honey_kg and fix weigh.py",
         "can you rename the 'kg' field of hives.csv to `honey_kg`, the script that reads it shouldn't break")


def test_the_column_and_its_name_in_the_code_that_reads_it_are_renamed(tmp_path):
    write_tree(tmp_path, FILES)
    before = subprocess.run([sys.executable, "weigh.py"], cwd=tmp_path, capture_output=True, text=True).stdout
    command = one_command(tmp_path, ASKED, "sed")
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True, text=True)
    assert done.stdout == "Renamed the column kg to honey_kg in hives.csv, and its name in weigh.py.\n"
    assert (tmp_path / "hives.csv").read_text() == "hive,frames,honey_kg\nA,10,12.5\nB,8,9.0\n"
    assert "row[\"honey_kg\"]" in (tmp_path / "weigh.py").read_text()
    assert subprocess.run([sys.executable, "weigh.py"], cwd=tmp_path, capture_output=True, text=True).stdout == before
    assert (tmp_path / "notes.py").read_text() == "KG = 'kg'\n"  # it reads no hives.csv


def test_what_it_leaves_alone(tmp_path):
    write_tree(tmp_path, FILES)

    def read(rel: str) -> str | None:
        return FILES.get(rel)
    texts = lambda: list(FILES.items())  # noqa: E731
    assert column_commands("rename the mass column in hives.csv to honey_kg", read, texts) == {}  # no such column
    assert column_commands("rename the kg column in hives.csv to frames", read, texts) == {}  # taken already
    assert column_commands("rename the kg column to honey_kg", read, texts) == {}  # no file named
    assert column_commands("rename hives.csv to bees.csv", read, texts) == {}  # a file, not a column
    quoted = {"q.csv": '"hive","kg"\nA,1\n'}
    assert column_commands("rename the kg column in q.csv to honey_kg", quoted.get, lambda: quoted.items()) == {}


async def test_column_rename_the_first_round_runs_the_command(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, FILES)
    command = one_command(folder, ASKED[:1], "sed")
    told = "Renamed the column kg to honey_kg in hives.csv, and its name in weigh.py."
    await runs_first(d, conv, ASKED[0], command, told)
    assert (folder / "hives.csv").read_text().startswith("hive,frames,honey_kg\n")
    assert conv.info.end_reason == "answered" and conv.items[-1].text == told
