"""The web UI when the bundled model cannot do a job (issue 30), in Chromium: an answer
that claims a change nobody made, sent back once and made again, is not shown as the
answer; the person reads that the model could not do it and what to try, and the end
line says why the run ended."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.browser import DESKTOP, PageWatch, chromium, require_browser, running_daemon, write_script
from tests.test_loops import LED_PARAMS


def wait_until(pred, timeout: float = 20.0, what: str = "the condition") -> None:
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)

FALSE = "PORT is now 9090, I promise."
SCRIPT = {
    "n_params": LED_PARAMS,  # the bundled model's size: the run leads it
    "rounds": [
        # No `when`: the second round's last user message is the notice that sent the first back.
        {"text": "PORT is now 9090."},
        {"text": FALSE},
    ],
}


@contextmanager
def led_conversation(tmp_path, script: dict, asked: str | None = None) -> Iterator[tuple]:
    """A daemon on the scripted `script` (a led model's size) and a conversation in full
    mode on a folder with config.py: (folder, daemon, client, its id), once the run
    `asked` ended when given."""
    require_browser()
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "config.py").write_text("PORT = 8080\n")
    path = write_script(tmp_path / "script.json", script)
    with running_daemon(tmp_path / "data", "--scripted", str(path)) as d, \
            httpx.Client(base_url=d.url, timeout=30) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        cid = c.post("/api/conversations", json={"workspace": ws["id"], "mode": "full"}).json()["id"]
        if asked is not None:
            assert c.post(f"/api/conversations/{cid}/messages", json={"text": asked}).status_code == 202
            wait_until(lambda: c.get(f"/api/conversations/{cid}").json()["end_reason"] is not None,
                       what="the run's end")
        yield folder, d, c, cid


def test_the_person_reads_that_the_model_could_not_do_it_not_its_false_answer(tmp_path):
    with led_conversation(tmp_path, SCRIPT, "change PORT to 9090") as (folder, d, c, cid):
        conv = c.get(f"/api/conversations/{cid}").json()
        assert conv["end_reason"] == "could_not", [(i["kind"], i.get("text")) for i in conv["items"]]
        kept = [i for i in conv["items"] if i["kind"] == "assistant" and i.get("not_answer")]
        assert [i["text"] for i in kept] == ["PORT is now 9090.", FALSE]  # kept in the record, for the model
        # The notice that ended the run is said once, in the end line; no answer is shown.
        with chromium() as browser, could_not_page(browser, d.url, cid) as (page, end):
            text = end.inner_text()
            assert "no file changed" in text and "Try a larger model (the models page)" in text
            # The false answer is nowhere the person sees: only the end line quotes it.
            shown = [e for e in page.locator(".item, .run-end").filter(has_text="I promise").all() if e.is_visible()]
            assert len(shown) == 1 and "run-end" in (shown[0].get_attribute("class") or "")
            # The notice that sent the answer back was written for the model: the person
            # reads their own words for it, never the model's (a tool's name, an order).
            sent_back = page.get_by_role("note").filter(has_text="sent back to make it")
            assert sent_back.is_visible()
            assert "edit_file" not in page.locator("body").inner_text()
            assert "Your answer" not in page.locator("body").inner_text()


def test_a_false_answer_is_never_on_the_screen_even_while_it_streams(tmp_path):
    """Watched from before the message is sent, with the answer streaming slowly: the
    page says the answer is being written and checked, and no answer on it ever holds
    the false answer's words."""
    with led_conversation(tmp_path, {**SCRIPT, "token_delay": 0.08}) as (folder, d, c, cid), chromium() as browser:
        page = browser.new_context(viewport=DESKTOP).new_page()
        watch = PageWatch(page, {urlsplit(d.url).netloc})
        page.goto(f"{d.url}/#/c/{cid}")
        page.get_by_role("textbox", name="Message").wait_for()
        # Every answer the page ever shows, and every time it says it checks one.
        page.evaluate("""() => {
            window.seenAnswers = []; window.seenChecking = 0;
            new MutationObserver(() => {
                for (const a of document.querySelectorAll('article.item.assistant')) {
                    if (a.querySelector('.checking-answer')) window.seenChecking += 1;
                    const words = a.querySelector('.markdown');
                    if (words && words.textContent) window.seenAnswers.push(words.textContent);
                }
            }).observe(document.body, { subtree: true, childList: true, characterData: true });
        }""")
        assert c.post(f"/api/conversations/{cid}/messages", json={"text": "change PORT to 9090"}).status_code == 202
        page.locator(".run-end").filter(has_text="The model could not do this").wait_for()
        seen = page.evaluate("window.seenAnswers")
        assert not [t for t in seen if "9090" in t], seen
        assert page.evaluate("window.seenChecking") > 0, "the page never said the answer was being checked"
        watch.check()


def missing(n: int) -> dict:
    return {"tool_calls": [{"name": "read_file", "arguments": {"path": f"gone{n}.py"}}]}


GOT_NOWHERE = {
    "n_params": LED_PARAMS,
    "rounds": [
        # An edit of spaces only (refused by a guard), then reads of files that are not
        # there, each a new call: six in a row got nowhere; the write after is never run.
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "config.py", "edits": [{"old_text": "PORT = 8080", "new_text": "PORT =  8080"}]}}]},
        *[missing(n) for n in range(5)],
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "late.txt", "content": "never"}}]},
        {"text": "Done."},
    ],
}


