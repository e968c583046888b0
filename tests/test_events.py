"""The event stream's keep-alive, over the daemon served in-process."""

from __future__ import annotations

import json
from functools import partial

import httpx
import trio

from bmoe_daemon.config import Config
from bmoe_daemon.routes import events
from bmoe_daemon.server import serve
from tests.daemon_proc import SSE


async def test_ping_comment_after_silence(tmp_path, monkeypatch):
    monkeypatch.setattr(events, "PING_S", 0.2)
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"rounds": []}))
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        config = Config(port=0, data_dir=tmp_path / "d", scripted=script)
        url = await nursery.start(partial(serve, config, stop_event=stop))
        async with httpx.AsyncClient(base_url=url, timeout=10) as client:
            sse = SSE(client)
            async with trio.open_nursery() as inner:
                await inner.start(sse.run)
                with trio.fail_after(5):
                    while ": ping" not in sse.comments:
                        await trio.sleep(0.05)
                # The stream is still live after the ping.
                await client.post("/api/conversations", json={"title": "after ping"})
                ev = await sse.wait_for(lambda e: e[1] == "conversation", timeout=5)
                assert ev[2]["title"] == "after ping"
                inner.cancel_scope.cancel()
        stop.set()
