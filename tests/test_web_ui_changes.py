"""Issue 29's web UI (bmoe_daemon/web/changes.js, "Fork from here" in cards.js) in
headless Chromium against the real daemon running a scripted model in `full` mode.

A run writes one file, edits another and deletes a third with a command; the
conversation's Changes view lists them with their line counts and shows each one's
diff; "Undo this run" puts the files back (files only) or the files and the
conversation; a file the person changed since blocks the undo with its name until
"Undo anyway"; "Fork from here" opens a new conversation with the items up to that
message, the original unchanged; a scheduled task's run is undone the same way. On a
desktop and on a phone (dark), each page watched for console errors and for requests
to any host but the daemon.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import pytest

from tests.browser import (
    DESKTOP,
    PHONE,
    chromium,
    page_opener,
    require_browser,
    screenshot,
    scripted_daemon,
)

WAIT_MS = 20_000
GARDEN = "roses\ntulips\ndaisies\n"
GARDEN_AFTER = "roses\nlilies\ndaisies\nferns\n"
OLD = "last year's plan\n"
BEDS = "north bed\nsouth bed\nherb bed\n"
TAGS = ("desktop", "phone", "both", "since", "since-phone", "task", "fork", "fork-phone")


def plant(tag: str) -> list[dict]:
    """A run that adds beds.txt (3 lines), changes garden.txt (-1 +2) and deletes old.txt."""
    return [
        {"when": f"plant the beds {tag}", "tool_calls": [
            {"name": "write_file", "arguments": {"path": "beds.txt", "content": BEDS}},
            {"name": "edit_file", "arguments": {"path": "garden.txt", "edits": [
                {"old_text": "tulips\n", "new_text": "lilies\n"},
                {"old_text": "daisies\n", "new_text": "daisies\nferns\n"}]}},
            {"name": "exec_shell_command", "arguments": {"command": "rm old.txt"}}]},
        {"when": f"plant the beds {tag}", "text": "Planted: beds.txt added, garden.txt changed, old.txt gone."},
    ]


SCRIPT = {
    "token_delay": 0,
    "rounds": [r for tag in TAGS for r in plant(tag)] + [
        {"when": "water the roses", "text": "Watered the roses."},
        {"when": "and the tulips", "text": "Watered the tulips too."},
    ],
}


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    require_browser()
    with scripted_daemon(tmp_path_factory.mktemp("changes"), SCRIPT) as d:
        yield d


@pytest.fixture(scope="module")
def browser(daemon):
    with chromium() as b:
        yield b


@pytest.fixture
def open_page(browser, daemon):
    """Opens the UI at `route` in a fresh context; checks the page's conduct at the end."""
    with page_opener(browser, daemon.url, WAIT_MS) as opener:
        yield opener


def where(page) -> str:
    """The page's route (page.url can lag a hash set by the page's own script)."""
    return page.evaluate("location.hash")


def drawn(page, cid: str) -> None:
    """Waits until the page has drawn conversation `cid`: the hash changes before the
    view does (hashchange comes after), and the conversation shown before may still be
    there a moment. The list marks a conversation current once its view is drawn."""
    page.locator(f'.conv-link[href="#/c/{cid}"][aria-current="page"]').wait_for(state="attached")


def api(daemon):
    return httpx.Client(base_url=daemon.url, timeout=30)


