"""Browser test helpers: Debian's Chromium driven by Playwright, and the real daemon as a
process, both from plain (sync) tests.

Chromium is the system's (`/usr/bin/chromium`, `apt-get install chromium`), never a
browser Playwright downloads. Without it, or without the `playwright` package, the
browser tests skip and say why (fail, under BMOE_REQUIRE_PEERS: tests/peers.py).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.peers import need_modules, need_peer

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("BMOE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 40
# The screenshots the README and the docs show are refreshed by a command of their own,
# ops/screenshots.sh, which sets BMOE_SCREENSHOTS=1; an ordinary test run takes them all
# the same (a page that cannot be drawn still fails) but into a folder outside the work
# tree, so a test run leaves it clean.
SCREENSHOTS = REPO / "docs" / "screenshots"
SCRATCH_SHOTS = Path(tempfile.gettempdir()) / "bmoe-screenshots"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


def require_browser() -> None:
    """End the calling test (`need_peer`) when Chromium or Playwright is missing."""
    if not CHROMIUM.exists():
        need_peer(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) to run this test")
    need_modules("the playwright package is missing: pip install playwright (the `test` extra)", "playwright.sync_api")


class Daemon:
    def __init__(self, proc: subprocess.Popen[bytes], url: str, data_dir: Path, stderr_path: Path) -> None:
        self.proc = proc
        self.url = url
        self.data_dir = data_dir
        self.stderr_path = stderr_path
        self.home: Path | None = None  # its own HOME, where one was given (scripted_daemon)

    @property
    def netloc(self) -> str:
        return urlsplit(self.url).netloc

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def start_daemon(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> Daemon:
    """`python -m bmoe_daemon serve --port 0 --data-dir D ARGS`, once it prints its address."""
    data_dir.mkdir(parents=True, exist_ok=True)
    stderr_path = data_dir.parent / f"{data_dir.name}.stderr.log"
    cmd = [sys.executable, "-m", "bmoe_daemon", "serve", "--port", "0", "--data-dir", str(data_dir), *args]
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    with open(stderr_path, "ab") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=full_env, cwd=str(REPO))
    assert proc.stdout is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    buf = b""
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                proc.kill()
                proc.wait()
                raise RuntimeError(f"the daemon did not start in {START_TIMEOUT_S} s: {stderr_path.read_text()}")
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                proc.wait()
                raise RuntimeError(f"the daemon exited before listening: {stderr_path.read_text()}")
            buf += chunk
            for line in buf.decode(errors="replace").splitlines():
                if line.startswith("listening on "):
                    return Daemon(proc, line.removeprefix("listening on ").strip(), data_dir, stderr_path)


@contextmanager
def running_daemon(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[Daemon]:
    daemon = start_daemon(data_dir, *args, env=env)
    try:
        yield daemon
    finally:
        daemon.stop()


def write_script(path: Path, script: dict[str, Any]) -> Path:
    path.write_text(json.dumps(script))
    return path


@contextmanager
def scripted_daemon(root: Path, script: dict[str, Any], *args: str) -> Iterator[Daemon]:
    """A daemon playing `script` on the scripted backend, its data folder and a HOME of
    its own under `root` (Connect writes other apps' settings there, not in the real
    home): `d.home`."""
    home = root / "home"
    home.mkdir(exist_ok=True)
    with running_daemon(root / "data", "--scripted", str(write_script(root / "script.json", script)), *args,
                        env={"HOME": str(home)}) as d:
        d.home = home
        yield d


@contextmanager
def page_opener(browser: Any, url: str, wait_ms: int) -> Iterator[Callable[..., Any]]:
    """`opener(route, viewport=, color_scheme=, allowed_errors=, base=)`: the UI at `route`
    (of `base`, the daemon at `url` unless given) in a fresh context, once it says it is
    Live; each page's conduct (PageWatch) is checked, and its context closed, when the
    block ends."""
    contexts: list[Any] = []
    watches: list[PageWatch] = []

    def opener(route: str = "", viewport: dict[str, int] = DESKTOP, color_scheme: str = "light",
               allowed_errors: tuple[str, ...] = (), base: str | None = None) -> Any:
        ctx = browser.new_context(viewport=viewport, color_scheme=color_scheme)
        contexts.append(ctx)
        page = ctx.new_page()
        page.set_default_timeout(wait_ms)
        base = base or url
        watches.append(PageWatch(page, {urlsplit(base).netloc}, allowed_errors))
        page.goto(f"{base}/{route}")
        # The connection's status line (hidden behind a menu on a phone, so attached).
        page.locator("#conn").filter(has_text="Live").wait_for(state="attached")
        return page

    yield opener
    for ctx in contexts:
        ctx.close()
    for w in watches:
        w.check()


# One Chromium for a test process, launched at its first use and closed when the
# session ends (tests/conftest.py): a launch costs about 1.4 s of CPU on two cores, and
# CI's lines launch it dozens of times. Each test's pages live in contexts of their own,
# closed when its `chromium()` block ends, so no test sees another's cookies, storage,
# permissions or pages.
_shared: dict[str, Any] = {}


def _shared_browser() -> Any:
    browser = _shared.get("browser")
    if browser is not None and browser.is_connected():
        return browser
    close_shared_browser()  # it crashed or was closed: a fresh one
    from playwright.sync_api import sync_playwright

    pw = sync_playwright().start()
    _shared["playwright"] = pw
    _shared["browser"] = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
    return _shared["browser"]


def close_shared_browser() -> None:
    """Closes the test process's Chromium and its Playwright driver, if they run."""
    browser, pw = _shared.pop("browser", None), _shared.pop("playwright", None)
    try:
        if browser is not None and browser.is_connected():
            browser.close()
    finally:
        if pw is not None:
            pw.stop()


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Debian Chromium under Playwright: the test process's one, whose contexts
    opened in this block (pages made by `new_page()` included) are closed when it ends."""
    browser = _shared_browser()
    before = set(browser.contexts)
    try:
        yield browser
    finally:
        if browser.is_connected():
            for ctx in browser.contexts:
                if ctx not in before:
                    ctx.close()


# The phone's layout checks (tests/test_web_ui_reach.py, the axe walk's phone_faults).
# Each control of the conversation's header that is shown, and whether it lies whole
# within the screen's width; and whether the header scrolls sideways.
HEAD_CONTROLS = """() => {
  const head = document.querySelector("header.conv-head");
  const out = [];
  for (const el of head.querySelectorAll("a, button, select, input")) {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height) continue;  // not shown (behind the menu)
    out.push([el.getAttribute("aria-label") || el.textContent.trim(), r.left >= 0 && r.right <= innerWidth]);
  }
  const scrolls = [...head.querySelectorAll("*")].some((e) => e.scrollWidth > e.clientWidth + 1
    && ["auto", "scroll"].includes(getComputedStyle(e).overflowX));
  return { out, scrolls };
}"""

# Each home choice whose chosen text is wider than the room its select gives it.
CUT_CHOICES = """() => {
  const ctx = document.createElement("canvas").getContext("2d");
  const cut = [];
  for (const s of document.querySelectorAll(".home-choices select")) {
    const cs = getComputedStyle(s);
    ctx.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
    const text = s.options[s.selectedIndex].text;
    const room = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - 16;  // the arrow
    if (ctx.measureText(text).width > room) cut.push(text);
  }
  return cut;
}"""


class PageWatch:
    """Everything a page did that a test forbids: console errors, uncaught exceptions,
    and requests to any host but the allowed ones."""

    def __init__(self, page: Any, allowed_netlocs: set[str], allowed_errors: tuple[str, ...] = ()) -> None:
        self.allowed_netlocs = allowed_netlocs
        self.allowed_errors = allowed_errors
        self.errors: list[str] = []
        self.foreign: list[str] = []
        self.requests: list[Any] = []
        page.on("console", self._console)
        page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        page.on("request", self._request)

    def _console(self, msg: Any) -> None:
        if msg.type in ("error", "warning") and not any(a in msg.text for a in self.allowed_errors):
            self.errors.append(f"console {msg.type}: {msg.text}")

    def _request(self, request: Any) -> None:
        self.requests.append(request)
        parts = urlsplit(request.url)
        if parts.scheme in ("data", "blob", "about"):
            return
        if parts.netloc not in self.allowed_netlocs:
            self.foreign.append(request.url)

    def check(self) -> None:
        assert self.errors == [], self.errors
        assert self.foreign == [], self.foreign


def screenshot(page: Any, name: str) -> Path:
    """The page as `name`.png: in docs/screenshots/ under ops/screenshots.sh, else in a
    scratch folder outside the work tree."""
    folder = SCREENSHOTS if os.environ.get("BMOE_SCREENSHOTS") == "1" else SCRATCH_SHOTS
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.evaluate("() => { const t = document.getElementById('toast'); if (t) t.hidden = true; }")
    page.screenshot(path=str(path))
    return path


class Relay:
    """A TCP relay in front of the daemon on another loopback port: the browser talks to
    it, and a test can cut every connection (as a dropped network does) and hold new
    ones until `resume()`. `answers` holds every byte the daemon sent back."""

    def __init__(self, target: str) -> None:
        import socket
        import threading

        host, port = urlsplit(target).hostname, urlsplit(target).port
        assert host is not None and port is not None
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self._pairs: list[tuple[Any, Any]] = []
        self._closed = False
        self.answers = bytearray()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def netloc(self) -> str:
        return urlsplit(self.url).netloc

    def _accept(self) -> None:
        import socket
        import threading

        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            self._open.wait()  # held while cut: the browser's new requests wait
            if self._closed:
                client.close()
                return
            try:
                upstream = socket.create_connection(self._target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._pairs.append((client, upstream))
            for a, b, record in ((client, upstream, None), (upstream, client, self.answers)):
                threading.Thread(target=self._pump, args=(a, b, record), daemon=True).start()

    def _pump(self, src: Any, dst: Any, record: bytearray | None) -> None:
        import socket

        try:
            while chunk := src.recv(65536):
                if record is not None:
                    with self._lock:
                        record += chunk
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            # Pass the end on (a half close): the other direction still delivers what
            # is on its way, such as an answer's body after the browser stopped reading.
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def cut(self) -> None:
        """Drop every connection now and hold new ones."""
        import socket

        self._open.clear()
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def resume(self) -> None:
        self._open.set()

    def close(self) -> None:
        self._closed = True
        self._open.set()
        self._listener.close()
        self.cut()
        self._open.set()
