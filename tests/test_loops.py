"""A model that loops, and calls that failed (actors/runs/agent/run.py): an answer that
repeats one unit without end is cut, told to the model and asked again, a few times at
most; a failed call is one the next round's grammar rules out; a todo list written
again unchanged is refused."""

from __future__ import annotations

import json

from actors import notices
from actors.model.backends.repeats import MIN_SPAN
from actors.runs.agent.ledger import AVOIDED_CALLS, LOOPS_IN_A_ROW
from actors.runs.agent.run_tools import plans
from actors.runs.agent.run_tools import todos_and_questions as run_tools
from tests.test_plan_mode import cards, project
from tests.waiting import wait_state

LOOPING_ARGS = {"text": "1." * 400}
# The bundled model's size: a small model the run leads, whose calls' arguments are
# watched as closely as its answers (it loops inside them).
LED_PARAMS = 135_000_000


def led(daemon) -> None:
    daemon.backend.n_params = LED_PARAMS


def notice_texts(conv) -> list[str]:
    return [i.text for i in conv.items if i.kind == "notice"]


async def test_a_call_that_loops_is_cut_told_to_the_model_and_the_run_asks_again(daemon):
    led(daemon)
    daemon.backend.push({"tool_calls": [{"name": "echo", "arguments": LOOPING_ARGS}]},
                        {"tool_calls": [{"name": "echo", "arguments": {"text": "short"}}]},
                        {"text": "Echoed."})
    conv = await daemon.hub.create()
    await conv.send_message("echo a lot")
    await wait_state(conv, "idle", "error")
    turns = daemon.backend.turns
    assert len(turns) == 3 and all(t.stop_repeats and t.watch_calls_closely for t in turns)
    assert daemon.echo.calls == [{"text": "short"}]  # the looping call never ran
    told = notices.LOOPED.format(unit="1.")
    assert told in notice_texts(conv)
    notice = next(i for i in conv.items if i.kind == "notice" and i.text == told)
    assert notice.for_model and notice.level == "warn"
    assert told in turns[1].messages[-1]["content"]  # the model reads it before its next round
    assert [c.state for c in cards(conv)] == ["done"]  # the cut call's card is not kept
    assert conv.info.end_reason == "answered" and conv.items[-1].text == "Echoed."


async def test_the_tool_whose_call_looped_is_left_out_of_the_next_round_only(daemon):
    """A small model that looped inside a call writes the same call again next round
    (SmolLM2 did so with todo_write in each of four tries): the next round's grammar
    leaves that tool out, so the model does something else; the round after has it back."""
    led(daemon)
    daemon.backend.push({"tool_calls": [{"name": "echo", "arguments": LOOPING_ARGS}]},
                        {"tool_calls": [{"name": "echo", "arguments": {"text": "other"}}]},
                        {"tool_calls": [{"name": "echo", "arguments": {"text": "again"}}]},
                        {"text": "Done."})
    conv = await daemon.hub.create()
    await conv.send_message("echo")
    await wait_state(conv, "idle", "error")
    other = ("echo", {"text": "other"})
    assert [t.avoid for t in daemon.backend.turns] == [(), (("echo", None),), (other,),
                                                       (other, ("echo", {"text": "again"}))]
    assert daemon.echo.calls == [{"text": "other"}, {"text": "again"}]
    assert conv.info.end_reason == "answered"


async def test_answers_that_loop_round_after_round_end_the_run_stuck(daemon):
    daemon.backend.push(*[{"text": "ha" * 300}] * (LOOPS_IN_A_ROW + 1))
    conv = await daemon.hub.create()
    await conv.send_message("laugh")
    await wait_state(conv, "idle", "error")
    assert len(daemon.backend.turns) == LOOPS_IN_A_ROW
    assert conv.info.end_reason == "stuck"
    assert notices.LOOPING_STUCK.format(n=LOOPS_IN_A_ROW, unit="ha") in notice_texts(conv)
    # Each cut answer keeps what was written up to the cut, far less than asked.
    answers = [i.text for i in conv.items if i.kind == "assistant"]
    assert len(answers) == LOOPS_IN_A_ROW and all(MIN_SPAN <= len(a) < MIN_SPAN + 8 for a in answers), answers


