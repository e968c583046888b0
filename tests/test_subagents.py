"""Helpers (actors/runs/agent/run_tools/helpers.py): a task with a history of its own, inside the parent's
run; limits, stops, continuation, and approvals through the parent."""

from __future__ import annotations

import subprocess
import sys

import pytest
import trio

from actors import notices
from actors.record.transcript import restored
from actors.runs.agent import history
from actors.runs.agent.run_tools import helpers as subagents
from tests.daemon_proc import REPO, SSE, run_daemon
from tests.openai_stub import OpenAIStub, answer
from tests.test_e2e import write_script
from tests.test_harness_providers import call as provider_call
from tests.test_parallel import Meet
from tests.waiting import drained, saved_record, wait_for, wait_http_state, wait_state


def task(prompt: str, kind: str = "explore") -> dict:
    return {"name": "task", "arguments": {"description": prompt[:20], "prompt": prompt, "subagent_type": kind}}


async def conv_in(daemon, tmp_path, mode="full"):
    folder = tmp_path / "ws"
    folder.mkdir(exist_ok=True)
    ws = await daemon.hub.add_workspace(str(folder))
    return folder, await daemon.hub.create(workspace=ws.id, mode=mode)


def cards(conv):
    return [i for i in conv.items if i.kind == "tool"]


async def test_a_helper_works_with_its_own_history_and_the_parent_reads_its_answer(daemon, tmp_path):
    _, conv = await conv_in(daemon, tmp_path)
    daemon.backend.push(
        {"when": "look around", "tool_calls": [task("find the config for me")]},
        {"when": "find the config", "tool_calls": [{"name": "echo", "arguments": {"text": "config.py"}}]},
        {"when": "find the config", "text": "It is config.py."},
        {"when": "look around", "text": "The helper found config.py."},
    )
    with daemon.bus.subscribe() as sub:
        await conv.send_message("look around")
        await wait_state(conv, "idle")
        events = drained(sub)
    card = cards(conv)[0]
    assert card.state == "done" and card.result.startswith("It is config.py.")
    assert f"[task id: {card.id}]" in card.result
    assert card.task["kind"] == "explore" and card.task["state"] == "done" and card.task["rounds"] == 2
    assert [i["kind"] for i in card.task["items"]] == ["user", "assistant", "tool", "assistant"]
    # The helper was sent its own history: its prompt, no parent message.
    child_turn = daemon.backend.turns[1]
    assert [m["role"] for m in child_turn.messages] == ["system", "user"]
    assert "You are a helper doing one search" in child_turn.messages[0]["content"]
    assert "task" not in {t.name for t in child_turn.tools}  # a helper cannot start another
    assert "note" not in {t.name for t in child_turn.tools}  # explore: nothing that changes
    # Its items stream as events of the parent's card.
    tagged = [e.data for e in events if e.name in ("item", "delta") and e.data.get("task") == card.id]
    assert tagged and all(d["conversation"] == conv.id for d in tagged)
    assert history.well_formed(daemon.backend.turns[-1].messages) is None


async def test_helpers_run_at_once_within_the_limit_and_more_wait(daemon, tmp_path):
    meet = Meet(expected=2, alone_s=5)
    daemon.hub.env.registry.add(meet)
    _, conv = await conv_in(daemon, tmp_path)
    meet_call = {"name": "meet", "arguments": {}}
    daemon.backend.push(
        {"when": "three", "tool_calls": [task("one a"), task("one b"), task("one c")]},
        *[{"when": f"one {x}", "tool_calls": [meet_call]} for x in "abc"],
        *[{"when": f"one {x}", "text": f"done {x}"} for x in "abc"],
        {"when": "three", "text": "All three."},
    )
    await conv.send_message("three")
    await wait_for(lambda: any(c.result == subagents.WAITING for c in cards(conv)), timeout=10)
    await wait_state(conv, "idle", timeout=20)
    results = [c.result.split("\n")[0] for c in cards(conv)]
    assert sorted(results) == ["done a", "done b", "done c"]
    assert meet.arrived == 3  # two met at once; the third ran once a slot was free


