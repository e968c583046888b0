"""A seventh held-out set: ten more small jobs, two of each of the shapes the others are
(file housekeeping, questions about code, edits of several lines, two-step jobs, jobs on
a file the request does not name) but sharing no file, identifier or distinctive word
with any job of tasks.py, more_tasks.py, fresh_tasks.py, third_tasks.py, fourth_tasks.py,
fifth_tasks.py or sixth_tasks.py, nor with each other. The prompts are phrased as people
type them on the first day, in words the other sets do not use, and the jobs are of kinds
the other sets have none of.

HELD_OUT_6 became known as leading was developed beside it; these were written blind, by
a helper who read no product code and reported none of their words, as the clean
measure. They were only run to report (`ops/eval/run.py --set held_out_7`) until they
became known as leading was developed beside them, and eighth_tasks.py was written blind
as the clean held-out set in their place: from then on they are a development set like
sixth_tasks.py's. Nothing in the product names a job, a file or a word of theirs
(tests/test_eval.py checks the product's sources against WORDS_7 and the fixtures' file
names).
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ops.eval.tasks import (
    CHECK_RUN_S,
    Task,
    Verdict,
    copy_of,
    names_word,
    parsed,
    prints,
    read,
    run_py,
    says_number,
    short,
    sub,
    unchanged,
    verdict,
)


def _py_files(ws: Path) -> list[str]:
    """The workspace's Python files, relative to it, __pycache__ left out."""
    return sorted(p.relative_to(ws).as_posix() for p in ws.rglob("*.py") if "__pycache__" not in p.parts)


# ---- file housekeeping ----

CARILLON = {
    "carillon/peal_schedule.txt": "Sunday 10:00 full peal\r\nWednesday 19:30 practice\r\nSaturday weddings by "
                                  "arrangement\r\n",
    "carillon/bourdon.md": "# The bourdon\r\n\r\nLowest of the ring, six tonnes, struck only on feast days.\r\n",
    "carillon/keyboard/baton_layout.txt": "C D E F G A B\r\nbatons worn smooth on the middle octave\r\n",
    "carillon/clapper_wear.txt": "the clappers were turned a quarter in 2021\n",
    "ring_changes.bat": "@echo off\r\necho ringing the changes\r\n",
    "belfry_keys.txt": "spare key on the hook behind the vestry door\n",
}
CARILLON_FOLDER = tuple(rel for rel in CARILLON if rel.startswith("carillon/"))


def _bytes(ws: Path, rel: str) -> bytes | None:
    try:
        return (ws / rel).read_bytes()
    except OSError:
        return None


def check_crlf(ws: Path, answer: str) -> Verdict:
    for rel in CARILLON_FOLDER:
        now = _bytes(ws, rel)
        if now is None:
            return False, f"{rel} is gone"
        want = CARILLON[rel].replace("\r\n", "\n").encode()
        if b"\r" in now:
            return False, f"{rel} still has carriage returns (CRLF line endings)"
        if now != want:
            return False, f"{rel} holds other text than it did, not just other line endings"
    for rel in (rel for rel in CARILLON if rel not in CARILLON_FOLDER):
        if _bytes(ws, rel) != CARILLON[rel].encode():
            return False, f"{rel} is outside carillon/ and was changed (or is gone)"
    return True, "every file in carillon/ has unix line endings and its text, the others as they were"


GLASS = {
    "grisaille.py": (
        "from pathlib import Path\n\n"
        "from render_queue import PANELS\n\n"
        "for panel in PANELS:\n"
        "    out = Path('renders') / f'{panel}.svg'\n"
        "    out.parent.mkdir(parents=True, exist_ok=True)\n"
        "    out.write_text('<svg/>')\n"
        "    with open('cutting.log', 'a') as log:\n        log.write(f'cut {panel}\\n')\n"
    ),
    "render_queue.py": "PANELS = ['rosette_01', 'nave/lancet_04']\n",
    "logbook.md": "# Logbook\n\nthe north aisle lancets need new leading before winter\n",
    "cartoon.svg": "<svg><!-- the full-size drawing the cames follow --></svg>\n",
    "glazing/came_profiles.txt": "H-section lead, 6 mm for borders, 4 mm inside\n",
    "glazing/annealing.log": "held at 515 C for an hour\n",
    "cutting.log": "cut rosette_01\ncut nave/lancet_04\n",
    "renders/rosette_01.svg": "<svg/>",
    "renders/nave/lancet_04.svg": "<svg/>",
}
GLASS_IGNORED = ("cutting.log", "glazing/annealing.log", "renders/rosette_01.svg", "renders/nave/lancet_04.svg")
GLASS_KEPT = ("grisaille.py", "render_queue.py", "logbook.md", "cartoon.svg", "glazing/came_profiles.txt")
# Files the run never saw, made in a copy: the patterns must catch (or pass) them too.
GLASS_NEW_IGNORED = ("fusing_second.log", "glazing/deep/third.log", "renders/apse/roundel_09.svg")
GLASS_NEW_KEPT = ("glazing/roundel_sizes.txt", "renders_howto.md")