def wait_until(pred, timeout=20.0, what="the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := pred():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def garden(tmp_path: Path) -> Path:
    folder = tmp_path / "garden"
    folder.mkdir()
    (folder / "garden.txt").write_text(GARDEN)
    (folder / "old.txt").write_text(OLD)
    return folder


def wait_idle(c: httpx.Client, cid: str) -> dict:
    def idle():
        conv = c.get(f"/api/conversations/{cid}").json()
        return conv if conv["state"] == "idle" else None
    return wait_until(idle, what="the run to end")


def planted(daemon, tmp_path: Path, tag: str, title: str = "Plant the garden") -> tuple[str, Path]:
    """A conversation in `full` mode whose one run planted the beds: its id and folder."""
    folder = garden(tmp_path)
    with api(daemon) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()["id"]
        cid = c.post("/api/conversations", json={"workspace": ws, "mode": "full", "title": title}).json()["id"]
        assert c.post(f"/api/conversations/{cid}/messages", json={"text": f"plant the beds {tag}"}).status_code == 202
        wait_idle(c, cid)
        # The run's after-checkpoint is taken in the background once it is idle; a read
        # of its changes waits for it. A person's edit before then would be the run's
        # (under load the test's own edit was: no "changed since").
        assert c.get(f"/api/conversations/{cid}/changes").status_code == 200
    assert (folder / "beds.txt").read_text() == BEDS and not (folder / "old.txt").exists()
    return cid, folder


def items(daemon, cid: str) -> list[tuple[str, str | None]]:
    with api(daemon) as c:
        return [(i["kind"], i.get("text")) for i in c.get(f"/api/conversations/{cid}").json()["items"]
                if i["kind"] in ("user", "assistant")]


def open_changes(page):
    """From a conversation, its header's Changes (on a phone, behind the header's menu)."""
    menu = page.locator("header.conv-head").get_by_role("button", name="Workspace, mode, model")
    if menu.is_visible():
        menu.click()
    page.locator("header.conv-head").get_by_role("link", name="Changes").click()
    page.get_by_role("heading", name=re.compile("^Changes in")).wait_for()


def the_run(page, tag: str):
    return page.locator("li.run-changes").filter(has_text=f"plant the beds {tag}")


def file_row(run, path: str):
    return run.get_by_role("list", name="Files this run changed").locator("details.change-file").filter(
        has=run.page.locator("code.file-path", has_text=re.compile(f"^{re.escape(path)}$")))


def described(page, control) -> str:
    """The words that describe `control` (its aria-describedby)."""
    return page.locator(f'[id="{control.get_attribute("aria-describedby")}"]').inner_text()


def back_as_before(folder: Path) -> bool:
    return (not (folder / "beds.txt").exists() and (folder / "garden.txt").read_text() == GARDEN
            and (folder / "old.txt").exists() and (folder / "old.txt").read_text() == OLD)


@pytest.mark.parametrize(("viewport", "scheme", "tag"), [(DESKTOP, "light", "desktop"), (PHONE, "dark", "phone")],
                         ids=["desktop", "phone-dark"])
def test_the_changes_view_lists_a_runs_files_shows_a_diff_and_undoes_the_files_only(
        open_page, daemon, tmp_path, viewport, scheme, tag):
    cid, folder = planted(daemon, tmp_path, tag)
    said = items(daemon, cid)
    assert said[0] == ("user", f"plant the beds {tag}") and said[-1][1].startswith("Planted")
    page = open_page(f"#/c/{cid}", viewport=viewport, color_scheme=scheme)
    page.get_by_role("article", name="Answer").filter(has_text="Planted").wait_for()
    run = the_run(page, tag)
    if viewport == DESKTOP:  # the message's own link: its run shown first, the keyboard on it
        page.get_by_role("article", name="Your message").get_by_role("link", name="3 files changed").click()
        run.wait_for()
        assert re.fullmatch(f"#/c/{cid}/changes/[^/]+", where(page)), where(page)
        assert run.locator(".run-title").evaluate("e => e === document.activeElement")
    else:
        open_changes(page)
        assert where(page) == f"#/c/{cid}/changes"
    run.wait_for()
    summary = run.locator(".run-summary")
    assert "3 files changed" in summary.inner_text()
    files = run.get_by_role("list", name="Files this run changed").get_by_role("listitem")
    assert files.count() == 3
    rows = {p: file_row(run, p).locator("summary") for p in ("beds.txt", "garden.txt", "old.txt")}

    def shown(path):
        row = rows[path]
        return (row.locator(".file-status").inner_text(),
                row.locator(".count-add").inner_text().strip() + " " + row.locator(".count-del").inner_text().strip())

    assert shown("beds.txt") == ("added", "+3 −0")
    assert shown("garden.txt") == ("modified", "+2 −1")
    assert shown("old.txt") == ("deleted", "+0 −1")
    # the counts are said in words too
    assert rows["garden.txt"].locator(".line-counts .visually-hidden").inner_text() == "2 lines added, 1 line removed"

    # a file's diff, coloured as an approval card's, opened from the keyboard
    rows["garden.txt"].focus()
    page.keyboard.press("Enter")
    diff = file_row(run, "garden.txt").locator("pre.diff")
    diff.wait_for()
    text = diff.inner_text()
    assert "-tulips" in text and "+lilies" in text and "+ferns" in text, text
    assert diff.locator(".diff-add", has_text="+lilies").count() == 1
    assert diff.locator(".diff-del", has_text="-tulips").count() == 1
    screenshot(page, f"{tag}-changes")

    # Undo this run: two choices, each said in words before one is taken
    undo = run.get_by_role("button", name="Undo this run…")
    assert undo.get_attribute("aria-expanded") == "false"
    undo.click()
    assert undo.get_attribute("aria-expanded") == "true"
    choices = run.get_by_role("group", name="Undo this run: choose what goes back.")
    files_only = choices.get_by_role("button", name="Files only")
    assert files_only.evaluate("b => b === document.activeElement")
    assert "The conversation stays as it is" in described(page, files_only)
    both = choices.get_by_role("button", name="Files and conversation")
    assert "removes your message and everything after it" in described(page, both)
    screenshot(page, f"{tag}-undo-choices")
    assert (folder / "beds.txt").exists()  # nothing happens before a choice
    page.keyboard.press("Escape")  # leaves the question, the keyboard back where it was
    assert undo.get_attribute("aria-expanded") == "false" and choices.count() == 0
    assert undo.evaluate("b => b === document.activeElement")
    page.keyboard.press("Enter")
    files_only.click()

    status = page.get_by_role("status").filter(has_text="Undone:")
    status.wait_for()
    assert "put back as before your message" in status.inner_text()
    assert back_as_before(folder)
    assert items(daemon, cid) == said  # the conversation stays

    # the undo is listed too, and is undone in turn: the run's files come back
    undone = page.locator("li.run-changes.kind-rewind")
    # (the quotes are the <q>'s own, not in its text)
    undone.locator(".run-title").filter(has_text=f"Your undo back to before plant the beds {tag}").wait_for()
    undone.get_by_role("button", name="Undo this undo…").click()
    assert undone.get_by_role("button", name="Files and conversation").count() == 0
    undone.get_by_role("button", name="Files only").click()
    page.get_by_role("status").filter(has_text="as before the undo").wait_for()
    assert (folder / "beds.txt").read_text() == BEDS and (folder / "garden.txt").read_text() == GARDEN_AFTER
    assert not (folder / "old.txt").exists()

    # back to the conversation, whole
    page.get_by_role("link", name="Back to the conversation").click()
    page.get_by_role("article", name="Answer").filter(has_text="Planted").wait_for()


def test_undo_files_and_conversation_also_drops_the_messages(open_page, daemon, tmp_path):
    cid, folder = planted(daemon, tmp_path, "both", title="Plant and forget")
    page = open_page(f"#/c/{cid}/changes")
    run = the_run(page, "both")
    run.get_by_role("button", name="Undo this run…").click()
    run.get_by_role("button", name="Files and conversation").click()
    status = page.get_by_role("status").filter(has_text="Undone:")
    status.wait_for()
    assert "removed from the conversation" in status.inner_text()
    assert back_as_before(folder)
    assert items(daemon, cid) == []
    page.get_by_role("link", name="Back to the conversation").click()
    page.get_by_text("Nothing here yet. Write a message below.").wait_for()
    assert page.get_by_role("article", name="Answer").count() == 0


@pytest.mark.parametrize(("viewport", "tag"), [(DESKTOP, "since"), (PHONE, "since-phone")], ids=["desktop", "phone"])
def test_a_file_changed_since_blocks_the_undo_by_name_and_undo_anyway_goes_through(
        open_page, daemon, tmp_path, viewport, tag):
    cid, folder = planted(daemon, tmp_path, tag, title="Plant and tend")
    mine = "roses\nlilies\ndaisies\nferns\nmy own line\n"
    (folder / "garden.txt").write_text(mine)  # the person's own edit after the run
    page = open_page(f"#/c/{cid}/changes", viewport=viewport, allowed_errors=("status of 409",))
    run = the_run(page, tag)
    file_row(run, "garden.txt").locator(".changed-since").wait_for()
    assert file_row(run, "beds.txt").locator(".changed-since").count() == 0
    run.get_by_role("button", name="Undo this run…").click()
    run.get_by_role("button", name="Files only").click()

    refused = run.get_by_role("group").filter(has_text="Nothing was undone")
    refused.wait_for()
    assert refused.get_by_role("list", name="Files you changed since").get_by_role("listitem").all_inner_texts() == [
        "garden.txt"]
    assert run.get_by_role("alert").filter(has_text="you changed this file after the run").count() == 1
    # nothing changed on disk
    assert (folder / "garden.txt").read_text() == mine and (folder / "beds.txt").exists()
    assert not (folder / "old.txt").exists()
    screenshot(page, f"{'phone' if viewport == PHONE else 'desktop'}-undo-refused")

    # "Keep my changes" leaves it; asked again, "Undo anyway" is its own, explicit choice
    refused.get_by_role("button", name="Keep my changes").click()
    assert run.get_by_role("button", name="Undo this run…").evaluate("b => b === document.activeElement")
    run.get_by_role("button", name="Undo this run…").click()
    run.get_by_role("button", name="Files only").click()
    anyway = run.get_by_role("button", name="Undo anyway, files only")
    anyway.click()
    page.get_by_role("status").filter(has_text="Undone:").wait_for()
    assert back_as_before(folder)


def test_fork_from_here_opens_a_new_conversation_with_the_items_up_to_that_message(open_page, daemon):
    with api(daemon) as c:
        cid = c.post("/api/conversations", json={"title": "Watering"}).json()["id"]
        for text in ("water the roses", "and the tulips"):
            assert c.post(f"/api/conversations/{cid}/messages", json={"text": text}).status_code == 202
            wait_idle(c, cid)
    before = items(daemon, cid)
    assert len(before) == 4
    page = open_page(f"#/c/{cid}")
    first = page.get_by_role("article", name="Answer").filter(has_text="Watered the roses.")
    first.get_by_role("button", name="Fork from here").click()
    wait_until(lambda: where(page) != f"#/c/{cid}", what="the fork to open")
    fork = where(page).rsplit("/", 1)[1]
    assert fork != cid
    drawn(page, fork)
    page.get_by_role("article", name="Answer").filter(has_text="Watered the roses.").wait_for()
    assert page.get_by_role("article", name="Answer").count() == 1
    assert page.get_by_text("and the tulips").count() == 0
    assert page.locator(".conv-list").get_by_role("link", name=re.compile("Watering")).count() == 2
    assert items(daemon, fork) == before[:2]
    assert items(daemon, cid) == before  # the original unchanged


def test_fork_from_a_message_on_a_phone(open_page, daemon, tmp_path):
    cid, folder = planted(daemon, tmp_path, "fork-phone", title="Plant to fork")
    said = items(daemon, cid)
    page = open_page(f"#/c/{cid}", viewport=PHONE, color_scheme="dark")
    mine = page.get_by_role("article", name="Your message")
    mine.get_by_role("button", name="Fork from here").click()
    wait_until(lambda: where(page) != f"#/c/{cid}", what="the fork to open")
    fork = where(page).rsplit("/", 1)[1]
    drawn(page, fork)
    page.get_by_role("article", name="Your message").filter(has_text="plant the beds fork-phone").wait_for()
    assert page.get_by_role("article", name="Answer").count() == 0
    assert items(daemon, fork) == [("user", "plant the beds fork-phone")]
    assert items(daemon, cid) == said


def test_a_scheduled_tasks_run_shows_its_changes_and_undoes_them(open_page, daemon, tmp_path):
    folder = garden(tmp_path)
    with api(daemon) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()["id"]
        tid = c.post("/api/tasks", json={"title": "Nightly planting", "prompt": "plant the beds task",
                                         "workspace": ws, "mode": "full",
                                         "schedule": {"kind": "daily", "at": "03:00"}}).json()["id"]
        assert c.post(f"/api/tasks/{tid}/run", json={}).status_code == 202
        run_id = wait_until(lambda: c.get("/api/conversations", params={"task": tid}).json(), what="the run")[0]["id"]
        wait_idle(c, run_id)
    assert (folder / "beds.txt").exists()

    page = open_page("#/tasks")
    row = page.get_by_role("listitem", name="Nightly planting")
    row.locator("summary", has_text="Runs").click()
    row.get_by_role("list", name="Runs of Nightly planting").get_by_role("link").first.click()
    assert where(page) == f"#/c/{run_id}"
    open_changes(page)
    run = the_run(page, "task")
    assert run.get_by_role("list", name="Files this run changed").get_by_role("listitem").count() == 3
    run.get_by_role("button", name="Undo this run…").click()
    run.get_by_role("button", name="Files only").click()
    page.get_by_role("status").filter(has_text="Undone:").wait_for()
    assert back_as_before(folder)
