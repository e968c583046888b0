"""The evaluation harness (ops/eval/): its checkers, and its runner against a real
daemon process on the scripted backend, where the script does one job right, one wrong
and one right after two malformed calls and a call to a tool that does not exist."""

from __future__ import annotations

import functools
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from ops.eval.eighth_tasks import HELD_OUT_8, NEAR_MISSES_8, SOLVED_HELD_OUT_8, WORDS_8
from ops.eval.eleventh_tasks import HELD_OUT_11, NEAR_MISSES_11, SOLVED_HELD_OUT_11, WORDS_11
from ops.eval.fifth_tasks import HELD_OUT_5, NEAR_MISSES_5, SOLVED_HELD_OUT_5, WORDS_5
from ops.eval.fourth_tasks import HELD_OUT_4, NEAR_MISSES_4, SOLVED_HELD_OUT_4, WORDS_4
from ops.eval.fresh_tasks import HELD_OUT_2, NEAR_MISSES_2, SOLVED_HELD_OUT_2, WORDS_2
from ops.eval.more_tasks import DEV, HELD_OUT, SOLVED_HELD_OUT
from ops.eval.ninth_tasks import HELD_OUT_9, NEAR_MISSES_9, SOLVED_HELD_OUT_9, WORDS_9
from ops.eval.run import ALL, BY_NAME
from ops.eval.seventh_tasks import HELD_OUT_7, NEAR_MISSES_7, SOLVED_HELD_OUT_7, WORDS_7
from ops.eval.sixth_tasks import HELD_OUT_6, NEAR_MISSES_6, SOLVED_HELD_OUT_6, WORDS_6
from ops.eval.tasks import TASKS, Task
from ops.eval.tenth_tasks import HELD_OUT_10, NEAR_MISSES_10, SOLVED_HELD_OUT_10, WORDS_10
from ops.eval.third_tasks import HELD_OUT_3, NEAR_MISSES_3, SOLVED_HELD_OUT_3, WORDS_3
from ops.eval.twelfth_tasks import HELD_OUT_12, NEAR_MISSES_12, SOLVED_HELD_OUT_12, WORDS_12

REPO = Path(__file__).resolve().parent.parent
RUNNER_TIMEOUT_S = 180


def _sub(ws: Path, rel: str, old: str, new: str) -> None:
    path = ws / rel
    text = path.read_text()
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new))


def _rename(ws: Path) -> None:
    for rel in ("util.py", "main.py", "report.py"):
        _sub(ws, rel, "calc_total", "sum_prices")


def _json_edit(ws: Path) -> None:
    data = json.loads((ws / "settings.json").read_text())
    (ws / "settings.json").write_text(json.dumps({**data, "debug": True}))


