"""A fourth held-out set: ten more small jobs, two of each of the shapes the others are
(file housekeeping, questions about code, edits of several lines, two-step jobs, jobs on
a file the request does not name) but sharing no file, identifier or distinctive word
with any job of tasks.py, more_tasks.py, fresh_tasks.py or third_tasks.py, nor with each
other. The prompts are phrased as people type them, in words the other sets do not use.

HELD_OUT_3 became known as leading was developed beside it; these were written fresh, by
a helper who reported none of their words, as the clean measure, so a change to the
leading can again be measured on jobs nobody has looked at while writing it. They were only
run to report (`ops/eval/run.py --set held_out_4`) until they too became known while
leading was developed, and fifth_tasks.py was written blind as the clean held-out set in
their place: from this stop on they are a development set like third_tasks.py's. Nothing in
the product names a job, a file or a word of theirs (tests/test_eval.py checks the
product's sources against WORDS_4 and the fixtures' file names).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from ops.eval.tasks import Task, Verdict, prints, read, short, unchanged, verdict


def _files_under(ws: Path, folder: str) -> list[str]:
    root = ws / folder
    if not root.is_dir():
        return []
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def _names(answer: str, word: str) -> bool:
    """The answer has `word` as a word of its own (case-insensitive)."""
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", answer, re.I) is not None


# ---- file housekeeping ----

BANDROOM = {
    "brass/trombone.abc": "X:1\nT:Trombone part\nK:Bb\n|B,2 F,2|\n",
    "brass/tuba.abc": "X:2\nT:Tuba part\nK:Bb\n|B,,4|\n",
    "cornets/cornet.abc": "X:3\nT:Cornet part\nK:Bb\n|dcBA B2|\n",
    "cornets/flugelhorn.abc": "X:4\nT:Flugelhorn part\nK:Bb\n|F2 B2|\n",
    "conductor.txt": "tempo 96, hold the fermata in bar 12\n",
}


def check_fold_cornets(ws: Path, answer: str) -> Verdict:
    want = {rel.split("/", 1)[1]: text for rel, text in BANDROOM.items() if "/" in rel}
    for name, text in want.items():
        if read(ws, f"brass/{name}") != text:
            return False, f"brass/{name} is missing or differs from the fixture's {name}"
    there = _files_under(ws, "brass")
    if there != sorted(want):
        return False, f"brass/ holds {short(', '.join(there))}"
    if (ws / "cornets").exists():
        return False, "cornets/ is still there"
    return verdict(unchanged(ws, BANDROOM, "conductor.txt"),
                   "the cornets' parts are in brass/, cornets/ is gone, the rest as it was")


MEWS = {
    "falconry/Merlin.txt": "small and quick, takes larks\n",
    "falconry/Kestrel.txt": "hovers over the verges\n",
    "falconry/SAKER.txt": "desert falcon, heavy\n",
    "falconry/goshawk.txt": "woodland hunter\n",
    "Jesses.md": "# leather straps for the legs\n",
}


def check_lower_names(ws: Path, answer: str) -> Verdict:
    want = {rel.removeprefix("falconry/").lower(): text for rel, text in MEWS.items() if rel.startswith("falconry/")}
    there = _files_under(ws, "falconry")
    if there != sorted(want):
        return False, f"falconry/ holds {short(', '.join(there)) or 'nothing'}"
    for name, text in want.items():
        if read(ws, f"falconry/{name}") != text:
            return False, f"falconry/{name} does not hold what it held before"
    return verdict(unchanged(ws, MEWS, "Jesses.md"),
                   "the file names in falconry/ are lower case, the texts as they were")


# ---- questions about code ----

VINEYARD = {
    "vintage.py": (
        "def grade_harvest(brix, acidity):\n"
        "    if acidity > 8:\n        return 'sour'\n"
        "    if brix >= 25:\n        return 'late'\n"
        "    if brix >= 22:\n        return 'reserve'\n"
        "    return 'table'\n"
    ),
    "crush.py": "from vintage import grade_harvest\n\nprint(grade_harvest(26, 6))\n",
}


def check_harvest_grade(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    if not _names(answer, "reserve"):
        return False, f"the answer does not say reserve: {short(answer)}"
    return True, "the answer says reserve"


LIGHTHOUSE = {
    "keeper/__init__.py": "",
    "keeper/beacons.py": (
        "class Beacon:\n    def __init__(self, range_nm):\n        self.range_nm = range_nm\n\n\n"
        "class Prism(Beacon):\n    facets = 8\n"
    ),
    "keeper/lantern.py": (
        "from keeper.beacons import Prism\n\n\n"
        "class Lantern(Prism):\n    def sweep(self):\n        return f'{self.facets} flashes over {self.range_nm} nm'\n"
    ),
    "watch.py": "from keeper.lantern import Lantern\n\nprint(Lantern(18).sweep())\n",
}


def check_lantern_parent(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    if not _names(answer, "Prism"):
        return False, f"the answer does not say Prism: {short(answer)}"
    return True, "the answer says Prism"


# ---- edits of several lines ----

CHEESE = {
    "cheesecave.py": (
        "def wheel_weight(start_kg, weeks):\n    return round(start_kg * (1 - 0.035) ** weeks, 2)\n\n\n"
        "def weeks_until(start_kg, target_kg):\n    weeks = 0\n"
        "    while start_kg * (1 - 0.035) ** weeks > target_kg:\n        weeks += 1\n    return weeks\n\n\n"
        "def loss_note():\n    return f'loses {0.035 * 100:.1f}% a week'\n\n\n"
        "print(wheel_weight(10, 4), weeks_until(10, 8), loss_note())\n"
    ),
}
CHEESE_PRINTS = "8.67 7 loses 3.5% a week"


def check_pull_constant(ws: Path, answer: str) -> Verdict:
    text = read(ws, "cheesecave.py")
    if text is None:
        return False, "cheesecave.py is gone"
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return False, f"cheesecave.py no longer parses ({exc.msg})"
    named = [n for n in tree.body if isinstance(n, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id == "RIND_LOSS" for t in n.targets)]
    if not named or not (isinstance(named[0].value, ast.Constant) and named[0].value.value == 0.035):
        return False, "cheesecave.py has no top-level RIND_LOSS = 0.035"
    literals = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and n.value == 0.035]
    if len(literals) != 1:
        return False, f"0.035 is still written {len(literals) - 1} time(s) beside RIND_LOSS"
    wrong = prints(ws, ["cheesecave.py"], CHEESE_PRINTS) or prints(
        ws, ["-c", "import cheesecave as c; c.RIND_LOSS = 0.1; print(c.wheel_weight(10, 1), c.weeks_until(10, 8), "
                   "c.loss_note())"], CHEESE_PRINTS + "\n9.0 3 loses 10.0% a week")
    return verdict(wrong, "RIND_LOSS is the one 0.035, every use reads it, the output as it was")


TOUR = {
    "tour.csv": (
        "date,venue,town\n"
        "17/05/2024,Old Granary,Leith\n"
        "02/06/2024,Corn Exchange,Ely\n"
        "21/06/2024,Drill Hall,Lincoln\n"
        "09/07/2024,Assembly Rooms,Derby\n"
    ),
    "poster.md": "# summer dates\nsupport act to be confirmed\n",
}
TOUR_ISO = ["2024-05-17", "2024-06-02", "2024-06-21", "2024-07-09"]


def check_iso_dates(ws: Path, answer: str) -> Verdict:
    text = read(ws, "tour.csv")
    if text is None:
        return False, "tour.csv is gone"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    before = TOUR["tour.csv"].splitlines()
    if len(lines) != len(before) or lines[0] != before[0]:
        return False, f"tour.csv is not the header and four rows: {short(text)}"
    for line, old, iso in zip(lines[1:], before[1:], TOUR_ISO, strict=True):
        want = iso + "," + old.split(",", 1)[1]
        if line != want:
            return False, f"a row is {line!r}, not {want!r}"
    return verdict(unchanged(ws, TOUR, "poster.md"), "every date is year-month-day, the rest as it was")


# ---- two-step jobs ----

GLACIERS = {
    "melt.csv": (
        "glacier,area_1990_km2,area_2020_km2\n"
        "Aletsch,86.0,80.0\n"
        "Rhone,18.0,15.0\n"
        "Morteratsch,16.0,9.0\n"
        "Pasterze,19.0,15.0\n"
    ),
    "moraine.md": "# readme\nareas traced from satellite passes\n",
}


def check_worst_glacier(ws: Path, answer: str) -> Verdict:
    text = read(ws, "worst.txt")
    if text is None:
        return False, "worst.txt does not exist"
    if text.strip().strip(".").lower() != "morteratsch":
        return False, f"worst.txt holds {short(repr(text))}, not Morteratsch"
    return verdict(unchanged(ws, GLACIERS, *GLACIERS), "worst.txt names Morteratsch, the data as it was")


LOOMS = {
    "looms/warp.py": "ENDS = 240\nprint(f'{ENDS} warp ends')\n",
    "looms/weft.py": "PICKS = 48\nprint('picks per inch: ' + PICKS)\n",
    "looms/heddle.py": "frames = ['front', 'middle', 'back']\nprint(len(frames), 'shafts')\n",
    "pattern.txt": "twill, 2/2\n",
}


def check_crashing_script(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, LOOMS, "looms/warp.py", "looms/heddle.py", "pattern.txt")
    if changed:
        return False, changed
    wrong = (prints(ws, ["looms/weft.py"], "picks per inch: 48") or prints(ws, ["looms/warp.py"], "240 warp ends")
             or prints(ws, ["looms/heddle.py"], "3 shafts"))
    return verdict(wrong, "every script in looms/ runs, the one that crashed prints its line")


# ---- jobs on a file the request does not name ----

FUNICULAR = {
    "funicular.py": "from tickets.pricing import fare\n\nfor age in (8, 12, 40):\n    print(age, fare(age))\n",
    "tickets/__init__.py": "",
    "tickets/pricing.py": (
        "ADULT_FARE = 3.5\nCHILD_SHARE = 0.5  # under 12\n\n\n"
        "def fare(age):\n    price = ADULT_FARE\n    if age < 12:\n        price * CHILD_SHARE\n    return price\n"
    ),
    "tickets/stations.py": "STATIONS = {'valley': 0, 'summit': 412}\n",
}


def check_child_fare(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, FUNICULAR, "funicular.py", "tickets/stations.py")
    if changed:
        return False, changed
    wrong = prints(ws, ["funicular.py"], "8 1.75\n12 3.5\n40 3.5") or prints(
        ws, ["-c", "from tickets.pricing import fare; print(fare(0), fare(11), fare(13))"], "1.75 1.75 3.5")
    return verdict(wrong, "under 12 pays half, 12 and over the full fare")


BINDERY = {
    "site/shop.html": (
        "<html><body>\n<h1>Quillmoor Press</h1>\n<p>Notebooks, sewn by hand.</p>\n"
        "<!--#include virtual=\"partials/footer.html\" -->\n</body></html>\n"
    ),
    "site/about.html": "<p>Founded in 2019 by two bookbinders in a converted chapel.</p>\n",
    "site/partials/footer.html": "<footer>&copy; 2019 Quillmoor Press &middot; all rights reserved</footer>\n",
}


def check_footer_year(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, BINDERY, "site/shop.html", "site/about.html")
    if changed:
        return False, changed
    text = read(ws, "site/partials/footer.html")
    if text is None:
        return False, "site/partials/footer.html is gone"
    if text != BINDERY["site/partials/footer.html"].replace("2019", "2025"):
        return False, f"site/partials/footer.html is {short(repr(text))}"
    return True, "the footer says 2025, the rest as it was"


HELD_OUT_4: tuple[Task, ...] = (
    Task("fold_cornets", BANDROOM, "put everything from cornets/ into brass/ and get rid of cornets",
         check_fold_cornets),
    Task("lower_names", MEWS, "can the file names in falconry/ all be lowercase", check_lower_names),
    Task("harvest_grade", VINEYARD, "what does grade_harvest hand back for brix 24 and acidity 7", check_harvest_grade),
    Task("lantern_parent", LIGHTHOUSE, "what's Lantern a subclass of?", check_lantern_parent),
    Task("pull_constant", CHEESE, "pull the 0.035 in cheesecave.py out into a constant called RIND_LOSS",
         check_pull_constant),
    Task("iso_dates", TOUR, "switch the dates in tour.csv over to YYYY-MM-DD", check_iso_dates),
    Task("worst_glacier", GLACIERS,
         "work out which glacier shrank the most in melt.csv and stick its name in worst.txt", check_worst_glacier),
    Task("crashing_script", LOOMS, "one of the scripts in looms/ blows up when you run it, track it down and sort it",
         check_crashing_script),
    Task("child_fare", FUNICULAR, "kids under 12 are meant to ride for half price but they're still paying full whack",
         check_child_fare),
    Task("footer_year", BINDERY, "footer on the site still says 2019, needs to be 2025", check_footer_year),
)

# The words that make each job itself: the product's sources must not hold any of them as a
# word (tests/test_eval.py), nor may any other job's prompt or fixture.
WORDS_4: dict[str, tuple[str, ...]] = {
    "fold_cornets": ("cornets", "brass", "trombone", "tuba", "flugelhorn", "fermata"),
    "lower_names": ("falconry", "kestrel", "goshawk", "saker", "jesses"),
    "harvest_grade": ("grade_harvest", "vintage", "brix", "acidity"),
    "lantern_parent": ("Lantern", "Prism", "beacons", "range_nm", "facets"),
    "pull_constant": ("cheesecave", "RIND_LOSS", "wheel_weight", "weeks_until"),
    "iso_dates": ("Granary", "Leith", "Lincoln", "Derby"),
    "worst_glacier": ("glacier", "melt", "Morteratsch", "Aletsch", "Pasterze", "moraine"),
    "crashing_script": ("looms", "warp", "weft", "heddle", "twill"),
    "child_fare": ("funicular", "ADULT_FARE", "CHILD_SHARE", "summit"),
    "footer_year": ("Quillmoor", "bookbinders", "chapel", "partials"),
}


def _sub(ws: Path, rel: str, old: str, new: str) -> None:
    path = ws / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new))


def _fold_cornets(ws: Path, keep: bool = False, only: str = "", nest: bool = False) -> None:
    if nest:
        (ws / "cornets").rename(ws / "brass" / "cornets")
        return
    for path in sorted((ws / "cornets").iterdir()):
        if not only or path.name == only:
            (ws / "brass" / path.name).write_text(path.read_text())
        if not keep:
            path.unlink()
    if not keep:
        (ws / "cornets").rmdir()


def _lower_names(ws: Path, keep: bool = False, also_outside: bool = False) -> None:
    folders = [ws / "falconry"] + ([ws] if also_outside else [])
    for folder in folders:
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.name != path.name.lower():
                (folder / path.name.lower()).write_text(path.read_text())
                if not keep:
                    path.unlink()


def _pull_constant(ws: Path, uses: int = 3, name: str = "RIND_LOSS") -> None:
    text = (ws / "cheesecave.py").read_text().replace("0.035", name, uses)
    (ws / "cheesecave.py").write_text(f"{name} = 0.035\n\n\n" + text)


def _iso_dates(ws: Path, rows: int = 4, swap: bool = False) -> None:
    lines = (ws / "tour.csv").read_text().splitlines()
    for n in range(1, rows + 1):
        day, month, year = lines[n][:10].split("/")
        lines[n] = (f"{year}-{day}-{month}" if swap else f"{year}-{month}-{day}") + lines[n][10:]
    (ws / "tour.csv").write_text("\n".join(lines) + "\n")


def _footer_year(ws: Path, everywhere: bool = False) -> None:
    _sub(ws, "site/partials/footer.html", "2019", "2025")
    if everywhere:
        _sub(ws, "site/about.html", "2019", "2025")


# What a right run of each job does to its workspace, and its answer (tests/test_eval.py
# checks every checker passes it); kept here with the jobs, as SOLVED_HELD_OUT_3 is.
SOLVED_HELD_OUT_4: dict[str, tuple[Any, str]] = {
    "fold_cornets": (_fold_cornets, "Moved both parts into brass/ and removed cornets/."),
    "lower_names": (_lower_names, "Renamed."),
    "harvest_grade": (None, "It returns 'reserve': acidity 7 is not over 8, and 24 is under 25 but at least 22."),
    "lantern_parent": (None, "Lantern subclasses Prism (keeper/beacons.py), which in turn subclasses Beacon."),
    "pull_constant": (_pull_constant, "Done."),
    "iso_dates": (_iso_dates, "Switched."),
    "worst_glacier": (lambda ws: (ws / "worst.txt").write_text("Morteratsch\n"), "Morteratsch lost 7 km2."),
    "crashing_script": (lambda ws: _sub(ws, "looms/weft.py", "+ PICKS", "+ str(PICKS)"), "weft.py added a str "
                        "to an int; fixed."),
    "child_fare": (lambda ws: _sub(ws, "tickets/pricing.py", "price * CHILD_SHARE", "price *= CHILD_SHARE"),
                   "Fixed."),
    "footer_year": (_footer_year, "Updated."),
}

# Runs that are nearly right, each of which its checker must refuse: (job, change, answer).
NEAR_MISSES_4: tuple[tuple[str, Any, str], ...] = (
    ("fold_cornets", lambda ws: _fold_cornets(ws, keep=True), "Copied."),
    ("fold_cornets", lambda ws: _fold_cornets(ws, nest=True), "Moved."),
    ("fold_cornets", lambda ws: _fold_cornets(ws, only="cornet.abc"), "Moved."),
    ("lower_names", lambda ws: _lower_names(ws, keep=True), "Done."),
    ("lower_names", lambda ws: _lower_names(ws, also_outside=True), "Done."),
    ("lower_names", lambda ws: (ws / "falconry/Merlin.txt").rename(ws / "falconry/merlin.txt"), "Done."),
    ("harvest_grade", None, "It returns 'late'."),
    ("harvest_grade", None, "It hands back 'table' for those values."),
    ("lantern_parent", None, "Lantern inherits from Beacon."),
    ("lantern_parent", None, "Lantern doesn't subclass anything, it's a plain class."),
    ("pull_constant", lambda ws: _pull_constant(ws, uses=1), "Done."),
    ("pull_constant", lambda ws: _pull_constant(ws, name="RIND_RATE"), "Done."),
    ("iso_dates", lambda ws: _iso_dates(ws, rows=2), "Switched."),
    ("iso_dates", lambda ws: _iso_dates(ws, swap=True), "Switched."),
    ("worst_glacier", lambda ws: (ws / "worst.txt").write_text("Aletsch\n"), "Aletsch is the biggest."),
    ("worst_glacier", None, "Morteratsch shrank the most."),
    ("crashing_script", lambda ws: _sub(ws, "looms/weft.py", "+ PICKS", "+ 'PICKS'"), "Fixed."),
    ("crashing_script", lambda ws: _sub(ws, "looms/weft.py", "print('picks per inch: ' + PICKS)\n", ""), "Fixed."),
    ("child_fare", lambda ws: _sub(ws, "tickets/pricing.py", "price = ADULT_FARE\n", "price = ADULT_FARE * 0.5\n"),
     "Fixed."),
    ("child_fare", lambda ws: _sub(ws, "tickets/pricing.py", "    if age < 12:\n        price * CHILD_SHARE\n",
                                   "    if age <= 12:\n        price *= CHILD_SHARE\n"), "Fixed."),
    ("footer_year", lambda ws: _footer_year(ws, everywhere=True), "Updated."),
    ("footer_year", lambda ws: _sub(ws, "site/shop.html", "</body>", "<footer>&copy; 2025</footer>\n</body>"),
     "Updated."),
)
