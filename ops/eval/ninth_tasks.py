"""A ninth held-out set: ten more small jobs, two of each of the shapes the others are
(file housekeeping, questions about code, edits of several lines, two-step jobs, jobs on
a file the request does not name) but sharing no file, identifier or distinctive word
with any job of tasks.py, more_tasks.py, fresh_tasks.py, third_tasks.py, fourth_tasks.py,
fifth_tasks.py, sixth_tasks.py, seventh_tasks.py or eighth_tasks.py, nor with each other.
The prompts are phrased as people type them on the first day, in words the other sets do
not use, and the jobs are of kinds the other sets have none of; besides Python, the
workspaces hold Markdown, CSV, INI and a shell script.

HELD_OUT_8 became known as leading was developed beside it; these were written blind, by
a helper who read no product code (only ops/eval/, its tests and the README's lines on
the sets) and reported none of their words, as the clean measure. They were only run to
report (`ops/eval/run.py --set held_out_9`) until they became known as leading was
developed beside them, and tenth_tasks.py was written blind as the clean held-out set in
their place: from then on they are a development set like eighth_tasks.py's. Nothing in
the product names a job, a file or a word of theirs (tests/test_eval.py checks the
product's sources against WORDS_9 and the fixtures' file names).
"""

from __future__ import annotations

import ast
import configparser
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from ops.eval.tasks import (
    CHECK_RUN_S,
    Task,
    Verdict,
    copy_of,
    each_of,
    files_under,
    names_word,
    parsed,
    prints,
    read,
    run_py,
    short,
    sub,
    subbing,
    unchanged,
    verdict,
)


