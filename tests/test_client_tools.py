"""Tools a client brings (actors/record/client_tools.py, actors/runs/agent/client_calls.py):
kept with the conversation, offered to the model, a call waiting `waiting_client` until
the client's `tool_result`, its timeout or a stop; and a conversation without the
daemon's own tools (`workspace_tools: false`). In process with the scripted engine, then
over HTTP with the real daemon (a restart included)."""

from __future__ import annotations

import pytest
import trio

from actors import notices
from actors.errors import Invalid, NotFound, NotWaiting
from actors.model.backends.generic_grammar import generic_schema
from actors.record.client_tools import ClientTool, checked
from actors.record.transcript import restored
from actors.runs.agent import history
from tests.daemon_proc import SSE, run_daemon
from tests.test_e2e import write_script
from tests.waiting import drained, wait_for, wait_http_state, wait_state

LINE = {"type": "object", "properties": {"line": {"type": "integer", "minimum": 1}}, "required": ["line"]}


def tool(name: str = "highlight", timeout_s: float | None = None, parameters: dict | None = None) -> ClientTool:
    return checked(name, "Highlight a line in the editor.", parameters or LINE, timeout_s)


def cards(conv):
    return [i for i in conv.items if i.kind == "tool"]


def call(name: str = "highlight", **arguments) -> dict:
    return {"tool_calls": [{"name": name, "arguments": arguments or {"line": 3}}]}


