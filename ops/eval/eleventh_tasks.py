"""An eleventh held-out set: ten more small jobs, two of each of the shapes the others are
(file housekeeping, questions about code, edits of several lines, two-step jobs, jobs on
a file the request does not name) but sharing no file, identifier or distinctive word
with any job of tasks.py, more_tasks.py, fresh_tasks.py, third_tasks.py, fourth_tasks.py,
fifth_tasks.py, sixth_tasks.py, seventh_tasks.py, eighth_tasks.py, ninth_tasks.py or
tenth_tasks.py, nor with each other. The prompts are phrased as people type them on the
first day, in words the other sets do not use, and the jobs are of kinds the other sets
have none of; besides Python, the workspaces hold plain text, Fountain drafts, a crontab,
CSS, HTML, Markdown and JSON.

HELD_OUT_10 became known as leading was developed beside it; these were written blind, by
a helper who read no product code (only ops/eval/, its tests and the README's lines on
the sets) and reported none of their words, as the clean measure. They were only run to
report (`ops/eval/run.py --set held_out_11`) until some of them were seen as leading was
developed beside them; partly known, they could no longer measure cleanly, so
twelfth_tasks.py was written blind as the held-out set in their place, and from then on
they are a development set like tenth_tasks.py's. Nothing in the product names a job, a
file or a word of theirs (tests/test_eval.py checks the product's sources against WORDS_11
and the fixtures' file names).
"""

from __future__ import annotations

import calendar
import csv
import io
import json
import posixpath
import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote

from ops.eval.tasks import (
    Task,
    Verdict,
    copy_of,
    each_of,
    files_under,
    prints,
    read,
    run_py,
    short,
    sub,
    subbing,
    unchanged,
    verdict,
)


def _held(ws: Path, text: str) -> list[str]:
    """The workspace's files that hold `text` (trailing blank space aside)."""
    return [rel for rel in files_under(ws) if (read(ws, rel) or "").strip() == text.strip()]


def _tokens(text: str) -> list[str]:
    """A name's words, lower-cased: split at punctuation, spaces and camelCase humps."""
    humps = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", " ", text)
    return re.findall(r"[a-z0-9]+", humps.lower())


# ---- file housekeeping ----

_POEMS = (
    ("scan_0113", "Saltmarsh Vespers", ("The reeds lean in to hear the tide", "say its one long word over the mud,",
                                        "and the curlews answer, late.")),
    ("scan_0114", "The Drowned Bell", ("Under the bay a bell still swings", "for a church the sea took in a night;",
                                       "the boats hear it when the wind drops.")),
    ("scan_0117", "Lament for a Lost Mitten (after Clare)", ("One red thumb on the railings",
                                                             "waving at nobody all February,",
                                                             "its partner warm in a coat far off.")),
    ("scan_0120", "Cormorant Weather", ("Black crosses on the harbour posts", "hang their wings out like washing",
                                        "and wait for the sun to be worth it.")),
    ("scan_0121", "Eleven Herons", ("We counted them twice from the sea wall:",
                                    "grey coats, patient, up to their knees,",
                                    "each one alone with the whole estuary.")),
)
CHAPBOOK_POEMS = {f"chapbook/{scan}.txt": f"{title}\n\n" + "\n".join(lines) + "\n" for scan, title, lines in _POEMS}
CHAPBOOK = {
    **CHAPBOOK_POEMS,
    "chapbook/printer_quote.txt": "Risograph quote from the print co-op\n\n"
                                  "40 copies, A6, blue and fluorescent pink, saddle-stitched: 68 pounds\n",
    "colophon.md": "Typed up from the notebooks in March. Cover linocut by the neighbour's daughter.\n",
}
_TITLE_OF = {text: title for text, (_, title, _) in zip(CHAPBOOK_POEMS.values(), _POEMS, strict=True)}


def _names_title(stem: str, title: str) -> bool:
    """The file name `stem` is `title` (any case and separators; its bracketed part, a
    leading article, a scan's number or the word scan may be left out or kept)."""
    words = [w for w in _tokens(stem) if not w.isdigit() and w != "scan"]
    full, core = _tokens(title), _tokens(title.split("(")[0])
    bare = core[1:] if core[:1] in (["the"], ["a"]) else core
    return words in (full, core, bare)


def check_retitle_scans(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, CHAPBOOK, "chapbook/printer_quote.txt", "colophon.md")
    if changed:
        return False, changed
    for text, title in _TITLE_OF.items():
        held = _held(ws, text)
        if not held:
            return False, f"no file holds the poem {title!r} any more (or it was changed)"
        if len(held) > 1:
            return False, f"the poem {title!r} is in more than one file: {', '.join(held)}"
        path = PurePosixPath(held[0])
        if path.parent.as_posix() != "chapbook":
            return False, f"the poem {title!r} is at {held[0]}, not in chapbook/"
        if path.suffix != ".txt":
            return False, f"{held[0]} lost its .txt ending"
        if not _names_title(path.stem, title):
            return False, f"{held[0]} holds the poem {title!r}, but its name is not that title"
    return True, "each poem in chapbook/ is named after its title"


_PARTS = {
    "act_one": ("Act One", "INT. DAME TROT'S KITCHEN - MORNING", "DAME TROT",
                ("Hiya, boys and girls! Has anyone seen my goose?", "Hello, boys and girls! Where's that goose got to?",
                 "Oh, hiya! You lot haven't pinched my goose, have you?")),
    "act_two": ("Act Two", "EXT. PUDDING LANE - NIGHT", "SQUIRE GRABBIT",
                ("The golden eggs will be mine by midnight!", "By midnight, every golden egg will be mine!",
                 "Midnight, and then the eggs are mine! Mine, I say!")),
    "finale": ("Finale", "INT. THE VILLAGE HALL - WALKDOWN", "COMPANY",
               ("And that's the tale of the Goose of Pudding Lane!",)),
}
_VERSIONS = {"act_one": (1, 2, 3), "act_two": (8, 9, 10), "finale": (1,)}
_NEWEST = {part: max(numbers) for part, numbers in _VERSIONS.items()}


def _draft(part: str, version: int) -> str:
    heading, scene, who, lines = _PARTS[part]
    line = lines[_VERSIONS[part].index(version) % len(lines)]
    return (f"Title: The Goose of Pudding Lane\nDraft: {heading}, version {version}\n\n{scene}\n\n{who}\n{line}\n"
            + ("\n(The goose honks. Blackout.)\n" if version == _NEWEST[part] else ""))


PANTO_DRAFTS = {f"panto/{part}_v{v}.fountain": _draft(part, v) for part, numbers in _VERSIONS.items()
                for v in numbers}
PANTO = {
    **PANTO_DRAFTS,
    "panto/props_list.txt": "one goose costume (dry-cleaned), a golden egg, a rolling pin, the ladder\n",
    "box_office.md": "Three shows: Friday 7pm, Saturday 2pm and 7pm. Tickets 8 pounds, children 5.\n",
}


def _part_version(rel: str) -> tuple[str, int]:
    """A draft's part and version, from its name (panto/act_two_v10.fountain: act_two, 10)."""
    part, _, version = PurePosixPath(rel).stem.rpartition("_v")
    return part, int(version)


def check_latest_drafts(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, PANTO, "panto/props_list.txt", "box_office.md")
    if changed:
        return False, changed
    for rel, text in PANTO_DRAFTS.items():
        part, version = _part_version(rel)
        held = _held(ws, text)
        if version != _NEWEST[part]:
            if held:
                return False, f"the old draft {PurePosixPath(rel).name} is still there (at {', '.join(held)})"
            continue
        if not held:
            return False, f"the newest draft {PurePosixPath(rel).name} is gone (or was changed)"
        if len(held) > 1:
            return False, f"the newest draft {PurePosixPath(rel).name} is in more than one file: {', '.join(held)}"
        path = PurePosixPath(held[0])
        if path.parent.as_posix() != "panto" or not path.name.startswith(part) or path.suffix != ".fountain":
            return False, f"the newest draft {PurePosixPath(rel).name} is at {held[0]}"
    return True, "only the newest draft of each part is left in panto/"