async def test_a_loop_between_good_rounds_does_not_count_towards_stuck(daemon):
    led(daemon)
    loop = {"tool_calls": [{"name": "echo", "arguments": LOOPING_ARGS}]}
    good = [{"tool_calls": [{"name": "echo", "arguments": {"text": f"ok {n}"}}]} for n in range(2)]
    daemon.backend.push(*[loop] * (LOOPS_IN_A_ROW - 1), good[0], *[loop] * (LOOPS_IN_A_ROW - 1), good[1],
                        {"text": "Done."})
    conv = await daemon.hub.create()
    await conv.send_message("go")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "answered" and len(daemon.echo.calls) == 2


async def test_a_failed_call_is_one_the_rest_of_the_run_must_not_make_again(daemon):
    failing = {"text": "x", "fail": "no such thing"}
    daemon.backend.push({"tool_calls": [{"name": "echo", "arguments": failing},
                                        {"name": "echo", "arguments": {"text": "fine"}}]},
                        {"tool_calls": [{"name": "echo", "arguments": {"text": "again"}}]},
                        {"text": "Done."})
    conv = await daemon.hub.create()
    await conv.send_message("go")
    await wait_state(conv, "idle", "error")
    avoid = [t.avoid for t in daemon.backend.turns]
    # The failed one, for the rest of the run; the reads made, while nothing changed.
    fine, again = ("echo", {"text": "fine"}), ("echo", {"text": "again"})
    assert avoid == [(), (("echo", failing), fine), (("echo", failing), fine, again)]


async def test_a_read_made_is_ruled_out_until_a_change_runs(daemon, tmp_path):
    """A read that ran needs no second run while nothing changed (its result is in the
    conversation): the next rounds' grammar rules it out; a change that ran clears the
    reads, since one may then answer otherwise."""
    folder = tmp_path / "ws"
    folder.mkdir()
    ws = await daemon.hub.add_workspace(str(folder))
    read = {"name": "echo", "arguments": {"text": "look"}}
    change = {"name": "note", "arguments": {"path": "n.txt", "text": "x"}}
    daemon.backend.push({"tool_calls": [read]}, {"tool_calls": [change]}, {"tool_calls": [read]}, {"text": "Done."})
    conv = await daemon.hub.create(workspace=ws.id, mode="full")
    await conv.send_message("look, note, look again")
    await wait_state(conv, "idle", "error")
    looked, noted = ("echo", {"text": "look"}), ("note", {"path": "n.txt", "text": "x"})
    # The change made is one not to make again either, while nothing else changed.
    assert [t.avoid for t in daemon.backend.turns] == [(), (looked,), (noted,), (noted, looked)]
    assert conv.info.end_reason == "answered" and (folder / "n.txt").read_text() == "x"


async def test_the_todo_list_written_again_unchanged_is_refused_and_avoided(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path)
    todos = {"todos": [{"content": "Read app.py", "status": "in_progress"}]}
    write = {"name": "todo_write", "arguments": todos}
    empty = {"name": "todo_write", "arguments": {"todos": []}}
    d.backend.push({"tool_calls": [empty]}, {"tool_calls": [write]}, {"tool_calls": [write]}, {"text": "Listed."})
    await conv.send_message("list it")
    await wait_state(conv, "idle", "error")
    states = [(c.state, c.result) for c in cards(conv)]
    assert states[0] == ("error", run_tools.todo_unchanged(()))  # empty, and empty already
    assert states[1][0] == "done"
    assert states[2] == ("error", run_tools.todo_unchanged(conv.info.todos))
    # After the list is written, the next round may not write one at all (a local
    # grammar leaves the tool out); after the refusal, not that list again.
    empty_list = ("todo_write", {"todos": []})
    assert [t.avoid for t in d.backend.turns] == [(), (empty_list,), (empty_list, ("todo_write", None)),
                                                  (empty_list, ("todo_write", todos))]
    assert plans.AFTER_TODOS not in states[1][1]  # not planning


