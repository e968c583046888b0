"""Issue 31, what a person looks for in the web UI: a folder added and removed on the
workspaces page, an interval task that starts from now with its limits said before
saving, the keyboard where the work goes on (the message box after sending from the
home page, the pinned approval when a call comes to wait), and a phone's screen with
every control in reach. Headless Chromium against the real daemon running a scripted
model (tests/test_web_ui.py's daemon, pages and watch: no console error, no request
off the daemon), on a desktop and a phone, light and dark.
"""

from __future__ import annotations

import re
import time

import pytest

from tests import test_web_ui
from tests.browser import (
    CUT_CHOICES,
    DESKTOP,
    HEAD_CONTROLS,
    PHONE,
    require_browser,
    screenshot,
    scripted_daemon,
)
from tests.test_web_ui import api, conversation, wait_until

# test_web_ui's browser and pages, over this file's daemon (its own script)
browser = test_web_ui.browser
open_page = test_web_ui.open_page

SCRIPT = {
    "token_delay": 0.002,
    "rounds": [
        {"when": "say a short word", "repeat": 50, "text": "Word."},
        *[r for tag in ("desk-light", "desk-dark", "phone-light", "phone-dark", "room-light", "room-dark") for r in (
            {"when": f"tidy the notes ({tag})", "tool_calls": [
                {"name": "write_file", "arguments": {"path": "index.md", "content": "# Notes\n\n- shelf\n"}}]},
            {"when": f"tidy the notes ({tag})", "text": "I wrote the index."})],
    ],
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    require_browser()
    with scripted_daemon(tmp_path_factory.mktemp("reach"), SCRIPT) as d:
        yield d

# The one place each item is checked on both screens and in both schemes.
LOOKS = [(DESKTOP, "light"), (DESKTOP, "dark"), (PHONE, "light"), (PHONE, "dark")]
LOOK_IDS = ["desktop-light", "desktop-dark", "phone-light", "phone-dark"]


def tag_of(viewport, scheme):
    return f"{'desk' if viewport == DESKTOP else 'phone'}-{scheme}"

# Where the keyboard is: "pinned" (the pinned approval's region), its control's
# data-focus, or the focused element's label.
FOCUSED = """() => {
  const at = document.activeElement;
  if (!at || at === document.body) return "body";
  if (at.classList.contains("pinned-approval")) return "pinned";
  if (at.closest(".pinned-approval")) return "pinned:" + at.dataset.focus;
  return at.getAttribute("aria-label") || at.tagName;
}"""


def no_sideways_scroll(page):
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def options(page):
    return page.locator("#folder-choices option").evaluate_all("os => os.map((o) => o.value)")


def test_the_home_pages_add_a_folder_leads_to_the_field(open_page, daemon):
    """With no folder added, the home page's "Add a folder" opens the workspaces page at
    its path field (run before any folder is added: first in this file's order)."""
    with api(daemon) as c:
        if c.get("/api/workspaces").json():
            pytest.skip("a folder is added already: the link is not offered")
    page = open_page()
    page.get_by_role("link", name="Add a folder").click()
    page.get_by_role("heading", name="Add a folder").wait_for()
    wait_until(lambda: page.evaluate("document.activeElement.id") == "add-folder-path", what="the field's focus")


@pytest.mark.parametrize(("viewport", "scheme"), LOOKS, ids=LOOK_IDS)
def test_a_folder_is_added_by_its_completed_path_and_removed_with_what_that_does(open_page, daemon, viewport, scheme):
    tag = tag_of(viewport, scheme)
    (daemon.home / f"projects-{tag}" / "site").mkdir(parents=True)
    (daemon.home / f"projects-{tag}" / "shop").mkdir()
    (daemon.home / f"projects-{tag}" / ".hidden").mkdir()
    # the refused folder is the daemon's 400, which the browser logs
    page = open_page(viewport=viewport, color_scheme=scheme, allowed_errors=("status of 400",))
    page.goto(page.url.split("#")[0] + "#/workspaces/add")
    path = page.get_by_role("combobox", name="Folder")
    path.wait_for()
    assert page.evaluate(FOCUSED) == "INPUT" and page.evaluate("document.activeElement.id") == "add-folder-path"
    path.press_sequentially(f"~/projects-{tag}")
    wait_until(lambda: options(page) == [f"~/projects-{tag}"], what="the folder completed")
    path.press_sequentially("/")
    wait_until(lambda: options(page) == [f"~/projects-{tag}/shop", f"~/projects-{tag}/site"],
               what="its folders, without the hidden one")
    # a path the daemon cannot read: its refusal beside the field, which keeps what was typed
    path.press_sequentially("nope")
    page.get_by_role("button", name="Add folder").click()
    refusal = page.locator("#add-folder-path-error")
    refusal.wait_for()
    assert "not a folder this daemon can read" in refusal.inner_text()
    assert path.get_attribute("aria-invalid") == "true" and "add-folder-path-error" in path.get_attribute(
        "aria-describedby")
    assert path.input_value() == f"~/projects-{tag}/nope"
    screenshot(page, f"{tag}-workspaces-refused")
    path.fill(f"~/projects-{tag}/site")
    page.get_by_role("button", name="Add folder").click()
    row = page.get_by_role("listitem", name="site")
    row.wait_for()
    assert path.get_attribute("aria-invalid") is None
    with api(daemon) as c:
        ws = next(w for w in c.get("/api/workspaces").json() if w["path"].endswith(f"projects-{tag}/site"))
        conv = c.post("/api/conversations", json={"workspace": ws["id"], "title": f"Site work {tag}"}).json()
        c.post(f"/api/conversations/{conv['id']}/messages", json={"text": "say a short word"})
        wait_until(lambda: conversation(daemon, conv["id"])["state"] == "idle", what="the answer")
    no_sideways_scroll(page)
    screenshot(page, f"{tag}-workspaces")
    row.get_by_role("button", name="Remove site").first.click()
    ask = row.get_by_role("group", name="Remove site?")
    ask.wait_for()
    said = ask.locator(".ws-remove-what").inner_text()
    assert said.startswith("Its 1 conversation stays, with its messages, but loses the folder:"), said
    assert "none of the folder's tools" in said and "stay as they are on disk" in said
    assert page.evaluate("document.activeElement.textContent") == "Keep it"
    screenshot(page, f"{tag}-workspaces-remove")
    ask.get_by_role("button", name="Remove site").click()
    row.wait_for(state="detached")
    # what was said is what happened: the conversation and its messages stay, without the folder
    kept = conversation(daemon, conv["id"])
    assert [i["text"] for i in kept["items"] if i["kind"] == "user"] == ["say a short word"]
    with api(daemon) as c:
        assert all(w["id"] != ws["id"] for w in c.get("/api/workspaces").json())
    assert (daemon.home / f"projects-{tag}" / "site").is_dir()


@pytest.mark.parametrize(("viewport", "scheme"), LOOKS, ids=LOOK_IDS)
def test_an_interval_task_starts_from_now_with_its_limits_said_before_saving(open_page, daemon, viewport, scheme):
    tag = tag_of(viewport, scheme)
    page = open_page(viewport=viewport, color_scheme=scheme, allowed_errors=("status of 400",))
    page.goto(page.url.split("#")[0] + "#/tasks")
    page.get_by_role("button", name="New task").click()
    form = page.get_by_role("form", name="New task")
    form.get_by_label("Prompt").fill("Check the news")
    form.get_by_label("Title").fill(f"News {tag}")
    first = form.locator(".first-run")
    assert first.inner_text().startswith("First run: ")  # the daily default: 09:00, today or tomorrow
    form.get_by_label("Schedule").select_option("interval")
    assert form.get_by_label("At", exact=True).is_hidden()  # an interval has no time of day of its own
    every = form.get_by_label("Every (minutes)")
    with api(daemon) as c:
        least = c.get("/api/limits").json()["every_minutes"]["min"]
    # the limit, beside the field before anything is sent (read from /api/limits)
    hint = page.locator("#" + every.get_attribute("aria-describedby")).inner_text()
    assert f"At least {least} minutes apart" in hint
    every.fill(str(least))
    assert re.match(rf"First run: in {least} minutes, today at \d\d:\d\d; then every {least} minutes\.$",
                    first.inner_text()) or "tomorrow" in first.inner_text(), first.inner_text()
    every.fill(str(least - 1))
    assert first.inner_text() == ""  # not a schedule the daemon keeps: no first run to say
    form.get_by_role("button", name="Add task").click()
    form.get_by_text(f"Runs are at least {least} minutes apart.").wait_for()  # the daemon's refusal, beside it
    every.fill(str(least))
    no_sideways_scroll(page)
    screenshot(page, f"{tag}-task-interval")
    saved_at = time.time()
    form.get_by_role("button", name="Add task").click()
    page.get_by_role("listitem", name=f"News {tag}").wait_for()
    with api(daemon) as c:
        task = next(t for t in c.get("/api/tasks").json() if t["title"] == f"News {tag}")
    assert task["schedule"]["at"] is None
    assert saved_at < task["next_run"] <= time.time() + least * 60  # within one interval of now
    with api(daemon) as c:
        c.delete(f"/api/tasks/{task['id']}")


def in_a_folder(daemon, name):
    folder = daemon.home / name
    folder.mkdir()
    (folder / "old-notes").mkdir()
    with api(daemon) as c:
        return c.post("/api/workspaces", json={"path": str(folder)}).json()


def send_from_home(page, ws_id, text):
    page.get_by_label("Workspace", exact=True).select_option(ws_id)
    page.get_by_label("Mode", exact=True).select_option("ask")
    box = page.get_by_role("textbox", name="Message")
    box.fill(text)
    page.get_by_role("button", name="Send").click()
    page.wait_for_url(re.compile(r"#/c/"))
    return page.url.rsplit("/", 1)[1]


@pytest.mark.parametrize(("viewport", "scheme"), LOOKS, ids=LOOK_IDS)
def test_after_sending_from_home_the_keyboard_is_in_the_conversations_box(open_page, daemon, viewport, scheme):
    ws = in_a_folder(daemon, f"words-{tag_of(viewport, scheme)}")
    page = open_page(viewport=viewport, color_scheme=scheme)
    send_from_home(page, ws["id"], "say a short word")
    page.get_by_role("article", name="Answer").filter(has_text="Word").first.wait_for()
    wait_until(lambda: page.evaluate(FOCUSED) == "Message", what="the keyboard in the message box")


@pytest.mark.parametrize(("viewport", "scheme"), LOOKS, ids=LOOK_IDS)
def test_a_call_that_comes_to_wait_takes_the_keyboard_and_is_announced(open_page, daemon, viewport, scheme):
    tag = tag_of(viewport, scheme)
    ws = in_a_folder(daemon, f"notes-{tag}")
    page = open_page(viewport=viewport, color_scheme=scheme)
    send_from_home(page, ws["id"], f"tidy the notes ({tag})")
    pinned = page.get_by_role("region", name=re.compile("^Waiting for your approval"))
    pinned.wait_for()
    wait_until(lambda: page.evaluate(FOCUSED) == "pinned", what="the keyboard on the pinned approval")
    live = page.locator(".conv [role=status][aria-live=polite]").filter(has_text="Waiting for your approval")
    assert live.inner_text().startswith("Waiting for your approval: Write index.md.")
    screenshot(page, f"{tag}-pinned-arrived")
    page.keyboard.press("Tab")  # on into its controls: never on Approve by itself
    assert page.evaluate(FOCUSED).startswith("pinned:")
    screenshot(page, f"{tag}-pinned-focus")


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_phone_reaches_every_header_control_sees_whole_choices_and_an_approval_leaves_room(open_page, daemon,
                                                                                          scheme):
    ws = in_a_folder(daemon, f"phone-room-{scheme}")
    page = open_page(viewport=PHONE, color_scheme=scheme)
    page.get_by_role("textbox", name="Message").wait_for()
    for ws_id in ("", ws["id"]):  # none picked, and a folder
        page.get_by_label("Workspace", exact=True).select_option(ws_id)
        page.get_by_label("Model", exact=True).select_option("local")
        assert page.evaluate(CUT_CHOICES) == []
    no_sideways_scroll(page)
    screenshot(page, f"phone-{scheme}-home-choices")
    tag = f"room-{scheme}"  # the script's approval for this page
    cid = send_from_home(page, ws["id"], f"tidy the notes ({tag})")
    pinned = page.get_by_role("region", name=re.compile("^Waiting for your approval"))
    pinned.wait_for()
    # the waiting approval and the message box: at most a third of the screen
    taken = pinned.bounding_box()["height"] + page.locator("form.composer").bounding_box()["height"]
    assert taken <= PHONE["height"] / 3, taken
    seen = page.evaluate(HEAD_CONTROLS)
    assert not seen["scrolls"] and all(whole for _, whole in seen["out"]), seen
    names = [n for n, _ in seen["out"]]
    assert "Rename" in names and "Delete" in names and "Workspace, mode, model" in names
    screenshot(page, f"phone-{scheme}-approval-room")
    menu = page.get_by_role("button", name="Workspace, mode, model")
    menu.click()
    assert menu.get_attribute("aria-expanded") == "true"
    for name in ("Workspace", "Mode", "Model"):
        assert page.locator("header.conv-head").get_by_label(name, exact=True).is_visible()
    seen = page.evaluate(HEAD_CONTROLS)
    assert not seen["scrolls"] and all(whole for _, whole in seen["out"]), seen
    assert {"Changes", "Mode", "Model"} <= {n for n, _ in seen["out"]}
    screenshot(page, f"phone-{scheme}-header-menu")
    page.locator("header.conv-head").get_by_label("Mode", exact=True).focus()
    page.keyboard.press("Escape")
    assert menu.get_attribute("aria-expanded") == "false"
    assert page.evaluate("document.activeElement.textContent") == "Workspace, mode, model"
    assert conversation(daemon, cid)["state"] == "waiting"
