"""A small model's edit that would break a file that parses, and its new file of an odd
name (actors/runs/agent/small/guards.py, asked by leader.call_refused): the parse of each
kind read, the refusals through a run, and what they let through; and its answer after a
loop, sampled with a penalty on repeats."""

from __future__ import annotations

from actors import notices
from actors.runs.agent.small import guards
from tests.test_plan_mode import cards
from tests.test_small_steps import call, small_project
from tests.waiting import wait_state

COLORS = "RED = 'red'\nGREEN = 'green'\n"


def test_a_file_that_does_not_parse_says_where_and_why():
    parse = guards.parse_error
    assert parse("a.py", COLORS) is None and parse("a.json", '{"a": [1, 2]}') is None
    assert parse("a.toml", "[x]\nb = 1\n") is None and parse("A.PY", "x = 1\n") is None
    assert parse("a.py", "x = 1\ny = 2}\n") == (2, "unmatched '}'")
    assert parse("a.py", "x = '\\d'\n") is None  # an odd escape is the file's own business
    assert parse("a.py", "a\x00b")[0] == 1  # a NUL byte: not Python
    assert parse("a.json", '{\n"a": }') == (2, "Expecting value")
    assert parse("a.toml", "[x]\nb = 1\nc = \nd = 2\n") == (3, "Invalid value")
    assert parse("a.toml", '[x]\nb = 1\nc = "') == (3, "Unterminated string")  # at the end: the last line
    for other in ("a.txt", "a.md", "Makefile", "a.cfg", "a.js"):  # kinds not read: never refused
        assert parse(other, "}{") is None, other


def test_only_an_edit_that_breaks_a_file_that_parses_is_refused():
    why = guards.break_refused("colors.py", COLORS, "BLUE = BLUE'\nGREEN = 'green'\n")
    assert why is not None and why.startswith("Not changed: with this edit colors.py would no longer parse (line 1: "
                                              "unterminated string literal")
    assert guards.break_refused("colors.py", COLORS, "RED = '#ff0000'\nGREEN = 'green'\n") is None
    assert guards.break_refused("colors.py", "RED = 'red\n", "RED = 're\n") is None  # broken already: its own
    assert guards.break_refused("notes.txt", "a\n", "a}\n") is None
    # The person reads it in their words.
    assert notices.card_end(why) == ("rule", "Not run: the edit would have broken colors.py (line 1: unterminated "
                                             "string literal (detected at line 1)), which parses now.")


TABLE = ("RATES = {'tea': 1.5, 'cake': 2.25}\n\n\n"
         "def cost(item, n):\n    return RATES[item] * n\n")


def test_an_edit_that_leaves_a_name_undefined_is_refused_whichever_way():
    """A definition written over while still used, an import changed while the old name
    stays in use, a new name nothing binds: each refused, with the line that would fail.
    A name undefined already, one the edit binds, a star import, other kinds: let through."""
    over = guards.break_refused("shop.py", TABLE, TABLE.replace("RATES = {'tea': 1.5, 'cake': 2.25}", "TOTAL = 2.2"))
    assert over == notices.UNDEFINES_NAME_REFUSED.format(path="shop.py", name="RATES", line=5)
    assert notices.card_end(over) == ("rule", "Not run: the edit would have left shop.py using RATES (line 5), "
                                              "which nothing in it would define.")
    code = "import os.path\n\nprint(os.path.join('a', 'b'))\n"
    why = guards.break_refused("join.py", code, code.replace("import os.path", "import posixpath"))
    assert why is not None and "would use os," in why
    used = guards.break_refused("shop.py", TABLE, TABLE.replace("* n", "* n * markup"))
    assert used is not None and "line 5 of shop.py would use markup" in used
    # let through
    assert guards.break_refused("shop.py", TABLE, TABLE.replace("1.5", "1.75")) is None
    assert guards.break_refused("shop.py", TABLE, TABLE.replace("* n", "* n * markup").replace(
        "RATES = {", "markup = 1.1\nRATES = {")) is None  # bound by the same edit
    broken = TABLE.replace("RATES[item]", "PRICE[item]")  # undefined already: the file's own
    assert guards.break_refused("shop.py", broken, broken.replace("* n", "* n + 1")) is None
    star = "from tables import *\n\nprint(RATES)\n"
    assert guards.break_refused("s.py", star, star.replace("RATES", "OTHER")) is None
    assert guards.break_refused("notes.txt", "RATES\n", "OTHER\n") is None
    scoped = "def f(rows):\n    return [r for r in rows if r]\n\n\nclass A:\n    def g(self):\n        return f([])\n"
    assert guards.break_refused("s.py", scoped, scoped.replace("if r]", "if r and len(rows)]")) is None


