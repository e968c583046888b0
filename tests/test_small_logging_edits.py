"""A Python file's prints made calls of a `logging` logger with the same messages
(actors/runs/agent/small/logging_edits.py): the request in several wordings, the command
run by the real shell, and the code run after it with its log caught, each message as
its print wrote it; what it leaves alone; and at run level, on the scripted backend made
to say it is small, the first round held to it."""

from __future__ import annotations

import subprocess
import sys

from actors.runs.agent.small.logging_edits import logging_commands
from tests.test_small_steps import runs_first, small_project
from tests.trees import one_command, write_tree
from tests.waiting import wait_state

FILES = {"loom/__init__.py": "",
         "loom/weave.py": "\"\"\"Weaves a scarf.\"\"\"\n\nfrom __future__ import annotations\n\nimport math\n\n\n"
                          "def warp(threads):\n    print(f'warping {threads} threads')\n"
                          "    rows = math.ceil(threads / 2)\n"
                          "    print('rows:', rows, 'of', threads)\n    if rows > 3:\n        print(\"long warp\")\n"
                          "    print(rows)\n    return rows\n",
         "run.py": "from loom.weave import warp\n\nwarp(9)\n"}
CATCH = ("import logging, sys\nlogging.basicConfig(level=logging.DEBUG, format='%(name)s|%(levelname)s|%(message)s',"
         " stream=sys.stdout)\nfrom loom.weave import warp\nwarp(9)\n")
ASKED = ("loom/weave.py uses print for progress, switch it to the logging module please",
         "replace the print() calls in loom/weave.py with logging, same messages",
         "make loom/weave.py log its messages with a logger instead of printing them")


def test_each_print_becomes_the_loggers_call_with_the_same_message(tmp_path):
    write_tree(tmp_path, FILES)
    printed = subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True).stdout
    command = one_command(tmp_path, ASKED, "sed")
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True, text=True)
    assert done.stdout == "loom/weave.py logs what it printed through logging now (4 prints).\n"
    code = (tmp_path / "loom/weave.py").read_text()
    assert "print(" not in code and code.index("from __future__") < code.index("import logging")
    logged = subprocess.run([sys.executable, "-c", CATCH], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert logged.stdout.splitlines() == [f"loom.weave|INFO|{line}" for line in printed.splitlines()]
    assert subprocess.run([sys.executable, "run.py"], cwd=tmp_path, capture_output=True, text=True).stdout == ""
    warned = logging_commands("log the prints of loom/weave.py as warnings through logging", ["loom/weave.py"],
                              lambda: list(FILES.items()))["sed"][0]
    assert "logger.warning(" in warned and "logger.info(" not in warned


def test_what_it_leaves_alone():
    texts = lambda: list(FILES.items())  # noqa: E731
    assert logging_commands("take the prints out of loom/weave.py", ["loom/weave.py"], texts) == {}  # no logging
    aliased = logging_commands("switch the prints in a.py to logging", ["a.py"],
                               lambda: [("a.py", "import logging as lg\n\nprint('a')\n")])["sed"][0]
    assert "-e '1i\\import logging'" in aliased  # `logging` itself bound
    for odd in ("print('a', end='')\n", "import sys\nprint('a', file=sys.stderr)\n", "show = print\nprint('a')\n",
                "logger = None\nprint('a')\n", "print(\n    'a')\n", "print('a')\nimport os\n"):
        assert logging_commands("switch the prints in a.py to logging", ["a.py"], lambda o=odd: [("a.py", o)]) == {}


async def test_logging_the_first_round_runs_the_command(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, FILES)
    command = one_command(folder, ASKED[:1], "sed")
    told = "loom/weave.py logs what it printed through logging now (4 prints)."
    await runs_first(d, conv, ASKED[0], command, told)
    await wait_state(conv, "idle", "error")
    assert "logger.info(" in (folder / "loom/weave.py").read_text()
    assert conv.info.end_reason == "answered"
