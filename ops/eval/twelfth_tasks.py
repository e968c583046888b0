"""A twelfth held-out set: ten more small jobs, two of each of the shapes the others are
(file housekeeping, questions about code, edits of several lines, two-step jobs, jobs on
a file the request does not name) but sharing no file, identifier or distinctive word
with any job of tasks.py, more_tasks.py, fresh_tasks.py, third_tasks.py, fourth_tasks.py,
fifth_tasks.py, sixth_tasks.py, seventh_tasks.py, eighth_tasks.py, ninth_tasks.py,
tenth_tasks.py or eleventh_tasks.py, nor with each other. The prompts are phrased as people
type them on the first day, in words the other sets do not use, and the jobs are of kinds
the other sets have none of; besides Python, the workspaces hold GPS tracks, a systemd unit
and its drop-in, JavaScript, subtitles, Go, tab-separated values and the page made from
them, a calendar export and shell scripts.

HELD_OUT_11 became known, partly seen as leading was developed beside it; these were
written blind, by a helper who read no product code (only ops/eval/, its tests and the
README's lines on the sets) and reported none of their words, as the clean measure, so a
change to the leading can again be measured on jobs nobody has looked at while writing it.
They are only run to report (`ops/eval/run.py --set held_out_12`), never developed
against. Nothing in the product names a job, a file or a word of theirs
(tests/test_eval.py checks the product's sources against WORDS_12 and the fixtures' file
names).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import posixpath
import re
import subprocess
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path, PurePosixPath
from typing import Any

from ops.eval.tasks import (
    CHECK_RUN_S,
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


def _tokens(text: str) -> list[str]:
    """A name's words, lower-cased: split at anything but letters and digits."""
    return re.findall(r"[a-z0-9]+", text.lower())


# ---- file housekeeping ----

_ROUTES = (
    ("brevet_200_fenland", "BR200 Fenland Flatlands", 0.0, ((52.5734, 0.2418), (52.6121, 0.3307), (52.7050, 0.2801),
                                                            (52.6689, 0.1573))),
    ("brevet_300_wolds", "BR300 Wolds and Back", 40.0, ((53.4402, -0.4127), (53.5201, -0.2960), (53.3987, -0.1042),
                                                        (53.2899, -0.3311), (53.4398, -0.4121))),
    ("permanent_100_coast", "Perm 100 Coast Road", 5.0, ((52.9570, 1.2979), (52.9441, 1.0115), (52.8832, 0.8563))),
)


def _gpx(title: str, base: float, points: tuple[tuple[float, float], ...]) -> str:
    rows = "".join(f'      <trkpt lat="{lat:.4f}" lon="{lon:.4f}"><ele>{base + 7 * n:.1f}</ele></trkpt>\n'
                   for n, (lat, lon) in enumerate(points))
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<gpx version="1.1" creator="club route planner" xmlns="http://www.topografix.com/GPX/1/1">\n'
            f"  <metadata><name>{title}</name></metadata>\n"
            f"  <trk>\n    <name>{title}</name>\n    <trkseg>\n{rows}    </trkseg>\n  </trk>\n</gpx>\n")


AUDAX_GPX = {f"audax_routes/{stem}.gpx": _gpx(title, base, points) for stem, title, base, points in _ROUTES}
AUDAX = {
    **AUDAX_GPX,
    "audax_routes/control_cards.md": "# Controls\n\nOn a brevet, get your card stamped at every control, or keep "
                                     "a till receipt with the time on it.\n",
    "club_kit.txt": "Audax club jerseys are 42 pounds, gilets 35. Order by the end of the month.\n",
}
_GNU_SUM = re.compile(r"^\\?([0-9a-fA-F]+) ?[ *]?(.+?)\s*$")
_BSD_SUM = re.compile(r"^SHA256 ?\((.+)\) ?= ?([0-9a-fA-F]+)\s*$")


def check_route_sums(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, AUDAX, *AUDAX)
    if changed:
        return False, changed
    found = [rel for rel in files_under(ws) if PurePosixPath(rel).name.lower() in ("sha256sums", "sha256sums.txt")]
    if not found:
        return False, "there is no SHA256SUMS file"
    here = [rel for rel in found if PurePosixPath(rel).parent.as_posix() == "audax_routes"]
    if not here:
        return False, f"the sums are in {found[0]}, not in audax_routes/"
    listed: set[str] = set()
    for line in (read(ws, here[0]) or "").splitlines():
        if not line.strip():
            continue
        bsd, gnu = _BSD_SUM.match(line), _GNU_SUM.match(line)
        name, digest = (bsd.group(1), bsd.group(2)) if bsd else (gnu.group(2), gnu.group(1)) if gnu else ("", "")
        if len(digest) != 64:
            return False, f"{here[0]} has a line that is no SHA-256 sum: {short(line)}"
        where = posixpath.normpath(posixpath.join("audax_routes", name))
        if not (ws / where).is_file():
            return False, f"{here[0]} lists {name}, which is no file next to it"
        if hashlib.sha256((ws / where).read_bytes()).hexdigest() != digest.lower():
            return False, f"{here[0]}'s sum for {name} is not the file's"
        listed.add(where)
    missing = sorted(set(AUDAX_GPX) - listed)
    if missing:
        return False, f"{here[0]} has no sum for {PurePosixPath(missing[0]).name}"
    return True, "audax_routes/ has a SHA256SUMS that checks every route file"


_POD = "rockpool_pod"
# (file name, the episode's number, a word its new name keeps, its notes)
_EPISODES = (
    ("ep01 - Tardigrades: tiny tanks.md", 1, "tardigrade", "Water bears survive boiling, freezing and space."),
    ("ep02 - Who ate the axolotl?.md", 2, "axolotl", "Listener question about a pond, and a heron with an alibi."),
    ("ep03 - Nudibranchs <3.md", 3, "nudibranch", "Sea slugs that steal stinging cells from what they eat."),
    ('ep04 - "Immortal" jellyfish.md', 4, "jellyfish", "Turritopsis and what biologists mean by immortal."),
    ("ep05 - Octopus vs crab | the rematch.md", 5, "rematch", "Round two at the harbour wall. The crab lost again."),
    ("ep06 - Limpets > barnacles.md", 6, "limpet", "Our guest defends limpets for forty minutes straight."),
)
_FINE = {
    f"{_POD}/ep07 - Hagfish slime, explained.md": "# Ep 7: Hagfish slime, explained\n\nA litre of slime from a "
                                                  "teaspoon of mucus, and why.\n",
    f"{_POD}/ep08 - Sea cucumbers (part 1).md": "# Ep 8: Sea cucumbers (part 1)\n\nThey breathe through their "
                                                "bottoms. We checked.\n",
    f"{_POD}/guest_wishlist.txt": "A marine biologist, a diver, someone from the aquarium shop.\n",
}
_EPISODE_NOTES = {f"{_POD}/{name}": f"# Ep {n}: {name[7:-3]}\n\n{notes}\n" for name, n, _, notes in _EPISODES}
ROCKPOOL = {
    **_EPISODE_NOTES,
    **_FINE,
    "sponsor_reads.md": "This week's Rockpool episode is brought to you by nobody. Want to sponsor us? Get in touch.\n",
}
_NOT_ON_WINDOWS = re.compile(r'[<>:"|?*\\\x00-\x1f]')


def check_win_names(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, ROCKPOOL, *_FINE, "sponsor_reads.md")
    if changed:
        return False, changed
    for rel in files_under(ws):
        for part in PurePosixPath(rel).parts:
            if _NOT_ON_WINDOWS.search(part) or part.endswith((" ", ".")):
                return False, f"{rel} still has a name Windows does not allow"
    for (name, n, word, _), text in zip(_EPISODES, _EPISODE_NOTES.values(), strict=True):
        held = [rel for rel in files_under(ws) if read(ws, rel) == text]
        if not held:
            return False, f"no file holds the notes of {name!r} any more (or they were changed)"
        if len(held) > 1:
            return False, f"the notes of {name!r} are in more than one file: {', '.join(held)}"
        path = PurePosixPath(held[0])
        if path.parent.as_posix() != _POD:
            return False, f"the notes of {name!r} are at {held[0]}, not in {_POD}/"
        if path.suffix != ".md":
            return False, f"{held[0]} lost its .md ending"
        if not re.search(rf"ep[\s_.-]*0?{n}(?!\d)", path.stem, re.I) or not any(
                t.startswith(word) for t in _tokens(path.stem)):
            return False, f"{held[0]} no longer says which episode it is ({name!r})"
    return True, "every file name in rockpool_pod/ is one Windows allows, the episodes still recognisable"