def _properties(schema):
    """Every `properties` object in a schema, however deep."""
    if isinstance(schema, dict):
        if isinstance(schema.get("properties"), dict):
            yield schema["properties"]
        for value in schema.values():
            yield from _properties(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _properties(value)


async def waiting_card(conv):
    await wait_for(lambda: any(c.state == "waiting_client" for c in cards(conv)))
    return next(c for c in cards(conv) if c.state == "waiting_client")


# ---- in process ----


async def test_a_call_waits_for_the_client_and_the_model_reads_its_result(daemon):
    conv = await daemon.hub.create(client_tools=(tool(),))
    daemon.backend.push(call(), {"text": "Highlighted."})
    with daemon.bus.subscribe() as sub:
        await conv.send_message("highlight line 3")
        card = await waiting_card(conv)
        requests = [e for e in drained(sub) if e.name == "tool_request"]
    assert [e.data for e in requests] == [{"conversation": conv.id, "item": card.id, "call_id": card.call_id,
                                           "name": "highlight", "arguments": {"line": 3}, "timeout_s": 120.0}]
    assert conv.info.state == "running" and conv.info.waiting_cards == 0  # the client's, not the person's
    assert "highlight" in [t.name for t in daemon.backend.turns[0].tools]
    # A local model without tool syntax is held by a grammar made of the round's tools:
    # a call of the client's tool, to its schema.
    grammar = generic_schema(daemon.backend.turns[0].tools, required=False, strict=True)
    assert {"name": {"const": "highlight"}, "arguments": LINE} in list(_properties(grammar))
    with pytest.raises(NotFound):
        await conv.approve(card.id, True)  # answered by its client, not approved
    with pytest.raises(NotFound):
        conv.client.result("nope", result="x")
    conv.client.result(card.id, result="line 3 is lit")
    await wait_state(conv, "idle")
    assert cards(conv)[0].state == "done" and cards(conv)[0].result == "line 3 is lit"
    sent = daemon.backend.turns[-1].messages
    assert sent[-1] == {"role": "tool", "tool_call_id": card.call_id, "content": "line 3 is lit"}
    assert history.well_formed(sent) is None
    with pytest.raises(NotWaiting):
        conv.client.result(card.id, result="again")


async def test_an_error_from_the_client_is_what_the_model_reads(daemon):
    conv = await daemon.hub.create(client_tools=(tool(),))
    daemon.backend.push(call(), {"text": "It failed."})
    await conv.send_message("go")
    card = await waiting_card(conv)
    conv.client.result(card.id, error="no editor is open")
    await wait_state(conv, "idle")
    assert cards(conv)[0].state == "error"
    assert daemon.backend.turns[-1].messages[-1]["content"] == notices.CLIENT_FAILED.format(
        name="highlight", why="no editor is open")


async def test_no_answer_within_the_timeout_ends_the_card_error(daemon):
    conv = await daemon.hub.create(client_tools=(tool(timeout_s=0.2),))
    daemon.backend.push(call(), {"text": "The editor did not answer."})
    await conv.send_message("go")
    card = await waiting_card(conv)
    await wait_state(conv, "idle")
    assert cards(conv)[0].state == "error"
    assert cards(conv)[0].result == notices.CLIENT_TIMED_OUT.format(name="highlight", seconds=0.2)
    with pytest.raises(NotWaiting):
        conv.client.result(card.id, result="too late")


async def test_a_stop_ends_the_wait_at_once(daemon):
    conv = await daemon.hub.create(client_tools=(tool(),))
    daemon.backend.push(call())
    await conv.send_message("go")
    await waiting_card(conv)
    with trio.fail_after(5):  # far below the tool's 120 s
        await conv.stop()
    assert cards(conv)[0].state == "error" and cards(conv)[0].result == notices.CLIENT_STOPPED
    assert conv.info.end_reason == "stopped"


async def test_arguments_that_do_not_fit_are_not_sent(daemon):
    conv = await daemon.hub.create(client_tools=(tool(),))
    daemon.backend.push(call(line="three"), {"text": "Sorry."})
    with daemon.bus.subscribe() as sub:
        await conv.send_message("go")
        await wait_state(conv, "idle")
        assert not [e for e in drained(sub) if e.name == "tool_request"]
    assert cards(conv)[0].state == "error" and "do not fit highlight's parameters" in cards(conv)[0].result


async def test_a_card_waiting_at_a_restart_ends_error():
    from actors.ids import now
    from actors.record.items import ConversationInfo, ConversationRecord, Item

    info = ConversationInfo(id="c1", title="", workspace=None, mode="ask", route="local", agent="builtin",
                            state="running", created=now(), updated=now(), client_tools=(tool(),))
    card = Item(id="i2", kind="tool", tool="highlight", args={"line": 3}, state="waiting_client", call_id="k")
    fixed = restored(ConversationRecord(info, (Item(id="i1", kind="user", text="go"), card)))
    assert fixed.items[1].state == "error" and fixed.items[1].result == notices.CLIENT_RESTARTED
    assert fixed.info.state == "idle" and fixed.info.client_tools == (tool(),)
    assert ConversationRecord.from_json(fixed.to_json()).info.client_tools[0].parameters == LINE


async def test_names_schemas_and_counts_are_checked(daemon):
    with pytest.raises(Invalid, match="'echo' is taken"):
        await daemon.hub.create(client_tools=(tool("echo"),))
    with pytest.raises(Invalid, match="'todo_write' is taken"):
        await daemon.hub.create(client_tools=(tool("todo_write"),))
    conv = await daemon.hub.create(client_tools=(tool("echo"),), workspace_tools=False)  # then it may
    assert [t.name for t in conv.info.client_tools] == ["echo"]
    with pytest.raises(Invalid, match="Another agent brings its own tools"):
        await conv.patch({"agent": "opencode"})
    with pytest.raises(Invalid, match="'echo' is taken"):
        (await daemon.hub.create()).client.replace((tool("echo"),))
    for bad in ({"type": "string"}, {"type": "object", "properties": {"a": {"type": 5}}}, {"type": "object",
                                                                                          "$schema": []}):
        with pytest.raises(Invalid, match="parameters of 'x' are not usable"):
            checked("x", "", bad, None)
    with pytest.raises(Invalid, match="timeout_s"):
        checked("x", "", LINE, 1801)
    with pytest.raises(Invalid, match="cannot be called"):
        checked("a b", "", LINE, None)


async def test_without_workspace_tools_only_the_clients_are_offered(daemon, tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    ws = await daemon.hub.add_workspace(str(folder))
    conv = await daemon.hub.create(workspace=ws.id, mode="full", workspace_tools=False,
                                   client_tools=(tool(), tool("note")))
    daemon.backend.push(call("note", line=1), {"text": "Noted."})
    await conv.send_message("note it")
    card = await waiting_card(conv)  # the client's note, not the daemon's
    conv.client.result(card.id, result="noted in the app")
    await wait_state(conv, "idle")
    assert [t.name for t in daemon.backend.turns[0].tools] == ["highlight", "note"]
    assert daemon.note.calls == [] and not any(folder.iterdir())
    system = daemon.backend.turns[0].messages[0]["content"]
    assert "no file or command tools" in system and str(folder) not in system
    # The index a start reads keeps both (a False that says something is not left out).
    from bmoe_daemon.store import Store

    await conv.flush()
    await daemon.store.save_index()
    again = {i.id: i for i in await trio.to_thread.run_sync(Store(daemon.data).load_index)}[conv.id]
    assert again.workspace_tools is False and [t.name for t in again.client_tools] == ["highlight", "note"]


# ---- over HTTP, the real daemon ----

SCRIPT = {"rounds": [
    {"when": "light", **call()},
    {"when": "light", "say": "tool_result"},
    {"when": "late", **call()},
    {"when": "late", "say": "tool_result"},
    {"when": "slow", **call("slow_tool", line=1)},
    {"when": "stop", **call()},
    {"when": "which", "say": "tools"},
], "default": {"text": "Done."}}

HIGHLIGHT = {"name": "highlight", "description": "Highlight a line.", "parameters": LINE}


async def test_a_client_tool_over_http_and_after_a_restart(tmp_path):
    script = write_script(tmp_path, SCRIPT)
    data = tmp_path / "data"
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        r = await c.post("/api/conversations", json={"tools": [HIGHLIGHT, {**HIGHLIGHT, "name": "slow_tool",
                                                                           "timeout_s": 0.5}]})
        assert r.status_code == 201 and [t["name"] for t in r.json()["tools"]] == ["highlight", "slow_tool"]
        cid = r.json()["id"]
        assert r.json()["tool_clients"] == 0 and r.json()["workspace_tools"] is True
        async with trio.open_nursery() as nursery:
            sse = SSE(c, path=f"/api/events?tools={cid}")
            await nursery.start(sse.run)
            await sse.wait_for(lambda e: e[1] == "tool_clients" and e[2] == {"conversation": cid, "clients": 1})
            assert (await c.get(f"/api/conversations/{cid}")).json()["tool_clients"] == 1
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "light line 3"})
            _, _, asked = await sse.wait_for(lambda e: e[1] == "tool_request")
            assert asked["name"] == "highlight" and asked["arguments"] == {"line": 3}
            body = (await c.get(f"/api/conversations/{cid}")).json()
            assert body["state"] == "running" and body["items"][-1]["state"] == "waiting_client"
            tr = f"/api/conversations/{cid}/tool_result"
            for bad, code in (({"item": asked["item"]}, 400), ({"item": asked["item"], "result": 1, "error": "x"}, 400),
                              ({"item": "nope", "result": "x"}, 404), ({"result": "x"}, 400)):
                r = await c.post(tr, json=bad)
                assert r.status_code == code and set(r.json()) == {"error", "code"}, (bad, r.text)
            r = await c.post(tr, json={"item": asked["item"], "result": {"lit": [3]}})
            assert r.status_code == 200 and r.json() == {"item": asked["item"], "state": "done"}
            body = await wait_http_state(c, cid, "idle")
            assert body["items"][-1]["text"] == '{"lit": [3]}'  # the model's next request held it
            r = await c.post(tr, json={"item": asked["item"], "result": "again"})
            assert r.status_code == 409 and r.json()["code"] == "not_waiting"
            # No answer within its timeout: the card ends error, saying why.
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "slow"})
            body = await wait_http_state(c, cid, "idle")
            card = [i for i in body["items"] if i["kind"] == "tool"][-1]
            assert card["state"] == "error" and "did not answer within 0.5 s" in card["result"]
            # A stop ends a waiting card at once.
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "stop it"})
            await sse.wait_for(lambda e: e[1] == "tool_request" and e[2]["item"] != asked["item"])
            with trio.fail_after(10):
                assert (await c.post(f"/api/conversations/{cid}/stop")).json() == {"stopped": True}
            body = await wait_http_state(c, cid, "idle")
            card = [i for i in body["items"] if i["kind"] == "tool"][-1]
            assert card["state"] == "error" and card["result"] == notices.CLIENT_STOPPED
            nursery.cancel_scope.cancel()
        with trio.fail_after(10):  # the stream's end is seen when the daemon notices the client left
            while (await c.get(f"/api/conversations/{cid}")).json()["tool_clients"] != 0:
                await trio.sleep(0.02)
        # A call still waiting when the daemon stops ends with the run.
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "late line 3"})
        with trio.fail_after(20):
            while (await c.get(f"/api/conversations/{cid}")).json()["items"][-1].get("state") != "waiting_client":
                await trio.sleep(0.02)
    # After a restart: the tools are kept, and a call is answered by a client that connects afterwards.
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        body = (await c.get(f"/api/conversations/{cid}")).json()
        assert [t["name"] for t in body["tools"]] == ["highlight", "slow_tool"] and body["tool_clients"] == 0
        card = [i for i in body["items"] if i["kind"] == "tool"][-1]
        assert (card["state"], card["result"]) == ("error", notices.CLIENT_STOPPED)
        assert body["items"][-1]["text"] == notices.SHUTDOWN
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "late line 3"})
        with trio.fail_after(20):
            while not any(i.get("state") == "waiting_client" for i in body["items"]):
                await trio.sleep(0.02)
                body = (await c.get(f"/api/conversations/{cid}")).json()
        async with trio.open_nursery() as nursery:
            sse = SSE(c, path=f"/api/events?tools={cid}&last_event_id=0")
            await nursery.start(sse.run)
            _, _, asked = await sse.wait_for(lambda e: e[1] == "tool_request")
            r = await c.post(f"/api/conversations/{cid}/tool_result", json={"item": asked["item"],
                                                                            "result": "lit after the restart"})
            assert r.status_code == 200
            body = await wait_http_state(c, cid, "idle")
            assert body["items"][-1]["text"] == "lit after the restart"
            nursery.cancel_scope.cancel()


