"""How a small local model is led past the first change and the first answer
(actors/runs/agent/small/leader.py, steps.py): the first round calls the tool its
nearest worked example begins with; a job that is still open after a change (a file
it names still missing, a value it gives in none of its files) takes another; write_file
names the new file the request names; an answer after a search names one of the files
it found; an answer that repeats the worked examples' words or a refusal is sent back.
The run-level tests use the scripted backend made to say it is small."""

from __future__ import annotations

from actors.model.backends import worked_examples
from actors.model.backends.worked_examples import example_words_in
from actors.runs.agent.small import faults, request_forms, steps
from actors.tools.grep_search import CASE_IGNORED_HEAD
from tests.test_small_steps import call, small_project
from tests.waiting import wait_state

# ---- the pieces ----


def test_a_request_gives_values_and_names_files():
    assert steps.values_given("in cc.py set A to '#ff0000' and B to \"x y\", port 9090, not 7") == \
        ["#ff0000", "x y", "9090"]
    assert steps.values_given("write 'notes.md' now") == []  # a quoted file's name is a file's
    assert steps.file_names("Use Node.js to serve web/index.js and ./ab.txt") == ["web/index.js", "ab.txt"]


def test_a_job_is_still_open_while_a_new_file_is_missing_or_a_value_is_nowhere():
    files = {"cc.py": "A = '#ff0000'\nB = 'b'\n"}
    exists, read = files.__contains__, files.get
    assert steps.still_open("in cc.py set A to '#ff0000' and B to '#0000ff'", [], exists, read)
    assert not steps.still_open("in cc.py set A to '#ff0000'", [], exists, read)
    assert steps.still_open("run cc.py and put its output in out.txt", ["out.txt"], exists, read)
    # A file named to go (renamed, deleted) may be gone; a question is never open.
    assert not steps.still_open("rename old.txt to cc.py", [], exists, read)
    assert not steps.still_open("is B set to '#0000ff' in cc.py?", [], exists, read)
    # A word to put in place of another: open while a line still holds the other (one line a change).
    words = {"st.txt": "a colour\nthe colour red\n"}
    asked = "replace every 'colour' with 'color' in st.txt"
    assert steps.still_open(asked, [], words.__contains__, words.get)
    words["st.txt"] = "a color\nthe colour red\n"
    assert steps.still_open(asked, [], words.__contains__, words.get)
    words["st.txt"] = "a color\nthe color red\n"
    assert not steps.still_open(asked, [], words.__contains__, words.get)


def test_a_search_finds_files_and_write_file_names_the_new_one():
    found = "app/xx.py:2:from y import z\n./lib/yy.py:1:print(z)\nnot a line\n"
    assert steps.search_found(found) == ["app/xx.py", "lib/yy.py"]
    # Where a name is defined, when a line defines it, is the answer to where it is.
    for line, name in (("def zz():", "def zz"), ("class Zz:", "Zz"), ("export function zz() {", "zz"),
                       ("zz = 3", "zz"), ("  zz: int = 3", "zz"), ("const zz = 1", "zz")):
        found = f"app/xx.py:2:print(zz)\napp/vv.py:3:def show(i: zz):\nlib/yy.py:1:{line}\n"
        assert steps.search_found(found, name) == ["lib/yy.py"], line
    assert steps.search_found("app/xx.py:2:if zz == 3:\n", "zz") == ["app/xx.py"]
    assert steps.search_found("app/xx.py:2:def zz():\nlib/yy.py:1:zz()\n") == ["app/xx.py", "lib/yy.py"]
    # found with case ignored (grep_search says so on its first line): the name's case too
    folded = "app/vv.py:3:def show(i: Zz):\nlib/yy.py:1:class Zz:\n"
    assert steps.search_found(folded, "zz") == ["app/vv.py", "lib/yy.py"]
    assert steps.search_found(f"{CASE_IGNORED_HEAD}\n{folded}", "zz") == ["lib/yy.py"]
    params = {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
              "required": ["path", "content"]}
    shape = steps.write_shape(params, ["docs/a.md"])
    assert shape is not None and shape["properties"]["path"] == {"enum": ["docs/a.md"]}
    assert shape["properties"]["content"] == {"type": "string"} and steps.write_shape(params, []) is None