def _bash(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A shell script of the workspace, run there with bash, bounded."""
    try:
        return subprocess.run(["bash", *args], cwd=ws, capture_output=True, text=True, timeout=CHECK_RUN_S)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, -1, "", f"did not finish in {CHECK_RUN_S} s")
    except OSError as exc:
        return subprocess.CompletedProcess(args, -1, "", f"bash could not be run ({exc})")


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return short(lines[-1] if lines else "")


# ---- file housekeeping ----

_SCENES = (
    "The pierhead at dusk. QUAYLE: Nobody leaves the pier until the tide turns.",
    "The candyfloss kiosk. PENNYWHISTLE: I only saw his boots, Inspector.",
    "The ballroom, empty. QUAYLE: Someone moved the piano since Tuesday.",
    "The arcade. A coin drops; the claw machine whirs and stops.",
    "The helter-skelter. PENNYWHISTLE: Third mat from the top was still warm.",
    "Under the boards. Waves slap the pilings; QUAYLE strikes a match.",
    "The tea room. PENNYWHISTLE pours; the cup rattles in its saucer.",
    "The end of the pier. A foghorn, twice.",
    "The police box. QUAYLE telephones the mainland; the line crackles.",
    "The ballroom again. The piano lid is open and the keys are wet.",
    "Dawn on the beach. QUAYLE: It was the piano tuner all along.",
)
RADIOPLAY_SCENES = {f"radioplay/scene{n}.txt": f"Scene {n}. {line}\n" for n, line in enumerate(_SCENES, 1)}
RADIOPLAY = {
    **RADIOPLAY_SCENES,
    "radioplay/cast_list.md": "# Cast\n\nInspector Quayle\nMrs Pennywhistle\nthe piano tuner\n",
    "foley_cues.md": "coconut shells for hooves, cellophane for fire, a wet chamois for footsteps on the boards\n",
}
SCENE_OF = {text: n for n, text in enumerate(RADIOPLAY_SCENES.values(), 1)}


def check_pad_numbers(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, RADIOPLAY, "radioplay/cast_list.md", "foley_cues.md")
    if changed:
        return False, changed
    where: dict[int, list[str]] = {}
    for rel in files_under(ws):
        n = SCENE_OF.get(read(ws, rel) or "")
        if n is not None:
            where.setdefault(n, []).append(rel)
    for n in range(1, len(_SCENES) + 1):
        held = where.get(n, [])
        if not held:
            return False, f"no file holds scene {n} any more"
        if len(held) > 1:
            return False, f"scene {n} is in more than one file: {', '.join(held)}"
        path = PurePosixPath(held[0])
        if path.parent.as_posix() != "radioplay":
            return False, f"scene {n} is in {held[0]}, not in radioplay/ itself"
        if path.suffix != ".txt":
            return False, f"{held[0]} lost its .txt ending"
        if n not in {int(d) for d in re.findall(r"\d+", path.stem)}:
            return False, f"{held[0]} holds scene {n}, but its name does not say {n}"
    extra = [rel for rel in files_under(ws, "radioplay")
             if rel != "radioplay/cast_list.md" and read(ws, rel) not in SCENE_OF]
    if extra:
        return False, f"radioplay/ holds files that are no scene: {', '.join(extra)}"
    names = [PurePosixPath(where[n][0]).name for n in range(1, len(_SCENES) + 1)]
    if sorted(names) != names:
        return False, f"the scenes still list out of order: {short(', '.join(sorted(names)), 160)}"
    return True, "each scene is in radioplay/ once, named with its number, and they list in order"


_DRINKS = {
    "Negroni": ("25 ml gin", "25 ml Campari", "25 ml sweet vermouth", "Stir over ice, orange peel."),
    "Sazerac": ("50 ml rye", "1 sugar cube", "3 dashes Peychaud's",
                "Rinse the glass with absinthe, lemon twist."),
    "Paloma": ("50 ml tequila", "15 ml lime juice", "top with grapefruit soda", "Salt half the rim."),
    "Gimlet": ("60 ml gin", "20 ml lime cordial", "Shake hard, no garnish."),
}


def _recipe(name: str, body: tuple[str, ...]) -> str:
    *items, method = body
    return f"## {name}\n" + "".join(f"- {item}\n" for item in items) + f"{method}\n"


COCKTAILS = {
    "house_cocktails.md": "# House cocktails\n\n" + "\n".join(_recipe(n, b) for n, b in _DRINKS.items()),
    "bar_shopping.txt": "limes x10, grapefruit soda, oranges, sugar cubes, a new jigger\n",
}
_DRINK_LINES = {line for body in _DRINKS.values() for line in body}


def _plain(line: str) -> str:
    """A line of Markdown without its bullet and outer spaces."""
    return re.sub(r"^[-*+]\s+", "", line.strip())


def check_split_sections(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, COCKTAILS, "bar_shopping.txt")
    if changed:
        return False, changed
    left = read(ws, "house_cocktails.md")
    if left is not None and left != COCKTAILS["house_cocktails.md"]:
        if any(_plain(line) in _DRINK_LINES for line in left.splitlines()):
            return False, "house_cocktails.md was cut about but still holds recipe lines"
    found: dict[str, str] = {}
    for rel in files_under(ws, "drinks"):
        lines = [_plain(line) for line in (read(ws, rel) or "").splitlines() if line.strip()]
        heads = [line for line in lines if line.startswith("#")] or lines[:1]
        named = {name for name in _DRINKS if any(names_word(head, name) for head in heads)}
        if len(named) != 1:
            return False, f"{rel} has a heading for {len(named)} drinks, not for one"
        (name,) = named
        if name in found:
            return False, f"the {name} is in both {found[name]} and {rel}"
        missing = [line for line in _DRINKS[name] if line not in lines]
        if missing:
            return False, f"{rel} lacks the {name}'s line {missing[0]!r}"
        strays = [line for line in lines if line in _DRINK_LINES and line not in _DRINKS[name]]
        if strays:
            return False, f"{rel} holds another drink's line too: {strays[0]!r}"
        found[name] = rel
    missing_drinks = [name for name in _DRINKS if name not in found]
    if missing_drinks:
        return False, f"no file in drinks/ holds the {', '.join(missing_drinks)}"
    return True, "each drink has its own file in drinks/, with all its lines"


# ---- questions about code ----

RAIN = {
    "gauge_maths.py": (
        "def weekly_mean(readings):\n"
        "    if not readings:\n        return 0.0\n"
        "    return sum(readings) // len(readings)\n\n\n"
        "def wettest(readings):\n    return max(readings)\n"
    ),
    "rainfall_digest.py": (
        "import csv\n\nfrom gauge_maths import weekly_mean, wettest\n\n\n"
        "def load(path='gauge_readings.csv'):\n"
        "    with open(path, newline='') as f:\n"
        "        return [float(row['mm']) for row in csv.DictReader(f)]\n\n\n"
        "readings = load()\n"
        "print(f'{len(readings)} days, wettest {wettest(readings)} mm, '\n"
        "      f'mean {round(weekly_mean(readings), 1)} mm a day')\n"
    ),
    "gauge_readings.csv": "day,mm\nmon,2.4\ntue,0.0\nwed,7.9\nthu,3.3\nfri,0.6\nsat,5.1\nsun,4.2\n",
}


def check_whole_mean(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    if not re.search(r"//|\bfloor|\binteger[ -]divi|\bint division", answer, re.I):
        return False, f"the answer does not put it down to the floor division (//): {short(answer)}"
    if re.search(r"\bnot\s+(because of\s+|due to\s+|from\s+|caused by\s+)?(the\s+)?`?(//|floor|integer div)",
                 answer, re.I):
        return False, f"the answer says it is not the floor division: {short(answer)}"
    return verdict(unchanged(ws, RAIN, *RAIN), "the answer says the mean is floor-divided (//)")


STITCH = {
    "stitchery.ini": "[export]\nfolder = out/floss\nwidth = 60\n\n[palette]\nbrand = DMC\n",
    "chart_export.py": (
        "import configparser\nimport sys\nfrom pathlib import Path\n\n"
        "DEFAULT_FOLDER = 'exports'\n\n"
        "cfg = configparser.ConfigParser()\ncfg.read('stitchery.ini')\n"
        "folder = Path(cfg.get('export', 'folder', fallback=DEFAULT_FOLDER))\n\n\n"
        "def chart_path(name):\n    return folder / 'charts' / f'{name.lower()}.chart'\n\n\n"
        "def export(name, rows):\n"
        "    path = chart_path(name)\n"
        "    path.parent.mkdir(parents=True, exist_ok=True)\n"
        "    path.write_text('\\n'.join(rows) + '\\n')\n"
        "    print('done')\n\n\n"
        "if __name__ == '__main__':\n"
        "    export(sys.argv[1] if len(sys.argv) > 1 else 'Thistle', ['x..x', '.xx.', 'x..x'])\n"
    ),
    "aida_sizes.md": "14-count aida: 14 stitches to the inch; 18-count for the finer pieces\n",
}


def check_where_saved(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    if not re.search(r"out[/\\]floss", answer):
        return False, f"the answer does not say out/floss: {short(answer)}"
    if not names_word(answer, "charts"):
        return False, f"the answer does not say the charts folder under out/floss: {short(answer)}"
    return verdict(unchanged(ws, STITCH, *STITCH), "the answer says out/floss/charts")


# ---- edits of several lines ----

VINYL = {
    "crate_digger.py": (
        "import csv\nfrom collections import Counter\n\n"
        "with open('vinyl_crate.csv', newline='') as f:\n"
        "    records = list(csv.DictReader(f))\n\n"
        "by_genre = Counter(r['genre'] for r in records)\n"
        "for genre, n in sorted(by_genre.items()):\n"
        "    print(f'{genre}: {n}')\n"
        "print(f'{len(records)} records in the crate')\n"
    ),
    "vinyl_crate.csv": (
        "artist,title,genre\n"
        "Slowdive,Souvlaki,shoegaze\n"
        "King Tubby,Dub from the Roots,dub\n"
        "Neu!,Neu! 75,krautrock\n"
        "Ride,Nowhere,shoegaze\n"
        "Can,Tago Mago,krautrock\n"
        "Augustus Pablo,King Tubbys Meets Rockers Uptown,dub\n"
        "Cluster,Zuckerzeit,krautrock\n"
    ),
    "sleeve_notes.md": "Souvlaki: the gatefold is split along the spine, keep it in a poly sleeve\n",
}
VINYL_PRINTS = "dub: 2\nkrautrock: 3\nshoegaze: 2\n7 records in the crate"
_SAYS_MISSING = re.compile(r"vinyl_crate|missing|not found|no such|not exist|n't exist|can'?t find|cannot find|"
                           r"could ?n[o']t find|can'?t open|cannot open|could ?n[o']t open|not there|n't there|"
                           r"not present|no file", re.I)


def check_friendly_missing(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, VINYL, "vinyl_crate.csv", "sleeve_notes.md")
    if changed:
        return False, changed
    wrong = prints(ws, ["crate_digger.py"], VINYL_PRINTS)
    if wrong:
        return False, f"with the file there: {wrong}"
    with copy_of(ws) as copy:
        (copy / "vinyl_crate.csv").unlink()
        done = run_py(copy, "crate_digger.py")
        made = (copy / "vinyl_crate.csv").exists()
    said = done.stdout + done.stderr
    if done.returncode == -1:
        return False, f"without vinyl_crate.csv, crate_digger.py {short(done.stderr)}"
    if "Traceback" in said:
        return False, f"without vinyl_crate.csv, crate_digger.py still shows a traceback: {_last_line(said)}"
    if not said.strip():
        return False, "without vinyl_crate.csv, crate_digger.py says nothing at all"
    if not _SAYS_MISSING.search(said):
        return False, f"without vinyl_crate.csv, crate_digger.py does not say the file is missing: {short(said)!r}"
    if "records in the crate" in said:
        return False, f"without vinyl_crate.csv, crate_digger.py carries on after its message: {short(said)!r}"
    if made:
        return False, "without vinyl_crate.csv, crate_digger.py makes the file instead of stopping"
    return True, "a missing vinyl_crate.csv gets a short message and a stop, and the crate is counted as before"


_CHEMISTRY = (("Developer", "D-76", "1+1", "9 min"), ("Stop bath", "Ilfostop", "1+19", "1 min"),
              ("Fixer", "Rapid fixer", "1+4", "5 min"), ("Wetting agent", "Photo-Flo", "1+200", "30 s"))
_DARKROOM_TOP = "# Darkroom\n\nPrint night is Thursday; the safelight is the red one by the door.\n\n## Chemistry\n\n"
_DARKROOM_END = "\n## Paper\n\nFibre paper dries overnight on the rack; resin-coated is dry in twenty minutes.\n"
DARKROOM = {
    "darkroom.md": _DARKROOM_TOP + "".join(f"- {step}: {what}, {dilution}, {time}\n"
                                           for step, what, dilution, time in _CHEMISTRY) + _DARKROOM_END,
    "enlarger.txt": "lens f/5.6, 50 mm for 35 mm negatives, 80 mm for medium format\n",
}
_COLUMNS = ("step", "product", "dilution", "time")


def _nonblank(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def _cells(row: str) -> list[str]:
    body = row.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") else body
    return [cell.strip() for cell in body.split("|")]


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text).lower()


def check_list_to_table(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, DARKROOM, "enlarger.txt")
    if changed:
        return False, changed
    text = read(ws, "darkroom.md")
    if text is None:
        return False, "darkroom.md is gone"
    lines, top, end = _nonblank(text), _nonblank(_DARKROOM_TOP), _nonblank(_DARKROOM_END)
    if lines[:len(top)] != top:
        return False, "the part of darkroom.md before the chemistry list changed"
    if len(lines) < len(top) + len(end) or lines[len(lines) - len(end):] != end:
        return False, "the part of darkroom.md after the chemistry list changed"
    middle = lines[len(top):len(lines) - len(end)]
    if any(re.match(r"\s*[-*+]\s", line) for line in middle):
        return False, "the chemistry list is still there as a list"
    if not middle or any("|" not in line for line in middle):
        return False, f"the chemistry section is not a table: {short(' / '.join(middle), 160)}"
    if len(middle) < 3:
        return False, "the table has no rows"
    header, rule = _cells(middle[0]), _cells(middle[1])
    if len(rule) != len(header) or not all(re.fullmatch(r":?-+:?", cell) for cell in rule):
        return False, f"the table has no --- line under its header: {short(middle[1])}"
    if len(header) != len(_COLUMNS):
        return False, f"the table has {len(header)} columns, not the four asked for: {short(middle[0])}"
    at: dict[str, int] = {}
    for column in _COLUMNS:
        where = [i for i, cell in enumerate(header) if column in cell.lower()]
        if len(where) != 1:
            return False, f"the table's header has no {column} column: {short(middle[0])}"
        at[column] = where[0]
    rows = []
    for line in middle[2:]:
        cells = _cells(line)
        if len(cells) != len(header):
            return False, f"a row of the table has {len(cells)} cells: {short(line)}"
        rows.append([cells[at[column]] for column in _COLUMNS])
    if len(rows) != len(_CHEMISTRY):
        return False, f"the table has {len(rows)} rows, not {len(_CHEMISTRY)}"
    for want in _CHEMISTRY:
        if not any(all(_squash(w) in _squash(got) for w, got in zip(want, row, strict=True)) for row in rows):
            return False, f"no row says {', '.join(want)} under {', '.join(_COLUMNS)}"
    return True, "the chemistry list is a table with step, product, dilution and time, the rest as it was"


# ---- two-step jobs ----

YARDSTICK = {
    "yardstick/__init__.py": "",
    "yardstick/furlong.py": "\"\"\"An eighth of a mile: the length of a ploughed furrow.\"\"\"\n\n"
                            "NAME = 'furlong'\nKM = 0.201168\n",
    "yardstick/fathom.py": "\"\"\"Six feet, for sounding the depth of water.\"\"\"\n\n"
                           "NAME = 'fathom'\nKM = 0.0018288\n",
    "yardstick/known_units.py": "from yardstick import fathom, furlong\n\n"
                                "UNITS = {unit.NAME: unit for unit in (furlong, fathom)}\n",
    "howfar.py": (
        "import sys\n\nfrom yardstick.known_units import UNITS\n\n"
        "if len(sys.argv) < 3:\n"
        "    print('units:', ', '.join(sorted(UNITS)))\n"
        "    sys.exit(0)\n"
        "unit, amount = sys.argv[1], float(sys.argv[2])\n"
        "print(f'{amount:g} {unit} = {amount * UNITS[unit].KM:.4f} km')\n"
    ),
}


def check_new_unit(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, YARDSTICK, "howfar.py", "yardstick/furlong.py", "yardstick/fathom.py")
    if changed:
        return False, changed
    new = [rel for rel in files_under(ws, "yardstick") if rel.endswith(".py") and rel not in YARDSTICK]
    if not new:
        return False, "there is no new module for the unit in yardstick/, as furlong and fathom have"
    done = run_py(ws, "howfar.py")
    if done.returncode != 0:
        return False, f"python3 howfar.py fails: {_last_line(done.stderr or done.stdout)}"
    listed = {unit.strip() for unit in done.stdout.strip().removeprefix("units:").split(",")}
    if not {"furlong", "fathom"} <= listed:
        return False, f"python3 howfar.py no longer lists furlong and fathom: {short(done.stdout)!r}"
    added = listed - {"furlong", "fathom"}
    if len(added) != 1 or not added <= {"league", "leagues"}:
        return False, f"python3 howfar.py lists {short(done.stdout)!r}, not the league as a third unit"
    (name,) = added
    wrong = (prints(ws, ["howfar.py", name, "1"], f"1 {name} = 4.8280 km")
             or prints(ws, ["howfar.py", "furlong", "8"], "8 furlong = 1.6093 km")
             or prints(ws, ["howfar.py", "fathom", "1000"], "1000 fathom = 1.8288 km"))
    return verdict(wrong, f"the {name} is a module of yardstick/ like the others, listed and converted right")


_FETE_INI = (
    "[fete]\nname = Little Snoring summer fete\ndate = Saturday 12 July\nfield = the green behind the Swan\n\n"
    "[extras]\nbunting_animation = false\nraffle = true\n"
)
FETE = {
    "fete.ini": _FETE_INI,
    "fete_page.py": (
        "import configparser\n\n"
        "BUNTING_JS = \"<script src='bunting.js'></script>\"\n\n"
        "cfg = configparser.ConfigParser()\ncfg.read('fete.ini')\nfete = cfg['fete']\n\n"
        "html = [f\"<h1>{fete['name']}</h1>\", f\"<p>{fete['date']}, on {fete['field']}</p>\"]\n"
        "if cfg.getboolean('extras', 'raffle'):\n"
        "    html.append('<p>Raffle tickets at the tombola stall, 50p a strip</p>')\n"
        "if cfg.getboolean('extras', 'bunting_animation'):\n"
        "    html.append(BUNTING_JS)\n\n"
        "with open('fete.html', 'w') as out:\n"
        "    out.write('\\n'.join(html) + '\\n')\n"
        "print('wrote fete.html')\n"
    ),
    "stalls.md": "cakes: Mrs Okonjo; plants: the allotment lot; coconut shy: the scouts\n",
}
_FETE_TOP = "<h1>Little Snoring summer fete</h1>\n<p>Saturday 12 July, on the green behind the Swan</p>\n"
_FETE_RAFFLE = "<p>Raffle tickets at the tombola stall, 50p a strip</p>\n"


def _ini(text: str) -> configparser.ConfigParser | None:
    ini = configparser.ConfigParser()
    try:
        ini.read_string(text)
    except configparser.Error:
        return None
    return ini


def check_drop_setting(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, FETE, "stalls.md")
    if changed:
        return False, changed
    ini = _ini(read(ws, "fete.ini") or "")
    if ini is None or not ini.has_section("fete"):
        return False, "fete.ini is gone or no longer reads as an INI file"
    if any("bunting" in f"{section} {option}".lower() for section in ini.sections() for option in ini[section]):
        return False, "fete.ini still has the bunting setting"
    was = _ini(_FETE_INI)
    assert was is not None
    if dict(ini["fete"]) != dict(was["fete"]):
        return False, "fete.ini's [fete] settings changed"
    if not ini.has_option("extras", "raffle") or ini.get("extras", "raffle") != "true":
        return False, "fete.ini lost its raffle setting"
    for rel in (rel for rel in files_under(ws) if rel.endswith(".py")):
        tree, why = parsed(ws, rel)
        if tree is None:
            return False, why
        if "bunting" in ast.dump(tree).lower():
            return False, f"{rel} still has code for the bunting"
    with copy_of(ws) as copy:
        wrong = prints(copy, ["fete_page.py"], "wrote fete.html")
        page = read(copy, "fete.html")
        if not wrong and page != _FETE_TOP + _FETE_RAFFLE:
            wrong = f"the page fete_page.py writes is now {short(repr(page))}"
        if not wrong:
            ini.set("extras", "raffle", "false")
            with (copy / "fete.ini").open("w") as out:
                ini.write(out)
            wrong = prints(copy, ["fete_page.py"], "wrote fete.html")
            page = read(copy, "fete.html")
            if not wrong and page != _FETE_TOP:
                wrong = f"with raffle = false, the page is {short(repr(page))}: the raffle setting is not read"
    return verdict(wrong, "the bunting setting and its code are gone, and the page is as it was")


# ---- jobs on a file the request does not name ----

_TEAMS = (("Les Quizerables", 95), ("Quizteama Aguilera", 120), ("Universally Challenged", 88),
          ("Agatha Quiztie", 104))


def _sheet(teams: tuple[tuple[str, int], ...]) -> str:
    return "team,points\n" + "".join(f"{team},{points}\n" for team, points in teams)


def _board(teams: tuple[tuple[str, int], ...]) -> str:
    ranked = sorted(teams, key=lambda t: t[1], reverse=True)
    return "\n".join([f"Winners: {ranked[0][0]} with {ranked[0][1]} points"]
                     + [f"{place}. {team} {points}" for place, (team, points) in enumerate(ranked, 1)])


QUIZ = {
    "quiz_night.py": (
        "from scoring.marksheet import leaderboard, load\n\n"
        "board = leaderboard(load('answer_sheets.csv'))\n"
        "print(f'Winners: {board[0][0]} with {board[0][1]} points')\n"
        "for place, (team, points) in enumerate(board, 1):\n"
        "    print(f'{place}. {team} {points}')\n"
    ),
    "scoring/__init__.py": "",
    "scoring/marksheet.py": (
        "import csv\n\n\n"
        "def load(path):\n"
        "    with open(path, newline='') as f:\n"
        "        return [(row['team'], row['points']) for row in csv.DictReader(f)]\n\n\n"
        "def leaderboard(teams):\n"
        "    return sorted(teams, key=lambda t: t[1], reverse=True)\n"
    ),
    "scoring/tiebreak.md": "A tie is settled by the picture round, then by the nearest guess to the jar of beans.\n",
    "answer_sheets.csv": _sheet(_TEAMS),
}
# Other teams, written in a copy, so that a board fixed for these four scores alone is
# told apart from one that ranks by number.
_OTHER_TEAMS = (("The Quizzly Bears", 9), ("Quiz Akabusi", 1000), ("Tequila Mockingbird", 999),
                ("Cheesy Quizzers", 10))


def check_text_scores(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, QUIZ, "answer_sheets.csv", "scoring/tiebreak.md")
    if changed:
        return False, changed
    wrong = prints(ws, ["quiz_night.py"], _board(_TEAMS))
    if wrong:
        return False, wrong
    with copy_of(ws) as copy:
        (copy / "answer_sheets.csv").write_text(_sheet(_OTHER_TEAMS))
        wrong = prints(copy, ["quiz_night.py"], _board(_OTHER_TEAMS))
    if wrong:
        return False, f"with other scores: {wrong}"
    return True, "the board ranks teams by their points as numbers"


SQUIRREL_FOLDERS = {
    "recipes/soup.txt": "leek and potato, a knob of butter, blend half\n",
    "tax returns/2023.txt": "self assessment filed 14 January, reference in the blue folder\n",
    "garden plans/beds.txt": "bed 1 beans, bed 2 brassicas, bed 3 roots, rotate each spring\n",
}
SQUIRREL = {
    "squirrel.sh": (
        "#!/bin/bash\n"
        "# copies every folder named in squirrel_list.txt into acorns/\n"
        "mkdir -p acorns\n"
        "while read -r dir; do\n"
        "    [ -z \"$dir\" ] && continue\n"
        "    cp -r $dir acorns/\n"
        "done < squirrel_list.txt\n"
        "echo \"stashed $(ls acorns | wc -l) folders\"\n"
    ),
    "squirrel_list.txt": "recipes\ntax returns\ngarden plans\n",
    **SQUIRREL_FOLDERS,
}
# One more folder, listed in a copy, with two spaces in its name.
_ANOTHER = ("old  letters", "nan.txt", "postcards from Whitby, 1962 to 1971\n")


def check_spaced_dirs(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, SQUIRREL, "squirrel_list.txt", *SQUIRREL_FOLDERS)
    if changed:
        return False, changed
    if read(ws, "squirrel.sh") is None:
        return False, "squirrel.sh is gone"
    with copy_of(ws) as copy:
        shutil.rmtree(copy / "acorns", ignore_errors=True)
        folder, name, text = _ANOTHER
        (copy / folder).mkdir()
        (copy / folder / name).write_text(text)
        with (copy / "squirrel_list.txt").open("a") as listed:
            listed.write(folder + "\n")
        done = _bash(copy, "squirrel.sh")
        if done.returncode != 0:
            return False, f"bash squirrel.sh fails: {_last_line(done.stderr or done.stdout)}"
        if "cannot stat" in done.stderr or "No such file" in done.stderr:
            return False, f"bash squirrel.sh still cannot find a folder: {_last_line(done.stderr)}"
        want = {**SQUIRREL_FOLDERS, f"{folder}/{name}": text}
        copied = sorted(p.name for p in (copy / "acorns").iterdir()) if (copy / "acorns").is_dir() else []
        expected = sorted({rel.split("/")[0] for rel in want})
        if copied != expected:
            return False, f"acorns/ holds {copied}, not the folders listed ({expected})"
        for rel, body in want.items():
            if read(copy, f"acorns/{rel}") != body:
                return False, f"acorns/{rel} is not a copy of {rel}"
            if read(copy, rel) != body:
                return False, f"{rel} is gone from where it was after the backup: it was to be copied, not moved"
    return True, "every listed folder, spaces in its name or not, is copied into acorns/"


HELD_OUT_9: tuple[Task, ...] = (
    Task("pad_numbers", RADIOPLAY, "scene10 and scene11 show up before scene2 in radioplay/, can you rename the scene "
         "files so they list in the right order", check_pad_numbers),
    Task("split_sections", COCKTAILS, "house_cocktails.md is getting way too long to scroll. split it up, one file per "
         "drink, in a drinks/ folder", check_split_sections),
    Task("whole_mean", RAIN, "why does the rain digest always give the mean as a whole number (3.0 etc)? the readings "
         "have decimals", check_whole_mean),
    Task("where_saved", STITCH, "i ran chart_export.py and it said done but i can't find the chart anywhere. where "
         "does it save it?", check_where_saved),
    Task("friendly_missing", VINYL, "when vinyl_crate.csv isn't there crate_digger.py spits out a massive traceback. "
         "can it just print a short msg that the file's missing and quit", check_friendly_missing),
    Task("list_to_table", DARKROOM, "can u turn the chemistry list in darkroom.md into a table? columns step, product, "
         "dilution, time", check_list_to_table),
    Task("new_unit", YARDSTICK, "add leagues to howfar, same way furlong and fathom are done. 1 league = 4.828 km",
         check_new_unit),
    Task("drop_setting", FETE, "we're never going to switch the bunting animation on, so rip it out please - the "
         "setting and the code for it", check_drop_setting),
    Task("text_scores", QUIZ, "quiz results are wrong again, quizteama aguilera got 120 but it's giving the win to les "
         "quizerables on 95??", check_text_scores),
    Task("spaced_dirs", SQUIRREL, "backup keeps failing with cp: cannot stat 'tax': No such file or directory. the "
         "folder's called tax returns and it's definitely there", check_spaced_dirs),
)

# The words that make each job itself: the product's sources must not hold any of them as a
# word (tests/test_eval.py), nor may any other job's prompt or fixture.
WORDS_9: dict[str, tuple[str, ...]] = {
    "pad_numbers": ("radioplay", "Quayle", "Pennywhistle", "pierhead", "foley_cues"),
    "split_sections": ("house_cocktails", "Negroni", "Sazerac", "Peychaud", "Paloma"),
    "whole_mean": ("rainfall_digest", "gauge_maths", "gauge_readings", "weekly_mean", "wettest"),
    "where_saved": ("stitchery", "chart_export", "floss", "aida", "Thistle"),
    "friendly_missing": ("crate_digger", "vinyl_crate", "shoegaze", "krautrock", "Souvlaki"),
    "list_to_table": ("darkroom", "Ilfostop", "safelight", "D-76", "Photo-Flo"),
    "new_unit": ("howfar", "yardstick", "furlong", "fathom", "known_units"),
    "drop_setting": ("fete_page", "bunting", "tombola", "Little Snoring", "BUNTING_JS"),
    "text_scores": ("quiz_night", "Quizerables", "Quizteama", "Quiztie", "answer_sheets"),
    "spaced_dirs": ("squirrel", "acorns", "squirrel_list", "tax returns", "garden plans"),
}


# ---- what right and nearly right runs do ----


def _pad(ws: Path, upto: int = 9, name: Callable[[int], str] = lambda n: f"scene{n:02d}.txt", keep: bool = False,
         folder: str = "radioplay", swap: tuple[int, int] | None = None) -> None:
    """Scenes 1 to `upto` given the `name` of their number, in `folder` (copied, with
    `keep`); with `swap`, those two scenes' texts traded."""
    for n in range(1, upto + 1):
        old = ws / f"radioplay/scene{n}.txt"
        new = ws / folder / name(n)
        new.parent.mkdir(parents=True, exist_ok=True)
        new.write_text(old.read_text())
        if not keep:
            old.unlink()
    if swap:
        a, b = (next(p for p in (ws / "radioplay").iterdir() if SCENE_OF.get(p.read_text()) == n) for n in swap)
        text_a, text_b = a.read_text(), b.read_text()
        a.write_text(text_b)
        b.write_text(text_a)


def _split(ws: Path, folder: str = "drinks", together: tuple[str, ...] = (), skip: str = "", bodies: bool = True,
           keep: bool = False) -> None:
    """Each drink written to its own file under `folder` (those of `together` to one
    file; `skip` to none; with `bodies` false, the headings only); house_cocktails.md
    deleted unless `keep`."""
    (ws / folder).mkdir(parents=True, exist_ok=True)
    for name, body in _DRINKS.items():
        if name == skip:
            continue
        text = _recipe(name, body) if bodies else f"# {name}\n"
        target = ws / folder / f"{(together[0] if name in together else name).lower()}.md"
        target.write_text((target.read_text() if target.exists() else "") + text.replace("## ", "# "))
    if not keep:
        (ws / "house_cocktails.md").unlink()


def _table(rows: tuple[tuple[str, ...], ...] = _CHEMISTRY, header: tuple[str, ...] = ("Step", "Product",
           "Dilution", "Time"), rule: bool = True, keep_list: bool = False) -> Callable[[Path], None]:
    """The change that puts `rows` under `header` in place of the list (a --- line under
    the header unless not `rule`; the list kept above it with `keep_list`)."""
    def change(ws: Path) -> None:
        table = f"| {' | '.join(header)} |\n" + (f"|{'---|' * len(header)}\n" if rule else "")
        table += "".join(f"| {' | '.join(row)} |\n" for row in rows)
        text = DARKROOM["darkroom.md"]
        listed = "".join(f"- {step}: {what}, {dilution}, {time}\n" for step, what, dilution, time in _CHEMISTRY)
        (ws / "darkroom.md").write_text(text.replace(listed, (listed + "\n" if keep_list else "") + table))
    return change


_LEAGUE = "\"\"\"Three miles: about how far a person walks in an hour.\"\"\"\n\nNAME = 'league'\nKM = 4.828\n"


def _league(ws: Path, module: str = "yardstick/league.py", text: str = _LEAGUE, register: str | None = "both") -> None:
    """The league module written at `module`; registered beside furlong and fathom (`both`),
    in fathom's place (`instead`), or not at all (None)."""
    if module:
        (ws / module).write_text(text)
    if register == "both":
        sub(ws, "yardstick/known_units.py", "fathom, furlong\n", "fathom, furlong, league\n")
        sub(ws, "yardstick/known_units.py", "(furlong, fathom)", "(furlong, fathom, league)")
    elif register == "instead":
        sub(ws, "yardstick/known_units.py", "fathom, furlong\n", "furlong, league\n")
        sub(ws, "yardstick/known_units.py", "(furlong, fathom)", "(furlong, league)")


_BUNTING_CODE = "if cfg.getboolean('extras', 'bunting_animation'):\n    html.append(BUNTING_JS)\n"
_BUNTING_CONST = "BUNTING_JS = \"<script src='bunting.js'></script>\"\n\n"


def _unbunt(ws: Path, ini: bool = True, code: bool = True, const: bool = True) -> None:
    if ini:
        sub(ws, "fete.ini", "bunting_animation = false\n", "")
    if code:
        sub(ws, "fete_page.py", _BUNTING_CODE, "")
    if const:
        sub(ws, "fete_page.py", _BUNTING_CONST, "")


_SPACED_LOOP = "    cp -r $dir acorns/\n"


def _rename_spaced(ws: Path) -> None:
    for old, new in (("tax returns", "tax_returns"), ("garden plans", "garden_plans")):
        (ws / old).rename(ws / new)
        sub(ws, "squirrel_list.txt", old, new)


def _crate_guard(handler: str, imports: str = "") -> Callable[[Path], None]:
    """crate_digger.py's reading put in a try with `handler` for a missing file."""
    return each_of(
        subbing("crate_digger.py", "import csv\n", f"import csv\n{imports}"),
        subbing("crate_digger.py", "with open('vinyl_crate.csv', newline='') as f:\n"
                "    records = list(csv.DictReader(f))\n",
                "try:\n    with open('vinyl_crate.csv', newline='') as f:\n"
                f"        records = list(csv.DictReader(f))\nexcept FileNotFoundError:\n{handler}"))


# What a right run of each job does to its workspace, and its answer (tests/test_eval.py
# checks every checker passes it); kept here with the jobs, as SOLVED_HELD_OUT_8 is.
SOLVED_HELD_OUT_9: dict[str, tuple[Any, str]] = {
    "pad_numbers": (_pad, "Renamed scene1.txt to scene9.txt to scene01.txt to scene09.txt."),
    "split_sections": (_split, "Each drink is in drinks/ now: negroni.md, sazerac.md, paloma.md and gimlet.md."),
    "whole_mean": (None, "weekly_mean in gauge_maths.py divides with //, which is floor division: 23.5 // 7 is 3.0. "
                         "Use / to keep the decimals."),
    "where_saved": (None, "It saves to out/floss/charts/thistle.chart: the folder comes from stitchery.ini "
                          "(folder = out/floss), and chart_path adds charts/ and the lower-cased name."),
    "friendly_missing": (_crate_guard("    sys.exit('vinyl_crate.csv is missing')\n", "import sys\n"),
                         "Without vinyl_crate.csv it prints 'vinyl_crate.csv is missing' and exits."),
    "list_to_table": (_table(), "The chemistry list is a table now."),
    "new_unit": (_league, "Added yardstick/league.py and registered it in known_units.py."),
    "drop_setting": (_unbunt, "Removed bunting_animation from fete.ini and its code and BUNTING_JS from fete_page.py."),
    "text_scores": (subbing("scoring/marksheet.py", "row['points'])", "int(row['points']))"),
                    "load() kept the points as text, so '95' sorted above '120'; it converts them to int now."),
    "spaced_dirs": (subbing("squirrel.sh", _SPACED_LOOP, "    cp -r \"$dir\" acorns/\n"),
                    "$dir was not quoted in squirrel.sh, so 'tax returns' was split in two; quoted it."),
}


# Runs that are nearly right, each of which its checker must refuse: (job, change, answer).
NEAR_MISSES_9: tuple[tuple[str, Any, str], ...] = (
    ("pad_numbers", lambda ws: _pad(ws, upto=5), "Renamed."),
    ("pad_numbers", lambda ws: _pad(ws, keep=True), "Made padded copies."),
    ("pad_numbers", lambda ws: _pad(ws, swap=(1, 10)), "Renamed."),
    ("pad_numbers", lambda ws: _pad(ws, upto=11, name=lambda n: f"{n:02d}.txt", folder="radioplay/sorted"),
     "Renamed."),
    ("pad_numbers", lambda ws: _pad(ws, upto=11, name=lambda n: f"scene_{'abcdefghijk'[n - 1]}.txt"),
     "Renamed them a to k."),
    ("pad_numbers", lambda ws: _pad(ws, upto=11, name=lambda n: f"scene{n:02d}"), "Renamed, without the .txt."),
    ("pad_numbers", each_of(_pad, lambda ws: (ws / "radioplay/cast_list.md").rename(ws / "radioplay/00_cast_list.md")),
     "Renamed, and put the cast list first."),
    ("split_sections", lambda ws: _split(ws, skip="Gimlet"), "Split."),
    ("split_sections", lambda ws: _split(ws, bodies=False), "Split."),
    ("split_sections", lambda ws: _split(ws, folder="."), "Split into one file per drink."),
    ("split_sections", lambda ws: _split(ws, together=("Negroni", "Sazerac")), "Split."),
    ("split_sections", each_of(_split, subbing("drinks/paloma.md", "Salt half the rim.", "Shake hard, no garnish.")),
     "Split."),
    ("split_sections", each_of(_split, subbing("drinks/negroni.md", "25 ml gin", "1 oz gin")), "Split."),
    ("split_sections", each_of(lambda ws: _split(ws, keep=True),
                               subbing("house_cocktails.md", _recipe("Gimlet", _DRINKS["Gimlet"]), "")), "Split."),
    ("whole_mean", None, "Because round(..., 1) rounds the mean to a whole number."),
    ("whole_mean", None, "The readings are read as ints from the CSV, so the decimals are lost."),
    ("whole_mean", None, "weekly_mean divides by 7 days whatever the data, and the total happens to be a multiple."),
    ("whole_mean", None, "It's not the // in weekly_mean; it's the round() in rainfall_digest.py."),
    ("whole_mean", lambda ws: sub(ws, "gauge_maths.py", "//", "/"),
     "weekly_mean used // (floor division); I changed it to /."),
    ("where_saved", None, "In exports/charts/thistle.chart (DEFAULT_FOLDER)."),
    ("where_saved", None, "It's saved in out/floss."),
    ("where_saved", None, "In the folder you ran it from, as thistle.chart."),
    ("where_saved", None, "In a charts folder next to chart_export.py."),
    ("where_saved", None, "~/Documents/charts/Thistle.chart"),
    ("friendly_missing", _crate_guard("    pass\n"), "It ignores a missing file now."),
    ("friendly_missing", _crate_guard("    print('vinyl_crate.csv is missing')\n    records = []\n"),
     "It says the file is missing."),
    ("friendly_missing", _crate_guard("    traceback.print_exc()\n    sys.exit(1)\n", "import sys\nimport traceback\n"),
     "It prints the error and exits."),
    ("friendly_missing", _crate_guard("    open('vinyl_crate.csv', 'w').write('artist,title,genre\\n')\n"
                                      "    records = []\n"), "It makes an empty crate file when there is none."),
    ("friendly_missing", _crate_guard("    sys.exit('oops')\n", "import sys\n"), "It exits quietly."),
    ("friendly_missing", each_of(_crate_guard("    sys.exit('vinyl_crate.csv is missing')\n", "import sys\n"),
                                 subbing("crate_digger.py", "'vinyl_crate.csv', newline",
                                         "'vinyl_crate.CSV', newline")),
     "It says the file is missing."),
    ("list_to_table", _table(rule=False), "Made it a table."),
    ("list_to_table", _table(keep_list=True), "Added a table under the list."),
    ("list_to_table", _table(rows=_CHEMISTRY[:3]), "Made it a table."),
    ("list_to_table", _table(rows=tuple((s, d, p, t) for s, p, d, t in _CHEMISTRY)), "Made it a table."),
    ("list_to_table", _table(header=("Step", "Product", "Dilution"), rows=tuple(r[:3] for r in _CHEMISTRY)),
     "Made it a table (the times were left out)."),
    ("list_to_table", each_of(_table(), subbing("darkroom.md", "\n## Paper\n\nFibre paper dries overnight on the "
                                                "rack; resin-coated is dry in twenty minutes.\n", "\n")),
     "Made it a table and tidied up."),
    ("new_unit", lambda ws: _league(ws, register=None), "Added yardstick/league.py."),
    ("new_unit", lambda ws: _league(ws, register="instead"), "Added league."),
    ("new_unit", lambda ws: _league(ws, text=_LEAGUE.replace("4.828", "3")), "Added league (3 miles)."),
    ("new_unit", lambda ws: _league(ws, module="", register=None) or sub(
        ws, "yardstick/known_units.py", "UNITS = {unit.NAME: unit for unit in (furlong, fathom)}\n",
        "from types import SimpleNamespace\n\nUNITS = {unit.NAME: unit for unit in (furlong, fathom, "
        "SimpleNamespace(NAME='league', KM=4.828))}\n"), "Added it to known_units.py."),
    ("new_unit", lambda ws: _league(ws, module="league.py", register=None) or sub(
        ws, "yardstick/known_units.py", "fathom, furlong\n", "fathom, furlong\n\nimport league\n") or sub(
        ws, "yardstick/known_units.py", "(furlong, fathom)", "(furlong, fathom, league)"), "Added league.py."),
    ("new_unit", lambda ws: sub(ws, "howfar.py", "unit, amount = sys.argv[1], float(sys.argv[2])\n",
                                "unit, amount = sys.argv[1], float(sys.argv[2])\nif unit == 'league':\n"
                                "    print(f'{amount:g} league = {amount * 4.828:.4f} km')\n    sys.exit(0)\n"),
     "howfar.py handles leagues."),
    ("drop_setting", lambda ws: _unbunt(ws, code=False, const=False), "Removed the setting."),
    ("drop_setting", lambda ws: _unbunt(ws, ini=False), "Removed the code."),
    ("drop_setting", lambda ws: _unbunt(ws, const=False), "Removed the setting and the if."),
    ("drop_setting", each_of(lambda ws: _unbunt(ws, code=False, const=False),
                             subbing("fete_page.py", "'bunting_animation')", "'bunting_animation', fallback=False)")),
     "Removed the setting; the code falls back to off."),
    ("drop_setting", each_of(_unbunt, subbing("fete.ini", "\n[extras]\nraffle = true\n", ""),
                             subbing("fete_page.py", "if cfg.getboolean('extras', 'raffle'):\n    html.append(",
                                     "if False:\n    html.append(")), "Removed the extras."),
    ("drop_setting", each_of(_unbunt, subbing("fete_page.py", "if cfg.getboolean('extras', 'raffle'):\n",
                                              "if True:\n")), "Removed it."),
    ("text_scores", lambda ws: (ws / "answer_sheets.csv").write_text(_sheet(tuple(sorted(
        _TEAMS, key=lambda t: t[1], reverse=True)))), "Sorted the answer sheets."),
    ("text_scores", subbing("scoring/marksheet.py", "row['points'])", "float(row['points']))"), "Fixed."),
    ("text_scores", subbing("scoring/marksheet.py", "key=lambda t: t[1], reverse=True",
                            "key=lambda t: int(t[1])"), "Fixed."),
    ("text_scores", subbing("scoring/marksheet.py", "key=lambda t: t[1]", "key=lambda t: t[1].zfill(3)"), "Fixed."),
    ("text_scores", subbing("quiz_night.py", "board = leaderboard(load('answer_sheets.csv'))\n",
                            "board = sorted(leaderboard(load('answer_sheets.csv')), key=lambda t: t[0] != "
                            "'Quizteama Aguilera')\n"), "Fixed."),
    ("spaced_dirs", _rename_spaced, "Renamed the folders so they have no spaces."),
    ("spaced_dirs", subbing("squirrel.sh", _SPACED_LOOP, "    cp -r '$dir' acorns/\n"), "Quoted it."),
    ("spaced_dirs", subbing("squirrel.sh", _SPACED_LOOP, "    cp -r \"$dir\"/* acorns/\n"), "Quoted it."),
    ("spaced_dirs", subbing("squirrel_list.txt", "recipes\ntax returns\ngarden plans\n", "recipes\n"),
     "Took the missing folders off the list."),
    ("spaced_dirs", subbing("squirrel.sh", _SPACED_LOOP, "    mv \"$dir\" acorns/\n"), "Fixed."),
    ("spaced_dirs", lambda ws: (ws / "squirrel_fixed.sh").write_text(
        SQUIRREL["squirrel.sh"].replace(_SPACED_LOOP, "    cp -r \"$dir\" acorns/\n")), "Wrote a fixed copy."),
)