async def test_a_small_models_edit_that_undefines_a_name_is_refused_and_the_file_kept(real_tools, tmp_path):
    """Asked for two decimals, SmolLM2 wrote the price table over as one number of
    another name: refused, the file as it was, and the right edit then runs."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"shop.py": TABLE})
    d.backend.push(call("edit_file", path="shop.py",
                        edits=[{"old_text": "RATES = {'tea': 1.5, 'cake': 2.25}", "new_text": "TOTAL = 2.2"}]),
                   call("edit_file", path="shop.py",
                        edits=[{"old_text": "return RATES[item] * n", "new_text": "return round(RATES[item] * n, 2)"}]),
                   {"text": "cost rounds to two decimals in shop.py now."})
    await conv.send_message("costs in shop.py come out like 4.500000001, round them to 2 decimals")
    await wait_state(conv, "idle", "error")
    assert [(c.tool, c.state) for c in cards(conv)] == [("edit_file", "error"), ("edit_file", "done")]
    assert cards(conv)[0].result.startswith("Not changed: with this edit line 5 of shop.py would use RATES")
    assert cards(conv)[0].person_text.startswith("Not run: the edit would have left shop.py using RATES (line 5)")
    assert (folder / "shop.py").read_text() == TABLE.replace("return RATES[item] * n",
                                                             "return round(RATES[item] * n, 2)")
    assert conv.info.end_reason == "answered"


async def test_a_small_models_edit_that_breaks_a_file_is_refused_and_the_next_runs(real_tools, tmp_path):
    """Given the line to change, SmolLM2 wrote its new text with a quote short: refused,
    the file stays as it was, the tool stays open, and the right edit then runs."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"colors.py": COLORS})
    d.backend.push(call("edit_file", path="colors.py",
                        edits=[{"old_text": "RED = 'red'", "new_text": "RED = #ff0000'"}]),
                   call("edit_file", path="colors.py",
                        edits=[{"old_text": "RED = 'red'", "new_text": "RED = '#ff0000'"}]),
                   {"text": "RED is '#ff0000' in colors.py now."})
    await conv.send_message("in colors.py set RED to '#ff0000'")
    await wait_state(conv, "idle", "error")
    assert [(c.tool, c.state) for c in cards(conv)] == [("edit_file", "error"), ("edit_file", "done")]
    refused = cards(conv)[0]
    assert refused.result.startswith("Not changed: with this edit colors.py would no longer parse (line 1:")
    assert refused.person_text.startswith("Not run: the edit would have broken colors.py (line 1:")
    assert ("edit_file", None) not in d.backend.turns[1].avoid  # not barred: the next edit may be right
    assert (folder / "colors.py").read_text() == "RED = '#ff0000'\nGREEN = 'green'\n"
    assert conv.info.end_reason == "answered"


