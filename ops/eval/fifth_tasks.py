"""A fifth held-out set: ten more small jobs, two of each of the shapes the others are
(file housekeeping, questions about code, edits of several lines, two-step jobs, jobs on
a file the request does not name) but sharing no file, identifier or distinctive word
with any job of tasks.py, more_tasks.py, fresh_tasks.py, third_tasks.py or
fourth_tasks.py, nor with each other. The prompts are phrased as people type them on the
first day, in words the other sets do not use.

HELD_OUT_4 became known as leading was developed beside it; these were written blind, by
a helper who read no product code and reported none of their words, as the clean
measure. They were only run to report (`ops/eval/run.py --set held_out_5`) until their job
names were seen after stop 43, and sixth_tasks.py was written blind as the clean held-out
set in their place: from then on they are a development set like fourth_tasks.py's.
Nothing in the product names a job, a file or a word of theirs (tests/test_eval.py checks
the product's sources against WORDS_5 and the fixtures' file names).
"""

from __future__ import annotations

import ast
import csv
import re
import tarfile
from pathlib import Path
from typing import Any

from ops.eval.tasks import Task, Verdict, prints, read, run_py, short, unchanged, verdict


def _names(answer: str, word: str) -> bool:
    """The answer has `word` as a word of its own (case-insensitive)."""
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", answer, re.I) is not None


def _parse(ws: Path, rel: str) -> tuple[ast.Module | None, str]:
    """The file's syntax tree, or None and why not."""
    text = read(ws, rel)
    if text is None:
        return None, f"{rel} is gone"
    try:
        return ast.parse(text), ""
    except SyntaxError as exc:
        return None, f"{rel} no longer parses ({exc.msg})"