# What a right run does to each task's workspace, and its answer: every checker must
# pass on it, as it must fail on the untouched fixture.
SOLVED: dict[str, tuple[Any, str]] = {
    "create_hello": (lambda ws: (ws / "hello.txt").write_text("hi\n"), "Done."),
    "port_value": (None, "PORT is 8080."),
    "change_port": (lambda ws: _sub(ws, "config.py", "8080", "9090"), "Changed."),
    "where_greet": (None, "greet is defined in lib.py."),
    "run_app": (None, "It prints:\nHello, world!\nserving on localhost:8080"),
    "fix_test": (lambda ws: _sub(ws, "mathx.py", "a - b", "a + b"), "Fixed."),
    "rename_function": (_rename, "Renamed."),
    "add_cli_flag": (lambda ws: _sub(ws, "cli.py", "args = parser.parse_args()\n",
                                     "parser.add_argument('--shout', action='store_true')\n"
                                     "args = parser.parse_args()\nif args.shout:\n    args.name = args.name.upper()\n"
                                     "    print(f'HELLO, {args.name}!')\n    raise SystemExit\n"), "Added."),
    "find_setting": (None, "MAX_RETRIES is set in core/net.py (server.py imports it)."),
    "count_lines": (None, "notes.txt has 17 lines."),
    "list_files": (None, "alpha.py, beta.txt, delta.md and gamma.json"),
    "append_line": (lambda ws: (ws / "todo.txt").write_text((ws / "todo.txt").read_text() + "buy milk\n"), "Done."),
    "delete_file": (lambda ws: (ws / "old.log").unlink(), "Deleted."),
    "json_value": (None, 'The server is named "bluefin".'),
    "json_edit": (_json_edit, "Done."),
    "add_function": (lambda ws: _sub(ws, "mathlib.py", "2 * x\n", "2 * x\n\n\ndef square(x):\n    return x * x\n"),
                     "Added."),
    "count_todos": (None, "There are 3 TODO comments."),
    "fix_syntax": (lambda ws: _sub(ws, "calc.py", "half(n)\n", "half(n):\n"), "Fixed."),
    # more_tasks.py's development half
    "rename_file": (lambda ws: (ws / "draft.txt").rename(ws / "final.txt"), "Renamed."),
    "copy_file": (lambda ws: (ws / "base.cfg.bak").write_text((ws / "base.cfg").read_text()), "Copied."),
    "slugify_result": (None, "It returns 'good-morning-sun'."),
    "two_constants": (lambda ws: (_sub(ws, "colors.py", "'red'", "'#ff0000'"),
                                  _sub(ws, "colors.py", "'blue'", "'#0000ff'")), "Done."),
    "run_and_save": (lambda ws: (ws / "result.txt").write_text("55\n"), "It printed 55, saved."),
    "typo_unnamed": (lambda ws: _sub(ws, "hello_app/welcome.py", "Helo", "Hello"), "Fixed."),
    "find_class": (None, "Invoice is defined in billing/documents.py."),
    "count_functions": (None, "geometry.py defines 4 functions."),
    "new_doc": (lambda ws: ((ws / "docs").mkdir(), (ws / "docs/intro.md").write_text("# Intro\n")), "Created."),
    "drop_line": (lambda ws: _sub(ws, "app.cfg", "DEBUG=1\n", ""), "Removed."),
    # and its held-out half: kept with those jobs (more_tasks.py), so that developing
    # against the first half never meets the second's names
    **SOLVED_HELD_OUT,
    # and the second held-out set's, kept with its jobs (fresh_tasks.py) for the same reason
    **SOLVED_HELD_OUT_2,
    # and the third's, kept with its jobs (third_tasks.py)
    **SOLVED_HELD_OUT_3,
    # and the fourth's (fourth_tasks.py)
    **SOLVED_HELD_OUT_4,
    # and the fifth's (fifth_tasks.py)
    **SOLVED_HELD_OUT_5,
    # and the sixth's (sixth_tasks.py)
    **SOLVED_HELD_OUT_6,
    # and the seventh's (seventh_tasks.py)
    **SOLVED_HELD_OUT_7,
    # and the eighth's (eighth_tasks.py)
    **SOLVED_HELD_OUT_8,
    # and the ninth's (ninth_tasks.py)
    **SOLVED_HELD_OUT_9,
    # and the tenth's (tenth_tasks.py)
    **SOLVED_HELD_OUT_10,
    # and the eleventh's (eleventh_tasks.py)
    **SOLVED_HELD_OUT_11,
    # and the twelfth's (twelfth_tasks.py)
    **SOLVED_HELD_OUT_12,
}


def _fixture(tmp_path: Path, task: Task) -> Path:
    ws = tmp_path / task.name
    ws.mkdir()
    task.write_fixture(ws)
    return ws


def test_tasks_cover_issue_19s_jobs_and_more():
    assert len(TASKS) >= 15 and len(BY_NAME) == len(ALL) == len(TASKS) + 130
    firsts = {t.name: t.prompt for t in TASKS[:5]}
    assert firsts == {
        "create_hello": "Create a file hello.txt containing hi",
        "port_value": "What is PORT in config.py?",
        "change_port": "Change PORT in config.py to 9090",
        "where_greet": "Which file defines greet?",
        "run_app": "Run python3 app.py and say what it prints",
    }
    assert all(set(t.files) == {"config.py", "lib.py", "app.py"} for t in TASKS[:5])
    assert all(t.mode == "full" for t in TASKS)
    assert set(SOLVED) == set(BY_NAME) and len(BY_NAME) == len(ALL)


