"""Who may use what, over the app's routes with clients on loopback and on the network.

The app runs in-process (Quart's test client) so a request can come from a network
address; everything else about it is the real app.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext

NET = {"client": ("192.0.2.7", 40000)}
LOCAL = {"client": ("127.0.0.1", 40000)}


@pytest.fixture
async def app(daemon, tmp_path: Path):
    ctx = DaemonContext(config=Config(data_dir=tmp_path), hub=daemon.hub, engine=daemon.engine, bus=daemon.bus)
    return create_app(ctx)


async def call(app, method, path, scope, json=None):
    client = app.test_client()
    resp = await client.open(path, method=method, json=json, scope_base=scope)
    return resp.status_code, await resp.get_json()


async def test_network_client_cannot_reach_this_computer(app, daemon, tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    status, body = await call(app, "POST", "/api/workspaces", NET, {"path": str(folder)})
    assert (status, body["code"]) == (403, "local_only")
    assert daemon.hub.workspaces() == []
    status, ws = await call(app, "POST", "/api/workspaces", LOCAL, {"path": str(folder)})
    assert status == 201
    for method, path in (("GET", "/api/workspaces"), ("DELETE", f"/api/workspaces/{ws['id']}"), ("GET", "/api/debug/actors")):
        status, body = await call(app, method, path, NET)
        assert (status, body["code"]) == (403, "local_only"), path

    for bad in ({"workspace": ws["id"]}, {"route": "prov/model"}, {"mode": "full"}):
        status, body = await call(app, "POST", "/api/conversations", NET, bad)
        assert (status, body["code"]) == (403, "local_only"), bad
    assert daemon.hub.conversations() == []

    status, private = await call(app, "POST", "/api/conversations", LOCAL, {"workspace": ws["id"]})
    assert status == 201
    status, public = await call(app, "POST", "/api/conversations", NET, {"mode": "read_only"})
    assert status == 201
    status, listed = await call(app, "GET", "/api/conversations", NET)
    assert [c["id"] for c in listed] == [public["id"]]
    status, listed = await call(app, "GET", "/api/conversations", LOCAL)
    assert {c["id"] for c in listed} == {public["id"], private["id"]}
    pid = private["id"]
    for method, path, body in (
        ("GET", f"/api/conversations/{pid}", None),
        ("PATCH", f"/api/conversations/{pid}", {"title": "x"}),
        ("DELETE", f"/api/conversations/{pid}", None),
        ("POST", f"/api/conversations/{pid}/messages", {"text": "hi"}),
        ("POST", f"/api/conversations/{pid}/stop", None),
    ):
        status, got = await call(app, method, path, NET, body)
        assert (status, got["code"]) == (403, "local_only"), path
    status, got = await call(app, "PATCH", f"/api/conversations/{public['id']}", NET, {"mode": "full"})
    assert (status, got["code"]) == (403, "local_only")
    assert daemon.hub.get(public["id"]).info.mode == "read_only"


async def test_network_message_runs_without_tools_and_events_stay_local(app, daemon):
    daemon.backend.push({"text": "hi from afar"})
    status, conv = await call(app, "POST", "/api/conversations", NET, {})
    assert status == 201
    with daemon.bus.subscribe(local=False) as remote:
        status, body = await call(app, "POST", f"/api/conversations/{conv['id']}/messages", NET, {"text": "hello"})
        assert status == 202
        with trio.fail_after(5):
            while daemon.hub.get(conv["id"]).info.state != "idle" or daemon.hub.get(conv["id"]).running:
                await trio.sleep(0.01)
        offered = [t.name for t in daemon.backend.turns[-1].tools]
        assert offered == ["echo"]  # no workspace tools for a message from the network
        got = []
        while True:
            try:
                got.append(remote.receive_nowait())
            except trio.WouldBlock:
                break
        assert any(e.name == "delta" for e in got)  # a conversation without a workspace is shared


async def test_private_conversation_events_never_reach_network_streams(app, daemon, tmp_path):
    folder = tmp_path / "w"
    folder.mkdir()
    ws = await daemon.hub.add_workspace(str(folder))
    daemon.backend.push({"text": "secret answer"})
    with daemon.bus.subscribe(local=False) as remote, daemon.bus.subscribe(local=True) as local:
        conv = await daemon.hub.create(workspace=ws.id)
        await conv.send_message("hi")
        with trio.fail_after(5):
            while conv.running or conv.info.state != "idle":
                await trio.sleep(0.01)
        names = []
        while True:
            try:
                names.append(remote.receive_nowait())
            except trio.WouldBlock:
                break
        assert names == []
        assert local.receive_nowait() is not None


async def test_unexpected_errors_are_500_internal_without_details(app, daemon, monkeypatch):
    def boom(self):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(type(daemon.hub), "conversations", boom)
    status, body = await call(app, "GET", "/api/conversations", LOCAL)
    assert status == 500 and body["code"] == "internal" and "secret" not in body["error"]


async def test_method_not_allowed_is_json(app):
    status, body = await call(app, "PUT", "/api/conversations", LOCAL, {})
    assert status == 405 and body["code"] == "bad_request"


async def test_dns_rebinding_is_refused(app):
    client = app.test_client()
    resp = await client.open("/api/conversations", method="GET", scope_base=LOCAL,
                             headers={"Host": "evil.example:8765", "Origin": "http://evil.example:8765"})
    assert resp.status_code == 403 and (await resp.get_json())["code"] == "forbidden_origin"
    resp = await client.open("/api/conversations", method="GET", scope_base=LOCAL,
                             headers={"Host": "127.0.0.1:8765", "Origin": "http://127.0.0.1:8765"})
    assert resp.status_code == 200
