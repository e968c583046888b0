"""A third held-out set: ten more small jobs, of the shapes the others are (file
housekeeping, questions about code, edits of several lines, two-step jobs, jobs on a
file the request does not name) but sharing no file, identifier or distinctive word
with any job of tasks.py, more_tasks.py or fresh_tasks.py.

HELD_OUT_2 became known as leading was developed beside it; these were written fresh at
this stop as the clean measure, so a change to the leading can again be measured on jobs
nobody has looked at while writing it. They were only run to report (`ops/eval/run.py
--set held_out_3`) until they too became known while leading was developed, and
fourth_tasks.py was written as the clean held-out set in their place: from then on they
are development jobs like fresh_tasks.py's. Nothing in the product names a job, a file or
a word of theirs (tests/test_eval.py checks the product's sources against WORDS_3 and the
fixtures' file names).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from ops.eval.tasks import Task, Verdict, prints, read, says, says_number, short, unchanged, verdict

# ---- file housekeeping ----

HERBARIUM = {
    "herbarium/fern.txt": "maidenhair fern, found by the creek\n",
    "herbarium/mosses/liverwort.txt": "liverwort, on damp rock\n",
    "herbarium/mosses/peat.txt": "sphagnum, at the bog's edge\n",
    "catalogue.md": "# pressed plants\n",
}


def _files_under(ws: Path, folder: str) -> list[str]:
    root = ws / folder
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def check_clone_folder(ws: Path, answer: str) -> Verdict:
    for rel, text in HERBARIUM.items():
        if rel.startswith("herbarium/"):
            copy = "herbarium_old/" + rel.removeprefix("herbarium/")
            if read(ws, copy) != text:
                return False, f"{copy} is missing or differs from {rel}"
    want = sorted(rel.removeprefix("herbarium/") for rel in HERBARIUM if rel.startswith("herbarium/"))
    there = _files_under(ws, "herbarium_old")
    if there != want:
        return False, f"herbarium_old/ holds {short(', '.join(there))}"
    if _files_under(ws, "herbarium") != want:
        return False, f"herbarium/ holds {short(', '.join(_files_under(ws, 'herbarium'))) or 'nothing'}"
    return verdict(unchanged(ws, HERBARIUM, *HERBARIUM), "herbarium_old is a copy of herbarium, which is as it was")


STARS = {
    "andromeda.fits": "SIMPLE = T / galaxy M31, 40 frames\n",
    "pleiades.fits": "SIMPLE = T / cluster M45, 12 frames\n",
    "eyepiece.txt": "25 mm for the wide field\n",
    "stack.py": "FRAMES = 52\n",
}


def check_gather_fits(ws: Path, answer: str) -> Verdict:
    for name in ("andromeda.fits", "pleiades.fits"):
        if read(ws, f"starfield/{name}") != STARS[name]:
            return False, f"starfield/{name} is missing or differs from {name}"
    left = sorted(p.relative_to(ws).as_posix() for p in ws.rglob("*.fits") if p.parent != ws / "starfield")
    if left:
        return False, f"still outside starfield/: {', '.join(left)}"
    there = _files_under(ws, "starfield")
    if there != ["andromeda.fits", "pleiades.fits"]:
        return False, f"starfield/ holds {short(', '.join(there))}"
    return verdict(unchanged(ws, STARS, "eyepiece.txt", "stack.py"),
                   "both .fits files are in starfield/, the rest as it was")


# ---- questions about code ----

RAILYARD = {
    "railyard/__init__.py": "",
    "railyard/couplings.py": "def couple_wagons(front, back):\n    return front + [back]\n",
    "railyard/depot.py": (
        "from railyard.couplings import couple_wagons\n\n\n"
        "def make_train(wagons):\n    train = []\n    for w in wagons:\n"
        "        train = couple_wagons(train, w)\n    return train\n"
    ),
    "shunt.py": "from railyard.depot import make_train\n\nprint(make_train(['coal', 'grain']))\n",
}


def check_where_coupling(ws: Path, answer: str) -> Verdict:
    ok, why = says(answer, "couplings.py")
    low = answer.lower()
    for other in ("depot.py", "shunt.py"):
        if ok and other in low and low.index(other) < low.index("couplings.py"):
            return False, f"the answer puts it in {other}: {short(answer)}"
    return ok, why


OPENINGS = {
    "openings.py": (
        "BOOK = {\n    'e4 e5': 'open game',\n    'd4 d5': 'closed game',\n    'c4': 'english opening',\n}\n\n\n"
        "def opening_name(moves):\n    key = ' '.join(moves[:2])\n    return BOOK.get(key, 'irregular').title()\n"
    ),
}


def check_opening_result(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    if "Closed Game" not in answer:
        return False, f"the answer does not say Closed Game (capitalised as title() leaves it): {short(answer)}"
    return True, "the answer says Closed Game"


SIGHTINGS = {
    "sightings.csv": (
        "date,species,place\n"
        "2024-04-02,heron,mill pond\n"
        "2024-04-02,warbler,reed bed\n"
        "2024-04-03,kingfisher,mill pond\n"
        "2024-04-05,heron,river bend\n"
        "2024-04-06,lapwing,water meadow\n"
        "2024-04-06,warbler,reed bed\n"
        "2024-04-08,heron,mill pond\n"
        "2024-04-09,curlew,water meadow\n"
        "2024-04-11,kingfisher,river bend\n"
    ),
    "survey.md": "# spring survey\nwalked every morning\n",
}


def check_count_species(ws: Path, answer: str) -> Verdict:
    return says_number(answer, 5)


# ---- edits of several lines ----

DOUGH = {
    "dough.py": (
        "def knead(minutes):\n    return min(minutes, 12)\n\n\n"
        "def rise(hours, warm):\n    return hours / 2 if warm else hours\n\n\n"
        "def score_loaf(cuts):\n    return '/' * cuts\n\n\n"
        "print(knead(20), rise(3, True), score_loaf(3))\n"
    ),
}


def _without_docstrings(tree: ast.Module) -> str:
    """The module's code, its functions' docstrings (and its own) left out."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.FunctionDef) and ast.get_docstring(node) is not None:
            node.body = node.body[1:]
    return ast.dump(tree)