async def test_refusals_and_a_conversation_without_host_tools_over_http(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    async with run_daemon(tmp_path / "data", "--scripted", str(write_script(tmp_path, SCRIPT))) as d, \
            d.client() as c:
        for tools, said in (([{**HIGHLIGHT, "name": "read_file"}], "'read_file' is taken"),
                            ([{**HIGHLIGHT, "name": f"t{n}"} for n in range(33)], "at most 32"),
                            ([{**HIGHLIGHT, "parameters": {"type": "array"}}], "of an object"),
                            ([{**HIGHLIGHT, "parameters": {"type": "object", "required": "line"}}],
                             "not a JSON Schema"),
                            ([HIGHLIGHT, HIGHLIGHT], "given twice"),
                            ([{"name": "x", "parameters": LINE}], "description")):
            r = await c.post("/api/conversations", json={"tools": tools})
            assert r.status_code == 400 and said in r.json()["error"], r.text
        assert (await c.get("/api/conversations")).json() == []  # nothing was made
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
        r = await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "full", "workspace_tools": False,
                                                     "tools": [{**HIGHLIGHT, "name": "read_file"}, HIGHLIGHT]})
        assert r.status_code == 201 and r.json()["workspace_tools"] is False
        cid = r.json()["id"]
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "which tools"})
        body = await wait_http_state(c, cid, "idle")
        assert body["items"][-1]["text"] == "read_file, highlight"  # the client's, no host tool
        # PUT .../tools replaces them, checked the same way.
        r = await c.put(f"/api/conversations/{cid}/tools", json={"tools": [HIGHLIGHT]})
        assert r.status_code == 200 and [t["name"] for t in r.json()["tools"]] == ["highlight"]
        other = (await c.post("/api/conversations", json={})).json()["id"]
        r = await c.put(f"/api/conversations/{other}/tools", json={"tools": [{**HIGHLIGHT, "name": "grep_search"}]})
        assert r.status_code == 400 and "'grep_search' is taken" in r.json()["error"]
        r = await c.put(f"/api/conversations/{other}/tools", json={"tools": {"name": "x"}})
        assert r.status_code == 400
        r = await c.get("/api/events?tools=nope")
        assert r.status_code == 404
        # The same checks hold a message's answer_schema (a $schema that is no name was a 500).
        for bad, said in (({"$schema": []}, "$schema cannot be read"), ({"$ref": "https://example.com/s"},
                                                                        "leads outside it")):
            r = await c.post(f"/api/conversations/{other}/messages", json={"text": "x", "answer_schema": bad})
            assert r.status_code == 400 and said in r.json()["error"], r.text


