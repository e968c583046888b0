"""The page as an app with a tool of its own (bmoe_daemon/web/clienttools.js), and a card
waiting for an app that is gone, in headless Chromium against the real daemon with a
scripted model.

A conversation the home page starts with a folder is given `show_file`; the model calls
it, and the page opens the file in its preview at that line, marked and scrolled to,
and answers the call: the model's next round reads what the page showed. A card of an
app's tool that no event stream answers for says so, until an app connects.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import httpx
import pytest

from tests.browser import DESKTOP, PageWatch, chromium, require_browser, scripted_daemon

WAIT_MS = 20_000
NOTES = "".join(f"note {n}\n" for n in range(1, 81))
LINE = {"type": "object", "properties": {"line": {"type": "integer"}}, "required": ["line"]}
SCRIPT = {"token_delay": 0, "rounds": [
    {"when": "point at the note", "tool_calls": [{"name": "show_file",
                                                  "arguments": {"path": "notes.txt", "line": 60}}]},
    {"when": "point at the note", "say": "tool_result"},
    {"when": "light it", "tool_calls": [{"name": "highlight", "arguments": {"line": 2}}]},
    {"when": "light it", "say": "tool_result"},
]}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    require_browser()
    with scripted_daemon(tmp_path_factory.mktemp("client_tools"), SCRIPT) as d:
        yield d


@pytest.fixture(scope="module")
def browser(daemon):
    with chromium() as b:
        yield b


@pytest.fixture
def page(browser, daemon):
    ctx = browser.new_context(viewport=DESKTOP)
    page = ctx.new_page()
    page.set_default_timeout(WAIT_MS)
    watch = PageWatch(page, {urlsplit(daemon.url).netloc})
    yield page
    ctx.close()
    watch.check()


def api(daemon):
    return httpx.Client(base_url=daemon.url, timeout=30)


def wait_clients(daemon, cid: str, n: int) -> None:
    """The daemon counts `n` event streams that answer the conversation's tool calls."""
    deadline = time.monotonic() + 20
    with api(daemon) as c:
        while c.get(f"/api/conversations/{cid}").json()["tool_clients"] != n:
            assert time.monotonic() < deadline, f"the daemon does not count {n} app(s) for {cid}"
            time.sleep(0.05)


def test_the_page_shows_a_file_at_a_line_when_the_model_asks(daemon, page, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "notes.txt").write_text(NOTES)
    with api(daemon) as c:
        c.post("/api/workspaces", json={"path": str(folder)}).raise_for_status()
    page.goto(f"{daemon.url}/#/")
    page.locator("#conn").filter(has_text="Live").wait_for(state="attached")
    page.get_by_label("Workspace").select_option(label="notes")
    page.get_by_label("Message").fill("point at the note")
    page.get_by_role("button", name="Send").click()
    dialog = page.locator("#preview-dialog")
    dialog.get_by_role("heading", name="notes.txt:60").wait_for()
    marked = dialog.locator(".shown-line")
    assert marked.get_attribute("data-line") == "60" and "note 60" in marked.inner_text()
    assert marked.is_visible() and page.evaluate(
        "() => { const r = document.querySelector('.shown-line').getBoundingClientRect();"
        " const box = document.querySelector('.preview-lines').getBoundingClientRect();"
        " return r.top >= box.top && r.bottom <= box.bottom; }")
    answer = "Shown notes.txt at line 60 in the person's preview."
    page.locator("article.item.assistant").filter(has_text=answer).wait_for()  # the model read the page's result
    cid = page.evaluate("location.hash").rsplit("/", 1)[-1]
    with api(daemon) as c:
        conv = c.get(f"/api/conversations/{cid}").json()
    assert [t["name"] for t in conv["tools"]] == ["show_file"] and conv["tool_clients"] == 1
    card = next(i for i in conv["items"] if i["kind"] == "tool")
    assert card["state"] == "done" and card["result"] == answer
    dialog.get_by_role("button", name="Close preview").click()
    assert not dialog.is_visible()
    # Away from it the page no longer answers for it; a reload of it does again (the
    # daemon kept the tool).
    page.goto(f"{daemon.url}/#/")
    wait_clients(daemon, cid, 0)
    page.goto(f"{daemon.url}/#/c/{cid}")
    page.reload()
    page.locator("article.item.assistant").filter(has_text=answer).wait_for()
    wait_clients(daemon, cid, 1)


def test_a_card_says_when_no_app_is_there_to_answer(daemon, browser, page):
    with api(daemon) as c:
        cid = c.post("/api/conversations", json={"tools": [{"name": "highlight", "description": "Light a line.",
                                                            "parameters": LINE}]}).json()["id"]
        c.post(f"/api/conversations/{cid}/messages", json={"text": "light it"}).raise_for_status()
    page.goto(f"{daemon.url}/#/c/{cid}")
    card = page.locator("article.card.tool.state-waiting_client")
    card.get_by_text("No app is connected to answer this call").wait_for()
    assert card.locator(".tool-state").inner_text() == "waiting for the app"
    # An app connects (its event stream names the conversation; here another browser's
    # page): the card says the app works on it.
    app_ctx = browser.new_context()
    try:
        app = app_ctx.new_page()
        app.goto(f"{daemon.url}/health")
        app.evaluate("""cid => { fetch(`/api/events?tools=${cid}`).then((r) => {
            const reader = r.body.getReader();
            const pump = () => reader.read().then((x) => { if (!x.done) pump(); }, () => {});
            pump(); }, () => {}); }""", cid)
        card.get_by_text("The app that gave this tool is carrying the call out.").wait_for()
        with api(daemon) as c:
            conv = c.get(f"/api/conversations/{cid}").json()
            assert conv["tool_clients"] == 1
            waiting = next(i for i in conv["items"] if i.get("state") == "waiting_client")
            r = c.post(f"/api/conversations/{cid}/tool_result", json={"item": waiting["id"], "result": "line 2 lit"})
            assert r.status_code == 200
        page.locator("article.item.assistant").filter(has_text="line 2 lit").wait_for()
    finally:
        app_ctx.close()
