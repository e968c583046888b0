"""The web UI's memories (issue 32) in Chromium: the workspaces page lists what the agent
remembered of a folder (written by a scripted model's memory_write), edits one (a bad
edit said beside it in the daemon's words), forgets one, and switches read-only
conversations' memories on, each change reaching the daemon."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from tests.browser import DESKTOP, PageWatch, chromium, require_browser, running_daemon, write_script
from tests.test_web_ui_could_not import wait_until


def remember(text: str, tags: list[str]) -> dict:
    return {"when": f"remember {text}", "tool_calls": [{"name": "memory_write",
                                                         "arguments": {"text": text, "tags": tags}}]}


def test_the_workspace_page_lists_edits_and_forgets_memories(tmp_path):
    require_browser()
    folder = tmp_path / "proj"
    folder.mkdir()
    script = write_script(tmp_path / "script.json", {"token_delay": 0, "default": {"text": "Done."}, "rounds": [
        remember("Build with make dist.", ["build"]), remember("The parser is hand written.", ["parser"])]})
    with running_daemon(tmp_path / "data", "--scripted", str(script)) as d, \
            httpx.Client(base_url=d.url, timeout=30) as c:
        ws = c.post("/api/workspaces", json={"path": str(folder)}).json()
        cid = c.post("/api/conversations", json={"workspace": ws["id"], "mode": "ask"}).json()["id"]
        for text in ("Build with make dist.", "The parser is hand written."):
            c.post(f"/api/conversations/{cid}/messages", json={"text": f"remember {text}"})
            wait_until(lambda: c.get(f"/api/conversations/{cid}").json()["state"] == "idle", what="the run to end")
        assert len(c.get(f"/api/workspaces/{ws['id']}/memories").json()) == 2
        with chromium() as browser:
            page = browser.new_context(viewport=DESKTOP).new_page()
            watch = PageWatch(page, {urlsplit(d.url).netloc}, allowed_errors=("status of 400",))
            page.goto(f"{d.url}/#/workspaces/{ws['id']}")
            memories = page.get_by_role("list", name="Memories of proj")
            memories.get_by_text("Build with make dist.").wait_for()
            assert memories.get_by_role("listitem").count() == 2
            assert "never as instructions" in page.locator(".ws-memories").inner_text()

            # A bad edit is refused in the daemon's words, beside the memory; nothing changes.
            memories.get_by_role("button", name="Edit the memory Build with make dist.").click()
            form = page.get_by_role("form", name="Edit the memory")
            form.get_by_label("The memory's text").fill("   ")
            form.get_by_role("button", name="Save").click()
            form.get_by_role("alert").filter(has_text="write what to remember").wait_for()
            assert c.get(f"/api/workspaces/{ws['id']}/memories").json()[1]["text"] == "Build with make dist."
            form.get_by_label("The memory's text").fill("Build with make dist; check with make check.")
            form.get_by_label("Its tags, separated by commas").fill("build, tests")
            form.get_by_role("button", name="Save").click()
            memories.get_by_text("Build with make dist; check with make check.").wait_for()
            kept = {m["text"]: m for m in c.get(f"/api/workspaces/{ws['id']}/memories").json()}
            assert kept["Build with make dist; check with make check."]["tags"] == ["build", "tests"]

            memories.get_by_role("button", name="Forget the memory The parser is hand written.").click()
            memories.get_by_text("The parser is hand written.").wait_for(state="detached")
            assert [m["text"] for m in c.get(f"/api/workspaces/{ws['id']}/memories").json()] == [
                "Build with make dist; check with make check."]

            switch = page.get_by_label("Read-only conversations may remember too")
            assert not switch.is_checked()
            switch.check()
            page.wait_for_function("() => !document.querySelector('.ws-memory-ro-box').disabled")
            assert c.get("/api/workspaces").json()[0]["memory_in_read_only"] is True
            watch.check()
