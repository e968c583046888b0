"""Twenty more small jobs, of other shapes than tasks.py's: file housekeeping, questions
about code, edits of several lines, two-step jobs, and jobs on a file the request does
not name, phrased as people type them.

They are split in two. DEV is what leading a small model may be developed against;
HELD_OUT is only run to report, beside the others, once a change is made: a rule that
helps a model must help on jobs it was not written for. Nothing in the product names a
job, a file or a word of either (tests/test_eval.py checks the product's sources).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ops.eval.tasks import Task, Verdict, prints, read, says, says_number, short, unchanged, verdict

# ---- DEV ----

DRAFT = {"draft.txt": "Dear team,\nthe picnic moves to Friday.\n", "other.txt": "leave me\n"}


def check_rename_file(ws: Path, answer: str) -> Verdict:
    if (ws / "draft.txt").exists():
        return False, "draft.txt is still there"
    if read(ws, "final.txt") != DRAFT["draft.txt"]:
        return False, f"final.txt does not hold draft.txt's text: {short(repr(read(ws, 'final.txt')))}"
    return verdict(unchanged(ws, DRAFT, "other.txt"), "draft.txt is final.txt, word for word")


BASE_CFG = {"base.cfg": "[main]\nlevel = 3\nname = kiln\n"}


def check_copy_file(ws: Path, answer: str) -> Verdict:
    if read(ws, "base.cfg.bak") != BASE_CFG["base.cfg"]:
        return False, "base.cfg.bak is missing or differs from base.cfg"
    return verdict(unchanged(ws, BASE_CFG, "base.cfg"), "base.cfg.bak is a copy, base.cfg as it was")


TEXTUTIL = {
    "textutil.py": (
        "def slugify(title):\n"
        "    words = title.strip().lower().split()\n"
        "    return '-'.join(words)\n"
    ),
}


def check_slugify(ws: Path, answer: str) -> Verdict:
    return says(answer, "good-morning-sun")


COLORS = {"colors.py": "RED = 'red'\nGREEN = 'green'\nBLUE = 'blue'\n"}


def check_two_constants(ws: Path, answer: str) -> Verdict:
    text = read(ws, "colors.py") or ""
    if not re.search(r"^RED\s*=\s*['\"]#ff0000['\"]\s*$", text, re.M | re.I):
        return False, f"RED is not '#ff0000': {short(text)}"
    if not re.search(r"^BLUE\s*=\s*['\"]#0000ff['\"]\s*$", text, re.M | re.I):
        return False, f"BLUE is not '#0000ff': {short(text)}"
    if not re.search(r"^GREEN\s*=\s*'green'\s*$", text, re.M):
        return False, "GREEN changed"
    return True, "RED and BLUE changed, GREEN as it was"


COUNTER = {"count.py": "print(sum(range(1, 11)))\n"}


def check_run_and_save(ws: Path, answer: str) -> Verdict:
    text = read(ws, "result.txt")
    if text is None:
        return False, "result.txt does not exist"
    return (True, "result.txt holds 55") if text.strip() == "55" else (False, f"result.txt holds {short(text)!r}")


GREETER = {
    "hello_app/__init__.py": "",
    "hello_app/welcome.py": "def welcome(name):\n    return 'Helo, ' + name\n",
    "launch.py": "from hello_app.welcome import welcome\n\nprint(welcome('Sam'))\n",
}


def check_typo_unnamed(ws: Path, answer: str) -> Verdict:
    wrong = prints(ws, ["launch.py"], "Hello, Sam")
    return verdict(wrong or unchanged(ws, GREETER, "launch.py"), "the greeting says Hello")


BILLING = {
    "billing/__init__.py": "",
    "billing/documents.py": "class Invoice:\n    def __init__(self, amount):\n        self.amount = amount\n",
    "billing/views.py": "from billing.documents import Invoice\n\n\ndef show(i: Invoice):\n    return i.amount\n",
}


def check_find_class(ws: Path, answer: str) -> Verdict:
    ok, why = says(answer, "documents.py")
    if ok and "views.py" in answer and "documents.py" not in answer.split("views.py")[0]:
        return False, f"the answer puts it in views.py: {short(answer)}"
    return ok, why


SHAPES = {
    "geometry.py": (
        "import math\n\n\ndef circle_area(r):\n    return math.pi * r * r\n\n\n"
        "def square_area(s):\n    return s * s\n\n\ndef triangle_area(b, h):\n    return b * h / 2\n\n\n"
        "def describe():\n    return 'shapes'\n"
    ),
}


def check_count_functions(ws: Path, answer: str) -> Verdict:
    return says_number(answer, 4)


def check_new_doc(ws: Path, answer: str) -> Verdict:
    text = read(ws, "docs/intro.md")
    if text is None:
        return False, "docs/intro.md does not exist"
    first = text.lstrip().split("\n", 1)[0].strip()
    if first != "# Intro":
        return False, f"its first line is {first!r}"
    return True, "docs/intro.md starts with # Intro"


APP_CFG = {"app.cfg": "mode=prod\nDEBUG=1\nworkers=4\n"}


def check_drop_line(ws: Path, answer: str) -> Verdict:
    text = read(ws, "app.cfg")
    if text is None:
        return False, "app.cfg is gone"
    lines = [ln for ln in text.split("\n") if ln.strip()]
    if lines != ["mode=prod", "workers=4"]:
        return False, f"app.cfg holds {short(text)!r}, not the two other lines"
    return True, "the DEBUG line is gone, the others stay"


# ---- HELD_OUT ----

REPORT = {"report.csv": "name,score\nada,9\nbo,7\n", "data/readme.txt": "data lives here\n"}


def check_move_file(ws: Path, answer: str) -> Verdict:
    if (ws / "report.csv").exists():
        return False, "report.csv is still at the top"
    if read(ws, "data/report.csv") != REPORT["report.csv"]:
        return False, "data/report.csv is missing or differs"
    return True, "report.csv is in data/, word for word"


BLEND = {"blend.py": "def mix(first, second, ratio):\n    return first * ratio + second * (1 - ratio)\n"}


def check_count_args(ws: Path, answer: str) -> Verdict:
    return says_number(answer, 3)


LIMITS_JSON = {"bounds.json": json.dumps({"min": 0, "max": 10, "step": 2}, indent=2) + "\n"}


def check_two_json_values(ws: Path, answer: str) -> Verdict:
    try:
        data = json.loads(read(ws, "bounds.json") or "")
    except json.JSONDecodeError as exc:
        return False, f"bounds.json is no longer valid JSON ({exc.msg})"
    if data != {"min": 1, "max": 99, "step": 2}:
        return False, f"bounds.json holds {short(json.dumps(data))}"
    return True, "min 1, max 99, step as it was"


VERSIONS = {"version.txt": "2.4.1\n", "setup_info.py": "NAME = 'kite'\nVERSION = '0.0.0'\n"}


def check_copy_version(ws: Path, answer: str) -> Verdict:
    text = read(ws, "setup_info.py") or ""
    if not re.search(r"^VERSION\s*=\s*['\"]2\.4\.1['\"]\s*$", text, re.M):
        return False, f"setup_info.py has no VERSION = '2.4.1': {short(text)}"
    if "NAME = 'kite'" not in text:
        return False, "NAME changed"
    return verdict(unchanged(ws, VERSIONS, "version.txt"), "VERSION is 2.4.1")


NAME_ERROR = {"basket.py": "prices = [3, 4, 5]\ntotl = sum(prices)\nprint(total)\n"}


def check_name_error(ws: Path, answer: str) -> Verdict:
    return verdict(prints(ws, ["basket.py"], "12"), "basket.py runs and prints 12")


FRUIT = {
    "fruit/list.txt": "apple\nbanana\ncherry\n",
    "veg/list.txt": "leek\nbean\n",
    "notes.md": "# shopping\nfruit and veg\n",
}


def check_which_mentions(ws: Path, answer: str) -> Verdict:
    ok, why = says(answer, "fruit")
    if ok and "veg/list" in answer:
        return False, f"the answer names veg/list.txt too: {short(answer)}"
    return ok, why


OUT_PY = {"out.py": "x = 1\nprint(x)\n"}


def check_header_line(ws: Path, answer: str) -> Verdict:
    text = read(ws, "out.py") or ""
    if text != "# generated\n" + OUT_PY["out.py"]:
        return False, f"out.py is {short(repr(text))}, not the comment then the same two lines"
    return True, "# generated is the first line, the rest as it was"


LOG = {"log.txt": "".join(f"step {n} ok\n" for n in range(1, 30)) + "finished at 17:42\n"}


def check_last_line(ws: Path, answer: str) -> Verdict:
    return says(answer, "17:42")


STYLE = {"style.txt": "colour: red\nbackground colour: white\nborder: none\nfont colour: grey\n"}


def check_replace_word(ws: Path, answer: str) -> Verdict:
    text = read(ws, "style.txt") or ""
    if "colour" in text:
        return False, f"style.txt still says colour: {short(text)}"
    want = STYLE["style.txt"].replace("colour", "color")
    return (True, "every colour is color, the rest as it was") if text == want else (False, f"it holds {short(text)!r}")


CHECK = {"check.py": "values = [2, 3, 7]\nprint(values[0] * values[1] * values[2])\n"}


def check_run_number(ws: Path, answer: str) -> Verdict:
    return says_number(answer, 42)


DEV: tuple[Task, ...] = (
    Task("rename_file", DRAFT, "rename draft.txt to final.txt", check_rename_file),
    Task("copy_file", BASE_CFG, "make a backup copy of base.cfg named base.cfg.bak", check_copy_file),
    Task("slugify_result", TEXTUTIL, "what does slugify return for ' Good Morning Sun '?", check_slugify),
    Task("two_constants", COLORS, "in colors.py set RED to '#ff0000' and BLUE to '#0000ff'", check_two_constants),
    Task("run_and_save", COUNTER, "run count.py and put what it prints in result.txt", check_run_and_save),
    Task("typo_unnamed", GREETER, "the greeting says Helo instead of Hello, can you fix that typo",
         check_typo_unnamed),
    Task("find_class", BILLING, "where is the Invoice class defined?", check_find_class),
    Task("count_functions", SHAPES, "how many functions does geometry.py define", check_count_functions),
    Task("new_doc", {"readme.txt": "project notes\n"}, "create docs/intro.md with a heading Intro", check_new_doc),
    Task("drop_line", APP_CFG, "remove the DEBUG line from app.cfg", check_drop_line),
)

HELD_OUT: tuple[Task, ...] = (
    Task("move_file", REPORT, "move report.csv into the data folder", check_move_file),
    Task("count_args", BLEND, "how many parameters does mix take", check_count_args),
    Task("two_json_values", LIMITS_JSON, "in bounds.json set min to 1 and max to 99", check_two_json_values),
    Task("copy_version", VERSIONS, "put the version from version.txt into VERSION in setup_info.py",
         check_copy_version),
    Task("name_error", NAME_ERROR, "basket.py crashes with a NameError, please fix it", check_name_error),
    Task("which_mentions", FRUIT, "which file mentions banana?", check_which_mentions),
    Task("header_line", OUT_PY, "add a comment line '# generated' at the very top of out.py", check_header_line),
    Task("last_line", LOG, "what's the last line of log.txt", check_last_line),
    Task("replace_word", STYLE, "replace every 'colour' with 'color' in style.txt", check_replace_word),
    Task("run_number", CHECK, "run check.py, what number does it print?", check_run_number),
)


def _sub(ws: Path, rel: str, old: str, new: str) -> None:
    path = ws / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new))


# What a right run of each held-out job does to its workspace, and its answer: kept here,
# in the half nobody reads while developing, not beside the development half's in
# tests/test_eval.py (which checks every checker on both).
SOLVED_HELD_OUT: dict[str, tuple[Any, str]] = {
    "move_file": (lambda ws: (ws / "report.csv").rename(ws / "data/report.csv"), "Moved."),
    "count_args": (None, "mix takes 3 parameters: first, second and ratio."),
    "two_json_values": (lambda ws: (_sub(ws, "bounds.json", '"min": 0', '"min": 1'),
                                    _sub(ws, "bounds.json", '"max": 10', '"max": 99')), "Done."),
    "copy_version": (lambda ws: _sub(ws, "setup_info.py", "0.0.0", "2.4.1"), "Done."),
    "name_error": (lambda ws: _sub(ws, "basket.py", "print(total)", "print(totl)"), "Fixed."),
    "which_mentions": (None, "fruit/list.txt mentions banana."),
    "header_line": (lambda ws: (ws / "out.py").write_text("# generated\n" + (ws / "out.py").read_text()), "Added."),
    "last_line": (None, "The last line is: finished at 17:42"),
    "replace_word": (lambda ws: _sub(ws, "style.txt", "colour", "color"), "Replaced."),
    "run_number": (None, "It prints 42."),
}
