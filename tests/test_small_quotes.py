"""An answer that quotes a file's line in a search's shape (`path:N:text`) the file does
not bear out now (actors/runs/agent/small/quotes.py): sent back once, then the person
reads that the model could not do it; a quote of the line as it stands is an answer."""

from __future__ import annotations

from actors import notices
from actors.runs.agent.small import echo, faults, quotes
from actors.runs.agent.small import steps as small_steps
from tests.test_small_steps import call, small_project
from tests.waiting import wait_state

FILES = {"garden.ini": "[beds]\nwidth = 3\nmulch = false\n", "tools/shed.py": "def rake():\n    return 'tines'\n"}


def lines_of(rel: str) -> list[str] | None:
    text = FILES.get(rel)
    return None if text is None else text.splitlines()


def test_a_quote_the_file_does_not_bear_out_is_found():
    for text, path, number, actual in (
        # A line from before the change: the file says otherwise now.
        ("garden.ini:3:mulch = true", "garden.ini", 3, "mulch = false"),
        # One file's name and line, another file's words.
        ("tools/shed.py:1:mulch = false", "tools/shed.py", 1, "def rake():"),
        # A line the file does not have, words it does not hold.
        ("See garden.ini:40: depth = 3", "garden.ini", 40, None),
        # The second of two quotes.
        ("garden.ini:2:width = 3\ngarden.ini:3: mulch = off", "garden.ini", 3, "mulch = false"),
    ):
        found = quotes.misquoted(text, lines_of)
        assert found is not None and (found.path, found.number, found.actual) == (path, number, actual), text


def test_a_quote_of_the_line_as_it_stands_is_no_fault():
    for text in (
        "garden.ini:3:mulch = false",
        "garden.ini:3: Mulch = FALSE",  # case and spacing aside
        "It is set in garden.ini:3:mulch = false, so nothing is spread.",  # the line within a sentence
        "./tools/shed.py:2:return 'tin",  # a quote cut short, long enough to stand for it
        "the mulch setting is in garden.ini, line 3",  # no quote in a search's shape
        "notes.txt:1:anything",  # no file of the workspace: another rule judges that
        "at 10:30:00 it ran",  # a time, no file
        "garden.ini:40: width = 3",  # the file's words, their line's number off: a slip, not a false quote
    ):
        assert quotes.misquoted(text, lines_of) is None, text


def test_the_fault_the_model_and_the_person_are_told():
    there = set(FILES).__contains__
    fault = small_steps.find_fault("garden.ini:3:mulch = true", exists=there, changed=True, lines_of=lines_of)
    assert fault == faults.Fault(misquote=quotes.Misquote("garden.ini", 3, "mulch = true", "mulch = false",
                                                               changed=True))
    told = small_steps.answer_fault("garden.ini:3:mulch = true", exists=there, changed=True, lines_of=lines_of)
    assert told is not None and told.startswith(quotes.TOLD_PREFIX)
    assert "that line reads \u201cmulch = false\u201d." in told
    assert faults.fault_for_person(told) == notices.ANSWER_MISQUOTED
    # After a change: the person reads that a change was made, to check; before any, that it could not.
    assert faults.could_not(fault).startswith(
        "The model made a change (its card shows it); its answer quoted line 3 of garden.ini as \u201cmulch = "
        "true\u201d, but that line reads \u201cmulch = false\u201d, so its answer is not shown. Check the change;")
    before = small_steps.find_fault("garden.ini:3:mulch = true", exists=there, changed=False, lines_of=lines_of)
    assert before is not None and faults.could_not(before).startswith(
        "The model could not do this: its answer quoted line 3 of garden.ini")
    long = quotes.Misquote("garden.ini", 9, "x" * 200, None)
    assert len(quotes.shown(long.quoted)) == quotes.SHOWN_CHARS
    assert "but garden.ini has no line 9." in quotes.could_not(long)
    assert "but garden.ini has no line 9." in quotes.told(long)


def test_the_notice_that_sent_a_misquote_back_is_no_words_the_answer_repeats():
    """The notice quotes the answer: the same answer again is the same misquote, not an
    answer that repeats the daemon's words."""
    there = set(FILES).__contains__
    answer = "tools/shed.py:1:from rake import tines_and_more"
    told = small_steps.answer_fault(answer, exists=there, changed=False, lines_of=lines_of)
    assert told is not None and told.startswith(quotes.TOLD_PREFIX)
    again = small_steps.find_fault(answer, exists=there, changed=False, lines_of=lines_of, ours=[told])
    assert again is not None and again.misquote is not None
    # Nor its words alone: what a note quotes is not the daemon's words.
    assert echo.echoed("from rake import tines_and_more", [told]) is None
    assert echo.echoed("Answer from the files as they are now, in your own words", [told]) is not None


def test_asked_where_something_is_the_answer_is_its_file_not_a_lines_words():
    there = set(FILES).__contains__
    for asked in ("which file has rake in it?", "where is rake defined"):
        assert small_steps.find_fault("tools/shed.py:1:rake tines", exists=there, changed=False, asked=asked,
                                      lines_of=lines_of) is None, asked


async def test_a_stale_quote_after_a_change_is_sent_back_then_could_not(real_tools, tmp_path):
    """Asked to switch a setting on, the model changed it, then answered with the
    search's line from before the change, twice: sent back, then the person reads that
    the model could not do it; the change it made stays (the person can see it)."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"garden.ini": FILES["garden.ini"]})
    d.backend.push(
        call("grep_search", pattern="mulch"),
        call("edit_file", path="garden.ini", edits=[{"old_text": "mulch = false", "new_text": "mulch = true"}]),
        {"text": "garden.ini:3:mulch = false"},
        {"text": "garden.ini:3:mulch = false"},
    )
    await conv.send_message("switch the mulch on in garden.ini")
    await wait_state(conv, "idle", "error")
    sent = [i for i in conv.items if i.kind == "notice" and i.for_model]
    assert sent and sent[0].text.startswith(quotes.TOLD_PREFIX)
    assert conv.info.end_reason == "could_not"
    assert conv.items[-1].text.startswith("The model made a change (its card shows it); its answer quoted line 3 "
                                          "of garden.ini")
    assert (folder / "garden.ini").read_text() == "[beds]\nwidth = 3\nmulch = true\n"


async def test_a_quote_of_the_line_as_it_now_reads_is_the_answer(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"garden.ini": FILES["garden.ini"]})
    d.backend.push(
        call("edit_file", path="garden.ini", edits=[{"old_text": "mulch = false", "new_text": "mulch = true"}]),
        {"text": "Done: garden.ini:3:mulch = true"},
    )
    await conv.send_message("switch the mulch on in garden.ini")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "answered" and conv.items[-1].text == "Done: garden.ini:3:mulch = true"