async def test_a_stop_ends_every_helper_and_leaves_every_card_final(daemon, tmp_path):
    _, conv = await conv_in(daemon, tmp_path)
    daemon.backend.push({"when": "go", "tool_calls": [task("hang a"), task("hang b")]},
                        {"when": "hang", "hang": True, "repeat": 2})
    await conv.send_message("go")
    await wait_for(lambda: sum(1 for c in cards(conv) if (c.task or {}).get("state") == "running") == 2)
    with trio.fail_after(1):
        await conv.stop()
    assert all(c.state in ("done", "denied", "error") for c in cards(conv))
    assert [c.task["state"] for c in cards(conv)] == ["stopped", "stopped"]
    for c in cards(conv):
        assert all(i.get("streaming") is not True for i in c.task["items"])
    assert daemon.engine.statistics().state == "idle"


async def test_a_finished_helper_goes_on_with_a_message(daemon, tmp_path):
    _, conv = await conv_in(daemon, tmp_path)
    daemon.backend.push({"when": "start", "tool_calls": [task("count files")]},
                        {"when": "count files", "text": "3 files."})
    await conv.send_message("start")
    await wait_state(conv, "idle")
    card_id = cards(conv)[0].id
    send = {"name": "send_subagent_message", "arguments": {"task": card_id, "message": "and folders?"}}
    daemon.backend.push({"when": "more", "tool_calls": [send, {"name": "send_subagent_message",
                                                               "arguments": {"task": "nope", "message": "x"}}]},
                        {"when": "and folders", "text": "2 folders."})
    await conv.send_message("more")
    await wait_state(conv, "idle")
    sent, unknown = cards(conv)[1:]
    # A helper of an earlier message goes on from what its card kept.
    assert sent.state == "done" and sent.result.startswith("2 folders.")
    helper = cards(conv)[0].task
    assert [i["kind"] for i in helper["items"]] == ["user", "assistant", "user", "assistant"]
    assert helper["rounds"] == 2
    assert unknown.state == "error" and "no finished helper" in unknown.result


async def test_a_general_helpers_cards_are_approved_through_the_parent(daemon, tmp_path):
    folder, conv = await conv_in(daemon, tmp_path, mode="ask")
    daemon.backend.push(
        {"when": "write it", "tool_calls": [task("write the note", "general")]},
        {"when": "write the note", "tool_calls": [{"name": "note", "arguments": {"path": "n.txt", "text": "hi"}}]},
        {"when": "write the note", "text": "Written."},
        {"when": "write it", "text": "Done."},
    )
    await conv.send_message("write it")
    await wait_state(conv, "waiting")
    parent = cards(conv)[0]
    waiting = [i for i in parent.task["items"] if i.get("state") == "waiting"]
    assert waiting and waiting[0]["tool"] == "note"
    assert conv.info.waiting_cards == 1  # the helper's card counts as the conversation's
    await conv.approve(waiting[0]["id"], True)
    await wait_state(conv, "idle")
    assert conv.info.waiting_cards == 0
    assert (folder / "n.txt").read_text() == "hi"
    assert cards(conv)[0].result.startswith("Written.")


async def test_a_helper_working_at_a_restart_is_restored_stopped(daemon, tmp_path):
    _, conv = await conv_in(daemon, tmp_path)
    daemon.backend.push({"when": "go", "tool_calls": [task("hang here")]}, {"when": "hang", "hang": True})
    await conv.send_message("go")
    await wait_for(lambda: cards(conv) and (cards(conv)[0].task or {}).get("state") == "running")
    await wait_for(lambda: len(cards(conv)[0].task["items"]) >= 1)
    record = restored(conv.record())
    await conv.stop()
    card = [i for i in record.items if i.kind == "tool"][0]
    assert card.state == "error" and card.task["state"] == "stopped"
    assert all(i.get("state") in (None, "done", "denied", "error") for i in card.task["items"])


async def test_a_helper_that_uses_its_rounds_says_its_own_limit(daemon, tmp_path):
    _, conv = await conv_in(daemon, tmp_path)
    daemon.backend.push(
        {"when": "go", "tool_calls": [task("keep looking")]},
        *[{"when": "keep looking", "tool_calls": [{"name": "echo", "arguments": {"text": str(n)}}]}
          for n in range(subagents.HELPER_ROUNDS)],
        {"when": "go", "text": "It found nothing."},
    )
    await conv.send_message("go")
    await wait_state(conv, "idle", timeout=20)
    card = cards(conv)[0]
    assert card.task["rounds"] == subagents.HELPER_ROUNDS
    said = notices.ROUNDS_OF.format(n=subagents.HELPER_ROUNDS)
    assert card.result.startswith(f"The helper gave no answer: {said}")

