"""A second held-out set: ten more small jobs, of the shapes more_tasks.py's are (file
housekeeping, questions about code, edits of several lines, two-step jobs, jobs on a
file the request does not name) but sharing no file, identifier or distinctive word
with any job of tasks.py or more_tasks.py.

HELD_OUT became known as leading was developed beside it; these are new, so a change to
the leading can be measured on jobs nobody has looked at while writing it. They were only
run to report (`ops/eval/run.py --set held_out_2`) until stop 41, which read them while
developing (the set had become known in part) and wrote third_tasks.py as the clean held-out
set in their place: from then on they are development jobs like more_tasks.py's. Nothing in
the product names a job, a file or a word of theirs (tests/test_eval.py checks the
product's sources against WORDS_2 and the fixtures' file names).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ops.eval.tasks import Task, Verdict, prints, read, says, short, unchanged, verdict

# ---- file housekeeping ----

ORIGS = {
    "quarry.py": "STONE = 'granite'\n",
    "quarry.py.orig": "STONE = 'marble'\n",
    "atlas/compass.txt": "north is up\n",
    "atlas/compass.txt.orig": "north is down\n",
    "atlas/maps/fjord.txt": "deep water\n",
    "atlas/maps/fjord.txt.orig": "shallow water\n",
}


def check_purge_orig(ws: Path, answer: str) -> Verdict:
    left = sorted(p.relative_to(ws).as_posix() for p in ws.rglob("*.orig"))
    if left:
        return False, f"still there: {', '.join(left)}"
    keep = [rel for rel in ORIGS if not rel.endswith(".orig")]
    return verdict(unchanged(ws, ORIGS, *keep), "every .orig file is gone, the others as they were")


SONGS = {
    "lyrics/ballad.text": "oh the wind and the rain\n",
    "lyrics/shanty.text": "haul away, haul away\n",
    "lyrics/index.md": "# songs\n",
    "liner.text": "recorded in one take\n",
}


def check_text_to_md(ws: Path, answer: str) -> Verdict:
    for stem in ("ballad", "shanty"):
        if read(ws, f"lyrics/{stem}.md") != SONGS[f"lyrics/{stem}.text"]:
            return False, f"lyrics/{stem}.md is missing or does not hold {stem}.text's text"
    folder = ws / "lyrics"
    there = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    if there != ["ballad.md", "index.md", "shanty.md"]:
        return False, f"lyrics/ holds {', '.join(there)}"
    return verdict(unchanged(ws, SONGS, "lyrics/index.md", "liner.text"),
                   "both songs end in .md, word for word; the rest as it was")


# ---- questions about code ----

HARBOR = {
    "harbor/__init__.py": "",
    "harbor/tides.py": (
        "def fetch_tide(day):\n    return {'mon': 1.2, 'tue': 0.8}.get(day, 1.0)\n\n\n"
        "def tide_table():\n    return ['mon', 'tue']\n"
    ),
    "harbor/voyage.py": (
        "from harbor.tides import fetch_tide\n\n\n"
        "def crew_size():\n    return 4\n\n\n"
        "def plan_voyage(day):\n    depth = fetch_tide(day)\n    return 'sail' if depth > 1 else 'wait'\n"
    ),
}


def check_who_calls(ws: Path, answer: str) -> Verdict:
    return says(answer, "plan_voyage")


MARINA = {
    "marina.py": (
        "class NoSuchPier(Exception):\n    pass\n\n\n"
        "class BerthTaken(Exception):\n    pass\n\n\n"
        "def moor(pier, slot, taken):\n"
        "    if pier not in ('north', 'south'):\n        raise NoSuchPier(pier)\n"
        "    if slot in taken:\n        raise BerthTaken(slot)\n"
        "    return f'{pier}-{slot}'\n"
    ),
}


def check_which_exception(ws: Path, answer: str) -> Verdict:
    return says(answer, "BerthTaken")


# ---- edits of several lines ----

ROSTER = {"roster.txt": "Wren\nAbel\nOtto\nMirela\nCasimir\nIngrid\nDaphne\nBoris\n"}


def check_sort_roster(ws: Path, answer: str) -> Verdict:
    text = read(ws, "roster.txt")
    if text is None:
        return False, "roster.txt is gone"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if lines != sorted(ROSTER["roster.txt"].split()):
        return False, f"roster.txt is not the same names in order: {short(', '.join(lines))}"
    return True, "the same names, in alphabetical order"


SIEVE = {
    "sieve.py": (
        "def primes(limit):\n"
        "    found = []\n"
        "    for n in range(2, limit):\n"
        "        print('trace: trying', n)\n"
        "        if all(n % p for p in found):\n"
        "            print('trace: keeping', n)\n"
        "            found.append(n)\n"
        "    print('trace: done')\n"
        "    return found\n\n\n"
        "print(primes(20))\n"
    ),
}


def _code_lines(text: str) -> list[str]:
    """The lines that are neither blank nor a trace print, right-stripped."""
    return [ln.rstrip() for ln in text.splitlines() if ln.strip() and "trace:" not in ln]


def check_comment_trace(ws: Path, answer: str) -> Verdict:
    text = read(ws, "sieve.py")
    if text is None:
        return False, "sieve.py is gone"
    for tag in ("trace: trying", "trace: keeping", "trace: done"):
        lines = [ln for ln in text.splitlines() if tag in ln]
        if not lines:
            return False, f"the {tag!r} print is gone, not commented out"
        if not all(ln.lstrip().startswith("#") for ln in lines):
            return False, f"the {tag!r} print is not commented out"
    if _code_lines(text) != _code_lines(SIEVE["sieve.py"]):
        return False, "lines other than the trace prints changed"
    return verdict(prints(ws, ["sieve.py"], "[2, 3, 5, 7, 11, 13, 17, 19]"),
                   "the three trace prints are comments, the rest runs as it did")


# ---- two-step jobs ----

GIZMOS = {
    "gizmos/sprocket.py": "TEETH = 32\n",
    "gizmos/flange.py": "BOLTS = 6\n",
    "gizmos/gasket.py": "RUBBER = True\n",
    "gizmos/parts.csv": "part,qty\nsprocket,2\n",
}


def check_pylist(ws: Path, answer: str) -> Verdict:
    text = read(ws, "pylist.txt")
    if text is None:
        return False, "pylist.txt does not exist"
    names = []
    for line in text.splitlines():
        item = line.strip().lstrip("-*").strip().removeprefix("./").removeprefix("gizmos/")
        if item:
            names.append(item if item.endswith(".py") else item + ".py")
    if sorted(names) != ["flange.py", "gasket.py", "sprocket.py"]:
        return False, f"pylist.txt lists {short(', '.join(names))}"
    return verdict(unchanged(ws, GIZMOS, *GIZMOS), "pylist.txt lists the three, one a line")


KETTLE = {
    "kettle.py": (
        "def boil(ml):\n    return ml * 0.02 + steep(ml)\n\n\n"
        "def steep(ml):\n    return ml / 100\n\n\n"
        "def descale(ml):\n    return ml * 3\n\n\n"
        "def pour(ml):\n    return f'{boil(ml):.1f} min'\n\n\n"
        "print(pour(250))\n"
    ),
}


def check_drop_unused(ws: Path, answer: str) -> Verdict:
    text = read(ws, "kettle.py")
    if text is None:
        return False, "kettle.py is gone"
    if re.search(r"\bdescale\b", text):
        return False, "descale, which nothing calls, is still in kettle.py"
    for name in ("boil", "steep", "pour"):
        if not re.search(rf"^def {name}\(", text, re.M):
            return False, f"{name} is gone, and it is used"
    return verdict(prints(ws, ["kettle.py"], "7.5 min"), "descale is gone, kettle.py prints as it did")


# ---- jobs on a file the request does not name ----

SHIPYARD = {
    "shipyard/__init__.py": "",
    "shipyard/quota.py": "UPLOAD_LIMIT_MB = 5\nSTORAGE_LIMIT_MB = 500\nMAX_FOLDERS = 5\n",
    "shipyard/intake.py": (
        "from shipyard.quota import UPLOAD_LIMIT_MB\n\n\n"
        "def too_big(size_mb):\n    return size_mb > UPLOAD_LIMIT_MB\n"
    ),
}


def check_raise_limit(ws: Path, answer: str) -> Verdict:
    text = read(ws, "shipyard/quota.py")
    if text is None:
        return False, "shipyard/quota.py is gone"
    if not re.search(r"^UPLOAD_LIMIT_MB\s*=\s*20\s*(#.*)?$", text, re.M):
        return False, f"shipyard/quota.py has no UPLOAD_LIMIT_MB = 20: {short(text)}"
    rest = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("UPLOAD_LIMIT_MB")]
    if rest != ["STORAGE_LIMIT_MB = 500", "MAX_FOLDERS = 5"]:
        return False, f"other limits changed: {short(' / '.join(rest))}"
    return verdict(unchanged(ws, SHIPYARD, "shipyard/intake.py"), "the upload limit is 20, the rest as it was")


LEVY = {
    "till.py": "from shop.levy import with_tariff\n\nprint(f'{with_tariff(200):.2f}')\n",
    "shop/__init__.py": "",
    "shop/levy.py": (
        "TARIFF = 0.1\n\n\n"
        "def with_tariff(amount):\n    extra = amount * TARIFF\n    return amount + extra + extra\n"
    ),
}


def check_tariff_once(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, LEVY, "till.py")
    if changed:
        return False, changed
    if not re.search(r"^TARIFF\s*=\s*0?\.10*\s*(#.*)?$", read(ws, "shop/levy.py") or "", re.M):
        return False, "TARIFF is no longer 0.1"
    wrong = prints(ws, ["till.py"], "220.00") or prints(
        ws, ["-c", "from shop.levy import with_tariff; print(f'{with_tariff(50):.2f}')"], "55.00")
    return verdict(wrong, "the tariff is added once")


HELD_OUT_2: tuple[Task, ...] = (
    Task("purge_orig", ORIGS, "delete all the .orig files, some are in subfolders too", check_purge_orig),
    Task("text_to_md", SONGS, "the .text files in lyrics/ should end in .md, rename them", check_text_to_md),
    Task("who_calls", HARBOR, "which function calls fetch_tide", check_who_calls),
    Task("which_exception", MARINA, "what exception does moor raise when the slot is already taken?",
         check_which_exception),
    Task("sort_roster", ROSTER, "sort roster.txt alphabetically", check_sort_roster),
    Task("comment_trace", SIEVE, "comment out the trace prints in sieve.py", check_comment_trace),
    Task("pylist", GIZMOS, "put the names of the .py files in gizmos/ into pylist.txt, one per line", check_pylist),
    Task("drop_unused", KETTLE, "kettle.py has a function nothing ever calls. find it and delete it",
         check_drop_unused),
    Task("raise_limit", SHIPYARD, "bump the upload limit from 5 to 20 mb", check_raise_limit),
    Task("tariff_once", LEVY, "prices come out too high, looks like the tariff gets added twice. fix it",
         check_tariff_once),
)

# The words that make each job itself: the product's sources must not hold any of them as a
# word (tests/test_eval.py), nor may any other job's prompt or fixture.
WORDS_2: dict[str, tuple[str, ...]] = {
    "purge_orig": ("orig", "quarry", "atlas", "fjord"),
    "text_to_md": ("lyrics", "ballad", "shanty", "liner"),
    "who_calls": ("fetch_tide", "plan_voyage", "harbor", "tides"),
    "which_exception": ("moor", "BerthTaken", "NoSuchPier", "marina"),
    "sort_roster": ("roster", "Mirela", "Casimir"),
    "comment_trace": ("sieve", "trace", "primes"),
    "pylist": ("pylist", "gizmos", "sprocket", "flange", "gasket"),
    "drop_unused": ("kettle", "descale", "steep", "boil"),
    "raise_limit": ("shipyard", "upload", "UPLOAD_LIMIT_MB", "quota"),
    "tariff_once": ("tariff", "levy", "with_tariff", "till"),
}


def _sub(ws: Path, rel: str, old: str, new: str) -> None:
    path = ws / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new))


def _rename_songs(ws: Path, suffix: str) -> None:
    for stem in ("ballad", "shanty"):
        (ws / f"lyrics/{stem}.text").rename(ws / f"lyrics/{stem}{suffix}")


def _sort_roster(ws: Path, reverse: bool = False) -> None:
    names = sorted((ws / "roster.txt").read_text().split(), reverse=reverse)
    (ws / "roster.txt").write_text("\n".join(names) + "\n")


def _drop_trace(ws: Path) -> None:
    lines = (ws / "sieve.py").read_text().splitlines(keepends=True)
    (ws / "sieve.py").write_text("".join(ln for ln in lines if "trace:" not in ln))


# What a right run of each job does to its workspace, and its answer (tests/test_eval.py
# checks every checker passes it); kept here with the jobs, as SOLVED_HELD_OUT is.
SOLVED_HELD_OUT_2: dict[str, tuple[Any, str]] = {
    "purge_orig": (lambda ws: [p.unlink() for p in list(ws.rglob("*.orig"))], "Deleted the three .orig files."),
    "text_to_md": (lambda ws: _rename_songs(ws, ".md"), "Renamed."),
    "who_calls": (None, "plan_voyage (in harbor/voyage.py) calls fetch_tide."),
    "which_exception": (None, "moor raises BerthTaken when the slot is in taken."),
    "sort_roster": (_sort_roster, "Sorted."),
    "comment_trace": (lambda ws: _sub(ws, "sieve.py", "print('trace:", "# print('trace:"), "Done."),
    "pylist": (lambda ws: (ws / "pylist.txt").write_text("- gizmos/sprocket.py\n- gizmos/flange.py\ngasket.py\n"),
               "Written."),
    "drop_unused": (lambda ws: _sub(ws, "kettle.py", "def descale(ml):\n    return ml * 3\n\n\n", ""),
                    "descale was never called; deleted."),
    "raise_limit": (lambda ws: _sub(ws, "shipyard/quota.py", "UPLOAD_LIMIT_MB = 5", "UPLOAD_LIMIT_MB = 20  # MB"),
                    "Done."),
    "tariff_once": (lambda ws: _sub(ws, "shop/levy.py", "amount + extra + extra", "amount + extra"), "Fixed."),
}

# Runs that are nearly right, each of which its checker must refuse: (job, change, answer).
NEAR_MISSES_2: tuple[tuple[str, Any, str], ...] = (
    ("purge_orig", lambda ws: (ws / "quarry.py.orig").unlink(), "Deleted."),
    ("purge_orig", lambda ws: [p.unlink() for p in list(ws.rglob("*")) if p.is_file() and "fjord" in p.name], ""),
    ("text_to_md", lambda ws: _rename_songs(ws, ".text.md"), "Renamed."),
    ("who_calls", None, "fetch_tide is defined in harbor/tides.py."),
    ("which_exception", None, "It raises NoSuchPier."),
    ("sort_roster", lambda ws: _sort_roster(ws, reverse=True), "Sorted."),
    ("sort_roster", lambda ws: _sub(ws, "roster.txt", "Otto\n", ""), "Sorted."),
    ("comment_trace", lambda ws: _sub(ws, "sieve.py", "print('trace: done')", "# print('trace: done')"), "Done."),
    ("comment_trace", _drop_trace, "Removed."),
    ("pylist", lambda ws: (ws / "pylist.txt").write_text("sprocket.py\nflange.py\ngasket.py\nparts.csv\n"), ""),
    ("drop_unused", lambda ws: _sub(ws, "kettle.py", "def steep(ml):\n    return ml / 100\n\n\n", ""), ""),
    ("raise_limit", lambda ws: _sub(ws, "shipyard/quota.py", "= 5\n", "= 20\n"), "Done."),
    ("tariff_once", lambda ws: _sub(ws, "shop/levy.py", "TARIFF = 0.1", "TARIFF = 0.05"), "Fixed."),
    ("tariff_once", lambda ws: _sub(ws, "till.py", "with_tariff(200)", "with_tariff(200) - 20"), "Fixed."),
)
