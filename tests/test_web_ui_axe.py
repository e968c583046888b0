"""Every screen of the web UI checked with axe-core (tests/vendor/axe-core/): no violation
whose impact is serious or critical, in light and dark, on a desktop and on a phone; and
on a phone, a back control on every screen but the list and a conversation header of at
most a fifth of the screen.

One daemon with a scripted model and one browser for the whole file; each viewport and
colour scheme is one page that walks the screens by their routes (app.js route()) and
runs axe on each. axe is evaluated in the page through Playwright (the DevTools
protocol), which the page's Content-Security-Policy does not govern: the UI is checked
under the policy it ships with, and axe is never served by the daemon.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.browser import (
    CUT_CHOICES,
    DESKTOP,
    HEAD_CONTROLS,
    PHONE,
    PageWatch,
    chromium,
    require_browser,
    screenshot,
    scripted_daemon,
)

AXE_DIR = Path(__file__).resolve().parent / "vendor" / "axe-core"
AXE = AXE_DIR / "axe.min.js"
AXE_VERSION = "4.14.1"
IMPACTS = ("serious", "critical")
WAIT_MS = 20_000

# Long lines, so code, diffs and snippets scroll sideways on a phone as they do for real.
LONG = "water(" + ", ".join(f"bed_{n}" for n in range(30)) + ")"
ANSWER = f"""## Garden report

| Bed | Plants |
|:----|-------:|
| North | 12 |

- [x] weed the beds
- [ ] water the south bed

```python
def water(bed):
    # one full can
    return f"watered {{bed}}"

{LONG}
```

See [the notes](notes.md) and <https://example.com/beds>, `raw_name` too."""

PLAN = "## Tidy the garden\n\n1. Rake the **leaves**\n2. Trim the hedge\n\n```sh\nrake --all\n```\n"

SCRIPT = {
    "token_delay": 0,
    "context_chars": 32_000,
    "rounds": [
        {"when": "report on the garden", "reasoning": "Write the notes, then report.", "tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes.md", "content": f"# Notes\n\n- north\n- {LONG}\n"}}]},
        {"when": "report on the garden", "text": ANSWER},
        {"when": "note the shed", "tool_calls": [{"name": "note", "arguments": {"path": "shed.txt",
                                                                              "text": "paint it"}}]},
        {"when": "note the shed", "text": "Noted."},
        {"when": "plan the chores", "tool_calls": [{"name": "todo_write", "arguments": {"todos": [
            {"content": "Wash the clothes", "status": "completed"},
            {"content": "Dry the clothes", "status": "in_progress"},
            {"content": "Fold the clothes", "status": "pending"}]}}]},
        {"when": "plan the chores", "tool_calls": [{"name": "ask_user_question", "arguments": {
            "question": "Which colour for the walls?", "options": ["Red", "Blue", "Green"]}}]},
        {"when": "count the stars", "hang": True, "delay": 0.01},  # until it is stopped
        {"when": "tidy the garden", "tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        # A general helper whose change waits on an approval inside its card.
        {"when": "label the gnomes", "tool_calls": [{"name": "task", "arguments": {
            "description": "Write the labels", "prompt": "Write a label file for each gnome",
            "subagent_type": "general"}}]},
        {"when": "Write a label file", "tool_calls": [{"name": "note", "arguments": {"path": "labels.txt",
                                                                                   "text": "Alfred, Bertha"}}]},
    ],
}

# A run of axe over the whole document, its violations only, each with the nodes of a
# serious or critical impact. The preview's frame is left out: it holds the person's own
# file, and its sandbox lets no script in.
RUN_AXE = """async () => {
  const r = await axe.run(document, { resultTypes: ["violations"], iframes: false });
  return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.filter((n) => ["serious", "critical"].includes(n.impact))
      .map((n) => ({ target: n.target.join(" "), summary: n.failureSummary })) }));
}"""
CLOSE_DIALOGS = "() => { for (const d of document.querySelectorAll('dialog[open]')) d.close(); }"
OPEN_FOLDS = "() => { for (const d of document.querySelectorAll('#main details')) d.open = true; }"


