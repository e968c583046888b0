"""Goals (actors/runs/agent/run_tools/goals.py and carrier.py): a run works to reach its
goal, a completion is refused while todos are open and checked by a verifier turn."""

from __future__ import annotations

import json

import pytest

from actors import notices
from actors.errors import Busy
from actors.model.turns import TurnInput
from actors.record.items import Goal
from actors.runs.agent import history
from actors.runs.agent.run_tools import goals
from tests.waiting import wait_for, wait_state

DONE = {"name": "update_goal", "arguments": {"completed": True}}
BLOCKED = {"name": "update_goal", "arguments": {"blocked_reason": "no CI"}}


def verdict(complete: bool, *gaps: str) -> dict:
    # The verifier's turn is the one whose last user message starts "Goal:".
    return {"when": "Goal: ", "text": json.dumps({"complete": complete, "gaps": list(gaps)})}


async def goal_conv(daemon, tmp_path, mode: str = "full"):
    folder = tmp_path / "ws"
    folder.mkdir(exist_ok=True)
    ws = await daemon.hub.add_workspace(str(folder))
    return await daemon.hub.create(workspace=ws.id, mode=mode)


def cards(conv):
    return [i for i in conv.items if i.kind == "tool"]


def verifier_turns(backend) -> list[TurnInput]:
    return [t for t in backend.turns if t.answer_schema is not None]


async def test_a_checked_completion_ends_the_run_goal_complete(daemon, tmp_path):
    conv = await goal_conv(daemon, tmp_path)
    daemon.backend.push({"when": "tests", "tool_calls": [{"name": "echo", "arguments": {"text": "ran tests"}}]},
                        {"when": "tests", "tool_calls": [DONE]}, verdict(True))
    await conv.send_message("make the tests pass", goal="the tests pass")
    await wait_state(conv, "idle")
    assert conv.info.goal == Goal("the tests pass", "complete", None, True)
    assert conv.info.end_reason == "goal_complete" and conv.items[-1].end_reason == "goal_complete"
    assert cards(conv)[-1].result == notices.GOAL_COMPLETE
    (check,) = verifier_turns(daemon.backend)
    assert check.tools == () and check.answer_schema == goals.VERDICT_SCHEMA
    assert check.messages[0]["content"] == goals.VERIFIER_PROMPT
    assert "Goal: the tests pass" in check.messages[1]["content"] and "ran tests" in check.messages[1]["content"]
    assert len(daemon.backend.turns) == 3  # two rounds and the check: no round after the goal is reached
    assert "Your goal: the tests pass" in daemon.backend.turns[0].messages[0]["content"]
    assert "update_goal" in {t.name for t in daemon.backend.turns[0].tools}


async def test_gaps_found_send_the_model_back_to_work(daemon, tmp_path):
    conv = await goal_conv(daemon, tmp_path)
    daemon.backend.push({"when": "go", "tool_calls": [DONE]}, verdict(False, "README not updated"),
                        {"when": "go", "tool_calls": [{"name": "echo", "arguments": {"text": "readme"}}]},
                        {"when": "go", "tool_calls": [DONE]}, verdict(False, "still not"),
                        {"when": "go", "tool_calls": [DONE]})
    await conv.send_message("go", goal="docs are current")
    await wait_state(conv, "idle")
    first = cards(conv)[0]
    assert first.state == "error" and "README not updated" in first.result
    assert len(verifier_turns(daemon.backend)) == goals.VERIFIER_TURNS
    assert notices.GOAL_UNCHECKED.format(n=goals.VERIFIER_TURNS) in [i.text for i in conv.items]
    assert conv.info.goal.state == "complete" and conv.info.end_reason == "goal_complete"
    # The model read the gaps as the call's result.
    sent = [m for m in daemon.backend.turns[2].messages if m["role"] == "tool"]
    assert "README not updated" in sent[0]["content"]