# ---- questions about code ----

AIRWAVES = {
    "airwaves.crontab": (
        "# m   h    dom mon dow  command\n"
        "*/15  *    *   *   *    cd /srv/airwaves && python3 check_stream.py\n"
        "0     6    *   *   1-5  cd /srv/airwaves && python3 morning_ident.py\n"
        "30    2    *   *   0    cd /srv/airwaves && python3 prune_recordings.py --older-than 30\n"
        "0     */4  *   *   *    cd /srv/airwaves && python3 shuffle_playlist.py\n"
    ),
    "prune_recordings.py": (
        "import argparse\nimport time\nfrom pathlib import Path\n\n"
        "parser = argparse.ArgumentParser(description='Delete recorded shows older than a number of days.')\n"
        "parser.add_argument('--older-than', type=int, default=60, metavar='DAYS')\n"
        "args = parser.parse_args()\n\n"
        "cutoff = time.time() - args.older_than * 86400\n"
        "for show in Path('recordings').glob('*.mp3'):\n"
        "    if show.stat().st_mtime < cutoff:\n"
        "        show.unlink()\n"
        "        print(f'deleted {show.name}')\n"
    ),
    "check_stream.py": (
        "import urllib.request\n\n"
        "with urllib.request.urlopen('http://localhost:8000/live', timeout=5) as r:\n"
        "    print('stream up' if r.status == 200 else f'stream down ({r.status})')\n"
    ),
    "presenters.md": "Breakfast: Nia. Drivetime: Tomasz. Sunday folk hour: Bridget and the dog.\n",
}
_SUNDAY = re.compile(r"\bsun(day)?s?\b", re.I)
_HALF_TWO = re.compile(r"(?<![\d:.])0?2\s*[:.h]\s*30(?!\d)|\bhalf\s+past\s+(two|2)\b", re.I)
_AFTERNOON = re.compile(r"(?<![\d:.])(0?2\s*[:.h]?\s*30\s*p\.?m\b|14\s*[:.h]\s*30)|\bhalf\s+past\s+two\s+in\s+the\s+"
                        r"afternoon", re.I)


def check_cron_when(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    if not _SUNDAY.search(answer):
        return False, f"the answer does not say Sundays: {short(answer)}"
    if not _HALF_TWO.search(answer) or _AFTERNOON.search(answer):
        return False, f"the answer does not say 2:30 in the night: {short(answer)}"
    return verdict(unchanged(ws, AIRWAVES, *AIRWAVES), "the answer says Sundays at 2:30")


HENCOOP = {
    "coop_uplink.py": (
        "import time\n\n"
        "from hencoop.barn_link import send_counts\n"
        "from hencoop.roost_settings import FIRST_WAIT_S, TRIES, WAIT_GROWTH\n\n\n"
        "def upload(counts):\n"
        "    wait = FIRST_WAIT_S\n"
        "    for attempt in range(1, TRIES + 1):\n"
        "        if send_counts(counts):\n"
        "            print(f'sent on try {attempt}')\n"
        "            return True\n"
        "        if attempt < TRIES:\n"
        "            time.sleep(wait)\n"
        "            wait *= WAIT_GROWTH\n"
        "    print('gave up, will try again tomorrow')\n"
        "    return False\n\n\n"
        "if __name__ == '__main__':\n"
        "    with open('egg_tally.csv') as f:\n"
        "        upload(f.read())\n"
    ),
    "hencoop/__init__.py": "",
    "hencoop/roost_settings.py": (
        "BASE_STATION = 'http://barn-pi.local:8000/eggs'\n"
        "HENS = ['Mabel', 'Speckles', 'Duchess', 'Pepper']\n\n"
        "# retrying when the base station cannot be reached\n"
        "TRIES = 5\n"
        "FIRST_WAIT_S = 2\n"
        "WAIT_GROWTH = 3\n"
    ),
    "hencoop/barn_link.py": (
        "import urllib.request\n\n"
        "from hencoop.roost_settings import BASE_STATION\n\n\n"
        "def send_counts(counts):\n"
        "    \"\"\"One try at posting the counts; False when the base station cannot be reached.\"\"\"\n"
        "    try:\n"
        "        urllib.request.urlopen(BASE_STATION, data=counts.encode())\n"
        "        return True\n"
        "    except OSError:\n"
        "        return False\n"
    ),
    "egg_tally.csv": "day,Mabel,Speckles,Duchess,Pepper\nmon,1,1,0,1\ntue,1,0,1,1\n",
}
_WRONG_TOTALS = re.compile(r"(?<![\d.])(242|162|26|forever|indefinitely|never gives up)(?![\d.])", re.I)


def check_retry_total(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    wrong = _WRONG_TOTALS.search(answer)
    if wrong:
        return False, f"the answer gives another total ({wrong.group()}): {short(answer)}"
    if not re.search(r"(?<![\d.])80(?![\d.])|\b(1|one)\s*min(ute)?s?,?\s*(and\s+)?20\s*s|(?<![\d:])1:20(?!\d)",
                     answer, re.I):
        return False, f"the answer does not say 80 seconds: {short(answer)}"
    return verdict(unchanged(ws, HENCOOP, *HENCOOP), "the answer says it waits 80 seconds in all")


# ---- edits of several lines ----

LIFEBOAT_CSS = """/* Porthkennack lifeboat station */
body {
  font-family: Georgia, serif;
  color: #222;
  background: #fdfaf5;
}

header {
  background: #e8751a;
  color: #fff;
  padding: 1rem 2rem;
}

a {
  color: #E8751A;
}

a:hover {
  text-decoration: underline;
}

.donate-button {
  background: #e8751a;
  color: white;
  border-radius: 4px;
  box-shadow: 0 2px 6px rgba(232, 117, 26, 0.35);
}

.shout-out {
  border-left: 4px solid #e8751a;
  padding-left: 1em;
}

.tide-warning {
  background: #f5c542;
  color: #222;
}

footer {
  color: #777;
  border-top: 1px solid #ddd;
}
"""
LIFEBOAT_HTML = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="theme-color" content="#e8751a">
  <title>Porthkennack Lifeboat Station</title>
  <link rel="stylesheet" href="lifeboat.css">
</head>
<body>
  <header><h1>Porthkennack Lifeboat Station</h1></header>
  <p class="shout-out">Last shout: a kayaker cut off by the tide below the point, 14 August.</p>
  <p class="tide-warning">Spring tides this week: the slipway floods at high water.</p>
  <a class="donate-button" href="https://example.org/donate">Donate to the crew</a>
  <footer>Open days on the first Sunday of the month</footer>
</body>
</html>
"""
LIFEBOAT = {
    "lifeboat_site/lifeboat.css": LIFEBOAT_CSS,
    "lifeboat_site/lifeboat_home.html": LIFEBOAT_HTML,
    "lifeboat_site/shouts_this_year.md": "Launches this year: 23. Longest shout: 9 hours, a yacht with a fouled "
                                         "propeller.\n",
}
_TEAL = "#1a7f7a"
_ORANGES = (("#e8751a", _TEAL), ("#E8751A", _TEAL), ("rgba(232, 117, 26, 0.35)", "rgba(26, 127, 122, 0.35)"))
_COLOR = re.compile(r"#[0-9a-f]{3,8}\b|rgba?\([^)]*\)", re.I)


def _rgba(token: str) -> tuple[int, int, int, float] | None:
    """A CSS colour written as hex or rgb()/rgba(), as its channels; None if it is neither."""
    if token.startswith("#"):
        digits = token[1:]
        if len(digits) in (3, 4):
            digits = "".join(c * 2 for c in digits)
        if len(digits) == 6:
            digits += "ff"
        if len(digits) != 8:
            return None
        r, g, b, opacity = (int(digits[i:i + 2], 16) for i in (0, 2, 4, 6))
        return r, g, b, round(opacity / 255, 2)
    parts = [p for p in re.split(r"[\s,/]+", token[token.index("(") + 1:-1]) if p]
    if len(parts) not in (3, 4):
        return None
    try:
        rgb = [round(float(p[:-1]) * 2.55) if p.endswith("%") else round(float(p)) for p in parts[:3]]
        alpha = parts[3] if len(parts) == 4 else "1"
        a = float(alpha[:-1]) / 100 if alpha.endswith("%") else float(alpha)
    except ValueError:
        return None
    return rgb[0], rgb[1], rgb[2], round(a, 2)


def _canon(value: str) -> str:
    """A CSS value (or any text) with its colours written one way, spaces collapsed, lower-cased."""
    def one(m: re.Match[str]) -> str:
        c = _rgba(m.group())
        return m.group() if c is None else f"rgba({c[0]},{c[1]},{c[2]},{c[3]:.2f})"
    return " ".join(_COLOR.sub(one, value).split()).lower()


def _rules(css: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """A stylesheet's rules as (selector, [(property, value)]): comments left out, custom
    properties of :root put in where var() uses them."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    raw = [(" ".join(sel.split()), [(p.strip().lower(), v.strip()) for p, v in
                                    (d.split(":", 1) for d in body.split(";") if ":" in d)])
           for sel, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css)]
    custom = {p: v for sel, decls in raw if sel in (":root", "html") for p, v in decls if p.startswith("--")}

    def resolved(value: str) -> str:
        for _ in range(3):
            value = re.sub(r"var\(\s*(--[\w-]+)\s*(?:,[^)]*)?\)", lambda m: custom.get(m.group(1), m.group()), value)
        return _canon(value)
    rules = [(sel, [(p, resolved(v)) for p, v in decls if not p.startswith("--")]) for sel, decls in raw]
    return [(sel, decls) for sel, decls in rules if decls]