def check_docstrings(ws: Path, answer: str) -> Verdict:
    text = read(ws, "dough.py")
    if text is None:
        return False, "dough.py is gone"
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        return False, f"dough.py no longer parses ({exc.msg})"
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    bare = [f.name for f in funcs if not (ast.get_docstring(f) or "").strip()]
    if bare:
        return False, f"no docstring on {', '.join(bare)}"
    if _without_docstrings(tree) != _without_docstrings(ast.parse(DOUGH["dough.py"])):
        return False, "dough.py changed beyond the docstrings"
    return verdict(prints(ws, ["dough.py"], "12 1.5 ///"), "each function has a docstring, the code as it was")


VOLCANOES = {"volcanoes.txt": "Etna\nFuji\nVesuvius\nKrakatoa\nStromboli\nHekla\n"}


def check_number_lines(ws: Path, answer: str) -> Verdict:
    text = read(ws, "volcanoes.txt")
    if text is None:
        return False, "volcanoes.txt is gone"
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    names = VOLCANOES["volcanoes.txt"].split()
    if len(lines) != len(names):
        return False, f"volcanoes.txt has {len(lines)} lines, not {len(names)}"
    for n, (line, name) in enumerate(zip(lines, names, strict=True), 1):
        if not re.fullmatch(rf"{n}\.\s+{name}", line):
            return False, f"line {n} is {line!r}, not '{n}. {name}'"
    return True, "each line numbered 1. to 6., the names as they were"


# ---- two-step jobs ----

MOSAIC = {
    "mosaic.py": (
        "GLAZE = ['#', '+', '.', '+']\n\n"
        "for row in range(3):\n    print(''.join(GLAZE[(row + col) % 4] for col in range(6)))\n"
    ),
}
MOSAIC_PRINTS = "#+.+#+\n+.+#+.\n.+#+.+"


def check_save_output(ws: Path, answer: str) -> Verdict:
    text = read(ws, "tiles.txt")
    if text is None:
        return False, "tiles.txt does not exist"
    if [ln.rstrip() for ln in text.strip().splitlines()] != MOSAIC_PRINTS.splitlines():
        return False, f"tiles.txt holds {short(repr(text))}, not what mosaic.py prints"
    return verdict(unchanged(ws, MOSAIC, "mosaic.py"), "tiles.txt holds the three lines mosaic.py prints")


APIARY = {
    "apiary.py": (
        "def honey_yield(hives):\n"
        '    """Kilograms of honey in a season: 12 per hive, and none at all for fewer than 2 hives."""\n'
        "    if hives < 3:\n        return 0\n    return hives * 12\n"
    ),
    "season.py": "from apiary import honey_yield\n\nfor n in (1, 2, 5):\n    print(n, honey_yield(n))\n",
}


