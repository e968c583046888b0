"""A page from another origin on this computer cannot drive the daemon (issue 7), in a
real browser: headless Chromium loads a page from a second, plain HTTP server on
another loopback port, and that page tries the daemon's API the way a hostile site
would: a simple POST (`Content-Type: text/plain`, no preflight) that would create a
conversation, the same in `no-cors` mode, and a GET of the conversation list.

The daemon must refuse them (403 forbidden_origin), create nothing, and the page must
not be able to read an answer. The same script from the daemon's own page (its web UI
origin) is the control: there it works.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import httpx
import pytest

from tests.browser import Relay, chromium, require_browser, running_daemon, write_script

PROBE = """
async function probe(target) {
  const out = {};
  const read = async (r) => ({ status: r.status, type: r.type, text: await r.text() });
  try {
    out.post = await read(await fetch(target + "/api/conversations", {
      method: "POST", headers: { "Content-Type": "text/plain" }, body: '{"title": "from the probe"}' }));
  } catch (e) { out.post = { error: String(e) }; }
  try {
    out.blind = await read(await fetch(target + "/api/conversations", {
      method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: '{"title": "blind probe"}' }));
  } catch (e) { out.blind = { error: String(e) }; }
  try {
    out.get = await read(await fetch(target + "/api/conversations"));
  } catch (e) { out.get = { error: String(e) }; }
  return out;
}
"""

PAGE = "<!doctype html><title>another site</title><script>" + PROBE + "</script><p>Another site.</p>"


@contextmanager
def other_site(host: str) -> Iterator[str]:
    """A plain HTTP server on another loopback port that serves the probing page."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    require_browser()
    root = tmp_path_factory.mktemp("origin")
    with running_daemon(root / "data", "--scripted", str(write_script(root / "script.json", {"rounds": []}))) as d:
        yield d


@pytest.fixture(scope="module")
def browser(daemon):
    with chromium() as b:
        yield b


def conversations(daemon) -> list[dict]:
    with httpx.Client(base_url=daemon.url, timeout=30) as c:
        return c.get("/api/conversations").json()


@pytest.mark.parametrize("page_host", ["127.0.0.1", "localhost"])
def test_a_page_on_another_loopback_origin_is_refused(daemon, browser, page_host):
    before = conversations(daemon)
    # The page reaches the daemon through a relay that keeps the daemon's answers: a
    # browser hides from a page (and from its devtools) an answer that CORS refused.
    relay = Relay(daemon.url)
    try:
        with other_site(page_host) as site:
            ctx = browser.new_context()
            page = ctx.new_page()
            target = urlsplit(relay.url).netloc
            sent: list[str] = []
            page.on("request", lambda r: sent.append(r.method) if urlsplit(r.url).netloc == target else None)
            page.goto(site + "/")
            assert page.evaluate("location.origin") == site
            result = page.evaluate("(target) => probe(target)", relay.url)
            ctx.close()
    finally:
        relay.close()
    assert sent == ["POST", "POST", "GET"], sent
    # the daemon refused each of them: 403 forbidden_origin
    answers = bytes(relay.answers).decode(errors="replace")
    statuses = re.findall(r"HTTP/1\.1 (\d{3})", answers)
    assert statuses == ["403", "403", "403"], answers
    assert answers.count('"code":"forbidden_origin"') == 3, answers
    # and the page could read none of it
    assert "error" in result["post"], result
    assert result["blind"].get("type") == "opaque" and result["blind"]["text"] == "", result
    assert "error" in result["get"], result
    # nothing was created
    assert conversations(daemon) == before


def test_the_daemons_own_page_may_use_it(daemon, browser):
    """The control: the same script, from the daemon's own origin, works."""
    before = len(conversations(daemon))
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(daemon.url + "/")
    # evaluated by the browser's devtools protocol, as the UI's own script would run
    result = page.evaluate("async (target) => { " + PROBE + " return await probe(target); }", daemon.url)
    ctx.close()
    assert result["post"]["status"] == 201, result
    assert json.loads(result["post"]["text"])["title"] == "from the probe"
    assert result["get"]["status"] == 200
    titles = [c["title"] for c in json.loads(result["get"]["text"])]
    assert "from the probe" in titles
    assert len(conversations(daemon)) == before + 2  # the no-cors POST went through too
