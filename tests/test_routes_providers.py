"""The provider routes (bmoe_daemon/routes/providers.py) over the real app in-process,
with clients on loopback and on the network (Quart's test client); `POST
/api/providers/probe` (issue 31) against a real OpenAI-compatible server on loopback
(tests/openai_stub.py): the model list with a key typed or saved, each failure in plain
words, bad requests 4xx, and the key never in an answer or a log line."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest

from actors.model.providers import probe as probe_module
from actors.model.providers.directory import ProviderDirectory
from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.store import write_atomic
from tests.openai_stub import serving

NET = {"client": ("192.0.2.7", 40000)}
LOCAL = {"client": ("127.0.0.1", 40000)}
KEY = "sk-route-test-8f3a9c"
GOOD = {"name": "Cloud", "base_url": "https://api.example.com/v1", "models": ["gpt-x", "org/model"], "api_key": KEY}


@pytest.fixture
def providers(tmp_path: Path) -> ProviderDirectory:
    return ProviderDirectory(tmp_path / "data", write_file=write_atomic)


@pytest.fixture
def app(daemon, providers, tmp_path: Path):
    ctx = DaemonContext(config=Config(data_dir=tmp_path / "data"), hub=daemon.hub, engine=daemon.engine,
                        bus=daemon.bus, providers=providers)
    return create_app(ctx)


class Client:
    def __init__(self, app) -> None:
        self.app = app
        self.bodies: list[str] = []  # every answer's text, to look for the key in

    async def __call__(self, method, path, scope=LOCAL, json_body=None, raw: bytes | None = None):
        client = self.app.test_client()
        if raw is not None:
            resp = await client.open(path, method=method, data=raw, scope_base=scope,
                                     headers={"Content-Type": "application/json"})
        else:
            resp = await client.open(path, method=method, json=json_body, scope_base=scope)
        text = (await resp.get_data()).decode()
        self.bodies.append(text)
        return resp.status_code, json.loads(text)


async def test_network_clients_get_local_only(app, providers) -> None:
    call = Client(app)
    await providers.add("Kept", "https://kept.example/v1", ["m"], api_key=KEY)
    for method, path, body in (
        ("GET", "/api/providers", None),
        ("POST", "/api/providers", GOOD),
        ("PUT", "/api/providers/kept", GOOD),
        ("DELETE", "/api/providers/kept", None),
        ("PUT", "/api/providers/nope", GOOD),
    ):
        status, got = await call(method, path, NET, body)
        assert (status, got["code"]) == (403, "local_only"), (method, path)
    assert [p["id"] for p in providers.listing()] == ["kept"] and providers.has_key("kept")
    assert providers.listing()[0]["base_url"] == "https://kept.example/v1"
    assert not any(KEY in b for b in call.bodies)


async def test_save_list_change_and_forget(app, providers) -> None:
    call = Client(app)
    status, saved = await call("POST", "/api/providers", LOCAL, GOOD)
    assert status == 201
    assert saved == {"id": "cloud", "name": "Cloud", "base_url": "https://api.example.com/v1",
                     "models": ["gpt-x", "org/model"], "has_key": True}
    status, again = await call("POST", "/api/providers", LOCAL, {**GOOD, "api_key": None})
    assert status == 201 and again["id"] == "cloud-2" and again["has_key"] is False
    status, listed = await call("GET", "/api/providers")
    assert status == 200 and listed == [saved, again]

    status, got = await call("PUT", "/api/providers/cloud", LOCAL, {"name": "Renamed", "base_url": "http://localhost:8080/v1",
                                                                   "models": []})
    assert status == 200 and got == {"id": "cloud", "name": "Renamed", "base_url": "http://localhost:8080/v1",
                                     "models": [], "has_key": True}
    status, got = await call("PUT", "/api/providers/cloud", LOCAL, {**GOOD, "api_key": ""})
    assert status == 200 and got["has_key"] is False and not providers.has_key("cloud")
    status, got = await call("PUT", "/api/providers/cloud", LOCAL, GOOD)
    assert got["has_key"] is True

    for method, path in (("PUT", "/api/providers/nope"), ("DELETE", "/api/providers/nope")):
        status, got = await call(method, path, LOCAL, GOOD)
        assert (status, got["code"]) == (404, "not_found"), method
    status, got = await call("PUT", "/api/providers/nope", LOCAL, raw=b"not json")
    assert status == 404

    status, got = await call("DELETE", "/api/providers/cloud")
    assert status == 200 and got == {"deleted": "cloud"}
    assert [p["id"] for p in providers.listing()] == ["cloud-2"]
    assert KEY not in providers.credentials_path.read_text()
    assert not any(KEY in b for b in call.bodies)


BAD = [
    b"", b"not json", b"[]", b'"x"', b"{}",
    json.dumps({**GOOD, "name": 5}).encode(),
    json.dumps({"name": "x", "models": []}).encode(),
    json.dumps({**GOOD, "models": "gpt"}).encode(),
    json.dumps({**GOOD, "models": [1]}).encode(),
    json.dumps({**GOOD, "api_key": 5}).encode(),
    json.dumps({**GOOD, "name": "  "}).encode(),
    json.dumps({**GOOD, "base_url": "http://api.example.com/v1"}).encode(),
    json.dumps({**GOOD, "base_url": "file:///etc/passwd"}).encode(),
    json.dumps({**GOOD, "api_key": "has space " + KEY}).encode(),
    # a model's context_length: a whole number of tokens in a sane range, or left out
    json.dumps({**GOOD, "models": [{"id": "m", "context_length": 0}]}).encode(),
    json.dumps({**GOOD, "models": [{"id": "m", "context_length": -5}]}).encode(),
    json.dumps({**GOOD, "models": [{"id": "m", "context_length": 10**12}]}).encode(),
    json.dumps({**GOOD, "models": [{"id": "m", "context_length": "32k"}]}).encode(),
    json.dumps({**GOOD, "models": [{"id": "m", "context_length": 4096.5}]}).encode(),
    json.dumps({**GOOD, "models": [{"id": "m", "context_length": True}]}).encode(),
    json.dumps({**GOOD, "models": [{"context_length": 4096}]}).encode(),
    json.dumps({**GOOD, "models": [{"id": "m", "context": 4096}]}).encode(),
    json.dumps({**GOOD, "models": [["m", 4096]]}).encode(),
]


@pytest.mark.parametrize("raw", BAD)
async def test_malformed_bodies_are_400_and_change_nothing(app, providers, raw: bytes) -> None:
    call = Client(app)
    await providers.add("Kept", "https://kept.example/v1", ["m"])
    before = providers.listing()
    for method, path in (("POST", "/api/providers"), ("PUT", "/api/providers/kept")):
        status, got = await call(method, path, LOCAL, raw=raw)
        assert (status, got["code"]) == (400, "bad_request"), (method, raw, got)
        assert set(got) == {"error", "code"} and got["error"]
    assert providers.listing() == before and not providers.has_key("kept")
    assert not any(KEY in b for b in call.bodies)


async def test_http_refusal_says_why(app) -> None:
    status, got = await Client(app)("POST", "/api/providers", LOCAL, {**GOOD, "base_url": "http://api.example.com/v1"})
    assert status == 400 and "use https://" in got["error"]


async def test_a_conversation_route_must_name_a_saved_provider(app, daemon, providers) -> None:
    call = Client(app)
    status, got = await call("POST", "/api/conversations", LOCAL, {"route": "nope/model"})
    assert (status, got["code"]) == (400, "bad_request") and "nope" in got["error"]
    assert daemon.hub.conversations() == []
    await providers.add("Cloud", "https://api.example.com/v1", ["m"])
    status, conv = await call("POST", "/api/conversations", LOCAL, {"route": "cloud/org/m"})
    assert status == 201 and conv["route"] == "cloud/org/m"
    status, got = await call("PATCH", f"/api/conversations/{conv['id']}", LOCAL, {"route": "gone/m"})
    assert (status, got["code"]) == (400, "bad_request")
    assert daemon.hub.get(conv["id"]).info.route == "cloud/org/m"
    status, got = await call("PATCH", f"/api/conversations/{conv['id']}", LOCAL, {"route": "local"})
    assert status == 200 and got["route"] == "local"
    status, got = await call("PATCH", f"/api/conversations/{conv['id']}", LOCAL, {"route": "cloud/m"})
    assert status == 200 and got["route"] == "cloud/m"
    # from the network, a provider route stays local_only whether or not it is saved
    for route in ("cloud/m", "nope/m"):
        status, got = await call("POST", "/api/conversations", NET, {"route": route})
        assert (status, got["code"]) == (403, "local_only")


async def test_a_model_may_carry_its_context_length(app, providers, tmp_path: Path) -> None:
    call = Client(app)
    models = ["plain", {"id": "small", "context_length": 8192}, {"id": "given-default"}]
    status, saved = await call("POST", "/api/providers", LOCAL, {**GOOD, "models": models})
    # As given: a name stays a name; an object without a length is that name too.
    assert status == 201 and saved["models"] == ["plain", {"id": "small", "context_length": 8192}, "given-default"]
    assert (await call("GET", "/api/providers"))[1][0]["models"] == saved["models"]
    assert providers.context_length("cloud/small") == 8192
    assert providers.context_length("cloud/plain") == providers.context_length("cloud/unlisted") == 128_000
    status, changed = await call("PUT", "/api/providers/cloud", LOCAL,
                                 {**GOOD, "models": [{"id": "plain", "context_length": 32_000}]})
    assert status == 200 and changed["models"] == [{"id": "plain", "context_length": 32_000}]
    assert providers.context_length("cloud/plain") == 32_000 and providers.context_length("cloud/small") == 128_000
    # Saved, and read back by a daemon started again.
    again = ProviderDirectory(tmp_path / "data", write_file=write_atomic)
    assert again.listing()[0]["models"] == [{"id": "plain", "context_length": 32_000}]
    assert again.context_length("cloud/plain") == 32_000


async def test_a_bad_context_length_says_what_to_give(app) -> None:
    status, got = await Client(app)("POST", "/api/providers", LOCAL,
                                    {**GOOD, "models": [{"id": "m", "context_length": 10}]})
    assert (status, got["code"]) == (400, "bad_request")
    assert "between 256 and 16777216 tokens" in got["error"] and "'m'" in got["error"]


async def test_a_providers_file_of_plain_names_still_loads(tmp_path: Path) -> None:
    """providers.json as older daemons wrote it (every model a string), and a row one
    cannot use among good ones."""
    path = tmp_path / "data" / "agent" / "providers.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps([
        {"id": "old", "name": "Old", "base_url": "https://old.example/v1", "models": ["a", "b"]},
        {"id": "bad", "name": "Bad", "base_url": "https://bad.example/v1",
         "models": [{"id": "x", "context_length": 1}]},
    ]))
    loaded = ProviderDirectory(tmp_path / "data", write_file=write_atomic)
    assert loaded.listing() == [{"id": "old", "name": "Old", "base_url": "https://old.example/v1",
                                 "models": ["a", "b"], "has_key": False}]
    assert loaded.context_length("old/a") == 128_000


# ---- POST /api/providers/probe ----

PROBE_KEY = "sk-probe-test-5d1e77"
SAVED = "sk-saved-probe-9b2c41"
MODELS = {"object": "list", "data": [{"id": "qwen-7b", "object": "model"}, {"id": "llama-3", "object": "model"},
                                     {"id": "qwen-7b", "object": "model"}]}


async def probe(call: Client, body=None, scope=LOCAL, raw: bytes | None = None):
    return await call("POST", "/api/providers/probe", scope, body, raw)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_the_models_are_listed_with_a_typed_or_a_saved_key(app, providers, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    call = Client(app)
    async with serving() as stub:
        stub.replies = [{"status": 200, "json": MODELS}] * 3
        status, got = await probe(call, {"base_url": stub.base_url + "/", "api_key": PROBE_KEY})
        assert status == 200
        assert got == {"ok": True, "models": ["llama-3", "qwen-7b"], "failure": None, "status": 200,
                       "message": "The key works; the service lists 2 models."}
        asked = stub.received[-1]
        assert (asked.method, asked.path) == ("GET", "/v1/models")
        assert asked.headers["authorization"] == f"Bearer {PROBE_KEY}"
        # Without a key: none is sent.
        status, got = await probe(call, {"base_url": stub.base_url})
        assert got["ok"] and "authorization" not in stub.received[-1].headers
        # A saved provider's key, by its id, to its own host.
        await providers.add("Local", stub.base_url, ["m"], api_key=SAVED)
        status, got = await probe(call, {"base_url": stub.base_url, "provider_id": "local"})
        assert got["ok"] and stub.received[-1].headers["authorization"] == f"Bearer {SAVED}"
        # ... but never to another host: refused before anything is sent.
        sent = len(stub.received)
        other = stub.base_url.replace("127.0.0.1", "localhost")
        status, got = await probe(call, {"base_url": other, "provider_id": "local"})
        assert (status, got["code"]) == (400, "bad_request") and "type the key" in got["error"]
        assert len(stub.received) == sent
    assert not any(k in b for b in call.bodies for k in (PROBE_KEY, SAVED))
    assert not any(k in r.getMessage() for r in caplog.records for k in (PROBE_KEY, SAVED))


@pytest.mark.parametrize(("reply", "failure", "words"), [
    ({"status": 401, "json": {"error": {"message": "bad key"}}}, "key_refused", "refused the key"),
    ({"status": 403, "text": "no"}, "key_refused", "refused the key"),
    ({"status": 404, "text": "not here"}, "not_found", "end it with /v1"),
    ({"status": 500, "text": "boom"}, "refused", "answered 500"),
    ({"status": 302, "text": ""}, "not_openai", "redirects"),
    ({"status": 200, "text": "<html>hello</html>"}, "not_openai", "not with an OpenAI-compatible model list"),
    ({"status": 200, "json": {"models": ["a"]}}, "not_openai", "not with an OpenAI-compatible model list"),
    ({"status": 200, "json": {"data": [{"name": "no id"}]}}, "not_openai", "OpenAI-compatible"),
    ({"status": 200, "json": {"data": ["x" * 1000] * 2500}}, "too_large", "larger than 2 MiB"),
])
async def test_each_failure_is_said_in_plain_words(app, reply, failure, words) -> None:
    call = Client(app)
    async with serving() as stub:
        stub.replies = [reply]
        status, got = await probe(call, {"base_url": stub.base_url, "api_key": PROBE_KEY})
    assert status == 200 and got["ok"] is False and got["models"] == []
    assert got["failure"] == failure and words in got["message"], got
    assert PROBE_KEY not in call.bodies[-1]


async def test_nothing_listening_and_a_service_that_stalls(app, monkeypatch) -> None:
    call = Client(app)
    status, got = await probe(call, {"base_url": f"http://127.0.0.1:{closed_port()}/v1"})
    assert (status, got["ok"], got["failure"]) == (200, False, "unreachable") and "is running" in got["message"]
    monkeypatch.setattr(probe_module, "PROBE_TIMEOUT_S", 0.3)
    async with serving() as stub:
        stub.replies = [{"stall": 5}]
        status, got = await probe(call, {"base_url": stub.base_url})
    assert (status, got["failure"]) == (200, "timeout")


@pytest.mark.parametrize(("body", "code"), [
    (b"{", 400), (b"[]", 400), (b'{"api_key": "k"}', 400), (b'{"base_url": 7}', 400),
    (b'{"base_url": "ftp://host/v1"}', 400), (b'{"base_url": "http://x/v1?a=b"}', 400),
    (b'{"base_url": "http://127.0.0.1:9/v1", "api_key": "has space"}', 400),
    (b'{"base_url": "http://127.0.0.1:9/v1", "provider_id": "nope"}', 404),
])
async def test_a_bad_request_is_4xx_with_words(app, body: bytes, code: int) -> None:
    status, got = await probe(Client(app), raw=body)
    assert status == code and got["error"] and got["code"], got


async def test_a_network_client_is_refused(app) -> None:
    status, got = await probe(Client(app), {"base_url": "http://127.0.0.1:9/v1"}, NET)
    assert (status, got["code"]) == (403, "local_only")
