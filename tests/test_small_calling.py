"""A question of what a function returns for given values, answered by calling it
(actors/runs/agent/small/calling.py): the request read, the defining module found,
the whole command held, run, and its output answered from. The run-level test uses the
scripted backend made to say it is small, and the real shell."""

from __future__ import annotations

import json
import re

from llama_cpp.llama_grammar import LlamaGrammar

from actors.model.backends.generic_grammar import generic_schema, schema_to_gbnf, strict_strings
from actors.runs.agent.small import calling
from tests.test_plan_mode import cards
from tests.test_small_steps import call, left_open, small_project
from tests.waiting import wait_state


def test_the_function_and_its_values_are_read_from_the_request():
    asked = calling.asked_call
    assert asked("what does pick_one return for ['x', 'y']?") == ("pick_one", "['x', 'y']")
    assert asked("What would scale(3, factor=2) give") == ("scale", "3, factor=2")
    assert asked("what's tidy('  a b ')") == ("tidy", "'  a b '")
    assert asked("what does tidy return when given ' q '?") == ("tidy", "' q '")
    assert asked("what is area((1, 2), 3.5)?") == ("area", "(1, 2), 3.5")
    assert asked('what is tidy("a")') == ("tidy", "'a'")  # as ast writes it back: no double quote
    # No values, values that are no literals, or characters the shell would read.
    for no in ("what does tidy return", "what does tidy return for x", "what does tidy return for 2 and 3",
               "what does tidy return for open('f')", "what's tidy('$HOME')", 'what is tidy("it\'s")',
               "what does tidy return for *args", "where is tidy defined?", "fix tidy('a')"):
        assert asked(no) is None, no


def test_values_written_in_words_are_read_with_the_functions_parameters():
    asked, params = calling.asked_call, ["width", "depth"]
    assert asked("what does area hand back for width 3 and depth 7", params) == ("area", "3, 7")
    assert asked("what does area spit out with a depth of 7 and a width of 3?", params) == ("area", "3, 7")
    assert asked("what does area return for 3 and 7", params) == ("area", "3, 7")
    assert asked("what would area give for depth 7", params) == ("area", "depth=7")
    assert asked("what does area come back with if you pass it depth=7, width=3", params) == \
        ("area", "depth=7, width=3")
    assert asked("what does area return for -3 and 2.5", params) == ("area", "-3, 2.5")
    for no in ("what does area return for 1, 2 and 3",  # more values than parameters
               "what does area return for height 3 and depth 7",  # a name that is no parameter
               "what does area return for width 3 and 7",  # named and not: which is which is not said
               "what does area return for width 3 and width 4",
               "what does area return for three and seven", "how does area work for 3 and 7"):
        assert asked(no, params) is None, no


def test_the_defining_module_is_the_one_file_that_defines_it_at_its_top_level(tmp_path):
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop/prices.py").write_text("def total(xs):\n    return sum(xs)\n")
    (tmp_path / "other.py").write_text("class A:\n    def total(self):\n        pass\n")  # a method: not it
    (tmp_path / "two.py").write_text("def twice(x):\n    return 2 * x\n")
    (tmp_path / "again.py").write_text("def twice(x):\n    return x + x\n")
    (tmp_path / "bad-name.py").write_text("def odd(x):\n    return x\n")
    assert calling.defining_module(tmp_path, "total") == "shop.prices"
    assert calling.defining_module(tmp_path, "twice") is None  # two files: which is meant is not known
    assert calling.defining_module(tmp_path, "odd") is None  # no module can be imported by that name
    assert calling.defining_module(tmp_path, "missing") is None
    assert calling.call_commands("what does total return for [3, 4]?", tmp_path) == \
        {"python3": ['python3 -c "from shop.prices import total; print(total([3, 4]))"']}
    (tmp_path / "shop/tax.py").write_text("async def x():\n    pass\n\n\n"
                                          "def levy(net, rate=0.2):\n    return net * rate\n")
    assert calling.call_commands("what does levy give back for a rate of 0.5 and net 10?", tmp_path) == \
        {"python3": ['python3 -c "from shop.tax import levy; print(levy(10, 0.5))"']}
    assert calling.call_commands("what does levy give back for a cost of 10?", tmp_path) == {}


async def test_asked_what_a_function_returns_the_run_calls_it_then_answers(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {
        "text/tidy.py": "def squash(s):\n    return '-'.join(s.split()).lower()\n"})
    command = "python3 -c \"from text.tidy import squash; print(squash(' Big  Red Dog '))\""
    d.backend.push(call("exec_shell_command", command=command), {"text": "It returns big-red-dog."})
    await conv.send_message("what does squash return for ' Big  Red Dog '?")
    await wait_state(conv, "idle", "error")
    first, second = d.backend.turns
    assert first.tool_choice == "required"
    assert left_open(first) == {"exec_shell_command"}
    shape = dict(first.shapes)["exec_shell_command"]
    pattern = shape["properties"]["command"]["pattern"]
    # The pattern reads the JSON string's text (a quote written \"), as llama.cpp's grammar does.
    assert re.fullmatch(pattern, json.dumps(command)[1:-1]) and not re.fullmatch(pattern, command)
    spec = next(t for t in first.tools if t.name == "exec_shell_command")
    schema = generic_schema((spec,), required=True, strict=True, shapes=(("exec_shell_command", shape),))
    LlamaGrammar.from_string(strict_strings(schema_to_gbnf(schema)), verbose=False)
    (card,) = cards(conv)
    assert card.state == "done" and "big-red-dog" in card.result
    assert second.tool_choice == "none" and conv.info.end_reason == "answered"
    assert second.reply_starts == ("big-red-dog",)  # what it printed (SmolLM2 quoted the request's value)
