"""The web UI and the sandbox (issue 28) in Chromium: the workspace page's network switch
(with its warning) changes the workspace on the daemon, and a daemon without bubblewrap
says "Commands are not sandboxed" on the workspaces page and in a conversation's header,
while one with it says nothing of the kind."""

from __future__ import annotations

import shutil
from urllib.parse import urlsplit

import httpx

from tests.browser import DESKTOP, PageWatch, chromium, require_browser, running_daemon
from tests.peers import need_peer


def test_the_network_switch_and_the_not_sandboxed_warning(tmp_path):
    require_browser()
    folder = tmp_path / "proj"
    folder.mkdir()
    with running_daemon(tmp_path / "data", "--no-model", "--bwrap", str(tmp_path / "no-bwrap")) as d, \
            httpx.Client(base_url=d.url, timeout=30) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        cid = c.post("/api/conversations", json={"workspace": ws["id"]}).json()["id"]
        with chromium() as browser:
            page = browser.new_context(viewport=DESKTOP).new_page()
            watch = PageWatch(page, {urlsplit(d.url).netloc})
            page.goto(f"{d.url}/#/workspaces")
            banner = page.locator("p.not-sandboxed")
            banner.wait_for()
            assert "Commands are not sandboxed" in banner.inner_text() and "install bubblewrap" in banner.inner_text()
            switch = page.get_by_label("Commands may use the network")
            assert not switch.is_checked()
            assert "send this folder's files anywhere" in page.locator(".ws-network").inner_text()
            switch.check()
            page.wait_for_function(
                "() => !document.querySelector('.ws-network-box').disabled")
            assert c.get("/api/workspaces").json()[0]["network"] is True
            page.reload()
            page.get_by_label("Commands may use the network").wait_for()
            assert page.get_by_label("Commands may use the network").is_checked()
            page.get_by_label("Commands may use the network").uncheck()
            page.wait_for_function("() => !document.querySelector('.ws-network-box').disabled")
            assert c.get("/api/workspaces").json()[0]["network"] is False
            page.goto(f"{d.url}/#/c/{cid}")
            badge = page.locator(".conv-head .not-sandboxed")
            badge.wait_for()
            assert badge.inner_text() == "Commands are not sandboxed"
            assert "install bubblewrap" in (badge.get_attribute("title") or "")
            watch.check()


def test_a_sandboxed_daemon_shows_no_warning(tmp_path):
    require_browser()
    if shutil.which("bwrap") is None:
        need_peer("bwrap is missing: install Debian's bubblewrap")
    folder = tmp_path / "proj"
    folder.mkdir()
    with running_daemon(tmp_path / "data", "--no-model") as d, httpx.Client(base_url=d.url, timeout=30) as c:
        assert c.get("/health").json()["sandbox"]["confined"] is True
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        cid = c.post("/api/conversations", json={"workspace": ws["id"]}).json()["id"]
        with chromium() as browser:
            page = browser.new_context(viewport=DESKTOP).new_page()
            page.goto(f"{d.url}/#/workspaces")
            page.get_by_label("Commands may use the network").wait_for()
            assert page.locator("p.not-sandboxed").count() == 0
            page.goto(f"{d.url}/#/c/{cid}")
            page.locator(".conv-head .badge.state-idle").wait_for()
            page.wait_for_timeout(300)  # the status is read once, after the header's first paint
            assert page.locator(".conv-head .not-sandboxed").is_hidden()
