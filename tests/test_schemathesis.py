"""Schemathesis against the real daemon: every route of GET /openapi.json, with its links
followed, must answer without a server error, as the document says, and in time.

The daemon runs as a process (tests/daemon_proc.py) with the scripted model, a key and
a home folder of its own (POST /api/connect/<id> writes other apps' settings there).
Schemathesis runs as its CLI, as a person would run it, with a HAR report of every
request it made: the test counts them, and the 5xx and timed-out answers among them.

Below it, one regression test for each kind of fault Schemathesis found.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import trio

from tests.daemon_proc import run_daemon

KEY = "schemathesis-key"
# Each operation gets at most this many generated cases per phase; with the stateful
# phase's link walks this keeps the run near two minutes on two cores.
MAX_EXAMPLES = 25
REQUEST_TIMEOUT_S = 10.0  # an answer that takes longer counts as a hang
RUN_LIMIT_S = 420.0
# What is checked of each answer. Left out: positive_data_acceptance, since a body the
# schema allows may still be refused for what no schema can say (a folder that does
# not exist, a skill that ships with the daemon, a route to a provider not saved); and
# ensure_resource_availability, which takes any 404 after a create for the created
# thing gone, where the contract answers 404 for a card (`item`, in the body) that is
# not waiting, in a conversation that exists.
CHECKS = ",".join([
    "not_a_server_error", "status_code_conformance", "content_type_conformance", "response_headers_conformance",
    "response_schema_conformance", "negative_data_rejection", "unsupported_method", "allow_header_conformance",
    "use_after_free", "missing_required_header",
])
# The event stream never ends, so a whole answer never comes: it is read, bounded, by
# tests/test_events.py and tests/test_e2e.py. Every other route is fuzzed.
EXCLUDED_PATHS = ("/api/events",)


def _schemathesis() -> list[str]:
    exe = Path(sys.executable).parent / "schemathesis"
    assert exe.exists() or shutil.which("schemathesis"), "schemathesis is in the test extra: pip install -e '.[test]'"
    return [str(exe) if exe.exists() else "schemathesis"]


async def test_schemathesis_finds_no_fault(tmp_path: Path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o600)
    home = tmp_path / "home"
    home.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"token_delay": 0, "default": {"text": "Done."}}))
    har = tmp_path / "requests.har"
    async with run_daemon(tmp_path / "data", "--scripted", str(script), "--api-key-file", str(key_file),
                          env={"HOME": str(home)}) as d:
        cmd = [
            *_schemathesis(), "run", f"{d.url}/openapi.json",
            "--header", f"Authorization: Bearer {KEY}",
            "--checks", CHECKS,
            "--max-examples", str(MAX_EXAMPLES),
            "--request-timeout", str(REQUEST_TIMEOUT_S),
            "--workers", "1",
            "--report", "har", "--report-har-path", str(har),
            "--no-color",
            *[arg for path in EXCLUDED_PATHS for arg in ("--exclude-path", path)],
        ]
        folder = tmp_path / "project"
        folder.mkdir()
        (folder / "README.md").write_text("A folder to work in.\n")
        env = {**os.environ, "SCHEMATHESIS_HOOKS": "tests.schemathesis_hooks", "BMOE_ST_FOLDER": str(folder),
               "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
        started = time.monotonic()
        with trio.fail_after(RUN_LIMIT_S):
            done = await trio.run_process(cmd, capture_stdout=True, stderr=subprocess.STDOUT, check=False, env=env,
                                          cwd=str(tmp_path))
        took = time.monotonic() - started
        async with d.client() as c:  # the daemon still serves after all of it
            assert (await c.get("/health")).status_code == 200
        log = d.log_file()
    output = done.stdout.decode(errors="replace")
    entries = json.loads(har.read_text())["log"]["entries"]
    statuses = [e["response"]["status"] for e in entries]
    server_errors = [s for s in statuses if s >= 500]
    no_answer = [s for s in statuses if s == 0]  # timed out or the connection failed
    print(f"\nSchemathesis made {len(entries)} requests in {took:.0f} s: "
          f"{len(server_errors)} server errors, {len(no_answer)} without an answer, exit code {done.returncode}")
    assert len(entries) > 1000, output[-3000:]
    assert server_errors == [], output[-6000:]
    assert no_answer == [], output[-6000:]
    assert "unexpected error" not in log, log[-3000:]
    # Its own verdict: no check failed (a 5xx, an answer the document does not
    # describe, a malformed request taken) and no request errored (a timeout).
    assert done.returncode == 0, output[-8000:]


# ---- what it found ----


async def test_a_body_no_route_reads_does_not_stall_the_connection(tmp_path: Path) -> None:
    """An answer that left before its request's body was taken (a GET with a body, an
    OPTIONS) stalled the next request on the same connection, about one time in eight."""
    async with run_daemon(tmp_path / "data", "--no-model") as d, \
            httpx.AsyncClient(base_url=d.url, timeout=3) as c:
        body = b'{"item": "", "text": "", "think": null}'
        for _ in range(25):
            for method, path in (("OPTIONS", "/api/conversations/x/edit"), ("GET", "/health"),
                                 ("GET", "/api/workspaces")):
                r = await c.request(method, path, content=body, headers={"Content-Type": "application/json"})
                assert r.status_code in (200, 405)
                r = await c.get("/health")  # the same connection: it must answer at once
                assert r.status_code == 200


async def test_a_body_naming_an_unknown_workspace_is_400(tmp_path: Path) -> None:
    """POST /api/conversations with a workspace that is not one answered 404, which is for
    an id in the path; it is a malformed body, 400, as PATCH and a task answer it."""
    async with run_daemon(tmp_path / "data", "--no-model") as d, d.client() as c:
        for workspace in ("", "w-nope"):
            r = await c.post("/api/conversations", json={"workspace": workspace})
            assert (r.status_code, r.json()["code"]) == (400, "bad_request"), r.text
        assert (await c.get("/api/conversations")).json() == []
