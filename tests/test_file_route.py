"""GET /api/conversations/<id>/file (bmoe_daemon/routes/files.py)."""

from __future__ import annotations

import os
import time

import pytest

from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.routes.files import PREVIEW_MAX_BYTES
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
