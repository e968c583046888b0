"""Code nothing uses (actors/runs/agent/small/dead_code.py): a function nothing calls
taken out or shown, imports a file never uses taken out; each command run by the real
shell, the code run after, and at run level, on the scripted backend made to say it is
small, held in the first round."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from actors.runs.agent.small.commands import for_request
from actors.runs.agent.small.dead_code import dead_commands
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

KILN = ("import os\nimport sys, json\nfrom math import ceil, floor\n\n\ndef fire(t):\n    return ceil(t)\n\n\n"
        "def glaze(k):\n    return k * 2\n\n\n@register\ndef hook():\n    pass\n\n\ndef cool(n):\n"
        "    return fire(n) + floor(n)\n\n\ndef main():\n    pass\n\n\nprint(cool(3), json.dumps(1))\n")


def _tree(root: Path, files: dict[str, str]) -> None:
    write_tree(root, files)


def _texts(root: Path) -> list[tuple[str, str]]:
    return [(str(p.relative_to(root)), p.read_text()) for p in sorted(root.rglob("*")) if p.is_file()]


def _sh(root: Path, command: str) -> str:
    return subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True, text=True).stdout


def test_a_function_nothing_calls_is_taken_out_or_shown_and_one_called_elsewhere_stays(tmp_path):
    _tree(tmp_path, {"kiln.py": KILN.replace("@register\n", ""), "studio/__init__.py": "",
                     "studio/use.py": "from kiln import hook\n\nhook()\n", "notes.md": "cool it slowly\n"})
    texts = lambda: _texts(tmp_path)  # noqa: E731
    for ask in ("kiln.py has a function nothing ever calls. find it and delete it",
                "remove the unused function in kiln.py", "delete the dead code from kiln.py"):
        assert dead_commands(ask, texts, ["kiln.py"]) == {"sed": ["sed -i -e 10,13d kiln.py"]}, ask
    assert dead_commands("which function is never called?", texts) == {"grep": ["grep -n 'def glaze(' kiln.py"]}
    assert _sh(tmp_path, "grep -n 'def glaze(' kiln.py") == "10:def glaze(k):\n"
    _sh(tmp_path, "sed -i -e 10,13d kiln.py")
    assert "glaze" not in (tmp_path / "kiln.py").read_text() and "def hook" in (tmp_path / "kiln.py").read_text()
    assert _sh(tmp_path, f"{sys.executable} kiln.py") == "6 1\n"
    assert dead_commands("delete the function nothing calls in kiln.py", texts, ["kiln.py"]) == {}  # none left


def test_imports_a_file_never_uses_are_taken_out_and_a_packages_stay(tmp_path):
    _tree(tmp_path, {"kiln.py": KILN.replace("@register\n", ""),
                     "studio/__init__.py": "import os\nfrom json import dumps\n"})
    texts = lambda: _texts(tmp_path)  # noqa: E731
    command = "sed -i -e '1d' -e '2s/.*/import json/' kiln.py"
    for ask in ("remove the unused imports from kiln.py", "kiln.py has imports that aren't used, clean them up",
                "drop any imports that are not needed"):
        assert dead_commands(ask, texts, ["kiln.py"] if "kiln" in ask else []) == {"sed": [command]}, ask
    assert dead_commands("which imports are unused", texts) == {}  # asked, not told to remove
    _sh(tmp_path, command)
    assert (tmp_path / "kiln.py").read_text().startswith("import json\nfrom math import ceil, floor\n\n\ndef fire")
    assert _sh(tmp_path, f"{sys.executable} kiln.py") == "6 1\n"


def test_decorated_main_dunder_and_test_functions_are_never_taken_as_unused(tmp_path):
    _tree(tmp_path, {"kiln.py": KILN.replace("def glaze(k):\n    return k * 2\n\n\n", ""),
                     "test_kiln.py": "def test_fire():\n    assert True\n"})
    assert dead_commands("delete the functions nothing calls", lambda: _texts(tmp_path)) == {}


async def test_asked_to_delete_a_function_nothing_calls_the_first_round_takes_it_out(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"kiln.py": KILN})  # (hook: decorated, kept)
    ask = "kiln.py has a function nothing ever calls. find it and delete it"
    (command,) = for_request(ask, folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Deleted glaze from kiln.py."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert left_open(d.backend.turns[0]) == {"exec_shell_command"}
    assert "glaze" not in (folder / "kiln.py").read_text()
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]


def test_a_function_no_test_uses_is_shown_and_an_import_alone_is_no_test(tmp_path):
    files = {"garden/__init__.py": "",
             "garden/beds.py": "def dig(depth):\n    return depth * 2\n\n\ndef rake(width):\n    return width\n\n\n"
                               "def _edge():\n    return 0\n",
             "garden/pots.py": "def drain(holes):\n    return holes > 0\n",
             "tests/test_beds.py": "from garden.beds import dig, rake\n\n\ndef test_dig():\n    assert dig(2) == 4\n",
             "tests/test_pots.py": "import garden.pots as pots\n\n\ndef test_drain():\n    assert pots.drain(1)\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    shown = {"grep": ["grep -n 'def rake(' garden/beds.py"]}  # imported by a test, used by none
    for ask in ("is there a function in garden that has no test at all? which one",
                "which functions aren't covered by tests", "what's untested?", "anything not tested yet?"):
        assert for_request(ask, tmp_path).whole == shown, ask
    done = subprocess.run(["bash", "-c", shown["grep"][0]], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert done.stdout == "5:def rake(width):\n"
    for no in ("write a test for rake", "run the tests", "which function has the most tests"):
        assert "grep" not in for_request(no, tmp_path).whole, no
    (tmp_path / "tests/test_beds.py").unlink()
    (tmp_path / "tests/test_pots.py").unlink()
    assert dead_commands("which function has no test?", lambda: [(p, t) for p, t in files.items()
                                                                if not p.startswith("tests/")]) == {}


COMMENTED = ("#!/usr/bin/env python3\nimport math\n\n# Fire slowly at first: the glaze cracks otherwise.\n"
        "# PEAK_C = 1180\nPEAK_C = 1220\n# print('peak', PEAK_C)\n\n\n# def ramp_old(minutes):\n"
        "#     return minutes * 2\ndef ramp(minutes):\n    # the first hour is slow\n"
        "    return math.ceil(minutes * 1.5)  # was: minutes * 2\n# TODO\n\n\nprint(ramp(10), PEAK_C)\n")


def test_code_commented_out_is_taken_out_and_the_comments_that_say_something_stay(tmp_path):
    (tmp_path / "kiln.py").write_text(COMMENTED)
    (tmp_path / "glaze.py").write_text("# COLOUR = 'blue'\nCOLOUR = 'green'\n")
    asked = ("kiln.py has a lot of commented-out code, remove it please",
             "clean the commented out lines out of kiln.py",
             "take the old commented code out of kiln.py, keep the real comments")
    commands = {a: for_request(a, tmp_path).whole.get("sed") for a in asked}
    (command,) = commands[asked[0]]
    assert all(c == [command] for c in commands.values()), commands
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    left = (tmp_path / "kiln.py").read_text()
    assert left == ("#!/usr/bin/env python3\nimport math\n\n# Fire slowly at first: the glaze cracks otherwise.\n"
                    "PEAK_C = 1220\n\n\ndef ramp(minutes):\n    # the first hour is slow\n"
                    "    return math.ceil(minutes * 1.5)  # was: minutes * 2\n# TODO\n\n\nprint(ramp(10), PEAK_C)\n")
    ran = subprocess.run([sys.executable, "kiln.py"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert ran.stdout == "15 1220\n"
    assert (tmp_path / "glaze.py").read_text().startswith("# COLOUR")  # another file than the one named
    assert dead_commands("what does the commented-out code in kiln.py do", lambda: [("kiln.py", COMMENTED)]) == {}
    assert dead_commands("remove the commented-out code", lambda: [("a.py", "x = 1\n# a note\n")]) == {}
    in_text = 'USAGE = """\n# run = 1\n"""\n# done = 2\n'  # a line of a string is no comment
    assert dead_commands("remove the commented-out code", lambda: [("a.py", in_text)]) == {"sed": ["sed -i -e 4d a.py"]}