async def test_while_planning_the_written_list_says_what_ends_the_planning(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path)
    write = {"name": "todo_write", "arguments": {"todos": [{"content": "Read app.py", "status": "pending"}]}}
    propose = {"name": "exit_plan_mode", "arguments": {"plan": "1. Read"}}
    d.backend.push({"tool_calls": [write]}, {"tool_calls": [propose]})
    await conv.send_message("plan it", plan=True)
    await wait_state(conv, "waiting")
    assert cards(conv)[0].result.endswith(plans.AFTER_TODOS)
    assert d.backend.turns[1].avoid == (("todo_write", None),)


async def test_a_call_made_twice_in_one_answer_runs_once(daemon):
    same = {"name": "echo", "arguments": {"text": "hi"}}
    failing = {"name": "echo", "arguments": {"fail": "no"}}
    daemon.backend.push({"tool_calls": [same, same, {"name": "echo", "arguments": {"text": "other"}}, same]},
                        {"tool_calls": [failing] * 4}, {"text": "Done."})
    conv = await daemon.hub.create()
    await conv.send_message("go")
    await wait_state(conv, "idle", "error")
    # The reads of one answer run side by side: in either order.
    ran = [json.dumps(c, sort_keys=True) for c in daemon.echo.calls]
    assert sorted(ran[:2]) == ['{"text": "hi"}', '{"text": "other"}'] and ran[2:] == ['{"fail": "no"}']
    states = [(c.state, c.result) for c in cards(conv)]
    copy = ("error", notices.SAME_CALL_IN_ANSWER)
    assert states[:4] == [("done", "hi"), copy, ("done", "other"), copy]
    # Four copies of one failing call are one failure, not the three in a row that stop a run.
    assert states[4:] == [("error", "no"), copy, copy, copy]
    assert conv.info.end_reason == "answered"
    assert daemon.backend.turns[2].avoid == (("echo", {"fail": "no"}), ("echo", {"text": "hi"}),
                                             ("echo", {"text": "other"}))


async def test_the_calls_to_avoid_are_the_runs_latest_few(daemon):
    failing = [{"name": "echo", "arguments": {"fail": f"no {n}"}} for n in range(AVOIDED_CALLS + 2)]
    daemon.backend.push(*[{"tool_calls": [call]} for call in failing], {"text": "Done."})
    conv = await daemon.hub.create()
    await conv.send_message("go")
    await wait_state(conv, "idle", "error")
    last = daemon.backend.turns[-1].avoid
    assert last == tuple(("echo", c["arguments"]) for c in failing[-AVOIDED_CALLS:])


async def test_the_todo_list_rests_after_it_is_written_and_a_plan_waits_for_its_steps(real_tools, tmp_path):
    """What a local grammar leaves out, read from the record: todo_write while the last
    call wrote the list (a new message too), exit_plan_mode while planning with no step."""
    d = real_tools
    _, conv = await project(d, tmp_path)
    write = {"name": "todo_write", "arguments": {"todos": [{"content": "Read app.py", "status": "pending"}]}}
    read = {"name": "read_file", "arguments": {"path": "app.py"}}
    propose = {"name": "exit_plan_mode", "arguments": {"plan": "1. Read"}}
    d.backend.push({"tool_calls": [read]}, {"tool_calls": [write]}, {"text": "Listed."},
                   {"tool_calls": [read]}, {"tool_calls": [propose]})
    await conv.send_message("plan it", plan=True)
    await wait_state(conv, "idle", "waiting")
    await conv.send_message("now show it", plan=True)
    await wait_state(conv, "waiting")
    rest, no_plan = ("todo_write", None), ("exit_plan_mode", None)
    # The read made is ruled out for the rest of its run (not of the next message's).
    read_it = ("read_file", {"path": "app.py"})
    assert [t.avoid for t in d.backend.turns] == [(no_plan,), (read_it, no_plan), (read_it, rest), (rest,),
                                                  (read_it,)]


