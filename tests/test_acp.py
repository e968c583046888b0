"""Other agents over ACP, end to end: the real daemon starts tests/acp_agent.py (a
scripted ACP agent, a real program) for conversations whose `agent` is `scripted`,
given by the hidden --agents-file. Every check is over HTTP and SSE, and on the
agent's real processes (psutil, os.killpg)."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import httpx
import psutil
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from actors import notices
from actors.peers.acp import updates as acp_map
from actors.peers.acp.agents import CANCEL_WAIT_S
from tests.daemon_proc import SSE, DaemonProcess, run_daemon
from tests.waiting import read_saved, saved_record

AGENT = Path(__file__).with_name("acp_agent.py")
# A hung agent's group is ended CANCEL_WAIT_S after the stop; the rest is room for a
# loaded machine (two shared cores). Past it, the agent was never ended.
STOP_LIMIT_S = CANCEL_WAIT_S + 10
# An agent that honours session/cancel stops long before it would be ended.
HONOURED_LIMIT_S = CANCEL_WAIT_S / 2


def write_agents_file(path: Path) -> Path:
    path.write_text(json.dumps({"clients": [
        {"id": "scripted", "name": "Scripted agent",
         "acp": {"command": [sys.executable, str(AGENT)], "needs": [sys.executable], "start_timeout_s": 3}},
        {"id": "absent", "name": "Absent agent",
         "acp": {"command": ["bmoe-no-such-agent", "acp"], "needs": ["bmoe-no-such-agent"]}},
    ]}))
    return path


@attrs.define
class Setup:
    d: DaemonProcess
    c: httpx.AsyncClient
    sse: SSE
    ws: Path
    ws_id: str
    log: Path
    sse_scope: trio.CancelScope

    def received(self, method: str) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        msgs = [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]
        return [m for m in msgs if m.get("method") == method]

    async def create(self, mode: str = "ask", agent: str = "scripted") -> str:
        r = await self.c.post("/api/conversations", json={"workspace": self.ws_id, "mode": mode, "agent": agent})
        assert r.status_code == 201, r.text
        return r.json()["id"]

    async def send(self, cid: str, text: str) -> dict[str, Any]:
        r = await self.c.post(f"/api/conversations/{cid}/messages", json={"text": text})
        assert r.status_code == 202, r.text
        return r.json()["item"]

    async def conv(self, cid: str) -> dict[str, Any]:
        r = await self.c.get(f"/api/conversations/{cid}")
        assert r.status_code == 200, r.text
        return r.json()

    async def wait_state(self, cid: str, states: tuple[str, ...] = ("idle", "error"), limit: float = 20) -> dict:
        with trio.fail_after(limit):
            while True:
                conv = await self.conv(cid)
                if conv["state"] in states:
                    return conv
                await trio.sleep(0.05)

    async def run(self, cid: str, text: str) -> dict[str, Any]:
        await self.send(cid, text)
        return await self.wait_state(cid)

    def agent_pids(self) -> list[int]:
        out = []
        for p in psutil.Process(self.d.proc.pid).children(recursive=True):
            try:
                if str(AGENT) in " ".join(p.cmdline()):
                    out.append(p.pid)
            except psutil.NoSuchProcess:
                pass
        return out


@asynccontextmanager
async def acp_daemon(tmp_path: Path, data: str = "data", env: dict[str, str] | None = None) -> AsyncIterator[Setup]:
    agents = write_agents_file(tmp_path / "agents.json")
    ws = tmp_path / "project"
    ws.mkdir(exist_ok=True)
    log = tmp_path / "agent-log.jsonl"
    full_env = {"ACP_AGENT_STATE": str(tmp_path / "agent-state"), "ACP_AGENT_LOG": str(log), **(env or {})}
    async with run_daemon(tmp_path / data, "--no-model", "--agents-file", str(agents), env=full_env) as d, \
            d.client() as c, d.client() as sc, trio.open_nursery() as nursery:
        sse, sse_scope = SSE(sc), trio.CancelScope()

        async def read_events(*, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            with sse_scope:
                await sse.run(task_status=task_status)

        await nursery.start(read_events)
        r = await c.post("/api/workspaces", json={"path": str(ws)})
        assert r.status_code in (200, 201), r.text
        yield Setup(d, c, sse, ws.resolve(), r.json()["id"], log, sse_scope)
        nursery.cancel_scope.cancel()


def group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs. A killed process whose parent died
    waits as a zombie for this machine's init to reap it, however slowly: it runs
    nothing, so it does not count."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    for p in psutil.process_iter(["status"]):
        try:
            if os.getpgid(p.pid) == pgid and p.info["status"] != psutil.STATUS_ZOMBIE:
                return True
        except (ProcessLookupError, psutil.NoSuchProcess):
            pass
    return False


def runs(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def items_of(conv: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [i for i in conv["items"] if i["kind"] == kind]


async def test_agents_are_listed_and_chosen_with_a_workspace(tmp_path):
    async with acp_daemon(tmp_path) as s:
        r = await s.c.get("/api/agent")
        agents = r.json()["agents"]
        assert agents[0]["id"] == "builtin"
        by_id = {a["id"]: a for a in agents}
        assert by_id["scripted"] == {"id": "scripted", "name": "Scripted agent", "available": True, "missing": []}
        assert by_id["absent"]["available"] is False and by_id["absent"]["missing"] == ["bmoe-no-such-agent"]
        assert {"opencode", "claude-code", "codex", "pi"} <= set(by_id)  # the catalog's rows

        r = await s.c.post("/api/conversations", json={"agent": "scripted"})
        assert r.status_code == 400 and r.json()["code"] == "bad_request" and "workspace" in r.json()["error"]
        r = await s.c.post("/api/conversations", json={"agent": "nope", "workspace": s.ws_id})
        assert r.status_code == 400 and "Unknown agent" in r.json()["error"]
        r = await s.c.post("/api/conversations", json={"agent": "absent", "workspace": s.ws_id})
        assert r.status_code == 400 and "install bmoe-no-such-agent" in r.json()["error"]
        assert (await s.c.get("/api/conversations")).json() == []  # nothing was made

        cid = await s.create()
        assert (await s.conv(cid))["agent"] == "scripted"
        conv = await s.run(cid, "hello there")
        assert items_of(conv, "assistant")[-1]["text"] == "You said: hello there"
        # The agent is chosen before the first message; an edit cannot rewrite its session.
        r = await s.c.patch(f"/api/conversations/{cid}", json={"agent": "builtin"})
        assert r.status_code == 409 and r.json()["code"] == "busy"
        r = await s.c.patch(f"/api/conversations/{cid}", json={"workspace": None})
        assert r.status_code == 400
        user = items_of(conv, "user")[0]
        r = await s.c.post(f"/api/conversations/{cid}/edit", json={"item": user["id"], "text": "again"})
        assert r.status_code == 409 and r.json()["code"] == "busy"
        assert (await s.conv(cid))["items"] == conv["items"]
        # A built-in conversation without items may take another agent (with its workspace).
        r = await s.c.post("/api/conversations", json={"workspace": s.ws_id})
        other = r.json()["id"]
        r = await s.c.patch(f"/api/conversations/{other}", json={"agent": "scripted"})
        assert r.status_code == 200 and r.json()["agent"] == "scripted"


async def test_chunks_stream_as_deltas_and_tool_calls_become_cards(tmp_path):
    async with acp_daemon(tmp_path) as s:
        (s.ws / "notes.txt").write_text("the notes\n")
        cid = await s.create()
        conv = await s.run(cid, "stream")
        (assistant,) = items_of(conv, "assistant")
        assert assistant["text"] == "Hello from the scripted agent."
        assert assistant["reasoning"] == "Thinking it over."
        assert assistant["streaming"] is False
        deltas = [e[2] for e in s.sse.events if e[1] == "delta" and e[2]["item"] == assistant["id"]]
        assert "".join(d.get("text", "") for d in deltas) == assistant["text"]
        assert "".join(d.get("reasoning", "") for d in deltas) == assistant["reasoning"]
        assert len(deltas) > 3  # in pieces, as they came
        assert conv["state"] == "idle"

        conv = await s.run(cid, "tool")
        (card,) = items_of(conv, "tool")
        assert card["tool"] == "read" and card["title"] == "Read notes.txt"
        assert card["state"] == "done" and card["result"] == "the notes\n"
        assert card["file"] == "notes.txt" and card["call_id"] == "call-read"
        assert items_of(conv, "assistant")[-1]["text"] == "Done reading."
        assert conv["items"].index(card) < conv["items"].index(items_of(conv, "assistant")[-1])
        states = [e[2]["item"]["state"] for e in s.sse.events if e[1] == "item" and e[2]["item"]["id"] == card["id"]]
        assert states[0] == "running" and states[-1] == "done"

        conv = await s.run(cid, "plan")
        plan = [n for n in items_of(conv, "notice") if n["text"].startswith("Plan:")]
        assert plan and "[x] Read the code" in plan[0]["text"] and "[~] Change it" in plan[0]["text"]

        conv = await s.run(cid, "read ../outside.txt")
        assert "refused: ../outside.txt is outside the workspace" in items_of(conv, "assistant")[-1]["text"]
        assert len(s.received("session/new")) == 1  # one program, one session, kept between messages


async def test_permission_follows_the_mode(tmp_path):
    async with acp_daemon(tmp_path) as s:
        target = s.ws / "a.txt"
        target.write_text("old\n")
        cid = await s.create("ask")
        await s.send(cid, "write a.txt new")
        conv = await s.wait_state(cid, ("waiting",))
        (card,) = items_of(conv, "tool")
        assert card["state"] == "waiting" and card["tool"] == "edit"
        assert "-old" in card["diff"] and "+new" in card["diff"] and card["file"] == "a.txt"
        await trio.sleep(0.3)
        assert target.read_text() == "old\n"  # nothing happens before the answer
        r = await s.c.post(f"/api/conversations/{cid}/approval", json={"item": card["id"], "decision": "approve"})
        assert r.status_code == 200
        conv = await s.wait_state(cid)
        assert target.read_text() == "new"
        assert items_of(conv, "tool")[-1]["state"] == "done"

        await s.send(cid, "write a.txt denied")
        conv = await s.wait_state(cid, ("waiting",))
        card = items_of(conv, "tool")[-1]
        await s.c.post(f"/api/conversations/{cid}/approval", json={"item": card["id"], "decision": "deny"})
        conv = await s.wait_state(cid)
        assert target.read_text() == "new"
        assert items_of(conv, "tool")[-1]["state"] == "denied"
        assert items_of(conv, "assistant")[-1]["text"] == "Not written (selected no)."

        full = await s.create("full")
        conv = await s.run(full, "write b.txt full")
        assert (s.ws / "b.txt").read_text() == "full"
        assert items_of(conv, "tool")[-1]["state"] == "done"
        events = [e[2] for e in s.sse.events if e[1] == "conversation" and e[2]["id"] == full]
        assert [e for e in events if e["state"] == "waiting"] == []  # full asks nobody
        # Even in full, a write outside the workspace is refused, and the daemon goes on.
        outside = tmp_path / "escaped.txt"
        conv = await s.run(full, f"outside {outside}")
        assert not outside.exists()
        assert "refused:" in items_of(conv, "assistant")[-1]["text"]
        conv = await s.run(full, "outside ../../escaped.txt")
        assert not outside.exists() and "outside the workspace" in items_of(conv, "assistant")[-1]["text"]

        ro = await s.create("read_only")
        conv = await s.run(ro, "write c.txt nope")
        assert not (s.ws / "c.txt").exists()
        card = items_of(conv, "tool")[-1]
        assert card["state"] == "denied" and "read-only" in card["result"]
        conv = await s.run(ro, "outside c.txt")  # a write without asking: refused too
        assert not (s.ws / "c.txt").exists() and "read-only" in items_of(conv, "assistant")[-1]["text"]


async def test_permissions_asked_at_once_are_each_a_card_counted_while_it_waits(tmp_path):
    """An agent's parallel calls ask at once: two cards wait, and the conversation says
    so (`waiting_cards`, in the list, the conversation and its events) until each is answered."""
    async with acp_daemon(tmp_path) as s:
        cid = await s.create("ask")

        async def listed(query: str = "") -> dict[str, Any]:
            rows = (await s.c.get(f"/api/conversations{query}")).json()
            return next(r for r in rows if r["id"] == cid)

        async def counted(n: int) -> None:
            with trio.fail_after(20):
                while (await listed())["waiting_cards"] != n:
                    await trio.sleep(0.05)

        await s.send(cid, "writes one.txt two.txt")
        await counted(2)
        assert (await listed("?state=waiting"))["waiting_cards"] == 2
        conv = await s.conv(cid)
        assert conv["state"] == "waiting" and conv["waiting_cards"] == 2
        cards = {c["title"]: c for c in items_of(conv, "tool")}
        assert [cards[t]["state"] for t in ("Write one.txt", "Write two.txt")] == ["waiting", "waiting"]
        r = await s.c.post(f"/api/conversations/{cid}/approval",
                           json={"item": cards["Write one.txt"]["id"], "decision": "approve"})
        assert r.status_code == 200
        await counted(1)
        assert (await listed())["state"] == "waiting"  # the other still waits
        r = await s.c.post(f"/api/conversations/{cid}/approval",
                           json={"item": cards["Write two.txt"]["id"], "decision": "deny"})
        assert r.status_code == 200
        conv = await s.wait_state(cid)
        assert conv["waiting_cards"] == 0 and (await listed())["waiting_cards"] == 0
        assert (s.ws / "one.txt").read_text() == "one.txt" and not (s.ws / "two.txt").exists()
        await s.sse.wait_for(lambda e: e[1] == "conversation" and e[2]["id"] == cid and e[2]["state"] == "idle")
        told = [e[2]["waiting_cards"] for e in s.sse.events if e[1] == "conversation" and e[2]["id"] == cid]
        assert [n for i, n in enumerate(told) if i == 0 or told[i - 1] != n] == [0, 1, 2, 1, 0]


async def test_stop_sends_cancel_and_a_hung_agent_is_ended_whole(tmp_path):
    async with acp_daemon(tmp_path) as s:
        cid = await s.create()
        await s.send(cid, "slow")
        await s.sse.wait_for(lambda e: e[1] == "delta" and e[2]["conversation"] == cid)
        (pid,) = s.agent_pids()
        t0 = time.monotonic()
        r = await s.c.post(f"/api/conversations/{cid}/stop")
        assert r.json() == {"stopped": True}
        assert time.monotonic() - t0 < HONOURED_LIMIT_S  # it honoured session/cancel
        assert len(s.received("session/cancel")) == 1
        conv = await s.conv(cid)
        assert conv["state"] == "idle" and items_of(conv, "notice")[-1]["text"] == notices.STOPPED
        assert all(not i.get("streaming") for i in conv["items"])
        conv = await s.run(cid, "after the stop")
        assert items_of(conv, "assistant")[-1]["text"] == "You said: after the stop"
        assert s.agent_pids() == [pid]  # the same program goes on

        await s.send(cid, "hang")
        ev = await s.sse.wait_for(lambda e: e[1] == "delta" and "child" in e[2].get("text", ""))
        await trio.sleep(0.3)
        pids = s.agent_pids()
        assert pids == [pid]
        child = int(ev[2]["text"].split("child ")[1].split(")")[0])
        assert group_alive(pid)
        t0 = time.monotonic()
        with trio.fail_after(STOP_LIMIT_S):  # TooSlowError: the hung agent was never ended
            stop = await s.c.post(f"/api/conversations/{cid}/stop")
            assert stop.json() == {"stopped": True}
            while group_alive(pid):  # noqa: ASYNC110 (a process group has no event to wait on)
                await trio.sleep(0.02)
        print(f"stop to a hung agent's group gone: {time.monotonic() - t0:.2f} s")
        assert not runs(child)
        conv = await s.conv(cid)
        assert conv["state"] == "idle"
        conv = await s.run(cid, "back again")  # started again, its session loaded
        assert items_of(conv, "assistant")[-1]["text"] == "You said: back again"
        assert s.agent_pids() != [pid] and len(s.agent_pids()) == 1
        assert len(s.received("session/load")) == 1


async def test_a_crash_is_an_error_notice_and_the_next_message_starts_it_again(tmp_path):
    async with acp_daemon(tmp_path) as s:
        cid = await s.create()
        conv = await s.run(cid, "crash")
        assert conv["state"] == "error"
        notice = items_of(conv, "notice")[-1]
        assert notice["level"] == "error" and "stopped unexpectedly" in notice["text"]
        assert "exited with code 3" in notice["text"] and "Send a message" in notice["text"]
        assert items_of(conv, "assistant")[-1]["text"] == "About to fail."
        conv = await s.run(cid, "still there?")
        assert conv["state"] == "idle"
        assert items_of(conv, "assistant")[-1]["text"] == "You said: still there?"


async def test_delete_and_daemon_stop_leave_no_agent_process(tmp_path):
    async with acp_daemon(tmp_path) as s:
        first = await s.create()
        await s.run(first, "one")
        (pid,) = s.agent_pids()
        r = await s.c.delete(f"/api/conversations/{first}")
        assert r.status_code == 200
        assert not group_alive(pid) and s.agent_pids() == []

        second, third = await s.create(), await s.create()
        await s.run(second, "two")
        await s.send(third, "slow")
        await s.sse.wait_for(lambda e: e[1] == "delta" and e[2]["conversation"] == third)
        pids = s.agent_pids()
        assert len(pids) == 2
        daemon = s.d.proc
        s.sse_scope.cancel()
        daemon.terminate()
        with trio.fail_after(30):
            await daemon.wait()
        assert daemon.returncode == 0
        assert [p for p in pids if group_alive(p)] == []
    record = read_saved(tmp_path / "data" / "agent" / "conversations" / f"{third}.json")
    assert record["state"] == "idle"


async def test_a_restarted_daemon_resumes_the_session(tmp_path):
    async with acp_daemon(tmp_path) as s:
        cid = await s.create()
        await s.run(cid, "remember this")
        path = tmp_path / "data" / "agent" / "conversations" / f"{cid}.json"
        sid = (await saved_record(path, lambda r: r.get("acp_session")))["acp_session"]
        assert sid and sid.startswith("sess-")
    async with acp_daemon(tmp_path) as s:
        before = len((await s.conv(cid))["items"])
        conv = await s.run(cid, "session")
        assert items_of(conv, "assistant")[-1]["text"] == f"session {sid} loaded=True cwd={s.ws}"
        assert len(conv["items"]) == before + 2  # the replay added nothing
        assert [m["params"]["sessionId"] for m in s.received("session/load")] == [sid]
    async with acp_daemon(tmp_path, env={"ACP_AGENT_NO_LOAD": "1"}) as s:
        conv = await s.run(cid, "session")
        assert "cannot resume its earlier session" in items_of(conv, "notice")[-1]["text"]
        text = items_of(conv, "assistant")[-1]["text"]
        assert "loaded=False" in text and sid not in text


async def test_an_agent_that_never_starts_is_ended_with_a_clear_error(tmp_path):
    async with acp_daemon(tmp_path, env={"ACP_AGENT_HANG_INIT": "1"}) as s:
        cid = await s.create()
        t0 = time.monotonic()
        conv = await s.run(cid, "hello")
        assert 2.5 < time.monotonic() - t0 < 8
        notice = items_of(conv, "notice")[-1]
        assert conv["state"] == "error" and "did not answer its start" in notice["text"]
        with trio.fail_after(10):  # its program ends a moment after the error, not by a set time
            while s.agent_pids():
                await trio.sleep(0.05)


async def test_the_agent_gets_none_of_the_daemons_secrets(tmp_path):
    key = tmp_path / "key"
    key.write_text("sk-secret-daemon-key\n")
    async with acp_daemon(tmp_path, env={"BMOE_API_KEY": "sk-secret-env", "BMOE_DATA_DIR": str(tmp_path)}) as s:
        cid = await s.create()
        conv = await s.run(cid, "env")
        assert items_of(conv, "assistant")[-1]["text"] == "env: [] values: 0"


@pytest.mark.parametrize("flag", ["--chat-only"])
async def test_chat_only_offers_the_builtin_agent_only(tmp_path, flag):
    agents = write_agents_file(tmp_path / "agents.json")
    async with run_daemon(tmp_path / "data", "--no-model", flag, "--agents-file", str(agents)) as d, d.client() as c:
        r = await c.get("/api/agent")
        assert [a["id"] for a in r.json()["agents"]] == ["builtin"]


# ---- actors/peers/acp/updates.py: what an agent sends, read into item fields (no I/O) ----

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=10,
)


def test_permission_options_are_picked_by_kind():
    options = [{"optionId": "n", "kind": "reject_once"}, {"optionId": "always", "kind": "allow_always"},
               {"optionId": "once", "kind": "allow_once"}]
    assert acp_map.pick_option(options, True) == "once"
    assert acp_map.pick_option(options, False) == "n"
    assert acp_map.pick_option(options[1:], False) is None
    assert acp_map.selected(None) == {"outcome": {"outcome": "cancelled"}}
    assert acp_map.selected("once") == {"outcome": {"outcome": "selected", "optionId": "once"}}


def test_a_tool_call_reads_into_a_card(tmp_path):
    ws = tmp_path.resolve()
    fields = acp_map.tool_fields({
        "toolCallId": "c1", "kind": "edit", "title": "Edit  a.txt", "status": "in_progress",
        "content": [{"type": "diff", "path": str(ws / "src" / "a.txt"), "oldText": "one\n", "newText": "two\n"},
                    {"type": "content", "content": {"type": "text", "text": "edited"}}],
    }, ws, first=True)
    assert fields["tool"] == "edit" and fields["title"] == "Edit a.txt" and fields["state"] == "running"
    assert fields["file"] == "src/a.txt" and fields["result"] == "edited" and fields["args"] == {}
    assert fields["diff"].startswith("--- a/src/a.txt\n+++ b/src/a.txt\n") and "-one\n+two\n" in fields["diff"]
    outside = acp_map.tool_fields({"kind": "nonsense", "content": [
        {"type": "diff", "path": "/etc/passwd", "oldText": None, "newText": "x"}]}, ws, first=True)
    assert outside["tool"] == "other" and "file" not in outside and "+++ b/passwd" in outside["diff"]
    assert acp_map.tool_fields({"status": "failed"}, ws, first=False) == {"state": "error"}
    assert acp_map.tool_fields({"rawInput": {"diff": "--- a\n+++ b\n"}}, ws, first=False)["diff"] == "--- a\n+++ b\n"


@given(update=st.dictionaries(st.sampled_from(["kind", "title", "status", "rawInput", "content", "rawOutput",
                                                "locations", "toolCallId"]), json_values, max_size=6),
       first=st.booleans())
def test_tool_fields_never_raise_on_what_an_agent_sends(update, first):
    fields = acp_map.tool_fields(update, Path("/nonexistent-ws"), first=first)
    assert fields.get("state", "running") in ("running", "done", "error")
    if first:
        assert {"tool", "title", "state", "args"} <= set(fields)


@given(text=st.text(max_size=40), line=json_values, limit=json_values)
def test_text_slices_keep_to_the_text(text, line, limit):
    out = acp_map.text_slice(text, line, limit)
    assert out in text
    if line is None and limit is None:
        assert out == text