def _git_ignored(folder: Path, rels: tuple[str, ...]) -> set[str] | str:
    """Which of `rels` git ignores in `folder` (made a fresh repository), by its .gitignore
    files alone (no global or system excludes); or why it could not tell."""
    if shutil.which("git") is None:
        return "git is not installed here, to check the .gitignore with"
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    shutil.rmtree(folder / ".git", ignore_errors=True)
    try:
        subprocess.run(["git", "init", "-q"], cwd=folder, env=env, capture_output=True, check=True,
                       timeout=CHECK_RUN_S)
        done = subprocess.run(["git", "-c", f"core.excludesFile={os.devnull}", "check-ignore", "--no-index", "--",
                               *rels], cwd=folder, env=env, capture_output=True, text=True, timeout=CHECK_RUN_S)
    except (subprocess.SubprocessError, OSError) as exc:
        return f"git could not be run ({exc})"
    if done.returncode not in (0, 1):
        return f"git check-ignore fails: {short(done.stderr)}"
    return set(done.stdout.splitlines())


def check_gitignore(ws: Path, answer: str) -> Verdict:
    if not (ws / ".gitignore").is_file():
        return False, "there is no .gitignore at the top of the workspace"
    # the logs and renders may have grown (a run of grisaille.py adds to them), but stay
    gone = [rel for rel in GLASS_IGNORED if not (ws / rel).is_file()]
    if gone:
        return False, f"{gone[0]} is gone: the request was to ignore it, not to delete it"
    changed = unchanged(ws, GLASS, *GLASS_KEPT)
    if changed:
        return False, changed
    with copy_of(ws) as copy:
        for rel in GLASS_NEW_IGNORED + GLASS_NEW_KEPT:
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            (copy / rel).write_text("x\n")
        ignored = _git_ignored(copy, GLASS_IGNORED + GLASS_KEPT + GLASS_NEW_IGNORED + GLASS_NEW_KEPT)
    if isinstance(ignored, str):
        return False, ignored
    missed = [rel for rel in GLASS_IGNORED + GLASS_NEW_IGNORED if rel not in ignored]
    if missed:
        return False, f"git still sees {', '.join(missed)}"
    wrongly = [rel for rel in GLASS_KEPT + GLASS_NEW_KEPT if rel in ignored]
    if wrongly:
        return False, f"the .gitignore hides {', '.join(wrongly)} too"
    return True, "every .log file and all of renders/ are ignored (new ones too), nothing else"


# ---- questions about code ----

RADIOSONDE = {
    "radiosonde/__init__.py": "",
    "radiosonde/ascent.py": (
        "import math\nfrom datetime import timedelta\n\nimport yaml\nfrom dateutil import parser as dateparser\n\n\n"
        "def load_flight(path):\n    with open(path) as f:\n        return yaml.safe_load(f)\n\n\n"
        "def burst_altitude(lift_kg, balloon_g):\n"
        "    return round(8000 * math.log(1 + lift_kg * 1000 / balloon_g), -2)\n\n\n"
        "def landing_eta(launch, minutes):\n"
        "    return dateparser.parse(launch) + timedelta(minutes=minutes)\n"
    ),
    "radiosonde/telemetry.py": (
        "import json\nimport struct\n\nfrom radiosonde.ascent import burst_altitude\n\n\n"
        "def decode_frame(raw):\n    pressure, temp, humidity = struct.unpack('<fff', raw)\n"
        "    return {'hpa': pressure, 'c': temp, 'rh': humidity}\n\n\n"
        "def summary(frames, lift_kg):\n"
        "    return json.dumps({'frames': len(frames), 'burst_m': burst_altitude(lift_kg, 600)})\n"
    ),
    "plot_sounding.py": (
        "import sys\nfrom pathlib import Path\n\nfrom PIL import Image, ImageDraw\n\n"
        "from radiosonde import telemetry\nfrom radiosonde.ascent import load_flight\n\n"
        "flight = load_flight(sys.argv[1])\n"
        "img = Image.new('RGB', (400, 600), 'white')\ndraw = ImageDraw.Draw(img)\n"
        "for n, frame in enumerate(flight['frames']):\n    draw.point((n, 600 - frame['hpa'] // 2), fill='black')\n"
        "img.save(Path(sys.argv[1]).with_suffix('.png'))\n"
        "print(telemetry.summary(flight['frames'], flight['lift_kg']))\n"
    ),
    "launch_checklist.md": "1. fill to 1.5 kg free lift\n2. check the tropopause forecast\n3. release upwind\n",
}
# What `pip install` takes for each third-party import (yaml, dateutil, PIL).
RADIOSONDE_PACKAGES = (("pyyaml",), ("python-dateutil",), ("pillow",))


