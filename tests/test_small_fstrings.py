"""A file's `%` and `.format()` strings made f-strings (actors/runs/agent/small/
fstrings.py): the command run by the real shell, the script printing the same after it,
and at run level, on the scripted backend made to say it is small, held in the first
round."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from actors.runs.agent.small.commands import for_request
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state

GUESTS = ('who = "ada"\nyears = 36\nprint("%s is %d years old" % (who, years))\nprint("cost: %.2f%%" % 12.5)\n'
          "print('{} and {}'.format(who, years))\nprint(\"{0}/{1} {w!r}\".format(1, 2, w=who))\n"
          'print("hi %r" % who, "x {:>5}".format(years))\nprint("[%-6s|%5s|%4d|%-4d|%03d|%+d]" % (who, who, years, '
          'years, 7, years))\nprint("%8.3f %-7.1f| %+.1f %e %g %x %#o %5.1f%%" % (3.14159, 2.5, 2.0, 1234.5, 0.5, '
          '255, 8, 99.44))\nplain = "100%"\n')
# A string of a shape not written again (a mapping, unpacked arguments) keeps the file as it is.
OTHER_SHAPES = 'print("%(a)s" % {"a": 1})\nprint("%s!" % "hi")\n'



def _out(root: Path) -> str:
    return subprocess.run([sys.executable, "guests.py"], cwd=root, check=True, capture_output=True, text=True).stdout


def test_formatted_strings_become_f_strings_and_print_the_same(tmp_path):
    (tmp_path / "guests.py").write_text(GUESTS)
    before = _out(tmp_path)
    whole = lambda ask: for_request(ask, tmp_path).whole  # noqa: E731
    (command,) = whole("switch guests.py over to f-strings")["sed"]
    assert whole("use f strings in guests.py instead of % formatting") == {"sed": [command]}
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True)
    text = (tmp_path / "guests.py").read_text()
    assert 'print(f"{who} is {years} years old")' in text and 'print(f"cost: {12.5:.2f}%")' in text
    assert "print(f'{who} and {years}')" in text and 'print(f"{1}/{2} {who!r}")' in text
    assert 'print(f"hi {who!r}", f"x {years:>5}")' in text
    assert 'print(f"[{who!s:<6}|{who!s:>5}|{years:4d}|{years:<4d}|{7:03d}|{years:+d}]")' in text
    assert "%" not in text.replace("100%", "").replace("}%", "")
    assert _out(tmp_path) == before
    assert "sed" not in whole("make sure nothing else in guests.py needs f-strings")  # nothing left to write again
    (tmp_path / "other.py").write_text(OTHER_SHAPES)  # all of a file's strings, or none (not half the job)
    assert "sed" not in whole("switch other.py over to f-strings")


async def test_asked_for_f_strings_the_first_round_writes_them(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"guests.py": GUESTS})
    ask = "switch guests.py over to f-strings"
    (command,) = for_request(ask, folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Switched to f-strings."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert left_open(d.backend.turns[0]) == {"exec_shell_command"}
    assert 'print(f"{who} is {years} years old")' in (folder / "guests.py").read_text()
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]
