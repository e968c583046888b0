"""The evaluation's tasks: small coding jobs in a workspace, each with its checker.

A task is a fixture (a few files, written into a fresh folder), a prompt, the mode the
conversation runs in, and a checker. The checker looks at the workspace after the run
and at the conversation's final answer, and says pass or fail with a reason. Each
checker must fail on the untouched fixture with an empty answer (tests/test_eval.py
checks that), so a pass means the agent did something.

The first five are issue 19's jobs on a three-file Python project; the others are the
kinds issue 17 names. Each is meant to take a capable model a few rounds.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import attrs

# How long a checker lets a program of the workspace run.
CHECK_RUN_S = 10

Verdict = tuple[bool, str]
Checker = Callable[[Path, str], Verdict]


@attrs.frozen
class Task:
    name: str
    files: dict[str, str]
    prompt: str
    check: Checker
    mode: str = "full"

    def write_fixture(self, folder: Path) -> None:
        """The fixture's files under `folder` (which must exist)."""
        for rel, text in self.files.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)


# ---- what checkers share ----


def run_py(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A Python program of the workspace, run there with this interpreter, bounded."""
    try:
        return subprocess.run([sys.executable, *args], cwd=ws, capture_output=True, text=True, timeout=CHECK_RUN_S)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(args, -1, "", f"did not finish in {CHECK_RUN_S} s")


def prints(ws: Path, argv: list[str], expected: str) -> str | None:
    """None when `python3 *argv` in the workspace exits 0 and prints `expected`; else
    what it did instead."""
    done = run_py(ws, *argv)
    shown = " ".join(argv)
    if done.returncode != 0:
        return f"python3 {shown} fails: {short(done.stderr or done.stdout)}"
    if done.stdout.strip() != expected:
        return f"python3 {shown} prints {short(done.stdout)!r}, not {expected!r}"
    return None


def verdict(wrong: str | None, right: str) -> Verdict:
    """Fail with `wrong` when there is one, else pass with `right`."""
    return (False, wrong) if wrong else (True, right)


def read(ws: Path, rel: str) -> str | None:
    try:
        return (ws / rel).read_text()
    except (OSError, UnicodeDecodeError):
        return None


def unchanged(ws: Path, files: dict[str, str], *names: str) -> str | None:
    """None when each named file still has its fixture text; else what changed."""
    for name in names:
        now = read(ws, name)
        if now is None:
            return f"{name} is gone"
        if now != files[name]:
            return f"{name} was changed and should not have been"
    return None


def says(answer: str, *words: str) -> Verdict:
    """The answer mentions every one of `words` (case-insensitive)."""
    if not answer.strip():
        return False, "no final answer"
    low = answer.lower()
    missing = [w for w in words if w.lower() not in low]
    if missing:
        return False, f"the answer does not mention {', '.join(missing)}: {short(answer)}"
    return True, f"the answer mentions {', '.join(words)}"


def says_number(answer: str, number: int) -> Verdict:
    if not answer.strip():
        return False, "no final answer"
    if re.search(rf"(?<!\d)(?<!\d\.){number}(?!\.?\d)", answer):
        return True, f"the answer says {number}"
    return False, f"the answer does not say {number}: {short(answer)}"


def short(text: str, limit: int = 80) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def names_word(answer: str, word: str) -> bool:
    """The answer has `word` as a word of its own (case-insensitive; a hyphen joins, and
    an underscore in `word` may be written as a space)."""
    body = re.escape(word).replace("_", "[_ ]")
    return re.search(rf"(?<![\w-]){body}(?![\w-])", answer, re.I) is not None


def parsed(ws: Path, rel: str) -> tuple[ast.Module | None, str]:
    """The Python file's syntax tree, or None and why not."""
    text = read(ws, rel)
    if text is None:
        return None, f"{rel} does not exist"
    try:
        return ast.parse(text), ""
    except SyntaxError as exc:
        return None, f"{rel} does not parse ({exc.msg})"


@contextmanager
def copy_of(ws: Path) -> Iterator[Path]:
    """A throwaway copy of the workspace (its links kept as links), for a checker to
    change and run without touching the real one."""
    with tempfile.TemporaryDirectory(prefix="eval-copy-") as tmp:
        copy = Path(tmp) / "ws"
        shutil.copytree(ws, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        yield copy


def files_under(ws: Path, rel: str = "") -> list[str]:
    """The files under `rel` (the whole workspace when empty), relative to the workspace;
    __pycache__ and .git left out."""
    root = ws / rel if rel else ws
    if not root.is_dir():
        return []
    return sorted(p.relative_to(ws).as_posix() for p in root.rglob("*")
                  if p.is_file() and not {"__pycache__", ".git"} & set(p.parts))


# ---- what the sets' solved runs and near misses share ----


def sub(ws: Path, rel: str, old: str, new: str) -> None:
    """`old` (which must be there) replaced by `new` in the workspace's file `rel`."""
    path = ws / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new))


def subbing(rel: str, old: str, new: str) -> Callable[[Path], None]:
    """sub() as a change to make later."""
    return lambda ws: sub(ws, rel, old, new)