def test_twenty_more_jobs_split_in_two_halves_the_product_never_names():
    """more_tasks.py: at least twenty jobs, half to develop against and half held out,
    none of them the same as the eighteen; and no file or prompt word of theirs in the
    product's own sources (actors/, bmoe_daemon/): a rule may not be written for a job."""
    assert len(DEV) >= 10 and len(HELD_OUT) >= 10
    names = [t.name for t in ALL]
    assert len(set(names)) == len(names)
    prompts = {t.prompt for t in TASKS}
    later = (DEV + HELD_OUT + HELD_OUT_2 + HELD_OUT_3 + HELD_OUT_4 + HELD_OUT_5 + HELD_OUT_6 + HELD_OUT_7
             + HELD_OUT_8 + HELD_OUT_9 + HELD_OUT_10 + HELD_OUT_11 + HELD_OUT_12)
    assert not any(t.prompt in prompts for t in later)
    sources = _product_sources()
    for task in later:
        for rel in task.files:
            stem = Path(rel).name
            assert stem not in sources or stem in ("__init__.py",), (task.name, stem)


@functools.cache
def _product_sources() -> str:
    """The product's own sources: actors/ and bmoe_daemon/ (Python), and the web UI's scripts
    (read once for the session's tests)."""
    sources = "\n".join(p.read_text() for folder in ("actors", "bmoe_daemon") for p in (REPO / folder).rglob("*.py"))
    return sources + "\n".join(p.read_text() for p in (REPO / "bmoe_daemon" / "web").glob("*.js"))


def _has_word(text: str, word: str) -> bool:
    if word.lower() not in _lowered(text):  # most words are not there: a plain search says so fast
        return False
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.I) is not None


@functools.lru_cache(maxsize=4)
def _lowered(text: str) -> str:
    return text.lower()


def _text_of(tasks: tuple[Task, ...]) -> str:
    """The prompts of `tasks`, and their fixtures' file names and texts."""
    return "\n".join([t.prompt for t in tasks] + [rel + "\n" + text for t in tasks for rel, text in t.files.items()])


@pytest.mark.parametrize(("tasks", "words", "others"), [
    (HELD_OUT_2, WORDS_2, TASKS + DEV + HELD_OUT),
    (HELD_OUT_3, WORDS_3, TASKS + DEV + HELD_OUT + HELD_OUT_2),
    (HELD_OUT_4, WORDS_4, TASKS + DEV + HELD_OUT + HELD_OUT_2 + HELD_OUT_3),
    (HELD_OUT_5, WORDS_5, TASKS + DEV + HELD_OUT + HELD_OUT_2 + HELD_OUT_3 + HELD_OUT_4),
    (HELD_OUT_6, WORDS_6, TASKS + DEV + HELD_OUT + HELD_OUT_2 + HELD_OUT_3 + HELD_OUT_4 + HELD_OUT_5),
    (HELD_OUT_7, WORDS_7, TASKS + DEV + HELD_OUT + HELD_OUT_2 + HELD_OUT_3 + HELD_OUT_4 + HELD_OUT_5 + HELD_OUT_6),
    (HELD_OUT_8, WORDS_8,
     TASKS + DEV + HELD_OUT + HELD_OUT_2 + HELD_OUT_3 + HELD_OUT_4 + HELD_OUT_5 + HELD_OUT_6 + HELD_OUT_7),
    (HELD_OUT_9, WORDS_9,
     TASKS + DEV + HELD_OUT + HELD_OUT_2 + HELD_OUT_3 + HELD_OUT_4 + HELD_OUT_5 + HELD_OUT_6 + HELD_OUT_7
     + HELD_OUT_8),
    (HELD_OUT_10, WORDS_10,
     TASKS + DEV + HELD_OUT + HELD_OUT_2 + HELD_OUT_3 + HELD_OUT_4 + HELD_OUT_5 + HELD_OUT_6 + HELD_OUT_7
     + HELD_OUT_8 + HELD_OUT_9),
    (HELD_OUT_11, WORDS_11,
     TASKS + DEV + HELD_OUT + HELD_OUT_2 + HELD_OUT_3 + HELD_OUT_4 + HELD_OUT_5 + HELD_OUT_6 + HELD_OUT_7
     + HELD_OUT_8 + HELD_OUT_9 + HELD_OUT_10),
    (HELD_OUT_12, WORDS_12,
     TASKS + DEV + HELD_OUT + HELD_OUT_2 + HELD_OUT_3 + HELD_OUT_4 + HELD_OUT_5 + HELD_OUT_6 + HELD_OUT_7
     + HELD_OUT_8 + HELD_OUT_9 + HELD_OUT_10 + HELD_OUT_11),
], ids=["second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
        "twelfth"])
