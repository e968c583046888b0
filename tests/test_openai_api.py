"""/v1 for other apps, driven by the official `openai` client against the real daemon
serving the bundled GGUF."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
import trio

from tests.daemon_proc import run_daemon

pytestmark = pytest.mark.model

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


@pytest.fixture
async def served(tmp_path):
    async with run_daemon(tmp_path / "data", "--ctx-size", "4096") as d:
        yield d


async def test_models_and_plain_completion(served):
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="unused")
    models = await trio.to_thread.run_sync(client.models.list)
    ids = [m.id for m in models.data]
    assert ids and ids[0].startswith("SmolLM2")
    reply = await trio.to_thread.run_sync(
        lambda: client.chat.completions.create(
            model=ids[0], messages=[{"role": "user", "content": "Say hi."}], max_tokens=12
        )
    )
    assert reply.choices[0].message.role == "assistant"
    assert reply.choices[0].message.content
    assert reply.choices[0].finish_reason in ("stop", "length")
    assert reply.usage.completion_tokens > 0


async def test_streaming_with_usage(served):
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="unused")

    def run():
        stream = client.chat.completions.create(
            model="any", messages=[{"role": "user", "content": "Count to three."}], max_tokens=16,
            stream=True, stream_options={"include_usage": True},
        )
        return list(stream)

    chunks = await trio.to_thread.run_sync(run)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text
    finals = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finals) == 1
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


async def test_tool_call_required_streaming_and_not(served):
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="unused")
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]

    reply = await trio.to_thread.run_sync(
        lambda: client.chat.completions.create(
            model="any", messages=messages, tools=TOOLS, tool_choice="required", max_tokens=200
        )
    )
    call = reply.choices[0].message.tool_calls[0]
    assert reply.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "get_weather"
    assert isinstance(json.loads(call.function.arguments), dict)

    def run():
        return list(client.chat.completions.create(
            model="any", messages=messages, tools=TOOLS, tool_choice="required", max_tokens=200, stream=True
        ))

    chunks = await trio.to_thread.run_sync(run)
    calls = streamed_calls(chunks)  # the model may make up to 4 calls at once
    assert 1 <= len(calls) <= 4
    for call_id, name, args in calls:
        assert call_id and name == "get_weather"
        assert isinstance(json.loads(args), dict)
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["tool_calls"]


def streamed_calls(chunks) -> list[tuple[str, str, str]]:
    """The calls of a stream as (id, name, arguments), each gathered by its index:
    the first delta of an index names it, the later ones add to its arguments."""
    calls: dict[int, list[str]] = {}
    for c in chunks:
        for tc in (c.choices[0].delta.tool_calls or []) if c.choices else []:
            call = calls.setdefault(tc.index, ["", "", ""])
            call[0] = call[0] or tc.id or ""
            call[1] = call[1] or (tc.function.name if tc.function else "") or ""
            call[2] += (tc.function.arguments if tc.function else "") or ""
    return [(i, n, a) for i, n, a in (calls[k] for k in sorted(calls))]


async def test_a_call_cut_by_max_tokens_ends_with_length(served):
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="unused")
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    for stream in (False, True):
        def run(stream=stream):
            made = client.chat.completions.create(
                model="any", messages=messages, tools=TOOLS, tool_choice="required", max_tokens=8, stream=stream)
            return list(made) if stream else made

        got = await trio.to_thread.run_sync(run)
        reasons = ([c.choices[0].finish_reason for c in got if c.choices and c.choices[0].finish_reason]
                   if stream else [got.choices[0].finish_reason])
        assert reasons == ["length"]  # not "tool_calls": the call was never finished


async def test_a_tool_schema_with_bounds_llama_cpp_refuses_is_served(served):
    """llama.cpp refuses a grammar with a repetition past 2,000 (maxLength 5000), and a
    sampler built from a refused one crashed the daemon: the bound is left to the tool."""
    tools = [{"type": "function", "function": {"name": "save", "description": "Saves a note.", "parameters": {
        "type": "object", "required": ["text", "tags"], "properties": {
            "text": {"type": "string", "maxLength": 5000},
            "tags": {"type": "array", "items": {"type": "integer"}, "maxItems": 3000}}}}}]
    async with httpx.AsyncClient(base_url=served.url, timeout=120) as c:
        r = await c.post("/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "Save a note saying hi."}], "tools": tools,
            "tool_choice": "required", "max_tokens": 200})
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        call = choice["message"]["tool_calls"][0]["function"]
        assert call["name"] == "save"
        if choice["finish_reason"] == "tool_calls":  # else the note ran past max_tokens
            assert isinstance(json.loads(call["arguments"]), dict)
        assert (await c.get("/health")).status_code == 200  # still there


async def test_parallel_tool_calls_off_means_one_call(served):
    client = openai.OpenAI(base_url=served.url + "/v1", api_key="unused")
    messages = [{"role": "user", "content": "What is the weather in Paris, Rome, Oslo and Lima?"}]

    def run():
        return list(client.chat.completions.create(
            model="any", messages=messages, tools=TOOLS, tool_choice="required", max_tokens=120, stream=True,
            parallel_tool_calls=False,
        ))

    for _ in range(3):  # the grammar holds every sample to one call
        calls = streamed_calls(await trio.to_thread.run_sync(run))
        assert len(calls) == 1 and calls[0][1] == "get_weather"
        assert isinstance(json.loads(calls[0][2]), dict)
    async with httpx.AsyncClient(base_url=served.url, timeout=60) as c:
        r = await c.post("/v1/chat/completions", json={"messages": messages, "parallel_tool_calls": "no"})
        assert r.status_code == 400 and "parallel_tool_calls" in r.json()["error"]


async def test_bad_requests_and_disconnect(served):
    async with httpx.AsyncClient(base_url=served.url, timeout=60) as c:
        msgs = [{"role": "user", "content": "x"}]
        for body in ({}, {"messages": []}, {"messages": [{"role": "robot", "content": "x"}]},
                     {"messages": [{"role": "user", "content": 5}]}, {"messages": msgs, "tools": "x"},
                     {"messages": msgs, "temperature": "hot"}):
            r = await c.post("/v1/chat/completions", json=body)
            assert r.status_code == 400 and r.json()["code"] == "bad_request", body
        # A streaming client that goes away frees the turn line for the next request.
        host, port = served.url.removeprefix("http://").rsplit(":", 1)
        payload = json.dumps({"messages": [{"role": "user", "content": "Write a very long story."}],
                              "max_tokens": 2000, "stream": True}).encode()
        sock = await trio.open_tcp_stream(host, int(port))
        await sock.send_all(b"POST /v1/chat/completions HTTP/1.1\r\nHost: " + host.encode() +
                            b"\r\nContent-Type: application/json\r\nContent-Length: " + str(len(payload)).encode() +
                            b"\r\n\r\n" + payload)
        got = b""
        with trio.fail_after(60):
            while b"content" not in got:
                got += await sock.receive_some(4096)
        await sock.aclose()
        with trio.fail_after(30):
            r = await c.post("/v1/chat/completions", json={"messages": msgs, "max_tokens": 4})
        assert r.status_code == 200
        tree = (await c.get("/api/debug/actors")).json()
        engine = next(ch for ch in tree["children"] if ch["kind"] == "engine")
        assert engine["state"] == "idle"