def _docstring(text: str | None, name: str) -> str | None:
    try:
        tree = ast.parse(text or "")
    except SyntaxError:
        return None
    funcs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == name]
    return ast.get_docstring(funcs[0]) if funcs else None


def check_match_docstring(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, APIARY, "season.py")
    if changed:
        return False, changed
    if _docstring(read(ws, "apiary.py"), "honey_yield") != _docstring(APIARY["apiary.py"], "honey_yield"):
        return False, "honey_yield's docstring changed, or honey_yield is gone"
    wrong = prints(ws, ["season.py"], "1 0\n2 24\n5 60") or prints(
        ws, ["-c", "from apiary import honey_yield; print(honey_yield(0), honey_yield(3))"], "0 36")
    return verdict(wrong, "honey_yield does what its docstring says")


# ---- jobs on a file the request does not name ----

ROCKET = {
    "rocket.py": "from ignition.thrusters import countdown\n\nprint(countdown(5))\n",
    "ignition/__init__.py": "",
    "ignition/thrusters.py": (
        "def countdown(start):\n    steps = [str(n) for n in range(1, start + 1)]\n"
        "    return ' '.join(steps) + ' liftoff'\n"
    ),
}


def check_countdown_order(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, ROCKET, "rocket.py")
    if changed:
        return False, changed
    wrong = prints(ws, ["rocket.py"], "5 4 3 2 1 liftoff") or prints(
        ws, ["-c", "from ignition.thrusters import countdown; print(countdown(3))"], "3 2 1 liftoff")
    return verdict(wrong, "the countdown goes down to 1, then liftoff")


HELD_OUT_3: tuple[Task, ...] = (
    Task("clone_folder", HERBARIUM, "make a copy of the herbarium folder called herbarium_old", check_clone_folder),
    Task("gather_fits", STARS, "move the .fits files into a new folder named starfield", check_gather_fits),
    Task("where_coupling", RAILYARD, "where's couple_wagons defined", check_where_coupling),
    Task("opening_result", OPENINGS, "what does opening_name return for ['d4', 'd5', 'c4']?", check_opening_result),
    Task("count_species", SIGHTINGS, "how many different species are in sightings.csv", check_count_species),
    Task("docstrings", DOUGH, "add a short docstring to each function in dough.py", check_docstrings),
    Task("number_lines", VOLCANOES, "number the lines in volcanoes.txt like 1. 2. 3. and so on", check_number_lines),
    Task("save_output", MOSAIC, "run mosaic.py and save what it prints to tiles.txt", check_save_output),
    Task("match_docstring", APIARY, "honey_yield doesn't do what its docstring says. fix the code, not the docstring",
         check_match_docstring),
    Task("countdown_order", ROCKET, "the countdown counts up instead of down, fix it", check_countdown_order),
)

# The words that make each job itself: the product's sources must not hold any of them as a
# word (tests/test_eval.py), nor may any other job's prompt or fixture.
WORDS_3: dict[str, tuple[str, ...]] = {
    "clone_folder": ("herbarium", "herbarium_old", "liverwort", "sphagnum"),
    "gather_fits": ("starfield", "andromeda", "pleiades", "eyepiece"),
    "where_coupling": ("couple_wagons", "couplings", "railyard", "depot", "wagons"),
    "opening_result": ("opening_name", "openings", "irregular"),
    "count_species": ("sightings", "species", "heron", "kingfisher", "lapwing"),
    "docstrings": ("dough", "knead", "score_loaf"),
    "number_lines": ("volcanoes", "Vesuvius", "Krakatoa", "Stromboli"),
    "save_output": ("mosaic", "tiles", "glaze"),
    "match_docstring": ("honey_yield", "apiary", "hives"),
    "countdown_order": ("countdown", "liftoff", "ignition", "thrusters", "rocket"),
}


def _sub(ws: Path, rel: str, old: str, new: str) -> None:
    path = ws / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new))


def _copy_tree(ws: Path, src: str, dst: str, deep: bool = True) -> None:
    for path in sorted((ws / src).rglob("*") if deep else (ws / src).glob("*")):
        if path.is_file():
            target = ws / dst / path.relative_to(ws / src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text())


def _gather_fits(ws: Path, keep: bool = False, also: str = "") -> None:
    (ws / "starfield").mkdir()
    for path in list(ws.glob("*.fits")) + ([ws / also] if also else []):
        (ws / "starfield" / path.name).write_text(path.read_text())
        if not keep:
            path.unlink()


