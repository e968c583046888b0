"""Who may use what, over the app's routes with clients on loopback and on the network.

The app runs in-process (Quart's test client) so a request can come from a network
address; everything else about it is the real app.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from actors import errors as actor_errors
from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from tests.waiting import wait_for

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
    for method, path in (("GET", "/api/workspaces"), ("DELETE", f"/api/workspaces/{ws['id']}"),
                         ("GET", "/api/debug/actors")):
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
        ran = daemon.hub.get(conv["id"])
        await wait_for(lambda: ran.info.state == "idle" and not ran.running, timeout=5)
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
        await wait_for(lambda: not conv.running and conv.info.state == "idle", timeout=5)
        names = []
        while True:
            try:
                names.append(remote.receive_nowait())
            except trio.WouldBlock:
                break
        assert names == []
        assert local.receive_nowait() is not None


async def test_unexpected_errors_are_500_internal_without_details(app, daemon, monkeypatch):
    def boom(self, before=None):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(type(daemon.hub), "newest_first", boom)
    status, body = await call(app, "GET", "/api/conversations", LOCAL)
    assert status == 500 and body["code"] == "internal" and "secret" not in body["error"]


async def test_method_not_allowed_names_the_methods_the_route_takes(app):
    resp = await app.test_client().open("/api/conversations", method="PUT", json={}, scope_base=LOCAL)
    body = await resp.get_json()
    assert (resp.status_code, body["code"]) == (405, "method_not_allowed")
    assert body["error"] == "PUT is not allowed on /api/conversations; send GET or POST instead."
    assert set(resp.headers["Allow"].split(", ")) >= {"GET", "POST"}


async def test_a_body_over_the_limit_is_413_too_large_with_the_limit(app, daemon):
    app.config["MAX_CONTENT_LENGTH"] = 1024 * 1024
    client = app.test_client()
    resp = await client.post("/api/workspaces", data=b"x" * (1024 * 1024 + 1), scope_base=LOCAL,
                             headers={"Content-Type": "application/json"})
    body = await resp.get_json()
    assert (resp.status_code, body["code"]) == (413, "too_large")
    assert "larger than 1 MiB" in body["error"] and "send less" in body["error"]
    assert daemon.hub.workspaces() == []


async def test_a_full_disk_is_507_disk_full(app, daemon, tmp_path, monkeypatch):
    async def full(*args, **kwargs):
        raise actor_errors.DiskFull("[Errno 28] No space left on device")

    monkeypatch.setattr(daemon.hub, "add_workspace", full)
    status, body = await call(app, "POST", "/api/workspaces", LOCAL, {"path": str(tmp_path)})
    assert (status, body) == (507, {"code": "disk_full", "error": (
        "The daemon could not save: the disk is full. Free some space, then send again.")})


async def test_dns_rebinding_is_refused(app):
    client = app.test_client()
    resp = await client.open("/api/conversations", method="GET", scope_base=LOCAL,
                             headers={"Host": "evil.example:8765", "Origin": "http://evil.example:8765"})
    assert resp.status_code == 403 and (await resp.get_json())["code"] == "forbidden_origin"
    resp = await client.open("/api/conversations", method="GET", scope_base=LOCAL,
                             headers={"Host": "127.0.0.1:8765", "Origin": "http://127.0.0.1:8765"})
    assert resp.status_code == 200


async def test_every_route_has_a_locality(app):
    """agent_route_locality() decides for every route the app has: none is left to the
    fail-closed default by accident."""
    from bmoe_daemon import access

    rules = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        methods = {"WEBSOCKET"} if rule.websocket else (rule.methods or set()) - {"HEAD", "OPTIONS"}
        rules |= {(m, rule.rule) for m in methods}
    missing = rules - access.known_routes()
    assert not missing, f"routes without a locality in access._ROUTES: {sorted(missing)}"


async def test_the_model_serving_is_told_to_all_its_file_only_to_this_computer(app, daemon):
    """GET /api/model (a conversation's header shows the model and its context): the
    path of its file is this computer's, like GET /api/models'."""
    status, local = await call(app, "GET", "/api/model", LOCAL)
    assert status == 200 and local == {"model": "scripted", "n_ctx": daemon.backend.n_ctx, "path": None,
                                       "led": False, "leading": "auto"}
    status, remote = await call(app, "GET", "/api/model", NET)
    assert status == 200 and remote == {"model": "scripted", "n_ctx": daemon.backend.n_ctx, "led": False,
                                        "leading": "auto"}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/workspaces"),
        ("GET", "/api/providers"),
        ("GET", "/api/skills"),
        ("GET", "/api/tasks"),
        ("GET", "/api/connect"),
        ("GET", "/api/debug/actors"),
        ("POST", "/api/tasks"),
        ("POST", "/api/skills"),
        ("POST", "/api/providers"),
        ("POST", "/api/connect/opencode"),
        ("POST", "/api/conversations/c-none/approval"),
        ("GET", "/api/conversations/c-none/file?path=x"),
        ("POST", "/api/mcp/servers"),
        ("PUT", "/api/mcp/servers/x"),
        ("PATCH", "/api/mcp/servers/x"),
        ("DELETE", "/api/mcp/servers/x"),
    ],
)
async def test_local_routes_refuse_the_network_before_anything_else(app, method, path):
    # Refused before the body is read or the conversation looked up: no 400, no 404.
    status, body = await call(app, method, path, NET, None)
    assert (status, body["code"]) == (403, "local_only"), path
    assert "answers only to a client on this computer" in body["error"]


async def test_cors_only_for_allowed_origins(daemon, tmp_path):
    ctx = DaemonContext(
        config=Config(data_dir=tmp_path, api_key="k" * 24, allowed_origins=("http://localhost:5173",)),
        hub=daemon.hub, engine=daemon.engine, bus=daemon.bus,
    )
    app = create_app(ctx)
    client = app.test_client()
    pre = {"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST", "Host": "127.0.0.1:8765"}
    resp = await client.open("/api/conversations", method="OPTIONS", headers=pre, scope_base=LOCAL)
    assert resp.status_code == 200
    assert resp.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"
    assert "Authorization" in resp.headers["Access-Control-Allow-Headers"]
    other = {**pre, "Origin": "http://localhost:5174"}
    resp = await client.open("/api/conversations", method="OPTIONS", headers=other, scope_base=LOCAL)
    assert resp.status_code == 403 and "Access-Control-Allow-Origin" not in resp.headers
    auth = {"Authorization": "Bearer " + "k" * 24, "Host": "127.0.0.1:8765"}
    resp = await client.get("/api/conversations", headers={**auth, "Origin": "http://localhost:5173"}, scope_base=LOCAL)
    assert resp.status_code == 200 and resp.headers["Access-Control-Allow-Origin"] == "http://localhost:5173"
    resp = await client.get("/api/conversations", headers={**auth, "Origin": "http://127.0.0.1:8765"}, scope_base=LOCAL)
    assert resp.status_code == 200 and "Access-Control-Allow-Origin" not in resp.headers  # its own page
    resp = await client.get("/api/conversations", headers={**auth, "Origin": "http://127.0.0.1:9999"}, scope_base=LOCAL)
    assert (resp.status_code, (await resp.get_json())["code"]) == (403, "forbidden_origin")
    # A preflight does nothing and needs no key; the request after it does.
    resp = await client.post("/api/conversations", json={}, headers={"Origin": "http://localhost:5173"},
                             scope_base=LOCAL)
    assert resp.status_code == 401
