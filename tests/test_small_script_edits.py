"""A script's prints taken out or commented out, and its run put under a main guard
(actors/runs/agent/small/script_edits.py): each command run by the real shell, the code
run after it, and at run level, on the scripted backend made to say it is small, held
in the first round; the file itself never offered to be removed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from actors.runs.agent.small.commands import for_request
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state

LOOM = ('import sys\n\n\ndef weave(n):\n    print("debug: n is", n)\n    if n > 3:\n        print("wide")\n'
        "    return n * 2\n\n\ndef knot():\n    print('a')\n    print('b')\n\n\nclass Frame:\n    pass\n\n\n"
        'print("start")\nx = weave(5)\nprint(x)\n')


def _run(root: Path, command: str) -> None:
    subprocess.run(["bash", "-c", command], cwd=root, check=True, capture_output=True)


def _out(root: Path) -> str:
    return subprocess.run([sys.executable, "loom.py"], cwd=root, check=True, capture_output=True, text=True).stdout


def test_the_prints_the_words_pick_or_all_are_taken_out_and_the_code_still_runs(tmp_path):
    (tmp_path / "loom.py").write_text(LOOM)
    whole = lambda ask: for_request(ask, tmp_path).whole  # noqa: E731
    assert whole("remove the debug prints from loom.py") == {"sed": ["sed -i -e '5d' loom.py"]}
    (everything,) = whole("delete all the print statements in loom.py")["sed"]
    for ask in ("take the prints out of loom.py", "get rid of the print calls in loom.py"):
        assert whole(ask) == {"sed": [everything]}, ask
    _run(tmp_path, everything)
    text = (tmp_path / "loom.py").read_text()
    assert "        pass  # print(\"wide\")" in text and "    pass  # print('a')" in text  # blocks kept whole
    assert text.count("print(") == 2 and _out(tmp_path) == ""
    (tmp_path / "loom.py").write_text(LOOM)
    (commented,) = whole("comment out the prints in loom.py")["sed"]
    _run(tmp_path, commented)
    assert '    # print("debug: n is", n)' in (tmp_path / "loom.py").read_text() and _out(tmp_path) == ""
    for no in ("what does loom.py print", "remove the prints", "fix the prints in loom.py"):
        assert "sed" not in whole(no), no


def test_a_scripts_run_goes_under_a_main_guard_once(tmp_path):
    (tmp_path / "loom.py").write_text(LOOM)
    whole = lambda ask: for_request(ask, tmp_path).whole  # noqa: E731
    (command,) = whole("add a main guard to loom.py")["sed"]
    for ask in ("wrap the script part of loom.py in if __name__ == '__main__'",
                "make it so importing loom.py doesn't run anything, only run it when it's run directly",
                "importing from loom.py prints its demo; it should only run when loom.py is run itself",
                "loom.py prints stuff on import, stop that", "only do the weaving in loom.py when it's run as a script",
                "when imported, loom.py should not print anything"):
        assert whole(ask) == {"sed": [command]}, ask
    for no in ("only print wide in loom.py when n is over 3", "run loom.py and tell me what it prints",
               "what does loom.py import?"):
        assert "sed" not in whole(no), no
    _run(tmp_path, command)
    text = (tmp_path / "loom.py").read_text()
    assert text.endswith('\n\nif __name__ == "__main__":\n    print("start")\n    x = weave(5)\n    print(x)\n')
    assert _out(tmp_path) == "start\ndebug: n is 5\nwide\n10\n"
    assert subprocess.run([sys.executable, "-c", "import loom"], cwd=tmp_path, capture_output=True,
                          text=True).stdout == ""
    assert "sed" not in whole("add a main guard to loom.py")  # it has one
    (tmp_path / "doc.py").write_text('def f():\n    pass\n\n\nprint("""a\nb""")\n')
    assert "sed" not in whole("add a main guard to doc.py")  # a string of several lines


async def test_asked_to_take_out_prints_the_first_round_edits_and_never_removes_the_file(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"loom.py": LOOM})
    ask = "remove the debug prints from loom.py"
    offered = for_request(ask, folder)
    assert set(offered.whole) == {"sed"}  # (no `rm loom.py` beside it)
    d.backend.push(call("exec_shell_command", command=offered.whole["sed"][0]), {"text": "Removed the debug print."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert left_open(d.backend.turns[0]) == {"exec_shell_command"}
    assert "debug" not in (folder / "loom.py").read_text()
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
