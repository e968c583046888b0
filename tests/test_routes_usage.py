"""GET /api/usage (bmoe_daemon/routes/usage.py) over the real app in-process: the sums
of a ledger written beforehand, each grouping and `since`, the labels a person reads,
every malformed query a 400 {error, code}, and a client on the network refused."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest

from actors.model.providers.directory import ProviderDirectory
from actors.model.usage import Entry, UsageLedger
from actors.scheduling.schedule import local_zone
from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.store import write_atomic

LOCAL = {"client": ("127.0.0.1", 40000)}
NET = {"client": ("192.0.2.7", 40000)}
ZONE = local_zone()
TODAY = datetime.datetime.now(ZONE).replace(hour=12, minute=0, second=0, microsecond=0)
YESTERDAY = TODAY - datetime.timedelta(days=1)


@pytest.fixture
async def ledger(tmp_path: Path) -> UsageLedger:
    led = UsageLedger(tmp_path / "data", zone=ZONE)
    led.load()
    return led


@pytest.fixture
async def app(daemon, ledger, tmp_path: Path):
    providers = ProviderDirectory(tmp_path / "data", write_file=write_atomic)
    await providers.add("Cloud Co", "https://api.example.com/v1", ["big"], prices={"input": 1, "output": 2})
    conv = await daemon.hub.create(title="Titled")
    for at, cid, route, provider, model, p, c, cost in (
        (YESTERDAY, conv.id, "local", "local", "tiny.gguf", 100, 10, None),
        (TODAY, conv.id, "provider", "cloud-co", "big", 1000, 100, 0.0012),
        (TODAY, "gone", "provider", "cloud-co", "big", 10, 1, 0.00001),
    ):
        ledger.append_nowait(Entry(at.timestamp(), cid, None, route, provider, model, "i", p, c, 0, cost))
    ctx = DaemonContext(config=Config(data_dir=tmp_path / "data"), hub=daemon.hub, engine=daemon.engine,
                        bus=daemon.bus, providers=providers, usage=ledger)
    app = create_app(ctx)
    app.conv_id = conv.id  # type: ignore[attr-defined]
    return app


async def get(app, query: str, scope=LOCAL) -> tuple[int, dict]:
    resp = await app.test_client().get(f"/api/usage{query}", scope_base=scope)
    return resp.status_code, json.loads(await resp.get_data())


async def test_sums_by_each_grouping_with_labels(app) -> None:
    status, body = await get(app, "")
    assert status == 200 and body["by"] == "provider" and body["since"] is None
    assert [(g["key"], g["label"]) for g in body["groups"]] == [("cloud-co", "Cloud Co"), ("local", "This computer")]
    assert body["local"]["tokens"] == 110 and body["local"]["cost"] is None
    assert body["provider"]["tokens"] == 1111 and body["provider"]["cost"] == pytest.approx(0.00121)
    _, by_conv = await get(app, "?by=conversation")
    labels = {g["key"]: g["label"] for g in by_conv["groups"]}
    assert labels == {app.conv_id: "Titled", "gone": None}  # a deleted one keeps what it spent
    _, by_day = await get(app, "?by=day")
    assert [g["key"] for g in by_day["groups"]] == [YESTERDAY.date().isoformat(), TODAY.date().isoformat()]
    _, since = await get(app, f"?by=day&since={TODAY.date().isoformat()}")
    assert [g["key"] for g in since["groups"]] == [TODAY.date().isoformat()] and since["local"]["answers"] == 0
    _, one = await get(app, f"?by=model&conversation={app.conv_id}")
    assert {g["key"] for g in one["groups"]} == {"tiny.gguf", "cloud-co/big"}


@pytest.mark.parametrize("query", [
    "?by=week", "?by=", "?since=yesterday", "?since=2026-02-30", "?since=", "?colour=red", "?conversation=",
    "?task=" + "x" * 300, "?since=2026-01-01T25:00",
])
async def test_a_malformed_query_is_a_400_saying_what_is_taken(app, query: str) -> None:
    status, body = await get(app, query)
    assert status == 400 and set(body) == {"error", "code"} and body["code"] == "bad_request", body
    assert body["error"]


async def test_a_client_on_the_network_is_refused(app) -> None:
    status, body = await get(app, "", NET)
    assert (status, body["code"]) == (403, "local_only")


async def test_a_daemon_without_a_ledger_says_so(daemon, tmp_path: Path) -> None:
    app = create_app(DaemonContext(config=Config(data_dir=tmp_path / "data"), hub=daemon.hub, engine=daemon.engine,
                                   bus=daemon.bus))
    status, body = await get(app, "")
    assert status == 400 and "no usage ledger" in body["error"]
