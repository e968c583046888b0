"""An eighth held-out set: ten more small jobs, two of each of the shapes the others are
(file housekeeping, questions about code, edits of several lines, two-step jobs, jobs on
a file the request does not name) but sharing no file, identifier or distinctive word
with any job of tasks.py, more_tasks.py, fresh_tasks.py, third_tasks.py, fourth_tasks.py,
fifth_tasks.py, sixth_tasks.py or seventh_tasks.py, nor with each other. The prompts are
phrased as people type them on the first day, in words the other sets do not use, and the
jobs are of kinds the other sets have none of.

HELD_OUT_7 became known as leading was developed beside it; these were written blind, by
a helper who read no product code and reported none of their words, as the clean
measure. They were only run to report (`ops/eval/run.py --set held_out_8`) until they
became known as leading was developed beside them, and ninth_tasks.py was written blind
as the clean held-out set in their place: from then on they are a development set like
seventh_tasks.py's. Nothing in the product names a job, a file or a word of theirs
(tests/test_eval.py checks the product's sources against WORDS_8 and the fixtures' file
names).
"""

from __future__ import annotations

import ast
import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
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


def _bytes(ws: Path, rel: str) -> bytes | None:
    try:
        return (ws / rel).read_bytes()
    except OSError:
        return None


# ---- file housekeeping ----

_CRANE = "Crane\n1. square base\n2. petal fold, front and back\n3. narrow the legs, reverse-fold neck and tail\n"
_KUSUDAMA = "Kusudama ball\nsixty petal units, glued in fives, threaded with a tassel\n"
_WATERBOMB = "Waterbomb base\nfold both diagonals, turn over, fold the middle, collapse into a triangle\n"
_SONOBE = "Sonobe unit\nfold in thirds, tuck the corners in, twelve make a cube\n"
_SONOBE_V2 = "Sonobe unit\nfold in thirds, tuck the corners in, crease the diagonal, twelve make a cube\n"
_IRIS = "Iris\nstart from a frog base, petal fold all four flaps, curl the petals round a pencil\n"
ORIGAMI = {
    "origami/crane.txt": _CRANE,
    "origami/crane_copy.txt": _CRANE,
    "origami/kusudama_ball.txt": _KUSUDAMA,
    "origami/kusudama_ball-2.txt": _KUSUDAMA,
    "origami/waterbomb_base.txt": _WATERBOMB,
    "origami/balloon_start.txt": _WATERBOMB,
    "origami/sonobe_unit.txt": _SONOBE,
    "origami/sonobe_unit_v2.txt": _SONOBE_V2,
    "origami/iris.txt": _IRIS,
    "paper_stock.md": "# Paper\n\nkami 15 cm for practice, washi for gifts, foil paper holds a crease best\n",
    "handouts/club_handout.txt": _CRANE,
}
ORIGAMI_DIAGRAMS = {_CRANE: "crane", _KUSUDAMA: "kusudama ball", _WATERBOMB: "waterbomb base", _SONOBE: "sonobe unit",
                    _SONOBE_V2: "second sonobe unit", _IRIS: "iris"}


def check_dupes(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, ORIGAMI, "paper_stock.md", "handouts/club_handout.txt")
    if changed:
        return False, f"{changed}: only origami/ was to be tidied"
    held: dict[str, list[str]] = {}
    for rel in files_under(ws, "origami"):
        text = read(ws, rel)
        if text not in ORIGAMI_DIAGRAMS:
            return False, f"{rel} holds text none of the diagrams had"
        held.setdefault(text, []).append(rel)
    for text, name in ORIGAMI_DIAGRAMS.items():
        where = held.get(text, [])
        if not where:
            return False, f"no file in origami/ holds the {name} diagram any more"
        if len(where) > 1:
            return False, f"the {name} diagram is still there more than once: {', '.join(where)}"
    for rel in files_under(ws):
        if rel.startswith("origami/") or rel in ORIGAMI:
            continue
        if read(ws, rel) in ORIGAMI_DIAGRAMS:
            return False, f"{rel} holds a diagram's copy: the extra copies were to be deleted, not put elsewhere"
    return True, "each diagram is in origami/ once, the rest as it was"


PADDLING = {
    "paddling/2021-06-02_loch_etive.md": "# Loch Etive\n14 km, headwind all the way back, seals at the narrows\n",
    "paddling/2021-08-15_portage_day.md": "# Portage day\nthree carries round the falls, the trolley wheel gave up\n",
    "paddling/2022-05-21_tidal_race.md": "# Tidal race\nbroke in at slack plus one hour, two rolls, one swim\n",
    "paddling/2023-04-09_river_spey.md": "# River Spey\nhigh water, grade 2 all day, lunch on the shingle\n",
    "paddling/2023-09-30_sea_caves.md": "# Sea caves\nin through the arch on a falling tide, helmets on\n",
    "paddling/kit_list.txt": "spraydeck\nsplit paddle\nthrow line\nflask\n",
    "ferry_glide.md": "Point upstream at about 45 degrees and let the current carry you across.\n",
}
PADDLING_DATED = tuple(rel for rel in PADDLING if re.match(r"paddling/\d{4}-", rel))


def _by_year(rel: str) -> str:
    name = Path(rel).name
    return f"paddling/{name[:4]}/{name}"


