"""A class made a dataclass by one command (its `__init__` that only keeps its
parameters written as typed fields, the class decorated, dataclass imported;
actors/runs/agent/small/dataclass_edits.py): run by the real shell, then the code that
makes and prints the class's objects run, and the class read back as a dataclass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from actors.runs.agent.small.commands import for_request
from tests.test_small_steps import call, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

KITES = {
    "kites/__init__.py": "",
    "kites/models.py": ('"""Kites."""\nimport math\n\n\nclass Kite:\n    def __init__(self, name, span, shape="delta", '
                        "tails=[], *, lines: int = 2):\n        self.name = name\n        self.span = span\n"
                        "        self.shape = shape\n        self.tails = tails\n        self.lines = lines\n\n"
                        "    def area(self):\n        return round(self.span ** 2 / 2, 1)\n"),
    "fly.py": ("from kites.models import Kite\n\nk = Kite('red', 1.5)\nj = Kite('box', 2.0, 'box', lines=4)\n"
               "print(k.area(), j.shape, j.lines, k.tails)\n"),
}


def _tree(root: Path) -> None:
    write_tree(root, KITES)


def _fly(root: Path, code: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code] if code else [sys.executable, "fly.py"], cwd=root,
                          capture_output=True, text=True)


@pytest.mark.parametrize("ask", [
    "could you make Kite a dataclass, typing out __init__ is tedious",
    "make Kite in kites/models.py a @dataclass",
])
def test_the_class_becomes_a_dataclass_with_typed_fields_and_the_code_runs_the_same(tmp_path, ask):
    _tree(tmp_path)
    before = _fly(tmp_path).stdout
    (command,) = for_request(ask, tmp_path).whole["sed"]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True)
    assert _fly(tmp_path).stdout == before == "1.1 box 4 []\n"
    text = (tmp_path / "kites/models.py").read_text()
    assert "    name: str\n    span: float\n    shape: str = 'delta'\n" in text
    assert "    tails: list = field(default_factory=list)\n    lines: int = 2\n" in text
    assert "def __init__" not in text and text.startswith('"""Kites."""\nimport math\nfrom dataclasses import ')
    done = _fly(tmp_path, "import dataclasses\nfrom kites.models import Kite\n"
                          "print(dataclasses.is_dataclass(Kite), Kite('a', 1.0) == Kite('a', 1.0))")
    assert done.stdout == "True True\n", done.stderr


def test_a_list_kept_in_place_of_none_becomes_a_default_factory(tmp_path):
    """`x if x is not None else []` and `x or {}`, with None for a default: the empty one
    made for each object, as the dataclass's default_factory."""
    (tmp_path / "nest.py").write_text("class Nest:\n    def __init__(self, bird, eggs=None, notes=None):\n"
                                      "        self.bird = bird\n        self.eggs = eggs if eggs is not None else []\n"
                                      "        self.notes = notes or {}\n")
    (command,) = for_request("make Nest a dataclass", tmp_path).whole["sed"]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True)
    text = (tmp_path / "nest.py").read_text()
    assert text.startswith("from dataclasses import dataclass, field\n\n\n@dataclass\nclass Nest:\n")
    assert "    eggs: list = field(default_factory=list)\n    notes: dict = field(default_factory=dict)\n" in text
    done = _fly(tmp_path, "from nest import Nest\na, b = Nest('wren'), Nest('tit')\na.eggs.append(1)\n"
                          "print(a.eggs, b.eggs, b.notes)")
    assert done.stdout == "[1] [] {}\n", done.stderr
    (tmp_path / "nest.py").write_text(text.replace("eggs: list = field(default_factory=list)", "eggs: list"))
    (tmp_path / "odd.py").write_text("class Odd:\n    def __init__(self, a=1):\n        self.a = a or []\n")
    assert "sed" not in for_request("make Odd a dataclass", tmp_path).whole  # a default that is not None


def test_a_class_whose_init_does_more_is_left_alone(tmp_path):
    _tree(tmp_path)
    busy = KITES["kites/models.py"].replace("        self.lines = lines\n",
                                            "        self.lines = lines\n        print('made')\n")
    (tmp_path / "kites/models.py").write_text(busy)
    assert "sed" not in for_request("turn Kite into a dataclass", tmp_path).whole
    (tmp_path / "kites/models.py").write_text(KITES["kites/models.py"].replace("class Kite:", "class Kite(Base):"))
    assert "sed" not in for_request("turn Kite into a dataclass", tmp_path).whole
    assert "sed" not in for_request("what is a dataclass?", tmp_path).whole


async def test_asked_for_a_dataclass_the_first_round_makes_it(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, KITES)
    ask = "turn Kite into a dataclass"
    (command,) = for_request(ask, folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Kite is a dataclass now."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert "@dataclass\nclass Kite:" in (folder / "kites/models.py").read_text()
    assert _fly(folder).stdout == "1.1 box 4 []\n"
