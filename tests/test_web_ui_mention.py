"""@-mentions in the message box (issue 31), in Chromium against the real daemon: `@`
and part of a path list the workspace's files, the keyboard moves, picks (Enter, Tab)
and closes (Escape), a click picks too, and the message sent holds the
workspace-relative path; in a conversation and on the home page, on a desktop and a
phone, with no console error and no request off the daemon."""

from __future__ import annotations

import re

import httpx

from tests.browser import DESKTOP, PHONE, PageWatch, chromium, require_browser, running_daemon, screenshot, write_script
from tests.test_web_ui_usage import wait_until


def make_workspace(folder):
    (folder / "src" / "garden").mkdir(parents=True)
    (folder / "src" / "garden" / "water.py").write_text("x\n")
    (folder / "src" / "garden" / "weeds.py").write_text("x\n")
    (folder / "notes with space.md").write_text("x\n")
    (folder / "README.md").write_text("x\n")


def options(page):
    return page.get_by_role("listbox", name="Files to mention").get_by_role("option")


def walk_conversation(page, d, c, cid, name):
    watch = PageWatch(page, {d.netloc})
    page.goto(f"{d.url}/#/c/{cid}")
    box = page.get_by_role("textbox", name="Message")
    box.wait_for()
    box.press_sequentially("Look at @garden/w")
    wait_until(lambda: options(page).all_inner_texts() == ["water.py\nsrc/garden/", "weeds.py\nsrc/garden/"],
               what="the files that match")
    assert box.get_attribute("aria-controls") == page.get_by_role("listbox").get_attribute("id")
    first = options(page).first
    assert first.get_attribute("aria-selected") == "true"
    assert box.get_attribute("aria-activedescendant") == first.get_attribute("id")
    page.get_by_role("status").filter(has_text="2 files to mention").wait_for()
    screenshot(page, f"{name}-mention")
    box.press("ArrowDown")
    assert options(page).nth(1).get_attribute("aria-selected") == "true"
    box.press("Enter")  # picks; does not send
    assert box.input_value() == "Look at @src/garden/weeds.py "
    assert page.get_by_role("listbox", name="Files to mention").is_hidden()
    # Escape closes the list and leaves the text; Tab picks, a path with a space quoted.
    box.fill("")
    box.press_sequentially("and @notes")
    wait_until(lambda: options(page).count() == 1, what="the one note")
    box.press("Tab")
    assert box.input_value() == 'and @"notes with space.md" '
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Message"
    # A click picks too; Escape closes without picking.
    box.press_sequentially("@READ")
    wait_until(lambda: options(page).count() == 1, what="the readme")
    box.press("Escape")
    assert page.get_by_role("listbox", name="Files to mention").is_hidden()
    assert box.input_value().endswith("@READ")
    box.press_sequentially("M")
    wait_until(lambda: options(page).count() == 1, what="the readme again")
    options(page).first.click()
    text = 'and @"notes with space.md" @README.md '
    assert box.input_value() == text
    box.press("Enter")  # now the list is closed: it sends
    wait_until(lambda: [i["text"] for i in c.get(f"/api/conversations/{cid}").json()["items"]
                        if i["kind"] == "user"] == [text.strip()], what="the message with its mentions")
    watch.check()


def test_at_mentions_complete_the_workspaces_files(tmp_path):
    require_browser()
    folder = tmp_path / "garden"
    make_workspace(folder)
    script = write_script(tmp_path / "script.json", {"rounds": [], "default": {"text": "Seen."}})
    with running_daemon(tmp_path / "data", "--scripted", str(script)) as d, chromium() as browser, \
            httpx.Client(base_url=d.url, timeout=30) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            cid = c.post("/api/conversations", json={"workspace": ws["id"], "mode": "ask",
                                                     "title": f"Mentions {name}"}).json()["id"]
            page = browser.new_context(viewport=viewport).new_page()
            walk_conversation(page, d, c, cid, name)
            page.context.close()
        # The home page's box mentions the workspace picked there.
        page = browser.new_context(viewport=DESKTOP).new_page()
        watch = PageWatch(page, {d.netloc})
        page.goto(d.url)
        page.get_by_label("Workspace", exact=True).select_option(ws["id"])
        box = page.get_by_role("textbox", name="Message")
        box.press_sequentially("Read @wat")
        wait_until(lambda: options(page).count() == 1, what="the home page's list")
        box.press("Enter")
        assert box.input_value() == "Read @src/garden/water.py "
        box.press("Enter")
        page.wait_for_url(re.compile(r"#/c/"))
        cid = page.url.rsplit("/", 1)[1]
        wait_until(lambda: [i["text"] for i in c.get(f"/api/conversations/{cid}").json()["items"]
                            if i["kind"] == "user"] == ["Read @src/garden/water.py"], what="the home page's message")
        watch.check()