def _recoloured(text: str) -> str:
    for old, new in _ORANGES:
        text = text.replace(old, new)
    return text


_ORANGE = "rgba(232,117,26,"


def check_recolour(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, LIFEBOAT, "lifeboat_site/shouts_this_year.md")
    if changed:
        return False, changed
    css = read(ws, "lifeboat_site/lifeboat.css")
    html = read(ws, "lifeboat_site/lifeboat_home.html")
    if css is None or html is None:
        return False, "lifeboat.css or lifeboat_home.html is gone"
    now, want = _rules(css), _rules(_recoloured(LIFEBOAT_CSS))
    for sel, decls in now:
        for prop, value in decls:
            if _ORANGE in value:
                return False, f"lifeboat.css's {sel} {{{prop}}} is still orange"
    if now != want:
        diff = next((f"{sel} is now {short(str(decls))}" for (sel, decls), w in zip(now, want, strict=False)
                     if (sel, decls) != w), f"it has {len(now)} rules, not {len(want)}")
        return False, f"lifeboat.css is not the old one in teal: {diff}"
    if _ORANGE in _canon(html):
        return False, "lifeboat_home.html still has the orange"
    if _canon(html) != _canon(_recoloured(LIFEBOAT_HTML)):
        return False, "lifeboat_home.html changed beyond its colour"
    return True, "every orange on the site is #1a7f7a, with the rest as it was"


AQUARIUM = {
    "aquarium/__init__.py": "",
    "aquarium/dosing.py": (
        "def salt_grams(litres):\n"
        "    \"\"\"Aquarium salt for a tank: 2.5 g a litre.\"\"\"\n"
        "    return round(litres * 2.5, 1)\n\n\n"
        "def conditioner_ml(litres):\n"
        "    \"\"\"Water conditioner: 5 ml for every 50 litres.\"\"\"\n"
        "    return round(litres / 10, 1)\n\n\n"
        "def water_change(litres, percent=25):\n"
        "    \"\"\"Litres to take out for a partial water change.\"\"\"\n"
        "    return round(litres * percent / 100, 1)\n"
    ),
    "tank_calc.py": (
        "import sys\n\n"
        "from aquarium.dosing import conditioner_ml, salt_grams, water_change\n\n"
        "litres = float(sys.argv[1])\n"
        "print(f'salt: {salt_grams(litres)} g')\n"
        "print(f'conditioner: {conditioner_ml(litres)} ml')\n"
        "print(f'weekly change: {water_change(litres)} l')\n"
    ),
    "fish_list.md": "Six neon tetras, three Corydoras, one grumpy snail called Gerald.\n",
}
_GOOD_CALLS: tuple[tuple[str, tuple[float, ...], float], ...] = (
    ("salt_grams", (120,), round(120 * 2.5, 1)), ("salt_grams", (0.5,), round(0.5 * 2.5, 1)),
    ("conditioner_ml", (33.3,), round(33.3 / 10, 1)), ("conditioner_ml", (0.5,), round(0.5 / 10, 1)),
    ("water_change", (120,), round(120 * 25 / 100, 1)), ("water_change", (120, 50), round(120 * 50 / 100, 1)),
    ("water_change", (0.5,), round(0.5 * 25 / 100, 1)),
)
_BAD_CALLS: tuple[tuple[str, tuple[float, ...]], ...] = tuple(
    (name, (litres,)) for name in ("salt_grams", "conditioner_ml", "water_change") for litres in (0, -40, -0.5)
) + (("water_change", (-40, 50)),)
_PROBE = (
    "import json\nfrom aquarium import dosing\nout = []\n"
    "for name, args in json.loads({calls!r}):\n"
    "    try:\n        out.append(['ok', getattr(dosing, name)(*args)])\n"
    "    except Exception as exc:\n"
    "        out.append(['ValueError' if isinstance(exc, ValueError) else type(exc).__name__, str(exc)])\n"
    "print(json.dumps(out))\n"
)


def check_reject_negative(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, AQUARIUM, "tank_calc.py", "fish_list.md")
    if changed:
        return False, changed
    calls = [(name, list(args)) for name, args, _ in _GOOD_CALLS] + [(name, list(args)) for name, args in _BAD_CALLS]
    done = run_py(ws, "-B", "-c", _PROBE.format(calls=json.dumps(calls)))
    if done.returncode != 0:
        return False, f"aquarium.dosing cannot be used: {short(done.stderr or done.stdout)}"
    try:
        got = json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return False, f"aquarium.dosing prints as it is imported: {short(done.stdout)}"
    for (name, args, want), (kind, value) in zip(_GOOD_CALLS, got, strict=False):
        shown = f"{name}({', '.join(map(str, args))})"
        if kind != "ok":
            return False, f"{shown} raises {kind} ({short(str(value))})"
        if value != want:
            return False, f"{shown} gives {value!r}, not {want!r}"
    for (name, args), (kind, value) in zip(_BAD_CALLS, got[len(_GOOD_CALLS):], strict=False):
        shown = f"{name}({', '.join(map(str, args))})"
        if kind != "ValueError":
            return False, f"{shown} gives {value!r}" if kind == "ok" else f"{shown} raises {kind}, not ValueError"
    return True, "each dosing function raises ValueError for no or negative litres, and works as before otherwise"


# ---- two-step jobs ----