def test_a_led_run_whose_calls_keep_getting_nowhere_stops_and_the_person_reads_why(tmp_path):
    """A small model's run that made six calls in a row that failed or were refused
    (ledger.got_nowhere) stops: the end line says the model could not find a way and
    what to try, the refused edit's card says why in the person's words, and the call
    after the sixth is not run."""
    with led_conversation(tmp_path, GOT_NOWHERE, "tidy config.py") as (folder, d, c, cid):
        conv = c.get(f"/api/conversations/{cid}").json()
        assert conv["end_reason"] == "stuck"
        assert [(i["tool"], i["state"]) for i in conv["items"] if i["kind"] == "tool"] == \
            [("edit_file", "error")] + [("read_file", "error")] * 5
        assert not (folder / "late.txt").exists() and (folder / "config.py").read_text() == "PORT = 8080\n"
        with chromium() as browser:
            page = browser.new_context(viewport=DESKTOP).new_page()
            watch = PageWatch(page, {urlsplit(d.url).netloc})
            page.goto(f"{d.url}/#/c/{cid}")
            end = page.locator(".run-end").filter(has_text="could not find a way")
            end.wait_for()
            assert "last 6 calls all failed or found nothing" in end.inner_text()
            assert "larger model on the models page" in end.inner_text()
            card = page.locator("article").filter(has_text="Edit config.py")
            card.get_by_text("Why", exact=True).click()  # the card says why it was not run, when opened
            card.get_by_text("Not run: the edit changed only spaces or line breaks in config.py, which you did "
                             "not ask for.").wait_for()
            assert "new_text" not in page.locator("body").inner_text()  # the model's words are not shown
            watch.check()


DONE_BY_COMMAND = {
    "n_params": LED_PARAMS,
    "rounds": [
        # The job's whole command (held to it in the first round), then two answers that
        # name a file that is not there: the job is done, only the words are wrong.
        {"tool_calls": [{"name": "exec_shell_command", "arguments": {"command": "wc -l config.py"}}]},
        {"text": "There is 1 line in settings.py."},
        {"text": "settings.py has 1 line."},
    ],
}