def test_asked_to_remove_something_the_edit_takes_a_whole_line_out():
    assert request_forms.removes("remove the LOG line from x.cfg") and request_forms.removes("Please delete it")
    assert not request_forms.removes("Set A to 3, then remove B") and not request_forms.removes("Move it")
    assert request_forms.removes("notes.py is full of old debug prints, clear them all out")
    assert request_forms.removes("the config has a dead entry, can you get rid of it")
    assert request_forms.removes("x.md: cut the intro out")
    assert not request_forms.removes("rename a.py to b.py and get rid of the old one")  # another change asked beside it
    assert not request_forms.removes("why does it clear out the cache")  # no verb of a change: a question's
    # Other words for taking out; a change said as one that will not happen is no other change.
    assert request_forms.removes("we'll never turn the banner on, so rip it out please, the option and its code")
    assert request_forms.removes("don't add anything, just ditch the old header") and request_forms.removes("scrap it")
    assert request_forms.removes("the fan setting is dead weight, do away with it")
    assert not request_forms.removes("turn the banner on and pull the old one out")
    shape = steps.edit_shape([("xx.cfg", "a=1\nDEBUG=1\nb=2")], removing=True)
    assert shape is not None
    edit = shape["properties"]["edits"]["items"]["properties"]
    assert edit["old_text"] == {"enum": ["a=1\n", "DEBUG=1\n", "b=2"]} and edit["new_text"] == {"const": ""}


def test_an_answer_is_checked_against_the_search_the_examples_and_refusals():
    there = {"app/xx.py", "lib/yy.py"}.__contains__
    fault = steps.find_fault
    found = ("app/xx.py", "lib/yy.py")
    assert fault("It is in lib/yy.py.", exists=there, changed=False, found=found) is None
    assert fault("It is in yy.py.", exists=lambda _: True, changed=False, found=found) is None
    assert fault("It is nowhere.", exists=there, changed=False, found=found) == faults.Fault(unfound=found)
    assert fault("It is nowhere.", exists=there, changed=False) is None  # no search: nothing to name
    # Asked where something is, an answer must name a file.
    assert fault("It was not found.", exists=there, changed=False, asked="where is zz set?") == \
        faults.Fault(nofile=True)
    assert fault("At noon.", exists=there, changed=False, asked="When is it run, and where?") is None
    assert fault("In lib/yy.py.", exists=there, changed=False, asked="Which file sets zz?") is None
    # Asked how many, an answer must give a number.
    assert fault("They are a, b and c.", exists=there, changed=False, asked="how many are there?") == \
        faults.Fault(nonumber=True)
    for fine in ("There are 3.", "Three: a, b, c.", "None."):
        assert fault(fine, exists=there, changed=False, asked="How many are there?") is None, fine
    # A new file the request names must be there when the answer comes (not for a question).
    assert fault("Done.", exists=there, changed=True, asked="write out.txt", new=["out.txt"]) == \
        faults.Fault(notmade="out.txt")
    assert fault("Done.", exists=there, changed=True, asked="is out.txt there?", new=["out.txt"]) is None
    made = steps.answer_fault("Done.", exists=there, changed=True, asked="write out.txt", new=["out.txt"])
    assert made is not None and "out.txt" in faults.fault_for_person(made)
    told = steps.answer_fault("a, b", exists=there, changed=False, asked="how many?")
    assert told is not None and faults.fault_for_person(told) != told

    def copied(answer: str) -> str | None:
        return example_words_in(answer, said="the person's files: lib/yy.py")

    assert fault("Output: waxing gibbous", exists=there, changed=False, copied=copied) == \
        faults.Fault(copied="waxing gibbous")
    assert fault("lib/yy.py has it.", exists=there, changed=False, copied=copied) is None
    refusal = "This command was refused: it may not run here. Try another."
    assert fault("This command was refused: it may not run here", exists=there, changed=False,
                 refusals=[refusal]) == faults.Fault(copied="This command was refused: it may not run here")
    told = steps.answer_fault("Output: waxing gibbous", exists=there, changed=False, copied=copied)
    assert told is not None and "waxing gibbous" in told
    assert faults.fault_for_person(told) != told and "could not do this" in faults.could_not(
        faults.Fault(copied="waxing gibbous"))


# ---- the run ----


