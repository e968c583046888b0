"""A sixth held-out set: ten more small jobs, two of each of the shapes the others are
(file housekeeping, questions about code, edits of several lines, two-step jobs, jobs on
a file the request does not name) but sharing no file, identifier or distinctive word
with any job of tasks.py, more_tasks.py, fresh_tasks.py, third_tasks.py, fourth_tasks.py
or fifth_tasks.py, nor with each other. The prompts are phrased as people type them on
the first day, in words the other sets do not use.

HELD_OUT_5's job names became known after stop 43; these were written blind, by a helper
who read no product code and reported none of their words, as the clean measure. They
were only run to report (`ops/eval/run.py --set held_out_6`) until they became known as
leading was developed beside them, and seventh_tasks.py was written blind as the clean
held-out set in their place: from then on they are a development set like
fifth_tasks.py's. Nothing in the product names a job, a file or a word of theirs
(tests/test_eval.py checks the product's sources against WORDS_6 and the fixtures' file
names).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ops.eval.tasks import CHECK_RUN_S, Task, Verdict, prints, read, run_py, says, short, unchanged, verdict


def _names(answer: str, word: str) -> bool:
    """The answer has `word` as a word of its own (case-insensitive; a hyphen joins)."""
    return re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", answer, re.I) is not None


def _parsed(ws: Path, rel: str, parse: Callable[[str], Any]) -> tuple[Any, str]:
    """The file parsed (Python by ast.parse, JSON by json.loads), or None and why not."""
    text = read(ws, rel)
    if text is None:
        return None, f"{rel} does not exist"
    try:
        return parse(text), ""
    except (SyntaxError, ValueError) as exc:
        return None, f"{rel} does not parse ({getattr(exc, 'msg', exc)})"


@contextmanager
def _copy_of(ws: Path) -> Iterator[Path]:
    """A throwaway copy of the workspace (its links kept as links), for a checker to
    change and run without touching the real one."""
    with tempfile.TemporaryDirectory(prefix="eval-copy-") as tmp:
        copy = Path(tmp) / "ws"
        shutil.copytree(ws, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        yield copy


# ---- file housekeeping ----

LOCKS = {
    "bin/flood_chamber.sh": "#!/bin/sh\n# fill the chamber before the narrowboat goes in\necho 'top paddles up'\n",
    "bin/drain_chamber.sh": "#!/bin/sh\necho 'bottom paddles up, chamber emptying'\n",
    "bin/windlass_sizes.txt": "windlass: 7/8 inch square, for the ground paddles\n",
    "lockkeeper.md": "# lock 14\nopen from eight until dusk\n",
}
LOCK_SCRIPTS = ("bin/flood_chamber.sh", "bin/drain_chamber.sh")
ANY_X = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH


def check_exec_bits(ws: Path, answer: str) -> Verdict:
    for rel in LOCKS:
        if not (ws / rel).is_file():
            return False, f"{rel} is gone"
    for rel in LOCK_SCRIPTS:
        if not (ws / rel).stat().st_mode & stat.S_IXUSR:
            return False, f"{rel} still cannot be run (no execute permission)"
    for rel in set(LOCKS) - set(LOCK_SCRIPTS):
        if (ws / rel).stat().st_mode & ANY_X:
            return False, f"{rel} was made executable too, and it is no script"
    return verdict(unchanged(ws, LOCKS, *LOCKS), "both scripts may be run, the other files as they were")


AIRSHIP = {
    "builds/v1.8.0/zeppelin_fw.hex": ":0400000001080000F3\n",
    "builds/v1.9.4/zeppelin_fw.hex": ":0400000001090400EE\n",
    "builds/v1.10.2/zeppelin_fw.hex": ":04000000010A0200EF\n",
    "hangar.txt": "the mooring mast is at the north end; ballonet valves checked monthly\n",
}


def check_latest_link(ws: Path, answer: str) -> Verdict:
    link = ws / "builds" / "latest"
    if not link.is_symlink():
        return False, "builds/latest is not a symlink" if link.exists() else "builds/latest does not exist"
    if link.resolve() != (ws / "builds" / "v1.10.2").resolve():
        return False, f"builds/latest points at {os.readlink(link)}, not the v1.10.2 folder"
    return verdict(unchanged(ws, AIRSHIP, *AIRSHIP), "builds/latest links to v1.10.2, the builds as they were")


# ---- questions about code ----

BONSAI = {
    "bonsai/__init__.py": "",
    "bonsai/pruning.py": (
        "def candle_pinch(shoots):\n    return [s[: len(s) // 3] for s in shoots]\n\n\n"
        "def wire_gauge(trunk_mm):\n    return round(trunk_mm / 3, 1)\n\n\n"
        "def leaf_reduction(pairs):\n    return max(1, pairs - 2)\n\n\n"
        "def defoliate_ok(month):\n    return month in (6, 7)\n"
    ),
    "bonsai/watering.py": (
        "def soak_minutes(pot_cm):\n    return 5 + pot_cm // 10\n\n\n"
        "def dry_spell(days):\n    return days >= 3\n"
    ),
    "tests/test_pruning.py": (
        "from bonsai.pruning import candle_pinch, defoliate_ok, leaf_reduction, wire_gauge\n\n\n"
        "def test_candle_pinch_keeps_a_third():\n    assert candle_pinch(['abcdef']) == ['ab']\n\n\n"
        "def test_wire_gauge_for_a_thick_trunk():\n    assert wire_gauge(30) == 10.0\n\n\n"
        "def test_defoliate_only_in_early_summer():\n    assert defoliate_ok(6) and not defoliate_ok(11)\n"
    ),
    "tests/test_watering.py": (
        "from bonsai.watering import dry_spell, soak_minutes\n\n\n"
        "def test_soak_minutes():\n    assert soak_minutes(25) == 7\n\n\n"
        "def test_dry_spell():\n    assert dry_spell(4) and not dry_spell(1)\n"
    ),
}


def check_untested(ws: Path, answer: str) -> Verdict:
    return says(answer, "leaf_reduction")


CIDER = {
    "press_cider.py": (
        "import argparse\n\nfrom cellar.racking import add_cellar_flags\n\n"
        "parser = argparse.ArgumentParser(description='Press one batch.')\n"
        "parser.add_argument('--apples', type=int, default=40, help='kilos of fruit')\n"
        "parser.add_argument('--pomace-ratio', type=float, default=0.7)\n"
        "add_cellar_flags(parser)\n"
        "args = parser.parse_args()\n"
        "print(f'pressing {args.apples} kg, expect {args.apples * args.pomace_ratio:.0f} litres')\n"
    ),
    "cellar/__init__.py": "",
    "cellar/racking.py": (
        "def add_cellar_flags(parser):\n"
        "    parser.add_argument('--racking-days', type=int, default=21)\n"
        "    parser.add_argument('--keeve', action='store_true', help='clarify before fermenting')\n"
    ),
    "cellar/bottling.py": (
        "import argparse\n\n"
        "parser = argparse.ArgumentParser(description='Bottle what is ready.')\n"
        "parser.add_argument('--crown-caps', type=int, default=24)\n"
        "print(parser.parse_args().crown_caps, 'caps')\n"
    ),
}
CIDER_FLAGS = ("apples", "pomace-ratio", "racking-days", "keeve")


def check_flag_list(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    missing = [f"--{flag}" for flag in CIDER_FLAGS if not _names(answer, flag) and not _names(answer, "--" + flag)]
    if missing:
        return False, f"the answer does not name {', '.join(missing)}: {short(answer)}"
    return True, "the answer names all four options"


# ---- edits of several lines ----

WINDS = {
    "anemometer.py": (
        "STATION = 'Fastnet'\n"
        "READINGS = [('03:00', 18.25, 7), ('06:00', 23.5, 12), ('09:00', 31.0, 40)]\n\n\n"
        "def beaufort(knots):\n    return min(12, round((knots / 1.625) ** (2 / 3)))\n\n\n"
        "def line(hour, knots, gust_pct):\n"
        "    return '%s  %5.1f kn  force %d  gusting +%d%%' % (hour, knots, beaufort(knots), gust_pct)\n\n\n"
        "def header(name):\n    return 'Station %s, %d readings' % (name, len(READINGS))\n\n\n"
        "print(header(STATION))\n"
        "for hour, knots, gust in READINGS:\n    print(line(hour, knots, gust))\n"
        "print('peak: %.2f kn' % max(k for _, k, _ in READINGS))\n"
    ),
    "sea_areas.txt": "Fastnet, Lundy, Irish Sea\n",
}
WINDS_PRINTS = (
    "Station Fastnet, 3 readings\n"
    "03:00   18.2 kn  force 5  gusting +7%\n"
    "06:00   23.5 kn  force 6  gusting +12%\n"
    "09:00   31.0 kn  force 7  gusting +40%\n"
    "peak: 31.00 kn"
)


def _old_style(node: ast.AST) -> str | None:
    """How `node` formats a string the old way (`'…' % x`, `'…'.format(x)`), or None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
            and isinstance(node.left.value, str):
        return f"'{short(node.left.value, 30)}' % …"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return "a .format() call"
    return None


