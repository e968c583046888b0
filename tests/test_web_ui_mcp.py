"""The Agent & MCP page (bmoe_daemon/web/agent.js) with remote MCP servers, in headless
Chromium against the real daemon: a remote server is marked as on the network, one that
cannot be reached shows when it is tried next, and a secret its header names is saved
from the page (and then never shown).

The remote servers are real: tests/mcp_server.py `--http` (the official Python SDK's
Streamable HTTP server) behind a bearer token, and a free port nothing listens on.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.browser import DESKTOP, PageWatch, chromium, require_browser, running_daemon, screenshot, write_script

SERVER = Path(__file__).with_name("mcp_server.py")
TOKEN = "ui-" + "c0ffee5eed" * 3
WAIT_MS = 20_000
SCRIPT = {"rounds": [
    {"when": "remote echo", "tool_calls": [{"name": "tokened_echo", "arguments": {"text": "hi"}}]},
    {"when": "remote echo", "text": "Echoed."},
]}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def bearer() -> Iterator[int]:
    """The Python SDK's server over Streamable HTTP, wanting TOKEN (in its environment)."""
    proc = subprocess.Popen([sys.executable, str(SERVER), "--http"], stdout=subprocess.PIPE,
                            env={**os.environ, "TEST_MCP_TOKEN": TOKEN})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        assert line.startswith("listening on "), line
        yield int(line.split()[-1])
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory, bearer):
    require_browser()
    root = tmp_path_factory.mktemp("webui-mcp")
    data = root / "data"
    data.mkdir()
    (data / "mcp.json").write_text(json.dumps({"mcpServers": {
        "tokened": {"url": f"http://127.0.0.1:{bearer}/mcp", "headers": {"Authorization": "Bearer ${secret:tok}"}},
        "away": {"url": f"http://127.0.0.1:{free_port()}/mcp"},
    }}))
    (root / "ws").mkdir()
    with running_daemon(data, "--scripted", str(write_script(root / "script.json", SCRIPT))) as d:
        d.folder = root / "ws"
        yield d


def test_remote_servers_are_marked_and_a_secret_is_saved_from_the_page(daemon, bearer):
    from playwright.sync_api import expect

    with chromium() as browser:
        ctx = browser.new_context(viewport=DESKTOP)
        page = ctx.new_page()
        page.set_default_timeout(WAIT_MS)
        watch = PageWatch(page, {urlsplit(daemon.url).netloc})
        page.goto(daemon.url + "/#/agent")
        servers = page.get_by_role("list", name="MCP servers")
        tokened = servers.get_by_role("listitem", name="tokened")
        away = servers.get_by_role("listitem", name="away")
        # Both leave the computer, and say so.
        for row in (tokened, away):
            expect(row.locator(".badge.on-network")).to_have_text("on the network")
            expect(row.locator(".mcp-leaves")).to_contain_text("leaves the computer")
        expect(tokened.locator(".mcp-headers")).to_have_text("Headers: Authorization (secret tok)")
        expect(tokened.locator(".badge.mcp-failed")).to_be_visible()
        expect(tokened.locator(".mcp-error")).to_contain_text("the secret 'tok'")
        # Nothing listens there: reconnecting, with when it is tried next; the page follows.
        expect(away.locator(".badge.mcp-reconnecting")).to_be_visible()
        expect(away.locator(".mcp-next-try")).to_contain_text("Next try")
        expect(page.get_by_role("list", name="Secrets").get_by_role("listitem", name="tok")).to_contain_text(
            "not saved yet")
        form = page.get_by_role("form", name="Save a secret")
        form.get_by_label("Name").fill("tok")
        form.get_by_label("Value").fill(TOKEN)
        form.get_by_role("button", name="Save secret").click()
        expect(tokened.locator(".badge.mcp-running")).to_be_visible()
        expect(tokened.locator("summary").first).to_have_text("7 tools")
        expect(page.get_by_role("list", name="Secrets").get_by_role("listitem", name="tok")).to_contain_text("saved")
        assert form.get_by_label("Value").input_value() == ""
        assert TOKEN not in page.content()
        screenshot(page, "desktop-mcp-remote")
        # Its prompt starts a message: its argument asked for, its text the home's draft.
        tokened.locator("details.mcp-prompts summary").click()
        tokened.get_by_role("button", name="Use review").click()
        use = tokened.get_by_role("form", name="Use the prompt review")
        use.get_by_label("topic").fill("the release notes")
        use.get_by_role("button", name="Start a message with it").click()
        expect(page.get_by_role("textbox", name="Message")).to_have_value("Review the release notes carefully.")
        # A call of its tool asks first (ask mode), its card saying where the arguments go.
        with httpx.Client(base_url=daemon.url, timeout=30) as c:
            ws = c.post("/api/workspaces", json={"path": str(daemon.folder)}).json()
            conv = c.post("/api/conversations", json={"workspace": ws["id"], "mode": "ask"}).json()
            assert c.post(f"/api/conversations/{conv['id']}/messages", json={"text": "remote echo"}).status_code == 202
        page.goto(daemon.url + f"/#/c/{conv['id']}")
        card = page.locator("article.card.tool")
        expect(card.locator(".badge.on-network")).to_have_text(f"on the network: 127.0.0.1:{bearer}")
        expect(card.locator(".badge.tool-state")).to_have_text("waiting for your answer")
        ctx.close()
        watch.check()
