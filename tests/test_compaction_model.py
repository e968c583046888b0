"""Compaction on the bundled model (SmolLM2-135M via llama.cpp) at a small context: a
long conversation goes on through its compactions, never ending in an error (up to
ROUNDS rounds, or until it has been compacted twice and answered since)."""

from __future__ import annotations

import pytest
import trio

from actors import notices
from tests.daemon_proc import run_daemon
from tests.test_model import model_path  # noqa: F401 (a fixture)
from tests.waiting import wait_http_state

pytestmark = pytest.mark.model

ROUNDS = 60
CTX = 2048


def answers(body: dict) -> int:
    return sum(1 for i in body["items"] if i["kind"] == "assistant")


def went_on_after_compacting(body: dict, times: int = 2, after: int = 2) -> bool:
    """The conversation was compacted `times` times and has `after` answers since the
    last: the claim shown, so the test stops there rather than at ROUNDS (on two shared
    cores a round at this context takes seconds, and 60 of them took 20 minutes)."""
    marks = [n for n, i in enumerate(body.get("items", ())) if i.get("compaction")]
    if len(marks) < times:
        return False
    return sum(1 for i in body["items"][marks[-1]:] if i["kind"] == "assistant") >= after


async def one_run(c, cid: str) -> tuple[dict, bool]:
    """The conversation once its run has ended, and whether the test stopped it: a run
    still going when the conversation has its ROUNDS rounds, or has shown the claim
    (compacted twice and answered since, often inside one message's run: a small model
    may go on calling tools to its round cap, minutes at a time), is stopped there. The
    round it was writing is not kept, so the stored rounds can stay one short of ROUNDS:
    the stop itself says the rounds were made."""
    while True:
        body = (await c.get(f"/api/conversations/{cid}")).json()
        if body["state"] in ("idle", "error"):
            return body, False
        if answers(body) >= ROUNDS or went_on_after_compacting(body):
            assert (await c.post(f"/api/conversations/{cid}/stop")).is_success
            return await wait_http_state(c, cid, "idle", "error", timeout=60), True
        await trio.sleep(0.25)


async def test_a_long_conversation_at_a_2048_token_context_compacts_and_never_fails(tmp_path, model_path):  # noqa: F811
    folder = tmp_path / "garden"
    folder.mkdir()
    for n in range(3):
        (folder / f"bed{n}.txt").write_text(f"Bed {n} grows beans and {n + 2} rows of onions.\n" * 30)
    no_skills = tmp_path / "no-skills"
    no_skills.mkdir()
    async with run_daemon(tmp_path / "data", "--ctx-size", str(CTX), "--skills-dir", str(no_skills)) as d:
        async with d.client() as c:
            ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
            cid = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "read_only"})).json()["id"]
            rounds, sent, body, stopped = 0, 0, {}, False
            with trio.fail_after(20 * 60):
                while rounds < ROUNDS and not stopped and not went_on_after_compacting(body):
                    r = await c.post(f"/api/conversations/{cid}/messages",
                                     json={"text": f"What grows in bed{sent % 3}.txt? Answer in one sentence."})
                    assert r.status_code == 202, r.text
                    sent += 1
                    body, stopped = await one_run(c, cid)
                    texts = [i["text"] for i in body["items"] if i["kind"] == "notice"]
                    assert body["state"] == "idle" and body["end_reason"] != "error", texts[-3:]
                    rounds = answers(body)
    items = body["items"]
    texts = [i["text"] for i in items if i["kind"] == "notice"]
    assert notices.CONTEXT_FULL not in texts
    compactions = [i for i in items if i.get("compaction")]
    assert compactions, f"{rounds} rounds at 2,048 tokens and no compaction"
    for notice in compactions:
        assert notice["compaction"]["tokens_after"] < notice["compaction"]["tokens_before"]
    for item in items:  # every round's prompt fitted the context
        if item["kind"] == "assistant" and item.get("usage"):
            assert item["usage"]["prompt_tokens"] <= CTX
    print(f"{rounds} rounds over {sent} messages, {len(compactions)} compactions")
