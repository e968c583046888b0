"""A question of what to install before the code runs, answered by one `pip install`
line worked out from the imports Python's parser reads (the standard library's and the
workspace's own left out, the well-known packages whose names differ named as PyPI
names them), with the import lines it comes from; a requirements file written the same
way (actors/runs/agent/small/install_commands.py). The commands run by the real shell,
and at run level the answer begins with what the command printed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from actors.runs.agent.small.commands import for_request
from actors.runs.agent.small.install_commands import packages
from tests.test_small_steps import call, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

WEATHER = {
    "station/__init__.py": "",
    "station/read.py": ("import json\nimport os.path\nfrom collections import deque\n\nimport yaml\n"
                        "import numpy as np\nfrom bs4 import BeautifulSoup\n\nfrom station import units\n"),
    "station/units.py": "from decimal import Decimal\n",
    "chart.py": ("import sys\n\nimport matplotlib.pyplot as plt\nfrom PIL import Image\nimport helpers\n\n"
                 "try:\n    import ujson as fast\nexcept ImportError:\n    fast = None\n"),
    "helpers.py": ("from __future__ import annotations\nfrom typing import TYPE_CHECKING\n\n"
                   "if TYPE_CHECKING:\n    from pandas import DataFrame\n\nimport os, requests\n"),
    "tests/test_read.py": "import pytest\n\nfrom station.read import np\n",
    "notes.md": "remember: import nothing\n",
}
WANTED = ["PyYAML", "Pillow", "beautifulsoup4", "matplotlib", "numpy", "requests"]


def _tree(root: Path, files: dict[str, str]) -> None:
    write_tree(root, files)


def _run(command: str, cwd: Path) -> str:
    return subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, text=True, check=True).stdout


def test_the_packages_are_the_third_party_imports_by_their_pypi_names():
    files = [(p, t) for p, t in WEATHER.items() if p.endswith(".py")]
    imports, pips = packages(files)
    assert imports == ["PIL", "bs4", "matplotlib", "numpy", "requests", "yaml"]
    assert sorted(pips) == sorted(WANTED)
    assert "pytest" in packages(files, tests=True)[1]  # the tests' own only when asked about tests
    assert packages([("a.py", "import json\n"), ("b.py", "import a\n")]) == ([], [])
    assert packages([("a.py", "import (\n")]) is None  # a file that does not parse: the list would be short


@pytest.mark.parametrize("ask", [
    "what must I pip install first for this to work",
    "which packages do I need to install",
    "what are the dependencies here?",
    "what needs installing before I can run chart.py",
    "list the third-party requirements",
])
def test_asked_what_to_install_one_command_says_it_and_shows_where_from(tmp_path, ask):
    _tree(tmp_path, WEATHER)
    (command,) = for_request(ask, tmp_path).whole["echo"]
    out = _run(command, tmp_path).splitlines()
    assert out[0].split()[:2] == ["pip", "install"] and sorted(out[0].split()[2:]) == sorted(WANTED)
    shown = "\n".join(out[1:])
    for line in ("station/read.py:5:import yaml", "chart.py:4:from PIL import Image",
                 "helpers.py:7:import os, requests"):
        assert line in shown, shown
    assert "ujson" not in command and "pandas" not in command and "pytest" not in command


def test_nothing_to_install_is_said_so_and_other_requests_are_left_alone(tmp_path):
    _tree(tmp_path, {"tool.py": "import json\nimport lib\n", "lib.py": "import os\n"})
    (command,) = for_request("what do I need to install to run this?", tmp_path).whole["echo"]
    assert _run(command, tmp_path).startswith("Nothing to install")
    _tree(tmp_path, WEATHER)
    for other in ("install a pre-commit hook config", "what does chart.py print?", "add numpy to chart.py",
                  "rename helpers.py to tools.py", "what are the requirements for a password in helpers.py?"):
        assert "pip install" not in " ".join(c for cs in for_request(other, tmp_path).whole.values() for c in cs)


def test_a_requirements_file_is_written_from_the_imports_when_it_is_not_there(tmp_path):
    _tree(tmp_path, WEATHER)
    (command,) = for_request("make a requirements.txt for this project", tmp_path).whole["printf"]
    _run(command, tmp_path)
    assert sorted((tmp_path / "requirements.txt").read_text().split()) == sorted(WANTED)
    # There already: not written over.
    assert "printf" not in for_request("create a requirements file", tmp_path).whole


async def test_asked_what_to_install_the_answer_begins_with_the_pip_line(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, WEATHER)
    ask = "what must I pip install first for this to work"
    (command,) = for_request(ask, folder).whole["echo"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "pip install PyYAML"})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    (start,) = d.backend.turns[1].reply_starts
    assert start.startswith("pip install ") and sorted(start.split()[2:]) == sorted(WANTED)