_HB = "makerspace_handbook"
HANDBOOK_PAGES = {
    f"{_HB}/joining_fees.md": "# Joining\n\nMembership is 15 pounds a month, or 8 for students. Ask a keyholder for a "
                            "fob.\n",
    f"{_HB}/safety/laser_cutter.md": "# Laser cutter\n\nNever leave it running unattended. No PVC, ever: it gives "
                                     "off chlorine.\n",
    f"{_HB}/safety/lathe.md": "# Wood lathe\n\nTie long hair back and take off rings.\n\n## Changing the chuck\n\n"
                              "Unplug it first. The chuck key lives on the magnet, never in the chuck.\n",
    f"{_HB}/benches/soldering.md": "# Soldering\n\nTurn the iron off and put the fume extractor on. Leaded solder "
                                  "is in the red tub.\n",
    f"{_HB}/benches/resin_printers.md": "# Resin printers\n\nGloves on. Wash prints in the IPA station, cure them "
                                       "in the UV box.\n",
}
_START = (
    "# Makerspace handbook\n\nStart here if you're new to the space.\n\n"
    "- [Joining and fees](joining_fees.md)\n"
    "- [Laser cutter induction](laser_cutter.md)\n"
    "- [Wood lathe: changing the chuck](lathe.md#changing-the-chuck)\n"
    "- [Soldering station](soldering.md)\n"
    "- [Resin printers](benches/resin_printers.md)\n"
    "- [Members' forum](https://forum.example.org/makerspace)\n\n"
    "Questions? Ask whoever has the keys tonight.\n"
)
HANDBOOK = {
    f"{_HB}/start_here.md": _START,
    **HANDBOOK_PAGES,
    "keyholders.txt": "Mon: Ayo. Wed: Freya. Thu: Ruth. Sat: whoever is first.\n",
}
_LINK = re.compile(r"\[([^\]]+)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_LINKS = {
    "Joining and fees": f"{_HB}/joining_fees.md",
    "Laser cutter induction": f"{_HB}/safety/laser_cutter.md",
    "Wood lathe: changing the chuck": f"{_HB}/safety/lathe.md#changing-the-chuck",
    "Soldering station": f"{_HB}/benches/soldering.md",
    "Resin printers": f"{_HB}/benches/resin_printers.md",
    "Members' forum": "https://forum.example.org/makerspace",
}


def _unlinked(text: str) -> str:
    return " ".join(_LINK.sub(r"[\1]", text).split())


def check_moved_links(ws: Path, answer: str) -> Verdict:
    for rel in (*HANDBOOK_PAGES, "keyholders.txt"):
        if read(ws, rel) != HANDBOOK[rel]:
            return False, f"{rel} was moved or changed, and should not have been"
    text = read(ws, f"{_HB}/start_here.md")
    if text is None:
        return False, "start_here.md is gone"
    if _unlinked(text) != _unlinked(_START):
        return False, "start_here.md changed beyond its links' targets"
    seen: set[str] = set()
    for m in _LINK.finditer(text):
        label, target = m.group(1), m.group(2)
        want = _LINKS.get(label)
        if want is None:
            continue
        seen.add(label)
        if want.startswith("https:"):
            if target != want:
                return False, f"the link {label!r} was changed to {target!r}"
            continue
        path, _, anchor = unquote(target).partition("#")
        where = posixpath.normpath(posixpath.join(_HB, path)) if path else ""
        want_path, _, want_anchor = want.partition("#")
        if where != want_path:
            return False, f"the link {label!r} points at {target!r}, not at {PurePosixPath(want_path).name} where it is"
        if anchor != want_anchor:
            return False, f"the link {label!r} lost its #{want_anchor}" if want_anchor else f"the link {label!r} " \
                                                                                            f"has an anchor #{anchor}"
    missing = [label for label in _LINKS if label not in seen]
    if missing:
        return False, f"start_here.md no longer links {missing[0]!r}"
    return True, "every link on start_here.md leads to its page where it is now"


QSO_LOG = {
    "contest_score.py": (
        "import sys\n\n"
        "from qso_log.adif import callsign, read_adif\n"
        "from qso_log.band_plan import band_of\n"
        "from qso_log.dupe_check import drop_dupes\n\n"
        "POINTS = {'CW': 3, 'SSB': 1, 'FT8': 1}\n"
        "# TODO: read the multipliers from the contest rules instead of counting bands\n\n\n"
        "def score(records):\n"
        "    for record in records:\n"
        "        record['band'] = band_of(float(record['freq']))\n"
        "        record['call'] = callsign(record)\n"
        "    records = drop_dupes(records)\n"
        "    total = sum(POINTS.get(r['mode'], 0) for r in records)\n"
        "    bands = {r['band'] for r in records}\n"
        "    # FIXME: multipliers should count each band and mode, not each band alone\n"
        "    return total * len(bands), len(records)\n\n\n"
        "if __name__ == '__main__':\n"
        "    points, contacts = score(read_adif(sys.argv[1] if len(sys.argv) > 1 else 'field_day.adi'))\n"
        "    print(f'{contacts} contacts, {points} points')\n"
    ),
    "qso_log/__init__.py": "",
    "qso_log/adif.py": (
        "\"\"\"Reading the ADIF file the logging program exports.\"\"\"\n\n"
        "import re\n\n"
        "FIELD = re.compile(r'<(\\w+)(?::\\d+)?>([^<]*)', re.I)\n\n\n"
        "def read_adif(path):\n"
        "    records, current = [], {}\n"
        "    with open(path) as f:\n"
        "        text = f.read()\n"
        "    # FIXME: the header before the end-of-header tag is read as if it were a contact\n"
        "    for name, value in FIELD.findall(text):\n"
        "        if name.lower() == 'eor':\n"
        "            records.append(current)\n"
        "            current = {}\n"
        "        else:\n"
        "            current[name.lower()] = value.strip()\n"
        "    return records\n\n\n"
        "def callsign(record):\n"
        "    return record['call'].upper()  # FIXME: portable suffixes like /P should be stripped\n"
    ),
    "qso_log/band_plan.py": (
        "BANDS = (\n"
        "    ('160m', 1.8, 2.0),\n"
        "    ('80m', 3.5, 3.8),\n"
        "    ('40m', 7.0, 7.2),\n"
        "    ('20m', 14.0, 14.35),\n"
        "    ('2m', 144.0, 146.0),\n"
        ")\n\n\n"
        "def band_of(mhz):\n"
        "    for name, low, high in BANDS:\n"
        "        if low <= mhz <= high:\n"
        "            return name\n"
        "    # FIXME: out-of-band contacts should be flagged, not quietly dropped\n"
        "    return None\n"
    ),
    "qso_log/dupe_check.py": (
        "def drop_dupes(records):\n"
        "    \"\"\"A station worked twice on the same band and mode scores once.\"\"\"\n"
        "    seen, kept = set(), []\n"
        "    for record in records:\n"
        "        key = (record['call'], record['band'], record['mode'])  # TODO: count dupes per day for sprints\n"
        "        if key in seen:\n"
        "            continue\n"
        "        seen.add(key)\n"
        "        kept.append(record)\n"
        "    return kept\n"
    ),
    "operating_notes.md": "Field day is the last full weekend in June. Submit the log by the Friday after.\n",
}
_QSO_SOURCES = tuple(rel for rel in QSO_LOG if rel.endswith(".py"))


def _marked(word: str) -> set[tuple[str, int]]:
    return {(rel, n) for rel in _QSO_SOURCES for n, line in enumerate(QSO_LOG[rel].splitlines(), 1) if word in line}


_FIXMES, _TODOS = _marked("FIXME"), _marked("TODO")
_MENTION = re.compile(r"(?<![\w.])(?:\./)?(?:qso_log/)?(contest_score|adif|band_plan|dupe_check|__init__)\.py(?!\w)")


def _module(m: re.Match[str]) -> str:
    return f"{m.group(1)}.py" if m.group(1) == "contest_score" else f"qso_log/{m.group(1)}.py"


