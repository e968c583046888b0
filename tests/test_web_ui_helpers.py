"""The helper tree (bmoe_daemon/web/helpertree.js) in headless Chromium against the real
daemon with a scripted model: a helper in the background shows as working after the
run's answer, flagged once it has written nothing for two minutes (the page's clock
moved on), and "Stop the helpers" stops it and its command, the tree showing it live."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import httpx
import psutil
import pytest

from tests.browser import DESKTOP, PageWatch, chromium, require_browser, scripted_daemon

WAIT_MS = 20_000
MARKER = "30121"
SCRIPT = {"token_delay": 0, "rounds": [
    {"when": "start", "tool_calls": [{"name": "task", "arguments": {
        "description": "wait a while", "prompt": "bg wait a while", "subagent_type": "general", "background": True}}]},
    {"when": "bg wait", "tool_calls": [{"name": "exec_shell_command",
                                        "arguments": {"command": f"sleep {MARKER}", "timeout": 120}}]},
    {"when": "start", "text": "It works in the background."},
]}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    require_browser()
    with scripted_daemon(tmp_path_factory.mktemp("helper_tree"), SCRIPT) as d:
        yield d


@pytest.fixture
def page(daemon):
    with chromium() as browser:
        ctx = browser.new_context(viewport=DESKTOP)
        page = ctx.new_page()
        page.set_default_timeout(WAIT_MS)
        # Playwright's clock (set_system_time below) puts its script in every frame; the
        # page's sandboxed preview frame refuses it, and Chromium says so on the console.
        watch = PageWatch(page, {urlsplit(daemon.url).netloc}, ("Blocked script execution in 'about:blank'",))
        yield page
        ctx.close()
        watch.check()


def sleeping() -> bool:
    return any((p.info["cmdline"] or [])[-2:] == ["sleep", MARKER] for p in psutil.process_iter(["cmdline"]))


def test_the_helper_tree_shows_a_background_helper_live_and_stops_it(daemon, page, tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    with httpx.Client(base_url=daemon.url, timeout=30) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        cid = c.post("/api/conversations", json={"workspace": ws["id"], "mode": "full"}).json()["id"]
    page.goto(f"{daemon.url}/#/c/{cid}")
    page.locator("#conn").filter(has_text="Live").wait_for(state="attached")
    tree = page.locator("section.helper-tree")
    assert tree.is_hidden()  # no helper yet
    page.get_by_role("textbox", name="Message").fill("start")
    page.get_by_role("button", name="Send").click()
    page.locator("article.item.assistant").filter(has_text="It works in the background.").wait_for()
    node = tree.locator("li.helper-node.state-running")
    node.filter(has_text="wait a while").wait_for()
    assert "background" in node.inner_text() and "general" in node.inner_text()
    assert "1 helper, 1 working" in tree.locator("summary").inner_text()
    assert node.locator(".helper-stalled").count() == 0
    deadline = time.monotonic() + 20
    while not sleeping():
        assert time.monotonic() < deadline, "the helper's command did not start"
        time.sleep(0.05)
    # Two minutes on the page's clock with nothing written: the helper is flagged.
    page.clock.set_system_time(time.time() + 180)
    tree.locator("li.helper-node.stalled .helper-stalled").filter(has_text="No progress since").wait_for()
    assert "1 without progress" in tree.locator("summary").inner_text()
    tree.get_by_role("button", name="Stop the helpers").click()
    tree.locator("li.helper-node.state-stopped").filter(has_text="wait a while").wait_for()
    assert tree.locator(".helper-stalled").count() == 0
    assert "Stop the helpers" not in tree.inner_text()
    deadline = time.monotonic() + 5
    while sleeping():
        assert time.monotonic() < deadline, "the helper's command outlived its stop"
        time.sleep(0.05)