async def test_an_edit_of_a_file_not_read_or_broken_already_or_not_found_is_the_tools(real_tools, tmp_path):
    """The guard reads only Python, JSON and TOML that parse now; an old_text that is not
    there is the tool's to say."""
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"notes.txt": "milk\n", "bad.py": "x = (\n",
                                                     "ok.json": '{"a": 1}\n'})
    d.backend.push(call("edit_file", path="notes.txt", edits=[{"old_text": "milk", "new_text": "milk}"}]),
                   call("edit_file", path="bad.py", edits=[{"old_text": "x = (", "new_text": "x = [("}]),
                   call("edit_file", path="ok.json", edits=[{"old_text": "nothing", "new_text": "}"}]),
                   {"text": "Done with notes.txt and bad.py."})
    await conv.send_message("change notes.txt, bad.py and ok.json")
    await wait_state(conv, "idle", "error")
    assert [(c.tool, c.state) for c in cards(conv)] == [("edit_file", "done"), ("edit_file", "done"),
                                                        ("edit_file", "error")]
    assert "was not found in ok.json" in cards(conv)[2].result
    assert (folder / "notes.txt").read_text() == "milk}\n" and (folder / "bad.py").read_text() == "x = [(\n"


# ---- the round after a loop ----


async def test_the_round_after_a_loop_is_sampled_with_a_penalty_on_repeats(real_tools, tmp_path):
    """After a change the answer is greedy; cut for a loop, greedy wrote the same loop
    again: the answer after the cut is sampled at the turn's temperature with
    LOOP_PENALTY, and the round after that is as before."""
    from actors.runs.agent.small.leader import LOOP_PENALTY, SMALL_TEMPERATURE

    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"app.cfg": "mode=prod\nDEBUG=1\n"})
    d.backend.push(call("edit_file", path="app.cfg", edits=[{"old_text": "DEBUG=1\n", "new_text": ""}]),
                   {"text": "app.cfg: version_log_log_log", "repeated": "_log"},
                   {"text": "app.cfg: version_log_log_log", "repeated": "_log"},
                   {"text": "Removed the DEBUG line from app.cfg."})
    await conv.send_message("remove the DEBUG line from app.cfg")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "answered" and (folder / "app.cfg").read_text() == "mode=prod\n"
    first_answer, after_cut, after_second_cut = d.backend.turns[1:4]
    assert (first_answer.temperature, first_answer.repeat_penalty) == (SMALL_TEMPERATURE, None)
    for turn in (after_cut, after_second_cut):
        assert turn.tool_choice == "none"  # still the answer, only sampled otherwise
        assert (turn.temperature, turn.repeat_penalty) == (None, LOOP_PENALTY)
    assert d.backend.turns[0].repeat_penalty is None


async def test_a_call_round_after_a_loop_has_no_penalty(real_tools, tmp_path):
    """Sampled with the penalty, a call round after a loop wrote a file named with the
    loop's remains: only an answer gets it."""
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"a.txt": "four\n"})
    d.backend.push({"tool_calls": [{"name": "read_file", "arguments": '{"path": "a.t, a.t, a.t'}], "repeated": "a.t, "},
                   call("read_file", path="a.txt"), {"text": "a.txt says four."})
    await conv.send_message("what does a.txt say?")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "answered"
    assert [t.repeat_penalty for t in d.backend.turns] == [None, None, None]


async def test_a_change_round_whose_edit_looped_offers_the_edit_again_with_the_penalty(real_tools, tmp_path):
    """A change round's edit cut for a loop: the next round must still change the file,
    so edit_file stays offered (left out, nothing that changes was left and the round
    was free: SmolLM2 searched on), sampled with LOOP_PENALTY; a round that is free
    after a loop still leaves the looped tool out for a round, without the penalty."""
    from actors.runs.agent.small.leader import LOOP_PENALTY

    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"config.py": "PORT = 8080\n"})
    looping = {"tool_calls": [{"name": "edit_file", "arguments": '{"path": "config.py", "edits": [{"old_text": '
                                                                   '"PORT = 8080", "new_text": "PORT = 9 9 9 9'}],
               "repeated": " 9"}
    d.backend.push(call("read_file", path="config.py"), {"text": "PORT is now 9090."}, looping,
                   call("edit_file", path="config.py", edits=[{"old_text": "PORT = 8080", "new_text": "PORT = 9090"}]),
                   {"text": "PORT is 9090 now."})
    await conv.send_message("change PORT to 9090")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "answered" and (folder / "config.py").read_text() == "PORT = 9090\n"
    cut_round, after = d.backend.turns[2], d.backend.turns[3]
    assert cut_round.tool_choice == "required" and cut_round.repeat_penalty is None  # the change round
    assert after.tool_choice == "required" and ("edit_file", None) not in after.avoid
    assert after.repeat_penalty == LOOP_PENALTY and after.shapes  # still held to the file's lines
    assert d.backend.turns[4].repeat_penalty is None  # the answer after the change: greedy, as ever

    d.backend.push({"tool_calls": [{"name": "read_file", "arguments": '{"path": "a.t, a.t, a.t'}],
                    "repeated": "a.t, "}, call("grep_search", pattern="PORT"), {"text": "config.py has PORT."})
    await conv.send_message("where is PORT set?")
    await wait_state(conv, "idle", "error")
    free = d.backend.turns[6]
    assert ("read_file", None) in free.avoid and free.repeat_penalty is None