def _listed(text: str) -> set[tuple[str, int]]:
    """The (file, line) pairs a list names: a line's numbers go with the file it names (with
    the one before each when it names several), or with the last file named above it."""
    pairs: set[tuple[str, int]] = set()
    current: str | None = None
    for line in text.splitlines():
        line = re.sub(r"^\s*(?:\d+[.)]|[-*+])\s+", "", line)
        mentions = list(_MENTION.finditer(line))
        cuts = [m.start() for m in mentions] + [len(line)]
        if len({_module(m) for m in mentions}) > 1:
            for m, end in zip(mentions, cuts[1:], strict=True):
                pairs |= {(_module(m), int(n)) for n in re.findall(r"(?<![\d.])\d+(?!\d)", line[m.end():end])}
            current = _module(mentions[-1])
            continue
        if mentions:
            current = _module(mentions[0])
        if current:
            rest = _MENTION.sub(" ", line)
            pairs |= {(current, int(n)) for n in re.findall(r"(?<![\d.])\d+(?!\d)", rest)}
    return pairs


def check_fixme_list(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, QSO_LOG, *QSO_LOG)
    if changed:
        return False, changed
    found = [rel for rel in files_under(ws) if rel.lower() == "fixmes.md"]
    if not found:
        return False, "there is no fixmes.md"
    listed = _listed(read(ws, found[0]) or "")
    missing = sorted(_FIXMES - listed)
    if missing:
        return False, f"fixmes.md does not list {missing[0][0]} line {missing[0][1]}"
    todos = sorted(listed & _TODOS)
    if todos:
        return False, f"fixmes.md lists the TODO at {todos[0][0]} line {todos[0][1]}, which is no FIXME"
    if len(listed - _FIXMES) >= len(_FIXMES):
        return False, f"fixmes.md lists lines that hold no FIXME: {sorted(listed - _FIXMES)[:3]}"
    return True, "fixmes.md lists each FIXME's file and line"


# ---- jobs on a file the request does not name ----

CARAVAN = {
    "pitch_bookings.py": (
        "from caravan.calendar_rules import valid_date\n\n"
        "with open('booking_requests.txt') as f:\n"
        "    for line in f:\n"
        "        if not line.strip():\n"
        "            continue\n"
        "        day, pitch, name = line.split(maxsplit=2)\n"
        "        if valid_date(day):\n"
        "            print(f'{day} pitch {pitch}: booked for {name.strip()}')\n"
        "        else:\n"
        "            print(f'{day} pitch {pitch}: no such date')\n"
    ),
    "caravan/__init__.py": "",
    "caravan/calendar_rules.py": (
        "MONTH_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]\n\n\n"
        "def is_leap(year):\n"
        "    return year % 4 == 0 and year % 100 == 0\n\n\n"
        "def days_in(year, month):\n"
        "    if month == 2 and is_leap(year):\n"
        "        return 29\n"
        "    return MONTH_DAYS[month - 1]\n\n\n"
        "def valid_date(text):\n"
        "    year, month, day = (int(part) for part in text.split('-'))\n"
        "    return 1 <= month <= 12 and 1 <= day <= days_in(year, month)\n"
    ),
    "booking_requests.txt": "2027-08-14 12 The Abernethys\n2028-02-29 7 Priya and Sol\n2027-06-31 3 K. Osei\n",
    "site_rules.md": "Quiet after 10pm. One car per pitch. Dogs on leads by the duck pond.\n",
}
_OTHER_REQUESTS = ("2024-02-29 1 Ada", "2023-02-29 2 Bo", "2000-02-29 3 Cy", "2100-02-29 4 Di", "1900-02-29 5 Ed",
                   "2032-02-29 6 Flo", "2027-02-28 7 Gus", "2026-04-31 8 Hal", "2026-13-01 9 Ivy", "2400-02-29 10 Jo")


def _booked(requests: tuple[str, ...]) -> str:
    out = []
    for line in requests:
        day, pitch, name = line.split(maxsplit=2)
        year, month, date = (int(part) for part in day.split("-"))
        ok = 1 <= month <= 12 and 1 <= date <= calendar.monthrange(year, month)[1]
        out.append(f"{day} pitch {pitch}: booked for {name}" if ok else f"{day} pitch {pitch}: no such date")
    return "\n".join(out)


def check_leap_day(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, CARAVAN, "booking_requests.txt", "site_rules.md")
    if changed:
        return False, changed
    with copy_of(ws) as copy:
        (copy / "booking_requests.txt").write_text("\n".join(_OTHER_REQUESTS) + "\n")
        wrong = prints(copy, ["pitch_bookings.py"], _booked(_OTHER_REQUESTS))
    if wrong:
        return False, f"with other requests: {wrong}"
    return True, "29 February is bookable in leap years (2000 and 2028, not 1900 or 2100) and in no others"


_FOUND = (
    {"ref": "LP-0412", "found_on": "2025-05-02", "where": "platform 2", "description": "Umbrella, green, duck-head "
                                                                                      "handle"},
    {"ref": "LP-0413", "found_on": "2025-05-02", "where": "waiting room", "description": "Library book (The Secret "
                                                                                        "Garden)"},
    {"ref": "LP-0414", "found_on": "2025-05-04", "where": "ticket hall", "description": "One glove, left hand, grey "
                                                                                       "wool"},
)
LOST_PROPERTY = {
    "lost_property.py": (
        "from lostprop.claim_book import load_items\n"
        "from lostprop.found_sheet import write_sheet\n\n"
        "items = load_items('found_ledger.json')\n"
        "write_sheet(items, 'found_items.csv')\n"
        "print(f'wrote {len(items)} items to found_items.csv')\n"
    ),
    "lostprop/__init__.py": "",
    "lostprop/claim_book.py": (
        "import json\n\n\n"
        "def load_items(path):\n"
        "    with open(path, encoding='utf-8') as f:\n"
        "        return json.load(f)\n"
    ),
    "lostprop/found_sheet.py": (
        "COLUMNS = ('ref', 'found_on', 'where', 'description')\n\n\n"
        "def write_sheet(items, path):\n"
        "    with open(path, 'w', encoding='utf-8') as f:\n"
        "        f.write(','.join(COLUMNS) + '\\n')\n"
        "        for item in items:\n"
        "            f.write(','.join(str(item[column]) for column in COLUMNS) + '\\n')\n"
    ),
    "found_ledger.json": json.dumps(list(_FOUND), indent=2) + "\n",
    "desk_hours.txt": "The desk is open 9 to 5 on weekdays; items are kept for three months.\n",
}
# Other items, written in a copy: commas where they were found too, quotes, a plain one.
_OTHER_FOUND = (
    {"ref": "LP-0500", "found_on": "2025-06-01", "where": "bus stop, Mill Lane", "description": "Scooter"},
    {"ref": "LP-0501", "found_on": "2025-06-01", "where": "platform 1", "description": "Mug saying \"Best Nan\", "
                                                                                      "chipped"},
    {"ref": "LP-0502", "found_on": "2025-06-03", "where": "cafe", "description": "Keys (three, on a ring)"},
    {"ref": "LP-0503", "found_on": "2025-06-03", "where": "footbridge, north end", "description": "Hat, straw, "
                                                                                                  "with ribbon"},
)
_COLUMNS = ("ref", "found_on", "where", "description")


def check_comma_cells(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, LOST_PROPERTY, "found_ledger.json", "desk_hours.txt")
    if changed:
        return False, changed
    want = [list(_COLUMNS), *([item[c] for c in _COLUMNS] for item in _OTHER_FOUND)]
    with copy_of(ws) as copy:
        (copy / "found_ledger.json").write_text(json.dumps(list(_OTHER_FOUND), indent=2) + "\n")
        (copy / "found_items.csv").unlink(missing_ok=True)
        done = run_py(copy, "lost_property.py")
        sheet = read(copy, "found_items.csv")
    if done.returncode != 0:
        return False, f"python3 lost_property.py fails: {short(done.stderr or done.stdout)}"
    if sheet is None:
        return False, "python3 lost_property.py writes no found_items.csv"
    rows = [row for row in csv.reader(io.StringIO(sheet, newline="")) if row]
    if rows != want:
        bad = next((row for row, w in zip(rows, want, strict=False) if row != w), rows[len(want):] or "rows missing")
        return False, f"with other items, found_items.csv does not read back as they were: {short(str(bad))}"
    return True, "found_items.csv reads back cell for cell, commas and quotes and all"