def check_by_year(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, PADDLING, "paddling/kit_list.txt", "ferry_glide.md")
    if changed:
        return False, changed
    for rel in PADDLING_DATED:
        if (ws / rel).exists():
            return False, f"{rel} is still where it was"
        want = _by_year(rel)
        text = read(ws, want)
        if text is None:
            return False, f"{want} does not exist"
        if text != PADDLING[rel]:
            return False, f"{want} does not hold the log as it was"
    expected = {_by_year(rel) for rel in PADDLING_DATED} | {"paddling/kit_list.txt"}
    extra = [rel for rel in files_under(ws, "paddling") if rel not in expected]
    if extra:
        return False, f"paddling/ holds more than the logs in their year folders: {', '.join(extra)}"
    for rel in PADDLING_DATED:
        copies = [p for p in files_under(ws) if Path(p).name == Path(rel).name]
        if len(copies) > 1:
            return False, f"{Path(rel).name} is in more than one place: {', '.join(copies)}"
    return True, "each dated log is in paddling/<year>/, the kit list where it was"


# ---- questions about code ----

SMOKEHOUSE = {
    "smokehouse/__init__.py": "",
    "smokehouse/pit.py": (
        "import time\n\nfrom smokehouse.thermoprobe import read_temp\n\n\n"
        "def _wait(minutes):\n    time.sleep(minutes * 60)\n\n\n"
        "def hold(temp_c, duration):\n"
        "    \"\"\"Keep the pit at temp_c for the given duration, then say if it stayed hot enough.\"\"\"\n"
        "    _wait(duration * 60)\n"
        "    return read_temp() >= temp_c\n"
    ),
    "smokehouse/thermoprobe.py": "def read_temp():\n    # the probe in the firebox end, in degrees C\n    return 107\n",
    "brisket_plan.py": (
        "from smokehouse.pit import hold\n\n"
        "# low and slow over hickory\n"
        "ok = hold(105, 12)\n"
        "print('rest the brisket wrapped in butcher paper' if ok else 'fire went low, finish in the oven')\n"
    ),
    "rubs.md": "# Rubs\n\nbrisket: coarse pepper and salt, nothing else\nribs: paprika, brown sugar, garlic\n",
}