def test_a_later_set_shares_no_word_with_the_others_or_the_product(tasks, words, others):
    """fresh_tasks.py, third_tasks.py, fourth_tasks.py, fifth_tasks.py, sixth_tasks.py,
    seventh_tasks.py, eighth_tasks.py, ninth_tasks.py, tenth_tasks.py, eleventh_tasks.py and
    twelfth_tasks.py: ten more jobs each, written when the sets before had become known. No
    file name, prompt or word of theirs is in another job, of the sets before or of their own
    (so they measure something the others do not), nor in the product's sources (so no rule
    was written for them); each job lists its words."""
    assert len(tasks) == 10 and set(words) == {t.name for t in tasks}
    assert not {t.prompt for t in tasks} & {t.prompt for t in others}
    their_files = {Path(rel).name for t in others for rel in t.files} - {"__init__.py"}
    sources = _product_sources()
    for task in tasks:
        assert task.mode == "full"
        assert task.prompt not in sources, task.name
        assert not {Path(rel).name for rel in task.files} & their_files, task.name
        assert words[task.name], task.name
        their_text = _text_of(others + tuple(t for t in tasks if t is not task))
        for word in words[task.name]:
            assert _has_word(_text_of((task,)), word), (task.name, word)
            assert not _has_word(their_text, word), (task.name, word)
            assert not _has_word(sources, word), (task.name, word)


def test_every_checker_fails_on_the_untouched_fixture(tmp_path):
    for task in ALL:
        ws = _fixture(tmp_path, task)
        passed, reason = task.check(ws, "")
        assert not passed, (task.name, reason)
        assert reason


def test_every_checker_passes_a_right_run(tmp_path):
    for task in ALL:
        ws = _fixture(tmp_path, task)
        change, answer = SOLVED[task.name]
        if change is not None:
            change(ws)
        passed, reason = task.check(ws, answer)
        assert passed, (task.name, reason)


def test_checkers_refuse_near_misses(tmp_path):
    near = {
        "create_hello": (lambda ws: (ws / "hello.txt").write_text("hello"), ""),
        "change_port": (lambda ws: _sub(ws, "config.py", "8080", "8080\nPORT = 9090"), ""),
        "fix_test": (lambda ws: _sub(ws, "test_mathx.py", "add(2, 3) == 5", "add(2, 3) == -1"), ""),
        "rename_function": (lambda ws: _sub(ws, "util.py", "calc_total", "sum_prices"), ""),
        "delete_file": (lambda ws: [(ws / "old.log").unlink(), (ws / "keep.txt").unlink()], ""),
        "where_greet": (None, "greet is in lib.py, config.py or app.py"),
        "count_lines": (None, "It has 170 lines."),
    }
    for name, (change, answer) in near.items():
        ws = _fixture(tmp_path, BY_NAME[name])
        if change is not None:
            change(ws)
        passed, reason = BY_NAME[name].check(ws, answer)
        assert not passed, (name, reason)


@pytest.mark.parametrize(("tasks", "near"), [
    (HELD_OUT_2, NEAR_MISSES_2), (HELD_OUT_3, NEAR_MISSES_3), (HELD_OUT_4, NEAR_MISSES_4),
    (HELD_OUT_5, NEAR_MISSES_5), (HELD_OUT_6, NEAR_MISSES_6), (HELD_OUT_7, NEAR_MISSES_7),
    (HELD_OUT_8, NEAR_MISSES_8), (HELD_OUT_9, NEAR_MISSES_9), (HELD_OUT_10, NEAR_MISSES_10),
    (HELD_OUT_11, NEAR_MISSES_11), (HELD_OUT_12, NEAR_MISSES_12),
], ids=["second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
        "twelfth"])
def test_later_sets_checkers_refuse_near_misses(tmp_path, tasks, near):
    assert len(near) >= 3
    for n, (name, change, answer) in enumerate(near):
        task = next(t for t in tasks if t.name == name)
        ws = tmp_path / f"near{n}"
        ws.mkdir()
        task.write_fixture(ws)
        if change is not None:
            change(ws)
        passed, reason = task.check(ws, answer)
        assert not passed, (n, name, reason)
        assert reason