def each_of(*changes: Callable[[Path], object]) -> Callable[[Path], None]:
    """One change that makes each of `changes` in turn."""
    def change(ws: Path) -> None:
        for one in changes:
            one(ws)
    return change


# ---- issue 19's project and jobs ----

PROJECT = {
    "config.py": 'PORT = 8080\nHOST = "localhost"\n',
    "lib.py": 'def greet(name):\n    return f"Hello, {name}!"\n',
    "app.py": (
        "from config import HOST, PORT\nfrom lib import greet\n\n"
        'print(greet("world"))\nprint(f"serving on {HOST}:{PORT}")\n'
    ),
}


def check_hello(ws: Path, answer: str) -> Verdict:
    text = read(ws, "hello.txt")
    if text is None:
        return False, "hello.txt does not exist"
    if text.strip() != "hi":
        return False, f"hello.txt holds {short(repr(text))}, not hi"
    return True, "hello.txt holds hi"


def check_port_value(ws: Path, answer: str) -> Verdict:
    return says_number(answer, 8080)


def check_change_port(ws: Path, answer: str) -> Verdict:
    text = read(ws, "config.py")
    if text is None:
        return False, "config.py is gone"
    if not re.search(r"^PORT\s*=\s*9090\s*$", text, re.M):
        return False, f"config.py has no line PORT = 9090: {short(text)}"
    if "8080" in text or 'HOST = "localhost"' not in text:
        return False, f"config.py changed beyond PORT: {short(text)}"
    changed = unchanged(ws, PROJECT, "lib.py", "app.py")
    return verdict(changed, "PORT = 9090, the rest as it was")


def check_where_greet(ws: Path, answer: str) -> Verdict:
    ok, why = says(answer, "lib.py")
    if ok and "config.py" in answer:
        return False, f"the answer names config.py too: {short(answer)}"
    return ok, why


def check_run_app(ws: Path, answer: str) -> Verdict:
    return says(answer, "Hello, world!")


# ---- the other kinds ----

FIX_TEST = {
    "mathx.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n",
    "test_mathx.py": (
        "from mathx import add, mul\n\n"
        "assert add(2, 3) == 5, 'add(2, 3) should be 5'\n"
        "assert mul(2, 3) == 6\n"
        "print('all tests passed')\n"
    ),
}


def check_fix_test(ws: Path, answer: str) -> Verdict:
    changed = unchanged(ws, FIX_TEST, "test_mathx.py")
    if changed:
        return False, changed
    wrong = prints(ws, ["test_mathx.py"], "all tests passed")
    return verdict(wrong, "python3 test_mathx.py passes")


RENAME = {
    "util.py": "def calc_total(prices):\n    return sum(prices)\n",
    "main.py": "from util import calc_total\n\nprint(calc_total([1, 2, 3]))\n",
    "report.py": "import util\n\n\ndef report(prices):\n    return f\"total: {util.calc_total(prices)}\"\n",
}


def check_rename(ws: Path, answer: str) -> Verdict:
    for name in RENAME:
        text = read(ws, name)
        if text is None:
            return False, f"{name} is gone"
        if "calc_total" in text:
            return False, f"{name} still says calc_total"
    if "def sum_prices(" not in (read(ws, "util.py") or ""):
        return False, "util.py does not define sum_prices"
    wrong = prints(ws, ["main.py"], "6") or prints(ws, ["-c", "import report; print(report.report([2, 2]))"],
                                                    "total: 4")
    if wrong:
        return False, wrong
    return True, "calc_total is sum_prices in all three files, and both still work"


CLI = {
    "cli.py": (
        "import argparse\n\n"
        "parser = argparse.ArgumentParser()\n"
        "parser.add_argument('--name', default='world')\n"
        "args = parser.parse_args()\n"
        "message = f'Hello, {args.name}!'\n"
        "print(message)\n"
    ),
}


def check_cli_flag(ws: Path, answer: str) -> Verdict:
    wrong = prints(ws, ["cli.py", "--name", "Ann", "--shout"], "HELLO, ANN!") or prints(
        ws, ["cli.py", "--name", "Ann"], "Hello, Ann!")
    return verdict(wrong, "--shout shouts, and without it nothing changed")


FIND_SETTING = {
    "server.py": "from core.net import MAX_RETRIES\n\n\ndef connect():\n    return MAX_RETRIES\n",
    "core/__init__.py": "",
    "core/net.py": "# Network settings\nMAX_RETRIES = 7\nBACKOFF_S = 0.5\n",
    "README.md": "# demo\nThe server retries a few times before giving up.\n",
}


def check_find_setting(ws: Path, answer: str) -> Verdict:
    ok, why = says(answer, "net.py")
    if ok and "server.py" in answer and "core/net.py" not in answer:
        return False, f"the answer names server.py, which only imports it: {short(answer)}"
    return ok, why


NOTES = {"notes.txt": "".join(f"note {i}: remember item {i * 7 % 11}\n" for i in range(1, 18))}


def check_count_lines(ws: Path, answer: str) -> Verdict:
    return says_number(answer, 17)


