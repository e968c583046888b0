"""--chat-only: plain chat held by the daemon, with no tools, agent prompt, workspaces or tasks."""

from __future__ import annotations

import json
from pathlib import Path

import trio

from actors.bus import EventBus
from actors.conversations.hub import Hub
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.runs.env import Env
from bmoe_daemon.config import Config
from bmoe_daemon.server import build_registry
from bmoe_daemon.store import Store
from tests.daemon_proc import run_daemon


async def test_chat_only_conversation_is_plain_chat(tmp_path: Path) -> None:
    backend = ScriptedBackend()
    backend.push({"text": "Just chat."})
    store = Store(tmp_path / "data")
    registry = build_registry(Config(data_dir=tmp_path / "data", chat_only=True))
    assert registry.names() == []
    engine = Engine(backend)
    env = Env(engine=engine, bus=EventBus(), store=store, registry=registry, resolve_workspace=lambda _: None,
              chat_only=True)
    hub = Hub(env, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(hub.run)
        conv = await hub.create()
        await conv.send_message("hello there")
        with trio.fail_after(10):
            while conv.info.state != "idle" or len(conv.items) < 2:
                await trio.sleep(0.01)
        turn = backend.turns[0]
        assert not turn.tools
        assert [m["role"] for m in turn.messages] == ["user"]  # no agent prompt
        assert conv.items[-1].text == "Just chat."
        hub.close()
        engine.close()


async def test_chat_only_daemon_refuses_folders_and_tasks(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"rounds": [{"text": "Plain answer."}]}))
    folder = tmp_path / "ws"
    folder.mkdir()
    async with run_daemon(tmp_path / "data", "--chat-only", "--scripted", str(script)) as d, d.client() as c:
        agent = (await c.get("/api/agent")).json()
        assert agent["tools"] is False and agent["commands"] is False and agent["mcp"] == []
        assert [a["id"] for a in agent["agents"]] == ["builtin"]
        r = await c.post("/api/workspaces", json={"path": str(folder)})
        assert (r.status_code, r.json()["code"]) == (400, "bad_request")
        assert "chat" in r.json()["error"]
        assert (await c.get("/api/workspaces")).json() == []
        r = await c.post("/api/conversations", json={"workspace": "w-any"})
        assert (r.status_code, r.json()["code"]) == (400, "bad_request")
        r = await c.post(
            "/api/tasks",
            json={"title": "t", "prompt": "p", "schedule": {"kind": "interval", "every_minutes": 60}},
        )
        assert (r.status_code, r.json()["code"]) == (400, "bad_request")
        r = await c.post("/api/conversations", json={})
        assert r.status_code == 201
        cid = r.json()["id"]
        assert (await c.post(f"/api/conversations/{cid}/messages", json={"text": "hi"})).status_code == 202
        with trio.fail_after(20):
            while True:
                conv = (await c.get(f"/api/conversations/{cid}")).json()
                if conv["state"] == "idle" and len(conv["items"]) == 2:
                    break
                await trio.sleep(0.05)
        assert conv["items"][1]["text"] == "Plain answer."