def _number_lines(ws: Path, first: int = 1, sep: str = ". ") -> None:
    names = (ws / "volcanoes.txt").read_text().split()
    (ws / "volcanoes.txt").write_text("".join(f"{n}{sep}{name}\n" for n, name in enumerate(names, first)))


_DOCSTRINGS = (("knead(minutes):\n", "Knead for at most 12 minutes."), ("rise(hours, warm):\n", "Proofing time."),
               ("score_loaf(cuts):\n", "The slashes on top."))


def _add_docstrings(ws: Path, how_many: int = 3, comment: bool = False, also: tuple[str, str] | None = None) -> None:
    for head, doc in _DOCSTRINGS[:how_many]:
        if comment:
            _sub(ws, "dough.py", f"def {head}", f"# {doc}\ndef {head}")
        else:
            _sub(ws, "dough.py", head, f'{head}    """{doc}"""\n')
    if also:
        _sub(ws, "dough.py", *also)


# What a right run of each job does to its workspace, and its answer (tests/test_eval.py
# checks every checker passes it); kept here with the jobs, as SOLVED_HELD_OUT_2 is.
SOLVED_HELD_OUT_3: dict[str, tuple[Any, str]] = {
    "clone_folder": (lambda ws: _copy_tree(ws, "herbarium", "herbarium_old"), "Copied."),
    "gather_fits": (_gather_fits, "Moved both into starfield/."),
    "where_coupling": (None, "couple_wagons is defined in railyard/couplings.py (depot.py imports it)."),
    "opening_result": (None, "It returns 'Closed Game': only the first two moves are looked up, then title()."),
    "count_species": (None, "There are 5 different species (9 sightings)."),
    "docstrings": (_add_docstrings, "Added."),
    "number_lines": (_number_lines, "Numbered."),
    "save_output": (lambda ws: (ws / "tiles.txt").write_text(MOSAIC_PRINTS + "\n"), "Saved."),
    "match_docstring": (lambda ws: _sub(ws, "apiary.py", "hives < 3", "hives < 2"), "Fixed."),
    "countdown_order": (lambda ws: _sub(ws, "ignition/thrusters.py", "range(1, start + 1)", "range(start, 0, -1)"),
                        "Fixed."),
}

# Runs that are nearly right, each of which its checker must refuse: (job, change, answer).
NEAR_MISSES_3: tuple[tuple[str, Any, str], ...] = (
    ("clone_folder", lambda ws: _copy_tree(ws, "herbarium", "herbarium_old", deep=False), "Copied."),
    ("clone_folder", lambda ws: (ws / "herbarium").rename(ws / "herbarium_old"), "Done."),
    ("gather_fits", lambda ws: _gather_fits(ws, keep=True), "Moved."),
    ("gather_fits", lambda ws: _gather_fits(ws, also="eyepiece.txt"), "Moved."),
    ("where_coupling", None, "It is defined in railyard/depot.py, imported from couplings.py."),
    ("opening_result", None, "It returns 'closed game'."),
    ("opening_result", None, "It returns 'Irregular', since 'd4 d5 c4' is not in BOOK."),
    ("count_species", None, "There are 9 species."),
    ("docstrings", lambda ws: _add_docstrings(ws, how_many=2), "Added."),
    ("docstrings", lambda ws: _add_docstrings(ws, comment=True), "Added."),
    ("docstrings", lambda ws: _add_docstrings(ws, also=("min(minutes, 12)", "minutes")), ""),
    ("number_lines", lambda ws: _number_lines(ws, first=0), "Numbered."),
    ("number_lines", lambda ws: _number_lines(ws, sep=" "), "Numbered."),
    ("save_output", lambda ws: (ws / "tiles.txt").write_text(MOSAIC_PRINTS.splitlines()[0] + "\n"), "Saved."),
    ("save_output", lambda ws: (ws / "tiles.txt").write_text(MOSAIC["mosaic.py"]), "Saved."),
    ("match_docstring", lambda ws: _sub(ws, "apiary.py", "fewer than 2", "fewer than 3"), "Fixed."),
    ("match_docstring", lambda ws: _sub(ws, "apiary.py", "    if hives < 3:\n        return 0\n", ""), "Fixed."),
    ("countdown_order", lambda ws: _sub(ws, "rocket.py", "print(countdown(5))", "print('5 4 3 2 1 liftoff')"),
     "Fixed."),
    ("countdown_order", lambda ws: _sub(ws, "ignition/thrusters.py", "range(1, start + 1)", "range(start, -1, -1)"),
     "Fixed."),
)
