"""End to end with a real client from the catalog: OpenCode (npm `opencode-ai`),
configured by `POST /api/connect/opencode`, answers with what this daemon's engine
produced.

The engine is the scripted one: OpenCode's own system prompt and tool definitions run
to thousands of tokens, more than the bundled model's context holds. OpenCode runs
offline: no npm registry (`npm_config_offline`), no models.dev fetch, and every
proxy-aware request but loopback sent to a closed port. `.ci/run` installs it when npm
is there and names it in OPENCODE_BIN (else `opencode` on PATH); without it this test
is skipped (failed, under BMOE_REQUIRE_PEERS: tests/peers.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.daemon_proc import DaemonProcess, run_daemon
from tests.peers import need_peer

ANSWER = "Hello from the bmoe-daemon scripted engine, through OpenCode."
RUN_TIMEOUT_S = 180
OFFLINE = {
    "npm_config_offline": "true",
    "OPENCODE_DISABLE_MODELS_FETCH": "true",
    "OPENCODE_DISABLE_AUTOUPDATE": "true",
    **{name: "http://127.0.0.1:9" for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")},
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}


def opencode_binary() -> str | None:
    for candidate in (os.environ.get("OPENCODE_BIN"), shutil.which("opencode")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


pytestmark = pytest.mark.model


@pytest.fixture
def opencode() -> str:
    """OpenCode's program; `need_peer` without it."""
    binary = opencode_binary()
    if binary is None:
        need_peer("OpenCode is not installed (.ci/run installs npm's opencode-ai, OPENCODE_BIN)")
    return binary


async def test_opencode_connected_by_the_daemon_answers_with_its_engine(tmp_path, opencode):
    binary = opencode
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": {"text": ANSWER}}))
    async with run_daemon(tmp_path / "data", "--scripted", str(script), env={"HOME": str(home)}) as d, \
            d.client() as c:
        await connect_and_run(d, c, binary, home, project, tmp_path)


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


async def connect_and_run(d: DaemonProcess, c: httpx.AsyncClient, binary: str, home: Path, project: Path,
                          tmp_path: Path) -> None:
    r = await c.post("/api/connect/opencode")
    assert r.status_code == 200, r.text
    config = Path(r.json()["file"])
    assert config == home / ".config" / "opencode" / "opencode.json"
    assert read_json(config)["provider"]["bmoe"]["options"]["baseURL"] == d.url + "/v1"
    env = {**os.environ, "HOME": str(home), "npm_config_cache": str(tmp_path / "npm-cache"), **OFFLINE}
    env.pop("XDG_CONFIG_HOME", None)
    env.pop("OPENCODE_CONFIG", None)
    with trio.fail_after(RUN_TIMEOUT_S):
        done = await trio.run_process([binary, "run", "Say hello."], cwd=str(project), env=env,
                                      capture_stdout=True, capture_stderr=True, check=False,
                                      stdin=subprocess.DEVNULL)
    out, err = done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace")
    assert done.returncode == 0, (out, err)
    assert ANSWER in out, (out, err)
    assert "scripted" in err  # OpenCode names the model it used: bmoe/scripted