async def test_a_daemon_started_with_one_helper_runs_one_at_a_time(tmp_path):
    """`serve --helpers 1`: of two tasks of one round, one runs its rounds to the end
    while the other's card says it waits; then the other runs."""
    echo = {"name": "echo", "arguments": {"text": "x"}}
    script = {"rounds": [
        {"when": "two", "tool_calls": [task("one a"), task("one b")]},
        *[r for x in "ab" for r in ({"when": f"one {x}", "tool_calls": [echo]},
                                    {"when": f"one {x}", "text": f"done {x}"})],
        {"when": "two", "text": "Both."},
    ]}
    folder = tmp_path / "ws"
    folder.mkdir()
    args = ("--scripted", str(write_script(tmp_path, script)), "--helpers", "1")
    async with run_daemon(tmp_path / "data", *args) as d, d.client() as c, trio.open_nursery() as nursery:
        assert (await c.get("/api/agent")).json()["helpers"] == 1
        sse = SSE(c)
        await nursery.start(sse.run)
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
        cid = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "ask"})).json()["id"]
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "two"})
        body = await wait_http_state(c, cid, "idle")
        nursery.cancel_scope.cancel()
    tasks = [i for i in body["items"] if i["kind"] == "tool"]
    assert sorted(t["result"].split("\n")[0] for t in tasks) == ["done a", "done b"]
    assert [t["task"]["state"] for t in tasks] == ["done", "done"]
    # The second waited, and its card said so while it did.
    waited = [e[2]["item"] for e in sse.events if e[1] == "item" and e[2].get("conversation") == cid
              and "task" not in e[2] and e[2]["item"].get("tool") == "task"
              and e[2]["item"].get("result") == subagents.WAITING and e[2]["item"]["task"]["state"] == "waiting"]
    assert len({w["id"] for w in waited}) == 1
    # One at a time: the helpers' rounds (their answers, calls and streams, streamed as
    # events naming their card) do not interleave. Each one's first message is put
    # on its card before it waits for its place, so that is left out.
    ran = [e[2]["task"] for e in sse.events if e[1] in ("item", "delta") and "task" in e[2]
           and not (e[1] == "item" and e[2]["item"]["kind"] == "user")]
    runs = [card for n, card in enumerate(ran) if n == 0 or ran[n - 1] != card]
    assert sorted(runs) == sorted(t["id"] for t in tasks)


@pytest.mark.parametrize(("option", "bads", "said"), [
    ("--helpers", ("0", "17"), "--helpers must be between 1 and 16"),
    ("--helper-rounds", ("0", "101", "-3"), "--helper-rounds must be between 1 and 100"),
])
def test_the_helpers_settings_are_checked_at_start(tmp_path, option, bads, said):
    for bad in bads:
        done = subprocess.run(
            [sys.executable, "-m", "bmoe_daemon", "serve", "--no-model", "--port", "0",
             "--data-dir", str(tmp_path / "data"), option, bad],
            cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2
        assert done.stderr.strip() == f"bmoe-daemon: {said}"
        assert "listening" not in done.stdout


def test_the_help_names_the_helpers_default_rounds():
    done = subprocess.run([sys.executable, "-m", "bmoe_daemon", "serve", "--help"],
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    said = " ".join(done.stdout.split())
    assert f"1 to 100 (default {subagents.HELPER_ROUNDS})" in said


async def test_a_daemon_started_with_fewer_helper_rounds_ends_its_helpers_there(tmp_path):
    """`serve --helper-rounds 2`: a helper that keeps calling ends after its second round
    and says so, and the setting is reported."""
    echo = {"name": "echo", "arguments": {"text": "x"}}
    script = {"rounds": [
        {"when": "go", "tool_calls": [task("keep looking")]},
        *[{"when": "keep looking", "tool_calls": [echo]} for _ in range(3)],
        {"when": "go", "text": "It found nothing."},
    ]}
    folder = tmp_path / "ws"
    folder.mkdir()
    args = ("--scripted", str(write_script(tmp_path, script)), "--helper-rounds", "2")
    async with run_daemon(tmp_path / "data", *args) as d, d.client() as c:
        assert (await c.get("/api/agent")).json()["helper_rounds"] == 2
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
        cid = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "full"})).json()["id"]
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "go"})
        body = await wait_http_state(c, cid, "idle")
    card = next(i for i in body["items"] if i["kind"] == "tool" and i["tool"] == subagents.TASK)
    assert card["task"]["rounds"] == 2
    assert card["result"].startswith(f"The helper gave no answer: {notices.ROUNDS_OF.format(n=2)}")