def test_a_job_its_command_did_shows_what_the_command_did_not_that_the_model_could_not(tmp_path):
    """The job's whole command ran and exited 0; the model's answer named a file that is
    not there, twice. The person reads what the command printed as the answer, and a note
    that the answer says what the command did, not that the model could not do it."""
    with led_conversation(tmp_path, DONE_BY_COMMAND, "how many lines are in config.py") as (folder, d, c, cid):
        conv = c.get(f"/api/conversations/{cid}").json()
        assert conv["end_reason"] != "could_not", [(i["kind"], i.get("text")) for i in conv["items"]]
        with chromium() as browser:
            page = browser.new_context(viewport=DESKTOP).new_page()
            watch = PageWatch(page, {urlsplit(d.url).netloc})
            page.goto(f"{d.url}/#/c/{cid}")
            answer = page.get_by_role("article", name="Answer").last
            answer.wait_for()
            assert "It printed: 1 config.py" in answer.inner_text()
            assert page.get_by_role("note").filter(has_text="says what the command did").is_visible()
            assert "The model could not do this" not in page.locator("body").inner_text()
            assert "settings.py" not in answer.inner_text()
            watch.check()


PARROTED = {
    "n_params": LED_PARAMS,
    "rounds": [
        # An edit that would leave config.py using a name nothing defines (refused), a
        # search, then the search's line as the answer, twice: nothing changed.
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "config.py", "edits": [{"old_text": "PORT = 8080", "new_text": "PORT = port or 9090"}]}}]},
        {"tool_calls": [{"name": "grep_search", "arguments": {"pattern": "PORT"}}]},
        {"text": "config.py:1:PORT = 8080"},
        {"text": "config.py:1:PORT = 8080"},
    ],
}


def test_an_answer_that_only_repeats_a_search_after_a_refused_edit_is_not_the_answer(tmp_path):
    """Asked for a change, the model's edit would have left a name undefined (refused:
    its card says why), and its answer only repeated the search's line, twice: the person
    reads that the model changed nothing and could not do it, the file as it was."""
    with led_conversation(tmp_path, PARROTED, "change PORT to 9090") as (folder, d, c, cid):
        conv = c.get(f"/api/conversations/{cid}").json()
        assert conv["end_reason"] == "could_not", [(i["kind"], i.get("text")) for i in conv["items"]]
        assert (folder / "config.py").read_text() == "PORT = 8080\n"
        with chromium() as browser, could_not_page(browser, d.url, cid) as (page, end):
            assert "it changed nothing, and its answer only repeated what a tool printed" in end.inner_text()
            assert page.get_by_role("note").filter(has_text="only repeated what a tool printed").first.is_visible()
            card = page.locator("article").filter(has_text="Edit config.py")
            card.get_by_text("Why", exact=True).click()
            card.get_by_text("Not run: the edit would have left config.py using port (line 1), which nothing in "
                             "it would define.").wait_for()
            assert "Your answer" not in page.locator("body").inner_text()


IDLE = {
    "n_params": LED_PARAMS,
    "rounds": [
        # A search for words of its own, then an answer of its own, twice: nothing changed.
        {"tool_calls": [{"name": "grep_search", "arguments": {"pattern": "todo"}}]},
        {"text": "No matches found"},
        {"tool_calls": [{"name": "grep_search", "arguments": {"pattern": "later"}}]},
        {"text": "No matches found"},
    ],
}


def test_an_answer_to_a_change_that_changed_nothing_is_not_the_answer(tmp_path):
    """Asked for a change, the model changed nothing and answered in words of its own,
    twice: the person reads that it changed nothing and could not do it, and why the
    first answer was sent back; the file as it was."""
    with led_conversation(tmp_path, IDLE, "change PORT to 9090") as (folder, d, c, cid):
        conv = c.get(f"/api/conversations/{cid}").json()
        assert conv["end_reason"] == "could_not", [(i["kind"], i.get("text")) for i in conv["items"]]
        assert (folder / "config.py").read_text() == "PORT = 8080\n"
        with chromium() as browser, could_not_page(browser, d.url, cid) as (page, end):
            assert "asked for a change, it changed nothing (its answer: \u201cNo matches found\u201d)" \
                in end.inner_text()
            assert page.get_by_role("note").filter(has_text="nothing was changed and the request asked for a change") \
                .first.is_visible()
            assert "Your answer" not in page.locator("body").inner_text()


