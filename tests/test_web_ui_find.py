"""The web UI's search inside conversations (bmoe_daemon/web/found.js) in headless Chromium
against the real daemon: a word of a message deep in a long conversation is found with
its snippet, and the match opens the conversation scrolled to that message. Desktop and
phone, light and dark; no console error and no request off the daemon."""

from __future__ import annotations

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
def home_page(browser, daemon, viewport=DESKTOP, scheme="light"):
    """The UI's home page in a fresh context, live; its conduct checked at the end."""
    ctx = browser.new_context(viewport=viewport, color_scheme=scheme)
    try:
        page = ctx.new_page()
        page.set_default_timeout(WAIT_MS)
        watch = PageWatch(page, {daemon.netloc})
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