async def test_an_answer_that_began_well_then_looped_is_kept_up_to_the_loop(real_tools, tmp_path):
    """A led model's answer cut for a loop that had said enough before it ("holds 3
    lines, 1 line, 1 line, ...") is the answer up to the loop, checked as any answer, and
    the person reads where it was cut; too little before the loop is a loop as before."""
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"a.txt": "one\ntwo\nthree\n"})
    d.backend.push(call("read_file", path="a.txt"),
                   {"text": "The file a.txt holds 3 lines, 1 line, 1 line, 1 line, 1 line", "repeated": ", 1 line"})
    await conv.send_message("how many lines does a.txt have?")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "answered" and len(d.backend.turns) == 2
    answer = [i for i in conv.items if i.kind == "assistant" and i.text][-1]
    assert answer.text == "The file a.txt holds 3 lines"
    assert conv.items[-1].kind == "notice" and conv.items[-1].text.startswith("The answer was cut where")
    # Too little before the loop: told, and asked again.
    _, conv = await small_project(d, tmp_path, {"a.txt": "one\n"})
    d.backend.push(call("read_file", path="a.txt"), {"text": "It has 1, 1, 1, 1", "repeated": ", 1"},
                   {"text": "a.txt has one line."})
    await conv.send_message("how many lines does a.txt have?")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "answered" and len(d.backend.turns) == 2 + 3
    assert [i.text for i in conv.items if i.kind == "assistant" and i.text][-1] == "a.txt has one line."


# ---- a new file of an odd name ----


def test_a_new_file_of_an_odd_name_is_refused_unless_the_request_gives_it():
    refused = guards.odd_name_refused
    junk = "#ff0f#,blue:BLUE;vega-1.23 54}},'response': 'x'}"
    why = refused("write_file", junk, False, "set RED in colors.py")
    assert why is not None and why.startswith(f"Not written: {junk} holds ';'")
    for odd in ('a"b.txt', "notes[1].md", "x|y", "a?.txt", "tab\there.txt", "it's.txt", "notes.md:4", "src/a.py:3:7"):
        assert refused("write_file", odd, False, "make a file") is not None, odd
    for fine in ("notes.txt", "docs/intro.md", "my notes (old).txt", "a,b.csv", "v1.2:final.txt", "ünï.txt",
                 "#todo.md", "a b.txt"):
        assert refused("write_file", fine, False, "make a file") is None, fine
    assert refused("write_file", "it's.txt", False, "write it's.txt") is None  # the person's own name
    assert refused("write_file", "notes.md:4", False, "make a file") == notices.ODD_NAME_REFUSED.format(
        path="notes.md:4", char="'.md:4'")  # a line's place, as a search shows it
    assert refused("write_file", "x|y", True, "make a file") is None  # there already: not made new
    assert refused("edit_file", "x|y", False, "make a file") is None
    assert notices.card_end(refused("write_file", "x|y", False, "")) == (
        "rule", "Not run: the agent was making a file named x|y, which you did not ask for.")