def check_units(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    if not re.search(r"(?<![\w-])(hours?|hrs?)(?![\w-])", answer, re.I):
        return False, f"the answer does not say hours: {short(answer)}"
    if re.search(r"\bnot\s+(in\s+)?(hours?|hrs?)\b", answer, re.I):
        return False, f"the answer says it is not hours: {short(answer)}"
    return verdict(unchanged(ws, SMOKEHOUSE, *SMOKEHOUSE), "the answer says the duration is in hours")


MEEPLE = {
    "ludo/__init__.py": "",
    "ludo/shelf.py": (
        "from ludo.loans import on_loan\n\n"
        "GAMES = {'Carcassonne': 2, 'Azul': 1, 'Agricola': 1}\n\n\n"
        "def available(title):\n    return GAMES.get(title, 0) - on_loan(title)\n"
    ),
    "ludo/loans.py": (
        "from ludo.fees import late_fee\nfrom ludo.shelf import GAMES\n\n"
        "LOANS = [('Azul', 'table 4', 3), ('Carcassonne', 'table 9', 0)]\n\n\n"
        "def on_loan(title):\n    return sum(1 for game, _, _ in LOANS if game == title)\n\n\n"
        "def lend(title, table):\n"
        "    if title not in GAMES:\n        raise KeyError(title)\n"
        "    LOANS.append((title, table, 0))\n\n\n"
        "def overdue_total():\n    return sum(late_fee(days) for _, _, days in LOANS)\n"
    ),
    "ludo/fees.py": "def late_fee(days):\n    # two days free, then 50p a day\n    return 0.5 * max(days - 2, 0)\n",
    "meeple_cafe.py": (
        "from ludo.shelf import available\n\n"
        "for title in ('Carcassonne', 'Azul', 'Agricola'):\n    print(title, available(title))\n"
    ),
}


def check_import_loop(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    missing = [name for name in ("shelf", "loans")
               if not names_word(answer, name) and not names_word(answer, f"{name}.py")]
    if missing:
        return False, f"the answer does not name {', '.join(missing)}: {short(answer)}"
    if names_word(answer, "fees") or names_word(answer, "fees.py"):
        return False, f"the answer names fees too, which is not in the loop: {short(answer)}"
    return verdict(unchanged(ws, MEEPLE, *MEEPLE), "the answer names shelf.py and loans.py")


# ---- edits of several lines ----

LETTERPRESS = {
    "platen.py": (
        "def ink_rollers(pigment):\n"
        "    print(f'inking the rollers with {pigment}')\n"
        "    return pigment.upper()\n\n\n"
        "def lock_chase(quoins):\n"
        "    for n in range(1, quoins + 1):\n"
        "        print(f'tightening quoin {n} of {quoins}')\n"
        "    return quoins * 2\n\n\n"
        "def pull_proofs(sheets, pigment):\n"
        "    ink = ink_rollers(pigment)\n"
        "    print('proofs pulled:', sheets, 'in', ink)\n"
        "    return [f'{ink}-{n}' for n in range(sheets)]\n"
    ),
    "broadside.py": (
        "from platen import lock_chase, pull_proofs\n\n"
        "lock_chase(2)\n"
        "for proof in pull_proofs(3, 'vermilion'):\n    print(proof)\n"
    ),
    "type_cases.md": "Letterpress: capitals lived in the upper case, small letters in the lower case.\n",
}
LETTERPRESS_PROBE = (
    "import json\nimport logging\n\nimport platen\n\n"
    "seen = []\n_handle = logging.Logger.handle\n\n\n"
    "def handle(self, record):\n"
    "    seen.append(' '.join(record.getMessage().split()))\n"
    "    return _handle(self, record)\n\n\n"
    "logging.Logger.handle = handle\nlogging.disable(logging.NOTSET)\nlogging.getLogger().setLevel(logging.DEBUG)\n"
    "got = [platen.ink_rollers('sepia'), platen.lock_chase(3), platen.pull_proofs(2, 'ochre')]\n"
    "print(json.dumps({'seen': seen, 'got': got}))\n"
)
LETTERPRESS_SEEN = ["inking the rollers with sepia", "tightening quoin 1 of 3", "tightening quoin 2 of 3",
                    "tightening quoin 3 of 3", "inking the rollers with ochre", "proofs pulled: 2 in OCHRE"]
LETTERPRESS_GOT = ["SEPIA", 6, ["OCHRE-0", "OCHRE-1"]]


def _calls_print(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "print"
               for n in ast.walk(tree))


def check_to_logging(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, LETTERPRESS, "broadside.py", "type_cases.md")
    if changed:
        return False, changed
    tree, why = parsed(ws, "platen.py")
    if tree is None:
        return False, why
    if _calls_print(tree):
        return False, "platen.py still calls print()"
    done = run_py(ws, "-c", LETTERPRESS_PROBE)
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        return False, f"calling platen's functions fails: {short(said[-1] if said else '')}"
    try:
        seen = json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return False, f"calling platen's functions prints {short(done.stdout)!r}"
    if seen["got"] != LETTERPRESS_GOT:
        return False, f"platen's functions return {seen['got']!r} now, not {LETTERPRESS_GOT!r}"
    if seen["seen"] != LETTERPRESS_SEEN:
        return False, f"the logged messages are {short(repr(seen['seen']), 200)}, not the old prints' text"
    done = run_py(ws, "broadside.py")
    if done.returncode != 0:
        return False, f"python3 broadside.py fails: {short(done.stderr or done.stdout)}"
    if done.stdout.strip().splitlines()[-3:] != ["VERMILION-0", "VERMILION-1", "VERMILION-2"]:
        return False, f"python3 broadside.py no longer prints its proofs: {short(done.stdout)!r}"
    return True, "platen.py logs what it printed, through logging, and works as before"


TEA = {
    "withering.py": (
        "# Oolong processing: the times are for a 2 kg batch of fresh leaf.\n"
        "import math\n\n"
        "# WITHER_MINUTES = 45\n"
        "WITHER_MINUTES = 60\n"
        "# print('wither check', WITHER_MINUTES)\n\n\n"
        "def bruise_cycles(leaf_kg):\n"
        "    # one tossing cycle for every 400 g of leaf, rounded up\n"
        "    return math.ceil(leaf_kg / 0.4)\n"
        "    # return int(leaf_kg * 2.5)\n\n\n"
        "def roast_temp(oxidation_pct):\n"
        "    # darker oolongs are roasted hotter\n"
        "    # if oxidation_pct > 70:\n"
        "    #     return 140\n"
        "    return 90 + oxidation_pct // 2\n\n\n"
        "# def sencha_steam(seconds):\n"
        "#     return seconds * 2\n\n"
        "if __name__ == '__main__':\n"
        "    print(WITHER_MINUTES, bruise_cycles(2), roast_temp(60))\n"
    ),
    "brew.py": "from withering import roast_temp\n\nprint('roast at', roast_temp(30), 'C')\n",
    "tasting_notes.md": "Tieguanyin: orchid, cream, a long finish\nDa Hong Pao: mineral, stone fruit, charcoal\n",
}
TEA_PROSE = ("Oolong processing: the times are for a 2 kg batch of fresh leaf.",
             "one tossing cycle for every 400 g of leaf, rounded up", "darker oolongs are roasted hotter")
TEA_DEAD = ("WITHER_MINUTES = 45", "print('wither check', WITHER_MINUTES)", "return int(leaf_kg * 2.5)",
            "if oxidation_pct > 70:", "return 140", "def sencha_steam(seconds):", "return seconds * 2")


def _comments(text: str) -> list[str]:
    """The text of each comment line (a line that is only a comment), its # and spaces off."""
    return [line.strip().lstrip("#").strip() for line in text.splitlines() if line.strip().startswith("#")]


def check_dead_comments(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, TEA, "brew.py", "tasting_notes.md")
    if changed:
        return False, changed
    tree, why = parsed(ws, "withering.py")
    if tree is None:
        return False, why
    if ast.dump(tree) != ast.dump(ast.parse(TEA["withering.py"])):
        return False, "the code of withering.py changed, not just its comments"
    comments = _comments(read(ws, "withering.py") or "")
    dead = [line for line in TEA_DEAD if line in comments]
    if dead:
        return False, f"withering.py still has commented-out code: # {dead[0]}"
    lost = [line for line in TEA_PROSE if line not in comments]
    if lost:
        return False, f"a real comment was taken out too: # {lost[0]}"
    wrong = prints(ws, ["withering.py"], "60 5 120") or prints(ws, ["brew.py"], "roast at 105 C")
    return verdict(wrong, "the commented-out code is gone, the explaining comments and the code are as they were")


# ---- two-step jobs ----

PIGEONS = {
    "race_results.csv": (
        "ring,loft,dist,flight_s\n"
        "GB21-4471,Hollins,161200,9320\n"
        "GB22-0913,Tarrant,158400,8710\n"
        "GB20-7788,Hollins,161200,10150\n"
        "GB23-0356,Okafor,96500,5880\n"
    ),
    "velocity.py": (
        "import csv\n\n"
        "with open('race_results.csv', newline='') as f:\n"
        "    rows = list(csv.DictReader(f))\n\n"
        "for row in sorted(rows, key=lambda r: int(r['dist']) / int(r['flight_s']), reverse=True):\n"
        "    ypm = int(row['dist']) * 1.0936 / (int(row['flight_s']) / 60)\n"
        "    print(f\"{row['ring']} ({row['loft']}): {ypm:.0f} ypm\")\n"
    ),
    "loft_notes.md": "basketing Friday night, liberation at 7 if the cloud lifts\n",
}
PIGEON_HEADER = ["ring", "loft", "distance_m", "flight_s"]
PIGEON_PRINTS = ("GB22-0913 (Tarrant): 1193 ypm\nGB21-4471 (Hollins): 1135 ypm\nGB23-0356 (Okafor): 1077 ypm\n"
                 "GB20-7788 (Hollins): 1042 ypm")
# Other birds, written in a copy, so that a script that prints the old results whatever
# the file holds is told apart from one that reads it.
PIGEON_OTHERS = (("NL19-1200", "Brink", 250000, 12500), ("GB24-0001", "Hollins", 80000, 4800))


def _rows(text: str) -> list[list[str]]:
    return [row for row in csv.reader(io.StringIO(text)) if row]


def check_csv_column(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, PIGEONS, "loft_notes.md")
    if changed:
        return False, changed
    text = read(ws, "race_results.csv")
    if text is None:
        return False, "race_results.csv is gone"
    rows = _rows(text)
    if not rows or rows[0] != PIGEON_HEADER:
        now = ",".join(rows[0]) if rows else "gone"
        return False, f"race_results.csv's header is {now}, not {','.join(PIGEON_HEADER)}"
    if rows[1:] != _rows(PIGEONS["race_results.csv"])[1:]:
        return False, "race_results.csv's rows changed, not just the header"
    wrong = prints(ws, ["velocity.py"], PIGEON_PRINTS)
    if wrong:
        return False, wrong
    with copy_of(ws) as copy:
        body = "".join(f"{ring},{loft},{dist},{secs}\n" for ring, loft, dist, secs in PIGEON_OTHERS)
        (copy / "race_results.csv").write_text(",".join(PIGEON_HEADER) + "\n" + body)
        want = "\n".join(f"{ring} ({loft}): {dist * 1.0936 / (secs / 60):.0f} ypm"
                         for ring, loft, dist, secs in sorted(PIGEON_OTHERS, key=lambda r: r[2] / r[3], reverse=True))
        wrong = prints(copy, ["velocity.py"], want)
    if wrong:
        return False, f"velocity.py does not read the renamed column: {wrong}"
    return True, "the column is distance_m and velocity.py reads it"


QUAKE_SECRET = "tok_9f3a7c2e41d86b05e1"
QUAKES = {
    "quake_feed.py": (
        "import json\nimport urllib.request\n\n"
        f"API_TOKEN = '{QUAKE_SECRET}'\n"
        "FEED = 'https://example.invalid/seismo/v2/events'\n\n\n"
        "def request_for(min_magnitude):\n"
        "    url = f'{FEED}?minmag={min_magnitude}'\n"
        "    return urllib.request.Request(url, headers={'Authorization': f'Bearer {API_TOKEN}'})\n\n\n"
        "def fetch(min_magnitude=4.5):\n"
        "    with urllib.request.urlopen(request_for(min_magnitude), timeout=10) as resp:\n"
        "        return json.load(resp)['events']\n"
    ),
    "richter.py": "def energy_joules(magnitude):\n    return 10 ** (1.5 * magnitude + 4.8)\n",
    "aftershocks.md": "Aftershocks fall off roughly as 1/t (Omori); the biggest is usually about 1.2 smaller.\n",
}
QUAKE_PROBE = ("import quake_feed\nr = quake_feed.request_for(5.1)\n"
               "print(r.full_url)\nprint(r.get_header('Authorization'))\n")


def _run_env(ws: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """As run_py, with `env` added to the environment."""
    try:
        return subprocess.run([sys.executable, *args], cwd=ws, capture_output=True, text=True, timeout=CHECK_RUN_S,
                              env={**os.environ, **env})
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, -1, "", f"did not finish in {CHECK_RUN_S} s")


def check_env_secret(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, QUAKES, "richter.py", "aftershocks.md")
    if changed:
        return False, changed
    for rel in files_under(ws):
        if QUAKE_SECRET.encode() in (_bytes(ws, rel) or b""):
            return False, f"the token is still written in {rel}"
    sample = read(ws, ".env.example")
    if sample is None:
        return False, "there is no .env.example"
    if not re.search(r"^\s*(export\s+)?QUAKE_TOKEN\s*=", sample, re.M):
        return False, f".env.example does not list QUAKE_TOKEN: {short(sample)}"
    for token in ("probe-4f1", "other-77c"):
        done = _run_env(ws, {"QUAKE_TOKEN": token}, "-c", QUAKE_PROBE)
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            return False, f"with QUAKE_TOKEN set, making a request fails: {short(said[-1] if said else '')}"
        want = f"https://example.invalid/seismo/v2/events?minmag=5.1\nBearer {token}"
        if done.stdout.strip() != want:
            return False, f"with QUAKE_TOKEN={token}, the request is {short(done.stdout)!r}, not {want!r}"
    return True, "the token comes from QUAKE_TOKEN, is written nowhere, and .env.example lists the name"


# ---- jobs on a file the request does not name ----

_WOBBLE = {"waveform": "saw", "cutoff_hz": 2400, "resonance": 0.7, "portamento_ms": 80}
SYNTH = {
    "patchbay.py": (
        "import json\nfrom pathlib import Path\n\n"
        "PRESETS = Path(__file__).resolve().parent / 'presets'\n\n\n"
        "def load_all():\n"
        "    return {p.stem: json.loads(p.read_text()) for p in sorted(PRESETS.glob('*.json'))}\n\n\n"
        "if __name__ == '__main__':\n"
        "    for name, patch in load_all().items():\n"
        "        print(f\"{name}: {patch['waveform']} cutoff {patch['cutoff_hz']} Hz\")\n"
    ),
    "presets/acid_bass.json": json.dumps({"waveform": "square", "cutoff_hz": 380, "resonance": 0.85,
                                          "portamento_ms": 40}, indent=2) + "\n",
    "presets/glassy_pad.json": json.dumps({"waveform": "sine", "cutoff_hz": 5200, "resonance": 0.2,
                                           "chorus": True}, indent=2) + "\n",
    "presets/marimba_pluck.json": json.dumps({"waveform": "triangle", "cutoff_hz": 3100, "resonance": 0.4,
                                              "arpeggiator": {"rate": "1/16", "octaves": 2}}, indent=2) + "\n",
    "presets/wobble_lead.json": json.dumps(_WOBBLE, indent=2).replace("80\n}", "80,\n}") + "\n",
    "wiring.md": "MIDI in on channel 3, audio out to the mixer's fourth strip\n",
}
SYNTH_PRINTS = ("acid_bass: square cutoff 380 Hz\nglassy_pad: sine cutoff 5200 Hz\n"
                "marimba_pluck: triangle cutoff 3100 Hz\nwobble_lead: saw cutoff 2400 Hz")


def check_bad_json(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, SYNTH, "presets/acid_bass.json", "presets/glassy_pad.json", "presets/marimba_pluck.json",
                        "wiring.md")
    if changed:
        return False, changed
    text = read(ws, "presets/wobble_lead.json")
    if text is None:
        return False, "presets/wobble_lead.json is gone"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return False, f"presets/wobble_lead.json is still not valid JSON ({exc.msg})"
    if data != _WOBBLE:
        return False, f"presets/wobble_lead.json holds {short(json.dumps(data))}, not the patch it had"
    if read(ws, "patchbay.py") is None:
        return False, "patchbay.py is gone"
    wrong = prints(ws, ["patchbay.py"], SYNTH_PRINTS)
    return verdict(wrong, "the broken preset is valid JSON with its settings, and the app loads all four")


CHOIR = {
    "choir/__init__.py": "",
    "choir/running_order.py": (
        "def numbered(pieces):\n"
        "    lines = []\n"
        "    for i in range(len(pieces) - 1):\n"
        "        lines.append(f'{i + 1}. {pieces[i]}')\n"
        "    return lines\n"
    ),
    "choir/voices.py": (
        "PARTS = ('soprano', 'alto', 'tenor', 'bass')\n\n\n"
        "def divisi(part):\n    return [f'{part} 1', f'{part} 2']\n"
    ),
    "rehearsal.py": (
        "from choir.running_order import numbered\n\n"
        "PIECES = ['Zadok the Priest', 'Locus iste', 'The Lamb', 'Ave verum corpus']\n\n"
        "print('Rehearsal, 7.30 in the hall')\n"
        "for line in numbered(PIECES):\n    print(line)\n"
    ),
}
CHOIR_PRINTS = ("Rehearsal, 7.30 in the hall\n1. Zadok the Priest\n2. Locus iste\n3. The Lamb\n"
                "4. Ave verum corpus")


def check_last_item(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, CHOIR, "rehearsal.py", "choir/voices.py")
    if changed:
        return False, changed
    wrong = prints(ws, ["rehearsal.py"], CHOIR_PRINTS) or prints(
        ws, ["-c", "from choir.running_order import numbered\n"
                   "print(numbered(['Gloria', 'Sanctus', 'Agnus Dei']))\nprint(numbered(['Amen']))\n"
                   "print(numbered([]))"],
        "['1. Gloria', '2. Sanctus', '3. Agnus Dei']\n['1. Amen']\n[]")
    return verdict(wrong, "every piece is listed, numbered from 1, the last one too")


HELD_OUT_8: tuple[Task, ...] = (
    Task("dupes", ORIGAMI, "pretty sure a few of the diagrams in origami/ are saved twice under different names. "
         "delete the extra copies, one of each is plenty", check_dupes),
    Task("by_year", PADDLING, "sort the trip logs in paddling/ into a folder per year please (paddling/2021/ and so "
         "on), the date's at the front of every file name", check_by_year),
    Task("units", SMOKEHOUSE, "what unit is duration in when you call hold()? seconds, minutes?? can't tell from the "
         "code", check_units),
    Task("import_loop", MEEPLE, "meeple_cafe.py crashes straight away with an ImportError about a partially "
         "initialized module, most likely due to a circular import. which two files are importing each other?",
         check_import_loop),
    Task("to_logging", LETTERPRESS, "platen.py reports progress with plain print() calls, can you switch it over to "
         "the logging module? same messages", check_to_logging),
    Task("dead_comments", TEA, "withering.py is cluttered with old commented-out code, clear that out pls. leave the "
         "actual comments that explain stuff", check_dead_comments),
    Task("csv_column", PIGEONS, "rename the dist column in race_results.csv to distance_m, and fix the script that "
         "reads it so it doesn't break", check_csv_column),
    Task("env_secret", QUAKES, "the api token is hardcoded in quake_feed.py. make it read it from a QUAKE_TOKEN env "
         "var instead, and add a .env.example listing the variable (without the real token obviously)",
         check_env_secret),
    Task("bad_json", SYNTH, "synth app crashes as soon as it starts: json.decoder.JSONDecodeError: Expecting property "
         "name enclosed in double quotes. i didn't touch the code", check_bad_json),
    Task("last_item", CHOIR, "the choir practice sheet never shows the final piece, the list always stops one short",
         check_last_item),
)

# The words that make each job itself: the product's sources must not hold any of them as a
# word (tests/test_eval.py), nor may any other job's prompt or fixture.
WORDS_8: dict[str, tuple[str, ...]] = {
    "dupes": ("origami", "kusudama", "sonobe", "waterbomb", "washi"),
    "by_year": ("paddling", "portage", "spraydeck", "Etive", "Spey"),
    "units": ("smokehouse", "brisket", "hickory", "thermoprobe", "paprika"),
    "import_loop": ("meeple_cafe", "Carcassonne", "Agricola", "late_fee", "overdue_total"),
    "to_logging": ("platen", "broadside", "quoin", "vermilion", "ink_rollers"),
    "dead_comments": ("withering", "oolong", "sencha_steam", "Tieguanyin", "bruise_cycles"),
    "csv_column": ("race_results", "Hollins", "Tarrant", "ypm", "basketing"),
    "env_secret": ("quake_feed", "QUAKE_TOKEN", "richter", "aftershocks", "minmag"),
    "bad_json": ("patchbay", "wobble_lead", "glassy_pad", "portamento_ms", "cutoff_hz"),
    "last_item": ("choir", "Zadok", "divisi", "soprano", "verum"),
}


def _dedupe(ws: Path, drop: tuple[str, ...] = ("origami/crane_copy.txt", "origami/kusudama_ball-2.txt",
                                                "origami/balloon_start.txt"), to: str = "") -> None:
    """The `drop` files deleted (or moved under `to`, where one is given)."""
    for rel in drop:
        if to:
            (ws / to).mkdir(parents=True, exist_ok=True)
            (ws / rel).rename(ws / to / Path(rel).name)
        else:
            (ws / rel).unlink()


def _sort_years(ws: Path, folder: Any = _by_year, keep: bool = False, also: tuple[str, ...] = ()) -> None:
    """Each dated log (and `also`) put where `folder` says; copied, not moved, with `keep`."""
    for rel in PADDLING_DATED + also:
        target = ws / folder(rel)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((ws / rel).read_text())
        if not keep:
            (ws / rel).unlink()


_LOGGER = "import logging\n\nlog = logging.getLogger(__name__)\n\n\n"
_LOGGED = (("print(f'inking the rollers with {pigment}')", "log.info('inking the rollers with %s', pigment)"),
           ("print(f'tightening quoin {n} of {quoins}')", "log.info(f'tightening quoin {n} of {quoins}')"),
           ("print('proofs pulled:', sheets, 'in', ink)", "log.info('proofs pulled: %s in %s', sheets, ink)"))


def _to_logging(ws: Path, swaps: tuple[tuple[str, str], ...] = _LOGGED, header: str = _LOGGER) -> None:
    sub(ws, "platen.py", "def ink_rollers", header + "def ink_rollers")
    for old, new in swaps:
        sub(ws, "platen.py", old, new)


def _uncomment(ws: Path, dead: tuple[str, ...] = TEA_DEAD, also_prose: bool = False) -> None:
    """Each comment line whose text is one of `dead` (and, with `also_prose`, every
    comment line) taken out of withering.py."""
    gone = set(dead) | (set(TEA_PROSE) if also_prose else set())
    text = TEA["withering.py"]
    keep = [line for line in text.splitlines(keepends=True)
            if not (line.strip().startswith("#") and line.strip().lstrip("#").strip() in gone)]
    (ws / "withering.py").write_text("".join(keep))


def _csv_column(ws: Path, header: str = "distance_m", script: str = "distance_m", rows: int = 4) -> None:
    """The column called `header` in the CSV (left dist where empty), read as `script` in
    velocity.py (left so where empty); the CSV's first `rows` rows kept."""
    if header:
        lines = (ws / "race_results.csv").read_text().splitlines(keepends=True)
        (ws / "race_results.csv").write_text(lines[0].replace("dist", header) + "".join(lines[1:rows + 1]))
    if script:
        sub(ws, "velocity.py", "'dist'", f"'{script}'")


def _env_secret(ws: Path, read_as: str = "os.environ['QUAKE_TOKEN']", sample: str | None = "QUAKE_TOKEN=\n") -> None:
    if read_as:
        sub(ws, "quake_feed.py", f"API_TOKEN = '{QUAKE_SECRET}'", f"API_TOKEN = {read_as}")
        sub(ws, "quake_feed.py", "import json\n", "import json\nimport os\n")
    if sample is not None:
        (ws / ".env.example").write_text(sample)


_WOBBLE_BROKEN = SYNTH["presets/wobble_lead.json"]


def _json_fix(ws: Path, text: str = _WOBBLE_BROKEN.replace("80,\n}", "80\n}")) -> None:
    (ws / "presets/wobble_lead.json").write_text(text)


_RANGE = "range(len(pieces) - 1)"


# What a right run of each job does to its workspace, and its answer (tests/test_eval.py
# checks every checker passes it); kept here with the jobs, as SOLVED_HELD_OUT_7 is.
SOLVED_HELD_OUT_8: dict[str, tuple[Any, str]] = {
    "dupes": (_dedupe, "Deleted crane_copy.txt, kusudama_ball-2.txt and balloon_start.txt (the same as "
                       "waterbomb_base.txt)."),
    "by_year": (_sort_years, "Moved the five logs into paddling/2021, 2022 and 2023."),
    "units": (None, "Hours: hold() passes duration * 60 to _wait(minutes), which sleeps minutes * 60 seconds. So "
                    "hold(105, 12) is twelve hours."),
    "import_loop": (None, "ludo/shelf.py imports ludo.loans, and ludo/loans.py imports GAMES from ludo.shelf: "
                          "shelf.py and loans.py import each other."),
    "to_logging": (_to_logging, "platen.py now logs through logging.getLogger(__name__) at info level."),
    "dead_comments": (_uncomment, "Removed the commented-out code; kept the three explaining comments."),
    "csv_column": (_csv_column, "Renamed the column and velocity.py reads distance_m now."),
    "env_secret": (_env_secret, "quake_feed.py reads QUAKE_TOKEN from the environment; .env.example lists it."),
    "bad_json": (_json_fix, "presets/wobble_lead.json had a trailing comma after its last setting; removed it."),
    "last_item": (lambda ws: sub(ws, "choir/running_order.py", _RANGE, "range(len(pieces))"),
                  "numbered() stopped one short (range(len(pieces) - 1)); fixed in choir/running_order.py."),
}

# Runs that are nearly right, each of which its checker must refuse: (job, change, answer).
NEAR_MISSES_8: tuple[tuple[str, Any, str], ...] = (
    ("dupes", lambda ws: _dedupe(ws, drop=("origami/crane.txt", "origami/crane_copy.txt", "origami/kusudama_ball-2.txt",
                                           "origami/balloon_start.txt")), "Deleted the copies."),
    ("dupes", lambda ws: _dedupe(ws, drop=("origami/crane_copy.txt", "origami/kusudama_ball-2.txt")),
     "Deleted the two copies."),
    ("dupes", lambda ws: _dedupe(ws, drop=("origami/crane_copy.txt", "origami/kusudama_ball-2.txt",
                                           "origami/balloon_start.txt", "origami/sonobe_unit_v2.txt")), "Deleted."),
    ("dupes", lambda ws: _dedupe(ws, drop=("origami/crane_copy.txt", "origami/kusudama_ball-2.txt",
                                           "origami/balloon_start.txt", "handouts/club_handout.txt")), "Deleted."),
    ("dupes", lambda ws: _dedupe(ws, to="origami/extra_copies"), "Moved the copies into origami/extra_copies."),
    ("dupes", lambda ws: _dedupe(ws, to="trash"), "Moved the copies into trash/."),
    ("by_year", lambda ws: _sort_years(ws, keep=True), "Copied into year folders."),
    ("by_year", lambda ws: _sort_years(ws, also=("paddling/kit_list.txt",),
                                       folder=lambda rel: _by_year(rel) if "kit" not in rel else "paddling/misc/"
                                       "kit_list.txt"), "Sorted everything."),
    ("by_year", lambda ws: _sort_years(ws, folder=lambda rel: Path(rel).name[:4] + "/" + Path(rel).name), "Sorted."),
    ("by_year", lambda ws: _sort_years(ws, folder=lambda rel: f"paddling/{Path(rel).name[:7]}/{Path(rel).name}"),
     "Sorted by month."),
    ("by_year", lambda ws: _sort_years(ws, folder=lambda rel: _by_year(rel).replace("2022/", "2021/")), "Sorted."),
    ("units", None, "Seconds: it ends up in time.sleep, which takes seconds."),
    ("units", None, "It's in minutes, _wait takes minutes."),
    ("units", None, "milliseconds"),
    ("units", None, "Not hours - it's minutes, since _wait is given minutes."),
    ("import_loop", None, "loans.py and fees.py import each other."),
    ("import_loop", None, "meeple_cafe.py and ludo/shelf.py."),
    ("import_loop", None, "shelf.py, loans.py and fees.py all import each other."),
    ("import_loop", None, "ludo/__init__.py and shelf.py"),
    ("to_logging", lambda ws: _to_logging(ws, swaps=_LOGGED[:1]), "Switched."),
    ("to_logging", lambda ws: _to_logging(ws, swaps=tuple((old, "pass") for old, _ in _LOGGED)), "Removed the prints."),
    ("to_logging", lambda ws: _to_logging(ws, swaps=(*_LOGGED[:2], (_LOGGED[2][0],
                                                                    "log.info('proofs pulled:', sheets, 'in', ink)"))),
     "Switched."),
    ("to_logging", lambda ws: _to_logging(ws, swaps=(*_LOGGED[1:], (_LOGGED[0][0], "log.info('inking: %s', pigment)"))),
     "Switched."),
    ("to_logging", each_of(_to_logging, subbing("broadside.py", "print(proof)", "logging.info(proof)"),
                        subbing("broadside.py", "from platen", "import logging\n\nfrom platen")), "Switched."),
    ("dead_comments", lambda ws: _uncomment(ws, also_prose=True), "Removed all the comments."),
    ("dead_comments", lambda ws: _uncomment(ws, dead=("WITHER_MINUTES = 45", "print('wither check', WITHER_MINUTES)",
                                                      "def sencha_steam(seconds):", "return seconds * 2")),
     "Removed the commented-out code."),
    ("dead_comments", each_of(_uncomment, subbing("withering.py", "WITHER_MINUTES = 60", "WITHER_MINUTES = 45")),
     "Removed."),
    ("dead_comments", each_of(lambda ws: _uncomment(ws, dead=TEA_DEAD[:-2]),
                           subbing("withering.py", "# def sencha_steam(seconds):\n#     return",
                                    "def sencha_steam(seconds):\n    return")),
     "Cleaned up and restored sencha_steam."),
    ("dead_comments", lambda ws: _uncomment(ws, dead=TEA_DEAD[:-2]), "Removed."),
    ("csv_column", lambda ws: _csv_column(ws, script=""), "Renamed the column."),
    ("csv_column", lambda ws: _csv_column(ws, header=""), "Updated the script."),
    ("csv_column", lambda ws: _csv_column(ws, rows=3), "Renamed."),
    ("csv_column", lambda ws: _csv_column(ws, header="distance", script="distance"), "Renamed."),
    ("csv_column", each_of(lambda ws: _csv_column(ws, script=""),
                        lambda ws: (ws / "velocity.py").write_text(f"print({PIGEON_PRINTS!r})\n")),
     "Renamed and simplified."),
    ("env_secret", lambda ws: _env_secret(ws, read_as=f"os.environ.get('QUAKE_TOKEN', '{QUAKE_SECRET}')"), "Done."),
    ("env_secret", lambda ws: _env_secret(ws, sample=f"QUAKE_TOKEN={QUAKE_SECRET}\n"), "Done."),
    ("env_secret", lambda ws: _env_secret(ws, read_as="os.environ['SEISMO_TOKEN']", sample="SEISMO_TOKEN=\n"),
     "Done."),
    ("env_secret", lambda ws: _env_secret(ws, sample=None), "Done."),
    ("env_secret", lambda ws: _env_secret(ws, read_as=""), "Added .env.example."),
    ("bad_json", lambda ws: (ws / "presets/wobble_lead.json").unlink(), "Deleted the broken preset."),
    ("bad_json", lambda ws: _json_fix(ws, _WOBBLE_BROKEN.replace(',\n  "portamento_ms": 80,', "")),
     "Fixed the trailing comma."),
    ("bad_json", lambda ws: sub(ws, "patchbay.py", "    return {p.stem: json.loads(p.read_text()) for p in sorted("
                                 "PRESETS.glob('*.json'))}\n",
                                 "    out = {}\n    for p in sorted(PRESETS.glob('*.json')):\n        try:\n"
                                 "            out[p.stem] = json.loads(p.read_text())\n"
                                 "        except json.JSONDecodeError:\n            pass\n    return out\n"),
     "The loader skips broken presets now."),
    ("bad_json", lambda ws: _json_fix(ws, json.dumps({**_WOBBLE, "cutoff_hz": "2400"}, indent=2)), "Fixed."),
    ("bad_json", each_of(subbing("patchbay.py", "json.loads(p.read_text())",
                               "json.loads(re.sub(r',\\s*}', '}', p.read_text()))"),
                      subbing("patchbay.py", "import json\n", "import json\nimport re\n")),
     "The loader tolerates trailing commas now."),
    ("last_item", lambda ws: sub(ws, "choir/running_order.py", _RANGE, "range(1, len(pieces))"), "Fixed."),
    ("last_item", lambda ws: sub(ws, "rehearsal.py", "    print(line)\n",
                                  "    print(line)\nprint(f'4. {PIECES[-1]}')\n"), "Fixed."),
    ("last_item", lambda ws: sub(ws, "rehearsal.py", "'Ave verum corpus']", "'Ave verum corpus', '']"), "Fixed."),
    ("last_item", lambda ws: sub(ws, "choir/running_order.py", f"{_RANGE}:\n        lines.append(f'{{i + 1}}.",
                                  "range(len(pieces)):\n        lines.append(f'{i}."), "Fixed."),
)