def check_pip_needs(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    missing = [names[0] for names in RADIOSONDE_PACKAGES if not any(names_word(answer, n) for n in names)]
    if missing:
        return False, f"the answer does not name {', '.join(missing)} (what pip installs): {short(answer)}"
    return verdict(unchanged(ws, RADIOSONDE, *RADIOSONDE), "the answer names the three packages pip installs")


PERFUMERY = {
    "atelier/__init__.py": "",
    "atelier/stages.py": (
        "STAGES = []\n\n\n"
        "def stage(weight):\n"
        "    def register(fn):\n        STAGES.append((weight, fn))\n        return fn\n"
        "    return register\n\n\n"
        "def run_all(batch):\n"
        "    for _, fn in sorted(STAGES, key=lambda pair: pair[0], reverse=True):\n"
        "        batch = fn(batch)\n"
        "    return batch\n"
    ),
    "atelier/extraction.py": (
        "from atelier.stages import stage\n\n\n"
        "@stage(weight=60)\ndef distil_neroli(batch):\n    return batch + ['neroli oil']\n\n\n"
        "@stage(weight=90)\ndef harvest_jasmine(batch):\n    return batch + ['jasmine at dawn']\n\n\n"
        "@stage(weight=75)\ndef enfleurage(batch):\n    return batch + ['pomade']\n"
    ),
    "atelier/blending.py": (
        "from atelier.stages import stage\n\n\n"
        "@stage(weight=40)\ndef macerate_resins(batch):\n    return batch + ['benzoin tincture']\n\n\n"
        "@stage(weight=5)\ndef rest_flacons(batch):\n    return batch + ['rested six weeks']\n\n\n"
        "@stage(weight=25)\ndef blend_accord(batch):\n    return batch + ['accord']\n"
    ),
    "compose.py": (
        "import atelier.blending  # noqa: F401  (registers its stages)\n"
        "import atelier.extraction  # noqa: F401\nfrom atelier.stages import run_all\n\n"
        "print(len(run_all([])), 'things made')\n"
    ),
}
PERFUMERY_ORDER = ("harvest_jasmine", "enfleurage", "distil_neroli", "macerate_resins", "blend_accord",
                   "rest_flacons")


def check_stage_order(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    missing = [name for name in PERFUMERY_ORDER if not names_word(answer, name)]
    if missing:
        return False, f"the answer does not name {', '.join(missing)}: {short(answer)}"
    mentions = sorted((m.start(), name) for name in PERFUMERY_ORDER
                      for m in re.finditer(rf"(?<![\w-]){name.replace('_', '[_ ]')}(?![\w-])", answer, re.I))
    wanted = list(PERFUMERY_ORDER)
    for _, name in mentions:
        if wanted and name == wanted[0]:
            wanted.pop(0)
    if wanted:
        return False, f"the answer does not give the six in the order they run (heaviest weight first): {short(answer)}"
    return verdict(unchanged(ws, PERFUMERY, *PERFUMERY), "the answer gives the six stages in the order they run")


# ---- edits of several lines ----

LAPIDARY = {
    "lapidary/__init__.py": "",
    "lapidary/gems.py": (
        "class Gem:\n"
        "    def __init__(self, name, carats, cut='brilliant', flaws=None):\n"
        "        self.name = name\n"
        "        self.carats = carats\n"
        "        self.cut = cut\n"
        "        self.flaws = flaws if flaws is not None else []\n\n"
        "    def milligrams(self, per_carat=200):\n"
        "        return self.carats * per_carat\n"
    ),
    "loupe.py": (
        "from lapidary.gems import Gem\n\n"
        "tray = [Gem('sapphire', 2.5, 'cushion', ['silk']), Gem('peridot', 1.2),\n"
        "        Gem('tourmaline', 3.75, 'emerald')]\n"
        "tray[1].flaws.append('lily pad')\n"
        "for gem in tray:\n"
        "    seen = ', '.join(gem.flaws) or 'clean'\n"
        "    print(f'{gem.name} ({gem.cut}): {gem.milligrams():.0f} mg, {seen}')\n"
    ),
    "lapidary/polishing.txt": "cerium oxide on felt for the last polish, tin oxide for the softer stones\n",
}
LAPIDARY_PRINTS = ("sapphire (cushion): 500 mg, silk\nperidot (brilliant): 240 mg, lily pad\n"
                   "tourmaline (emerald): 750 mg, clean")
LAPIDARY_PROBE = (
    "import dataclasses\nfrom lapidary.gems import Gem\n"
    "a, b = Gem('peridot', 1.2), Gem('peridot', 1.2)\n"
    "c = Gem('peridot', 1.2, 'oval', ['needle'])\n"
    "print(dataclasses.is_dataclass(Gem), [f.name for f in dataclasses.fields(Gem)])\n"
    "print(a == b, a == c, a.flaws, a.flaws is not b.flaws, a.cut)\n"
    "print(repr(c))\n"
    "print(a.milligrams(), c.milligrams(100), Gem(carats=9, name='x', flaws=['y']).flaws)\n"
)
LAPIDARY_PROBE_PRINTS = (
    "True ['name', 'carats', 'cut', 'flaws']\n"
    "True False [] True brilliant\n"
    "Gem(name='peridot', carats=1.2, cut='oval', flaws=['needle'])\n"
    "240.0 120.0 ['y']"
)


def _is_dataclass_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    return (isinstance(target, ast.Name) and target.id == "dataclass") or (
        isinstance(target, ast.Attribute) and target.attr == "dataclass")


def check_dataclass(ws: Path, answer: str) -> Verdict:
    tree, why = parsed(ws, "lapidary/gems.py")
    if tree is None:
        return False, why
    gem = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Gem"), None)
    if gem is None:
        return False, "lapidary/gems.py defines no class Gem any more"
    if not any(_is_dataclass_decorator(d) for d in gem.decorator_list):
        return False, "Gem has no @dataclass decorator"
    if any(isinstance(n, ast.FunctionDef) and n.name == "__init__" for n in gem.body):
        return False, "Gem still has a hand-written __init__"
    done = run_py(ws, "-c", LAPIDARY_PROBE)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        return False, f"making and comparing Gems fails: {short(said[-1] if said else '')}"
    if done.stdout.strip() != LAPIDARY_PROBE_PRINTS:
        return False, f"Gem is not a dataclass of the four fields as they were: {short(done.stdout, 200)!r}"
    wrong = prints(ws, ["loupe.py"], LAPIDARY_PRINTS)
    return verdict(wrong or unchanged(ws, LAPIDARY, "loupe.py", "lapidary/polishing.txt"),
                   "Gem is a dataclass with the four fields, each default list its own, and works as before")


ORIENTEERING = {
    "dibber.py": (
        "import json\n\n"
        "CONTROLS = {'31': (12, 40), '47': (18, 22), '52': (30, 35)}\n\n\n"
        "def leg_length(a, b):\n"
        "    (x1, y1), (x2, y2) = CONTROLS[a], CONTROLS[b]\n"
        "    return round(((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5, 1)\n\n\n"
        "def course_length(order):\n"
        "    return round(sum(leg_length(a, b) for a, b in zip(order, order[1:])), 1)\n\n\n"
        "course = ['31', '47', '52', '31']\n"
        "print('course', '-'.join(course))\n"
        "for a, b in zip(course, course[1:]):\n"
        "    print(f'  {a} -> {b}: {leg_length(a, b)} m')\n"
        "print('total', course_length(course), 'm')\n"
        "with open('splits.json', 'w') as f:\n"
        "    json.dump({'course': course, 'total': course_length(course)}, f)\n"
    ),
    "relay.py": "from dibber import course_length\n\nprint('relay leg', course_length(['52', '47', '31']), 'm')\n",
    "map_legend.txt": "brown: contours every 5 m\nblue: marsh\nolive green: out of bounds\n",
}
ORIENTEERING_PRINTS = "course 31-47-52-31\n  31 -> 47: 19.0 m\n  47 -> 52: 17.7 m\n  52 -> 31: 18.7 m\ntotal 55.4 m"
ORIENTEERING_SPLITS = '{"course": ["31", "47", "52", "31"], "total": 55.4}'


def check_main_guard(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, ORIENTEERING, "relay.py", "map_legend.txt")
    if changed:
        return False, changed
    with copy_of(ws) as copy:
        splits = copy / "splits.json"
        splits.unlink(missing_ok=True)
        wrong = prints(copy, ["-c", "import dibber; print(dibber.leg_length('31', '52'))"], "18.7")
        if wrong:
            return False, f"importing dibber does more than define its names: {wrong}"
        if splits.exists():
            return False, "importing dibber still writes splits.json"
        wrong = prints(copy, ["relay.py"], "relay leg 36.7 m")
        if wrong:
            return False, wrong
        wrong = prints(copy, ["dibber.py"], ORIENTEERING_PRINTS)
        if wrong:
            return False, f"run directly, dibber.py no longer does what it did: {wrong}"
        if read(copy, "splits.json") != ORIENTEERING_SPLITS:
            return False, f"run directly, dibber.py does not write splits.json as it did: {read(copy, 'splits.json')}"
    return True, "importing dibber runs nothing; run directly it prints and writes as before"


# ---- two-step jobs ----

CRAG = {
    "crag_tally.py": (
        "with open('gritstone.txt') as f:\n"
        "    routes = [line.split(',') for line in f if line.strip()]\n\n"
        "total = 0\n"
        "for name, grade, pitches in routes:\n"
        "    print(f'{name.strip()} ({grade.strip()}): {pitches.strip()} pitches')\n"
        "    total += int(pitches)\n"
        "print(f'total pitches: {total}')\n"
    ),
    "gritstone.txt": "Flying Buttress, VDiff, 2\nThree Pebble Slab, E1, 1\n",
    "limestone.txt": "Mossdale Arete, Severe, 3\nScoop Chimney, HVS, 2\nWhitewash Wall, E2, 4\n",
    "belay_notes.md": "brush the holds when you leave, and no chipping\n",
}
CRAG_PRINTS = ("Mossdale Arete (Severe): 3 pitches\nScoop Chimney (HVS): 2 pitches\nWhitewash Wall (E2): 4 pitches\n"
               "total pitches: 9")


def check_argv_file(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, CRAG, "gritstone.txt", "limestone.txt", "belay_notes.md")
    if changed:
        return False, changed
    wrong = prints(ws, ["crag_tally.py", "limestone.txt"], CRAG_PRINTS)
    if wrong:
        return False, wrong
    with copy_of(ws) as copy:
        (copy / "sandstone_topo.txt").write_text("Pinnacle Flake, HS, 5\nOverhang Traverse, E4, 6\n")
        wrong = prints(copy, ["crag_tally.py", "sandstone_topo.txt"],
                       "Pinnacle Flake (HS): 5 pitches\nOverhang Traverse (E4): 6 pitches\ntotal pitches: 11")
    if wrong:
        return False, f"crag_tally.py does not read the file it is given: {wrong}"
    return says_number(answer, 9)


SHROOMS = {
    "shrooms/__init__.py": "",
    "shrooms/spores.py": "def print_size(cap_cm):\n    return round(cap_cm * 0.8, 1)\n",
    "shrooms/gills.py": (
        "from shrooms.spores import print_size\n\n\n"
        "def gill_count(cap_cm):\n    return int(print_size(cap_cm) * 30)\n"
    ),
    "forage.py": (
        "import shrooms.spores\nfrom shrooms.gills import gill_count\n\n"
        "for cap in (4, 7.5):\n    print(cap, shrooms.spores.print_size(cap), gill_count(cap))\n"
    ),
    "basket_log.txt": "chanterelles under the beeches, a ring of blewits by the stile\n",
}
SHROOMS_PRINTS = "4 3.2 96\n7.5 6.0 180"


def _imports_of(tree: ast.Module) -> list[str]:
    """The module names a syntax tree imports (relative imports left out)."""
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


def check_rename_pkg(ws: Path, answer: str) -> Verdict:
    left = sorted(p.relative_to(ws).as_posix() for p in (ws / "shrooms").rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts)
    if left or (ws / "shrooms.py").exists():
        return False, f"shrooms is still there: {', '.join(left) or 'shrooms.py'}"
    for name in ("__init__.py", "spores.py", "gills.py"):
        if not (ws / "mycology" / name).is_file():
            return False, f"mycology/{name} does not exist"
    if read(ws, "mycology/spores.py") != SHROOMS["shrooms/spores.py"]:
        return False, "mycology/spores.py is not the old spores.py"
    for rel in _py_files(ws):
        tree, why = parsed(ws, rel)
        if tree is None:
            return False, why
        old = [name for name in _imports_of(tree) if name == "shrooms" or name.startswith("shrooms.")]
        if old:
            return False, f"{rel} still imports {old[0]}"
    wrong = prints(ws, ["forage.py"], SHROOMS_PRINTS) or prints(
        ws, ["-c", "from mycology.gills import gill_count; from mycology import spores; "
                   "print(gill_count(10), spores.print_size(2))"], "240 1.6")
    return verdict(wrong or unchanged(ws, SHROOMS, "basket_log.txt"),
                   "the package is mycology now, imported so, and forage.py prints as before")


# ---- jobs on a file the request does not name ----

CROSSWORD = {
    "setter/anagrind.py": (
        "import sys\nfrom collections import Counter\n\n"
        "with open('grid_words.txt') as f:\n    WORDS = [w.strip() for w in f if w.strip()]\n\n\n"
        "def anagrams(word):\n"
        "    key = Counter(word.lower())\n"
        "    return [w for w in WORDS if Counter(w) == key and w != word.lower()]\n\n\n"
        "if __name__ == '__main__':\n    print(' '.join(anagrams(sys.argv[1])) or 'no anagrams')\n"
    ),
    "setter/grid_words.txt": "listen\nsilent\nenlist\ntinsel\nenigma\ninlets\ncryptic\n",
    "setter/__init__.py": "",
    "puzzles/thursday_grid.md": "# Thursday\n\n14 across: Listen, I'm confused, it's on the tree (6)\n",
}


def check_any_cwd(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, CROSSWORD, "setter/grid_words.txt", "puzzles/thursday_grid.md")
    if changed:
        return False, changed
    if read(ws, "setter/anagrind.py") is None:
        return False, "setter/anagrind.py is gone"
    with copy_of(ws) as copy:
        # a word the list did not have, so a run that reads the workspace's own list
        # (a path written in whole) is told apart from one that reads its neighbour
        (copy / "setter/grid_words.txt").write_text(CROSSWORD["setter/grid_words.txt"] + "elints\n")
        want = "silent enlist tinsel inlets elints"
        for cwd, script in ((copy, "setter/anagrind.py"), (copy / "setter", "anagrind.py"),
                            (copy / "puzzles", "../setter/anagrind.py"), (copy.parent, "ws/setter/anagrind.py")):
            done = run_py(cwd, script, "listen")
            where = "the top folder" if cwd == copy else cwd.relative_to(copy.parent).as_posix()
            if done.returncode != 0:
                return False, f"run from {where}, it fails: {short(done.stderr or done.stdout)}"
            if done.stdout.strip() != want:
                return False, f"run from {where}, it prints {short(done.stdout)!r}, not {want!r}"
        wrong = prints(copy, ["-c", "from setter.anagrind import anagrams; print(anagrams('Silent'))"],
                       "['listen', 'enlist', 'tinsel', 'inlets', 'elints']")
    return verdict(wrong, "the anagram helper finds its word list from any folder")


GELATO = {
    "gelato_van.py": (
        "from gelato.scoop_ticket import print_ticket\n\n"
        "print_ticket([('pistachio', 2), ('stracciatella', 1), ('affogato', 1)])\n"
        "print_ticket([('sorbetto limone', 3)])\n"
    ),
    "gelato/__init__.py": "",
    "gelato/scoop_ticket.py": (
        "PRICES = {'pistachio': 2.2, 'stracciatella': 1.9, 'affogato': 3.1, 'sorbetto limone': 1.1}\n\n\n"
        "def line_total(flavour, scoops):\n    return PRICES[flavour] * scoops\n\n\n"
        "def print_ticket(order):\n"
        "    total = 0\n"
        "    for flavour, scoops in order:\n"
        "        cost = line_total(flavour, scoops)\n"
        "        total += cost\n"
        "        print(f'{scoops} x {flavour}: £{cost}')\n"
        "    print(f'TOTAL £{total}')\n"
    ),
    "gelato/freezer.py": "def too_warm(celsius):\n    return celsius > -12\n",
}
GELATO_PRINTS = (
    "2 x pistachio: £4.40\n1 x stracciatella: £1.90\n1 x affogato: £3.10\nTOTAL £9.40\n"
    "3 x sorbetto limone: £3.30\nTOTAL £3.30"
)


def check_two_decimals(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, GELATO, "gelato_van.py", "gelato/freezer.py")
    if changed:
        return False, changed
    wrong = prints(ws, ["gelato_van.py"], GELATO_PRINTS) or prints(
        ws, ["-c", "from gelato.scoop_ticket import print_ticket; "
                   "print_ticket([('stracciatella', 3), ('sorbetto limone', 7), ('affogato', 10)])"],
        "3 x stracciatella: £5.70\n7 x sorbetto limone: £7.70\n10 x affogato: £31.00\nTOTAL £44.40")
    return verdict(wrong, "every price on the tickets has two decimals")


HELD_OUT_7: tuple[Task, ...] = (
    Task("crlf", CARILLON, "everything in carillon/ got saved with windows line endings and now every diff is full "
         "of ^M. can you convert them to normal unix ones?", check_crlf),
    Task("gitignore", GLASS, "git status keeps listing all the .log files plus everything under renders/, pls add a "
         ".gitignore so it shuts up about them", check_gitignore),
    Task("pip_needs", RADIOSONDE, "what do I have to pip install before this will run?", check_pip_needs),
    Task("stage_order", PERFUMERY, "when compose.py runs, what order do the stages actually go in? can't work it out "
         "from the code", check_stage_order),
    Task("dataclass", LAPIDARY, "Could you turn Gem into a dataclass? Writing the __init__ out by hand is getting old",
         check_dataclass),
    Task("main_guard", ORIENTEERING, "importing anything from dibber.py runs its whole demo (prints the course and "
         "overwrites splits.json). make it only do that when dibber.py itself is run", check_main_guard),
    Task("argv_file", CRAG, "crag_tally.py only ever reads gritstone.txt. make it take the file from the command line "
         "like python crag_tally.py limestone.txt, then run it on limestone and tell me the total", check_argv_file),
    Task("rename_pkg", SHROOMS, "rename the shrooms package to mycology and sort out the imports so forage.py still "
         "works", check_rename_pkg),
    Task("any_cwd", CROSSWORD, "the anagram helper only works if I cd into its folder first. from the top folder it "
         "just dies with FileNotFoundError", check_any_cwd),
    Task("two_decimals", GELATO, "the gelato van tickets print prices like £3.3000000000000003 :/ should look like "
         "normal money, 2 decimal places", check_two_decimals),
)

# The words that make each job itself: the product's sources must not hold any of them as a
# word (tests/test_eval.py), nor may any other job's prompt or fixture.
WORDS_7: dict[str, tuple[str, ...]] = {
    "crlf": ("carillon", "bourdon", "peal_schedule", "baton_layout", "vestry"),
    "gitignore": ("grisaille", "render_queue", "lancet_04", "rosette_01", "annealing"),
    "pip_needs": ("radiosonde", "plot_sounding", "burst_altitude", "dateparser", "tropopause"),
    "stage_order": ("atelier", "enfleurage", "neroli", "harvest_jasmine", "rest_flacons"),
    "dataclass": ("lapidary", "loupe", "peridot", "tourmaline", "milligrams"),
    "main_guard": ("dibber", "map_legend", "course_length", "leg_length", "contours"),
    "argv_file": ("crag_tally", "gritstone", "limestone", "Mossdale", "belay_notes"),
    "rename_pkg": ("shrooms", "mycology", "gill_count", "chanterelles", "blewits"),
    "any_cwd": ("anagrind", "grid_words", "tinsel", "inlets", "thursday_grid"),
    "two_decimals": ("gelato", "pistachio", "stracciatella", "affogato", "scoop_ticket"),
}


def _crlf_to_lf(text: bytes) -> bytes:
    return text.replace(b"\r\n", b"\n")


def _lf(ws: Path, rels: tuple[str, ...] = CARILLON_FOLDER, how: Callable[[bytes], bytes] = _crlf_to_lf) -> None:
    for rel in rels:
        (ws / rel).write_bytes(how((ws / rel).read_bytes()))


def _gitignore(ws: Path, text: str = "*.log\nrenders/\n", drop: str = "") -> None:
    (ws / ".gitignore").write_text(text)
    if drop:
        (ws / drop).unlink()


_DATACLASS = (
    "from dataclasses import dataclass, field\n\n\n"
    "@dataclass\nclass Gem:\n"
    "    name: str\n    carats: float\n    cut: str = 'brilliant'\n"
    "    flaws: list = field(default_factory=list)\n\n"
    "    def milligrams(self, per_carat=200):\n        return self.carats * per_carat\n"
)


def _dataclass(ws: Path, text: str = _DATACLASS) -> None:
    (ws / "lapidary/gems.py").write_text(text)


_DEMO = ORIENTEERING["dibber.py"][ORIENTEERING["dibber.py"].index("course = "):]


def _main_guard(ws: Path, guard: str = "if __name__ == '__main__':\n", split: bool = False,
                relay: bool = False) -> None:
    """The demo put under `guard` (or taken out, where there is none); `split`: only its
    prints put there, the list and the writing of splits.json left outside; `relay`:
    relay.py changed as well."""
    if relay:
        sub(ws, "relay.py", "print(", "print('imported'); print(")
    lines = _DEMO.splitlines(keepends=True)
    if not guard:
        new = ""
    elif split:
        new = lines[0] + guard + "".join("    " + ln for ln in lines[1:5]) + "".join(lines[5:])
    else:
        new = guard + "".join("    " + ln for ln in lines)
    sub(ws, "dibber.py", _DEMO, new)


def _argv(ws: Path, opened: str = "sys.argv[1]") -> None:
    sub(ws, "crag_tally.py", "with open('gritstone.txt')", f"import sys\n\nwith open({opened})")


def _rename_pkg(ws: Path, move: bool = True, fix: tuple[str, ...] = ("forage.py", "mycology/gills.py"),
                copy: bool = False) -> None:
    if move:
        if copy:
            shutil.copytree(ws / "shrooms", ws / "mycology")
        else:
            (ws / "shrooms").rename(ws / "mycology")
    for rel in fix:
        sub(ws, rel, "shrooms", "mycology")


_CWD_FIX = ("with open('grid_words.txt')",
            "from pathlib import Path\n\nwith open(Path(__file__).resolve().parent / 'grid_words.txt')")


def _two_decimals(ws: Path, lines: str = "£{cost:.2f}", total: str = "£{total:.2f}") -> None:
    """The prices of the lines and the total written so (each left as it was where empty)."""
    for old, new in (("£{cost}", lines), ("£{total}", total)):
        if new:
            sub(ws, "gelato/scoop_ticket.py", old, new)


# What a right run of each job does to its workspace, and its answer (tests/test_eval.py
# checks every checker passes it); kept here with the jobs, as SOLVED_HELD_OUT_6 is.
SOLVED_HELD_OUT_7: dict[str, tuple[Any, str]] = {
    "crlf": (_lf, "Converted the files in carillon/ to LF line endings."),
    "gitignore": (_gitignore, "Added .gitignore with *.log and renders/."),
    "pip_needs": (None, "pip install pyyaml python-dateutil pillow (yaml, dateutil and PIL are imported; the rest is "
                        "the standard library or the local radiosonde package)."),
    "stage_order": (None, "They run heaviest weight first: harvest_jasmine (90), enfleurage (75), distil_neroli (60), "
                          "macerate_resins (40), blend_accord (25), rest_flacons (5)."),
    "dataclass": (_dataclass, "Gem is a dataclass now; flaws uses field(default_factory=list)."),
    "main_guard": (_main_guard, "Put the demo under if __name__ == '__main__'."),
    "argv_file": (_argv, "crag_tally.py takes the file as its argument now. On limestone.txt: total pitches: 9."),
    "rename_pkg": (_rename_pkg, "Renamed; gills.py and forage.py import mycology now."),
    "any_cwd": (lambda ws: sub(ws, "setter/anagrind.py", *_CWD_FIX),
                "It opened grid_words.txt relative to the current folder; now it is found next to the script."),
    "two_decimals": (_two_decimals, "Prices are formatted with :.2f now."),
}

# Runs that are nearly right, each of which its checker must refuse: (job, change, answer).
NEAR_MISSES_7: tuple[tuple[str, Any, str], ...] = (
    ("crlf", lambda ws: _lf(ws, rels=("carillon/peal_schedule.txt", "carillon/bourdon.md")), "Converted."),
    ("crlf", lambda ws: _lf(ws, rels=(*CARILLON_FOLDER, "ring_changes.bat")), "Converted everything."),
    ("crlf", lambda ws: _lf(ws, how=lambda b: b.replace(b"\r", b"\n")), "Converted."),
    ("crlf", lambda ws: _lf(ws, how=lambda b: b.replace(b"\r\n", b"\n").rstrip(b"\n")), "Converted."),
    ("gitignore", lambda ws: _gitignore(ws, "*.log\n"), "Added."),
    ("gitignore", lambda ws: _gitignore(ws, "*log*\nrenders/\n"), "Added."),
    ("gitignore", lambda ws: _gitignore(ws, "*.log\nrender*\n"), "Added."),
    ("gitignore", lambda ws: _gitignore(ws, "cutting.log\nglazing/annealing.log\nrenders/\n"), "Added."),
    ("gitignore", lambda ws: _gitignore(ws, "*.log\n*.svg\n"), "Added."),
    ("gitignore", lambda ws: _gitignore(ws, drop="cutting.log"), "Added, and removed the old log."),
    ("pip_needs", None, "pip install yaml dateutil PIL"),
    ("pip_needs", None, "pip install pyyaml python-dateutil"),
    ("pip_needs", None, "Nothing, it only uses the standard library."),
    ("pip_needs", None, "pip install pyyaml pillow radiosonde"),
    ("stage_order", None, "distil_neroli, harvest_jasmine, enfleurage, macerate_resins, rest_flacons, blend_accord"),
    ("stage_order", None, "rest_flacons, blend_accord, macerate_resins, distil_neroli, enfleurage, harvest_jasmine"),
    ("stage_order", None, "macerate_resins, rest_flacons, blend_accord, distil_neroli, harvest_jasmine, enfleurage"),
    ("stage_order", None, "harvest_jasmine, enfleurage, distil_neroli, macerate_resins, blend_accord"),
    ("dataclass", lambda ws: sub(ws, "lapidary/gems.py", "class Gem:", "from dataclasses import dataclass\n\n\n"
                                  "@dataclass\nclass Gem:"), "Done."),
    ("dataclass", lambda ws: _dataclass(ws, _DATACLASS.replace("field(default_factory=list)", "None")), "Done."),
    ("dataclass", lambda ws: _dataclass(ws, _DATACLASS.replace("    carats: float\n    cut: str = 'brilliant'\n",
                                                               "    cut: str = 'brilliant'\n    carats: float = 0\n")),
     "Done."),
    ("dataclass", lambda ws: _dataclass(ws, _DATACLASS.replace("@dataclass\n", "@dataclass(eq=False)\n")), "Done."),
    ("main_guard", lambda ws: _main_guard(ws, guard="if __name__ == 'main':\n"), "Guarded."),
    ("main_guard", lambda ws: _main_guard(ws, guard=""), "Removed the demo."),
    ("main_guard", lambda ws: _main_guard(ws, split=True), "Guarded the prints."),
    ("main_guard", lambda ws: _main_guard(ws, guard="def main():\n"), "Moved the demo into main()."),
    ("main_guard", lambda ws: _main_guard(ws, relay=True), "Guarded."),
    ("argv_file", lambda ws: _argv(ws, opened="'limestone.txt'"), "total pitches: 9"),
    ("argv_file", _argv, "total pitches: 3"),
    ("argv_file", lambda ws: (ws / "gritstone.txt").write_text(CRAG["limestone.txt"]), "It's 9 pitches."),
    ("argv_file", _argv, "Done, crag_tally.py takes the file as its argument now."),
    ("rename_pkg", lambda ws: _rename_pkg(ws, fix=()), "Renamed the folder."),
    ("rename_pkg", lambda ws: _rename_pkg(ws, fix=("forage.py",)), "Renamed."),
    ("rename_pkg", lambda ws: _rename_pkg(ws, copy=True), "Renamed."),
    ("rename_pkg", lambda ws: _rename_pkg(ws, move=False, fix=("forage.py", "shrooms/gills.py")), "Renamed."),
    ("any_cwd", lambda ws: shutil.copy(ws / "setter/grid_words.txt", ws / "grid_words.txt"), "Copied the list up."),
    ("any_cwd", lambda ws: sub(ws, "setter/anagrind.py", "open('grid_words.txt')",
                                f"open({str(ws / 'setter/grid_words.txt')!r})"), "Fixed."),
    ("any_cwd", lambda ws: sub(ws, "setter/anagrind.py", "open('grid_words.txt')", "open('setter/grid_words.txt')"),
     "Fixed."),
    ("any_cwd", lambda ws: sub(ws, "setter/anagrind.py", "with open('grid_words.txt') as f:\n    WORDS = "
                                "[w.strip() for w in f if w.strip()]\n",
                                "try:\n    with open('grid_words.txt') as f:\n        WORDS = [w.strip() for w in f "
                                "if w.strip()]\nexcept FileNotFoundError:\n    WORDS = []\n"), "Fixed."),
    ("two_decimals", lambda ws: _two_decimals(ws, lines="£{round(cost, 2)}", total="£{round(total, 2)}"), "Rounded."),
    ("two_decimals", lambda ws: _two_decimals(ws, lines=""), "Fixed the total."),
    ("two_decimals", lambda ws: _two_decimals(ws, total=""), "Fixed the lines."),
    ("two_decimals", lambda ws: _two_decimals(ws, lines="£{cost:.1f}", total="£{total:.1f}"), "Fixed."),
)
