"""Run the evaluation's tasks (ops/eval/tasks.py, more_tasks.py, fresh_tasks.py, third_tasks.py, fourth_tasks.py,
fifth_tasks.py, sixth_tasks.py, seventh_tasks.py, eighth_tasks.py, ninth_tasks.py, tenth_tasks.py,
eleventh_tasks.py, twelfth_tasks.py) through the daemon's public HTTP API.

    .venv/bin/python ops/eval/run.py                         # the bundled model, a daemon of its own
    .venv/bin/python ops/eval/run.py --model ~/models/x.gguf # another GGUF
    .venv/bin/python ops/eval/run.py --url http://127.0.0.1:8765 --route myprovider/some-model

Without --url it starts `bmoe-daemon serve` on a free port with a temporary data folder
(and --model, when given) and stops it at the end. For each task (and each of --repeat
runs) the fixture is written into a fresh temporary folder, which is added as a
workspace; a conversation on --route in the task's mode gets the prompt; the run is
awaited, at most --task-timeout seconds (then stopped); the checker judges the folder
and the final answer. Printed per run: pass or fail and why, rounds (assistant items),
tool calls, malformed calls, why the run ended, time and tokens; then a summary.

A malformed call is a tool card the daemon ended because its arguments were not a JSON
object or did not have what the tool's parameters require (the daemon says so in the
card's result: see MALFORMED). A call to a tool that does not exist is counted apart.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import attrs
import httpx

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
from actors.notices import ARGUMENTS_NOT_JSON  # noqa: E402
from ops.eval.eighth_tasks import HELD_OUT_8  # noqa: E402
from ops.eval.eleventh_tasks import HELD_OUT_11  # noqa: E402
from ops.eval.fifth_tasks import HELD_OUT_5  # noqa: E402
from ops.eval.fourth_tasks import HELD_OUT_4  # noqa: E402
from ops.eval.fresh_tasks import HELD_OUT_2  # noqa: E402
from ops.eval.more_tasks import DEV, HELD_OUT  # noqa: E402
from ops.eval.ninth_tasks import HELD_OUT_9  # noqa: E402
from ops.eval.seventh_tasks import HELD_OUT_7  # noqa: E402
from ops.eval.sixth_tasks import HELD_OUT_6  # noqa: E402
from ops.eval.tasks import TASKS, Task  # noqa: E402
from ops.eval.tenth_tasks import HELD_OUT_10  # noqa: E402
from ops.eval.third_tasks import HELD_OUT_3  # noqa: E402
from ops.eval.twelfth_tasks import HELD_OUT_12  # noqa: E402

# The sets --set chooses from: the five first-minute jobs, the eighteen of tasks.py (the
# five among them), more_tasks.py's development and held-out halves, fresh_tasks.py's
# second held-out set, third_tasks.py's third, fourth_tasks.py's fourth, fifth_tasks.py's
# fifth, sixth_tasks.py's sixth, seventh_tasks.py's seventh, eighth_tasks.py's eighth,
# ninth_tasks.py's ninth, tenth_tasks.py's tenth and eleventh_tasks.py's eleventh (each read
# while developing since it became known: development sets now), and twelfth_tasks.py's
# twelfth, the one held out.
SETS: dict[str, tuple[Task, ...]] = {
    "five": TASKS[:5], "eighteen": TASKS, "dev": DEV, "held_out": HELD_OUT, "held_out_2": HELD_OUT_2,
    "held_out_3": HELD_OUT_3, "held_out_4": HELD_OUT_4, "held_out_5": HELD_OUT_5, "held_out_6": HELD_OUT_6,
    "held_out_7": HELD_OUT_7, "held_out_8": HELD_OUT_8, "held_out_9": HELD_OUT_9, "held_out_10": HELD_OUT_10,
    "held_out_11": HELD_OUT_11, "held_out_12": HELD_OUT_12,
}
ALL: tuple[Task, ...] = (TASKS + DEV + HELD_OUT + HELD_OUT_2 + HELD_OUT_3 + HELD_OUT_4 + HELD_OUT_5 + HELD_OUT_6
                         + HELD_OUT_7 + HELD_OUT_8 + HELD_OUT_9 + HELD_OUT_10 + HELD_OUT_11 + HELD_OUT_12)
BY_NAME = {t.name: t for t in ALL}

DAEMON_START_S = 120  # loading a large model takes a while
POLL_S = 0.25
STOP_WAIT_S = 30
HTTP_TIMEOUT_S = 30

# How the daemon words a call it did not run because of its arguments: not JSON
# (actors/runs/agent/run.py, notices.ARGUMENTS_NOT_JSON), or missing or mistyped parameters
# (actors/tools/args.py and each tool's own checks).
NOT_JSON = ARGUMENTS_NOT_JSON.split("{why}")[0]
MALFORMED = re.compile(
    "|".join([
        re.escape(NOT_JSON),
        r'^The call needs "',
        r'^"[\w.\[\]]+" must be (a string|a whole number|true or false|a number|a non-empty array|an object)',
        r"^edits\[\d+\] (must be an object|needs old_text and new_text)",
        r"^path must be a string",
    ])
)
UNKNOWN_TOOL = "There is no tool named "


@attrs.frozen
class Result:
    task: str
    run: int
    passed: bool
    reason: str
    rounds: int
    calls: int
    malformed: int
    unknown_tools: int
    end_reason: str
    seconds: float
    prompt_tokens: int
    completion_tokens: int
    answer: str
    tools: list[str]


def tally(body: dict[str, Any]) -> dict[str, Any]:
    """What a finished conversation's items say: rounds, calls, malformed calls, tokens
    and the final answer (the last assistant text)."""
    items = body.get("items") or []
    assistants = [i for i in items if i.get("kind") == "assistant"]
    cards = [i for i in items if i.get("kind") == "tool"]
    failed = [str(c.get("result") or "") for c in cards if c.get("state") == "error"]
    answer = next((str(i["text"]) for i in reversed(assistants) if (i.get("text") or "").strip()), "")
    usage = [i.get("usage") or {} for i in assistants]
    return {
        "rounds": len(assistants),
        "calls": len(cards),
        "malformed": sum(bool(MALFORMED.search(r)) for r in failed),
        "unknown_tools": sum(r.startswith(UNKNOWN_TOOL) for r in failed),
        "prompt_tokens": sum(int(u.get("prompt_tokens") or 0) for u in usage),
        "completion_tokens": sum(int(u.get("completion_tokens") or 0) for u in usage),
        "answer": answer,
        "tools": [str(c.get("tool")) for c in cards],
    }


# ---- the daemon ----


@contextmanager
def own_daemon(args: argparse.Namespace, root: Path) -> Iterator[str]:
    """`bmoe-daemon serve` on a free port with a data folder under `root`; its URL.
    SIGTERM at the end (SIGKILL when it does not go)."""
    cmd = [sys.executable, "-m", "bmoe_daemon", "serve", "--port", "0", "--data-dir", str(root / "data")]
    if args.model:
        cmd += ["--model", str(args.model)]
    if args.scripted:
        cmd += ["--scripted", str(args.scripted)]
    cmd += args.daemon_arg
    log = open(root / "daemon.log", "wb")  # noqa: SIM115 - closed below
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, env=env, cwd=str(REPO))
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            lines.put(raw.decode(errors="replace"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    try:
        deadline = time.monotonic() + DAEMON_START_S
        url = None
        while url is None:
            try:
                line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise SystemExit(f"the daemon did not start in {DAEMON_START_S} s; see {root / 'daemon.log'}") from None
            if line is None:
                log.flush()
                raise SystemExit("the daemon exited before listening:\n" + (root / "daemon.log").read_text()[-2000:])
            if line.startswith("listening on "):
                url = line.removeprefix("listening on ").strip()
        yield url
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()


# ---- one task ----


def wait_done(client: httpx.Client, cid: str, deadline: float, max_rounds: int = 0) -> dict[str, Any] | None:
    """The conversation once its run has ended (idle or error with an end_reason), waits
    for a person (a question, an approval) or has begun round max_rounds + 1 (when not
    0); None when the deadline passes first."""
    while time.monotonic() < deadline:
        body: dict[str, Any] = client.get(f"/api/conversations/{cid}").json()
        if body["state"] == "waiting" or (max_rounds and tally(body)["rounds"] > max_rounds):
            return body
        if body["state"] in ("idle", "error") and body.get("end_reason"):
            return body
        time.sleep(POLL_S)
    return None


def run_task(client: httpx.Client, task: Task, run: int, args: argparse.Namespace, root: Path) -> Result:
    folder = Path(tempfile.mkdtemp(prefix=f"{task.name}-", dir=root))
    task.write_fixture(folder)
    ws = check(client.post("/api/workspaces", json={"path": str(folder)}))
    conv = check(client.post("/api/conversations", json={
        "workspace": ws["id"], "mode": task.mode, "route": args.route, "title": f"eval {task.name} #{run}",
    }))
    cid = conv["id"]
    began = time.monotonic()
    check(client.post(f"/api/conversations/{cid}/messages", json={"text": task.prompt}))
    body = wait_done(client, cid, began + args.task_timeout, args.max_rounds)
    end = None
    if body is None or body["state"] not in ("idle", "error") or not body.get("end_reason"):
        end = "timeout" if body is None else "waiting" if body["state"] == "waiting" else "round_cap"
        if not check(client.post(f"/api/conversations/{cid}/stop")).get("stopped"):
            end = None  # it ended on its own meanwhile
        body = wait_done(client, cid, time.monotonic() + STOP_WAIT_S)
        if body is None:
            raise SystemExit(f"{task.name}: the run did not stop within {STOP_WAIT_S} s of POST .../stop")
    seconds = time.monotonic() - began
    counts = tally(body)
    passed, reason = task.check(folder, counts["answer"])
    if not args.keep:
        client.delete(f"/api/conversations/{cid}")
        client.delete(f"/api/workspaces/{ws['id']}")
        shutil.rmtree(folder, ignore_errors=True)
    return Result(task=task.name, run=run, passed=passed, reason=reason, end_reason=end or str(body["end_reason"]),
                  seconds=round(seconds, 2), **counts)


def check(resp: httpx.Response) -> dict[str, Any]:
    if resp.status_code >= 300:
        raise SystemExit(f"{resp.request.method} {resp.request.url.path}: {resp.status_code} {resp.text}")
    out: dict[str, Any] = resp.json()
    return out


# ---- the report ----

ROW = "{:<16} {:<4} {:>6} {:>5} {:>4} {:<10} {:>7} {:>13}  {}"


def print_row(r: Result) -> None:
    tokens = f"{r.prompt_tokens}/{r.completion_tokens}"
    print(ROW.format(r.task, "PASS" if r.passed else "fail", r.rounds, r.calls, r.malformed, r.end_reason,
                     f"{r.seconds:.1f}", tokens, r.reason), flush=True)


def summary(results: list[Result], repeat: int) -> dict[str, Any]:
    passed = sum(r.passed for r in results)
    by_task: dict[str, list[Result]] = {}
    for r in results:
        by_task.setdefault(r.task, []).append(r)
    ends: dict[str, int] = {}
    for r in results:
        ends[r.end_reason] = ends.get(r.end_reason, 0) + 1
    return {
        "passed": passed,
        "total": len(results),
        "mean_rounds": round(statistics.fmean(r.rounds for r in results), 2) if results else 0,
        "calls": sum(r.calls for r in results),
        "malformed": sum(r.malformed for r in results),
        "unknown_tools": sum(r.unknown_tools for r in results),
        "seconds": round(sum(r.seconds for r in results), 1),
        "prompt_tokens": sum(r.prompt_tokens for r in results),
        "completion_tokens": sum(r.completion_tokens for r in results),
        "end_reasons": ends,
        "pass_rates": {name: f"{sum(r.passed for r in rs)}/{len(rs)}" for name, rs in by_task.items()},
        "repeat": repeat,
    }


def print_summary(s: dict[str, Any]) -> None:
    if s["repeat"] > 1:
        print("\npass rate per task:")
        for name, rate in s["pass_rates"].items():
            print(f"  {name:<16} {rate}")
    ends = ", ".join(f"{k} {v}" for k, v in sorted(s["end_reasons"].items()))
    print(f"\npassed {s['passed']}/{s['total']}, mean rounds {s['mean_rounds']}, calls {s['calls']} "
          f"(malformed {s['malformed']}, unknown tool {s['unknown_tools']}), time {s['seconds']} s, "
          f"tokens {s['prompt_tokens']} in / {s['completion_tokens']} out; ended: {ends}", flush=True)


# ---- the command ----


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--url", help="a running daemon's address (default: start one)")
    p.add_argument("--route", default="local", help="'local', or a provider route 'provider-id/model' (default local)")
    p.add_argument("--model", type=Path, help="a GGUF for the daemon this starts (default: the bundled model)")
    p.add_argument("--daemon-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for the daemon this starts (e.g. --daemon-arg=--ctx-size=8192); repeatable")
    p.add_argument("--scripted", type=Path, help=argparse.SUPPRESS)  # tests: the scripted backend
    p.add_argument("--tasks", help="comma-separated task names (default: all, or those of --set)")
    p.add_argument("--set", action="append", choices=sorted(SETS), default=[], dest="sets",
                   help="run this set of tasks (repeatable): five, eighteen (tasks.py), dev or held_out "
                        "(more_tasks.py), held_out_2 (fresh_tasks.py), held_out_3 (third_tasks.py), held_out_4 "
                        "(fourth_tasks.py), held_out_5 (fifth_tasks.py), held_out_6 (sixth_tasks.py), held_out_7 "
                        "(seventh_tasks.py), held_out_8 (eighth_tasks.py), held_out_9 (ninth_tasks.py), "
                        "held_out_10 (tenth_tasks.py) and held_out_11 (eleventh_tasks.py), each developed against "
                        "since it became known, held_out_12 (twelfth_tasks.py): the held-out set, for reporting, "
                        "not for developing against")
    p.add_argument("--repeat", type=int, default=1, metavar="N", help="run each task N times (default 1)")
    p.add_argument("--task-timeout", type=float, default=30.0, metavar="S",
                   help="seconds a task's run may take before it is stopped (default %(default)s, for the bundled "
                        "model; give a larger model more)")
    p.add_argument("--max-rounds", type=int, default=0, metavar="N",
                   help="stop a run when it begins round N + 1 (end: round_cap); 0 leaves the daemon's own limit "
                        "(default %(default)s)")
    p.add_argument("--json", type=Path, metavar="PATH", help="write the results and the summary here")
    p.add_argument("--api-key", help="a key for a daemon that needs one (sent as Authorization: Bearer)")
    p.add_argument("--keep", action="store_true", help="keep the workspaces and conversations (for a look)")
    p.add_argument("--list", action="store_true", help="list the tasks and exit")
    args = p.parse_args(argv)
    if args.url and (args.model or args.scripted or args.daemon_arg):
        p.error("--model and --daemon-arg are for the daemon this starts; with --url, load the model there")
    if args.route != "local" and not args.url:
        p.error("a provider route needs a daemon where that provider is set up: pass its --url")
    if args.repeat < 1:
        p.error("--repeat must be 1 or more")
    if args.tasks:
        unknown = [n for n in args.tasks.split(",") if n not in BY_NAME]
        if unknown:
            p.error(f"no task named {', '.join(unknown)}; --list shows them")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.list:
        for name, tasks in SETS.items():
            for t in tasks:
                print(f"{name:<10} {t.name:<16} {t.mode:<5} {t.prompt}")
        return 0
    names = args.tasks.split(",") if args.tasks else [t.name for s in args.sets for t in SETS[s]] or list(BY_NAME)
    chosen = [BY_NAME[n] for n in dict.fromkeys(names)]
    headers = {"Authorization": f"Bearer {args.api_key}"} if args.api_key else {}
    results: list[Result] = []
    root = Path(tempfile.mkdtemp(prefix="bmoe-eval-"))
    try:
        with nullcontext(args.url) if args.url else own_daemon(args, root) as url:
            with httpx.Client(base_url=url, timeout=HTTP_TIMEOUT_S, headers=headers) as client:
                health = check(client.get("/health"))
                print(f"daemon {url}, version {health.get('version')}, model {health.get('model')}, "
                      f"route {args.route}, {len(chosen)} tasks x {args.repeat}", flush=True)
                print(ROW.format("task", "", "rounds", "calls", "bad", "end", "time s", "tokens in/out", "why"))
                for run in range(1, args.repeat + 1):
                    for task in chosen:
                        result = run_task(client, task, run, args, root)
                        results.append(result)
                        print_row(result)
    finally:
        if args.keep:
            print(f"kept the workspaces and the daemon's log in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    s = summary(results, args.repeat)
    print_summary(s)
    if args.json:
        args.json.write_text(json.dumps({"summary": s, "results": [attrs.asdict(r) for r in results]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