LISTING = {
    "alpha.py": "A = 1\n",
    "beta.txt": "b\n",
    "gamma.json": "{}\n",
    "delta.md": "# d\n",
}


def check_list_files(ws: Path, answer: str) -> Verdict:
    return says(answer, *LISTING)


TODO = {"todo.txt": "wash the car\ncall the bank\nwater the plants\n"}


def check_append(ws: Path, answer: str) -> Verdict:
    text = read(ws, "todo.txt")
    if text is None:
        return False, "todo.txt is gone"
    lines = text.rstrip("\n").split("\n")
    if lines[:3] != ["wash the car", "call the bank", "water the plants"]:
        return False, f"the first three lines changed: {short(text)}"
    if len(lines) != 4 or lines[3].strip() != "buy milk":
        return False, f"the file does not end with the one line buy milk: {short(text)}"
    return True, "buy milk is the new last line"


DELETE = {"keep.txt": "keep me\n", "old.log": "12:00 started\n12:01 stopped\n", "notes.md": "# notes\n"}


def check_delete(ws: Path, answer: str) -> Verdict:
    if (ws / "old.log").exists():
        return False, "old.log is still there"
    changed = unchanged(ws, DELETE, "keep.txt", "notes.md")
    return verdict(changed, "old.log is gone, the rest is there")


SETTINGS = {
    "settings.json": json.dumps(
        {"server": {"name": "bluefin", "port": 7001}, "debug": False, "workers": 3}, indent=2
    ) + "\n",
}


def check_json_value(ws: Path, answer: str) -> Verdict:
    return says(answer, "bluefin")


def check_json_edit(ws: Path, answer: str) -> Verdict:
    try:
        data = json.loads(read(ws, "settings.json") or "")
    except json.JSONDecodeError as exc:
        return False, f"settings.json is no longer valid JSON ({exc.msg})"
    if data.get("debug") is not True:
        return False, f"debug is {data.get('debug')!r}, not true"
    if data.get("server") != {"name": "bluefin", "port": 7001} or data.get("workers") != 3:
        return False, "other settings changed"
    return True, "debug is true, the rest as it was"


MATHLIB = {"mathlib.py": "def double(x):\n    return 2 * x\n"}


def check_add_function(ws: Path, answer: str) -> Verdict:
    wrong = prints(ws, ["-c", "import mathlib; print(mathlib.square(7), mathlib.double(4))"], "49 8")
    return verdict(wrong, "square(7) is 49 and double still works")


TODOS_IN_CODE = {
    "a.py": "# TODO: handle errors\nx = 1\n",
    "b.py": "def f():\n    pass  # TODO remove\n\n# TODO: tests\n",
    "c.py": "y = 2  # done\n",
}


def check_count_todos(ws: Path, answer: str) -> Verdict:
    return says_number(answer, 3)


BROKEN = {"calc.py": "def half(n)\n    return n / 2\n\nprint(half(10))\n"}


def check_fix_syntax(ws: Path, answer: str) -> Verdict:
    wrong = prints(ws, ["calc.py"], "5.0")
    return verdict(wrong, "calc.py runs and prints 5.0")


TASKS: tuple[Task, ...] = (
    Task("create_hello", PROJECT, "Create a file hello.txt containing hi", check_hello),
    Task("port_value", PROJECT, "What is PORT in config.py?", check_port_value),
    Task("change_port", PROJECT, "Change PORT in config.py to 9090", check_change_port),
    Task("where_greet", PROJECT, "Which file defines greet?", check_where_greet),
    Task("run_app", PROJECT, "Run python3 app.py and say what it prints", check_run_app),
    Task("fix_test", FIX_TEST,
         "python3 test_mathx.py fails. Fix the bug in mathx.py so that it passes; do not change the test.",
         check_fix_test),
    Task("rename_function", RENAME, "Rename the function calc_total to sum_prices everywhere in the project.",
         check_rename),
    Task("add_cli_flag", CLI,
         "Add a --shout flag to cli.py: with it, the greeting is printed in upper case.", check_cli_flag),
    Task("find_setting", FIND_SETTING, "In which file is MAX_RETRIES set?", check_find_setting),
    Task("count_lines", NOTES, "How many lines does notes.txt have?", check_count_lines),
    Task("list_files", LISTING, "List the files in this workspace.", check_list_files),
    Task("append_line", TODO, "Append the line 'buy milk' to the end of todo.txt.", check_append),
    Task("delete_file", DELETE, "Delete the file old.log.", check_delete),
    Task("json_value", SETTINGS, "What is the server's name in settings.json?", check_json_value),
    Task("json_edit", SETTINGS, "Set debug to true in settings.json.", check_json_edit),
    Task("add_function", MATHLIB, "Add a function square(x) to mathlib.py that returns x * x.",
         check_add_function),
    Task("count_todos", TODOS_IN_CODE, "How many TODO comments are there in the .py files?", check_count_todos),
    Task("fix_syntax", BROKEN, "python3 calc.py fails with a syntax error. Fix it.", check_fix_syntax),
)

BY_NAME = {t.name: t for t in TASKS}