def _rounds() -> list[dict[str, Any]]:
    """One run of the three tasks, as the scripted backend plays it."""
    hello = [
        {"when": "hello.txt",
         "tool_calls": [{"name": "write_file", "arguments": {"path": "hello.txt", "content": "hi"}}]},
        {"when": "hello.txt", "text": "I created hello.txt."},
    ]
    wrong = [{"when": "What is PORT", "text": "PORT is 1234."}]
    port = [
        {"when": "Change PORT", "tool_calls": [{"name": "edit_file", "arguments": '{"path": "config.py", '}]},
        {"when": "Change PORT", "tool_calls": [{"name": "read_file", "arguments": {}},
                                               {"name": "open_file", "arguments": {"path": "config.py"}}]},
        {"when": "Change PORT", "tool_calls": [{"name": "edit_file", "arguments": {
            "path": "config.py", "edits": [{"old_text": "PORT = 8080", "new_text": "PORT = 9090"}]}}]},
        {"when": "Change PORT", "text": "PORT is 9090 now."},
    ]
    return hello + wrong + port


async def test_runner_reports_pass_fail_and_malformed_calls(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"token_delay": 0.0, "rounds": _rounds() * 2}))
    out = tmp_path / "out.json"
    cmd = [sys.executable, str(REPO / "ops" / "eval" / "run.py"), "--scripted", str(script),
           "--tasks", "create_hello,port_value,change_port", "--repeat", "2", "--json", str(out)]
    with trio.fail_after(RUNNER_TIMEOUT_S):
        done = await trio.run_process(cmd, capture_stdout=True, capture_stderr=True, check=False, cwd=str(REPO))
    stdout = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    report = json.loads(out.read_text())
    results = report["results"]
    assert [(r["task"], r["run"]) for r in results] == [
        (t, n) for n in (1, 2) for t in ("create_hello", "port_value", "change_port")]
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_task.setdefault(r["task"], []).append(r)
    for r in by_task["create_hello"]:
        assert r["passed"] and r["reason"] == "hello.txt holds hi"
        assert (r["rounds"], r["calls"], r["malformed"], r["end_reason"]) == (2, 1, 0, "answered")
        assert r["tools"] == ["write_file"] and r["answer"] == "I created hello.txt."
        assert r["prompt_tokens"] > 0 and r["completion_tokens"] > 0
    for r in by_task["port_value"]:
        assert not r["passed"] and r["reason"] == "the answer does not say 8080: PORT is 1234."
        assert (r["rounds"], r["calls"], r["malformed"], r["end_reason"]) == (1, 0, 0, "answered")
    for r in by_task["change_port"]:
        assert r["passed"], r["reason"]
        assert (r["rounds"], r["calls"], r["malformed"], r["unknown_tools"]) == (4, 4, 2, 1)
        assert r["tools"] == ["edit_file", "read_file", "open_file", "edit_file"]
    summary = report["summary"]
    assert (summary["passed"], summary["total"], summary["malformed"], summary["calls"]) == (4, 6, 4, 10)
    assert summary["pass_rates"] == {"create_hello": "2/2", "port_value": "0/2", "change_port": "2/2"}
    assert summary["end_reasons"] == {"answered": 6}
    assert re.search(r"^port_value\s+fail\s+1\s+0\s+0\s+answered\b.*the answer does not say 8080", stdout, re.M)
    assert re.search(r"^change_port\s+PASS\s+4\s+4\s+2\s+answered\b", stdout, re.M)
    assert "passed 4/6, mean rounds 2.33, calls 10 (malformed 4, unknown tool 2)" in stdout


async def test_runner_stops_a_run_at_the_task_timeout(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": [{"when": "What is PORT", "hang": True, "delay": 0.01}]}))
    out = tmp_path / "out.json"
    cmd = [sys.executable, str(REPO / "ops" / "eval" / "run.py"), "--scripted", str(script),
           "--tasks", "port_value", "--task-timeout", "2", "--json", str(out)]
    with trio.fail_after(RUNNER_TIMEOUT_S):
        done = await trio.run_process(cmd, capture_stdout=True, capture_stderr=True, check=False, cwd=str(REPO))
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    (result,) = json.loads(out.read_text())["results"]
    assert not result["passed"] and result["end_reason"] == "timeout" and result["reason"] == "no final answer"