def _top_defs(tree: ast.Module) -> set[str]:
    return {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


# ---- file housekeeping ----

PUPPETS = {
    "marionettes/jester.txt": "jester, red and gold, nine strings on a cross-bar control\n",
    "marionettes/dragon.txt": "dragon, papier-mache head, needs two operators\n",
    "marionettes/scenery/castle.txt": "painted flat, folds in three\n",
    "showbill.md": "# matinee on saturday\n",
}


def _archive_members(path: Path) -> dict[str, str] | str:
    """The files a gzipped tar holds, by name, or why it cannot be read."""
    try:
        with tarfile.open(path, "r:gz") as tar:
            found = {}
            for member in tar.getmembers():
                if member.isfile():
                    data = tar.extractfile(member)
                    found[member.name] = data.read().decode(errors="replace") if data else ""
            return found
    except (tarfile.TarError, OSError, EOFError) as exc:
        return f"{path.name} is not a readable .tar.gz ({exc})"


def check_tarball(ws: Path, answer: str) -> Verdict:
    archives = sorted(p for p in ws.rglob("*") if p.is_file() and p.name.endswith((".tar.gz", ".tgz")))
    if len(archives) != 1:
        return False, f"{len(archives)} .tar.gz files in the workspace, not one"
    members = _archive_members(archives[0])
    if isinstance(members, str):
        return False, members
    got = {}
    for name, text in members.items():
        rel = name
        while rel.startswith("./"):
            rel = rel[2:]
        got[rel.removeprefix("marionettes/")] = text
    want = {rel.removeprefix("marionettes/"): text for rel, text in PUPPETS.items() if rel.startswith("marionettes/")}
    if got != want:
        return False, f"the archive holds {short(', '.join(sorted(got))) or 'nothing'}, not the folder's three files"
    return verdict(unchanged(ws, PUPPETS, *PUPPETS), "the archive holds the whole folder, which is as it was")


ORCHIDS = {
    "orchids/phalaenopsis.txt": "water weekly, bright shade\n",
    "orchids/cattleya.txt": "",
    "orchids/repot/dendrobium.txt": "",
    "orchids/repot/oncidium.txt": "bark mix, spring\n",
    "misting.log": "",
    "greenhouse.md": "# greenhouse\nkeep above 15 degrees at night\n",
}


def check_empty_files(ws: Path, answer: str) -> Verdict:
    left = [rel for rel, text in ORCHIDS.items() if not text and (ws / rel).exists()]
    if left:
        return False, f"still there: {', '.join(left)}"
    kept = [rel for rel, text in ORCHIDS.items() if text]
    return verdict(unchanged(ws, ORCHIDS, *kept), "every empty file is gone, the others as they were")


# ---- questions about code ----

KOMBUCHA = {
    "kombucha/__init__.py": "",
    "kombucha/notify.py": (
        "import json\nimport os\nimport urllib.request\n\n"
        "HOOK = os.environ.get('SCOBY_WEBHOOK_URL')\n"
        "CHATTY = os.environ.get('SCOBY_LOG_LEVEL', 'quiet') == 'debug'\n\n\n"
        "def alert(batch, ph):\n"
        "    if CHATTY:\n        print('checking', batch, ph)\n"
        "    if not HOOK:\n        return None  # nowhere to post to, so nothing is sent\n"
        "    body = json.dumps({'batch': batch, 'ph': ph}).encode()\n"
        "    req = urllib.request.Request(HOOK, data=body, headers={'Content-Type': 'application/json'})\n"
        "    return urllib.request.urlopen(req, timeout=5).status\n"
    ),
    "kombucha/batches.py": (
        "from kombucha.notify import alert\n\n"
        "READINGS = {'ginger': 3.1, 'hibiscus': 2.4}\n\n"
        "for batch, ph in READINGS.items():\n    if ph < 2.5:\n        alert(batch, ph)\n"
    ),
}


def check_env_var(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    if "SCOBY_WEBHOOK_URL" not in answer:
        return False, f"the answer does not say SCOBY_WEBHOOK_URL: {short(answer)}"
    return True, "the answer says SCOBY_WEBHOOK_URL"


FAIRGROUND = {
    "fairground/__init__.py": "",
    "fairground/rides.py": (
        "class Ride:\n"
        "    def start(self):\n        return 'bell rings'\n\n"
        "    def speed(self):\n        return 3\n\n"
        "    def stop(self):\n        return 'brake on'\n\n"
        "    def ticket_price(self):\n        return 2.0\n"
    ),
    "fairground/carousel.py": (
        "from fairground.rides import Ride\n\n\n"
        "class Carousel(Ride):\n"
        "    def speed(self):\n        return 1\n\n"
        "    def ticket_price(self):\n        return 1.5\n\n"
        "    def horses(self):\n        return 24\n"
    ),
    "fairground/dodgems.py": (
        "from fairground.rides import Ride\n\n\n"
        "class Dodgems(Ride):\n"
        "    def start(self):\n        return 'sparks on the ceiling'\n\n"
        "    def stop(self):\n        return 'power off'\n"
    ),
}


def check_overrides(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    missing = [name for name in ("speed", "ticket_price") if not _names(answer, name)]
    if missing:
        return False, f"the answer does not name {', '.join(missing)}: {short(answer)}"
    return True, "the answer names speed and ticket_price"


# ---- edits of several lines ----

GEARING = {
    "gearing.py": (
        "def gear_inches(chainring, cog, wheel_in):\n    return round(chainring / cog * wheel_in, 1)\n\n\n"
        "def cadence_speed(gear_in, rpm):\n    return round(gear_in * 3.1416 * rpm * 60 / 63360, 1)\n\n\n"
        "def describe(name, gear_in):\n    return f'{name}: {gear_in} in'\n\n\n"
        "print(describe('climb', gear_inches(34, 28, 27)), cadence_speed(70.0, 90))\n"
    ),
}
GEARING_PRINTS = "climb: 32.8 in 18.7"


class _Bare(ast.NodeTransformer):
    """A module's code without its annotations, imports or function docstrings."""

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.annotation = None
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.returns = None
        if ast.get_docstring(node) is not None:
            node.body = node.body[1:] or [ast.Pass()]
        self.generic_visit(node)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST | None:
        if node.value is None:
            return None
        return ast.Assign(targets=[node.target], value=node.value, lineno=node.lineno)

    def visit_Import(self, node: ast.Import) -> None:
        return None

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        return None


def _bare(tree: ast.Module) -> str:
    return ast.dump(_Bare().visit(tree))


def check_type_hints(ws: Path, answer: str) -> Verdict:
    tree, why = _parse(ws, "gearing.py")
    if tree is None:
        return False, why
    for func in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        a = func.args
        bare = [arg.arg for arg in a.posonlyargs + a.args + a.kwonlyargs + [x for x in (a.vararg, a.kwarg) if x]
                if arg.annotation is None]
        if bare:
            return False, f"{func.name}'s {', '.join(bare)} have no type hint"
        if func.returns is None:
            return False, f"{func.name} has no return type hint"
    if _bare(tree) != _bare(ast.parse(GEARING["gearing.py"])):
        return False, "gearing.py changed beyond its type hints"
    return verdict(prints(ws, ["gearing.py"], GEARING_PRINTS), "every parameter and return has a type hint, "
                   "the code as it was")


SEEDS = {
    "seed_order.csv": (
        "variety,packets,price\n"
        "Sweetcorn,3,2.25\n"
        "Beetroot,2,1.80\n"
        "Parsnip,1,2.10\n"
        "Courgette,4,1.95\n"
    ),
    "allotment.txt": "plot 14, by the water butt\n",
}


def check_total_column(ws: Path, answer: str) -> Verdict:
    text = read(ws, "seed_order.csv")
    if text is None:
        return False, "seed_order.csv is gone"
    rows = [r for r in csv.reader(text.splitlines()) if any(c.strip() for c in r)]
    before = list(csv.reader(SEEDS["seed_order.csv"].splitlines()))
    if len(rows) != len(before):
        return False, f"seed_order.csv has {len(rows)} rows, not {len(before)}"
    head = [c.strip() for c in rows[0]]
    if len(head) != 4 or head[:3] != before[0] or "total" not in head[3].lower():
        return False, f"the header is {','.join(head)!r}, not the three columns and a total"
    for row, old in zip(rows[1:], before[1:], strict=True):
        cells = [c.strip() for c in row]
        if len(cells) != 4 or cells[:3] != old:
            return False, f"a row is {','.join(row)!r}: not {','.join(old)!r} and its total"
        try:
            total = float(cells[3].lstrip("£$€"))
        except ValueError:
            return False, f"{old[0]}'s total is {cells[3]!r}, not a number"
        if abs(total - int(old[1]) * float(old[2])) > 0.006:
            return False, f"{old[0]}'s total is {cells[3]}, not packets times price"
    return verdict(unchanged(ws, SEEDS, "allotment.txt"), "each row has its total, packets times price")


# ---- two-step jobs ----

SIGNALS = {
    "transmit.py": (
        "CODES = {'a': '.-', 'e': '.', 'n': '-.', 'o': '---', 's': '...', 't': '-'}\n\n\n"
        "def to_morse(text):\n    return ' '.join(CODES[c] for c in text.lower() if c in CODES)\n\n\n"
        "for word in ('sos', 'note'):\n    print(word, to_morse(word))\n"
    ),
}
SIGNALS_PRINTS = "sos ... --- ...\nnote -. --- - ."


def check_split_module(ws: Path, answer: str) -> Verdict:
    tree, why = _parse(ws, "morse.py")
    if tree is None:
        return False, why.replace("is gone", "does not exist")
    if "to_morse" not in _top_defs(tree):
        return False, "morse.py does not define to_morse"
    tree, why = _parse(ws, "transmit.py")
    if tree is None:
        return False, why
    if "to_morse" in _top_defs(tree):
        return False, "transmit.py still defines to_morse itself"
    imports = [n for n in ast.walk(tree) if (isinstance(n, ast.ImportFrom) and n.module == "morse")
               or (isinstance(n, ast.Import) and any(a.name == "morse" for a in n.names))]
    if not imports:
        return False, "transmit.py does not import from morse"
    wrong = prints(ws, ["transmit.py"], SIGNALS_PRINTS) or prints(
        ws, ["-c", "from morse import to_morse; print(to_morse('Taos'))"], "- .- --- ...")
    return verdict(wrong, "to_morse lives in morse.py, transmit.py imports it and prints as it did")


QUINCE = {
    "quince/__init__.py": '"""Helpers for a jam kitchen."""\n\n__version__ = "0.4.2"\n',
    "quince/setpoint.py": "def at_setpoint(celsius):\n    return celsius >= 104.5\n",
    "CHANGES.md": (
        "# Changes\n\n"
        "## 0.4.2\n- fixed the thermometer rounding in setpoint\n\n"
        "## 0.4.1\n- first release\n"
    ),
}
QUINCE_OLD = QUINCE["CHANGES.md"][QUINCE["CHANGES.md"].index("## 0.4.2"):]


def check_version_bump(ws: Path, answer: str) -> Verdict:
    text = read(ws, "quince/__init__.py")
    if text is None:
        return False, "quince/__init__.py is gone"
    line = re.search(r"^__version__[ \t]*=[ \t]*['\"]0\.5\.0['\"][ \t]*$", text, re.M)
    if not line:
        return False, f"quince/__init__.py does not set __version__ to 0.5.0: {short(text)}"
    if text.replace(line.group(0), '__version__ = "0.4.2"') != QUINCE["quince/__init__.py"]:
        return False, "quince/__init__.py changed beyond its version"
    changes = read(ws, "CHANGES.md")
    if changes is None:
        return False, "CHANGES.md is gone"
    if QUINCE_OLD not in changes:
        return False, "CHANGES.md's earlier entries changed"
    head = changes[:changes.index(QUINCE_OLD)]
    if "0.5.0" not in head or not _names(head, "marmalade"):
        return False, f"no entry for 0.5.0 about marmalade above 0.4.2's: {short(head)}"
    return verdict(unchanged(ws, QUINCE, "quince/setpoint.py"),
                   "the version is 0.5.0 and CHANGES.md has its entry on top")


# ---- jobs on a file the request does not name ----

CROQUET = {
    "ladder.py": (
        "from club.standings import ranked\n\n"
        "POINTS = {'Perpetua': 14, 'Aurelio': 22, 'Wilhelmina': 9, 'Florian': 17}\n\n"
        "for place, (name, pts) in enumerate(ranked(POINTS), 1):\n    print(place, name, pts)\n"
    ),
    "club/__init__.py": "",
    "club/standings.py": "def ranked(points):\n    return sorted(points.items(), key=lambda item: item[1])\n",
    "club/rules.md": "golf croquet, thirteen hoops, first to seven\n",
}


def check_ranking_order(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, CROQUET, "ladder.py", "club/rules.md")
    if changed:
        return False, changed
    wrong = prints(ws, ["ladder.py"], "1 Aurelio 22\n2 Florian 17\n3 Perpetua 14\n4 Wilhelmina 9") or prints(
        ws, ["-c", "from club.standings import ranked; print([tuple(p) for p in ranked({'x': 1, 'y': 3, 'z': 2})])"],
        "[('y', 3), ('z', 2), ('x', 1)]")
    return verdict(wrong, "most points first")


SURGERY = {
    "reminders.py": (
        "from datetime import datetime\n\nfrom surgery.slots import label\n\n"
        "for when in (datetime(2025, 3, 4, 15, 5), datetime(2025, 3, 6, 9, 30)):\n"
        "    print('Hygienist appointment:', label(when))\n"
    ),
    "surgery/__init__.py": "",
    "surgery/slots.py": "def label(when):\n    return when.strftime('%a %d %b, %I:%M %p')\n",
}
SURGERY_LINES = (r"Hygienist appointment: Tue 04 Mar, 15:05", r"Hygienist appointment: Thu 06 Mar, 0?9:30")


def check_clock_24h(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, SURGERY, "reminders.py")
    if changed:
        return False, changed
    for argv, patterns in (
        (["reminders.py"], SURGERY_LINES),
        (["-c", "from datetime import datetime; from surgery.slots import label; "
                "print(label(datetime(2025, 3, 7, 0, 15)))"], (r"Fri 07 Mar, 0?0:15",)),
    ):
        done = run_py(ws, *argv)
        if done.returncode != 0:
            return False, f"python3 {' '.join(argv)} fails: {short(done.stderr or done.stdout)}"
        lines = done.stdout.strip().splitlines()
        if len(lines) != len(patterns) or not all(
                re.fullmatch(p, ln.strip()) for p, ln in zip(patterns, lines, strict=True)):
            return False, f"python3 {' '.join(argv)} prints {short(done.stdout)!r}"
    return True, "times are on the 24-hour clock, the dates as they were"


HELD_OUT_5: tuple[Task, ...] = (
    Task("tarball", PUPPETS, "tar up the marionettes folder so i've got a .tar.gz backup of it", check_tarball),
    Task("empty_files", ORCHIDS, "There are a bunch of empty files lying around in here. Clear them out",
         check_empty_files),
    Task("env_var", KOMBUCHA, "which env variable do i need to set so the kombucha alerts actually get posted?",
         check_env_var),
    Task("overrides", FAIRGROUND, "What methods does Carousel override", check_overrides),
    Task("type_hints", GEARING, "add type hints to all the functions in gearing.py please", check_type_hints),
    Task("total_column", SEEDS, "give seed_order.csv a total column (packets x price)", check_total_column),
    Task("split_module", SIGNALS, "move to_morse out of transmit.py into a new file morse.py and import it from there",
         check_split_module),
    Task("version_bump", QUINCE, "bump quince to 0.5.0 and put a line in CHANGES.md for it: added marmalade support",
         check_version_bump),
    Task("ranking_order", CROQUET,
         "the croquet ladder comes out upside down, whoever has the most points should be first", check_ranking_order),
    Task("clock_24h", SURGERY, "appointment reminders show times like 03:05 PM - switch them to the 24 hour clock",
         check_clock_24h),
)

# The words that make each job itself: the product's sources must not hold any of them as a
# word (tests/test_eval.py), nor may any other job's prompt or fixture.
WORDS_5: dict[str, tuple[str, ...]] = {
    "tarball": ("marionettes", "jester", "showbill", "scenery"),
    "empty_files": ("orchids", "phalaenopsis", "cattleya", "dendrobium", "oncidium", "misting"),
    "env_var": ("kombucha", "SCOBY_WEBHOOK_URL", "SCOBY_LOG_LEVEL", "hibiscus"),
    "overrides": ("fairground", "Carousel", "ticket_price", "Dodgems"),
    "type_hints": ("gearing", "chainring", "gear_inches", "cadence_speed"),
    "total_column": ("seed_order", "Sweetcorn", "Beetroot", "Parsnip", "Courgette", "allotment"),
    "split_module": ("morse", "to_morse", "transmit"),
    "version_bump": ("quince", "marmalade", "setpoint"),
    "ranking_order": ("croquet", "Perpetua", "Wilhelmina", "Aurelio"),
    "clock_24h": ("Hygienist", "surgery", "reminders"),
}


def _sub(ws: Path, rel: str, old: str, new: str) -> None:
    path = ws / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new))


def _tarball(ws: Path, name: str = "marionettes.tar.gz", gz: bool = True, deep: bool = True,
             dot: bool = False, drop: bool = False) -> None:
    root = ws / "marionettes"
    with tarfile.open(ws / name, "w:gz") if gz else tarfile.open(ws / name, "w") as tar:
        for path in sorted(root.rglob("*") if deep else root.glob("*")):
            if path.is_file():
                rel = path.relative_to(root).as_posix()
                tar.add(path, arcname=f"./{rel}" if dot else f"marionettes/{rel}")
    if drop:
        for path in sorted(root.rglob("*"), reverse=True):
            if path.is_file():
                path.unlink()
            else:
                path.rmdir()
        root.rmdir()


def _empty_files(ws: Path, top_only: bool = False, also: str = "") -> None:
    for rel, text in ORCHIDS.items():
        if (not text and not (top_only and "/" in rel)) or rel == also:
            (ws / rel).unlink()


_HINTS = (("chainring, cog, wheel_in)", "chainring: int, cog: int, wheel_in: float)", " -> float"),
          ("gear_in, rpm)", "gear_in: float, rpm: float)", " -> float"),
          ("name, gear_in)", "name: str, gear_in: float)", " -> str"))


def _type_hints(ws: Path, returns: bool = True, skip: str = "", also: tuple[str, str] | None = None) -> None:
    _sub(ws, "gearing.py", "def gear_inches", "from __future__ import annotations\n\n\ndef gear_inches")
    for old, new, ret in _HINTS:
        if skip and old.startswith(skip):
            continue
        _sub(ws, "gearing.py", old + ":\n", new + (ret if returns else "") + ":\n")
    if also:
        _sub(ws, "gearing.py", *also)


def _total_column(ws: Path, how: Any = lambda packets, price: f"{packets * price:.2f}", header: str = "total",
                  rows: int = 4) -> None:
    lines = (ws / "seed_order.csv").read_text().splitlines()
    out = [lines[0] + "," + header]
    for n, line in enumerate(lines[1:], 1):
        _, packets, price = line.split(",")
        out.append(line + ("," + how(int(packets), float(price)) if n <= rows else ""))
    (ws / "seed_order.csv").write_text("\n".join(out) + "\n")


_MORSE_DEF = "def to_morse(text):\n    return ' '.join(CODES[c] for c in text.lower() if c in CODES)\n\n\n"
_MORSE_CODES = "CODES = {'a': '.-', 'e': '.', 'n': '-.', 'o': '---', 's': '...', 't': '-'}\n\n\n"


def _split_module(ws: Path, keep: bool = False, codes: bool = True, imports: bool = True) -> None:
    (ws / "morse.py").write_text((_MORSE_CODES if codes else "") + _MORSE_DEF.rstrip("\n") + "\n")
    text = (ws / "transmit.py").read_text()
    if not keep:
        text = text.replace(_MORSE_DEF, "")
        if codes:
            text = text.replace(_MORSE_CODES, "")
    if imports:
        text = "from morse import to_morse\n\n" + text
    (ws / "transmit.py").write_text(text)


def _version_bump(ws: Path, version: bool = True, entry: str = "top") -> None:
    if version:
        _sub(ws, "quince/__init__.py", "0.4.2", "0.5.0")
    note = "## 0.5.0\n- added marmalade support\n\n"
    if entry == "top":
        _sub(ws, "CHANGES.md", "## 0.4.2", note + "## 0.4.2")
    elif entry == "bottom":
        (ws / "CHANGES.md").write_text((ws / "CHANGES.md").read_text() + "\n" + note)
    elif entry == "over":
        _sub(ws, "CHANGES.md", "## 0.4.2\n- fixed the thermometer rounding in setpoint\n", note.rstrip("\n") + "\n")


# What a right run of each job does to its workspace, and its answer (tests/test_eval.py
# checks every checker passes it); kept here with the jobs, as SOLVED_HELD_OUT_4 is.
SOLVED_HELD_OUT_5: dict[str, tuple[Any, str]] = {
    "tarball": (lambda ws: _tarball(ws, name="backup.tgz", dot=True), "Made backup.tgz."),
    "empty_files": (_empty_files, "Deleted the three empty files."),
    "env_var": (None, "Set SCOBY_WEBHOOK_URL (read in kombucha/notify.py); without it alert() posts nothing."),
    "overrides": (None, "Carousel overrides speed() and ticket_price(); horses() is its own."),
    "type_hints": (_type_hints, "Added."),
    "total_column": (_total_column, "Added a total column."),
    "split_module": (_split_module, "Moved."),
    "version_bump": (_version_bump, "Bumped to 0.5.0 and noted it."),
    "ranking_order": (lambda ws: _sub(ws, "club/standings.py", "item[1])", "item[1], reverse=True)"), "Fixed."),
    "clock_24h": (lambda ws: _sub(ws, "surgery/slots.py", "%I:%M %p", "%H:%M"), "Switched."),
}

# Runs that are nearly right, each of which its checker must refuse: (job, change, answer).
NEAR_MISSES_5: tuple[tuple[str, Any, str], ...] = (
    ("tarball", lambda ws: _tarball(ws, deep=False), "Done."),
    ("tarball", lambda ws: _tarball(ws, name="marionettes.tar", gz=False), "Done."),
    ("tarball", lambda ws: _tarball(ws, drop=True), "Archived and removed the folder."),
    ("empty_files", lambda ws: _empty_files(ws, top_only=True), "Deleted."),
    ("empty_files", lambda ws: _empty_files(ws, also="orchids/repot/oncidium.txt"), "Deleted."),
    ("env_var", None, "Set SCOBY_LOG_LEVEL."),
    ("env_var", None, "You need to set HOOK in kombucha/notify.py."),
    ("overrides", None, "Carousel overrides start and stop."),
    ("overrides", None, "It overrides speed."),
    ("type_hints", lambda ws: _type_hints(ws, returns=False), "Added."),
    ("type_hints", lambda ws: _type_hints(ws, skip="name"), "Added."),
    ("type_hints", lambda ws: _type_hints(ws, also=("round(chainring / cog * wheel_in, 1)",
                                                    "chainring / cog * wheel_in")), "Added."),
    ("total_column", lambda ws: _total_column(ws, how=lambda packets, price: f"{packets + price:.2f}"), "Added."),
    ("total_column", lambda ws: _total_column(ws, rows=2), "Added."),
    ("split_module", lambda ws: _split_module(ws, keep=True), "Moved."),
    ("split_module", lambda ws: _split_module(ws, imports=False), "Moved."),
    ("split_module", lambda ws: _split_module(ws, codes=False), "Moved."),
    ("version_bump", lambda ws: _version_bump(ws, entry=""), "Bumped."),
    ("version_bump", lambda ws: _version_bump(ws, entry="bottom"), "Bumped."),
    ("version_bump", lambda ws: _version_bump(ws, entry="over"), "Bumped."),
    ("ranking_order", lambda ws: _sub(ws, "ladder.py", "ranked(POINTS)", "ranked(POINTS)[::-1]"), "Fixed."),
    ("ranking_order", lambda ws: _sub(ws, "club/standings.py", "key=lambda item: item[1]", "reverse=True"), "Fixed."),
    ("clock_24h", lambda ws: _sub(ws, "surgery/slots.py", "%I:%M", "%H:%M"), "Switched."),
    ("clock_24h", lambda ws: _sub(ws, "reminders.py", "label(when)", "when.strftime('%a %d %b, %H:%M')"), "Switched."),
)
