"""The web UI's search inside conversations (bmoe_daemon/web/found.js) and a conversation's
export and import (exchange.js) in headless Chromium against the real daemon: a word of
a message deep in a long conversation is found with its snippet, and the match opens
the conversation scrolled to that message (desktop and phone, light and dark); both
export files are downloaded from the conversation's menu and the JSON one imported from
the home page (desktop), and from the New conversation page on a phone, whose home hides
that line. No console error and no request off the daemon."""

from __future__ import annotations

import json
from contextlib import contextmanager

import httpx
import pytest

from tests.browser import DESKTOP, PHONE, PageWatch, chromium, require_browser, running_daemon, screenshot
from tests.test_web_ui import wait_until

WAIT_MS = 20_000


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    require_browser()
    root = tmp_path_factory.mktemp("find")
    with running_daemon(root / "data", "--no-model") as d:
        yield d


@pytest.fixture(scope="module")
def browser(daemon):
    with chromium() as b:
        yield b


@contextmanager
def home_page(browser, daemon, viewport=DESKTOP, scheme="light", allowed_errors=()):
    """The UI's home page in a fresh context, live; its conduct checked at the end."""
    ctx = browser.new_context(viewport=viewport, color_scheme=scheme)
    try:
        page = ctx.new_page()
        page.set_default_timeout(WAIT_MS)
        watch = PageWatch(page, {daemon.netloc}, allowed_errors)
        page.goto(daemon.url + "/")
        page.get_by_role("status").filter(has_text="Live").wait_for()
        yield page
        watch.check()
    finally:
        ctx.close()


def seeded(c: httpx.Client, title: str, word: str, at: int, n: int = 60) -> tuple[str, str]:
    """A conversation of `n` messages and answers, `word` in the one at `at`: its id and that item's."""
    items = [{"kind": "user" if k % 2 == 0 else "assistant",
              "text": f"Line {k} of a long talk about nothing much. " * 3 + (f"Here is the {word}." if k == at else "")}
             for k in range(n)]
    conv = c.post("/api/conversations", json={"title": title, "items": items}).json()
    return conv["id"], conv["items"][at]["id"]


def wait_indexed(c: httpx.Client, word: str) -> None:
    wait_until(lambda: c.get("/api/search", params={"q": word}).json()["results"], what=f"{word} indexed")


@pytest.mark.parametrize(("viewport", "scheme"), [(DESKTOP, "light"), (PHONE, "dark")])
def test_a_word_inside_a_conversation_is_found_and_opens_there(browser, daemon, viewport, scheme) -> None:
    word = f"periwinkle{scheme}"
    with httpx.Client(base_url=daemon.url, timeout=30) as c:
        cid, iid = seeded(c, f"Long talk {scheme}", word, at=13)
        other, _ = seeded(c, f"Other talk {scheme}", "nothing", at=1, n=4)
        wait_indexed(c, word)
    with home_page(browser, daemon, viewport, scheme) as page:
        search = page.get_by_role("searchbox", name="Search conversations")
        search.fill(word[:8])  # a beginning, as typed
        found = page.get_by_role("region", name="Found in conversations")
        link = found.get_by_role("link").filter(has_text=f"Long talk {scheme}")
        link.wait_for()
        assert found.locator("mark").first.inner_text().lower().startswith(word[:8])
        assert "Here is the" in link.inner_text()
        # No title has it: the list says so, and the matches inside are shown all the same.
        page.get_by_role("status").filter(has_text=f"No conversation has “{word[:8]}” in its title.").wait_for()
        screenshot(page, f"search-inside-{scheme}")
        link.click()
        page.get_by_role("heading", name=f"Long talk {scheme}").wait_for()
        target = page.locator(f'.log [data-item="{iid}"]')
        target.wait_for()
        assert "found-item" in (target.get_attribute("class") or "")
        # Scrolled to it (the log's bottom is 46 messages further), the keyboard on it.
        wait_until(lambda: target.evaluate("""el => { const r = el.getBoundingClientRect();
            return r.top >= 0 && r.bottom <= window.innerHeight; }"""), what="the match in view")
        assert target.evaluate("el => document.activeElement === el")
        # Back to the list (on a phone the conversation took the screen): a search with
        # nothing inside says so; emptied, the section goes.
        page.evaluate("location.hash = '#/'")
        search.fill("zzqqxx ")
        section = page.locator("section.found")
        wait_until(lambda: "No message or answer has “zzqqxx”." in section.inner_text(),
                   what=f"the search with nothing inside to say so (the box: {search.input_value()!r}; "
                        f"the section: {section.evaluate('el => el.outerHTML')[:600]!r})")
        search.fill("")
        found.wait_for(state="hidden")
    with httpx.Client(base_url=daemon.url, timeout=30) as c:
        for conv in (cid, other):
            c.delete(f"/api/conversations/{conv}")