async def test_a_provider_route_gets_the_clients_tools_as_openai_tools(tmp_path):
    from tests.openai_stub import OpenAIStub, answer, call_chunks, chunk

    stub = OpenAIStub()
    async with trio.open_nursery() as outer:
        await outer.start(stub.run)
        stub.replies.append({"chunks": [*call_chunks(0, "call_p", "highlight", '{"line": 7}'),
                                        chunk({}, "tool_calls")]})
        stub.replies.append(answer("Lit, says the provider."))
        async with run_daemon(tmp_path / "data", "--scripted", str(write_script(tmp_path, SCRIPT))) as d, \
                d.client() as c:
            r = await c.post("/api/providers", json={"name": "Stub", "base_url": stub.base_url,
                                                     "models": ["m"]})
            assert r.status_code == 201, r.text
            cid = (await c.post("/api/conversations", json={"route": "stub/m", "tools": [HIGHLIGHT]})).json()["id"]
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "light seven"})
            with trio.fail_after(20):
                while True:
                    body = (await c.get(f"/api/conversations/{cid}")).json()
                    card = next((i for i in body["items"] if i.get("state") == "waiting_client"), None)
                    if card is not None:
                        break
                    await trio.sleep(0.02)
            assert card["args"] == {"line": 7} and card["call_id"] == "call_p"
            r = await c.post(f"/api/conversations/{cid}/tool_result", json={"item": card["id"], "result": "lit"})
            assert r.status_code == 200
            body = await wait_http_state(c, cid, "idle")
            assert body["items"][-1]["text"] == "Lit, says the provider."
        first, second = (req.body for req in stub.received)
        offered = [t for t in first["tools"] if t["function"]["name"] == "highlight"]
        assert offered == [{"type": "function", "function": {"name": "highlight", "description": "Highlight a line.",
                                                             "parameters": LINE}}]
        assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_p", "content": "lit"}
        outer.cancel_scope.cancel()


async def test_a_tool_of_the_daemon_that_takes_its_name_later_wins_and_is_said(daemon):
    from tests.conftest import EchoTool

    conv = await daemon.hub.create(client_tools=(tool("zap"),))
    daemon.hub.env.registry.add(EchoTool(name="zap"))  # as an MCP server started since would bring one
    await conv.send_message("hi")
    await wait_state(conv, "idle")
    await conv.send_message("hi again")
    await wait_state(conv, "idle")
    assert [t.name for t in daemon.backend.turns[-1].tools].count("zap") == 1  # the daemon's, once
    hidden = notices.CLIENT_TOOL_HIDDEN.format(name="zap")
    assert [i.text for i in conv.items if i.kind == "notice"] == [hidden]  # said once