async def test_the_first_round_calls_the_nearest_examples_tool(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"app.py": "print(1)\n"})
    d.backend.push(call("exec_shell_command", command="python3 app.py"), {"text": "It printed 1."})
    await conv.send_message("Execute app.py and tell me what it shows")
    await wait_state(conv, "idle", "error")
    first, second = d.backend.turns
    assert first.tool_choice == "required" and first.examples
    ruled_out = {name for name, args in first.avoid if args is None}
    assert {t.name for t in first.tools} - ruled_out == {"exec_shell_command"}
    assert second.tool_choice == "none"


async def test_a_job_that_gives_two_values_takes_two_changes(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"cc.py": "A = 'a'\nB = 'b'\nC = 'c'\n"})
    d.backend.push(call("edit_file", path="cc.py", edits=[{"old_text": "A = 'a'", "new_text": "A = 'x1'"}]),
                   call("edit_file", path="cc.py", edits=[{"old_text": "B = 'b'", "new_text": "B = 'y2'"}]),
                   {"text": "Done."})
    await conv.send_message("in cc.py set A to 'x1' and B to 'y2'")
    await wait_state(conv, "idle", "error")
    assert [t.tool_choice for t in d.backend.turns] == ["required", "required", "none"]
    assert (folder / "cc.py").read_text() == "A = 'x1'\nB = 'y2'\nC = 'c'\n"
    assert conv.info.end_reason == "answered"


async def test_an_answer_after_a_search_that_names_none_of_its_files_is_sent_back(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"aa.py": "def area():\n    pass\n", "bb.py": "x = 1\n"})
    d.backend.push(call("grep_search", pattern="area"), {"text": "It is somewhere."},
                   {"text": "area is defined in aa.py."})
    await conv.send_message("Where is area defined?")
    await wait_state(conv, "idle", "error")
    told = [i for i in conv.items if i.kind == "notice" and i.for_model]
    assert len(told) == 1 and "none of the files the search found: aa.py" in told[0].text
    assert conv.info.end_reason == "answered" and conv.items[-1].text == "area is defined in aa.py."


def test_a_request_for_a_change_put_as_a_question_is_judged_as_a_request():
    """"Could you rename them?" asks for a change, its question mark aside: an answer
    that claims a change nobody made is at fault as for any request, and the run is led
    as for a change; a question put politely ("can you tell me …?") stays a question."""
    for asked in ("could you rename the logs?", "can u please drop the old rows?", "Hi, can you add a line to it?",
                  "please fix the typo in notes.md?"):
        assert not request_forms.asks_question(asked) and not request_forms.question_mark(asked), asked
    for asked in ("can you tell me where PORT is set?", "what does it do?", "is it sorted?", "could it be faster?"):
        assert request_forms.asks_question(asked), asked
    there = {"config.py"}.__contains__
    claim = steps.find_fault("PORT is now 9090.", exists=there, changed=False, asked="could you change PORT to 9090?")
    assert claim is not None and claim.claim == "PORT is now 9090"
    assert steps.find_fault("PORT is now 9090.", exists=there, changed=False, asked="is PORT 9090 now?") is None
    assert worked_examples.request_kind("could you rename a.txt to b.txt?") == "files"
    assert worked_examples.request_kind("can you add a line to notes.md?") == "change"
    assert worked_examples.request_kind("can you tell me what x.py does?") == "read"


def test_a_problem_told_first_then_asked_to_be_put_right_is_a_request():
    """People tell the problem first and ask after it: "the badges come out garbled. can
    you sort it out?" asks for a change (its last sentence does), and so is led and
    judged; a question after the problem ("… where is it read?") stays a question, and
    a program asked to run again is run."""
    for asked in ("the names come out garbled in the output. can you sort it out?",
                  "Tests fail since yesterday! Could you fix them?",
                  "these logs are clutter. can u delete the .log files?"):
        assert not request_forms.asks_question(asked) and not request_forms.question_mark(asked), asked
        assert worked_examples.request_kind(asked) in {"change", "files"}, asked
    assert worked_examples.request_kind("these logs are clutter. can u delete the .log files?") == "files"
    for asked in ("the app crashes on start. where is the config read?", "the total is wrong. why?",
                  "The list is long. Could you tell me which file defines it?"):
        assert request_forms.asks_question(asked) and worked_examples.request_kind(asked) == "search", asked
    assert worked_examples.request_kind("I ran the tests and they fail. Can you run them again?") == "run"
    there = {"badges.py"}.__contains__
    claim = steps.find_fault("I fixed the names in badges.py.", exists=there, changed=False,
                             asked="the names come out garbled. can you sort it out?")
    assert claim is not None
