"""Helpers in the background (actors/runs/agent/run_tools/background.py): `task
{background: true}` answers at once and the helper works on while the parent goes on;
get_task_output, wait_tasks, kill_task, a message to a running helper, a stop, a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import psutil
import pytest
import trio

from actors.errors import Busy
from actors.record.transcript import restored
from actors.runs.agent.run_tools import background, helpers
from actors.runs.agent.small.own_tools import small_specs
from actors.tools import shell
from actors.tools.registry import ToolContext, ToolOutcome
from tests.daemon_proc import run_daemon
from tests.test_e2e import write_script
from tests.test_parallel import Meet
from tests.waiting import wait_for, wait_http_state, wait_state


@attrs.define
class Gate:
    """A read that waits until the test opens its gate (`name`), so a round can be
    added to the script once a card's id is known."""

    name: str = "gate"
    description: str = "Waits for its gate."
    parameters: dict[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}})
    needs_workspace: bool = False
    gates: dict[str, trio.Event] = attrs.field(factory=dict)
    waiting: set[str] = attrs.field(factory=set)

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return False

    def title(self, args: dict[str, Any]) -> str:
        return "Gate"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    def open(self, name: str) -> None:
        self.gates.setdefault(name, trio.Event()).set()

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        name = str(args.get("g"))
        self.waiting.add(name)
        await self.gates.setdefault(name, trio.Event()).wait()
        self.waiting.discard(name)
        return ToolOutcome(f"opened {name}")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def bg_task(prompt: str, kind: str = "explore") -> dict[str, Any]:
    return call("task", description=prompt[:20], prompt=prompt, subagent_type=kind, background=True)


def cards(conv, tool: str | None = None) -> list:
    return [i for i in conv.items if i.kind == "tool" and (tool is None or i.tool == tool)]


def sleeping(marker: str) -> list[psutil.Process]:
    """The processes of `sleep <marker>` (a command a helper ran)."""
    return [p for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [])[-2:] == ["sleep", marker]]


async def conv_in(d, tmp_path, mode="full"):
    folder = tmp_path / "ws"
    folder.mkdir(exist_ok=True)
    ws = await d.hub.add_workspace(str(folder))
    return await d.hub.create(workspace=ws.id, mode=mode)


async def started(d, tmp_path, *rounds: dict[str, Any]):
    """A conversation with a gate among its tools, sent "start" with these rounds scripted."""
    gate = Gate()
    d.hub.env.registry.add(gate)
    conv = await conv_in(d, tmp_path)
    d.backend.push(*rounds)
    await conv.send_message("start")
    return gate, conv


def helper_state(conv) -> str | None:
    found = cards(conv, "task")
    return (found[0].task or {}).get("state") if found else None


async def test_the_parent_goes_on_reads_the_helper_and_waits_for_it(daemon, tmp_path):
    meet = Meet(expected=2, alone_s=10)
    daemon.hub.env.registry.add(meet)
    gate, conv = await started(
        daemon, tmp_path,
        {"when": "start", "tool_calls": [bg_task("bg find the config")]},
        {"when": "bg find", "text": "Looking at the folders.", "tool_calls": [call("meet")]},
        {"when": "start", "tool_calls": [call("meet")]},  # the parent's own call, while the helper works
        {"when": "bg find", "tool_calls": [call("gate", g="h")]},
        {"when": "start", "tool_calls": [call("gate", g="p")]},
    )
    await wait_for(lambda: gate.waiting == {"h", "p"})
    card = cards(conv, "task")[0]
    assert card.state == "done" and f"[task id: {card.id}]" in card.result  # it answered at once
    assert helper_state(conv) == "running" and conv.info.state == "running"
    assert meet.arrived == 2 and [c.result for c in cards(conv, "meet")] == ["met None"]  # the parent's
    daemon.backend.push(
        {"when": "start", "tool_calls": [call("get_task_output", id=card.id)]},
        {"when": "start", "tool_calls": [call("wait_tasks", ids=[card.id], timeout_s=60)]},
        {"when": "bg find", "text": "It is config.py."},
        {"when": "start", "text": "The helper found config.py."},
    )
    gate.open("p")
    await wait_for(lambda: any(c.state == "running" for c in cards(conv, "wait_tasks")))
    output = cards(conv, "get_task_output")[0]
    assert output.state == "done" and "running" in output.result and "Looking at the folders." in output.result
    assert helper_state(conv) == "running"  # wait_tasks really waits
    gate.open("h")
    await wait_state(conv, "idle")
    waited = cards(conv, "wait_tasks")[0]
    assert waited.state == "done" and "It is config.py." in waited.result and "done" in waited.result
    assert helper_state(conv) == "done"
    assert cards(conv, "task")[0].task["rounds"] == 3


