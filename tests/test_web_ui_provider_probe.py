"""A provider's form tests its address and key and fetches its models before saving
(issue 31), in Chromium against the real daemon and a real OpenAI-compatible server on
loopback: a refused key said in plain words, the models listed and ticked into the
Models field, an edited provider tested with its saved key (never shown), on a desktop
and a phone, with no console error and no request off the daemon."""

from __future__ import annotations

import httpx

from tests.browser import DESKTOP, PHONE, PageWatch, chromium, require_browser, running_daemon, screenshot, write_script
from tests.openai_stub import OpenAIStub
from tests.test_web_ui_usage import stub_server, wait_until

KEY = "sk-browser-probe-77aa31"
MODELS = {"object": "list", "data": [{"id": "alpha-8b"}, {"id": "beta-70b"}]}


class KeyedModels(OpenAIStub):
    """GET /models answered only for the right key, as a real service does."""

    def reply_for(self, request):
        if request.headers.get("authorization") != f"Bearer {KEY}":
            return {"status": 401, "json": {"error": {"message": "Incorrect API key provided"}}}
        return {"status": 200, "json": MODELS}


def walk(page, d, stub, name: str) -> None:
    """One provider added on `page`, its key tested and its models fetched; then edited."""
    watch = PageWatch(page, {d.netloc}, ("status of 400",))  # the saved key to a new address, below
    page.goto(f"{d.url}/#/providers")
    page.get_by_role("button", name="Add a provider").click()
    form = page.locator(".provider-form")
    form.get_by_label("Name", exact=True).fill(f"Local {name}")
    form.get_by_label("Base URL").fill(stub.base_url)
    status = form.get_by_role("status")
    # No key: the service's refusal, in words.
    form.get_by_role("button", name="Test").click()
    wait_until(lambda: "needs a key" in status.inner_text(), what="the refusal")
    form.get_by_label("API key").fill("sk-wrong")
    form.get_by_role("button", name="Test").click()
    wait_until(lambda: "refused the key" in status.inner_text(), what="the wrong key refused")
    # The right key: the models listed, ticked into the Models field.
    form.get_by_label("API key").fill(KEY)
    form.get_by_role("button", name="Fetch models").click()
    wait_until(lambda: "lists 2 models" in status.inner_text(), what="the model list")
    form.get_by_role("checkbox", name="beta-70b").check()
    form.get_by_role("checkbox", name="alpha-8b").check()
    assert form.get_by_label("Models", exact=True).input_value() == "beta-70b, alpha-8b"
    form.get_by_label("Context of alpha-8b").wait_for()  # the context fields follow the list
    form.get_by_role("checkbox", name="beta-70b").uncheck()
    assert form.get_by_label("Models", exact=True).input_value() == "alpha-8b"
    screenshot(page, f"{name}-provider-probe")
    form.get_by_role("button", name="Add provider").click()
    row = page.get_by_role("listitem", name=f"Local {name}")
    row.get_by_text("key saved").wait_for()
    # Edited later, the saved key is used by the provider's id and never shown.
    row.get_by_role("button", name=f"Edit Local {name}").click()
    form = page.locator(".provider-form")
    form.get_by_role("button", name="Test").click()
    wait_until(lambda: "The key works" in form.get_by_role("status").inner_text(), what="the saved key")
    assert KEY not in page.content()
    # A new address with the saved key: refused beside the key field, nothing sent.
    asked = len(stub.received)
    form.get_by_label("Base URL").fill(stub.base_url.replace("127.0.0.1", "localhost"))
    form.get_by_role("button", name="Test").click()
    form.get_by_text("type the key to test it with the new one").wait_for()
    assert len(stub.received) == asked
    watch.check()


def test_a_providers_form_tests_the_key_and_fetches_the_models(tmp_path, monkeypatch):
    require_browser()
    monkeypatch.setattr("tests.test_web_ui_usage.OpenAIStub", KeyedModels)
    script = write_script(tmp_path / "script.json", {"rounds": [], "default": {"text": "ok"}})
    with stub_server() as stub, running_daemon(tmp_path / "data", "--scripted", str(script)) as d, \
            chromium() as browser, httpx.Client(base_url=d.url, timeout=30) as c:
        for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            page = browser.new_context(viewport=viewport).new_page()
            walk(page, d, stub, name)
            page.context.close()
        saved = {p["name"]: p for p in c.get("/api/providers").json()}
        assert saved["Local desktop"]["models"] == ["alpha-8b"] and saved["Local desktop"]["has_key"]
        assert KEY not in c.get("/api/providers").text
        assert KEY not in d.stderr()
