"""A small model's first search (actors/runs/agent/small/lookup.py): a change that
names no file, or a question about the code, begins with a search held to the
request's own words that the workspace has; then edit_file may name a file the search
found. The run-level tests use the scripted backend made to say it is small."""

from __future__ import annotations

from actors.runs.agent.small import lookup
from tests.test_small_steps import call, small_project
from tests.waiting import wait_state


def test_the_words_a_search_may_look_for_are_the_requests_own():
    words = lookup.request_words
    assert words("the dog's name is spelled dgo, please fix it") == [("dog", False), ("name", False),
                                                                       ("spelled", False), ("dgo", False)]
    # Written like a name in code: a capital after the first word, an underscore, a digit, a quoted word.
    assert words("Where is the Parser class defined?") == [("Parser", True)]
    assert words("what does `to_snake` return for 'AbcDef'?") == [("to_snake", True), ("AbcDef", True),
                                                                  ("return", False)]
    assert words("rename main.py's run_all to go") == [("rename", False), ("run_all", True)]  # not the file
    assert words("fix the typo in the code") == []  # only verbs of asking


def test_the_words_offered_are_those_the_workspace_has_names_first_then_the_rarest():
    pick = lookup.search_words
    words = [("dog", False), ("Parser", True), ("name", False), ("parse_it", True)]
    assert pick(words, {"dog": 1, "Parser": 3, "name": 9, "parse_it": 1}) == ["parse_it", "Parser"]
    assert pick(words, {"dog": 0, "Parser": 0, "name": 9, "parse_it": 0}) == ["name"]
    plain = [("alpha", False), ("beta", False), ("gamma", False), ("delta", False)]
    assert pick(plain, {"alpha": 8, "beta": 2, "gamma": 4, "delta": 5}) == ["beta", "gamma"]  # twice the rarest
    assert pick(plain, {}) == []


def test_the_files_a_word_is_in_are_counted_as_whole_words_in_text_files(tmp_path):
    (tmp_path / "a.py").write_text("class Parser:\n    pass\n")
    (tmp_path / "b.py").write_text("from a import Parser  # parser\nparse_it = 1\n")
    (tmp_path / "c.bin").write_bytes(b"\0Parser")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "d.py").write_text("Parser\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "e.js").write_text("Parser\n")
    (tmp_path / "big.txt").write_text("Parser " * (lookup.LOOKUP_FILE_BYTES // 4))
    counts = lookup.file_counts(tmp_path, ["Parser", "parse", "parse_it", "nothing"])
    assert counts == {"Parser": 2, "parse": 0, "parse_it": 1, "nothing": 0}
    assert lookup.file_counts(tmp_path / "missing", ["Parser"]) == {"Parser": 0}


def test_the_files_read_for_a_word_stop_at_a_budget_of_bytes(tmp_path, monkeypatch):
    for n in range(6):
        (tmp_path / f"f{n}.txt").write_text("Parser\n" + "x" * 1000)
    assert lookup.file_counts(tmp_path, ["Parser"]) == {"Parser": 6}
    monkeypatch.setattr(lookup, "LOOKUP_BYTES", 2500)  # the third file passes it: none after is read
    assert lookup.file_counts(tmp_path, ["Parser"]) == {"Parser": 3}
    monkeypatch.setattr(lookup, "LOOKUP_FILES", 2)
    assert lookup.file_counts(tmp_path, ["Parser"]) == {"Parser": 2}


async def test_a_change_that_names_no_file_searches_first_then_edits_what_it_found(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"pets.py": "def pet():\n    return 'Rex the dgo'\n",
                                                     "other.py": "x = 1\n"})
    d.backend.push(call("grep_search", pattern="dgo"),
                   call("edit_file", path="pets.py", edits=[{"old_text": "    return 'Rex the dgo'",
                                                             "new_text": "    return 'Rex the dog'"}]),
                   {"text": "Fixed pets.py."})
    await conv.send_message("the dog's name is spelled dgo, please fix it")
    await wait_state(conv, "idle", "error")
    first, second, third = d.backend.turns
    assert first.tool_choice == "required"
    assert {t.name for t in first.tools} - {name for name, args in first.avoid if args is None} == {"grep_search"}
    (tool, shape), = first.shapes
    assert tool == "grep_search" and shape["properties"] == {"pattern": {"enum": ["dgo"]}}
    # The search found pets.py: the next round is an edit there, unread, of the line found.
    assert second.tool_choice == "required"
    assert {t.name for t in second.tools} - {name for name, args in second.avoid if args is None} == {"edit_file"}
    edit = dict(second.shapes)["edit_file"]
    assert edit["properties"]["path"] == {"const": "pets.py"}
    assert edit["properties"]["edits"]["items"]["properties"]["old_text"]["enum"] == ["    return 'Rex the dgo'"]
    assert (folder / "pets.py").read_text() == "def pet():\n    return 'Rex the dog'\n"
    assert third.tool_choice == "none" and conv.info.end_reason == "answered"


async def test_a_search_that_finds_nothing_leaves_the_next_round_free(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"pets.py": "def pet():\n    return 'Rex the dgo'\n"})
    d.backend.push(call("grep_search", pattern="dgo", include="*.md"), {"text": "Not found."})
    await conv.send_message("the dog's name is spelled dgo, please fix it")
    await wait_state(conv, "idle", "error")
    assert [t.tool_choice for t in d.backend.turns] == ["required", None]


async def test_a_question_about_the_code_searches_for_the_name_it_asks_about(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"read.py": "class Parser:\n    pass\n",
                                                "use.py": "from read import Parser\n"})
    d.backend.push(call("grep_search", pattern="Parser"), {"text": "read.py defines it."})
    await conv.send_message("where is the Parser class defined?")
    await wait_state(conv, "idle", "error")
    (tool, shape), = d.backend.turns[0].shapes
    assert tool == "grep_search" and shape["properties"] == {"pattern": {"enum": ["Parser"]}}
    assert conv.info.end_reason == "answered"


async def test_no_word_the_workspace_has_leaves_the_search_free(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"pets.py": "x = 1\n"})
    d.backend.push(call("grep_search", pattern="zebra"), {"text": "Nothing has zebra."})
    await conv.send_message("where is the zebra?")
    await wait_state(conv, "idle", "error")
    assert d.backend.turns[0].tool_choice == "required" and not d.backend.turns[0].shapes