async def provider_conversation(c, stub, folder) -> str:
    r = await c.post("/api/providers", json={"name": "Stub", "base_url": stub.base_url, "models": ["m"]})
    assert r.status_code == 201
    ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
    body = {"workspace": ws["id"], "route": "stub/m", "mode": "ask"}
    return str((await c.post("/api/conversations", json=body)).json()["id"])


def names(request) -> set[str]:
    return {t["function"]["name"] for t in request.body.get("tools") or ()}


async def test_a_helper_on_a_provider_route(tmp_path):
    """The parent's and the helper's rounds both go to the provider (a real HTTP
    server); the helper's answer is the parent's result, its items are on the card."""
    stub = OpenAIStub()
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "config.py").write_text("PORT = 8080\n")
    ask = {"description": "find the port", "prompt": "Which port does config.py set?", "subagent_type": "explore"}
    stub.replies += [provider_call("task", ask, "p1"),
                     provider_call("read_file", {"path": "config.py"}, "h1"),
                     answer("config.py sets PORT = 8080."),
                     answer("The port is 8080.")]
    script = write_script(tmp_path, {"rounds": [], "default": {"text": "Local scripted answer."}})
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d, d.client() as c, \
            trio.open_nursery() as nursery:
        await nursery.start(stub.run)
        sse = SSE(c)
        await nursery.start(sse.run)
        cid = await provider_conversation(c, stub, folder)
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "what port?"})
        body = await wait_http_state(c, cid, "idle")
        nursery.cancel_scope.cancel()
    parent_1, child_1, child_2, parent_2 = (r.body for r in stub.received)
    assert "task" in names(stub.received[0]) and parent_1["messages"][-1]["content"] == "what port?"
    # The helper's own history and tools: its prompt, nothing of the parent's; reads only.
    assert [m["role"] for m in child_1["messages"]] == ["system", "user"]
    assert subagents.HELPER_LINES["explore"] in child_1["messages"][0]["content"]
    assert child_1["messages"][1]["content"] == ask["prompt"]
    assert "read_file" in names(stub.received[1]) and not names(stub.received[1]) & {"task", "write_file"}
    assert child_2["messages"][-1] == {"role": "tool", "tool_call_id": "h1", "content": "PORT = 8080\n"}
    card = next(i for i in body["items"] if i["kind"] == "tool")
    assert card["tool"] == "task" and card["state"] == "done"
    assert card["result"] == f"config.py sets PORT = 8080.\n\n[task id: {card['id']}]"
    assert parent_2["messages"][-1] == {"role": "tool", "tool_call_id": "p1", "content": card["result"]}
    assert body["items"][-1]["text"] == "The port is 8080."
    helper = card["task"]
    assert helper["state"] == "done" and helper["rounds"] == 2 and helper["kind"] == "explore"
    assert [(i["kind"], i.get("tool"), i.get("state")) for i in helper["items"]] == [
        ("user", None, None), ("assistant", None, None), ("tool", "read_file", "done"), ("assistant", None, None)]
    # Its items streamed as events naming the card, none among the conversation's own.
    tagged = {e[2]["item"]["id"] for e in sse.events if e[1] == "item" and e[2].get("task") == card["id"]}
    assert tagged == {i["id"] for i in helper["items"]}
    assert not tagged & {i["id"] for i in body["items"]}