HELD_OUT_11: tuple[Task, ...] = (
    Task("retitle_scans", CHAPBOOK, "the poems in chapbook/ are all called scan_0113.txt etc which tells me nothing. "
         "can you rename each one after the poem's title", check_retitle_scans),
    Task("latest_drafts", PANTO, "Could you clear the old drafts out of the panto folder? I only need the latest "
         "version of each part, the older ones can be deleted.", check_latest_drafts),
    Task("cron_when", AIRWAVES, "how often do the old recorded shows get deleted off the server, and what time of day "
         "does that happen", check_cron_when),
    Task("retry_total", HENCOOP, "if the wifi in the hen house is down, how long does the egg uploader keep "
         "retrying before it gives up?", check_retry_total),
    Task("recolour", LIFEBOAT, "we've rebranded, orange is out. swap the orange on the lifeboat site for teal "
         "#1a7f7a everywhere its used", check_recolour),
    Task("reject_negative", AQUARIUM, "dosing.py will happily work out doses for a tank of -40 litres. make every "
         "function in it raise a ValueError if litres is zero or negative", check_reject_negative),
    Task("moved_links", HANDBOOK, "I moved the makerspace handbook pages into subfolders and now some of the links "
         "on start_here.md go nowhere. Could you find the broken ones and point them at the right files?",
         check_moved_links),
    Task("fixme_list", QSO_LOG, "go through the logger code and put every FIXME into a new fixmes.md, with the file "
         "and line number of each so i can work thru them", check_fixme_list),
    Task("leap_day", CARAVAN, "someone wants pitch 7 on 29 feb 2028 and the bookings say no such date?? 2028 is a "
         "leap year", check_leap_day),
    Task("comma_cells", LOST_PROPERTY, "The lost property spreadsheet goes wrong whenever a description has a comma "
         "in it - everything after the comma ends up in the next column. Can you fix that please?", check_comma_cells),
)

# The words that make each job itself: the product's sources must not hold any of them as a
# word (tests/test_eval.py), nor may any other job's prompt or fixture.
WORDS_11: dict[str, tuple[str, ...]] = {
    "retitle_scans": ("chapbook", "Saltmarsh", "Cormorant", "Risograph", "colophon"),
    "latest_drafts": ("panto", "fountain", "Pudding", "box_office", "Trot"),
    "cron_when": ("airwaves", "crontab", "prune_recordings", "check_stream", "presenters"),
    "retry_total": ("hencoop", "coop_uplink", "egg_tally", "WAIT_GROWTH", "Speckles"),
    "recolour": ("lifeboat", "Porthkennack", "slipway", "donate-button", "e8751a"),
    "reject_negative": ("dosing", "tank_calc", "conditioner", "Corydoras", "salt_grams"),
    "moved_links": ("makerspace", "start_here", "keyholders", "lathe", "soldering"),
    "fixme_list": ("qso_log", "contest_score", "adif", "callsign", "field_day"),
    "leap_day": ("caravan", "calendar_rules", "pitch_bookings", "booking_requests", "Abernethys"),
    "comma_cells": ("lostprop", "lost_property", "found_ledger", "desk_hours", "duck-head"),
}


# ---- what right and nearly right runs do ----


def _retitle(name: Callable[[str], str] = lambda title: re.sub(r"\W+", "_", title.split(" (")[0].lower()) + ".txt",
             which: tuple[int, ...] = tuple(range(len(_POEMS))), folder: str = "chapbook",
             keep: bool = False) -> Callable[[Path], None]:
    """The poems numbered in `which` given the `name` of their title in `folder` (copied,
    with `keep`)."""
    def change(ws: Path) -> None:
        (ws / folder).mkdir(parents=True, exist_ok=True)
        for n in which:
            scan, title, _ = _POEMS[n]
            old = ws / f"chapbook/{scan}.txt"
            (ws / folder / name(title)).write_text(old.read_text())
            if not keep:
                old.unlink()
    return change


def _prune(keep: Callable[[str, int], bool] = lambda part, v: v == _NEWEST[part],
           into: str | None = None) -> Callable[[Path], None]:
    """The drafts `keep` refuses deleted (moved into `into`, when given)."""
    def change(ws: Path) -> None:
        for rel in PANTO_DRAFTS:
            part, version = _part_version(rel)
            if keep(part, version):
                continue
            if into:
                (ws / into).mkdir(parents=True, exist_ok=True)
                (ws / rel).rename(ws / into / PurePosixPath(rel).name)
            else:
                (ws / rel).unlink()
    return change


def _css(*pairs: tuple[str, str], html: bool = True) -> Callable[[Path], None]:
    """Each (old, new) of `pairs` replaced in lifeboat.css (and the theme colour in the
    page, with `html`)."""
    def change(ws: Path) -> None:
        for old, new in pairs:
            sub(ws, "lifeboat_site/lifeboat.css", old, new)
        if html:
            sub(ws, "lifeboat_site/lifeboat_home.html", "#e8751a", _TEAL)
    return change


_RECOLOUR = _css(*_ORANGES)


def _guard(names: tuple[str, ...] = ("salt_grams", "conditioner_ml", "water_change"),
           check: str = "    if litres <= 0:\n        raise ValueError(f'litres must be above 0, not {litres}')\n",
           ) -> Callable[[Path], None]:
    """`check` put at the top of each of the functions `names`."""
    def change(ws: Path) -> None:
        text = (ws / "aquarium/dosing.py").read_text()
        for name in names:
            doc = re.search(rf"def {name}\(.*\n.*\"\"\"\n", text)
            assert doc, name
            text = text[:doc.end()] + check + text[doc.end():]
        (ws / "aquarium/dosing.py").write_text(text)
    return change


def _relink(**targets: str) -> Callable[[Path], None]:
    """start_here.md's links given new targets: the old target's file name (its stem,
    as a keyword) to the new target."""
    def change(ws: Path) -> None:
        for stem, new in targets.items():
            old = next(t for t in ("joining_fees.md", "laser_cutter.md", "lathe.md#changing-the-chuck", "soldering.md",
                                   "benches/resin_printers.md") if PurePosixPath(t.split("#")[0]).stem == stem)
            sub(ws, f"{_HB}/start_here.md", f"]({old})", f"]({new})")
    return change


_RELINK = _relink(laser_cutter="safety/laser_cutter.md", lathe="safety/lathe.md#changing-the-chuck",
                  soldering="benches/soldering.md")


def _fixmes(text: str | None = None, pairs: set[tuple[str, int]] | None = None, name: str = "fixmes.md",
            fmt: str = "- {rel}:{n}: {note}\n") -> Callable[[Path], None]:
    """fixmes.md (or `name`) written as `text`, or else listing `pairs` (the FIXMEs when
    None) one a line in `fmt`."""
    def change(ws: Path) -> None:
        body = text
        if body is None:
            lines = []
            for rel, n in sorted(_FIXMES if pairs is None else pairs):
                source = QSO_LOG[rel].splitlines()
                note = source[n - 1].split("#", 1)[1].strip() if 0 < n <= len(source) and "#" in source[n - 1] else ""
                lines.append(fmt.format(rel=rel, n=n, note=note))
            body = "# FIXMEs\n\n" + "".join(lines)
        (ws / name).write_text(body)
    return change


def _grep_fixmes(ws: Path) -> None:
    """fixmes.md as `grep -rn FIXME --include=*.py .` would write it."""
    lines = [f"./{rel}:{n}:{QSO_LOG[rel].splitlines()[n - 1]}\n" for rel, n in sorted(_FIXMES)]
    (ws / "fixmes.md").write_text("".join(lines))


_LEAP_OLD = "    return year % 4 == 0 and year % 100 == 0\n"
_WRITE_OLD = ("    with open(path, 'w', encoding='utf-8') as f:\n"
              "        f.write(','.join(COLUMNS) + '\\n')\n"
              "        for item in items:\n"
              "            f.write(','.join(str(item[column]) for column in COLUMNS) + '\\n')\n")


