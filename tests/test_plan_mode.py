"""Plan mode (actors/runs/agent/run_tools/plans.py, actors/runs/agent/run.py): nothing in the workspace changes
while a conversation plans; the plan is written to its own file, shown on a card, and
approved (carried out) or rejected with feedback (revised)."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import trio

from actors import notices
from actors.errors import Busy
from actors.record import cards as card_names
from actors.record.transcript import restored
from actors.runs.agent.ledger import MAX_ROUNDS
from actors.runs.agent.run import AgentRun
from actors.runs.agent.run_tools import plans
from actors.runs.base import RunRequest
from actors.tools.registry import ToolContext, ToolOutcome
from tests.waiting import drained, read_saved, wait_for, wait_state

PLAN = "1. Read app.py\n2. Change x to 10\n"


def cards(conv):
    return [i for i in conv.items if i.kind == "tool"]


async def project(daemon, tmp_path, mode: str = "ask"):
    folder = tmp_path / "proj"
    folder.mkdir(exist_ok=True)
    (folder / "app.py").write_text("x = 1\n")
    ws = await daemon.hub.add_workspace(str(folder))
    conv = await daemon.hub.create(workspace=ws.id, mode=mode)
    return folder, conv


def plan_path(daemon, conv) -> str:
    return str(daemon.data / "agent" / "plans" / f"{conv.id}.md")


def write_plan(daemon, conv, text: str = PLAN) -> dict:
    return {"name": "write_file", "arguments": {"path": plan_path(daemon, conv), "content": text}}


EXIT = {"name": "exit_plan_mode", "arguments": {}}


async def test_a_plan_is_written_shown_approved_and_carried_out(real_tools, tmp_path):
    d = real_tools
    folder, conv = await project(d, tmp_path)
    ten = [{"old_text": "x = 1", "new_text": "x = 10"}]
    edit = {"name": "edit_file", "arguments": {"path": "app.py", "edits": ten}}
    d.backend.push({"tool_calls": [write_plan(d, conv)]}, {"tool_calls": [EXIT]},
                   {"tool_calls": [edit]}, {"text": "Done as planned."})
    with d.bus.subscribe() as sub:
        await conv.send_message("make x ten", plan=True)
        await wait_state(conv, "waiting")
        planned = {t.name for t in d.backend.turns[0].tools}
        assert {"read_file", "grep_search", "exec_shell_command", "todo_write", "ask_user_question",
                "exit_plan_mode", "write_file", "edit_file"} <= planned
        assert "enter_plan_mode" not in planned
        # Planning ends with exit_plan_mode or a question: every round of it is a call.
        assert [t.tool_choice for t in d.backend.turns] == ["required", "required"]
        assert "You are planning" in d.backend.turns[0].messages[0]["content"]
        assert plan_path(d, conv) in d.backend.turns[0].messages[0]["content"]
        card = cards(conv)[-1]
        assert card.tool == "exit_plan_mode" and card.args == {"plan": PLAN, "revision": 1}
        assert cards(conv)[0].state == "done"  # the plan file needs no approval
        assert (folder / "app.py").read_text() == "x = 1\n"
        assert await conv.plan_view() == {"text": PLAN, "revision": 1, "state": "proposed", "plan_mode": True}
        await conv.approve(card.id, True)
        # The edit now asks, in the conversation's mode.
        await wait_for(lambda: cards(conv)[-1].tool == "edit_file" and cards(conv)[-1].state == "waiting")
        await conv.approve(cards(conv)[-1].id, True)
        await wait_state(conv, "idle")
        events = drained(sub)
    assert (folder / "app.py").read_text() == "x = 10\n"
    assert cards(conv)[1].result == plans.APPROVED
    assert conv.info.plan_mode is False and conv.info.plan.state == "approved"
    assert "edit_file" in {t.name for t in d.backend.turns[2].tools}
    assert d.backend.turns[2].tool_choice is None and d.backend.turns[3].tool_choice is None
    assert "You are planning" not in d.backend.turns[2].messages[0]["content"]
    states = [e.data["state"] for e in events if e.name == "plan"]
    assert states[0] == "drafting" and "proposed" in states and states[-1] == "approved"


async def test_exit_plan_mode_writes_the_plan_it_is_given_then_shows_it(real_tools, tmp_path):
    d = real_tools
    folder, conv = await project(d, tmp_path)
    # Too long, and no loop (a run cuts a loop, actors/model/backends/repeats.py): numbers counting up.
    huge = " ".join(map(str, range(card_names.MAX_PLAN_BYTES)))[: card_names.MAX_PLAN_BYTES + 1]
    given = "1. Add greet() to app.py\n"
    d.backend.push({"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": 7}}]},
                   {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": huge}}]},
                   {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "  "}}]},
                   {"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": given}}]})
    await conv.send_message("plan a greeting", plan=True)
    await wait_state(conv, "waiting")
    bad = plans.BAD_PLAN.format(limit=card_names.MAX_PLAN_BYTES)
    assert [(c.state, c.result) for c in cards(conv)[:2]] == [("error", bad), ("error", bad)]
    assert cards(conv)[2].state == "error" and "plan file is empty" in cards(conv)[2].result
    offered = next(t for t in d.backend.turns[0].tools if t.name == "exit_plan_mode")
    assert offered.parameters["properties"]["plan"]["type"] == "string"
    card = cards(conv)[-1]
    assert card.state == "waiting" and card.args == {"plan": given, "revision": 1}
    assert Path(plan_path(d, conv)).read_text() == given
    assert await conv.plan_view() == {"text": given, "revision": 1, "state": "proposed", "plan_mode": True}
    # A plan given again replaces the file's text; the file's own plan is shown when none is given.
    d.backend.push({"tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. Other\n"}}]},
                   {"tool_calls": [EXIT]})
    await conv.approve(card.id, False, feedback="Another.")
    await wait_for(lambda: conv.info.plan is not None and conv.info.plan.revision == 2)
    await wait_state(conv, "waiting")
    assert cards(conv)[-1].args == {"plan": "1. Other\n", "revision": 2}
    await conv.approve(cards(conv)[-1].id, False)
    await wait_for(lambda: conv.info.plan is not None and conv.info.plan.revision == 3)
    await wait_state(conv, "waiting")
    assert cards(conv)[-1].args == {"plan": "1. Other\n", "revision": 3}
    await conv.stop()
    assert (folder / "app.py").read_text() == "x = 1\n"


async def test_a_rejected_plan_is_revised_with_the_feedback(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path)
    d.backend.push({"tool_calls": [write_plan(d, conv)]}, {"tool_calls": [EXIT]},
                   {"tool_calls": [write_plan(d, conv, PLAN + "3. Run the tests\n")]}, {"tool_calls": [EXIT]})
    await conv.send_message("plan it", plan=True)
    await wait_state(conv, "waiting")
    await conv.approve(cards(conv)[-1].id, False, feedback="Also run the tests.")
    await wait_for(lambda: conv.info.plan is not None and conv.info.plan.revision == 2)
    await wait_state(conv, "waiting")
    rejected = cards(conv)[1]
    assert rejected.state == "denied" and "Also run the tests." in rejected.result
    assert conv.info.plan_mode is True
    assert cards(conv)[-1].args["revision"] == 2 and "Run the tests" in cards(conv)[-1].args["plan"]
    await conv.stop()
    assert cards(conv)[-1].state == "denied" and conv.info.plan.state == "drafting"


async def test_planning_refuses_every_change_at_run_time_even_when_offered(real_tools, tmp_path):
    """Called directly, as a bug or a client that offered them would: each is refused."""
    d = real_tools
    folder, conv = await project(d, tmp_path, mode="full")
    await conv.patch({"plan_mode": True})

    @attrs.frozen
    class McpLike:
        name: str = "docs_write"
        description: str = ""
        parameters: dict = attrs.field(factory=dict)
        needs_workspace: bool = True
        mcp: str = "docs"

        def is_change(self, args, workspace=None) -> bool:
            return True

        def title(self, args) -> str:
            return "Call docs_write"

        async def preview(self, args, ctx: ToolContext):
            return None

        async def run(self, args, ctx: ToolContext) -> ToolOutcome:
            raise AssertionError("an MCP tool ran in plan mode")

    run = AgentRun(conv._t, d.hub.env, RunRequest())
    registry = d.hub.env.registry
    calls = [
        (registry.get("write_file"), {"path": "app.py", "content": "gone"}),
        (registry.get("edit_file"), {"path": "app.py", "edits": [{"old_text": "x", "new_text": "y"}]}),
        (registry.get("exec_shell_command"), {"command": "echo changed > app.py"}),
        (McpLike(), {}),
    ]
    for tool, args in calls:
        done = await run.calls.run_tool(tool, "no-card", args)
        assert (done.state, done.result) == ("denied", notices.DENIED_IN_PLAN_MODE), tool.name
    assert (folder / "app.py").read_text() == "x = 1\n"
    # A read still runs, and a command the classifier lets run without a card.
    done = await run.calls.run_tool(registry.get("exec_shell_command"), "no-card", {"command": "cat app.py"})
    assert done.state == "done" and "x = 1" in done.result


async def test_a_write_outside_the_plan_file_is_refused_while_planning(real_tools, tmp_path):
    d = real_tools
    folder, conv = await project(d, tmp_path, mode="full")
    sneak = {"name": "write_file", "arguments": {"path": str(folder / "app.py"), "content": "gone"}}
    d.backend.push({"tool_calls": [sneak]}, {"text": "ok"})
    await conv.send_message("plan", plan=True)
    await wait_state(conv, "idle")
    assert cards(conv)[0].state == "denied" and cards(conv)[0].result == notices.DENIED_IN_PLAN_MODE
    assert (folder / "app.py").read_text() == "x = 1\n"


async def test_planning_that_never_shows_a_plan_ends_at_the_round_cap_and_says_so(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path)
    # Reads of other files each round (the same read again would be refused: ledger.Ledger.made).
    d.backend.push(*[{"tool_calls": [{"name": "read_file", "arguments": {"path": f"app{n}.py"}}]}
                     for n in range(MAX_ROUNDS + 5)])
    await conv.send_message("plan", plan=True)
    await wait_state(conv, "idle")
    assert len(d.backend.turns) == MAX_ROUNDS
    assert {t.tool_choice for t in d.backend.turns} == {"required"}
    assert conv.items[-1].kind == "notice" and conv.items[-1].text == notices.PLAN_ROUNDS_OF.format(n=MAX_ROUNDS)
    assert conv.info.end_reason == "max_rounds" and conv.info.plan_mode is True


async def test_a_helper_or_a_narrowed_run_without_exit_plan_mode_may_answer(real_tools, tmp_path):
    """A call is required only while exit_plan_mode is offered: without it an answer in
    words is the only way a planning run can end."""
    d = real_tools
    _, conv = await project(d, tmp_path)
    run = AgentRun(conv._t, d.hub.env, RunRequest(local=True))
    await conv.patch({"plan_mode": True})
    await run.prepare()
    assert run.must_call()
    run.offer.narrow({"read_file", "todo_write"})
    await run.prepare()
    assert not run.must_call()
    helper = AgentRun(conv._t, d.hub.env, RunRequest(local=True, helper="explore"))
    await helper.prepare()
    assert not helper.must_call()


async def test_the_model_enters_plan_mode_and_cannot_show_an_empty_plan(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path)
    enter = {"name": "enter_plan_mode", "arguments": {}}
    d.backend.push({"tool_calls": [enter]}, {"tool_calls": [EXIT]}, {"text": "I will write it first."})
    await conv.send_message("big change")
    await wait_state(conv, "idle")
    assert "enter_plan_mode" in {t.name for t in d.backend.turns[0].tools}
    assert "exit_plan_mode" in {t.name for t in d.backend.turns[1].tools}
    assert "You are planning" in d.backend.turns[1].messages[0]["content"]
    assert cards(conv)[1].state == "error" and "plan file is empty" in cards(conv)[1].result
    assert conv.info.plan_mode is True


async def test_a_scheduled_run_leaves_the_plan_proposed_and_ends(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path)
    d.backend.push({"tool_calls": [write_plan(d, conv)]}, {"tool_calls": [EXIT]})
    await conv.send_message("plan", plan=True, unattended=True)
    await wait_for(lambda: conv.info.state == "waiting" and not conv.running)
    card = cards(conv)[-1]
    assert card.result == plans.NOBODY_TO_APPROVE and card.state == "waiting"
    assert conv.info.plan.state == "proposed" and conv.info.end_reason == "plan_proposed"
    assert len(d.backend.turns) == 2
    # The person approves it when they come: a run carries it out.
    d.backend.push({"text": "Carried out later."})
    await conv.approve(card.id, True)
    await wait_for(lambda: conv.info.state == "idle" and not conv.running)
    assert cards(conv)[-1].state == "done" and conv.items[-1].text == "Carried out later."


async def test_a_proposed_plan_survives_a_restart_and_its_approval_starts_the_run(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path)
    d.backend.push({"tool_calls": [write_plan(d, conv)]}, {"tool_calls": [EXIT]})
    await conv.send_message("plan", plan=True)
    await wait_state(conv, "waiting")
    record = restored(conv.record())
    await conv.stop()
    assert record.info.state == "waiting" and cards(record)[-1].state == "waiting"
    from actors.conversations.actor import Conversation

    again = Conversation(record, d.hub.env)
    d.backend.push({"text": "Carrying it out."})
    async with trio.open_nursery() as nursery:
        await nursery.start(again.run)
        assert (await again.plan_view())["state"] == "proposed"
        await again.approve(cards(again)[-1].id, True)
        await wait_for(lambda: again.info.state == "idle" and not again.running)
        assert cards(again)[-1].state == "done" and again.items[-1].text == "Carrying it out."
        assert again.info.plan_mode is False and again.info.plan.state == "approved"
        again.close()


async def test_plan_mode_is_set_between_messages_and_a_deleted_conversation_takes_its_plan(real_tools, tmp_path):
    d = real_tools
    _, conv = await project(d, tmp_path)
    assert (await conv.patch({"plan_mode": True})).plan_mode is True
    d.backend.push({"tool_calls": [write_plan(d, conv)]}, {"hang": True})
    await conv.send_message("plan")
    await wait_for(lambda: Path(plan_path(d, conv)).exists())
    with pytest.raises(Busy):
        await conv.patch({"plan_mode": False})
    await conv.stop()
    await d.hub.delete(conv.id)
    assert not Path(plan_path(d, conv)).exists()


async def test_plan_routes_over_http(tmp_path):
    from tests.daemon_proc import run_daemon
    from tests.test_e2e import write_script
    from tests.waiting import wait_http_state

    folder = tmp_path / "ws"
    folder.mkdir()
    data = tmp_path / "data"
    async with run_daemon(data, "--scripted", str(write_script(tmp_path, {"rounds": []}))) as d:
        async with d.client() as c:
            ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
            cid = (await c.post("/api/conversations", json={"workspace": ws["id"]})).json()["id"]
            assert (await c.get(f"/api/conversations/{cid}/plan")).json() == {
                "text": "", "revision": 0, "state": "drafting", "plan_mode": False}
            r = await c.patch(f"/api/conversations/{cid}", json={"plan_mode": "yes"})
            assert r.status_code == 400
    # The plan file's path names the conversation, so the script that writes it is given
    # to the daemon started again (the conversation is on disk).
    path = str(data.resolve() / "agent" / "plans" / f"{cid}.md")
    script = {"rounds": [
        {"when": "plan", "tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": PLAN}}]},
        {"when": "plan", "tool_calls": [EXIT]},
    ], "default": {"text": "Carried out."}}
    async with run_daemon(data, "--scripted", str(write_script(tmp_path, script))) as d:
        async with d.client() as c:
            r = await c.post(f"/api/conversations/{cid}/messages", json={"text": "plan it", "plan": True})
            assert r.status_code == 202
            body = await wait_http_state(c, cid, "waiting")
            assert body["plan_mode"] is True and body["plan"] == {"revision": 1, "state": "proposed"}
            card = body["items"][-1]
            assert (await c.get(f"/api/conversations/{cid}/plan")).json()["text"] == PLAN
            r = await c.post(f"/api/conversations/{cid}/approval",
                             json={"item": card["id"], "decision": "deny", "feedback": 7})
            assert r.status_code == 400
            r = await c.post(f"/api/conversations/{cid}/approval", json={"item": card["id"], "decision": "approve"})
            assert r.status_code == 200
            body = await wait_http_state(c, cid, "idle")
            assert body["items"][-1]["text"] == "Carried out." and body["plan"]["state"] == "approved"
    saved = read_saved(data / "agent" / "conversations" / f"{cid}.json")
    assert saved["plan"] == {"revision": 1, "state": "approved"} and saved["plan_mode"] is False


def test_a_plan_file_is_read_without_following_a_link(tmp_path):
    files = card_names.PlanFiles(tmp_path)
    secret = tmp_path / "secret"
    secret.write_text("TOP SECRET")
    (tmp_path / "c1.md").symlink_to(secret)
    assert files.read("c1") == ""
