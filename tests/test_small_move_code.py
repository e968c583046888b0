"""A function (or class) moved out of a Python file into a new one and imported back
(actors/runs/agent/small/move_code.py): the lines read by the parser, the command run by
the real shell on a real tree, the code run after; at run level, on the scripted backend
made to say it is small, held in the first round."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from actors.runs.agent.small.commands import for_request
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

BEACON = ("LAMPS = {'a': 'on', 'b': 'off'}\n\n\ndef blink(text):\n"
          "    return ' '.join(LAMPS[c] for c in text if c in LAMPS)\n\n\n"
          "for word in ('ab', 'ba'):\n    print(word, blink(word))\n")
TILL = ('"""A till."""\nimport math\nimport os\n\nRATE = 0.2\nNAME = "x"\n\n\ndef levy(p):\n'
        "    return math.ceil(p * RATE)\n\n\ndef label():\n    return NAME + os.sep\n\n\n"
        "class Drawer:\n    def open(self):\n        return levy(3)\n\n\nprint(levy(10), label(), Drawer().open())\n")


def _tree(root: Path, files: dict[str, str]) -> None:
    write_tree(root, files)


def _out(root: Path, script: str) -> str:
    return subprocess.run([sys.executable, script], cwd=root, check=True, capture_output=True, text=True).stdout


def test_a_function_moved_takes_what_only_it_uses_and_is_imported_back(tmp_path):
    _tree(tmp_path, {"beacon.py": BEACON, "till.py": TILL})
    before = {s: _out(tmp_path, s) for s in ("beacon.py", "till.py")}
    whole = lambda ask: for_request(ask, tmp_path).whole  # noqa: E731
    for ask in ("move blink out of beacon.py into a new file lamps.py and import it from there",
                "put the blink function from beacon.py in its own file lamps.py",
                "can you split blink() out of beacon.py into lamps.py"):
        assert list(whole(ask)) == ["sed"], ask
    (command,) = whole("move blink out of beacon.py into a new file lamps.py and import it from there")["sed"]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    assert (tmp_path / "lamps.py").read_text() == BEACON[:BEACON.index("\n\n\nfor")] + "\n"
    rest = BEACON[BEACON.index("\nfor word") + 1:]
    assert (tmp_path / "beacon.py").read_text() == "from lamps import blink\n\n\n" + rest
    (command,) = whole("extract levy from till.py to charges.py")["sed"]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    charges = (tmp_path / "charges.py").read_text()
    assert charges == "import math\n\n\nRATE = 0.2\n\n\ndef levy(p):\n    return math.ceil(p * RATE)\n"
    till = (tmp_path / "till.py").read_text()
    assert "from charges import levy\n" in till and "RATE" not in till and "def levy" not in till
    assert {s: _out(tmp_path, s) for s in ("beacon.py", "till.py")} == before


def test_no_move_where_what_stays_needs_what_would_go_or_the_file_is_there(tmp_path):
    shared = "SCALE = 2\n\n\ndef grow(n):\n    return n * SCALE\n\n\nprint(grow(3), SCALE)\n"
    _tree(tmp_path, {"shared.py": shared, "beacon.py": BEACON, "lamps.py": "x = 1\n",
                     "uses.py": "def helper():\n    return 1\n\n\ndef grow(n):\n    return helper() + n\n"})
    whole = lambda ask: for_request(ask, tmp_path).whole  # noqa: E731
    for no in ("move grow out of shared.py into growth.py",  # SCALE is needed by both
               "move blink out of beacon.py into lamps.py",  # lamps.py is there
               "move grow out of uses.py into growth.py",  # it needs helper, which stays
               "move nothing out of beacon.py into other.py", "move blink into other.py"):
        assert "sed" not in whole(no), no


async def test_asked_to_move_a_function_the_first_round_moves_it_and_the_script_runs_the_same(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"beacon.py": BEACON})
    (command,) = for_request("move blink out of beacon.py into lamps.py and import it", folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Moved blink into lamps.py."})
    await conv.send_message("move blink out of beacon.py into lamps.py and import it")
    await wait_state(conv, "idle", "error")
    first = d.backend.turns[0]
    assert left_open(first) == {"exec_shell_command"}
    pattern = dict(first.shapes)["exec_shell_command"]["properties"]["command"]["pattern"]
    assert re.fullmatch(pattern, command.replace("\\", "\\\\")) and not re.fullmatch(pattern, "mv beacon.py lamps.py")
    assert "def blink" in (folder / "lamps.py").read_text()
    assert _out(folder, "beacon.py") == "ab on off\nba off on\n"
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
