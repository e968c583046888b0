"""Which modules import each other, asked of a circular import
(actors/runs/agent/small/import_cycles.py): loops of several shapes found by the parser,
the question in several wordings, the command run by the real shell; what closes no loop
(an import in a function, one only for type checking); and at run level, on the scripted
backend made to say it is small, the first round held to the command."""

from __future__ import annotations

import subprocess
import sys

import pytest

from actors.runs.agent.small.commands import for_request
from actors.runs.agent.small.import_cycles import cycle_commands
from tests.test_small_steps import runs_first, small_project
from tests.trees import one_command, write_tree

ASKED = ("start.py crashes: ImportError: cannot import name 'due' from partially initialized module, why?",
         "which two files import each other?", "is there a circular import somewhere")

# Each: the tree, and the files its loop goes through.
LOOPS = {
    "two, from-imports": (
        {"start.py": "from library.desk import lend\n\nprint(lend('atlas'))\n", "library/__init__.py": "",
         "library/desk.py": "from library.fines import due\n\n\ndef lend(book):\n    return book, due(3)\n",
         "library/fines.py": "from library.desk import lend\n\n\ndef due(days):\n    return days * 2\n"},
        ("library/desk.py", "library/fines.py")),
    "three, plain and relative": (
        {"start.py": "import garden.beds\n", "garden/__init__.py": "",
         "garden/beds.py": "from . import water\n\nROWS = 4\n",
         "garden/water.py": "from garden import sun\n\nLITRES = 2\n",
         "garden/sun.py": "import garden.beds as beds\n\nHOURS = beds.ROWS\n"},
        ("garden/beds.py", "garden/water.py", "garden/sun.py")),
}


@pytest.mark.parametrize("shape", list(LOOPS))
def test_the_loop_of_imports_is_shown_line_by_line(tmp_path, shape):
    files, loop = LOOPS[shape]
    write_tree(tmp_path, files)
    command = one_command(tmp_path, ASKED, "grep")
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True, text=True)
    lines = done.stdout.splitlines()
    assert [line.split(":", 1)[0] for line in lines[:-1]] == list(loop)
    assert lines[-1] == f"These import each other: {', '.join(loop)} (a circular import)."
    for line in lines[:-1]:
        path, number, text = line.split(":", 2)
        assert files[path].splitlines()[int(number) - 1] == text


def test_the_loop_through_the_file_named_is_the_one_shown(tmp_path):
    files = {**LOOPS["two, from-imports"][0], "a.py": "import b\n", "b.py": "import a\n"}
    texts = lambda: list(files.items())  # noqa: E731
    shown = cycle_commands("circular import in library/fines.py", texts, ["library/fines.py"])["grep"][0]
    assert "library/desk.py" in shown and "a.py" not in shown.replace("library/", "")


def test_what_closes_no_loop_is_left_alone(tmp_path):
    files = {"start.py": "from tools.saw import cut\n\ncut()\n", "tools/__init__.py": "",
             "tools/saw.py": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
                             "    from tools.bench import Bench\n\n\n"
                             "def cut():\n    from tools.bench import height\n    return height()\n",
             "tools/bench.py": "from tools.saw import cut\n\n\ndef height():\n    return 3\n"}
    write_tree(tmp_path, files)
    assert subprocess.run([sys.executable, "start.py"], cwd=tmp_path, capture_output=True).returncode == 0
    assert cycle_commands(ASKED[2], lambda: list(files.items())) == {}  # loaded later, or never
    looped = LOOPS["two, from-imports"][0]
    assert cycle_commands("what does start.py import", lambda: list(looped.items())) == {}  # not asked of a loop


async def test_circular_import_the_first_round_runs_the_command(real_tools, tmp_path):
    d = real_tools
    files, loop = LOOPS["two, from-imports"]
    folder, conv = await small_project(d, tmp_path, files)
    (command,) = for_request(ASKED[1], folder).whole["grep"]
    told = f"These import each other: {', '.join(loop)} (a circular import)."
    await runs_first(d, conv, ASKED[1], command, told)
    assert conv.info.end_reason == "answered"
    assert all(f in conv.items[-1].text for f in loop)