async def test_a_helper_keeps_working_past_the_parents_answer(daemon, tmp_path):
    gate, conv = await started(
        daemon, tmp_path,
        {"when": "start", "tool_calls": [bg_task("bg count lines")]},
        {"when": "bg count", "tool_calls": [call("gate", g="h")]},
        {"when": "start", "text": "Started it."},
        {"when": "bg count", "text": "42 lines."},
    )
    await wait_state(conv, "idle")
    await wait_for(lambda: gate.waiting == {"h"})
    assert helper_state(conv) == "running" and conv.quiet_since() is None  # the actor is kept awake
    # What it works on stays: no edit of the message, no rewind, no delete while it works.
    first = conv.items[0].id
    with pytest.raises(Busy):
        await conv.send_message("start over", edit_of=first)
    with pytest.raises(Busy):
        await conv.rewind(first, files=True, conversation=True)
    with pytest.raises(Busy):
        await conv.delete()
    # A restart now ends the helper's card with a notice, though no run was going.
    card = restored(conv.record()).items[2]
    assert card.task["state"] == "stopped" and card.task["items"][-1]["kind"] == "notice"
    gate.open("h")
    await wait_for(lambda: helper_state(conv) == "done")
    card_id = cards(conv, "task")[0].id
    daemon.backend.push({"when": "again", "tool_calls": [call("get_task_output", id=card_id)]},
                        {"when": "again", "text": "It counted 42."})
    await conv.send_message("again")  # a later message's run reads it
    await wait_state(conv, "idle")
    assert "42 lines." in cards(conv, "get_task_output")[0].result


async def test_kill_task_ends_the_helper_and_its_command(real_tools, tmp_path):
    marker = "30117"
    gate, conv = await started(
        real_tools, tmp_path,
        {"when": "start", "tool_calls": [bg_task("bg sleep a while", "general")]},
        {"when": "bg sleep", "tool_calls": [call("exec_shell_command", command=f"sleep {marker}", timeout=120)]},
        {"when": "start", "tool_calls": [call("gate", g="p")]},
    )

    await wait_for(lambda: gate.waiting == {"p"} and sleeping(marker), timeout=20)
    card = cards(conv, "task")[0]
    real_tools.backend.push({"when": "start", "tool_calls": [call("kill_task", id=card.id)]},
                            {"when": "start", "text": "Stopped it."})
    gate.open("p")
    await wait_state(conv, "idle", timeout=20)
    killed = cards(conv, "kill_task")[0]
    assert killed.state == "done" and card.id in killed.result, killed
    assert helper_state(conv) == "stopped", cards(conv, "task")[0].task
    items = cards(conv, "task")[0].task["items"]
    assert any(i["kind"] == "notice" and i["text"] == background.KILLED for i in items)
    ran = next(i for i in items if i.get("tool") == "exec_shell_command")
    assert ran["state"] in ("denied", "error"), ran
    # The command ended with it, within the bound a stopped command is given to end.
    await wait_for(lambda: not sleeping(marker), timeout=shell.REAP_S)


async def test_a_message_reaches_a_running_helper_at_its_next_round(daemon, tmp_path):
    gate, conv = await started(
        daemon, tmp_path,
        {"when": "start", "tool_calls": [bg_task("bg review the code")]},
        {"when": "bg review", "tool_calls": [call("gate", g="h")]},
        {"when": "start", "tool_calls": [call("gate", g="p")]},
    )
    await wait_for(lambda: gate.waiting == {"h", "p"})
    card_id = cards(conv, "task")[0].id
    daemon.backend.push(
        {"when": "start", "tool_calls": [call("send_subagent_message", task=card_id, message="check the tests too")]},
        {"when": "start", "tool_calls": [call("wait_tasks", ids=[card_id], timeout_s=60)]},
        {"when": "check the tests too", "text": "Reviewed, tests included."},
        {"when": "start", "text": "Done."},
    )
    gate.open("p")
    await wait_for(lambda: any(c.state == "running" for c in cards(conv, "wait_tasks")))
    sent = cards(conv, "send_subagent_message")[0]
    assert sent.state == "done" and "next round" in sent.result
    gate.open("h")
    await wait_state(conv, "idle")
    assert "Reviewed, tests included." in cards(conv, "wait_tasks")[0].result
    inner = cards(conv, "task")[0].task["items"]
    told = [i for i in inner if i["kind"] == "notice" and "check the tests too" in i["text"]]
    assert len(told) == 1 and told[0]["for_model"] is True