def check_fstrings(ws: Path, answer: str) -> Verdict:
    tree, why = _parsed(ws, "anemometer.py", ast.parse)
    if why:
        return False, why
    old = [how for node in ast.walk(tree) if (how := _old_style(node))]
    if old:
        return False, f"anemometer.py still formats with {old[0]}"
    fstrings = [n for n in ast.walk(tree) if isinstance(n, ast.JoinedStr)
                and any(isinstance(v, ast.FormattedValue) for v in n.values)]
    if len(fstrings) < 3:
        return False, f"{len(fstrings)} f-strings in anemometer.py, not the three the formatting needs"
    wrong = prints(ws, ["anemometer.py"], WINDS_PRINTS) or prints(
        ws, ["-c", "import anemometer as a; print(a.line('12:00', 9.04, 5)); print(a.header('Lundy'))"],
        WINDS_PRINTS + "\n12:00    9.0 kn  force 3  gusting +5%\nStation Lundy, 3 readings")
    return verdict(wrong or unchanged(ws, WINDS, "sea_areas.txt"), "f-strings throughout, the output as it was")


POTTERY = {
    "wheel_throwing.md": (
        "# Wheel throwing for beginners\n\n"
        "Notes from the Tuesday evening class. Bring an apron and a sponge.\n\n"
        "## Wedging the clay\n\nKnead ram's-head style for a few minutes until no air pockets are left.\n\n"
        "## Centering\n\nElbows braced on your thighs, wheel fast, push the clay into a low dome.\n\n"
        "## Opening and pulling walls\n\nThumbs down to a finger's width from the bat, then three slow pulls.\n\n"
        "## Trimming at leather hard\n\nTurn the pot over, tap it to centre and take off the foot ring.\n\n"
        "## Bisque firing\n\nBone dry first; the electric one goes to 1000 degrees overnight.\n"
    ),
    "glaze_recipes.md": "# Glazes\n\n## Celadon\n\nfeldspar 40, silica 30, whiting 20, kaolin 10\n",
    "studio_rota.txt": "Tue: Priya sweeps\nThu: Gethin reclaims the slop bucket\n",
}
POTTERY_LINES = POTTERY["wheel_throwing.md"].splitlines()
POTTERY_SECTIONS = [ln[3:] for ln in POTTERY_LINES if ln.startswith("## ")]
POTTERY_TOP = [ln for ln in POTTERY_LINES[:POTTERY_LINES.index("## " + POTTERY_SECTIONS[0])] if ln.strip()]
LIST_ITEM = re.compile(r"\s*(?:[-*+]|\d+[.)])\s+(.*?)\s*")
LINK = re.compile(r"\[([^\]]+)\]\(#([^)\s]+)\)")
CONTENTS = re.compile(r"(#{1,6}\s*|\*\*|__)?(table of )?contents:?(\*\*|__)?:?", re.I)
RULE_OR_MARK = re.compile(r"-{3,}|\*{3,}|_{3,}|<!--.*-->")