# ---- questions about code ----

SAUNA = {
    "deploy/sauna-heater.service": (
        "[Unit]\n"
        "Description=Sauna stove controller (thermostat and the door light)\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n\n"
        "[Service]\n"
        "Type=simple\n"
        "User=pi\n"
        "Group=pi\n"
        "WorkingDirectory=/home/pi/sauna\n"
        "ExecStart=/usr/bin/python3 /home/pi/sauna/stove_loop.py\n"
        "Restart=on-failure\n"
        "RestartSec=5\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    ),
    "deploy/sauna-heater.service.d/override.conf": (
        "### Editing /etc/systemd/system/sauna-heater.service.d/override.conf\n"
        "### Anything between here and the comment below will become the new contents of the file\n\n"
        "[Service]\n"
        "User=kiuas\n"
        "Group=gpio\n"
        "SupplementaryGroups=i2c\n\n"
        "### Lines below this comment will be discarded\n"
    ),
    "stove_loop.py": (
        "import logging\nimport time\n\n"
        "logging.basicConfig(filename='/var/log/sauna/stove.log', level=logging.INFO)\n"
        "TARGET_C = 80\n\n\n"
        "def read_stones_c():\n"
        "    with open('/sys/bus/w1/devices/28-0000075b1f3c/temperature') as f:\n"
        "        return int(f.read()) / 1000\n\n\n"
        "while True:\n"
        "    now = read_stones_c()\n"
        "    logging.info('stones at %.1f C, want %d', now, TARGET_C)\n"
        "    time.sleep(30)\n"
    ),
    "install_notes.md": "# Putting it on the Pi\n\n1. `sudo cp deploy/sauna-heater.service /etc/systemd/system/`\n"
                        "2. `sudo systemctl enable --now sauna-heater`\n\nIt runs as pi, like everything else on "
                        "there.\n",
}
_AS_WRONG = re.compile(r"\b(runs?|running|ran)\s+(it\s+)?(as|under)\s+(the\s+)?(user\s+|account\s+)?[`'\"]?"
                       r"(pi|root|gpio)\b|\buser\s+is\s+[`'\"]?(pi|root)\b", re.I)
_NOT_SO = re.compile(r"(n't|\bnot|\bnever|\bno longer|\bwould|\bwill|\bonly|\binstead of)\W*(\w+\W+)?$", re.I)
_UNLESS = re.compile(r"^\W*(\w+\W+){0,3}?(without|if|unless|had|were|but)\b", re.I)


def _claims_other_user(answer: str) -> bool:
    """The answer says it runs as pi, root or gpio (not "it doesn't run as pi", nor "it
    would run as pi without the drop-in")."""
    return any(not _NOT_SO.search(answer[max(0, m.start() - 30):m.start()])
               and not _UNLESS.search(answer[m.end():m.end() + 40]) for m in _AS_WRONG.finditer(answer))


def check_unit_user(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    if not re.search(r"(?<![\w/-])kiuas(?![\w/-])", answer, re.I):
        return False, f"the answer does not say kiuas: {short(answer)}"
    if _claims_other_user(answer):
        return False, f"the answer says it runs as another user too: {short(answer)}"
    return verdict(unchanged(ws, SAUNA, *SAUNA), "the answer says kiuas, as the drop-in sets")


KART = {
    "kart_track.js": (
        "const path = require('path');\n"
        "const express = require('express');\n\n"
        "const trackPages = require('./routes/track_pages');\n"
        "const pitlane = require('./routes/pitlane');\n\n"
        "const app = express();\n"
        "app.use(express.static(path.join(__dirname, 'public')));\n"
        "app.use('/track', trackPages);\n"
        "app.use('/crew', pitlane);\n\n"
        "app.get('/', (req, res) => res.sendFile(path.join(__dirname, 'views', 'home.html')));\n\n"
        "const port = process.env.PORT || 3000;\n"
        "app.listen(port, () => console.log(`kart site on http://localhost:${port}`));\n"
    ),
    "routes/track_pages.js": (
        "const path = require('path');\n"
        "const router = require('express').Router();\n\n"
        "const view = (name) => path.join(__dirname, '..', 'views', name);\n\n"
        "router.get('/heats', (req, res) => res.sendFile(view('heats.html')));\n"
        "router.get('/best-laps', (req, res) => res.sendFile(view('podium.html')));\n"
        "router.get('/karts/:number', (req, res) => res.sendFile(view('kart.html')));\n\n"
        "module.exports = router;\n"
    ),
    "routes/pitlane.js": (
        "const path = require('path');\n"
        "const router = require('express').Router();\n\n"
        "router.get('/rota', (req, res) => res.sendFile(path.join(__dirname, '..', 'views', 'marshal_rota.html')));\n"
        "router.post('/best-laps/clear', (req, res) => {\n"
        "  // wipes the season's lap board; marshals only\n"
        "  res.sendStatus(204);\n"
        "});\n\n"
        "module.exports = router;\n"
    ),
    "views/home.html": "<h1>Ridgeway Kart Club</h1>\n<ul>\n  <li><a href=\"/track/heats\">This week's heats</a></li>\n"
                       "  <li><a href=\"/crew/rota\">Marshal rota</a></li>\n</ul>\n",
    "views/podium.html": "<h1>Quickest laps this season</h1>\n<table id=\"lap-board\"></table>\n",
    "views/heats.html": "<h1>Heats</h1>\n<p>Cadets at 10, juniors at 11, seniors after lunch.</p>\n",
}
_HOST = re.compile(r"https?://[^\s/]+|\b(localhost|127\.0\.0\.1)(:\d+)?", re.I)


def check_page_path(ws: Path, answer: str) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    bare = _HOST.sub(" ", answer)
    if not re.search(r"(?<![\w/.-])/track/best-laps/?(?![\w-])", bare):
        return False, f"the answer does not give /track/best-laps: {short(answer)}"
    return verdict(unchanged(ws, KART, *KART), "the answer gives /track/best-laps")


# ---- edits of several lines ----

_FILM = "walling_film"
# (start, end in ms, lines)
_SUBS = (
    (4200, 7900, ("A dry stone wall has no mortar in it at all.",)),
    (8100, 11400, ("Every stone is held by the weight", "of the ones above it.")),
    (59800, 62100, ("You start with the footings,", "the biggest stones, set in a trench.")),
    (62400, 65000, ("Then two faces go up, leaning in a little.",)),
    (750000, 753250, ("<i>That lean is the batter.</i>",)),
    (1862000, 1865500, ("The small stuff in the middle is the hearting.",)),
    (3599000, 3602200, ("Every metre or so, a throughstone", "ties the two faces together.")),
    (3602400, 3605400, ("And the copes on top keep the sheep off.",)),
    (3730600, 3734000, ("Built right, it'll outlast all of us.",)),
)
_SHIFT = -2500


def _stamp(ms: int) -> str:
    h, rest = divmod(ms, 3600000)
    m, rest = divmod(rest, 60000)
    s, ms = divmod(rest, 1000)
    return f"{h:02d}:{m:02d}:{s:02d},{ms:03d}"


def _srt(cues: tuple[tuple[int, int, tuple[str, ...]], ...], shift: int = 0) -> str:
    return "\n".join(f"{n}\n{_stamp(a + shift)} --> {_stamp(b + shift)}\n" + "\n".join(lines) + "\n"
                     for n, (a, b, lines) in enumerate(cues, 1))


_WELSH = (
    (1700, 5400, ("Does dim morter mewn wal sych o gwbl.",)),
    (5600, 8900, ("Mae pob carreg yn cael ei dal", "gan bwysau'r rhai uwch ei phen.")),
    (57300, 59600, ("Rydych chi'n dechrau gyda'r sylfeini.",)),
)
WALLING = {
    f"{_FILM}/drystone.en.srt": _srt(_SUBS),
    f"{_FILM}/drystone.cy.srt": _srt(_WELSH),
    f"{_FILM}/credits.txt": "Filmed at Gunnerside over two summers. Waller: Dot Metcalfe. Sheep: various.\n",
}
_TIMING = re.compile(r"^(\d{2}):(\d{2}):(\d{2}),(\d{3}) --> (\d{2}):(\d{2}):(\d{2}),(\d{3})$")


def _cues(text: str) -> list[tuple[str, int, int, tuple[str, ...]]] | str:
    """An SRT file's cues as (number, start, end in ms, lines); or what is wrong with it."""
    out = []
    for block in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n").strip()):
        lines = [line.rstrip() for line in block.split("\n")]
        if len(lines) < 3:
            return f"a cue has no text: {short(block)}"
        m = _TIMING.match(lines[1].strip())
        if not m:
            return f"{lines[1]!r} is no SRT timing line"
        h1, m1, s1, f1, h2, m2, s2, f2 = (int(g) for g in m.groups())
        out.append((lines[0].strip(), ((h1 * 60 + m1) * 60 + s1) * 1000 + f1, ((h2 * 60 + m2) * 60 + s2) * 1000 + f2,
                    tuple(lines[2:])))
    return out


def check_subs_shift(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, WALLING, f"{_FILM}/drystone.cy.srt", f"{_FILM}/credits.txt")
    if changed:
        return False, changed
    text = read(ws, f"{_FILM}/drystone.en.srt")
    if text is None:
        return False, "drystone.en.srt is gone"
    now = _cues(text)
    if isinstance(now, str):
        return False, f"drystone.en.srt is no longer good SRT: {now}"
    want = [(str(n), a + _SHIFT, b + _SHIFT, lines) for n, (a, b, lines) in enumerate(_SUBS, 1)]
    if len(now) != len(want):
        return False, f"drystone.en.srt has {len(now)} subtitles, not {len(want)}"
    for got, (n, a, b, lines) in zip(now, want, strict=True):
        if got[0] != n or got[3] != lines:
            return False, f"subtitle {n} changed beyond its times: {short(str(got))}"
        if (got[1], got[2]) != (a, b):
            return False, f"subtitle {n} is at {_stamp(got[1])} --> {_stamp(got[2])}, not {_stamp(a)} --> {_stamp(b)}"
    return True, "every English subtitle is 2.5 seconds earlier, the Welsh as they were"


_DIFF3 = """package tramline

// Stop is one place the Line 4 tram calls at, and how many minutes it is from the depot.
type Stop struct {
	Name    string
	Minutes int
}

// Stops lists Line 4's stops in running order, from the depot outwards.
var Stops = []Stop{
	{"Wharf Road Depot", 0},
	{"Tanners Row", 3},
	{"Cathedral Green", 6},
	{"Ropewalk", 9},
<<<<<<< HEAD
	{"Infirmary", 12},
||||||| 3f2c9e1
=======
	{"Glassworks", 11},
>>>>>>> glassworks-extension
}

<<<<<<< HEAD
// FirstTram leaves the depot at half five from the May timetable.
const FirstTram = "05:30"
||||||| 3f2c9e1
const FirstTram = "05:40"
=======
const FirstTram = "05:40"

// LastTram is the last departure from the depot.
const LastTram = "23:50"
>>>>>>> glassworks-extension

// MinutesTo says how far a stop is from the depot, and whether the line calls there.
func MinutesTo(name string) (int, bool) {
	for _, s := range Stops {
		if s.Name == name {
			return s.Minutes, true
		}
	}
	return 0, false
}
"""
TRAMLINE = {
    "tramline/stops.go": _DIFF3,
    "tramline/stops_test.go": (
        "package tramline\n\nimport \"testing\"\n\n"
        "func TestStopsInRunningOrder(t *testing.T) {\n"
        "\tfor i := 1; i < len(Stops); i++ {\n"
        "\t\tif Stops[i].Minutes <= Stops[i-1].Minutes {\n"
        "\t\t\tt.Errorf(\"%s (%d min) comes after %s (%d min)\", Stops[i].Name, Stops[i].Minutes,\n"
        "\t\t\t\tStops[i-1].Name, Stops[i-1].Minutes)\n"
        "\t\t}\n"
        "\t}\n"
        "}\n"
    ),
    "tramline/fares.go": (
        "package tramline\n\n"
        "// Fare is the single fare in pence for a ride of so many stops.\n"
        "func Fare(stops int) int {\n"
        "\tif stops <= 3 {\n\t\treturn 150\n\t}\n"
        "\treturn 220\n"
        "}\n"
    ),
    "timetable_notes.md": "Line 4 runs every 12 minutes in the day and every 20 after seven.\n",
}
_MARKER = re.compile(r"^(<{7}|\|{7}|={7}|>{7})", re.M)
_STOP = re.compile(r"\{\s*\"([^\"]+)\"\s*,\s*(\d+)\s*\}")
_STOPS_WANT = [("Wharf Road Depot", 0), ("Tanners Row", 3), ("Cathedral Green", 6), ("Ropewalk", 9),
               ("Glassworks", 11), ("Infirmary", 12)]


def _bare(line: str) -> str:
    """A line of Go with no blank space in it."""
    return re.sub(r"\s+", "", line)


def _hunks(text: str) -> tuple[list[str], set[str]]:
    """A file with conflicts: its lines outside them, and those inside (without blank
    space; blank lines left out)."""
    outside: list[str] = []
    inside: set[str] = set()
    depth = False
    for line in text.splitlines():
        if line.startswith("<<<<<<<"):
            depth = True
        elif line.startswith(">>>>>>>"):
            depth = False
        elif line.strip() and not _MARKER.match(line):
            if depth:
                inside.add(_bare(line))
            else:
                outside.append(_bare(line))
    return outside, inside


def check_merge_markers(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, TRAMLINE, "tramline/stops_test.go", "tramline/fares.go", "timetable_notes.md")
    if changed:
        return False, changed
    text = read(ws, "tramline/stops.go")
    if text is None:
        return False, "stops.go is gone"
    marker = _MARKER.search(text)
    if marker:
        return False, f"stops.go still has a conflict marker {marker.group()}"
    stops = [(name, int(minutes)) for name, minutes in _STOP.findall(text)]
    if sorted(stops) != sorted(_STOPS_WANT):
        return False, f"stops.go's stops are {short(str(stops))}"
    if stops != _STOPS_WANT:
        return False, f"stops.go's stops are not in running order: {short(str(stops))}"
    consts = re.findall(r"\b(FirstTram|LastTram)\s*=\s*\"([^\"]*)\"", text)
    if sorted(consts) != [("FirstTram", "05:30"), ("LastTram", "23:50")]:
        return False, f"stops.go's times are {consts}, not FirstTram 05:30 and LastTram 23:50"
    outside, inside = _hunks(_DIFF3)
    kept = 0
    for line in (_bare(line) for line in text.splitlines()):
        if not line:
            continue
        if kept < len(outside) and line == outside[kept]:
            kept += 1
            continue
        code = line.split("//", 1)[0]  # a comment of one's own may be added
        if code and not (code in inside or code in ("const(", ")")
                         or re.fullmatch(r"(const)?(FirstTram|LastTram)=\"[^\"]*\"", code)):
            return False, f"stops.go has a line that is in neither side: {short(line)}"
    if kept != len(outside):
        return False, f"stops.go lost a line outside the conflicts: {short(outside[kept])}"
    return True, "stops.go has both sides' changes, the stops in running order, and no markers"


# ---- two-step jobs ----

_HEADER = ("name", "role", "instrument", "joined")
_MEMBERS = (
    ("Hal Pengelly", "squire", "", "2009"), ("Jen Tresize", "bagman", "", "2012"),
    ("Ros Kitto", "dancer", "", "2015"), ("Dev Anand", "dancer", "", "2019"),
    ("Ollie Nance", "musician", "melodeon", "2011"), ("Tamsin Jory", "musician", "fiddle", "2021"),
    ("Kerensa Bolitho", "dancer", "", "2023"),
)
_NEWCOMER = ("Marnie Tregothnan", "musician", "concertina", "2025")
_RENDER = '''"""Builds site/members.html from morris_members.tsv. Run it after changing the list:

    python3 render_members.py
"""

import csv
import html
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = {'squire': 0, 'bagman': 1, 'musician': 2, 'dancer': 3}


def load(path):
    with open(path, newline='', encoding='utf-8') as f:
        return list(csv.DictReader(f, delimiter='\\t'))


def row(member):
    cells = [member['name'], member['role'], member['instrument'] or '-', member['joined']]
    return '    <tr>' + ''.join(f'<td>{html.escape(c)}</td>' for c in cells) + '</tr>\\n'


def main():
    members = sorted(load(HERE / 'morris_members.tsv'), key=lambda m: (ORDER[m['role']], m['name'].split()[-1]))
    page = ('<!-- made by render_members.py from morris_members.tsv: edit the list, not this page -->\\n'
            '<html><head><meta charset="utf-8"><title>The side</title></head><body>\\n'
            '<h1>Who dances with us</h1>\\n<table>\\n'
            '    <tr><th>Name</th><th>Role</th><th>Instrument</th><th>Since</th></tr>\\n'
            + ''.join(row(m) for m in members) + '</table>\\n'
            f'<p>{len(members)} of us.</p>\\n</body></html>\\n')
    (HERE / 'site' / 'members.html').write_text(page, encoding='utf-8')
    print(f'wrote site/members.html ({len(members)} members)')


if __name__ == '__main__':
    main()
'''
_ORDER = {"squire": 0, "bagman": 1, "musician": 2, "dancer": 3}


def _tsv(rows: tuple[tuple[str, ...], ...]) -> str:
    return "".join("\t".join(r) + "\n" for r in (_HEADER, *rows))


def _members_page(rows: tuple[tuple[str, ...], ...]) -> str:
    """site/members.html as render_members.py writes it from `rows`."""
    ordered = sorted(rows, key=lambda r: (_ORDER[r[1]], r[0].split()[-1]))
    body = "".join("    <tr>" + "".join(f"<td>{c}</td>" for c in (r[0], r[1], r[2] or "-", r[3])) + "</tr>\n"
                   for r in ordered)
    return ("<!-- made by render_members.py from morris_members.tsv: edit the list, not this page -->\n"
            "<html><head><meta charset=\"utf-8\"><title>The side</title></head><body>\n"
            "<h1>Who dances with us</h1>\n<table>\n"
            "    <tr><th>Name</th><th>Role</th><th>Instrument</th><th>Since</th></tr>\n"
            + body + "</table>\n" + f"<p>{len(rows)} of us.</p>\n</body></html>\n")


MORRIS = {
    "morris_members.tsv": _tsv(_MEMBERS),
    "render_members.py": _RENDER,
    "site/members.html": _members_page(_MEMBERS),
    "site/practice_nights.html": "<p>Morris practice is Thursdays at the Miners Arms, 8pm, September to April.</p>\n",
}


def check_add_member(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, MORRIS, "render_members.py", "site/practice_nights.html")
    if changed:
        return False, changed
    text = read(ws, "morris_members.tsv")
    if text is None:
        return False, "morris_members.tsv is gone"
    rows = [tuple(cell.strip() for cell in r) for r in csv.reader(io.StringIO(text, newline=""), delimiter="\t")
            if any(cell.strip() for cell in r)]
    if not rows or rows[0] != _HEADER:
        return False, "morris_members.tsv's header line changed"
    for member in _MEMBERS:
        if rows.count(member) != 1:
            return False, f"{member[0]}'s line in morris_members.tsv was changed, lost or doubled"
    new = [r for r in rows[1:] if r not in _MEMBERS]
    if len(new) != 1:
        return False, f"morris_members.tsv has {len(new)} new lines, not one: {short(str(new))}"
    got = tuple(c.lower() for c in new[0])
    if got != tuple(c.lower() for c in _NEWCOMER):
        return False, f"her line in morris_members.tsv reads {new[0]}, not {_NEWCOMER}"
    page = read(ws, "site/members.html")
    with copy_of(ws) as copy:
        done = run_py(copy, "render_members.py")
        made = read(copy, "site/members.html")
    if done.returncode != 0:
        return False, f"python3 render_members.py fails on the list: {short(done.stderr or done.stdout)}"
    if page != made:
        return False, "site/members.html is not what render_members.py makes of the list (not rebuilt?)"
    return True, "she is on the list, and the page is rebuilt from it"


_VTIMEZONE = (
    "BEGIN:VTIMEZONE\nTZID:Europe/London\n"
    "BEGIN:DAYLIGHT\nTZOFFSETFROM:+0000\nTZOFFSETTO:+0100\nTZNAME:BST\nDTSTART:19700329T010000\n"
    "RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU\nEND:DAYLIGHT\n"
    "BEGIN:STANDARD\nTZOFFSETFROM:+0100\nTZOFFSETTO:+0000\nTZNAME:GMT\nDTSTART:19701025T020000\n"
    "RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU\nEND:STANDARD\nEND:VTIMEZONE\n"
)


def _calendar(events: tuple[tuple[str, str, str, str], ...]) -> str:
    """An iCalendar export of `events`: (start, end or duration, what, where); a start
    or end of the form 'L20250303T090000' is in Europe/London, one ending in Z in UTC,
    the rest floating."""
    def when(key: str, value: str) -> str:
        if value.startswith("P"):
            return f"DURATION:{value}\n"
        if value.startswith("L"):
            return f"{key};TZID=Europe/London:{value[1:]}\n"
        return f"{key}:{value}\n"
    out = ["BEGIN:VCALENDAR\nVERSION:2.0\nPRODID:-//Fieldnote Calendar//EN\nCALSCALE:GREGORIAN\n"
           "X-WR-CALNAME:Tuning visits\n" + _VTIMEZONE]
    for n, (start, end, what, where) in enumerate(events, 1):
        out.append(f"BEGIN:VEVENT\nUID:visit-{start.lstrip('L')[:8]}-{n}@fieldnote\nDTSTAMP:20250228T120000Z\n"
                   + when("DTSTART", start) + when("DTEND", end)
                   + f"SUMMARY:{what}\nLOCATION:{where}\n"
                   + ("DESCRIPTION:Pitch raise needed\\, hasn't been tuned since the piano was moved up\n"
                      " stairs. Bring the long mute strips.\n" if n == 7 else "")
                   + "END:VEVENT\n")
    return "".join(out) + "END:VCALENDAR\n"


_VISITS = (
    ("L20250303T090000", "L20250303T103000", "Upright\\, Mrs Okafor", "Hove"),
    ("20250305T130000Z", "20250305T151500Z", "School hall grand", "Lewes"),
    ("L20250307T100000", "PT2H", "Church Steinway", "Rottingdean"),
    ("20250311T143000", "20250311T160000", "Mr Achterberg's baby grand", "Kemp Town"),
    ("20250313T091500Z", "20250313T114500Z", "Upright\\, Brighton Little Theatre", "Brighton"),
    ("L20250318T110000", "PT1H45M", "Pub piano\\, the Lamb", "Ditchling"),
    ("L20250321T160000", "L20250321T170000", "Upright\\, the Patels", "Patcham"),
    ("20250326T083000Z", "20250326T104500Z", "Recording studio Yamaha", "Shoreham"),
)
_VISITS_HOURS = Fraction(59, 4)
_OTHER_VISITS = (
    ("L20250402T090000", "L20250402T113000", "Village hall upright", "Fulking"),
    ("20250404T140000Z", "PT45M", "Quick touch-up", "Hove"),
    ("20250409T130000", "20250409T140000", "Practice room", "Falmer"),
    ("L20250415T100000", "PT3H", "Concert grand before the recital", "Brighton"),
)
_OTHER_HOURS = Fraction(29, 4)
PIANO = {
    "tuning_visits.ics": _calendar(_VISITS),
    "invoice_notes.md": "Invoice on the last day of the month: 38 pounds an hour, travel included.\n",
}


def _says_hours(text: str, hours: Fraction) -> bool:
    """`text` gives `hours`: as a decimal (14.75), as hours and minutes (14h 45m, 14:45,
    14 hours and 45 minutes) or as minutes (885 minutes)."""
    for m in re.finditer(r"(?<![\d.:])(\d+(?:\.\d+)?)(?![\d:]|\.\d)", text):
        if abs(Fraction(m.group(1)) - hours) < Fraction(1, 200):
            return True
    for m in re.finditer(r"(?<![\d.:])(\d+)\s*(?:h|hrs?|hours?)\.?\s*,?\s*(?:and\s+)?(\d{1,2})\s*(?:m|mins?|minutes?)?"
                         r"\b|(?<![\d.:])(\d+):(\d{2})(?![\d:])", text, re.I):
        h, mins = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if int(h) + Fraction(int(mins), 60) == hours:
            return True
    return any(Fraction(int(m.group(1)), 60) == hours
               for m in re.finditer(r"(?<![\d.:])(\d+)\s*(?:mins?|minutes)\b", text, re.I))


def check_hours_script(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, PIANO, *PIANO)
    if changed:
        return False, changed
    scripts = [rel for rel in files_under(ws) if PurePosixPath(rel).name == "visit_hours.py"]
    if not scripts:
        return False, "there is no visit_hours.py"
    for ics, hours in ((_calendar(_OTHER_VISITS), _OTHER_HOURS), (PIANO["tuning_visits.ics"], _VISITS_HOURS)):
        with copy_of(ws) as copy:
            (copy / "tuning_visits.ics").write_text(ics)
            runs = [run_py(copy, scripts[0]), run_py(copy, scripts[0], "tuning_visits.ics")]
        if not any(done.returncode == 0 and _says_hours(done.stdout, hours) for done in runs):
            shown = next((done for done in runs if done.returncode == 0), runs[0])
            return False, (f"with {float(hours)} hours of visits, python3 {scripts[0]} "
                           + (f"prints {short(shown.stdout)!r}" if shown.returncode == 0
                              else f"fails: {short(shown.stderr or shown.stdout)}"))
    if not answer.strip():
        return False, "no final answer"
    if not _says_hours(answer, _VISITS_HOURS):
        return False, f"the answer does not say 14.75 hours: {short(answer)}"
    return True, "visit_hours.py adds up any month's visits, and the answer says 14.75 hours"


# ---- jobs on a file the request does not name ----

_COPY_SCRIPT = """#!/usr/bin/env bash
# Copies the parish register transcriptions to the NAS. nightly.sh mails me when this
# exits with anything but 0.

SRC="${REGISTER_SCANS:-$HOME/registers}"
DEST="${REGISTER_BACKUP:-/mnt/nas/registers}"

mkdir -p "$DEST"
cp -R "$SRC/." "$DEST/"
status=$?
count=$(find "$DEST" -type f | wc -l)

[ "$status" -ne 0 ] && echo "copy failed with status $status" >&2
[ -n "$SHOW_COUNT" ] && echo "$count files now in $DEST"
"""
_REGISTERS = {
    "registers/baptisms_1841.txt": "1841-03-14 Thomas, son of William and Ann Rowe, miner\n"
                                   "1841-04-02 Grace, daughter of John and Mary Nicholls, farmer\n",
    "registers/burials_1852.txt": "1852-11-20 Elizabeth Rowe, aged 71, of Trewellard\n",
    "registers/marriages_1838.txt": "1838-06-09 Richard Eddy, bachelor, and Jane Oats, spinster, by banns\n",
}
PARISH = {
    "copy_registers.sh": _COPY_SCRIPT,
    "nightly.sh": (
        "#!/usr/bin/env bash\n"
        "# Run from cron at 02:10. Mails the log when the copy does not exit 0.\n"
        "cd \"$(dirname \"$0\")\" || exit 1\n"
        "if ! bash copy_registers.sh > last_copy.log 2>&1; then\n"
        "    mail -s \"register backup FAILED\" \"${BACKUP_MAIL:-me@example.org}\" < last_copy.log\n"
        "fi\n"
    ),
    **_REGISTERS,
    "transcription_guide.md": "Baptisms, marriages and burials each have a file of their own. Keep the spelling as "
                              "written. Put [?] after anything you can't read.\n",
}


def _copy_run(copy: Path, source: str, show: bool, dest: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SHOW_COUNT"}
    env.update(HOME=str(copy), REGISTER_SCANS=str(copy / source), REGISTER_BACKUP=str(dest))
    if show:
        env["SHOW_COUNT"] = "1"
    try:
        return subprocess.run(["bash", "copy_registers.sh"], cwd=copy, env=env, capture_output=True, text=True,
                              timeout=CHECK_RUN_S)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess([], -1, "", f"did not finish in {CHECK_RUN_S} s")


def check_exit_status(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, PARISH, "nightly.sh", *_REGISTERS, "transcription_guide.md")
    if changed:
        return False, changed
    if read(ws, "copy_registers.sh") is None:
        return False, "copy_registers.sh is gone"
    with copy_of(ws) as copy:
        for n, (source, show) in enumerate((("registers", False), ("registers", True),
                                              ("no_such_folder", False), ("no_such_folder", True))):
            dest = copy / f"nas_{n}"
            done = _copy_run(copy, source, show, dest)
            how = f"with {'SHOW_COUNT set' if show else 'SHOW_COUNT unset'}"
            if source == "registers":
                if done.returncode != 0:
                    return False, f"a copy that works still exits {done.returncode} ({how})"
                if sorted(files_under(dest)) != sorted(PurePosixPath(rel).name for rel in _REGISTERS):
                    return False, f"copy_registers.sh no longer copies the registers ({how})"
            elif done.returncode == 0:
                return False, f"a copy that fails (no such folder) exits 0, so no mail would go ({how})"
    return True, "copy_registers.sh exits 0 when the copy works and not when it fails"


TRIALS = {
    "trials/__init__.py": "",
    "trials/scoring.py": (
        "\"\"\"Points for a run at the sheepdog trial.\"\"\"\n\n"
        "PHASES = ('gather', 'lift', 'fetch', 'drive', 'shed', 'pen')\n\n\n"
        "def final_score(marks):\n"
        "    \"\"\"A run's score: the judges' marks averaged, to the nearest whole point (halves go up).\"\"\"\n"
        "    return round(sum(marks) / len(marks))\n\n\n"
        "def placings(runs):\n"
        "    \"\"\"The runs, best first; runs on the same score share a place.\"\"\"\n"
        "    ordered = sorted(runs, key=lambda run: -run['score'])\n"
        "    place, last = 0, None\n"
        "    for n, run in enumerate(ordered, 1):\n"
        "        if run['score'] != last:\n"
        "            place, last = n, run['score']\n"
        "        run['place'] = place\n"
        "    return ordered\n"
    ),
    "trial_day.py": (
        "from trials.scoring import final_score, placings\n\n"
        "runs = []\n"
        "with open('marks.txt') as f:\n"
        "    for line in f:\n"
        "        if not line.strip() or line.startswith('#'):\n"
        "            continue\n"
        "        dog, handler, *marks = (part.strip() for part in line.split(','))\n"
        "        runs.append({'dog': dog, 'handler': handler, 'score': final_score([int(m) for m in marks])})\n\n"
        "for run in placings(runs):\n"
        "    print(f\"{run['place']}. {run['dog']} ({run['handler']}) {run['score']}\")\n"
    ),
    "marks.txt": "# dog, handler, then each judge's mark out of 110\n"
                 "Fly, Gwen Pryce, 84, 85\nMoss, Alun Rees, 85, 86\nNell, Bethan Hughes, 90, 91, 91\n"
                 "Cap, Idris Lloyd, 77, 78\nJess, Mari Evans, 70, 71, 71\n",
    "course_map.md": "The dog goes out left round the ash tree; the pen is by the gate into the top field.\n",
}
_MARK_SETS = ((84, 85), (85, 86), (77, 78), (12, 13), (0, 1), (99, 100), (70, 70, 71), (90, 91, 91),
              (60, 61, 61, 61), (60, 60, 60, 61), (50, 51, 51, 52), (77, 78, 78, 77), (88,), (101, 102, 102, 101))
_OTHER_MARKS = (("Roy", "Ffion Jones", (96, 97)), ("Meg", "Huw Davies", (95, 96, 96)),
                ("Bess", "Sian Morgan", (96, 97, 97, 96)), ("Tess", "Owain Price", (93, 94)))


def _half_up(marks: tuple[int, ...]) -> int:
    return int(Fraction(sum(marks), len(marks)) + Fraction(1, 2)) if marks else 0


def _trial_day(runs: tuple[tuple[str, str, tuple[int, ...]], ...]) -> str:
    scored = sorted(((dog, handler, _half_up(marks)) for dog, handler, marks in runs), key=lambda r: -r[2])
    out, place, last = [], 0, None
    for n, (dog, handler, score) in enumerate(scored, 1):
        if score != last:
            place, last = n, score
        out.append(f"{place}. {dog} ({handler}) {score}")
    return "\n".join(out)


_SCORE_PROBE = (
    "import json\nfrom trials.scoring import final_score\n"
    "print(json.dumps([str(final_score(marks)) for marks in json.loads({sets!r})]))\n"
)


def check_halves_up(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, TRIALS, "marks.txt", "course_map.md")
    if changed:
        return False, changed
    done = run_py(ws, "-B", "-c", _SCORE_PROBE.format(sets=json.dumps(_MARK_SETS)))
    if done.returncode != 0:
        return False, f"trials.scoring cannot be used: {short(done.stderr or done.stdout)}"
    try:
        got = json.loads(done.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return False, f"trials.scoring prints as it is imported: {short(done.stdout)}"
    for marks, shown in zip(_MARK_SETS, got, strict=True):
        if shown != str(_half_up(marks)):
            return False, f"final_score({list(marks)}) gives {shown}, not {_half_up(marks)}"
    with copy_of(ws) as copy:
        (copy / "marks.txt").write_text("".join(f"{dog}, {handler}, {', '.join(map(str, marks))}\n"
                                                for dog, handler, marks in _OTHER_MARKS))
        wrong = prints(copy, ["-B", "trial_day.py"], _trial_day(_OTHER_MARKS))
    if wrong:
        return False, f"with other marks: {wrong}"
    return True, "a score's half goes up, everywhere the trial's scores are made"


HELD_OUT_12: tuple[Task, ...] = (
    Task("route_sums", AUDAX, "riders keep ending up with broken gpx downloads. can u put a SHA256SUMS file in "
         "audax_routes so they can check theirs with sha256sum -c", check_route_sums),
    Task("win_names", ROCKPOOL, "OneDrive on my work laptop won't sync the rockpool_pod folder - it says some file "
         "names contain characters Windows doesn't allow. Could you rename the offending ones so it syncs?",
         check_win_names),
    Task("unit_user", SAUNA, "the logs the sauna controller writes on the pi belong to some other account and i "
         "cant delete them. what user does that service actualy run as??", check_unit_user),
    Task("page_path", KART, "wheres the quickest laps page on the kart site? theres no link to it from the home page "
         "and /laps just gives me a 404", check_page_path),
    Task("subs_shift", WALLING, "the english subtitle track for the walling film runs 2.5 seconds behind the "
         "picture, the whole way through. can you shift it so it lines up", check_subs_shift),
    Task("merge_markers", TRAMLINE, "merged the glassworks branch into mine and now stops.go is full of conflict "
         "markers. pls resolve them, keeping the changes from both sides", check_merge_markers),
    Task("add_member", MORRIS, "Marnie Tregothnan has joined the side - she plays concertina, joined 2025. Can you "
         "add her to the members list and regenerate the members page?", check_add_member),
    Task("hours_script", PIANO, "i'd like a script, visit_hours.py, that totals up the hours booked in "
         "tuning_visits.ics so i can rerun it every month for invoicing. and whats it come to for this file?",
         check_hours_script),
    Task("exit_status", PARISH, "Every morning I get the 'register backup FAILED' email, yet all the files are "
         "sitting on the NAS just fine. I'd still want that email if it ever genuinely fails, though.",
         check_exit_status),
    Task("halves_up", TRIALS, "sheepdog scores round halves weirdly: an average of 84.5 gets 84 but 85.5 gets 86. "
         "halves shud always go up", check_halves_up),
)

# The words that make each job itself: the product's sources must not hold any of them as a
# word (tests/test_eval.py), nor may any other job's prompt or fixture.
WORDS_12: dict[str, tuple[str, ...]] = {
    "route_sums": ("audax", "brevet", "SHA256SUMS", "Fenland", "Wolds"),
    "win_names": ("rockpool", "OneDrive", "tardigrades", "axolotl", "nudibranchs"),
    "unit_user": ("sauna", "kiuas", "stove_loop", "SupplementaryGroups", "sauna-heater"),
    "page_path": ("kart", "pitlane", "best-laps", "podium", "track_pages"),
    "subs_shift": ("drystone", "walling", "hearting", "throughstone", "Gunnerside"),
    "merge_markers": ("tramline", "Glassworks", "Ropewalk", "Infirmary", "FirstTram"),
    "add_member": ("morris", "Tregothnan", "melodeon", "concertina", "render_members"),
    "hours_script": ("visit_hours", "tuning_visits", "VEVENT", "Steinway", "Rottingdean"),
    "exit_status": ("copy_registers", "baptisms", "parish", "SHOW_COUNT", "REGISTER_BACKUP"),
    "halves_up": ("sheepdog", "final_score", "placings", "Pryce", "trial_day"),
}


# ---- what right and nearly right runs do ----


def _sums(name: str = "audax_routes/SHA256SUMS", files: tuple[str, ...] = tuple(AUDAX_GPX),
          line: Callable[[str, str], str] = lambda digest, rel: f"{digest}  {PurePosixPath(rel).name}\n",
          digest: Callable[[bytes], str] = lambda data: hashlib.sha256(data).hexdigest()) -> Callable[[Path], None]:
    """A sums file `name` over `files`, each written as `line` of its `digest`."""
    def change(ws: Path) -> None:
        (ws / name).write_text("".join(line(digest((ws / rel).read_bytes()), rel) for rel in files))
    return change


def _rename_pod(name: Callable[[str], str] = lambda old: re.sub(r"\s*[<>:\"|?*]+\s*", " ", old[:-3]).strip() + ".md",
                which: tuple[int, ...] = tuple(range(len(_EPISODES))), also: tuple[str, ...] = (),
                ) -> Callable[[Path], None]:
    """The episodes numbered in `which` (and the files `also`) given `name` of their old
    name."""
    def change(ws: Path) -> None:
        olds = [f"{_POD}/{_EPISODES[n][0]}" for n in which] + list(also)
        for rel in olds:
            new = ws / _POD / name(PurePosixPath(rel).name)
            new.parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).rename(new)
    return change


def _shifted(cues: tuple[tuple[int, int, tuple[str, ...]], ...] = _SUBS, start: int = _SHIFT, end: int = _SHIFT,
             stamp: Callable[[int], str] = _stamp, first: int = 1) -> Callable[[Path], None]:
    """drystone.en.srt with its starts moved by `start` and its ends by `end` ms, written
    with `stamp`, numbered from `first`."""
    def change(ws: Path) -> None:
        (ws / f"{_FILM}/drystone.en.srt").write_text("\n".join(
            f"{n}\n{stamp(a + start)} --> {stamp(b + end)}\n" + "\n".join(lines) + "\n"
            for n, (a, b, lines) in enumerate(cues, first)))
    return change


def _naive_stamp(ms: int) -> str:
    """A time shifted by taking 2.5 s off its seconds alone (the minutes and hours left as
    they were), as a careless edit by hand would."""
    h, rest = divmod(ms, 3600000)
    m, rest = divmod(rest, 60000)
    s = (rest + _SHIFT) % 60000
    return f"{h:02d}:{m:02d}:{s // 1000:02d},{s % 1000:03d}"


def _resolve(stops: str, times: str) -> Callable[[Path], None]:
    """stops.go with its first conflict resolved as `stops` and its second as `times`."""
    def change(ws: Path) -> None:
        text = _DIFF3
        first = text.index("<<<<<<< HEAD\n\t{\"Infirmary\"")
        end = text.index(">>>>>>> glassworks-extension\n", first) + len(">>>>>>> glassworks-extension\n")
        text = text[:first] + stops + text[end:]
        second = text.index("<<<<<<< HEAD\n")
        end = text.index(">>>>>>> glassworks-extension\n", second) + len(">>>>>>> glassworks-extension\n")
        (ws / "tramline/stops.go").write_text(text[:second] + times + text[end:])
    return change


_BOTH_STOPS = "\t{\"Glassworks\", 11},\n\t{\"Infirmary\", 12},\n"
_BOTH_TIMES = ("// FirstTram leaves the depot at half five from the May timetable.\nconst FirstTram = \"05:30\"\n\n"
               "// LastTram is the last departure from the depot.\nconst LastTram = \"23:50\"\n")


def _members(rows: tuple[tuple[str, ...], ...] = (*_MEMBERS, _NEWCOMER), render: bool = True,
             page: str | None = None, raw: str | None = None) -> Callable[[Path], None]:
    """morris_members.tsv made `rows` (or `raw`), and the page rebuilt (or made `page`)."""
    def change(ws: Path) -> None:
        (ws / "morris_members.tsv").write_text(raw if raw is not None else _tsv(rows))
        if page is not None:
            (ws / "site/members.html").write_text(page)
        elif render:
            (ws / "site/members.html").write_text(_members_page(rows))
    return change


_HOURS_SCRIPT = '''import re
import sys
from datetime import datetime, timedelta

DURATION = re.compile(r'P(?:(\\d+)D)?(?:T(?:(\\d+)H)?(?:(\\d+)M)?(?:(\\d+)S)?)?')


def unfolded(text):
    return text.replace('\\r\\n', '\\n').replace('\\n ', '').splitlines()


def moment(value):
    return datetime.strptime(value.rstrip('Z'), '%Y%m%dT%H%M%S')


def total_hours(path):
    total, event = timedelta(), None
    with open(path, encoding='utf-8') as f:
        for line in unfolded(f.read()):
            name, _, value = line.partition(':')
            key = name.split(';')[0]
            if line == 'BEGIN:VEVENT':
                event = {}
            elif line == 'END:VEVENT':
                end = event.get('DTEND')
                if 'DURATION' in event:
                    d, h, m, s = (int(g or 0) for g in DURATION.fullmatch(event['DURATION']).groups())
                    length = timedelta(days=d, hours=h, minutes=m, seconds=s)
                else:
                    length = moment(end) - moment(event['DTSTART'])
                total += length
                event = None
            elif event is not None:
                event[key] = value
    return total.total_seconds() / 3600


if __name__ == '__main__':
    hours = total_hours(sys.argv[1] if len(sys.argv) > 1 else 'tuning_visits.ics')
    print(f'{hours:.2f} hours')
'''


def _hours_script(text: str = _HOURS_SCRIPT, name: str = "visit_hours.py") -> Callable[[Path], None]:
    def change(ws: Path) -> None:
        (ws / name).write_text(text)
    return change


def _copy_fix(old: str, new: str) -> Callable[[Path], None]:
    return subbing("copy_registers.sh", old, new)


_SHOW_LINE = '[ -n "$SHOW_COUNT" ] && echo "$count files now in $DEST"\n'


def _score(body: str, imports: str = "") -> Callable[[Path], None]:
    """final_score's body made `body` (with `imports` at the top of scoring.py)."""
    return each_of(subbing("trials/scoring.py", "    return round(sum(marks) / len(marks))\n", body),
                   subbing("trials/scoring.py", "PHASES = (", f"{imports}PHASES = ("))


# What a right run of each job does to its workspace, and its answer (tests/test_eval.py
# checks every checker passes it); kept here with the jobs, as SOLVED_HELD_OUT_11 is.
SOLVED_HELD_OUT_12: dict[str, tuple[Any, str]] = {
    "route_sums": (_sums(), "Wrote audax_routes/SHA256SUMS for the three .gpx files; `cd audax_routes && sha256sum "
                            "-c SHA256SUMS` checks them."),
    "win_names": (_rename_pod(), "Renamed the six episodes whose names had : ? < > \" or | in them."),
    "unit_user": (None, "It runs as kiuas: deploy/sauna-heater.service says User=pi, but the drop-in "
                        "sauna-heater.service.d/override.conf sets User=kiuas (group gpio), and the drop-in wins."),
    "page_path": (None, "It's http://localhost:3000/track/best-laps - routes/track_pages.js serves podium.html at "
                        "/best-laps, and kart_track.js mounts that router under /track."),
    "subs_shift": (_shifted(), "Moved every cue in drystone.en.srt 2.5 seconds earlier."),
    "merge_markers": (_resolve(_BOTH_STOPS, _BOTH_TIMES), "Resolved both conflicts: Glassworks (11) and Infirmary "
                                                          "(12) in running order, FirstTram 05:30 and LastTram "
                                                          "23:50."),
    "add_member": (_members(), "Added Marnie Tregothnan (musician, concertina, 2025) and reran render_members.py."),
    "hours_script": (_hours_script(), "Wrote visit_hours.py; this month's file comes to 14.75 hours (14h45m)."),
    "exit_status": (_copy_fix(_SHOW_LINE, _SHOW_LINE + 'exit "$status"\n'),
                    "The last line of copy_registers.sh returned 1 whenever SHOW_COUNT was unset, so the script "
                    "exited 1 even when the copy worked; it exits with the copy's status now."),
    "halves_up": (_score("    return int(sum(marks) / len(marks) + 0.5)\n"),
                  "final_score in trials/scoring.py used round(), which rounds halves to even; it adds a half and "
                  "truncates now, so 84.5 gives 85."),
}


# Runs that are nearly right, each of which its checker must refuse: (job, change, answer).
NEAR_MISSES_12: tuple[tuple[str, Any, str], ...] = (
    ("route_sums", _sums(name="SHA256SUMS", line=lambda digest, rel: f"{digest}  {rel}\n"),
     "Wrote SHA256SUMS at the top."),
    ("route_sums", _sums(line=lambda digest, rel: f"{digest}  {rel}\n"), "Wrote audax_routes/SHA256SUMS."),
    ("route_sums", _sums(digest=lambda data: hashlib.md5(data).hexdigest()), "Wrote the sums."),
    ("route_sums", _sums(files=tuple(AUDAX_GPX)[:2]), "Wrote the sums."),
    ("route_sums", _sums(digest=lambda data: hashlib.sha256(data.strip()).hexdigest()), "Wrote the sums."),
    ("route_sums", each_of(lambda ws: (ws / "audax_routes/SHA256SUMS").write_text(""),
                           _sums(files=(*AUDAX_GPX, "audax_routes/SHA256SUMS"))), "Ran sha256sum * > SHA256SUMS."),
    ("route_sums", _sums(digest=lambda data: hashlib.sha1(data).hexdigest()), "Wrote the sums."),
    ("route_sums", each_of(subbing("audax_routes/brevet_300_wolds.gpx", "Wolds and Back", "Wolds &amp; Back"),
                           _sums()), "Tidied a title and wrote the sums."),
    ("win_names", _rename_pod(which=(0,)), "Renamed the one with a colon."),
    ("win_names", _rename_pod(name=lambda old: old.replace(": ", "/").replace("?", "").replace("<", "")
                              .replace(">", "").replace('"', "").replace("|", "-")), "Renamed them."),
    ("win_names", lambda ws: [(ws / f"{_POD}/{name}").unlink() for name, *_ in _EPISODES],
     "Deleted the files with bad names."),
    ("win_names", _rename_pod(name=lambda old: f"episode_{int(old[2:4])}.md"), "Renamed them episode_1.md etc."),
    ("win_names", _rename_pod(also=tuple(_FINE), name=lambda old: re.sub(r"[^\w.]+", "_", old).strip("_")),
     "Renamed every file to safe names."),
    ("win_names", _rename_pod(name=lambda old: re.sub(r"\s*[<>:\"|?*]+\s*", " ", old[:-3]).strip()),
     "Renamed them."),
    ("win_names", each_of(_rename_pod(), lambda ws: [
        (ws / f"{_POD}/ep01 - Tardigrades tiny tanks.md").write_text(
            _EPISODE_NOTES[f"{_POD}/ep01 - Tardigrades: tiny tanks.md"].replace(": tiny", " tiny"))]),
     "Renamed them and fixed the heading too."),
    ("win_names", _rename_pod(name=lambda old: re.sub(r"\s*[<>:\"?*]+\s*", " ", old[:-3]).strip() + ".md"),
     "Renamed them."),
    ("unit_user", None, "It runs as pi (User=pi in deploy/sauna-heater.service)."),
    ("unit_user", None, "As root: system services run as root."),
    ("unit_user", None, "It runs in the gpio group."),
    ("unit_user", None, "It runs as whichever user override.conf sets."),
    ("unit_user", None, "It runs as pi; the log is root's because /var/log belongs to root."),
    ("unit_user", None, "It runs as pi, or as kiuas once the drop-in is installed."),
    ("unit_user", None, "The sauna user."),
    ("unit_user", subbing("deploy/sauna-heater.service.d/override.conf", "User=kiuas", "User=pi"),
     "It ran as kiuas; I changed the drop-in so it runs as pi."),
    ("page_path", None, "It's at /best-laps."),
    ("page_path", None, "The page is views/podium.html, at http://localhost:3000/podium."),
    ("page_path", None, "Go to /track/podium."),
    ("page_path", None, "POST to /crew/best-laps/clear."),
    ("page_path", None, "http://localhost:3000/track/heats"),
    ("page_path", None, "It's /track/best_laps."),
    ("page_path", None, "Try /laps again after a restart."),
    ("page_path", subbing("views/home.html", "</ul>", "  <li><a href=\"/best-laps\">Quickest laps</a></li>\n</ul>"),
     "Added a link to /best-laps on the home page."),
    ("subs_shift", _shifted(start=-_SHIFT, end=-_SHIFT), "Shifted them by 2.5 seconds."),
    ("subs_shift", _shifted(end=0), "Moved each subtitle's start 2.5 seconds earlier."),
    ("subs_shift", _shifted(start=-2000, end=-2000), "Shifted them 2 seconds earlier."),
    ("subs_shift", each_of(_shifted(), lambda ws: sub(ws, f"{_FILM}/drystone.en.srt", "01:02:08,100 --> 01:02:11,500",
                                                      "01:02:10,600 --> 01:02:14,000")), "Shifted them."),
    ("subs_shift", _shifted(start=0, end=0, stamp=_naive_stamp), "Took 2.5 seconds off every time."),
    ("subs_shift", each_of(_shifted(), lambda ws: (ws / f"{_FILM}/drystone.cy.srt").write_text(
        _srt(_WELSH, -1500))), "Shifted both subtitle files."),
    ("subs_shift", _shifted(first=0), "Shifted them."),
    ("subs_shift", _shifted(stamp=lambda ms: _stamp(ms).replace(",", ".")), "Shifted them."),
    ("merge_markers", _resolve("\t{\"Infirmary\", 12},\n",
                               "// FirstTram leaves the depot at half five from the May timetable.\n"
                               "const FirstTram = \"05:30\"\n"), "Kept my side."),
    ("merge_markers", _resolve("\t{\"Glassworks\", 11},\n", "const FirstTram = \"05:40\"\n\n// LastTram is the last "
                               "departure from the depot.\nconst LastTram = \"23:50\"\n"), "Kept theirs."),
    ("merge_markers", _resolve("\t{\"Infirmary\", 12},\n\t{\"Glassworks\", 11},\n", _BOTH_TIMES), "Kept both."),
    ("merge_markers", _resolve(_BOTH_STOPS, "const FirstTram = \"05:40\"\n" + _BOTH_TIMES), "Kept both."),
    ("merge_markers", _resolve(_BOTH_STOPS + "||||||| 3f2c9e1\n", _BOTH_TIMES), "Resolved them."),
    ("merge_markers", _resolve(_BOTH_STOPS, "const FirstTram = \"05:40\"\n\n// LastTram is the last departure from "
                               "the depot.\nconst LastTram = \"23:50\"\n"), "Kept both."),
    ("merge_markers", _resolve(_BOTH_STOPS, "// FirstTram leaves the depot at half five from the May timetable.\n"
                               "const FirstTram = \"05:30\"\n"), "Kept both."),
    ("merge_markers", each_of(_resolve(_BOTH_STOPS, _BOTH_TIMES), lambda ws: (ws / "tramline/stops_test.go").unlink()),
     "Resolved them; the test was in the way, so it is gone."),
    ("add_member", _members(render=False), "Added her to morris_members.tsv."),
    ("add_member", lambda ws: (ws / "site/members.html").write_text(_members_page((*_MEMBERS, _NEWCOMER))),
     "Added her to the members page."),
    ("add_member", _members(raw=_tsv(_MEMBERS) + "Marnie Tregothnan  musician  concertina  2025\n", render=False),
     "Added her and rebuilt the page."),
    ("add_member", _members(page=_members_page(_MEMBERS).replace(
        "</table>", "    <tr><td>Marnie Tregothnan</td><td>musician</td><td>concertina</td><td>2025</td></tr>\n"
                    "</table>")), "Added her to both."),
    ("add_member", _members(rows=(*_MEMBERS, _NEWCOMER, _NEWCOMER)), "Added her and rebuilt the page."),
    ("add_member", _members(rows=(*_MEMBERS, ("Marnie Tregothnan", "dancer", "concertina", "2025"))),
     "Added her and rebuilt the page."),
    ("add_member", _members(rows=(*_MEMBERS[:-1], _NEWCOMER)), "Added her and rebuilt the page."),
    ("add_member", _members(rows=(*_MEMBERS, ("Marnie Tregothnan", "musician", "concertina", ""))),
     "Added her and rebuilt the page."),
    ("hours_script", None, "This month's file comes to 14.75 hours."),
    ("hours_script", _hours_script(), "It comes to about 15 hours."),
    ("hours_script", _hours_script(_HOURS_SCRIPT.replace(
        "                if 'DURATION' in event:", "                if end is None:\n                    continue\n"
                                                   "                if 'DURATION' in event:")), "11 hours."),
    ("hours_script", _hours_script("print('14.75 hours')\n"), "14.75 hours."),
    ("hours_script", _hours_script(_HOURS_SCRIPT.replace("total += length", "total += timedelta(hours=length."
                                                                            "seconds // 3600)")), "12 hours."),
    ("hours_script", _hours_script(name="hours.py"), "Wrote hours.py: 14.75 hours."),
    ("hours_script", _hours_script(_HOURS_SCRIPT.replace("key = name.split(';')[0]", "key = name")),
     "14.75 hours."),
    ("hours_script", _hours_script(_HOURS_SCRIPT.replace("print(f'{hours:.2f} hours')",
                                                         "print(int(hours * 3600))")), "53100 seconds, 14.75 hours."),
    ("exit_status", _copy_fix(_SHOW_LINE, _SHOW_LINE + "exit 0\n"), "It exits 0 now."),
    ("exit_status", _copy_fix(_SHOW_LINE, _SHOW_LINE.rstrip("\n") + " || true\n"), "Fixed."),
    ("exit_status", _copy_fix(_SHOW_LINE, 'if [ -n "$SHOW_COUNT" ]; then\n    echo "$count files now in $DEST"\nfi\n'),
     "Made the last line an if."),
    ("exit_status", _copy_fix("SRC=", "set -e\n\nSRC="), "Added set -e."),
    ("exit_status", _copy_fix(_SHOW_LINE, ""), "Took out the line that failed."),
    ("exit_status", _copy_fix(_SHOW_LINE, '[ -z "$SHOW_COUNT" ] || echo "$count files now in $DEST"\n'), "Fixed."),
    ("exit_status", _copy_fix(_SHOW_LINE, _SHOW_LINE + "exit $?\n"), "It exits with the status now."),
    ("exit_status", subbing("nightly.sh", "    mail -s", "    : mail -s"), "Stopped nightly.sh sending the mail."),
    ("halves_up", _score("    return math.ceil(sum(marks) / len(marks))\n", "import math\n\n"), "Rounds up now."),
    ("halves_up", _score("    return round(sum(marks) / len(marks) + 0.5)\n"), "Added a half."),
    ("halves_up", _score("    return int(sum(marks) / len(marks))\n"), "Truncates now."),
    ("halves_up", _score("    return round(sum(marks) / len(marks), 0)\n"), "Rounds to 0 places."),
    ("halves_up", subbing("trial_day.py", "'score': final_score([int(m) for m in marks])",
                          "'score': int(sum(map(int, marks)) / len(marks) + 0.5)"), "Fixed it in trial_day.py."),
    ("halves_up", _score("    mean = sum(marks) / len(marks)\n    if mean == 84.5:\n        return 85\n"
                         "    return round(mean)\n"), "84.5 gives 85."),
    ("halves_up", _score("    return int((Decimal(sum(marks)) / len(marks)).quantize(Decimal(1), ROUND_HALF_EVEN))\n",
                         "from decimal import ROUND_HALF_EVEN, Decimal\n\n"), "Uses Decimal."),
    ("halves_up", _score("    mean = sum(marks) / len(marks)\n    return int(mean) + (mean % 1 > 0.5)\n"),
     "Rounds up past the half."),
)