async def test_the_call_a_loop_cut_mid_way_is_not_run_nor_a_failure(daemon):
    """The local backend hands over the call it was writing when the loop was cut, its
    arguments unfinished: the run keeps the calls finished before it and drops that one
    (no 'not valid JSON' card, no failure to avoid), as the notice says."""
    cut = '{"text": "hi, hi, hi, h'  # unfinished: where the loop (told as "hi, ") was cut
    daemon.backend.push({"tool_calls": [{"name": "echo", "arguments": {"text": "first"}},
                                        {"name": "echo", "arguments": cut}], "repeated": "hi, "},
                        {"text": "Done."})
    conv = await daemon.hub.create()
    await conv.send_message("echo twice")
    await wait_state(conv, "idle", "error")
    assert daemon.echo.calls == [{"text": "first"}]
    assert [c.state for c in cards(conv)] == ["done"]  # the cut call's card is not kept, nor an error
    assert notices.LOOPED.format(unit="hi, ") in notice_texts(conv)
    # Nothing failed: the read made and, for the next round only, the tool whose call looped.
    assert daemon.backend.turns[1].avoid == (("echo", {"text": "first"}), ("echo", None))
    assert conv.info.end_reason == "answered"


async def test_a_small_local_model_makes_one_call_a_round(daemon):
    """A local model under ONE_CALL_PARAMS is held to one call a round; a larger one,
    or one whose size is not known, may make several."""
    from actors.runs.agent.small.size import SMALL_MODEL_PARAMS as ONE_CALL_PARAMS

    for size, parallel in ((135_000_000, False), (ONE_CALL_PARAMS, True), (0, True)):
        daemon.backend.n_params = size
        daemon.backend.push({"text": "Hi."})
        conv = await daemon.hub.create()
        await conv.send_message("hello")
        await wait_state(conv, "idle", "error")
        assert daemon.backend.turns[-1].parallel_calls is parallel, size


async def test_a_file_of_repeated_lines_is_content_for_a_model_that_is_not_led(real_tools, tmp_path):
    """A CSV of identical rows, a fixture, a separator block: a model the run does not
    lead (larger, or of unknown size) writes them whole; only its answer's text is
    watched closely. The same call from a led small model is cut as a loop."""
    rows = "id,name,qty\n" + "0,none,0\n" * 500  # 4.5 KiB, one row over and over
    write = {"name": "write_file", "arguments": {"path": "rows.csv", "content": rows}}
    for size, written in ((0, True), (2_000_000_000, True), (LED_PARAMS, False)):
        real_tools.backend.n_params = size
        # Led, the cut call is followed by answers (one may be sent back); it comes last.
        real_tools.backend.push({"tool_calls": [write]}, *[{"text": "Written."}] * (1 if written else 3))
        folder, conv = await project(real_tools, tmp_path, mode="full")
        (folder / "rows.csv").unlink(missing_ok=True)
        await conv.send_message("write the rows")
        await wait_state(conv, "idle", "error")
        last = real_tools.backend.turns[-1]
        assert last.stop_repeats and last.watch_calls_closely is (not written), size
        looped = [t for t in notice_texts(conv) if t.startswith(notices.LOOPED.split("{")[0])]
        if written:
            assert (folder / "rows.csv").read_text() == rows, size
            assert not looped, size
        else:
            assert not (folder / "rows.csv").exists()
            assert looped, notice_texts(conv)