async def test_completion_is_refused_while_todos_are_open(daemon, tmp_path):
    conv = await goal_conv(daemon, tmp_path)
    todos = {"todos": [{"content": "write", "status": "completed"}, {"content": "test", "status": "pending"}]}
    daemon.backend.push({"when": "go", "tool_calls": [{"name": "todo_write", "arguments": todos}, DONE]},
                        {"when": "go", "tool_calls": [BLOCKED]})
    await conv.send_message("go", goal="ship it")
    await wait_state(conv, "idle")
    refused = cards(conv)[1]
    assert refused.state == "error" and "test (pending)" in refused.result
    assert not verifier_turns(daemon.backend)
    assert conv.info.goal.state == "blocked" and conv.info.goal.reason == "no CI"
    assert conv.info.end_reason == "goal_blocked"


async def test_answers_without_calls_are_nudged_then_the_run_ends_stuck(daemon, tmp_path):
    conv = await goal_conv(daemon, tmp_path)
    daemon.backend.push(*[{"when": "go", "text": "I think it is fine."}] * 5)
    await conv.send_message("go", goal="the build is green")
    await wait_state(conv, "idle")
    nudges = [i for i in conv.items if i.kind == "notice" and i.for_model]
    assert len(nudges) == goals.NUDGES_IN_A_ROW
    assert conv.info.end_reason == "stuck" and conv.items[-1].end_reason == "stuck"
    assert len(daemon.backend.turns) == goals.NUDGES_IN_A_ROW + 1
    last = daemon.backend.turns[-1].messages
    assert last[-1]["role"] == "user" and "the build is green" in last[-1]["content"]
    assert history.well_formed(last) is None


async def test_without_verify_a_completion_counts_at_once(daemon, tmp_path):
    conv = await goal_conv(daemon, tmp_path)
    daemon.backend.push({"when": "go", "tool_calls": [DONE]})
    await conv.send_message("go", goal="done", verify=False)
    await wait_state(conv, "idle")
    assert not verifier_turns(daemon.backend) and conv.info.goal.state == "complete"


async def test_a_stop_in_the_verifier_turn_then_resume(daemon, tmp_path):
    conv = await goal_conv(daemon, tmp_path)
    daemon.backend.push({"when": "go", "tool_calls": [DONE]}, {"when": "Goal: ", "hang": True},
                        verdict(True))
    await conv.send_message("go", goal="green")
    await wait_for(lambda: len(verifier_turns(daemon.backend)) == 1)
    await conv.stop()
    assert conv.info.end_reason == "stopped" and conv.info.goal.state == "active"
    assert cards(conv)[0].state == "error"  # the call was running its check
    daemon.backend.push({"when": "go", "tool_calls": [DONE]})
    await conv.resume()
    await wait_state(conv, "idle")
    assert conv.info.goal.state == "complete" and conv.info.end_reason == "goal_complete"
    assert history.well_formed(daemon.backend.turns[-2].messages) is None


async def test_the_goal_is_set_between_messages(daemon, tmp_path):
    conv = await goal_conv(daemon, tmp_path)
    info = await conv.patch({"goal": "  a tidy repo ", "verify": False})
    assert info.goal == Goal("a tidy repo", "active", None, False)
    assert (await conv.patch({"verify": True})).goal.verify is True
    assert (await conv.patch({"goal": None})).goal is None
    daemon.backend.push({"hang": True})
    await conv.send_message("hang")
    with pytest.raises(Busy):
        await conv.patch({"goal": "x"})
    await conv.stop()


def test_a_verdict_that_cannot_be_read_is_not_a_completion():
    assert goals.parse_verdict('{"complete": true, "gaps": []}') == goals.Verdict(True, ())
    assert goals.parse_verdict('sure! {"complete": false, "gaps": ["x"]}') == goals.Verdict(False, ("x",))
    for text in ("", "yes", '{"complete": "yes"}', "{"):
        assert goals.parse_verdict(text).complete is False


def test_a_provider_is_asked_for_the_verdicts_schema():
    from actors.model.providers.backend import ProviderBackend

    backend = ProviderBackend(base_url="http://127.0.0.1:9/v1", model="m")
    body = backend.payload(TurnInput(({"role": "user", "content": "Goal: x"},), answer_schema=goals.VERDICT_SCHEMA))
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == goals.VERDICT_SCHEMA
    assert "response_format" not in backend.payload(TurnInput(({"role": "user", "content": "hi"},)))