async def test_a_small_models_new_file_of_an_odd_name_is_refused_and_the_next_written(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {})
    d.backend.push(call("write_file", path="list}},'response'.txt", content="milk\n"),
                   call("write_file", path="list.txt", content="milk\n"), {"text": "Wrote list.txt."})
    await conv.send_message("make a shopping list with milk")
    await wait_state(conv, "idle", "error")
    assert [(c.tool, c.state) for c in cards(conv)] == [("write_file", "error"), ("write_file", "done")]
    assert sorted(p.name for p in folder.iterdir()) == ["list.txt"]
    assert conv.info.end_reason == "answered"


def test_a_new_files_own_name_as_its_text_is_refused_though_the_request_names_the_file():
    refused = guards.name_refused
    asked = "create guide/start.md with a heading Start"
    for text in ("Start.md", "start.md", "START.MD\n"):
        assert refused("write_file", {"path": "guide/start.md", "content": text}, asked) is not None, text
    # Another file's name the request gives is the person's text: it stays allowed.
    assert refused("write_file", {"path": "list.txt", "content": "start.md"}, "put start.md in list.txt") is None
    assert refused("write_file", {"path": "guide/start.md", "content": "# Start"}, asked) is None


def test_an_edit_of_spaces_only_is_refused_unless_the_request_asks_about_spacing():
    refused = guards.spaces_only_refused

    def edit(*pairs: tuple[str, str]) -> dict:
        return {"path": "pkg/mod.py", "edits": [{"old_text": o, "new_text": n} for o, n in pairs]}

    asked = "the message says Wolrd, fix it"
    for pairs in ([("    return 'Wolrd'", "   return 'Wolrd'")], [("x = 1\n\n", "x = 1\n")],
                  [("a=1", "a = 1"), ("\tb", "    b")]):
        why = refused("edit_file", edit(*pairs), asked)
        assert why == notices.SPACES_ONLY_REFUSED.format(path="pkg/mod.py"), pairs
        assert notices.card_end(why) == ("rule", "Not run: the edit changed only spaces or line breaks in "
                                                 "pkg/mod.py, which you did not ask for.")
    assert refused("edit_file", edit(("    return 'Wolrd'", "    return 'World'")), asked) is None
    # One edit of a word beside one of spaces is a change.
    assert refused("edit_file", edit(("a=1", "a = 1"), ("b = 'Wolrd'", "b = 'World'")), asked) is None
    for spacing in ("indent the body with four spaces", "remove the blank line", "strip trailing whitespace",
                    "format mod.py", "use tabs"):
        assert refused("edit_file", edit(("x = 1\n\n", "x = 1\n")), spacing) is None, spacing
    assert refused("write_file", {"path": "a.py", "content": "x"}, asked) is None
    assert refused("edit_file", {"path": "a.py", "edits": "x"}, asked) is None


async def test_a_small_models_edit_of_spaces_only_is_refused_and_the_real_fix_made(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"hello.py": "def hi():\n    return 'Wolrd'\n"})
    d.backend.push(call("edit_file", path="hello.py", edits=[{"old_text": "    return 'Wolrd'",
                                                              "new_text": "   return 'Wolrd'"}]),
                   call("edit_file", path="hello.py", edits=[{"old_text": "    return 'Wolrd'",
                                                              "new_text": "    return 'World'"}]),
                   {"text": "hello.py returns 'World' now."})
    await conv.send_message("hello.py says Wolrd, fix the typo")
    await wait_state(conv, "idle", "error")
    assert [(c.tool, c.state) for c in cards(conv)] == [("edit_file", "error"), ("edit_file", "done")]
    assert (folder / "hello.py").read_text() == "def hi():\n    return 'World'\n"
    # The refused edit is not offered again: its new_text is ruled out of the next round's.
    new_text = dict(d.backend.turns[1].shapes)["edit_file"]["properties"]["edits"]["items"]["properties"]["new_text"]
    assert "   return 'Wolrd'" in str(new_text["not"])


