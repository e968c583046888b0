"""Usage and cost in the web UI (issue 33), in Chromium against the real daemon: a
provider's prices entered on the providers page, the totals by provider there (a cost
only where prices were entered), and a conversation's own totals and budget in its
header, the budget then ending a run with the words the end line says."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import httpx
import trio

from tests.browser import DESKTOP, PageWatch, chromium, require_browser, running_daemon, write_script
from tests.openai_stub import OpenAIStub, answer, call_chunks, chunk


def wait_until(pred, timeout: float = 20.0, what: str = "the condition") -> None:
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


@contextmanager
def stub_server() -> Iterator[OpenAIStub]:
    """The OpenAI-compatible stub on 127.0.0.1, served by trio in a thread of its own."""
    stub = OpenAIStub()
    started = threading.Event()
    box: dict[str, object] = {}

    async def serve() -> None:
        async with trio.open_nursery() as nursery:
            box["token"], box["scope"] = trio.lowlevel.current_trio_token(), nursery.cancel_scope
            await nursery.start(stub.run)
            started.set()

    thread = threading.Thread(target=trio.run, args=(serve,), daemon=True)
    thread.start()
    assert started.wait(10), "the stub did not start"
    try:
        yield stub
    finally:
        trio.from_thread.run_sync(box["scope"].cancel, trio_token=box["token"])  # type: ignore[attr-defined]
        thread.join(10)


def answered(c: httpx.Client, cid: str, text: str) -> dict:
    assert c.post(f"/api/conversations/{cid}/messages", json={"text": text}).status_code == 202
    wait_until(lambda: c.get(f"/api/conversations/{cid}").json()["state"] == "idle"
               and c.get(f"/api/conversations/{cid}").json()["end_reason"] is not None, what="the run's end")
    return c.get(f"/api/conversations/{cid}").json()


def test_prices_totals_and_a_conversation_budget(tmp_path):
    require_browser()
    script = write_script(tmp_path / "script.json", {"rounds": [], "default": {"text": "Local words."}})
    with stub_server() as stub, running_daemon(tmp_path / "data", "--scripted", str(script)) as d, \
            httpx.Client(base_url=d.url, timeout=30) as c:
        assert c.post("/api/providers", json={"name": "Priced", "base_url": stub.base_url,
                                              "models": ["m"]}).status_code == 201
        with chromium() as browser:
            page = browser.new_context(viewport=DESKTOP).new_page()
            # The refusals the test asks for (prices without an output, budgets of 0).
            watch = PageWatch(page, {urlsplit(d.url).netloc}, ("status of 400",))
            page.goto(f"{d.url}/#/providers")
            row = page.get_by_role("listitem", name="Priced")
            row.get_by_text("No prices").wait_for()
            # The prices are entered on the provider's form; one alone is refused beside its field.
            row.get_by_role("button", name="Edit Priced").click()
            form = page.locator(".provider-form")
            form.get_by_label("Input", exact=True).fill("2")
            form.get_by_role("button", name="Save provider").click()
            form.get_by_text("Give the output price").wait_for()
            form.get_by_label("Output", exact=True).fill("8")
            form.get_by_role("button", name="Save provider").click()
            row.get_by_text("Prices per million tokens: $2 input, $8 output.").wait_for()
            assert next(p for p in c.get("/api/providers").json())["prices"] == {
                "input": 2.0, "output": 8.0, "cached": None}

            # Answers: one on the local model, one on the priced provider.
            local = c.post("/api/conversations", json={}).json()["id"]
            answered(c, local, "hello")
            priced = c.post("/api/conversations", json={"route": "priced/m"}).json()["id"]
            stub.replies.append(answer("Priced words.", usage={"prompt_tokens": 1000, "completion_tokens": 250}))
            answered(c, priced, "hi")
            report = c.get("/api/usage").json()

            page.reload()  # the page read its totals before these answers
            table = page.get_by_role("table", name="Usage by provider")
            priced_row = table.locator("tr[data-key=priced]")
            priced_row.get_by_text("$0.004").wait_for()  # (1,000 × $2 + 250 × $8) per million
            assert "1,000" in priced_row.inner_text() and "250" in priced_row.inner_text()
            local_row = table.locator("tr[data-key=local]")
            assert "This computer" in local_row.inner_text() and "free: runs here" in local_row.inner_text()
            tokens = report["local"]["tokens"] + report["provider"]["tokens"]
            page.get_by_role("status").filter(has_text="In all: 2 answers").get_by_text(
                f"{tokens:,} tokens · $0.004").wait_for()
            page.get_by_label("Usage period").select_option(label="Today")
            page.get_by_role("status").filter(has_text="In all: 2 answers").wait_for()

            # The conversation's own totals in its header; a token budget set there.
            page.goto(f"{d.url}/#/c/{priced}")
            head_usage = page.get_by_role("status", name="Usage of this conversation")
            head_usage.get_by_text("1,250 tokens · $0.004").wait_for()
            page.locator(".conv-head").get_by_role("button", name="Budget").click()
            budget = page.get_by_role("form", name="Budget of this conversation")
            budget.get_by_label("Tokens").fill("0")
            budget.get_by_role("button", name="Save budget").click()
            budget.get_by_role("alert").filter(has_text="budget.tokens must be between 1").wait_for()
            budget.get_by_label("Tokens").fill("2000")
            budget.get_by_role("button", name="Save budget").click()
            head_usage.get_by_text("budget 2,000 tokens").wait_for()
            assert c.get(f"/api/conversations/{priced}").json()["budget"] == {"tokens": 2000, "cost": None}

            # A run that passes it ends `budget`, said on the end line; the header counts it.
            stub.replies.append({"chunks": [*call_chunks(0, "call_1", "echo", json.dumps({"text": "x"})),
                                            chunk({}, "tool_calls"),
                                            {"id": "u", "object": "chat.completion.chunk", "choices": [],
                                             "usage": {"prompt_tokens": 900, "completion_tokens": 10}}]})
            page.get_by_role("textbox", name="Message").fill("spend more")
            page.keyboard.press("Enter")
            page.locator(".run-end").filter(has_text="budget of 2,000 tokens is used up").wait_for()
            head_usage.get_by_text("2,160 tokens").wait_for()
            assert c.get(f"/api/conversations/{priced}").json()["end_reason"] == "budget"

            # A task's budget, each run's: a refusal beside its field, then saved.
            page.goto(f"{d.url}/#/tasks")
            page.get_by_role("button", name="New task").click()
            form = page.locator(".task-form")
            form.get_by_label("Prompt").fill("Summarise the day")
            form.get_by_label("Tokens").fill("0")
            form.get_by_role("button", name="Add task").click()
            form.get_by_text("The token budget is a whole number of tokens from 1").wait_for()
            form.get_by_label("Tokens").fill("5000")
            form.get_by_label("Cost (US$)").fill("0.25")
            form.get_by_role("button", name="Add task").click()
            page.get_by_role("listitem", name="Summarise the day").get_by_text(
                "Budget of each run: 5,000 tokens or $0.25").wait_for()
            assert c.get("/api/tasks").json()[0]["budget"] == {"tokens": 5000, "cost": 0.25}
            watch.check()
