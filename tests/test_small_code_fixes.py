"""Two mends said in words, on the file that holds the code meant, named or not
(actors/runs/agent/small/code_fixes.py): a list sorted the other way, times shown on the
other clock; each command run by the real shell, the code run after, and at run level,
on the scripted backend made to say it is small, held in the first round."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from actors.runs.agent.small.code_fixes import fix_commands
from actors.runs.agent.small.commands import for_request
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

BOARD = {"board.py": "from league.scores import ordered\n\nPTS = {'Ines': 4, 'Omar': 9, 'Ada': 6}\n\n"
                     "for n, (who, p) in enumerate(ordered(PTS), 1):\n    print(n, who, p)\n",
         "league/__init__.py": "",
         "league/scores.py": "def ordered(pts):\n    return sorted(pts.items(), key=lambda kv: kv[1])\n",
         "league/notes.md": "the league table, sorted by points\n"}
VISITS = {"visits.py": "from datetime import datetime\n\nfrom clinic.times import shown\n\n"
                       "print(shown(datetime(2025, 3, 4, 15, 5)))\n",
          "clinic/__init__.py": "",
          "clinic/times.py": "def shown(when):\n    return when.strftime('%a %d %b, %I:%M %p')\n"}


def _tree(root: Path, files: dict[str, str]) -> None:
    write_tree(root, files)


def _texts(root: Path, files: dict[str, str]) -> list[tuple[str, str]]:
    return [(p, (root / p).read_text()) for p in files]


def _out(root: Path, script: str) -> str:
    return subprocess.run([sys.executable, script], cwd=root, check=True, capture_output=True, text=True).stdout


def test_a_list_in_the_wrong_order_has_its_sort_turned_the_way_the_words_say(tmp_path):
    _tree(tmp_path, BOARD)
    texts = lambda: _texts(tmp_path, BOARD)  # noqa: E731
    down = ("sed -i '2s/sorted(pts\\.items(), key=lambda kv: kv\\[1\\])/"
            "sorted(pts.items(), key=lambda kv: kv[1], reverse=True)/' league/scores.py")
    for ask in ("the league table comes out upside down, whoever has the most points should be first",
                "sort the board with the highest score first", "the ranking is backwards",
                "the standings should be in descending order"):
        assert fix_commands(ask, texts) == {"sed": [down]}, ask
    assert fix_commands("put the lowest first in the table", texts) == {}  # it sorts up already
    for no in ("what's first in the league table?", "the string comes out reversed in shout.py",
               "make the list upside down in notes.md"):
        assert fix_commands(no, texts, [n for n in ("shout.py", "notes.md") if n in no]) == {}, no
    subprocess.run(["bash", "-c", down], cwd=tmp_path, check=True)
    assert _out(tmp_path, "board.py") == "1 Omar 9\n2 Ada 6\n3 Ines 4\n"
    assert for_request("flip it back: lowest first in the table", tmp_path).whole["sed"] == [
        "sed -i '2s/sorted(pts\\.items(), key=lambda kv: kv\\[1\\], reverse=True)/"
        "sorted(pts.items(), key=lambda kv: kv[1], reverse=False)/' league/scores.py"]
    two = [("a.py", "x = sorted(a)\n"), ("b.py", "y = sorted(b)\n")]
    assert fix_commands("the list is upside down", lambda: two) == {}  # which one: the person's to say


def test_times_on_the_other_clock_have_their_layout_changed(tmp_path):
    _tree(tmp_path, VISITS)
    texts = lambda: _texts(tmp_path, VISITS)  # noqa: E731
    to_24 = "sed -i '2s/%a %d %b, %I:%M %p/%a %d %b, %H:%M/' clinic/times.py"
    for ask in ("visit reminders show times like 03:05 PM - switch them to the 24 hour clock",
                "use 24h time in the reminders", "show the times as twenty-four hour please"):
        assert fix_commands(ask, texts) == {"sed": [to_24]}, ask
    assert fix_commands("show 12 hour times", texts) == {}  # already
    subprocess.run(["bash", "-c", to_24], cwd=tmp_path, check=True)
    assert _out(tmp_path, "visits.py") == "Tue 04 Mar, 15:05\n"
    (back,) = fix_commands("go back to the 12-hour clock", lambda: _texts(tmp_path, VISITS))["sed"]
    subprocess.run(["bash", "-c", back], cwd=tmp_path, check=True)
    assert _out(tmp_path, "visits.py") == "Tue 04 Mar, 03:05 PM\n"


async def test_asked_to_turn_a_list_the_first_round_runs_the_sort_mend(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, BOARD)
    ask = "the league table comes out upside down, whoever has the most points should be first"
    (command,) = for_request(ask, folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "The table now puts the most points first."})
    await conv.send_message(ask)
    await wait_state(conv, "idle", "error")
    assert left_open(d.backend.turns[0]) == {"exec_shell_command"}
    assert _out(folder, "board.py") == "1 Omar 9\n2 Ada 6\n3 Ines 4\n"
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]


def test_a_loop_that_counts_up_counts_down_where_no_sort_is_there(tmp_path):
    files = {"launch.py": "from pad.steps import count\n\nprint(count(4))\n", "pad/__init__.py": "",
             "pad/steps.py": "def count(top):\n    return ' '.join(str(n) for n in range(1, top + 1)) + ' go'\n"}
    _tree(tmp_path, files)
    expected = {"sed": ["sed -i '2s/range(1, top + 1)/reversed(range(1, top + 1))/' pad/steps.py"]}
    for ask in ("the count goes up instead of down, fix it", "the countdown runs backwards"):
        assert fix_commands(ask, lambda: _texts(tmp_path, files)) == expected, ask
    subprocess.run(["bash", "-c", expected["sed"][0]], cwd=tmp_path, check=True)
    assert _out(tmp_path, "launch.py") == "4 3 2 1 go\n"
    assert fix_commands("the count goes up, make it go up by two", lambda: _texts(tmp_path, files)) == {}


def test_a_search_made_to_ignore_case_lowers_both_sides_of_the_one_comparison_meant(tmp_path):
    files = {"lookup.py": "import sys\n\nfrom shelf.books import find\n\nprint(find(sys.argv[1]))\n",
             "shelf/__init__.py": "",
             "shelf/books.py": "TITLES = ['Dune', 'Emma', 'Ulysses']\n\n\ndef find(word):\n"
                               "    return [t for t in TITLES if word in t]\n\n\n"
                               "def same(a, b):\n    return a == b\n"}
    _tree(tmp_path, files)
    expected = {"sed": ["sed -i '5s/word in t/word.lower() in t.lower()/' shelf/books.py"]}
    for ask in ("the book search is case sensitive, typing dune finds nothing. make find ignore case",
                "find should ignore upper/lower case", "make the book search work regardless of case"):
        assert fix_commands(ask, lambda: _texts(tmp_path, files)) == expected, ask
    assert fix_commands("make it ignore case", lambda: _texts(tmp_path, files)) == {}  # which of two: not said
    subprocess.run(["bash", "-c", expected["sed"][0]], cwd=tmp_path, check=True)
    done = subprocess.run([sys.executable, "lookup.py", "DUNE"], cwd=tmp_path, check=True, capture_output=True,
                          text=True)
    assert done.stdout == "['Dune']\n"
    assert fix_commands("the search should ignore case", lambda: _texts(tmp_path, files)) == {}  # lowered already
