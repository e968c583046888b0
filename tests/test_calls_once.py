"""No call twice while nothing changed, in any run (issue 30; actors/runs/agent/ledger.py
`Ledger.made`, actors/runs/agent/calls.py): a model that asks for the same search 25
times in a row (the bundled model did in the web UI, "Search for is a test.This" over
four minutes) gets it run once, then ruled out of the next round's grammar and refused
by the run, in a plain run, a resumed run, a helper's run and in plan mode; a change in
between lets it run again."""

from __future__ import annotations

from actors import notices
from actors.record.items import Item
from actors.runs.agent.ledger import REPEAT_FAILURE_LIMIT
from tests.test_subagents import task
from tests.waiting import wait_state

SEARCH = {"name": "grep_search", "arguments": {"pattern": "is a test"}}
# The same call written otherwise: its keys in another order, other spacing.
SEARCH_AGAIN = {"name": "grep_search", "arguments": '{ "pattern" :  "is a test"  }'}
MADE = ("grep_search", {"pattern": "is a test"})


async def project(d, tmp_path, mode: str = "full"):
    folder = tmp_path / "proj"
    folder.mkdir(exist_ok=True)
    (folder / "notes.txt").write_text("this is a test\n")
    ws = await d.hub.add_workspace(str(folder))
    return folder, await d.hub.create(workspace=ws.id, mode=mode)


def searches(items) -> list:
    return [i for i in items if i.kind == "tool" and i.tool == "grep_search"]


def ran_once(items) -> None:
    """The search ran once; every other was refused, not run, and said why."""
    found = searches(items)
    assert [c.state for c in found][:1] == ["done"] and "notes.txt" in found[0].result
    assert len(found) > 1 and all(c.state == "error" and c.result == notices.MADE_ALREADY for c in found[1:])


async def test_the_same_search_25_times_runs_once_in_a_plain_run(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path)
    d.backend.push({"tool_calls": [SEARCH]}, {"tool_calls": [SEARCH_AGAIN]}, {"tool_calls": [SEARCH], "repeat": 23},
                   {"text": "Done."})
    await conv.send_message("search for is a test")
    await wait_state(conv, "idle", "error")
    ran_once(conv.items)
    # Refused as often as any identical failure may be, then the run ends stuck.
    assert len(searches(conv.items)) == 1 + REPEAT_FAILURE_LIMIT and conv.info.end_reason == "stuck"
    assert all(MADE in t.avoid for t in d.backend.turns[1:])  # and ruled out of each next round's grammar


async def test_a_change_in_between_lets_the_search_run_again(real_tools, tmp_path):
    d = real_tools
    folder, conv = await project(d, tmp_path)
    write = {"name": "write_file", "arguments": {"path": "more.txt", "content": "is a test too\n"}}
    d.backend.push({"tool_calls": [SEARCH]}, {"tool_calls": [SEARCH]}, {"tool_calls": [write]},
                   {"tool_calls": [SEARCH]}, {"text": "Done."})
    await conv.send_message("search, write, search")
    await wait_state(conv, "idle", "error")
    assert [c.state for c in searches(conv.items)] == ["done", "error", "done"]
    assert "more.txt" in searches(conv.items)[-1].result and conv.info.end_reason == "answered"
    assert MADE not in d.backend.turns[3].avoid and (folder / "more.txt").exists()


async def test_a_resumed_run_does_not_make_again_what_the_stopped_one_made(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path, mode="ask")
    note = {"name": "write_file", "arguments": {"path": "n.txt", "content": "x"}}
    d.backend.push({"tool_calls": [SEARCH]}, {"tool_calls": [note]})
    await conv.send_message("search for is a test")
    await wait_state(conv, "waiting")  # the write waits for the person
    await conv.stop()
    d.backend.push({"tool_calls": [SEARCH], "repeat": 25}, {"text": "Done."})
    await conv.resume()
    await wait_state(conv, "idle", "error")
    ran_once(conv.items)
    assert MADE in d.backend.turns[2].avoid  # the resumed run's first round rules it out


async def test_a_helpers_run_makes_the_same_search_once(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path)
    d.backend.push({"when": "look", "tool_calls": [task("find is a test")]},
                   {"when": "find is a test", "tool_calls": [SEARCH], "repeat": 25},
                   {"when": "find is a test", "text": "In notes.txt."},
                   {"when": "look", "text": "Found."})
    await conv.send_message("look")
    await wait_state(conv, "idle", "error")
    card = next(i for i in conv.items if i.kind == "tool" and i.tool == "task")
    ran_once([Item.from_json(i) for i in card.task["items"]])


async def test_plan_mode_makes_the_same_search_once(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path, mode="ask")
    d.backend.push({"tool_calls": [SEARCH], "repeat": 25})
    await conv.send_message("plan a change", plan=True)
    await wait_state(conv, "idle", "error")
    ran_once(conv.items)
    assert len(searches(conv.items)) == 1 + REPEAT_FAILURE_LIMIT and conv.info.end_reason == "stuck"
    assert conv.info.plan_mode is True


async def test_a_plans_file_written_is_no_change_that_lets_a_search_run_again(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path, mode="ask")
    plan = {"name": "write_file", "arguments": {"path": str(d.data / "agent" / "plans" / f"{conv.id}.md"),
                                                "content": "# Plan\n1. x\n"}}
    d.backend.push({"tool_calls": [SEARCH]}, {"tool_calls": [plan]}, {"tool_calls": [SEARCH]},
                   {"tool_calls": [{"name": "read_file", "arguments": {"path": "nothing.txt"}}], "repeat": 30})
    await conv.send_message("plan a change", plan=True)
    await wait_state(conv, "idle", "error")
    assert [c.state for c in searches(conv.items)] == ["done", "error"]
