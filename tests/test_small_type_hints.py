"""Type hints read off the code (actors/runs/agent/small/type_hints.py): each parameter's
from its default and the values it is called with, each return's from what it returns;
the command run by the real shell and the script run after it the same, and at run
level, on the scripted backend made to say it is small, held in the first round."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from actors.runs.agent.small.commands import for_request
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state

PEDAL = ("def ratio(front, back):\n    return round(front / back, 2)\n\n\n"
         "def label(name, r, unit='x'):\n    return f'{name}: {r}{unit}'\n\n\n"
         "def shout(name):\n    print(name.upper())\n\n\n"
         "def count(items):\n    return len(items)\n\n\n"
         "print(label('low', ratio(34, 28)), count([1, 2]))\nshout('go')\n")


def _out(root: Path) -> str:
    return subprocess.run([sys.executable, "pedal.py"], cwd=root, check=True, capture_output=True, text=True).stdout


def test_every_hint_is_read_off_defaults_calls_and_returns(tmp_path):
    (tmp_path / "pedal.py").write_text(PEDAL)
    before = _out(tmp_path)
    whole = lambda ask: for_request(ask, tmp_path).whole  # noqa: E731
    (command,) = whole("add type hints to all the functions in pedal.py please")["sed"]
    assert whole("annotate pedal.py with types") == {"sed": [command]}
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    tree = ast.parse((tmp_path / "pedal.py").read_text())
    said = {f.name: ast.unparse(f.args) + " -> " + ast.unparse(f.returns) for f in tree.body  # type: ignore[arg-type]
            if isinstance(f, ast.FunctionDef)}
    assert said == {"ratio": "front: int, back: int -> float", "label": "name: str, r: float, unit: str='x' -> str",
                    "shout": "name: str -> None", "count": "items: list -> int"}
    assert _out(tmp_path) == before
    assert "sed" not in whole("add type hints to all the functions in pedal.py please")  # they have them


def test_no_hints_where_one_cannot_be_read(tmp_path):
    files = {"a_mix.py": "def f(x):\n    return x\n\n\nf(1)\nf('a')\n",  # called with two types
             "b_none.py": "def g(x):\n    return x\n",  # never called
             "c_cls.py": "def h(x):\n    return 1\n\n\nh(2)\n\n\nclass K:\n    def m(self, y):\n        return y\n"}
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    for rel in files:
        assert "sed" not in for_request(f"add type hints to {rel}", tmp_path).whole, rel


async def test_asked_for_type_hints_the_first_round_writes_them(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"pedal.py": PEDAL})
    ask = "add type hints to all the functions in pedal.py please"
    (command,) = for_request(ask, folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Added the type hints."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert left_open(d.backend.turns[0]) == {"exec_shell_command"}
    assert "def ratio(front: int, back: int) -> float:" in (folder / "pedal.py").read_text()
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