def _sheet(body: str, imports: str = "import csv\n\n") -> Callable[[Path], None]:
    """write_sheet's body made `body`, with `imports` above COLUMNS."""
    return each_of(subbing("lostprop/found_sheet.py", _WRITE_OLD, body),
                   subbing("lostprop/found_sheet.py", "COLUMNS = (", f"{imports}COLUMNS = ("))


_CSV_WRITER = ("    with open(path, 'w', newline='', encoding='utf-8') as f:\n"
               "        writer = csv.writer(f)\n"
               "        writer.writerow(COLUMNS)\n"
               "        for item in items:\n"
               "            writer.writerow([item[column] for column in COLUMNS])\n")


# What a right run of each job does to its workspace, and its answer (tests/test_eval.py
# checks every checker passes it); kept here with the jobs, as SOLVED_HELD_OUT_10 is.
SOLVED_HELD_OUT_11: dict[str, tuple[Any, str]] = {
    "retitle_scans": (_retitle(), "Renamed the five scans: saltmarsh_vespers.txt, the_drowned_bell.txt, "
                                  "lament_for_a_lost_mitten.txt, cormorant_weather.txt and eleven_herons.txt."),
    "latest_drafts": (_prune(), "Deleted the older drafts; act_one_v3, act_two_v10 and finale_v1 are left."),
    "cron_when": (None, "Once a week: airwaves.crontab runs prune_recordings.py --older-than 30 at 02:30 every "
                        "Sunday (30 2 * * 0), deleting recordings more than 30 days old."),
    "retry_total": (None, "It tries 5 times and sleeps 2, 6, 18 and 54 seconds between tries: about 80 seconds in "
                          "all before it gives up until tomorrow."),
    "recolour": (_RECOLOUR, "Swapped #e8751a (and its rgba shadow) for #1a7f7a in lifeboat.css, and the theme "
                            "colour in lifeboat_home.html."),
    "reject_negative": (_guard(), "Each function raises ValueError when litres is 0 or less."),
    "moved_links": (_RELINK, "Three links were broken: laser_cutter.md and lathe.md (now in safety/) and "
                             "soldering.md (now in benches/). They point there now."),
    "fixme_list": (_fixmes(), "Wrote fixmes.md with the four FIXMEs."),
    "leap_day": (subbing("caravan/calendar_rules.py", _LEAP_OLD,
                         "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n"),
                 "is_leap in caravan/calendar_rules.py only counted years divisible by 100 as leap years; it uses "
                 "the full rule now, so 2028-02-29 can be booked."),
    "comma_cells": (_sheet(_CSV_WRITER), "lostprop/found_sheet.py joined the cells with commas by hand; it writes "
                                         "with csv.writer now, which quotes cells that hold commas."),
}