async def test_a_stop_during_a_provider_helpers_round_ends_everything(tmp_path):
    stub = OpenAIStub()
    folder = tmp_path / "ws"
    folder.mkdir()
    ask = {"description": "look", "prompt": "Look around.", "subagent_type": "explore"}
    stub.replies += [provider_call("task", ask, "p1"), {"stall": 120}]
    script = write_script(tmp_path, {"rounds": [], "default": {"text": "Local scripted answer."}})
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d, d.client() as c, \
            trio.open_nursery() as nursery:
        await nursery.start(stub.run)
        cid = await provider_conversation(c, stub, folder)
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "look"})
        with trio.fail_after(20):  # the helper's round is at the provider, which says nothing
            while len(stub.received) < 2:
                await trio.sleep(0.02)
        body = (await c.get(f"/api/conversations/{cid}")).json()
        assert body["state"] == "running" and body["items"][-1]["task"]["state"] == "running"
        with trio.fail_after(5):
            r = await c.post(f"/api/conversations/{cid}/stop")
        assert r.json() == {"stopped": True}
        body = await wait_http_state(c, cid, "idle", "error")
        record = await saved_record(d.data_dir / "agent" / "conversations" / f"{cid}.json",
                                    lambda r: r["state"] in ("idle", "error"))
        nursery.cancel_scope.cancel()
    assert len(stub.received) == 2  # nothing went on after the stop
    for view in (body, record):
        card = next(i for i in view["items"] if i["kind"] == "tool")
        assert card["state"] in ("done", "error", "denied") and card["task"]["state"] == "stopped"
        assert all(i.get("state") in (None, "done", "error", "denied") for i in view["items"])
        assert all(not i.get("streaming") for i in view["items"])
        assert all(i.get("state") in (None, "done", "error", "denied") and not i.get("streaming")
                   for i in card["task"]["items"])


async def test_no_helper_runs_while_planning(daemon, tmp_path):
    """A general helper works with the parent's tools under its mode (here full, no
    card), so while planning it would change the workspace before any plan is approved.
    Planning offers no helper; one called anyway (a new one, or a finished one sent a
    message) is refused, the explore kind too."""
    folder, conv = await conv_in(daemon, tmp_path, mode="full")
    note = {"name": "note", "arguments": {"path": "n.txt", "text": "changed"}}
    daemon.backend.push(
        {"when": "write it", "tool_calls": [task("write the note", "general")]},
        {"when": "write the note", "tool_calls": [{"name": "note", "arguments": {"path": "n.txt", "text": "first"}}]},
        {"when": "write the note", "text": "Written."},
        {"when": "write it", "text": "Done."},
    )
    await conv.send_message("write it")
    await wait_state(conv, "idle")
    assert (folder / "n.txt").read_text() == "first"
    general = cards(conv)[0].id
    await conv.patch({"plan_mode": True})
    daemon.backend.push(
        {"when": "plan it", "tool_calls": [task("change the note", "general")]},
        {"when": "change the note", "tool_calls": [note]},
        {"when": "plan it", "tool_calls": [{"name": "send_subagent_message",
                                            "arguments": {"task": general, "message": "change the note"}}]},
        {"when": "plan it", "tool_calls": [task("look around")]},
        {"when": "plan it", "tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. Change n.txt"}}]},
    )
    await conv.send_message("plan it")
    await wait_state(conv, "waiting")
    offered = {t.name for t in daemon.backend.turns[-1].tools}
    assert "exit_plan_mode" in offered and not offered & {"task", "send_subagent_message"}
    planned = cards(conv)[1:4]
    assert [(c.tool, c.state) for c in planned] == [("task", "error"), ("send_subagent_message", "error"),
                                                    ("task", "error")]
    assert all(c.result.startswith("There is no tool named") for c in planned)
    assert (folder / "n.txt").read_text() == "first"
    assert len(daemon.note.calls) == 1


async def test_a_helper_called_in_the_answer_that_began_planning_is_refused(daemon, tmp_path):
    """The tools were chosen before planning began (enter_plan_mode earlier in the same
    answer): the helper's call is refused when it comes, not run."""
    folder, conv = await conv_in(daemon, tmp_path, mode="full")
    daemon.backend.push(
        {"when": "go", "tool_calls": [{"name": "enter_plan_mode", "arguments": {}}, task("write the note", "general")]},
        {"when": "write the note", "tool_calls": [{"name": "note", "arguments": {"path": "n.txt", "text": "x"}}]},
        {"when": "go", "tool_calls": [{"name": "exit_plan_mode", "arguments": {"plan": "1. Write n.txt"}}]},
    )
    await conv.send_message("go")
    await wait_state(conv, "idle", "error", "waiting")
    helper = next(c for c in cards(conv) if c.tool == "task")
    assert (helper.state, helper.result) == ("denied", notices.NO_HELPER_WHILE_PLANNING)
    assert not (folder / "n.txt").exists() and daemon.note.calls == []
