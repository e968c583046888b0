"""A class given a `__repr__` (or `__str__`) that shows what its `__init__` sets
(actors/runs/agent/small/class_edits.py): the command run by the real shell and the
class printed after it, and at run level, on the scripted backend made to say it is
small, held in the first round."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from actors.runs.agent.small.commands import for_request
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state

BOATS = ("class Skiff:\n    def __init__(self, name, size=3):\n        self.name = name\n        self.size = size\n"
         "        self._secret = 1\n\n    def row(self):\n        return self.size\n\n\n"
         "class Plain:\n    pass\n\n\nprint(Skiff('ada'))\n")


def _out(root: Path) -> str:
    return subprocess.run([sys.executable, "boats.py"], cwd=root, check=True, capture_output=True, text=True).stdout


def test_a_class_prints_what_its_init_sets(tmp_path):
    (tmp_path / "boats.py").write_text(BOATS)
    whole = lambda ask: for_request(ask, tmp_path).whole  # noqa: E731
    (command,) = whole("add a __repr__ to Skiff")["sed"]
    for ask in ("printing a Skiff shows <boats.Skiff object at 0x7f>, make it print nicely",
                "give the Skiff class in boats.py a readable string representation"):
        assert whole(ask) == {"sed": [command]}, ask
    assert "def __str__" in whole("give Skiff a __str__")["sed"][0]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    assert _out(tmp_path) == "Skiff(name='ada', size=3)\n"
    assert "    def row(self):\n        return self.size\n\n    def __repr__(self):\n" in \
        (tmp_path / "boats.py").read_text()
    for no in ("add a __repr__ to Skiff", "add a __repr__ to Plain", "add a __repr__ to Canoe"):
        assert "sed" not in whole(no), no  # it has one; no __init__; no such class


async def test_asked_for_a_repr_the_first_round_adds_it(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"boats.py": BOATS})
    ask = "add a __repr__ to Skiff"
    (command,) = for_request(ask, folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Skiff now has a __repr__."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert left_open(d.backend.turns[0]) == {"exec_shell_command"}
    assert _out(folder) == "Skiff(name='ada', size=3)\n"
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