MISQUOTED = {
    "n_params": LED_PARAMS,
    "rounds": [
        # A command with a placeholder path (refused: its card says why), a search, the
        # change, then the search's line from before the change as the answer, twice.
        {"tool_calls": [{"name": "exec_shell_command", "arguments": {"command": "cat /path/to/config.py"}}]},
        {"tool_calls": [{"name": "grep_search", "arguments": {"pattern": "PORT"}}]},
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "config.py", "edits": [{"old_text": "PORT = 8080", "new_text": "PORT = 9090"}]}}]},
        {"text": "config.py:1:PORT = 8080"},
        {"text": "config.py:1:PORT = 8080"},
    ],
}


def test_an_answer_that_quotes_a_line_the_file_no_longer_says_is_not_the_answer(tmp_path):
    """The model made the change, then answered with the search's line from before it,
    twice: the person reads that a change was made, to check, and that the answer is not
    shown, the line as the file says it now, and why the first answer was sent back; the
    placeholder command's card says why it did not run. The change stays."""
    with led_conversation(tmp_path, MISQUOTED, "change PORT to 9090") as (folder, d, c, cid):
        conv = c.get(f"/api/conversations/{cid}").json()
        assert conv["end_reason"] == "could_not", [(i["kind"], i.get("text")) for i in conv["items"]]
        assert (folder / "config.py").read_text() == "PORT = 9090\n"
        with chromium() as browser, could_not_page(browser, d.url, cid, "The model made a change") as (page, end):
            assert ("its answer quoted line 1 of config.py as \u201cPORT = 8080\u201d, but that line reads "
                    "\u201cPORT = 9090\u201d, so its answer is not shown. Check the change") in end.inner_text()
            assert page.get_by_role("note").filter(has_text="quoted a line of a file that the file does not say") \
                .first.is_visible()
            card = page.locator("article").filter(has_text="cat /path/to/config.py")
            card.get_by_text("Why", exact=True).click()
            card.get_by_text("Not run: the command held /path/to/config.py, a placeholder, not a path of this "
                             "workspace. The workspace has config.py.").wait_for()
            assert "Your answer" not in page.locator("body").inner_text()


@contextmanager
def could_not_page(browser, url: str, cid: str, says: str = "The model could not do this") -> Iterator[tuple[Any, Any]]:
    """The conversation's page (desktop) open on its run's end that says the model could
    not do it (`says`), with no answer shown; the page's errors and requests checked on
    leaving."""
    page = browser.new_context(viewport=DESKTOP).new_page()
    watch = PageWatch(page, {urlsplit(url).netloc})
    page.goto(f"{url}/#/c/{cid}")
    end = page.locator(".run-end").filter(has_text=says)
    end.wait_for()
    assert page.get_by_role("article", name="Answer").count() == 0
    yield page, end
    watch.check()


WORDLESS = {
    "n_params": LED_PARAMS,
    "rounds": [
        {"tool_calls": [{"name": "edit_file", "arguments": {
            "path": "config.py", "edits": [{"old_text": "PORT = 8080", "new_text": "PORT = 9090"}]}}]},
        {"text": "{"},
        {"text": "{"},
    ],
}


def test_an_answer_with_no_words_is_not_the_answer(tmp_path):
    """The model made the change, then answered "{", twice: the person reads that its
    answer had no words, that the change is on its card to check, and why the first
    answer was sent back; no "{" is shown as the answer. The change stays."""
    with led_conversation(tmp_path, WORDLESS, "change PORT to 9090") as (folder, d, c, cid):
        conv = c.get(f"/api/conversations/{cid}").json()
        assert conv["end_reason"] == "could_not", [(i["kind"], i.get("text")) for i in conv["items"]]
        assert (folder / "config.py").read_text() == "PORT = 9090\n"
        with chromium() as browser, could_not_page(browser, d.url, cid) as (page, end):
            assert "its answer had no words (\u201c{\u201d). Any change it made is on its card" in end.inner_text()
            assert page.get_by_role("note").filter(has_text="The answer had no words").first.is_visible()
            assert page.locator("article").filter(has_text="config.py").first.is_visible()
            assert "Your answer" not in page.locator("body").inner_text()