# Runs that are nearly right, each of which its checker must refuse: (job, change, answer).
NEAR_MISSES_11: tuple[tuple[str, Any, str], ...] = (
    ("retitle_scans", _retitle(which=(0, 1, 2)), "Renamed them."),
    ("retitle_scans", _retitle(keep=True), "Made copies named after the titles."),
    ("retitle_scans", _retitle(folder="poems"), "Renamed them into poems/."),
    ("retitle_scans", _retitle(name=lambda title: re.sub(r"\W+", "_", title.split(" (")[0].lower())),
     "Renamed them, without the .txt."),
    ("retitle_scans", _retitle(name=lambda title: f"poem_{[t for _, t, _ in _POEMS].index(title) + 1}.txt"),
     "Renamed them poem_1.txt to poem_5.txt."),
    ("retitle_scans", each_of(_retitle(), lambda ws: (ws / "chapbook/saltmarsh_vespers.txt").rename(
        ws / "chapbook/tmp.txt"), lambda ws: (ws / "chapbook/cormorant_weather.txt").rename(
        ws / "chapbook/saltmarsh_vespers.txt"), lambda ws: (ws / "chapbook/tmp.txt").rename(
        ws / "chapbook/cormorant_weather.txt")), "Renamed them."),
    ("retitle_scans", _retitle(name=lambda title: "_".join(_tokens(CHAPBOOK_POEMS[next(
        rel for rel, text in CHAPBOOK_POEMS.items() if text.startswith(title))].splitlines()[2])[:4]) + ".txt"),
     "Renamed them after their first lines."),
    ("retitle_scans", each_of(_retitle(), lambda ws: (ws / "chapbook/printer_quote.txt").rename(
        ws / "chapbook/risograph_quote_from_the_print_co_op.txt")), "Renamed every file after its first line."),
    ("latest_drafts", _prune(keep=lambda part, v: f"v{v}" == max(f"v{n}" for n in _VERSIONS[part])),
     "Kept the last of each in the folder listing."),
    ("latest_drafts", _prune(keep=lambda part, v: part != "act_one" or v == 3), "Cleared out act one's drafts."),
    ("latest_drafts", _prune(keep=lambda part, v: part != "finale" and v == _NEWEST[part]),
     "Deleted the old drafts, and the finale's single draft."),
    ("latest_drafts", _prune(into="panto/old"), "Moved the old drafts into panto/old."),
    ("latest_drafts", _prune(keep=lambda part, v: v == min(_VERSIONS[part])), "Kept the first of each."),
    ("latest_drafts", each_of(_prune(), lambda ws: (ws / "panto/props_list.txt").unlink()),
     "Deleted everything but the newest drafts."),
    ("latest_drafts", each_of(_prune(), lambda ws: (ws / "panto/act_two_v10.fountain").rename(
        ws / "act_two.fountain")), "Kept the newest, act two at the top."),
    ("cron_when", None, "Every day at 2:30."),
    ("cron_when", None, "Every 30 days (--older-than 30)."),
    ("cron_when", None, "Mondays at 2:30 am."),
    ("cron_when", None, "On Sundays at 6 in the morning."),
    ("cron_when", None, "Every 15 minutes."),
    ("cron_when", None, "On Sundays at 2:30 pm."),
    ("cron_when", None, "Every four hours, on the hour."),
    ("cron_when", lambda ws: sub(ws, "airwaves.crontab", "30    2    *   *   0", "30    2    *   *   *"),
     "It ran on Sundays at 2:30; I made it daily."),
    ("retry_total", None, "242 seconds: 2 + 6 + 18 + 54 + 162."),
    ("retry_total", None, "About 54 seconds."),
    ("retry_total", None, "It tries 5 times, 2 seconds apart, so about 10 seconds."),
    ("retry_total", None, "It never gives up; it keeps retrying."),
    ("retry_total", None, "It tries 5 times before giving up."),
    ("retry_total", None, "Around 162 seconds, the last wait."),
    ("retry_total", None, "About 26 seconds (2 + 6 + 18)."),
    ("retry_total", lambda ws: sub(ws, "hencoop/roost_settings.py", "TRIES = 5", "TRIES = 3"),
     "It waited 80 seconds; I cut it to 3 tries."),
    ("recolour", _css(_ORANGES[0], _ORANGES[2]), "Replaced #e8751a with #1a7f7a."),
    ("recolour", _css(*_ORANGES[:2]), "Swapped the hex colours."),
    ("recolour", _css(*_ORANGES, html=False), "Changed lifeboat.css."),
    ("recolour", _css(("#e8751a", "teal"), ("#E8751A", "teal"), ("rgba(232, 117, 26, 0.35)", "teal")),
     "Used teal."),
    ("recolour", _css(*_ORANGES, ("#f5c542", _TEAL)), "Swapped the orange and the yellow."),
    ("recolour", _css(_ORANGES[0], _ORANGES[1], ("rgba(232, 117, 26, 0.35)", _TEAL)), "Swapped them all."),
    ("recolour", each_of(_RECOLOUR, subbing("lifeboat_site/lifeboat.css", "a:hover {\n  text-decoration: "
                                            "underline;\n}\n\n", "")), "Swapped them and tidied up."),
    ("recolour", each_of(_RECOLOUR, subbing("lifeboat_site/lifeboat_home.html", "Donate to the crew",
                                            "Donate")), "Swapped them."),
    ("reject_negative", _guard(names=("salt_grams", "conditioner_ml")), "Added the check."),
    ("reject_negative", _guard(check="    if litres < 0:\n        raise ValueError('negative litres')\n"),
     "Negative litres raise ValueError."),
    ("reject_negative", _guard(check="    if litres <= 0:\n        raise Exception('bad tank size')\n"),
     "They raise an error now."),
    ("reject_negative", _guard(check="    assert litres > 0, 'litres must be positive'\n"), "Added asserts."),
    ("reject_negative", _guard(check="    if litres <= 0:\n        print('litres must be above 0')\n"
                                     "        return None\n"), "They refuse bad sizes."),
    ("reject_negative", _guard(check="    if litres < 1:\n        raise ValueError('litres must be at least 1')\n"),
     "Added the check."),
    ("reject_negative", subbing("tank_calc.py", "litres = float(sys.argv[1])\n",
                                "litres = float(sys.argv[1])\nif litres <= 0:\n    raise ValueError(litres)\n"),
     "tank_calc.py refuses it now."),
    ("reject_negative", each_of(_guard(), subbing("aquarium/dosing.py", "percent=25", "percent=20")),
     "Added the check, and made the weekly change 20%."),
    ("moved_links", _relink(laser_cutter="safety/laser_cutter.md", lathe="safety/lathe.md#changing-the-chuck"),
     "Fixed the two broken links."),
    ("moved_links", lambda ws: [(ws / f"{_HB}/{rel}").rename(ws / f"{_HB}/{PurePosixPath(rel).name}")
                                for rel in ("safety/laser_cutter.md", "safety/lathe.md", "benches/soldering.md")],
     "Moved the pages back so the links work."),
    ("moved_links", _relink(laser_cutter="safety/laser_cutter.md", lathe="safety/lathe.md",
                            soldering="benches/soldering.md"), "Fixed them."),
    ("moved_links", _relink(laser_cutter="benches/laser_cutter.md", lathe="benches/lathe.md#changing-the-chuck",
                            soldering="safety/soldering.md"), "Fixed them."),
    ("moved_links", _relink(laser_cutter=f"{_HB}/safety/laser_cutter.md",
                            lathe=f"{_HB}/safety/lathe.md#changing-the-chuck",
                            soldering=f"{_HB}/benches/soldering.md"), "Fixed them."),
    ("moved_links", each_of(*(subbing(f"{_HB}/start_here.md", line, "") for line in (
        "- [Laser cutter induction](laser_cutter.md)\n", "- [Wood lathe: changing the chuck](lathe.md#changing-the-"
        "chuck)\n", "- [Soldering station](soldering.md)\n"))), "Took the broken links out."),
    ("moved_links", each_of(_RELINK, subbing(f"{_HB}/start_here.md", "[Soldering station]", "[Soldering]")),
     "Fixed them."),
    ("moved_links", each_of(_RELINK, subbing(f"{_HB}/start_here.md", "(joining_fees.md)", "(benches/joining_fees.md)")),
     "Fixed them all."),
    ("fixme_list", _fixmes(pairs={p for p in _FIXMES if p[0] != "contest_score.py"}), "Listed the FIXMEs."),
    ("fixme_list", _fixmes(pairs={(rel, n - 1) for rel, n in _FIXMES}), "Listed the FIXMEs."),
    ("fixme_list", _fixmes(pairs=_FIXMES | _TODOS), "Listed the FIXMEs and TODOs."),
    ("fixme_list", None, "adif.py lines 10 and 21, band_plan.py line 13 and contest_score.py line 17."),
    ("fixme_list", _fixmes(fmt="- {rel}: {note}\n"), "Listed them."),
    ("fixme_list", each_of(_fixmes(), subbing("qso_log/band_plan.py", "    # FIXME: out-of-band contacts should be "
                                              "flagged, not quietly dropped\n", "")), "Listed and cleared them."),
    ("fixme_list", _fixmes(text="# FIXMEs\n\n" + "".join(f"- line {n}\n" for _, n in sorted(_FIXMES))),
     "Listed them."),
    ("fixme_list", _fixmes(pairs={("qso_log/adif.py" if rel == "qso_log/band_plan.py" else rel, n)
                                  for rel, n in _FIXMES}), "Listed them."),
    ("leap_day", subbing("caravan/calendar_rules.py", _LEAP_OLD, "    return year % 4 == 0\n"), "Fixed."),
    ("leap_day", subbing("caravan/calendar_rules.py", _LEAP_OLD, "    return year % 4 == 0 and year % 100 != 0\n"),
     "Fixed."),
    ("leap_day", subbing("caravan/calendar_rules.py", "[31, 28, 31", "[31, 29, 31"), "February has 29 days now."),
    ("leap_day", subbing("caravan/calendar_rules.py", _LEAP_OLD,
                         "    return year == 2028 or (year % 4 == 0 and year % 100 == 0)\n"),
     "2028 is a leap year now."),
    ("leap_day", subbing("booking_requests.txt", "2028-02-29 7 Priya and Sol\n", "2028-02-28 7 Priya and Sol\n"),
     "Moved their booking to the 28th."),
    ("leap_day", subbing("caravan/calendar_rules.py", "    return 1 <= month",
                         "    if month == 2 and day == 29:\n        return True\n    return 1 <= month"), "Fixed."),
    ("leap_day", subbing("caravan/calendar_rules.py", _LEAP_OLD, "    return year % 400 == 0\n"), "Fixed."),
    ("comma_cells", _sheet("    with open(path, 'w', encoding='utf-8') as f:\n"
                           "        f.write(','.join(COLUMNS) + '\\n')\n"
                           "        for item in items:\n"
                           "            cells = [str(item[c]) for c in COLUMNS]\n"
                           "            cells[-1] = f'\"{cells[-1]}\"'\n"
                           "            f.write(','.join(cells) + '\\n')\n", imports=""), "Quoted the description."),
    ("comma_cells", _sheet("    with open(path, 'w', encoding='utf-8') as f:\n"
                           "        f.write(','.join(COLUMNS) + '\\n')\n"
                           "        for item in items:\n"
                           "            f.write(','.join(str(item[c]).replace(',', ';') for c in COLUMNS) + '\\n')\n",
                           imports=""), "Commas in the cells are semicolons now."),
    ("comma_cells", _sheet(_CSV_WRITER.replace("csv.writer(f)", "csv.writer(f, delimiter='\\t')")),
     "It writes tab-separated now."),
    ("comma_cells", lambda ws: (ws / "found_ledger.json").write_text(json.dumps(
        [{**item, "description": item["description"].replace(",", "")} for item in _FOUND], indent=2) + "\n"),
     "Took the commas out of the descriptions."),
    ("comma_cells", _sheet(_CSV_WRITER.replace("        writer.writerow(COLUMNS)\n", "")), "Uses csv now."),
    ("comma_cells", _sheet(_CSV_WRITER.replace("for column in COLUMNS])", "for column in sorted(COLUMNS)])")
                           .replace("writer.writerow(COLUMNS)", "writer.writerow(sorted(COLUMNS))")),
     "Uses csv now, columns in order."),
    ("comma_cells", _sheet("    with open(path, 'w', encoding='utf-8') as f:\n"
                           "        f.write(','.join(COLUMNS) + '\\n')\n"
                           "        for item in items:\n"
                           "            cells = [str(item[c]) for c in COLUMNS]\n"
                           "            cells[-1] = '\"' + cells[-1].replace('\"', '\"\"') + '\"'\n"
                           "            f.write(','.join(cells) + '\\n')\n", imports=""),
     "The description is quoted, as CSV does."),
)
