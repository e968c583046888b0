"""One vocabulary of states in the web UI (issue 31), in Chromium: a call the person
stopped reads "stopped", one the person denied "denied" in the person's words; a run
the person stopped says so in one line beside Resume (desktop and phone), the header
and the list say "stopped", and an open goal does not read "working on it" once the
run ended."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import httpx

from actors import notices
from tests.browser import DESKTOP, PHONE, PageWatch, chromium, require_browser, running_daemon, write_script

SCRIPT = {
    "rounds": [
        {"when": "note the first", "tool_calls": [{"name": "note", "arguments": {"path": "a.txt", "text": "one"}}]},
        {"when": "note the second", "tool_calls": [{"name": "note", "arguments": {"path": "b.txt", "text": "two"}}]},
        {"when": "note the second", "text": "Left it."},
        {"when": "count the sheep", "hang": True, "delay": 0.01},
    ],
}


def wait_until(pred, timeout: float = 20.0, what: str = "the condition") -> None:
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def visible_text(page) -> str:
    return page.locator("body").inner_text()


def test_stopped_denied_and_the_run_end_in_one_vocabulary(tmp_path):
    require_browser()
    folder = tmp_path / "proj"
    folder.mkdir()
    script = write_script(tmp_path / "script.json", SCRIPT)
    with running_daemon(tmp_path / "data", "--scripted", str(script)) as d, \
            httpx.Client(base_url=d.url, timeout=30) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        stopped = c.post("/api/conversations", json={"workspace": ws["id"], "mode": "ask"}).json()["id"]
        denied = c.post("/api/conversations", json={"workspace": ws["id"], "mode": "ask"}).json()["id"]
        sheep = c.post("/api/conversations", json={"workspace": ws["id"], "mode": "ask"}).json()["id"]
        with chromium() as browser:
            page = browser.new_context(viewport=DESKTOP).new_page()
            watch = PageWatch(page, {urlsplit(d.url).netloc})

            # A card waiting for approval when the person stops the run.
            page.goto(f"{d.url}/#/c/{stopped}")
            page.get_by_role("textbox", name="Message").wait_for()
            assert c.post(f"/api/conversations/{stopped}/messages", json={"text": "note the first"}).status_code == 202
            card = page.get_by_role("article", name="Tool: Write a.txt")
            card.get_by_role("button", name="Approve").wait_for()
            page.get_by_role("button", name="Stop").click()
            badge = card.locator(".tool-state")
            wait_until(lambda: badge.inner_text() == "stopped", what="the card to read stopped")
            assert card.get_attribute("data-state") == "denied" and card.get_attribute("data-ended-by") == "stop"
            end = page.locator(".run-end")
            end.filter(has_text=notices.STOPPED).wait_for()
            # Said once: the stop's notice is the end line, with Resume in it, and no
            # line tells the person to send a message beside it.
            assert end.get_by_role("button", name="Resume").is_visible()
            assert page.locator(".item.notice").filter(has_text="stopped the run").is_hidden()
            assert "Send another message" not in visible_text(page)
            page.get_by_role("status", name="Conversation state").filter(has_text="stopped").wait_for()
            page.locator(f'.conv-link[href="#/c/{stopped}"]').filter(has_text="stopped").wait_for()
            saved = c.get(f"/api/conversations/{stopped}").json()
            tool = next(i for i in saved["items"] if i["kind"] == "tool")
            assert (tool["state"], tool["ended_by"]) == ("denied", "stop")
            assert tool["result"] == notices.DENIED_WAITING_STOPPED  # the model's words kept for it

            # On a phone, the end line and its Resume fit the screen in one block.
            phone = browser.new_context(viewport=PHONE).new_page()
            phone_watch = PageWatch(phone, {urlsplit(d.url).netloc})
            phone.goto(f"{d.url}/#/c/{stopped}")
            line = phone.locator(".run-end")
            line.filter(has_text=notices.STOPPED).wait_for()
            box, button = line.bounding_box(), line.get_by_role("button", name="Resume").bounding_box()
            assert box is not None and button is not None
            assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
            assert button["x"] + button["width"] <= PHONE["width"]
            phone_watch.check()

            # The person's no: "denied", in their words, not the model's.
            page.goto(f"{d.url}/#/c/{denied}")
            page.get_by_role("textbox", name="Message").wait_for()
            assert c.post(f"/api/conversations/{denied}/messages", json={"text": "note the second"}).status_code == 202
            card = page.get_by_role("article", name="Tool: Write b.txt")
            card.get_by_role("button", name="Deny").click()
            page.get_by_role("article", name="Answer").filter(has_text="Left it.").wait_for()
            assert card.locator(".tool-state").inner_text() == "denied"
            assert card.get_attribute("data-ended-by") == "person"
            card.locator("details.result summary").click()
            why = card.locator("details.result pre").inner_text()
            assert why == "You denied this call; it was not run."
            assert "The person" not in visible_text(page) and "Ask them" not in visible_text(page)

            # An open goal, and the run stopped: the goal does not say it is being worked on.
            page.goto(f"{d.url}/#/c/{sheep}")
            page.get_by_role("textbox", name="Message").wait_for()
            assert c.post(f"/api/conversations/{sheep}/messages",
                          json={"text": "count the sheep", "goal": "every sheep counted"}).status_code == 202
            goal = page.get_by_role("group", name="The conversation's goal")
            goal.get_by_text("working on it").wait_for()
            page.get_by_role("button", name="Stop").click()
            goal.get_by_text("not reached yet, stopped").wait_for()
            assert goal.get_by_text("working on it").count() == 0
            watch.check()


def test_a_for_model_notice_is_shown_in_the_persons_words(tmp_path):
    """A notice the model reads (a goal's reminder, which names update_goal and its
    blocked_reason) is shown to the person in their own words; the run that ends stuck
    with no call made is not said to repeat one."""
    require_browser()
    script = write_script(tmp_path / "script.json", {"rounds": [
        {"when": "keep the goal", "repeat": 5, "text": "I am on it."},
    ]})
    with running_daemon(tmp_path / "data", "--scripted", str(script)) as d, \
            httpx.Client(base_url=d.url, timeout=30) as c:
        folder = tmp_path / "proj"
        folder.mkdir()
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        cid = c.post("/api/conversations", json={"workspace": ws["id"]}).json()["id"]
        assert c.post(f"/api/conversations/{cid}/messages",
                      json={"text": "keep the goal", "goal": "the goal kept"}).status_code == 202
        wait_until(lambda: c.get(f"/api/conversations/{cid}").json()["state"] in ("idle", "error"),
                   what="the run's end")
        conv = c.get(f"/api/conversations/{cid}").json()
        assert conv["end_reason"] == "stuck"  # it answered without reaching the goal, too often
        items = conv["items"]
        for_model = [i for i in items if i["kind"] == "notice" and i.get("for_model")]
        assert for_model, [(i["kind"], i.get("text")) for i in items]
        assert all("update_goal" in i["text"] and i["person_text"] == notices.GOAL_NUDGED for i in for_model)
        with chromium() as browser:
            for viewport in (DESKTOP, PHONE):
                page = browser.new_context(viewport=viewport).new_page()
                watch = PageWatch(page, {urlsplit(d.url).netloc})
                page.goto(f"{d.url}/#/c/{cid}")
                page.get_by_role("note").filter(has_text=notices.GOAL_NUDGED).first.wait_for()
                shown = visible_text(page)
                assert "update_goal" not in shown and "blocked_reason" not in shown and "Go on working" not in shown
                # Stuck without a call made: the end line says how (the goal's notice), and
                # never that the agent repeated a call.
                page.locator(".run-end").filter(has_text="without reaching its goal").wait_for()
                assert "same call" not in shown
                watch.check()


def test_right_after_send_the_conversation_says_what_it_waits_for(tmp_path):
    """Before the answer's first word the conversation says what the run waits for: the
    model reading it, or the turn line behind another conversation, named."""
    require_browser()
    script = write_script(tmp_path / "script.json", {"rounds": [
        {"when": "hold the line", "hang": True, "delay": 0.01},
        {"when": "after you", "delay": 0.05, "text": "My turn came."},
    ]})
    with running_daemon(tmp_path / "data", "--scripted", str(script)) as d, \
            httpx.Client(base_url=d.url, timeout=30) as c:
        first = c.post("/api/conversations", json={"title": "The long one"}).json()["id"]
        second = c.post("/api/conversations", json={"title": "The short one"}).json()["id"]
        with chromium() as browser:
            page = browser.new_context(viewport=DESKTOP).new_page()
            watch = PageWatch(page, {urlsplit(d.url).netloc})
            page.goto(f"{d.url}/#/c/{second}")
            page.get_by_role("textbox", name="Message").wait_for()
            page.locator(f'.conv-link[href="#/c/{first}"]').wait_for()  # the list knows its title
            assert c.post(f"/api/conversations/{first}/messages", json={"text": "hold the line"}).status_code == 202
            wait_until(lambda: c.get(f"/api/conversations/{first}").json()["state"] == "running", what="the first run")
            # Every line the page says the answer waits on, in order, as it shows them.
            page.evaluate("""() => {
              window.said = [];
              new MutationObserver(() => {
                for (const el of document.querySelectorAll(".pending-answer-slot .reading-prompt")) {
                  if (window.said[window.said.length - 1] !== el.textContent) window.said.push(el.textContent);
                }
              }).observe(document.body, { childList: true, subtree: true, characterData: true });
            }""")
            box = page.get_by_label("Message", exact=True)
            box.fill("after you")
            box.press("Enter")
            waiting = "Waiting for the model: it is answering “The long one” first."
            queued = page.get_by_role("status").filter(has_text=waiting)
            queued.wait_for()
            assert c.post(f"/api/conversations/{first}/stop").json()["stopped"] is True
            page.get_by_role("article", name="Answer").filter(has_text="My turn came.").wait_for()
            assert queued.count() == 0
            # Said from the moment the message was on its way: first the turn line, then,
            # its turn come, the model reading the conversation, before the first word.
            said = page.evaluate("window.said")
            assert said[:1] in (["Reading the conversation…"], [waiting]), said
            assert waiting in said and said[-1] == "Reading the conversation…", said
            watch.check()
