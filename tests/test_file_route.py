"""GET /api/conversations/<id>/file and GET /api/workspaces/<id>/files, the @-mention
listing (bmoe_daemon/routes/files.py)."""

from __future__ import annotations

import json
import os
import time

import pytest

from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.routes import files as files_route
from bmoe_daemon.routes.files import MENTION_MAX_RESULTS, PREVIEW_MAX_BYTES
from tests.special_files import BOUND_S, fifo, sparse, watchdog, zero_link

LOCAL = {"client": ("127.0.0.1", 40000)}
NET = {"client": ("198.51.100.4", 40000)}


@pytest.fixture
async def setup(daemon, tmp_path):
    ws_dir = tmp_path / "ws"
    (ws_dir / "site").mkdir(parents=True)
    (ws_dir / "site" / "page.html").write_text("<script>alert(1)</script><p>hi</p>")
    (ws_dir / "data.json").write_text('{"a": 1}')
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    os.symlink(tmp_path / "secret.txt", ws_dir / "leak")
    ws = await daemon.hub.add_workspace(str(ws_dir))
    conv = await daemon.hub.create(workspace=ws.id)
    app = create_app(DaemonContext(config=Config(data_dir=tmp_path / "d"), hub=daemon.hub, engine=daemon.engine,
                                   bus=daemon.bus))
    return app, conv, ws_dir


async def get(app, path, scope=LOCAL):
    resp = await app.test_client().open(path, method="GET", scope_base=scope)
    return resp, await resp.get_data()


async def test_serves_the_file_sandboxed(setup):
    app, conv, _ = setup
    resp, body = await get(app, f"/api/conversations/{conv.id}/file?path=site/page.html")
    assert resp.status_code == 200
    assert body == b"<script>alert(1)</script><p>hi</p>"
    assert resp.headers["Content-Type"].startswith("text/html")
    assert resp.headers["Content-Security-Policy"].startswith("sandbox")
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    resp, body = await get(app, f"/api/conversations/{conv.id}/file?path=data.json")
    assert resp.headers["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("path", ["../secret.txt", "leak", "/etc/passwd", "~/.bashrc", "missing.txt"])
async def test_outside_or_missing_is_404_without_content(setup, path):
    app, conv, _ = setup
    resp, body = await get(app, f"/api/conversations/{conv.id}/file?path={path}")
    assert resp.status_code == 404
    assert b"TOP SECRET" not in body and b"root:" not in body


async def test_bad_requests(setup):
    app, conv, ws_dir = setup
    resp, _ = await get(app, f"/api/conversations/{conv.id}/file")
    assert resp.status_code == 400
    resp, _ = await get(app, f"/api/conversations/{conv.id}/file?path=site")
    assert resp.status_code == 400
    (ws_dir / "big.bin").write_bytes(b"\0" * (PREVIEW_MAX_BYTES + 1))
    resp, _ = await get(app, f"/api/conversations/{conv.id}/file?path=big.bin")
    assert resp.status_code == 400
    resp, _ = await get(app, "/api/conversations/nope/file?path=data.json")
    assert resp.status_code == 404
    resp, body = await get(app, f"/api/conversations/{conv.id}/file?path=data.json", NET)
    assert resp.status_code == 403 and b"local_only" in body


async def test_a_fifo_is_refused_at_once(setup):
    app, conv, ws_dir = setup
    pipe = fifo(ws_dir / "pipe")
    started = time.monotonic()
    with watchdog(pipe):
        resp, body = await get(app, f"/api/conversations/{conv.id}/file?path=pipe")
    assert time.monotonic() - started < BOUND_S
    assert resp.status_code == 400 and b"FIFO" in body


async def test_a_device_behind_a_link_and_a_huge_sparse_file_are_not_served(setup):
    app, conv, ws_dir = setup
    zero_link(ws_dir / "zero")
    sparse(ws_dir / "huge.bin")
    resp, body = await get(app, f"/api/conversations/{conv.id}/file?path=zero")
    assert resp.status_code == 404 and b"\0" not in body
    resp, body = await get(app, f"/api/conversations/{conv.id}/file?path=huge.bin")
    assert resp.status_code == 400 and b"larger than" in body


# ---- GET /api/workspaces/<id>/files: what `@` completes ----


async def mention(app, ws_id, query="", scope=LOCAL):
    resp, body = await get(app, f"/api/workspaces/{ws_id}/files{query}", scope)
    return resp.status_code, json.loads(body)


async def test_the_files_a_mention_completes_best_first(setup, daemon, tmp_path):
    app, conv, ws_dir = setup
    ws_id = daemon.hub.peek(conv.id).workspace
    (ws_dir / "src" / "app").mkdir(parents=True)
    (ws_dir / "src" / "app" / "main.py").write_text("x")
    (ws_dir / "src" / "domain.py").write_text("x")
    (ws_dir / "Main.md").write_text("x")
    (ws_dir / ".git").mkdir()
    (ws_dir / ".git" / "main.pack").write_text("x")  # not entered
    (ws_dir / "node_modules" / "m").mkdir(parents=True)
    (ws_dir / "node_modules" / "m" / "main.js").write_text("x")
    status, got = await mention(app, ws_id, "?q=MAIN")
    assert status == 200 and got["truncated"] is False
    # File names that start with it (shallow first), then paths that merely hold it; never
    # a link (leak -> outside), a folder, or what lies in .git and node_modules.
    assert got["files"] == ["Main.md", "src/app/main.py", "src/domain.py"]
    status, got = await mention(app, ws_id)
    assert "leak" not in got["files"] and "data.json" in got["files"] and "site" not in got["files"]
    status, got = await mention(app, ws_id, "?q=site/")
    assert got["files"] == ["site/page.html"]
    status, got = await mention(app, ws_id, "?q=nothing-like-this")
    assert (status, got["files"]) == (200, [])


async def test_the_listing_is_bounded(setup, daemon, monkeypatch):
    app, conv, ws_dir = setup
    for n in range(MENTION_MAX_RESULTS + 20):
        (ws_dir / f"f{n:03}.txt").write_text("x")
    status, got = await mention(app, daemon.hub.peek(conv.id).workspace, "?q=f")
    assert status == 200 and len(got["files"]) == MENTION_MAX_RESULTS and got["files"][0] == "f000.txt"
    status, got = await mention(app, daemon.hub.peek(conv.id).workspace, "?q=f&limit=3")
    assert got["files"] == ["f000.txt", "f001.txt", "f002.txt"]
    monkeypatch.setattr(files_route, "MENTION_SCAN_ENTRIES", 10)
    status, got = await mention(app, daemon.hub.peek(conv.id).workspace, "?q=f")
    assert status == 200 and got["truncated"] is True and len(got["files"]) <= 10


@pytest.mark.parametrize(("query", "status"), [
    ("?limit=0", 400), ("?limit=51", 400), ("?limit=abc", 400), ("?limit=-1", 400), ("?q=" + "a" * 201, 400),
])
async def test_a_bad_listing_request_is_400(setup, daemon, query, status):
    app, conv, _ = setup
    got_status, got = await mention(app, daemon.hub.peek(conv.id).workspace, query)
    assert got_status == status and got["code"] == "bad_request" and got["error"]


async def test_an_unknown_workspace_is_404_and_a_network_client_403(setup, daemon):
    app, conv, _ = setup
    status, got = await mention(app, "nope")
    assert (status, got["code"]) == (404, "not_found")
    status, got = await mention(app, daemon.hub.peek(conv.id).workspace, scope=NET)
    assert (status, got["code"]) == (403, "local_only")
