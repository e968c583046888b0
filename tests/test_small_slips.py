"""A classic slip of Python code reported as a bug, found by the parser and mended
(actors/runs/agent/small/slips.py): each kind in a tree of its own, the report in
several wordings, the command run by the real shell and the code run after it; the
reports it must leave alone; and at run level, on the scripted backend made to say it is
small, the first round held to the mend and the answer beginning with what it echoed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from actors import notices
from actors.runs.agent.small.commands import for_request
from actors.runs.agent.small.slips import slip_commands, slips_in
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.trees import write_tree
from tests.waiting import wait_state

# Each: the tree, reports of its bug, the script to run and what it prints once mended.
KINDS = {
    "shared default": (
        {"orders.py": "from kitchen.tray import serve\n\nfirst = serve('soup')\nsecond = serve('tea')\n"
                      "print(first, second)\n",
         "kitchen/__init__.py": "",
         "kitchen/tray.py": "def serve(dish, tray=[]):\n    \"\"\"Put `dish` on the tray.\"\"\"\n"
                            "    tray.append(dish)\n    return tray\n",
         "kitchen/menu.py": "DISHES = ['soup', 'tea']\n"},
        ("the second order's tray still has the soup on it, why?", "serve keeps what was on the tray last time, fix",
         "weird: each tray gets everything served before"),
        "orders.py", "['soup'] ['tea']\n"),
    "thrown away": (
        {"till.py": "from shop.bill import total\n\nprint(total(20.0, member=True))\n",
         "shop/__init__.py": "",
         "shop/bill.py": "RATE = 0.9\n\n\ndef total(amount, member=False):\n    due = amount\n    if member:\n"
                         "        due * RATE\n    return due\n"},
        ("members are meant to get ten percent off the total but they pay full", "the member total is wrong",
         "member discount doesn't work"),
        "till.py", "18.0\n"),
    "text and number": (
        {"tools/count.py": "SHEEP = 12\nprint('sheep in the pen: ' + SHEEP)\n",
         "tools/gate.py": "print('gate shut')\n"},
        ("one of the scripts in tools/ crashes, can you sort it", "the tools count script blows up with a TypeError"),
        "tools/count.py", "sheep in the pen: 12\n"),
    "added twice": (
        {"invoice.py": "from billing.sums import gross\n\nprint(gross(100))\n",
         "billing/__init__.py": "",
         "billing/sums.py": "FEE = 5\n\n\ndef gross(net):\n    fee = FEE\n    return net + fee + fee\n"},
        ("the gross amount is too high, the fee gets counted twice", "gross is 10 more than it should be"),
        "invoice.py", "105\n"),
    "sort kept": (
        {"rank.py": "from board.order import ranked\n\nprint(ranked([3, 1, 2]))\n",
         "board/__init__.py": "",
         "board/order.py": "def ranked(points):\n    out = points.sort(reverse=True)\n    return out\n"},
        ("ranked gives None instead of the points", "the ranked board prints None, fix it"),
        "rank.py", "[3, 2, 1]\n"),
    "text kept": (
        {"greet.py": "def tidy(name):\n    name.strip()\n    return name.title()\n\n\n"
                     "print('[' + tidy('  ada lovelace ') + ']')\n"},
        ("the name still has spaces around it", "tidy doesn't work"),
        "greet.py", "[Ada Lovelace]\n"),
    "is a literal": (
        {"lamp.py": "def state(level):\n    if level is 300:\n        return 'bright'\n    return 'dim'\n\n\n"
                    "print(state(int('300')))\n"},
        ("the lamp says dim when the level is 300, that's wrong",),
        "lamp.py", "bright\n"),
    "name misspelt": (
        {"lengths.py": "def longest(words):\n    best = ''\n    for w in words:\n        if len(w) > len(bset):\n"
                       "            best = w\n    return best\n\n\nprint(longest(['fig', 'melon', 'kiwi']))\n"},
        ("lengths.py crashes with a NameError", "longest blows up, fix it"),
        "lengths.py", "melon\n"),
    "import missing": (
        {"circle.py": "\"\"\"Areas.\"\"\"\n\n\ndef area(r):\n    return round(math.pi * r * r, 2)\n\n\n"
                      "print(area(2))\n"},
        ("circle.py dies with an error", "area doesn't work"),
        "circle.py", "12.57\n"),
    "self left out": (
        {"tally.py": "from gadgets.clicker import Clicker\n\nc = Clicker()\nc.bump()\nc.bump()\nprint(c.count)\n",
         "gadgets/__init__.py": "",
         "gadgets/clicker.py": "class Clicker:\n    def __init__(self):\n        self.count = 0\n\n"
                               "    def bump(self):\n        self.count = count + 1\n",
         "gadgets/dial.py": "def turn(angle):\n    return angle % 360\n"},
        ("tally.py crashes with a NameError", "running tally.py gives an error, can you fix it"),
        "tally.py", "2\n"),
    "attribute misspelt": (
        {"brew.py": "class Kettle:\n    def __init__(self, litres):\n        self.litres = litres\n\n"
                    "    def show(self):\n        return f'{self.litre} l'\n\n\nprint(Kettle(1.5).show())\n"},
        ("the kettle show raises AttributeError", "brew.py errors out"),
        "brew.py", "1.5 l\n"),
    "never returned": (
        {"stats/__init__.py": "",
         "stats/mean.py": "def average(xs):\n    mean = sum(xs) / len(xs)\n",
         "report.py": "from stats.mean import average\n\nprint(average([2, 4]))\n"},
        ("the average prints None instead of a number", "average is broken"),
        "report.py", "3.0\n"),
    "total started again": (
        {"cart.py": "def total(prices):\n    for p in prices:\n        due = 0\n        due += p\n    return due\n\n\n"
                    "print(total([1, 2, 3]))\n"},
        ("total only counts the last price, bug", "the cart total is wrong"),
        "cart.py", "6\n"),
    "function not called": (
        {"signal.py": "def ready():\n    return False\n\n\nif ready:\n    print('go')\nelse:\n    print('wait')\n"},
        ("it says go even though ready is false", "signal.py is wrong, should wait"),
        "signal.py", "wait\n"),
    "parameter returned": (
        {"slug.py": "def slug(title):\n    made = title.lower().replace(' ', '-')\n    return title\n\n\n"
                    "print(slug('Hello Big World'))\n"},
        ("slug doesn't work, it gives the title back as it was", "the slug is wrong"),
        "slug.py", "hello-big-world\n"),
    "list changed while looped": (
        {"prune.py": "def drop_small(xs):\n    for x in xs:\n        if x < 10:\n            xs.remove(x)\n"
                     "    return xs\n\n\nprint(drop_small([1, 2, 30, 4, 50]))\n"},
        ("drop_small leaves some small numbers in, bug", "prune.py is broken"),
        "prune.py", "[30, 50]\n"),
    "return in every turn": (
        {"words/__init__.py": "",
         "words/vowels.py": "def has_vowel(word):\n    for ch in word:\n        if ch in 'aeiou':\n"
                            "            return True\n        else:\n            return False\n",
         "check.py": "from words.vowels import has_vowel\n\nprint(has_vowel('sky'), has_vowel('tree'))\n"},
        ("has_vowel says tree has no vowel, wrong", "the vowel check is broken"),
        "check.py", "False True\n"),
    "return in every turn, no else": (
        {"seek.py": "def index_of(items, wanted):\n    for i, item in enumerate(items):\n        if item == wanted:\n"
                    "            return i\n        return -1\n\n\nprint(index_of(['a', 'b', 'c'], 'c'))\n"},
        ("index_of gives -1 for things that are there, which is wrong", "fix index_of"),
        "seek.py", "2\n"),
    "key misspelt": (
        {"pets.py": "PETS = [{'name': 'Rex', 'legs': 4}, {'name': 'Tweety', 'legs': 2}]\n\n"
                    "for pet in PETS:\n    print(pet['nmae'], pet['legs'])\n"},
        ("pets.py dies with a KeyError", "the pet list crashes"),
        "pets.py", "Rex 4\nTweety 2\n"),
    "operation unlike its name": (
        {"calc/__init__.py": "",
         "calc/ops.py": "def multiply(x, y):\n    \"\"\"x times y.\"\"\"\n    return x + y\n\n\n"
                        "def half(x):\n    return x / 2\n",
         "area.py": "from calc.ops import multiply\n\nprint(multiply(3, 4))\n"},
        ("area.py prints 7 instead of 12, multiply is broken", "fix the bug in calc/ops.py"),
        "area.py", "12\n"),
    "loop one short": (
        {"ferry/__init__.py": "",
         "ferry/timetable.py": "def departures(times):\n    rows = []\n    for n in range(len(times)-1):\n"
                               "        rows.append(f'{n + 1}) {times[n]}')\n    return rows\n",
         "ferry/fares.py": "ADULT = 4.5\n",
         "board.py": "from ferry.timetable import departures\n\n"
                     "print(departures(['09:10', '11:40', '17:05']))\n"},
        ("the last departure is missing from the timetable board", "departures never shows the 17:05 boat",
         "timetable stops one short"),
        "board.py", "['1) 09:10', '2) 11:40', '3) 17:05']\n"),
}


def _tree(root: Path, files: dict[str, str]) -> None:
    write_tree(root, files)


def _out(root: Path, script: str) -> str:
    return subprocess.run([sys.executable, script], cwd=root, capture_output=True, text=True).stdout


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_reported_slip_is_mended_and_the_code_then_runs_right(tmp_path, kind):
    files, reports, script, right = KINDS[kind]
    _tree(tmp_path, files)
    assert _out(tmp_path, script) != right
    commands = {ask: for_request(ask, tmp_path).whole.get("sed") for ask in reports}
    (command,) = commands[reports[0]]
    assert all(c == [command] for c in commands.values()), commands
    done = subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True, text=True)
    assert done.stdout.startswith("Mended ") and " line " in done.stdout
    assert _out(tmp_path, script) == right
    assert "sed" not in for_request(reports[0], tmp_path).whole  # mended: nothing left to mend


def test_reports_it_leaves_alone(tmp_path):
    files, reports, _, _ = KINDS["thrown away"]
    _tree(tmp_path, files)
    texts = lambda: [(p, (tmp_path / p).read_text()) for p in files]  # noqa: E731
    assert slip_commands("add a members discount to the total", texts) == {}  # no report of a bug
    assert slip_commands("the greeting is wrong", texts) == {}  # its words point at no slip
    two = {**files, "shop/stock.py": "def left(count, sold):\n    count - sold\n    return count\n"}
    _tree(tmp_path, two)
    both = lambda: [(p, (tmp_path / p).read_text()) for p in two]  # noqa: E731
    assert len(slip_commands("the shop is broken", both)) == 0  # two slips the words do not tell apart
    assert slip_commands("the member total is wrong", both)["sed"][0].startswith("sed -i -e '7s/due")


def test_what_is_no_slip_is_left_alone():
    clean = ("from pathlib import Path\n\n\ndef move(p: Path, to: Path, seen=None, mode='r'):\n"
             "    p.replace(to)\n    seen = seen or []\n    total = 0\n    total += 1\n    if mode is None:\n"
             "        return total\n    return 'n=' + str(total)\n\n\n"
             "def full(base, a, b):\n    return base + a + b\n\n\n"
             "def stocked(shelf=[1, 2]):\n    return shelf\n")
    assert slips_in("clean.py", clean) == [s for s in slips_in("clean.py", clean) if "default" in s.what] == []
    leaky = "def make(x=[]):\n    x.append(1)\n    return x\n"
    assert slips_in("tests/test_x.py", leaky)  # found, but a test's own
    assert slip_commands("make is broken", lambda: [("tests/test_x.py", leaky)]) == {}
    # Code of these shapes on purpose: a cache kept between calls, a default never handed out, a window's
    # title, a queue walked as it grows, a text wrapped in marks, a search loop that stops, a misspelt-looking
    # name written twice (bound where the parser cannot see), an attribute a subclass sets.
    meant = ("def fib(n, cache={}):\n    cache[n] = n\n    return cache[n]\n\n\n"
             "def show(items=[]):\n    items.append(0)\n    print(items)\n\n\n"
             "def name(top):\n    top.title('Main window')\n\n\n"
             "def walk(start):\n    order = [start]\n    for node in order:\n        order.append(node)\n"
             "    return order\n\n\n"
             "def wrapped(text, mark):\n    return mark + text + mark\n\n\n"
             "def rows(n):\n    for r in range(n):\n        widths = []\n        widths.append(r)\n        if r > 2:\n"
             "            break\n    return widths\n\n\n"
             "class Base:\n    def kind(self):\n        return self._kind\n\n\n"
             "class Leaf(Base):\n    _kind = 'leaf'\n\n\n"
             "def helper():\n    return resutl\n\n\nresutl = 1\nresult = 2\n"
             "def steps(xs):\n    return [xs[i + 1] - xs[i] for i in range(len(xs) - 1)]\n\n\n"
             "def gaps(xs):\n    out = []\n    for i in range(len(xs) - 1):\n        out.append(xs[i + 1] - xs[i])\n"
             "    return out\n\n\n"
             "def commas(words):\n    for i in range(len(words) - 1):\n        print(words[i] + ',')\n"
             "    print(words[i])\n")
    assert slips_in("meant.py", meant) == []


async def test_reported_slip_the_first_round_runs_the_mend_and_the_answer_says_it(real_tools, tmp_path):
    d = real_tools
    files, reports, script, right = KINDS["thrown away"]
    folder, conv = await small_project(d, tmp_path, files)
    (command,) = for_request(reports[0], folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command),
                   {"text": "Mended shop/bill.py line 7: a value worked out and thrown away."})
    await conv.send_message(reports[0])
    await wait_state(conv, "idle", "error")
    assert left_open(d.backend.turns[0]) == {"exec_shell_command"}
    assert d.backend.turns[1].reply_starts == ("Mended shop/bill.py line 7: a value worked out and thrown away.",)
    assert _out(folder, script) == right
    assert [(c.tool, c.state) for c in cards(conv)] == [("exec_shell_command", "done")]


async def test_after_the_mend_ran_an_answer_at_fault_gives_way_to_what_the_command_did(real_tools, tmp_path):
    """The job's whole command did the job; the model's words about it named a file
    that is not there, twice: the person reads what the command printed (the job is
    done), not that the model could not do it."""
    d = real_tools
    files, reports, script, right = KINDS["thrown away"]
    folder, conv = await small_project(d, tmp_path, files)
    (command,) = for_request(reports[0], folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "Fixed it in billing.py."},
                   {"text": "Yes, billing.py is fixed."})
    await conv.send_message(reports[0])
    await wait_state(conv, "idle", "error")
    assert _out(folder, script) == right
    assert conv.info.end_reason != "could_not"
    shown = [i for i in conv.items if i.kind == "assistant" and not i.not_answer]
    assert shown[-1].text == notices.JOB_DONE_PRINTED.format(
        printed="Mended shop/bill.py line 7: a value worked out and thrown away.")
    assert any(i.kind == "notice" and i.text == notices.ANSWER_FROM_COMMAND for i in conv.items)
    assert not any(i.kind == "notice" and i.end_reason == "could_not" for i in conv.items)


async def test_after_the_mend_ran_an_answer_that_loops_ends_the_run_with_what_the_command_did(real_tools, tmp_path):
    """The job's whole command did the job; the model's answer after it looped from its
    first words: no round more is given (SmolLM2 went on to write files nobody asked
    for), the person reads what the command printed."""
    d = real_tools
    files, reports, script, right = KINDS["thrown away"]
    folder, conv = await small_project(d, tmp_path, files)
    (command,) = for_request(reports[0], folder).whole["sed"]
    d.backend.push(call("exec_shell_command", command=command), {"text": "s/**/" * 200},
                   call("write_file", path="junk.txt", content="s/**/"))
    await conv.send_message(reports[0])
    await wait_state(conv, "idle", "error")
    assert len(d.backend.turns) == 2 and not (folder / "junk.txt").exists()
    assert _out(folder, script) == right
    shown = [i for i in conv.items if i.kind == "assistant" and not i.not_answer]
    assert shown[-1].text == notices.JOB_DONE_PRINTED.format(
        printed="Mended shop/bill.py line 7: a value worked out and thrown away.")
    assert any(i.kind == "notice" and i.text == notices.ANSWER_FROM_COMMAND for i in conv.items)


def test_text_typed_in_and_met_with_a_number_is_made_a_number_where_it_is_read(tmp_path):
    files = {"gate.py": "import sys\n\nwho = input('name? ')\nage = input('age? ')\n"
                        "print(who, 'in' if age >= 18 else 'out')\n",
             "fee.py": "import sys\n\nkm = sys.argv[1]\nprint(km * 0.5)\n"}
    _tree(tmp_path, files)
    (command,) = for_request("gate.py crashes with a TypeError", tmp_path).whole["sed"]
    assert "int(input('age? '))" in command and "who" not in command.split("&&")[0]
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True)
    done = subprocess.run([sys.executable, "gate.py"], cwd=tmp_path, input="Ada\n30\n", capture_output=True,
                          text=True)
    assert done.stdout.endswith("Ada in\n"), done.stderr
    (command,) = for_request("fee.py fails with an error", tmp_path).whole["sed"]
    assert "float(sys.argv[1])" in command
    subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True)
    done = subprocess.run([sys.executable, "fee.py", "7"], cwd=tmp_path, capture_output=True, text=True)
    assert done.stdout == "3.5\n"