def _anchor(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub's) gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def check_toc(ws: Path, answer: str) -> Verdict:
    text = read(ws, "wheel_throwing.md")
    if text is None:
        return False, "wheel_throwing.md is gone"
    lines = [ln.rstrip() for ln in text.rstrip().splitlines()]
    first = "## " + POTTERY_SECTIONS[0]
    if first not in lines:
        return False, f"wheel_throwing.md has no line {first!r} any more"
    cut = lines.index(first)
    if lines[cut:] != POTTERY_LINES[POTTERY_LINES.index(first):]:
        return False, "wheel_throwing.md changed from its first section on (or has no contents above it)"
    top = list(POTTERY_TOP)
    items = []
    for line in lines[:cut]:
        if not line.strip():
            continue
        if top and line == top[0]:
            top.pop(0)
        elif listed := LIST_ITEM.fullmatch(line):
            items.append(listed.group(1))
        elif not CONTENTS.fullmatch(line.strip()) and not RULE_OR_MARK.fullmatch(line.strip()):
            return False, f"a line above the first section is neither the title, the intro nor the contents: {line!r}"
    if top:
        return False, f"the top of wheel_throwing.md lost {top[0]!r}"
    links = []
    for item in items:
        link = LINK.fullmatch(item)
        if not link:
            return False, f"the contents' entry {item!r} is not a link to its section"
        links.append(link.group(2))
    if links and links[0] == _anchor(POTTERY_TOP[0].lstrip("# ")):
        links.pop(0)
    if not links:
        return False, "no table of contents above the first section"
    if links != [_anchor(h) for h in POTTERY_SECTIONS]:
        got = ", ".join(f"#{a}" for a in links)
        return False, f"the contents link to {short(got, 120)}, not to the five sections' anchors in order"
    return verdict(unchanged(ws, POTTERY, "glaze_recipes.md", "studio_rota.txt"),
                   "a linked table of contents above the first section, the rest as it was")


# ---- two-step jobs ----

SUNDIAL = {
    "sundial/__init__.py": "",
    "sundial/numerals.py": (
        "PAIRS = [(1000, 'M'), (500, 'D'), (100, 'C'), (50, 'L'), (10, 'X'), (5, 'V'), (1, 'I')]\n\n\n"
        "def to_roman(n):\n    out = ''\n    for value, letters in PAIRS:\n"
        "        while n >= value:\n            out += letters\n            n -= value\n    return out\n"
    ),
    "sundial/dial_face.py": (
        "from sundial.numerals import to_roman\n\nprint(' '.join(to_roman(h) for h in range(6, 19)))\n"
    ),
    "gnomon.txt": "the gnomon's edge points at true north, tilted to the latitude\n",
}
# A right to_roman, for the checker to compare against on 1 to 3999.
ROMAN_REFERENCE = (
    "def ref(n):\n"
    "    out = ''\n"
    "    for v, s in ((1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'), (50, 'L'),\n"
    "                 (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')):\n"
    "        while n >= v:\n            out += s\n            n -= v\n"
    "    return out\n"
    "from sundial.numerals import to_roman\n"
    "bad = [n for n in range(1, 4000) if to_roman(n) != ref(n)]\n"
    "print(f'to_roman({bad[0]}) is {to_roman(bad[0])!r}, not {ref(bad[0])!r}' if bad else 'right')\n"
)


def _new_tests(ws: Path, fixture: dict[str, str]) -> list[str]:
    """The test files a run added (test_*.py, *_test.py), relative to the workspace."""
    found = (p.relative_to(ws).as_posix() for p in ws.rglob("*.py") if "__pycache__" not in p.parts)
    return sorted(rel for rel in found if rel not in fixture
                  and (Path(rel).name.startswith("test") or Path(rel).name.endswith("_test.py")))


def _tests_pass(folder: Path, tests: list[str]) -> tuple[bool, str]:
    """Whether `tests` pass in `folder`: pytest's verdict, or, where pytest finds no test
    in them (a plain script of asserts), each one's exit status when run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run([sys.executable, *args], cwd=folder, env=env, capture_output=True, text=True,
                                  timeout=2 * CHECK_RUN_S)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(args, -1, "", f"did not finish in {2 * CHECK_RUN_S} s")

    done = run("-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--rootdir", str(folder),
               "--confcutdir", str(folder), *tests)
    if done.returncode == 5:  # no tests collected: scripts that assert as they run
        for test in tests:
            done = run(test)
            if done.returncode != 0:
                return False, short(done.stderr or done.stdout)
        return True, ""
    said = (done.stdout + done.stderr).strip().splitlines()
    return done.returncode == 0, short(said[-1] if said else "")


def check_test_first(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, SUNDIAL, "sundial/dial_face.py", "gnomon.txt")
    if changed:
        return False, changed
    tests = _new_tests(ws, SUNDIAL)
    if not tests:
        return False, "no new test file (test_*.py) in the workspace"
    done = run_py(ws, "-c", ROMAN_REFERENCE)
    if done.returncode != 0 or done.stdout.strip() != "right":
        return False, f"to_roman is still wrong: {short(done.stdout or done.stderr)}"
    wrong = prints(ws, ["-m", "sundial.dial_face"], "VI VII VIII IX X XI XII XIII XIV XV XVI XVII XVIII")
    if wrong:
        return False, wrong
    passed, why = _tests_pass(ws, tests)
    if not passed:
        return False, f"{', '.join(tests)} fail(s) on the fixed code: {why}"
    with _copy_of(ws) as before:
        (before / "sundial/numerals.py").write_text(SUNDIAL["sundial/numerals.py"])
        caught, _ = _tests_pass(before, tests)
    if caught:
        return False, f"{', '.join(tests)} pass(es) on the old to_roman too: the test does not catch the bug"
    return True, "a new test fails on the old to_roman and passes on the fixed one, which is right to 3999"


FOSSILS = {
    "specimens.csv": (
        "specimen,period,mass_g\n"
        "ammonite,Jurassic,412\n"
        "trilobite,Cambrian,88\n"
        "belemnite,Jurassic,36\n"
        "crinoid,Carboniferous,150\n"
        "megalodon tooth,Neogene,240\n"
    ),
    "display_case.py": (
        "import csv\nfrom collections import defaultdict\n\n"
        "with open('specimens.csv', newline='') as f:\n    rows = list(csv.DictReader(f))\n\n"
        "by_period = defaultdict(int)\nfor row in rows:\n    by_period[row['period']] += int(row['mass_g'])\n\n"
        "for period, grams in sorted(by_period.items()):\n    print(f'{period}: {grams} g')\n"
    ),
    "acquisitions.txt": "2023: the crinoid, swapped at the Lyme Regis fair\n",
}

def _fossil_rows() -> list[tuple[str, str, int]]:
    lines = FOSSILS["specimens.csv"].strip().splitlines()[1:]
    return sorted((name, period, int(mass)) for name, period, mass in (ln.split(",") for ln in lines))


def _records(data: Any) -> list[tuple[str, str, int]] | None:
    """The (specimen, period, mass) of each record of the JSON: a list of objects, or an
    object of objects keyed by specimen; None when it is neither."""
    if isinstance(data, dict) and all(isinstance(v, dict) for v in data.values()):
        data = [{"specimen": k, **v} for k, v in data.items()]
    if not isinstance(data, list) or not all(isinstance(r, dict) for r in data):
        return None
    out = []
    for r in data:
        mass = r.get("mass_g")
        try:
            grams = float(mass)
            whole = not isinstance(mass, bool) and grams == int(grams)
        except (TypeError, ValueError, OverflowError):
            whole = False
        if not whole or set(r) != {"specimen", "period", "mass_g"}:
            return None
        out.append((str(r["specimen"]), str(r["period"]), int(grams)))
    return sorted(out)


def _double_mass(data: Any) -> Any:
    """The JSON with every mass_g doubled, its type kept."""
    if isinstance(data, list):
        return [_double_mass(v) for v in data]
    if isinstance(data, dict):
        return {k: (str(int(float(v)) * 2) if isinstance(v, str) else v * 2) if k == "mass_g" else _double_mass(v)
                for k, v in data.items()}
    return data


def check_csv_to_json(ws: Path, answer: str) -> Verdict:
    data, why = _parsed(ws, "specimens.json", json.loads)
    if why:
        return False, why
    if _records(data) != _fossil_rows():
        return False, f"specimens.json does not hold the five specimens as records: {short(json.dumps(data))}"
    wrong = prints(ws, ["display_case.py"], "Cambrian: 88 g\nCarboniferous: 150 g\nJurassic: 448 g\nNeogene: 240 g")
    if wrong:
        return False, wrong
    with _copy_of(ws) as copy:
        (copy / "specimens.csv").unlink(missing_ok=True)
        (copy / "specimens.json").write_text(json.dumps(_double_mass(data)))
        wrong = prints(copy, ["display_case.py"],
                       "Cambrian: 176 g\nCarboniferous: 300 g\nJurassic: 896 g\nNeogene: 480 g")
    if wrong:
        return False, f"display_case.py does not read specimens.json: with the CSV gone and the masses doubled, {wrong}"
    return verdict(unchanged(ws, FOSSILS, "acquisitions.txt"), "specimens.json holds the records and display_case.py "
                   "reads it")


# ---- jobs on a file the request does not name ----

BENTO = {
    "lunch.py": (
        "from bento.tiffin import pack\n\n"
        "monday = pack('onigiri')\nmonday = pack('tamagoyaki', monday)\ntuesday = pack('umeboshi')\n"
        "print('monday:', ', '.join(monday))\nprint('tuesday:', ', '.join(tuesday))\n"
    ),
    "bento/__init__.py": "",
    "bento/tiffin.py": (
        "def pack(item, box=[]):\n    box.append(item)\n    return box\n\n\n"
        "def lid_label(box):\n    return f'{len(box)} things inside'\n"
    ),
}


def check_shared_default(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, BENTO, "lunch.py")
    if changed:
        return False, changed
    wrong = prints(ws, ["lunch.py"], "monday: onigiri, tamagoyaki\ntuesday: umeboshi") or prints(
        ws, ["-c", "from bento.tiffin import pack, lid_label; a = pack('x'); b = pack('y'); box = ['w']; "
                   "c = pack('z', box); print(a, b, c, c is box, lid_label(c))"],
        "['x'] ['y'] ['w', 'z'] True 2 things inside")
    return verdict(wrong, "each new box starts empty, a box handed in still gets the item")


YARN = {
    "find_yarn.py": (
        "import sys\n\nfrom wool.skeins import search\n\n"
        "for hit in search(sys.argv[1] if len(sys.argv) > 1 else 'Merino'):\n    print(hit)\n"
    ),
    "wool/__init__.py": "",
    "wool/skeins.py": (
        "SKEINS = [\n"
        "    'Merino DK, teal',\n"
        "    'Alpaca Lace, oatmeal',\n"
        "    'Baby merino 4ply, blush',\n"
        "    'Mohair blend, charcoal',\n"
        "    'Superwash Merino Aran, rust',\n"
        "]\n\n\n"
        "def search(term):\n    return [s for s in SKEINS if term in s]\n"
    ),
    "wool/tension_swatch.py": "def stitches_per_10cm(count, width_cm):\n    return round(count * 10 / width_cm)\n",
}
YARN_LIST = YARN["wool/skeins.py"][:YARN["wool/skeins.py"].index("]") + 1]


def check_ignore_case(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, YARN, "find_yarn.py", "wool/tension_swatch.py")
    if changed:
        return False, changed
    if YARN_LIST not in (read(ws, "wool/skeins.py") or ""):
        return False, "the list of skeins changed"
    merino = "Merino DK, teal\nBaby merino 4ply, blush\nSuperwash Merino Aran, rust"
    wrong = (prints(ws, ["find_yarn.py", "merino"], merino) or prints(ws, ["find_yarn.py", "MERINO"], merino)
             or prints(ws, ["find_yarn.py", "mohair BLEND"], "Mohair blend, charcoal")
             or prints(ws, ["-c", "from wool.skeins import search; print(search('LACE, OAT'), search('ino 4P'))"],
                       "['Alpaca Lace, oatmeal'] ['Baby merino 4ply, blush']"))
    return verdict(wrong, "the search ignores case and gives the names as they are written")


HELD_OUT_6: tuple[Task, ...] = (
    Task("exec_bits", LOCKS, "the shell scripts in bin/ won't run, just says permission denied. can u fix",
         check_exec_bits),
    Task("latest_link", AIRSHIP, "set up a symlink builds/latest -> whichever build folder has the highest version",
         check_latest_link),
    Task("untested", BONSAI, "is there a function in the bonsai package that has no test at all? which one",
         check_untested),
    Task("flag_list", CIDER, "what flags does press_cider.py take?", check_flag_list),
    Task("fstrings", WINDS, "anemometer.py still does the old % string formatting, could you modernise it to "
         "f-strings? output should stay exactly the same", check_fstrings),
    Task("toc", POTTERY, "Add a table of contents to the top of wheel_throwing.md that links to each section",
         check_toc),
    Task("test_first", SUNDIAL, "to_roman(4) comes back as IIII instead of IV. Write a test that reproduces it "
         "first, then fix the function so the test passes", check_test_first),
    Task("csv_to_json", FOSSILS, "I'd rather keep the specimens as JSON. Convert specimens.csv into specimens.json "
         "and change display_case.py to load that instead", check_csv_to_json),
    Task("shared_default", BENTO, "weird bug - tuesday's lunch box ends up with monday's food in it too. no idea "
         "why, can you take a look and fix it?", check_shared_default),
    Task("ignore_case", YARN, "yarn search is case sensitive rn, typing merino misses Merino DK and the others. "
         "make it ignore upper/lower case", check_ignore_case),
)

# The words that make each job itself: the product's sources must not hold any of them as a
# word (tests/test_eval.py), nor may any other job's prompt or fixture.
WORDS_6: dict[str, tuple[str, ...]] = {
    "exec_bits": ("narrowboat", "windlass", "lockkeeper", "flood_chamber", "drain_chamber"),
    "latest_link": ("zeppelin_fw", "hangar", "ballonet"),
    "untested": ("bonsai", "leaf_reduction", "candle_pinch", "defoliate_ok", "soak_minutes"),
    "flag_list": ("press_cider", "pomace", "keeve", "add_cellar_flags", "crown_caps"),
    "fstrings": ("anemometer", "beaufort", "Fastnet", "gust_pct"),
    "toc": ("wheel_throwing", "wedging", "bisque", "glaze_recipes", "celadon"),
    "test_first": ("sundial", "to_roman", "gnomon", "dial_face"),
    "csv_to_json": ("display_case", "ammonite", "trilobite", "belemnite", "crinoid"),
    "shared_default": ("bento", "onigiri", "tamagoyaki", "umeboshi", "tiffin"),
    "ignore_case": ("SKEINS", "Merino", "Alpaca", "Mohair", "Superwash"),
}


def _sub(ws: Path, rel: str, old: str, new: str) -> None:
    path = ws / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new))


def _chmod(ws: Path, *rels: str) -> None:
    for rel in rels:
        path = ws / rel
        path.chmod(path.stat().st_mode | ANY_X)


def _link(ws: Path, at: str = "builds/latest", to: str = "v1.10.2") -> None:
    (ws / at).symlink_to(to, target_is_directory=not to.endswith(".hex"))


_FSTRING_LINES = (
    ("'%s  %5.1f kn  force %d  gusting +%d%%' % (hour, knots, beaufort(knots), gust_pct)",
     "f'{hour}  {knots:5.1f} kn  force {beaufort(knots)}  gusting +{gust_pct}%'"),
    ("'Station %s, %d readings' % (name, len(READINGS))", "f'Station {name}, {len(READINGS)} readings'"),
    ("'peak: %.2f kn' % max(k for _, k, _ in READINGS)", "f'peak: {max(k for _, k, _ in READINGS):.2f} kn'"),
)


def _fstrings(ws: Path, lines: int = 3, how: Callable[[str], str] = lambda new: new) -> None:
    for old, new in _FSTRING_LINES[:lines]:
        _sub(ws, "anemometer.py", old, how(new))


def _toc(ws: Path, entry: Callable[[str], str] = lambda h: f"- [{h}](#{_anchor(h)})", skip: str = "",
         bottom: bool = False) -> None:
    toc = "## Contents\n\n" + "".join(entry(h) + "\n" for h in POTTERY_SECTIONS if h != skip) + "\n"
    if bottom:
        (ws / "wheel_throwing.md").write_text((ws / "wheel_throwing.md").read_text() + "\n" + toc)
    else:
        _sub(ws, "wheel_throwing.md", "## " + POTTERY_SECTIONS[0], toc + "## " + POTTERY_SECTIONS[0])


_ROMAN_FIX = ("PAIRS = [(1000, 'M'), (500, 'D'), (100, 'C'), (50, 'L'), (10, 'X'), (5, 'V'), (1, 'I')]",
              "PAIRS = [(1000, 'M'), (900, 'CM'), (500, 'D'), (400, 'CD'), (100, 'C'), (90, 'XC'), (50, 'L'),\n"
              "         (40, 'XL'), (10, 'X'), (9, 'IX'), (5, 'V'), (4, 'IV'), (1, 'I')]")


def _test_first(ws: Path, test: str = "assert to_roman(4) == 'IV'\n    assert to_roman(1994) == 'MCMXCIV'\n",
                fix: tuple[str, str] | None = _ROMAN_FIX) -> None:
    if test:
        (ws / "tests").mkdir(exist_ok=True)
        (ws / "tests/test_numerals.py").write_text(
            f"from sundial.numerals import to_roman\n\n\ndef test_subtractive_pairs():\n    {test}")
    if fix:
        _sub(ws, "sundial/numerals.py", *fix)


_FOSSIL_LOADER = ("import csv\n", "with open('specimens.csv', newline='') as f:\n    rows = list(csv.DictReader(f))\n")


def _csv_to_json(ws: Path, rows: int = 5, rewire: bool = True, hardcode: bool = False, numbers: bool = True,
                 shape: str = "records") -> None:
    lines = (ws / "specimens.csv").read_text().strip().splitlines()
    head = lines[0].split(",")
    records: list[dict[str, Any]] = [dict(zip(head, ln.split(","), strict=True)) for ln in lines[1:rows + 1]]
    if numbers:
        for r in records:
            r["mass_g"] = int(r["mass_g"])
    data: Any = records if shape == "records" else [list(r.values()) for r in records]
    (ws / "specimens.json").write_text(json.dumps(data, indent=2) + "\n")
    if rewire:
        _sub(ws, "display_case.py", _FOSSIL_LOADER[0], "import json\n")
        _sub(ws, "display_case.py", _FOSSIL_LOADER[1], "with open('specimens.json') as f:\n    rows = json.load(f)\n")
    if hardcode:
        (ws / "display_case.py").write_text(
            "print('Cambrian: 88 g\\nCarboniferous: 150 g\\nJurassic: 448 g\\nNeogene: 240 g')\n")


def _yarn(ws: Path, test: str) -> None:
    _sub(ws, "wool/skeins.py", "if term in s]", test)


# What a right run of each job does to its workspace, and its answer (tests/test_eval.py
# checks every checker passes it); kept here with the jobs, as SOLVED_HELD_OUT_5 is.
SOLVED_HELD_OUT_6: dict[str, tuple[Any, str]] = {
    "exec_bits": (lambda ws: _chmod(ws, *LOCK_SCRIPTS), "They had no execute bit; chmod +x fixed it."),
    "latest_link": (_link, "builds/latest -> v1.10.2 (1.10 is newer than 1.9)."),
    "untested": (None, "leaf_reduction in bonsai/pruning.py: test_pruning.py imports it but never calls it."),
    "flag_list": (None, "--apples, --pomace-ratio, and from cellar/racking.py --racking-days and --keeve "
                        "(plus -h/--help)."),
    "fstrings": (_fstrings, "Converted all three."),
    "toc": (_toc, "Added."),
    "test_first": (_test_first, "Added tests/test_numerals.py (it failed), then fixed PAIRS; it passes now."),
    "csv_to_json": (_csv_to_json, "Converted, and display_case.py reads specimens.json."),
    "shared_default": (lambda ws: _sub(ws, "bento/tiffin.py", "box=[]):\n", "box=None):\n    if box is None:\n"
                                       "        box = []\n"), "pack's default list was shared; it is None now."),
    "ignore_case": (lambda ws: _yarn(ws, "if term.casefold() in s.casefold()]"), "Done."),
}

# Runs that are nearly right, each of which its checker must refuse: (job, change, answer).
NEAR_MISSES_6: tuple[tuple[str, Any, str], ...] = (
    ("exec_bits", lambda ws: _chmod(ws, "bin/flood_chamber.sh"), "Fixed."),
    ("exec_bits", lambda ws: _chmod(ws, *LOCKS), "chmod -R +x done."),
    ("exec_bits", lambda ws: _sub(ws, "bin/drain_chamber.sh", "#!/bin/sh", "#!/usr/bin/env bash"),
     "Fixed the shebang."),
    ("latest_link", lambda ws: _link(ws, to="v1.9.4"), "Linked."),
    ("latest_link", lambda ws: shutil.copytree(ws / "builds/v1.10.2", ws / "builds/latest"), "Copied."),
    ("latest_link", lambda ws: _link(ws, to="v1.10.2/zeppelin_fw.hex"), "Linked."),
    ("latest_link", lambda ws: _link(ws, at="latest", to="builds/v1.10.2"), "Linked."),
    ("untested", None, "dry_spell has no test."),
    ("untested", None, "They all have tests: test_pruning.py and test_watering.py cover every function."),
    ("untested", None, "The leaf reduction one isn't tested."),
    ("flag_list", None, "It takes --apples and --pomace-ratio."),
    ("flag_list", None, "apples, pomace_ratio, racking_days and keeve"),
    ("flag_list", None, "--apples, --pomace-ratio, --racking-days and --crown-caps"),
    ("fstrings", lambda ws: _fstrings(ws, lines=2), "Converted."),
    ("fstrings", lambda ws: _fstrings(ws, how=lambda new: new.replace("%'", "%%'")), "Converted."),
    ("fstrings", lambda ws: _fstrings(ws, how=lambda new: new.replace(":5.1f", "").replace(":.2f", "")),
     "Converted."),
    ("fstrings", lambda ws: _fstrings(ws, how=lambda new: new.replace("f'{hour}", "'{}'.format(hour) + f'")),
     "Converted."),
    ("toc", lambda ws: _toc(ws, entry=lambda h: f"- {h}"), "Added."),
    ("toc", lambda ws: _toc(ws, skip="Centering"), "Added."),
    ("toc", lambda ws: _toc(ws, bottom=True), "Added."),
    ("toc", lambda ws: _toc(ws, entry=lambda h: f"- [{h}](#{h.replace(' ', '-')})"), "Added."),
    ("test_first", lambda ws: _test_first(ws, test=""), "Fixed."),
    ("test_first", lambda ws: _test_first(ws, test="assert to_roman(3) == 'III'\n"), "Fixed."),
    ("test_first", lambda ws: _test_first(ws, fix=None), "Wrote the test."),
    ("test_first", lambda ws: _test_first(ws, test="assert to_roman(4) == 'IV'\n", fix=(
        "    return out\n", "    return out.replace('IIII', 'IV')\n")), "Fixed."),
    ("csv_to_json", lambda ws: _csv_to_json(ws, rewire=False), "Converted."),
    ("csv_to_json", lambda ws: _csv_to_json(ws, rows=4), "Converted."),
    ("csv_to_json", lambda ws: _csv_to_json(ws, rewire=False, hardcode=True), "Converted."),
    ("csv_to_json", lambda ws: _csv_to_json(ws, shape="rows", rewire=False), "Converted."),
    ("shared_default", lambda ws: _sub(ws, "lunch.py", "pack('umeboshi')", "pack('umeboshi', [])"), "Fixed."),
    ("shared_default", lambda ws: _sub(ws, "bento/tiffin.py", "    box.append", "    box.clear()\n    box.append"),
     "Fixed."),
    ("shared_default", lambda ws: _sub(ws, "bento/tiffin.py", "box=[]):\n", "box=()):\n    box = list(box)\n"),
     "Fixed."),
    ("ignore_case", lambda ws: _yarn(ws, "if term.lower() in s]"), "Done."),
    ("ignore_case", lambda ws: _yarn(ws, "if term.capitalize() in s]"), "Done."),
    ("ignore_case", lambda ws: _sub(ws, "wool/skeins.py", "[s for s in SKEINS if term in s]",
                                    "[s.lower() for s in SKEINS if term.lower() in s.lower()]"), "Done."),
)
