"""The web UI's connection state (bmoe_daemon/web/connection.js, app.js): the banner
while the event stream is down, the message box waiting with why, "Reconnected", the
pages read again after a reconnect, and Retry on a page that could not be loaded.

Real Chromium against the real daemon: the daemon is stopped and started again on its
port and data folder, or the page's network is cut by a relay (tests/browser.py).
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from urllib.parse import urlsplit

import httpx
import pytest

from tests.browser import (
    DESKTOP,
    PHONE,
    PageWatch,
    Relay,
    chromium,
    require_browser,
    running_daemon,
    screenshot,
    start_daemon,
    write_script,
)

WAIT_MS = 15_000
DOWN = "Not connected to the daemon. Trying again… Messages cannot be sent until it is back."
OFFLINE_NOTE = "Not connected to the daemon: this can be sent once it is back."
# A dropped stream, a refused or aborted request: the browser logs each, and only those.
NET_ERRORS = ("net::ERR_",)
# Every text the banner showed, in order (read by `said`).
RECORD_BANNER = """() => {
  const el = document.getElementById("conn-banner");
  window.bannerSaid = [];
  new MutationObserver(() => window.bannerSaid.push(el.textContent)).observe(el, { childList: true, subtree: true,
    characterData: true });
}"""
SCRIPT = {"rounds": [{"when": "after the restart", "text": "Answered by the daemon started again."}]}


@pytest.fixture(scope="module")
def browser():
    require_browser()
    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    root = tmp_path_factory.mktemp("webui-conn")
    with running_daemon(root / "data", "--scripted", str(write_script(root / "script.json", SCRIPT))) as d:
        yield d


@contextmanager
def opened(browser, base, viewport=DESKTOP, where=""):
    """A page on `base` + `where` in a context of its own, once its stream is live;
    its conduct is checked when the block ends."""
    ctx = browser.new_context(viewport=viewport)
    page = ctx.new_page()
    page.set_default_timeout(WAIT_MS)
    watch = PageWatch(page, {urlsplit(base).netloc}, NET_ERRORS)
    try:
        page.goto(f"{base}/{where}")
        page.locator("#conn.conn-live").wait_for(state="attached")  # hidden in a phone's conversation
        # A first connection slower than the banner's grace (a loaded machine) is said, for
        # a few seconds: what the test records starts once that is over.
        banner(page).filter(has_text="Connected to the daemon.").wait_for(state="detached")
        page.evaluate(RECORD_BANNER)
        yield page
    except Exception as exc:
        exc.add_note(f"what the page logged: {watch.errors}")
        raise
    finally:
        ctx.close()
    watch.check()


def banner(page):
    return page.locator("#conn-banner")


def said(page):
    return page.evaluate("() => window.bannerSaid")


def wait_said(page, text, timeout=WAIT_MS):
    """Until the page's banner has said `text`. "Reconnected." shows for three seconds
    only: a wait for it on one page after another could start once it had gone."""
    page.wait_for_function("(text) => window.bannerSaid.includes(text)", arg=text, timeout=timeout)


def assert_in_view(page, viewport):
    box = banner(page).bounding_box()
    assert box is not None and box["height"] > 0
    assert box["x"] >= 0 and box["y"] >= 0, box
    assert box["x"] + box["width"] <= viewport["width"] and box["y"] + box["height"] <= viewport["height"], box


def new_conversation(base, title):
    return httpx.post(f"{base}/api/conversations", json={"title": title}, timeout=10).json()["id"]


def test_the_daemon_stopped_and_started_again_is_said_at_every_width(browser, tmp_path):
    from playwright.sync_api import expect

    script = write_script(tmp_path / "script.json", SCRIPT)
    d = start_daemon(tmp_path / "data", "--scripted", str(script))
    port = str(urlsplit(d.url).port)
    try:
        cid = new_conversation(d.url, "Through a restart")
        with opened(browser, d.url, DESKTOP, f"#/c/{cid}") as desk, \
                opened(browser, d.url, PHONE, f"#/c/{cid}") as phone:
            box = desk.get_by_label("Message", exact=True)
            box.fill("after the restart, please")
            assert banner(desk).text_content() == banner(phone).text_content() == ""  # nothing said at the start
            d.stop()
            for page, viewport in ((desk, DESKTOP), (phone, PHONE)):
                banner(page).filter(has_text=DOWN).wait_for()
                assert banner(page).get_attribute("role") == "status"
                assert_in_view(page, viewport)
                note = page.locator("form.composer").get_by_text(OFFLINE_NOTE)
                assert note.is_visible()
                assert page.get_by_role("button", name="Send").is_disabled()
            assert phone.locator("#conn").is_hidden()  # the sidebar's word is not on a phone's screen
            screenshot(desk, "connection-lost-desktop")
            screenshot(phone, "connection-lost-phone")
            posts = []
            desk.on("request", lambda r: posts.append(r.url) if r.method == "POST" else None)
            box.press("Enter")  # nothing is sent, and the text stays
            desk.wait_for_timeout(200)
            assert posts == [] and box.input_value() == "after the restart, please"
            # A page opened meanwhile cannot be read: it says so, with Retry.
            phone.evaluate("() => { location.hash = '#/skills'; }")
            failed = phone.get_by_role("heading", name="This page could not be shown")
            failed.wait_for()
            assert phone.get_by_role("alert").filter(has_text="Could not reach the daemon").is_visible()
            assert phone.get_by_role("button", name="Retry").is_visible()

            d = start_daemon(tmp_path / "data", "--scripted", str(script), "--port", port)
            for page in (desk, phone):
                wait_said(page, "Reconnected.")
            assert not desk.locator(".composer-offline").is_visible()
            box.press("Enter")  # the draft kept goes now
            desk.get_by_role("article", name="Answer").filter(has_text="by the daemon started again").wait_for()
            # the failed page was tried again by itself
            phone.get_by_role("heading", name="Skills").wait_for()
            # the heading is drawn at once, the list once the skills are read
            expect(phone.get_by_role("list", name="Skills").get_by_role("listitem")).not_to_have_count(
                0, timeout=WAIT_MS)
            for page in (desk, phone):
                banner(page).filter(has_text="Reconnected.").wait_for(state="detached", timeout=6000)
                assert banner(page).text_content() == ""
                texts = said(page)
                assert texts[0] == DOWN and "Reconnected." in texts, texts
    finally:
        d.stop()


def test_after_a_drop_every_page_is_read_again(browser, daemon, tmp_path):
    relay = Relay(daemon.url)  # the pages' network, which the test can cut
    folder = tmp_path / "added-while-away"
    folder.mkdir()
    cid = new_conversation(daemon.url, "Away for a while")
    try:
        with opened(browser, relay.url, DESKTOP, "#/workspaces") as spaces, \
                opened(browser, relay.url, PHONE, f"#/c/{cid}") as conv, \
                opened(browser, relay.url, DESKTOP, "#/new") as new:
            new.get_by_label("Title", exact=True).fill("Half typed")
            # An event each page takes: from here a drop resumes the stream where it was, and
            # its replay says nothing of workspaces.
            httpx.patch(f"{daemon.url}/api/conversations/{cid}", json={"title": "Renamed"}, timeout=10)
            conv.get_by_role("heading", name="Renamed").wait_for()
            for page in (spaces, new):
                page.locator("#conv-list").get_by_text("Renamed").wait_for()
            streams = []
            spaces.on("request", lambda r: streams.append(r) if r.url.endswith("/api/events") else None)
            # A blip the stream mends at once is not said.
            relay.cut()
            time.sleep(0.2)
            relay.resume()
            deadline = time.monotonic() + 10
            while not streams and time.monotonic() < deadline:
                spaces.wait_for_timeout(50)
            assert streams, "the stream was not cut"
            spaces.locator("#conn.conn-live").wait_for(state="attached")
            spaces.wait_for_timeout(1200)  # longer than the banner waits before it speaks
            assert said(spaces) == [], said(spaces)

            relay.cut()
            for page in (spaces, conv, new):
                banner(page).filter(has_text=DOWN).wait_for()
            with httpx.Client(base_url=daemon.url, timeout=10) as c:  # the daemon is up: another client adds one
                assert c.post("/api/workspaces", json={"path": str(folder)}).status_code in (200, 201)
            assert spaces.get_by_role("heading", name=folder.name).count() == 0
            relay.resume()
            for page in (spaces, conv, new):
                wait_said(page, "Reconnected.")
            spaces.get_by_role("heading", name=folder.name).wait_for()
            for page in (conv, new):  # the workspace pickers offer it
                picker = page.get_by_label("Workspace", exact=True)
                picker.locator("option").filter(has_text=folder.name).wait_for(state="attached")
            assert new.get_by_label("Title", exact=True).input_value() == "Half typed"  # what was typed stays
    finally:
        relay.close()


def test_a_delete_asked_once_is_not_undone_by_the_page_read_again(browser, daemon):
    """A page read again after a drop (or after a press's release) is drawn anew; a delete
    clicked once and waiting for its second click would be drawn unasked, and the
    second click then asks again. The page is not read again while one waits."""
    relay = Relay(daemon.url)
    name = "armed-secret"
    try:
        with httpx.Client(base_url=daemon.url, timeout=10) as c:
            assert c.put(f"/api/secrets/{name}", json={"value": "not shown"}).status_code == 200
        with opened(browser, relay.url, DESKTOP, "#/agent") as page:
            page.get_by_role("button", name=f"Delete {name}").click()
            armed = page.get_by_role("button", name=f"Really delete {name}?")
            armed.wait_for()
            relay.cut()
            banner(page).filter(has_text=DOWN).wait_for()
            relay.resume()
            wait_said(page, "Reconnected.")
            page.wait_for_timeout(500)  # a read again would have been drawn by now
            assert armed.count() == 1 and armed.evaluate("b => b === document.activeElement")
            armed.click()
            page.get_by_role("list", name="Secrets").get_by_role("listitem").filter(has_text=name).wait_for(
                state="detached")
            with httpx.Client(base_url=daemon.url, timeout=10) as c:
                assert name not in [x["name"] for x in c.get("/api/secrets").json()["secrets"]]
    finally:
        relay.close()


# Answers to the page's reads of `part` come back this much later while window.__slow is set.
SLOW_READS = """part => {
  const fetched = window.fetch;
  window.fetch = async (...args) => {
    const answer = await fetched(...args);
    if (window.__slow && String(args[0]).includes(part)) await new Promise((r) => setTimeout(r, 2500));
    return answer;
  };
}"""


def test_a_delete_clicked_while_the_page_is_read_again_stays_asked(browser, daemon):
    """The page is read again after a drop; a delete clicked while that read is on its
    way is not drawn over when it comes back (the read checked the page before it went,
    not when it was drawn: seen once in CI, on a loaded machine)."""
    relay = Relay(daemon.url)
    name = "slow-secret"
    try:
        with httpx.Client(base_url=daemon.url, timeout=10) as c:
            assert c.put(f"/api/secrets/{name}", json={"value": "not shown"}).status_code == 200
        with opened(browser, relay.url, DESKTOP, "#/agent") as page:
            page.evaluate(SLOW_READS, "/api/secrets")
            page.evaluate("() => { window.__slow = true; }")
            relay.cut()
            banner(page).filter(has_text=DOWN).wait_for()
            relay.resume()
            wait_said(page, "Reconnected.")
            page.get_by_role("button", name=f"Delete {name}").click()  # the page's read is on its way
            armed = page.get_by_role("button", name=f"Really delete {name}?")
            armed.wait_for()
            page.wait_for_timeout(3500)  # the reads came back
            assert armed.count() == 1 and armed.evaluate("b => b === document.activeElement")
            armed.click()
            page.get_by_role("list", name="Secrets").get_by_role("listitem").filter(has_text=name).wait_for(
                state="detached")
    finally:
        relay.close()


def test_a_page_that_could_not_be_loaded_says_why_and_retry_loads_it(browser, daemon):
    cid = new_conversation(daemon.url, "Loaded on the second try")
    with opened(browser, daemon.url) as page:
        page.route("**/api/providers", lambda route: route.abort("connectionrefused"))
        page.evaluate("() => { location.hash = '#/providers'; }")
        page.get_by_role("heading", name="This page could not be shown").wait_for()
        assert page.get_by_role("alert").filter(has_text="Could not reach the daemon").is_visible()
        retry = page.get_by_role("button", name="Retry")
        retry.click()  # still out of reach: said again, the keyboard on Retry
        page.wait_for_function("() => document.activeElement && document.activeElement.textContent === 'Retry'")
        page.unroute("**/api/providers")
        retry.click()
        page.get_by_role("heading", name="Providers").wait_for()
        page.get_by_text("No providers saved.").wait_for()
        assert page.get_by_role("heading", name="This page could not be shown").count() == 0

        # a conversation that could not be read says so the same way
        path = f"**/api/conversations/{cid}"
        page.route(path, lambda route: route.abort("connectionrefused"))
        page.evaluate(f"() => {{ location.hash = '#/c/{cid}'; }}")
        page.get_by_role("heading", name="This page could not be shown").wait_for()
        page.unroute(path)
        page.get_by_role("button", name="Retry").click()
        page.get_by_role("heading", name="Loaded on the second try").wait_for()
        assert page.get_by_label("Message", exact=True).is_enabled()


def test_the_home_page_read_again_after_a_drop_leaves_the_focus_where_it_was(browser, daemon):
    """The home page's message box takes the focus when the page opens, not when the page
    is read again after a drop: the person who moved on to the conversation search keeps
    typing there."""
    relay = Relay(daemon.url)
    try:
        with opened(browser, relay.url, DESKTOP) as home:
            box = home.get_by_role("textbox", name="Message")
            box.wait_for()
            assert home.evaluate("document.activeElement.getAttribute('aria-label')") == "Message"
            home.get_by_role("searchbox", name="Search conversations").focus()
            relay.cut()
            banner(home).filter(has_text=DOWN).wait_for()
            relay.resume()
            banner(home).filter(has_text="Reconnected.").wait_for()
            home.wait_for_timeout(300)  # the page's second reading has drawn it
            assert home.evaluate("document.activeElement.getAttribute('aria-label')") == "Search conversations"
    finally:
        relay.close()