def test_the_values_a_request_asks_a_file_to_take():
    from actors.runs.agent.small.steps import target_values

    assert target_values("in hues.py set CYAN to '#00ffff' and PINK to \"#ff88cc\"") == ["#00ffff", "#ff88cc"]
    assert target_values("change TIMEOUT to 45 in net.cfg") == ["45"]
    assert target_values("make it `LEVEL = 3`") == []  # the quoted text is the whole line, not after `to`
    assert target_values("LIMIT = 250 please") == ["250"]
    assert target_values("fix the crash on line 12 of app.py") == []  # a number only referred to
    assert target_values("rename 'old' in 'a.txt' to 'new'") == ["new"]
    assert target_values("point the link to 'docs/guide.md'") == []  # a file's name
    assert target_values("turn verbose to True in run.py") == ["True"]  # a value of code's own
    assert target_values("is it true that it runs") == []  # a word of prose


def test_an_edit_with_none_of_the_values_the_request_asks_for_is_refused():
    refused = guards.value_missing_refused
    text = "CYAN = 'cyan'\nPINK = 'pink'\n"
    asked = "in hues.py set CYAN to '#00ffff' and PINK to '#ff88cc'"

    def edit(old: str, new: str) -> dict:
        return {"path": "hues.py", "edits": [{"old_text": old, "new_text": new}]}

    for new in ("PINK = PINK", "CYAN = CYAN", "CYAN = 'teal'"):
        why = refused("edit_file", edit("CYAN = 'cyan'", new), asked, text)
        assert why == notices.VALUE_MISSING_REFUSED.format(path="hues.py", values="#00ffff, #ff88cc"), new
        assert notices.card_end(why) == ("rule", "Not run: the edit of hues.py held none of what you asked for "
                                                 "(#00ffff, #ff88cc).")
    assert refused("edit_file", edit("CYAN = 'cyan'", "CYAN = '#00ffff'"), asked, text) is None
    # One value placed, the edit must hold the other.
    placed = "CYAN = '#00ffff'\nPINK = 'pink'\n"
    assert refused("edit_file", edit("PINK = 'pink'", "PINK = PINK"), asked, placed) is not None
    assert refused("edit_file", edit("PINK = 'pink'", "PINK = \"#ff88cc\""), asked, placed) is None
    done = "CYAN = '#00ffff'\nPINK = '#ff88cc'\n"
    assert refused("edit_file", edit("PINK = '#ff88cc'", "PINK = PINK"), asked, done) is None  # all there
    assert refused("edit_file", edit("CYAN = 'cyan'", ""), asked, text) is None  # a removal
    assert refused("edit_file", edit("CYAN = 'cyan'", "x"), "tidy hues.py", text) is None  # no value asked
    assert refused("edit_file", edit("CYAN = 'cyan'", "x"), asked, None) is None  # the file not read
    assert refused("write_file", {"path": "hues.py", "content": "x"}, asked, text) is None


async def test_a_small_models_edit_without_the_asked_value_is_refused_and_the_next_made(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"net.cfg": "TIMEOUT = 10\nRETRIES = 2\n"})
    d.backend.push(call("read_file", path="net.cfg"),
                   call("edit_file", path="net.cfg", edits=[{"old_text": "TIMEOUT = 10", "new_text": "TIMEOUT = 1"}]),
                   call("edit_file", path="net.cfg", edits=[{"old_text": "TIMEOUT = 10", "new_text": "TIMEOUT = 45"}]),
                   {"text": "TIMEOUT is 45 in net.cfg."})
    await conv.send_message("change TIMEOUT to 45 in net.cfg")
    await wait_state(conv, "idle", "error")
    assert [(c.tool, c.state) for c in cards(conv)] == [("read_file", "done"), ("edit_file", "error"),
                                                        ("edit_file", "done")]
    assert "45" in cards(conv)[1].result and (folder / "net.cfg").read_text() == "TIMEOUT = 45\nRETRIES = 2\n"