def wait_states(c: httpx.Client, want: dict[str, str]) -> None:
    deadline = time.monotonic() + 20
    while {cid: c.get(f"/api/conversations/{cid}").json()["state"] for cid in want} != want:
        assert time.monotonic() < deadline, f"the scripted runs did not settle as {want}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    """A daemon with one of each: a conversation answered, one waiting on an approval, one
    on a question with its todo list, one stopped, one on a plan, one on a helper's
    approval; a workspace with a rule, a task, a
    provider, and a models folder with a file that cannot be loaded."""
    require_browser()
    root = tmp_path_factory.mktemp("axe")
    (root / "models").mkdir()
    (root / "models" / "not-a-model.gguf").write_text("hello")
    garden = root / "garden"
    garden.mkdir()
    with scripted_daemon(root, SCRIPT, "--models-dir", str(root / "models")) as d:
        with httpx.Client(base_url=d.url, timeout=30) as c:
            ws = c.post("/api/workspaces", json={"path": str(garden)}).json()["id"]
            c.post(f"/api/workspaces/{ws}/rules", json={"kind": "command", "text": "npm test"})
            ids = {}
            for name, mode, title, text in (("answered", "full", "Garden report", "report on the garden"),
                                            ("approval", "ask", "Shed notes", "note the shed"),
                                            ("question", "ask", "Chores", "plan the chores"),
                                            ("stopped", "ask", "Stars", "count the stars"),
                                            ("plan", "ask", "Garden plan", "tidy the garden"),
                                            ("helper", "ask", "Gnome labels", "label the gnomes")):
                made = c.post("/api/conversations", json={"workspace": ws, "mode": mode, "title": title})
                ids[name] = made.json()["id"]
                if name == "plan":  # the plan file the daemon shows (actors/runs/agent/run_tools/plans.py)
                    c.patch(f"/api/conversations/{ids[name]}", json={"plan_mode": True})
                    plans = d.data_dir / "agent" / "plans"
                    plans.mkdir(parents=True, exist_ok=True)
                    (plans / f"{ids[name]}.md").write_text(PLAN)
                c.post(f"/api/conversations/{ids[name]}/messages", json={"text": text})
            c.post("/api/tasks", json={"title": "Morning summary", "prompt": "Summarise yesterday", "workspace": ws,
                                       "schedule": {"kind": "daily", "at": "07:30"}})
            c.post("/api/providers", json={"name": "Example AI", "base_url": "https://api.example.invalid/v1",
                                           "models": ["small-1"], "api_key": "sk-never-shown"})
            wait_states(c, {ids["stopped"]: "running"})
            c.post(f"/api/conversations/{ids['stopped']}/stop")
            wait_states(c, {ids["answered"]: "idle", ids["approval"]: "waiting", ids["question"]: "waiting",
                            ids["stopped"]: "idle", ids["plan"]: "waiting", ids["helper"]: "waiting"})
        # The person's own edit to the file the answered run wrote: its undo is refused,
        # naming it (the Changes screens), and nothing is undone however often it is asked.
        (garden / "notes.md").write_text("# Notes\n\nmy own\n")
        d.ids = ids
        yield d


@pytest.fixture(scope="module")
def browser(daemon):
    with chromium() as b:
        yield b


def answer(p: Any) -> Any:
    return p.get_by_role("article", name="Answer").locator("pre.code")


def changed_run(p: Any) -> Any:
    return p.locator("li.run-changes").filter(has_text="report on the garden")


def open_diffs(p: Any) -> None:
    p.evaluate(OPEN_FOLDS)
    changed_run(p).locator("pre.diff").first.wait_for()


def undo_refused(p: Any) -> None:
    """Undo this run, files only: refused for the file the person changed since."""
    run = changed_run(p)
    if run.get_by_role("button", name="Files only").count() == 0:
        run.get_by_role("button", name="Undo this run…").click()
    run.get_by_role("button", name="Files only").click()
    run.get_by_role("button", name="Undo anyway, files only").wait_for()


# (screen, route, what shows once it is drawn, what is done then: a form or a fold opened)
Screen = tuple[str, str, Callable[[Any], Any], Callable[[Any], Any] | None]
SCREENS: list[Screen] = [
    ("home", "#/", lambda p: p.locator(".conv-list").get_by_role("link", name=re.compile("^Garden report")), None),
    ("searching inside conversations", "#/",
     lambda p: p.locator(".conv-list").get_by_role("link", name=re.compile("^Garden report")),
     lambda p: p.get_by_role("searchbox", name="Search conversations").fill("garden")
     or p.get_by_role("region", name="Found in conversations").get_by_role("link").first.wait_for()),
    ("new conversation", "#/new", lambda p: p.get_by_role("button", name="Create conversation"), None),
    ("conversation with an answer", "#/c/{answered}", answer, None),
    ("its folds open", "#/c/{answered}", answer, lambda p: p.evaluate(OPEN_FOLDS)),
    ("a message edited", "#/c/{answered}", answer,
     lambda p: p.get_by_role("button", name="Edit this message and send it again").click()),
    ("renaming", "#/c/{answered}", answer, lambda p: p.get_by_role("button", name="Rename").click()),
    ("a file's preview", "#/c/{answered}", answer, lambda p: p.get_by_role("button", name="Preview notes.md").click()),
    ("a run's changes with their diffs", "#/c/{answered}/changes", changed_run, open_diffs),
    ("undo's two choices", "#/c/{answered}/changes", changed_run,
     lambda p: changed_run(p).get_by_role("button", name="Undo this run…").click()),
    ("an undo refused for a file changed since", "#/c/{answered}/changes", changed_run, undo_refused),
    ("waiting for an approval", "#/c/{approval}",
     lambda p: p.locator(".card.tool").get_by_role("button", name="Approve"), None),
    ("a question and the todo list", "#/c/{question}", lambda p: p.get_by_role("button", name="Blue"), None),
    ("a stopped run", "#/c/{stopped}", lambda p: p.get_by_role("button", name="Resume"), None),
    ("a plan waiting", "#/c/{plan}", lambda p: p.get_by_role("button", name="Approve plan"), None),
    ("a helper's approval", "#/c/{helper}",
     lambda p: p.get_by_role("article", name="Tool: Write labels.txt").get_by_role("button", name="Approve"), None),
    ("workspaces", "#/workspaces", lambda p: p.get_by_role("heading", name="garden"),
     lambda p: p.get_by_text("Add a rule by hand").click()),
    ("removing a workspace", "#/workspaces", lambda p: p.get_by_role("heading", name="garden"),
     lambda p: p.get_by_role("button", name="Remove garden").click()
     or p.get_by_role("button", name="Keep it").wait_for()),
    ("the header's menu", "#/c/{approval}", lambda p: p.locator(".card.tool").get_by_role("button", name="Approve"),
     lambda p: p.get_by_role("button", name="Workspace, mode, model").click()
     if p.get_by_role("button", name="Workspace, mode, model").is_visible() else None),
    ("skills", "#/skills", lambda p: p.get_by_role("switch", name="Use review-change"), None),
    ("skill form", "#/skills", lambda p: p.get_by_role("switch", name="Use review-change"),
     lambda p: p.get_by_role("button", name="New skill").click()),
    ("tasks", "#/tasks", lambda p: p.get_by_role("listitem", name="Morning summary"),
     lambda p: p.locator("details.task-runs summary").click()),
    ("task form", "#/tasks", lambda p: p.get_by_role("listitem", name="Morning summary"),
     lambda p: p.get_by_role("button", name="New task").click()),
    ("task form, every few minutes", "#/tasks", lambda p: p.get_by_role("listitem", name="Morning summary"),
     lambda p: p.get_by_role("button", name="New task").click()
     or p.get_by_role("form", name="New task").get_by_label("Schedule").select_option("interval")),
    ("providers", "#/providers", lambda p: p.get_by_role("listitem", name="Example AI"),
     lambda p: p.get_by_role("button", name="Edit Example AI").click()),
    ("models", "#/models", lambda p: p.get_by_role("listitem", name="not-a-model"), None),
    ("connect", "#/connect", lambda p: p.locator("pre.snippet"), None),
    ("agent", "#/agent", lambda p: p.get_by_role("heading", name="MCP servers", exact=True), None),
    ("MCP server form", "#/agent", lambda p: p.get_by_role("heading", name="MCP servers", exact=True),
     lambda p: p.get_by_role("button", name="Add a server").click()
     or p.get_by_role("form", name="Add a server").get_by_role("button", name="Add a variable").click()),
    ("the key dialog", "#/", lambda p: p.locator(".conv-list").get_by_role("link", name=re.compile("^Garden report")),
     lambda p: p.evaluate("() => document.getElementById('key-dialog').showModal()")),
    ("a skill read", "#/skills", lambda p: p.get_by_role("switch", name="Use review-change"),
     lambda p: p.get_by_role("button", name="Read Review a change").click()
     or p.get_by_role("region", name="Skill review-change").wait_for()),
    # Last: the `@` typed stays as the conversation's draft.
    ("files to mention", "#/c/{answered}", answer,
     lambda p: p.get_by_role("textbox", name="Message").press_sequentially("@")
     or p.get_by_role("listbox", name="Files to mention").get_by_role("option").first.wait_for()),
]


def violations_on(page: Any, daemon: Any, screen: Screen) -> list[str]:
    """Each serious or critical violation axe finds on `screen`, said with its nodes."""
    name, route, ready, then = screen
    page.evaluate(CLOSE_DIALOGS)
    page.evaluate("(r) => { location.hash = r; }", route.format(**daemon.ids))
    ready(page).first.wait_for()
    if then is not None:
        then(page)
    return [f"{name}: {v['id']} ({v['impact']}): {v['help']}\n" + "\n".join(
        f"    {n['target']}: {n['summary']}" for n in v["nodes"])
        for v in page.evaluate(RUN_AXE) if v["impact"] in IMPACTS]


# The conversation header's share of a phone screen, at most (issue 18).
HEAD_SHARE = 0.2


# A waiting approval and the message box: their share of a phone screen, at most (issue 31).
WAITING_SHARE = 1 / 3


def phone_faults(page: Any, screen: Screen) -> list[str]:
    """What a phone's screen lacks: every screen but the list has a back control one can
    see and tap, and a conversation's header takes at most a fifth of the height, with
    every control it shows whole on the screen and no strip scrolled sideways; the home
    page's choices are read whole; a pinned approval and the message box take at most a
    third of the screen."""
    name, route, _, _ = screen
    if route == "#/":
        cut = page.evaluate(CUT_CHOICES)
        return [f"{name}: the home page's choice {c!r} is cut" for c in cut]
    out = []
    back = page.locator("#main a.back").first
    if not (back.count() and back.is_visible()):
        out.append(f"{name}: no back control to the conversations")
    head = page.locator("header.conv-head")
    if route.startswith("#/c/") and head.count():
        share = head.bounding_box()["height"] / page.viewport_size["height"]
        if share > HEAD_SHARE and "menu" not in name:  # the menu opened takes room while open
            out.append(f"{name}: the header takes {share:.0%} of the screen (at most {HEAD_SHARE:.0%})")
        seen = page.evaluate(HEAD_CONTROLS)
        out += [f"{name}: the header's {n!r} is not whole on the screen" for n, whole in seen["out"] if not whole]
        if seen["scrolls"]:
            out.append(f"{name}: a strip of the header scrolls sideways")
    pinned = page.locator("section.pinned-approval:not([hidden])")
    if route.startswith("#/c/") and pinned.count():
        taken = pinned.bounding_box()["height"] + page.locator("form.composer").bounding_box()["height"]
        if taken > WAITING_SHARE * page.viewport_size["height"]:
            shot = screenshot(page, "phone-axe-" + re.sub(r"\W+", "-", name))
            out.append(f"{name}: the waiting approval and the message box take {taken:.0f} px "
                       f"(at most a third; {shot})")
    return out


@pytest.mark.parametrize(("viewport", "scheme"), [(DESKTOP, "light"), (DESKTOP, "dark"), (PHONE, "light"),
                                                 (PHONE, "dark")],
                         ids=["desktop-light", "desktop-dark", "phone-light", "phone-dark"])
def test_no_serious_or_critical_violation_on_any_screen(browser, daemon, viewport, scheme):
    ctx = browser.new_context(viewport=viewport, color_scheme=scheme, reduced_motion="reduce")
    try:
        page = ctx.new_page()
        page.set_default_timeout(WAIT_MS)
        # the undo refused for a file changed since is the daemon's 409, which the browser logs
        watch = PageWatch(page, {urlsplit(daemon.url).netloc}, ("status of 409",))
        page.goto(daemon.url + "/")
        page.get_by_role("status").filter(has_text="Live").wait_for()
        page.evaluate(AXE.read_text())  # once: the routes below change the hash, never load the page
        found = []
        for screen in SCREENS:
            found += violations_on(page, daemon, screen)
            if viewport == PHONE:  # the phone walk: every screen, as a phone shows it
                found += phone_faults(page, screen)
        assert found == [], "\n".join(found)
        watch.check()
    finally:
        ctx.close()


def test_axe_is_the_file_its_notes_name():
    """Without a browser: the notes beside axe name its version and each file's SHA-256."""
    notes = (AXE_DIR / "README.md").read_text()
    named = {path: digest for digest, path in re.findall(r"^([0-9a-f]{64})  (\S+)$", notes, re.M)}
    here = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in AXE_DIR.iterdir() if p.name != "README.md"}
    assert here == named
    assert f"| axe-core | {AXE_VERSION} |" in notes
    assert AXE.read_text()[:40].startswith(f"/*! axe v{AXE_VERSION}\n")