def test_a_word_in_a_tool_card_or_query_syntax_never_breaks_the_search(browser, daemon) -> None:
    with home_page(browser, daemon) as page:
        search = page.get_by_role("searchbox", name="Search conversations")
        for typed in ['"', "NEAR(", "a AND", "*"]:
            search.fill(typed)
            page.get_by_role("status").filter(has_text="No message or answer has").wait_for()


def test_export_both_files_and_import_one_from_the_home_page(browser, daemon, tmp_path) -> None:
    with httpx.Client(base_url=daemon.url, timeout=30) as c:
        cid, _ = seeded(c, "Kept talk", "heliotrope", at=3, n=8)
    # The refused import's answer is the one error the browser logs.
    with home_page(browser, daemon, allowed_errors=("status of 400",)) as page:
        page.goto(f"{daemon.url}/#/c/{cid}")
        page.get_by_role("heading", name="Kept talk").wait_for()
        export = page.get_by_role("group", name="Export")
        with page.expect_download() as got:
            export.get_by_role("button", name="JSON").click()
        saved = tmp_path / got.value.suggested_filename
        got.value.save_as(saved)
        assert saved.name == "Kept-talk.bmoe.json"
        doc = json.loads(saved.read_text())
        assert doc["format"] == "bmoe-conversation" and len(doc["items"]) == 8
        with page.expect_download() as got_md:
            export.get_by_role("button", name="Markdown").click()
        md = tmp_path / got_md.value.suggested_filename
        got_md.value.save_as(md)
        assert md.name == "Kept-talk.md" and md.read_text().startswith("# Kept talk\n") and "## You" in md.read_text()

        # Imported from the home page: a new conversation, the same messages.
        page.goto(f"{daemon.url}/#/")
        page.get_by_role("button", name="Import a conversation…").wait_for()
        page.get_by_label("A conversation file to import").set_input_files(str(saved))
        panel = page.get_by_role("group", name="Import a conversation")
        panel.get_by_text("Import “Kept talk” (8 items) as a new conversation.").wait_for()
        panel.get_by_label("Workspace for the import").select_option("")
        screenshot(page, "import-a-conversation")
        panel.get_by_role("button", name="Import").click()
        page.get_by_role("heading", name="Kept talk").wait_for()
        new = wait_until(lambda: (h := page.evaluate("location.hash")) != "#/" and h, what="the new conversation")
        assert cid not in new
        assert page.locator(".log [data-item]").count() == 8
        # A file of another version: the daemon's refusal is said beside the button, nothing made.
        page.goto(f"{daemon.url}/#/")
        bad = tmp_path / "newer.json"
        bad.write_text(json.dumps({**doc, "version": 99}))
        page.get_by_label("A conversation file to import").set_input_files(str(bad))
        panel.get_by_role("button", name="Import").click()
        panel.get_by_role("alert").filter(has_text="this daemon reads version 1").wait_for()
        panel.get_by_role("button", name="Cancel").click()
        panel.wait_for(state="hidden")
    with httpx.Client(base_url=daemon.url, timeout=30) as c:
        titles = [r["title"] for r in c.get("/api/conversations").json()]
        assert titles.count("Kept talk") == 2


def test_a_phone_imports_from_the_new_conversation_page(browser, daemon, tmp_path) -> None:
    """A phone's home hides its line of links (the home page's import among them): the
    list's "New conversation" leads to a page whose import is in reach, tapped through
    the file chooser as a person would, with no sideways scroll."""
    with httpx.Client(base_url=daemon.url, timeout=30) as c:
        cid, _ = seeded(c, "Phone talk", "marigold", at=1, n=4)
        doc = c.get(f"/api/conversations/{cid}/export", params={"format": "json"}).json()
    saved = tmp_path / "Phone-talk.bmoe.json"
    saved.write_text(json.dumps(doc))
    with home_page(browser, daemon, PHONE, "dark") as page:
        assert not page.get_by_role("button", name="Import a conversation…").is_visible()  # the home's, hidden
        page.get_by_role("link", name="New conversation").click()
        page.get_by_role("heading", name="New conversation").wait_for()
        button = page.get_by_role("button", name="Import a conversation…")
        button.scroll_into_view_if_needed()
        box = button.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], box
        with page.expect_file_chooser() as chooser:
            button.click()
        chooser.value.set_files(str(saved))
        panel = page.get_by_role("group", name="Import a conversation")
        panel.get_by_text("Import “Phone talk” (4 items) as a new conversation.").wait_for()
        assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
        screenshot(page, "import-a-conversation-phone")
        panel.get_by_role("button", name="Import").click()
        page.get_by_role("heading", name="Phone talk").wait_for()
        new = wait_until(lambda: (h := page.evaluate("location.hash")).startswith("#/c/") and h, what="the import")
        assert cid not in new
        wait_until(lambda: page.locator(".log [data-item]").count() == 4, what="the four items")
    with httpx.Client(base_url=daemon.url, timeout=30) as c:
        titles = [r["title"] for r in c.get("/api/conversations").json()]
        assert titles.count("Phone talk") == 2
