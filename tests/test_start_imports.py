"""What `serve --no-model` has imported by the time it answers its first request: none of
the heavy modules that only a model, a tool, a rare route or the tests need (issue 34:
start at most 0.5 s to /health, at most 0.25 s of it importing; ops/bench/startup.py
measures the times). The daemon runs as a process of its own, on port 0 with a fresh
data folder, started by a few lines that run `python -m bmoe_daemon` as it runs and
write the process's sys.modules to a file on SIGUSR1; the test sends it once /health
answered 200.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import trio

from tests.daemon_proc import REPO, run_daemon

# Heavy modules (and what needs each), none of which a daemon without a model needs to
# start or to answer /health.
HEAVY = {
    "llama_cpp": "llama.cpp's bindings, which load the library: a model's load",
    "numpy": "the local backend: a model's load",
    "jinja2.sandbox": "a chat template's rendering: a model's load",
    "actors.model.backends.generic_grammar": "the grammar converter: a local model's round with tools",
    "jsonschema": "a message with an answer schema, GET /openapi.json",
    "bmoe_daemon.openapi": "the OpenAPI document: GET /openapi.json",
    "httpx": "a provider's route, an HTTP hook's post",
    "re2": "the grep tool",
    "actors.runs.agent.run": "the agent's run and its tools' code: the first message",
    "actors.conversations.actor": "a conversation's actor: the first conversation that wakes",
    "actors.runs.agent.ledger": "a run's bookkeeping: the first conversation that wakes",
    "actors.tools.files": "the built-in tools: the registry's first read (a run's, a listing's)",
    "actors.tools.shell": "the built-in tools: the registry's first read (a run's, a listing's)",
    "actors.tools.search": "the built-in tools: the registry's first read (a run's, a listing's)",
    "actors.model.discovery.scan": "the scan of the model folders: GET /api/models, a model's load",
    "hypothesis": "the tests",
    "schemathesis": "the tests",
    "pytest": "the tests",
}

# Runs the daemon as `python -m bmoe_daemon ARGS...` would (argv[1] is the file to write).
DUMPING = """
import json, os, runpy, signal, sys
out = sys.argv[1]
def dump(signum, frame):
    with open(out + ".part", "w") as f:
        json.dump(sorted(sys.modules), f)
    os.replace(out + ".part", out)
signal.signal(signal.SIGUSR1, dump)
sys.argv = [sys.argv[0], *sys.argv[2:]]
runpy.run_module("bmoe_daemon", run_name="__main__", alter_sys=True)
"""
DUMP_WAIT_S = 10
POLL_S = 0.02


def heavy_in(modules: list[str]) -> dict[str, str]:
    """The HEAVY modules among `modules` (a package counts when any module of it is there)."""
    loaded = set(modules)
    return {name: why for name, why in HEAVY.items()
            if name in loaded or any(m.startswith(name + ".") for m in loaded)}


def test_heavy_in_names_a_package_by_any_of_its_modules() -> None:
    assert heavy_in(["trio", "numpy.core"]) == {"numpy": HEAVY["numpy"]}
    assert heavy_in(["jinja2", "jinja2.environment", "numpyish"]) == {}


async def test_serve_no_model_imports_no_heavy_module_before_its_first_answer(tmp_path: Path) -> None:
    out = tmp_path / "modules.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    program = [sys.executable, "-c", DUMPING, str(out)]
    async with run_daemon(tmp_path / "data", "--no-model", program=program, env=env) as d, d.client() as c:
        assert (await c.get("/health")).status_code == 200
        d.proc.send_signal(signal.SIGUSR1)
        with trio.fail_after(DUMP_WAIT_S):
            while not out.exists():
                await trio.sleep(POLL_S)
    modules = json.loads(out.read_text())
    assert "bmoe_daemon.server" in modules and "quart" in modules  # the daemon's, as it serves
    assert heavy_in(modules) == {}, "imported at start: move each import to where it is first used"


# What `bmoe-daemon run` (a client, started on every call) must not load: the daemon's own
# stack, attrs's classes (code compiled at import), and anything heavy. Issue 33's bench
# (ops/bench/run_cli.py) holds it to 1.3x curl plus Python's start-up.
CLIENT_HEAVY = ("attrs", "attr", "trio", "quart", "hypercorn", "httpx", "jsonschema", "numpy", "llama_cpp",
                "actors.record.items", "bmoe_daemon.config", "bmoe_daemon.server", "bmoe_daemon.startup")

# Runs `python -m bmoe_daemon ARGS...` and writes its sys.modules to argv[1] at exit.
CLIENT_DUMPING = """
import atexit, json, runpy, sys
out = sys.argv[1]
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = [sys.argv[0], *sys.argv[2:]]
runpy.run_module("bmoe_daemon", run_name="__main__", alter_sys=True)
"""


async def test_the_run_client_loads_only_what_a_client_needs(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": [], "default": {"text": "Hi!"}}))
    out = tmp_path / "client-modules.json"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d:
        done = await trio.run_process(
            [sys.executable, "-c", CLIENT_DUMPING, str(out), "run", "--json", "--data-dir", str(d.data_dir), "say hi"],
            env=env, capture_stdout=True, capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout.decode().splitlines()[-1])["result"] == "Hi!"
    modules = set(json.loads(out.read_text()))
    assert "bmoe_daemon.run_cmd.session" in modules  # the client's, as it ran
    loaded = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in CLIENT_HEAVY))
    assert loaded == [], "the run client imported these: import them where they are first needed"