async def test_a_stop_ends_background_helpers_and_bad_calls_say_why(daemon, tmp_path):
    gate, conv = await started(
        daemon, tmp_path,
        {"when": "start", "tool_calls": [bg_task("bg one"), bg_task("bg two")]},
        {"when": "bg", "tool_calls": [call("gate", g="h")], "repeat": 2},
        {"when": "start", "tool_calls": [call("get_task_output", id="nope"),
                                         call("wait_tasks", ids=["nope"]), call("kill_task", id="nope")]},
        {"when": "start", "text": "Started both."},
    )
    await wait_state(conv, "idle")
    assert all(c.state == "error" and "no background helper 'nope'" in c.result
               for c in cards(conv) if c.tool != "task")
    await wait_for(lambda: [(c.task or {}).get("state") for c in cards(conv, "task")] == ["running", "running"])
    with trio.fail_after(5):
        assert await conv.stop()  # no run was going: the stop is the helpers'
    assert [c.task["state"] for c in cards(conv, "task")] == ["stopped", "stopped"]
    await wait_for(lambda: conv.quiet_since() is not None)  # nothing keeps the actor now


def test_a_small_model_is_offered_no_background_tools():
    offered = helpers.SPECS + background.SPECS
    kept = small_specs(offered, planning=False)
    assert {s.name for s in kept} == {helpers.TASK, helpers.SEND}
    task_spec = next(s for s in kept if s.name == helpers.TASK)
    assert "background" not in task_spec.parameters["properties"]
    assert "background" in helpers.TASK_BG_SPEC.parameters["properties"]
    assert small_specs(offered, planning=False, helper_asked=False) == ()  # not asked for: no helper


async def helpers_of(c, cid: str, **params: Any) -> dict[str, Any]:
    r = await c.get(f"/api/conversations/{cid}/helpers", params=params)
    assert r.status_code == 200, r.text
    return dict(r.json())


async def test_the_helper_tree_over_http(tmp_path):
    """A background helper over HTTP: the tree shows it working, flags it once it has
    written nothing for `stall_s`, and a stop of the conversation ends it and its command."""
    marker = "30119"
    script = {"rounds": [
        {"when": "start", "tool_calls": [bg_task("bg wait a while", "general")]},
        {"when": "bg wait", "tool_calls": [call("exec_shell_command", command=f"sleep {marker}", timeout=120)]},
        {"when": "start", "text": "It works in the background."},
    ]}
    folder = tmp_path / "ws"
    folder.mkdir()
    async with run_daemon(tmp_path / "data", "--scripted", str(write_script(tmp_path, script))) as d, \
            d.client() as c:
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
        cid = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "full"})).json()["id"]
        assert (await helpers_of(c, cid))["helpers"] == []
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "start"})
        await wait_http_state(c, cid, "idle")  # the parent answered; its helper works on
        with trio.fail_after(20):
            while not (tree := await helpers_of(c, cid, stall_s=0.2))["helpers"][0]["stalled"]:
                await trio.sleep(0.05)
        node = tree["helpers"][0]
        assert tree["working"] is True and node["state"] == "running" and node["background"] is True
        assert node["kind"] == "general" and node["parent"] is None and node["children"] == []
        assert node["message"] == next(i["id"] for i in (await c.get(f"/api/conversations/{cid}")).json()["items"]
                                       if i["kind"] == "user")
        assert (await helpers_of(c, cid))["helpers"][0]["stalled"] is False  # not yet by the default 120 s
        for bad in ("0", "-1", "soon", "1e9"):
            r = await c.get(f"/api/conversations/{cid}/helpers", params={"stall_s": bad})
            assert r.status_code == 400 and set(r.json()) >= {"error", "code"}, r.text
        assert (await c.get("/api/conversations/nope/helpers")).status_code == 404
        doc = (await c.get("/openapi.json")).json()
        assert "/api/conversations/{conversation_id}/helpers" in doc["paths"]
        r = await c.post(f"/api/conversations/{cid}/stop")
        assert r.json() == {"stopped": True}
        tree = await helpers_of(c, cid)
        assert tree["working"] is False and tree["helpers"][0]["state"] == "stopped"
        await wait_for(lambda: not sleeping(marker), timeout=shell.REAP_S)


async def test_a_background_helpers_approval_is_answered_after_the_parents_answer(daemon, tmp_path):
    conv = await conv_in(daemon, tmp_path, mode="ask")
    daemon.backend.push(
        {"when": "start", "tool_calls": [bg_task("bg write the note", "general")]},
        {"when": "start", "text": "It writes the note."},
        {"when": "bg write", "tool_calls": [call("note", path="n.txt", text="hi")]},
        {"when": "bg write", "text": "Written."},
    )
    await conv.send_message("start")
    await wait_for(lambda: conv.info.waiting_cards == 1 and conv.info.end_reason is not None)
    inner = cards(conv, "task")[0].task["items"]
    waiting = [i for i in inner if i.get("state") == "waiting"]
    assert waiting and waiting[0]["tool"] == "note" and helper_state(conv) == "running"
    await conv.approve(waiting[0]["id"], True)
    await wait_for(lambda: helper_state(conv) == "done")
    assert conv.info.waiting_cards == 0 and conv.info.state == "idle"
    assert (tmp_path / "ws" / "n.txt").read_text() == "hi"
