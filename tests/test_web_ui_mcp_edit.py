"""MCP servers added, edited, switched off and removed on the Agent & MCP page
(bmoe_daemon/web/mcpservers.js, mcpform.js), in headless Chromium against the real daemon,
on a desktop (light) and a phone (dark): a refusal said beside its field with the file left alone, a
server added through the form running with its tools, a value marked secret kept in the
key store (never on the page, never in mcp.json), an edit that starts the new command,
Switch off, and Remove asked once more before it removes.

The server is tests/mcp_server.py (the official SDK), started by the daemon as a real program.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.browser import DESKTOP, PHONE, PageWatch, chromium, require_browser, running_daemon, screenshot, write_script

SERVER = Path(__file__).with_name("mcp_server.py")
SECRET = "ui-secret-" + "f00d" * 4
WAIT_MS = 20_000


@pytest.fixture(scope="module")
def daemon(tmp_path_factory):
    require_browser()
    root = tmp_path_factory.mktemp("webui-mcp-edit")
    data = root / "data"
    data.mkdir()
    script = write_script(root / "script.json", {"default": {"text": "Done."}})
    with running_daemon(data, "--scripted", str(script)) as d:
        yield d


def servers_in_file(daemon) -> dict:
    path = daemon.data_dir / "mcp.json"
    return json.loads(path.read_text())["mcpServers"] if path.exists() else {}


@pytest.mark.parametrize(("kind", "viewport", "scheme"), [("desktop", DESKTOP, "light"), ("phone", PHONE, "dark")])
def test_a_server_is_added_edited_switched_off_and_removed_from_the_page(daemon, kind, viewport, scheme):
    from playwright.sync_api import expect

    name = f"ui-{kind}"
    with chromium() as browser:
        ctx = browser.new_context(viewport=viewport, color_scheme=scheme)
        page = ctx.new_page()
        page.set_default_timeout(WAIT_MS)
        # The refused name below is a 400 the browser reports as a failed load.
        watch = PageWatch(page, {urlsplit(daemon.url).netloc}, allowed_errors=("status of 400",))
        page.goto(daemon.url + "/#/agent")
        page.get_by_role("heading", name="MCP servers", exact=True).wait_for()
        add = page.get_by_role("button", name="Add a server")
        add.click()
        form = page.get_by_role("form", name="Add a server")
        expect(form.get_by_label("Name", exact=True)).to_be_focused()
        expect(add).to_have_attribute("aria-expanded", "true")

        # A refusal is said beside the field it concerns; nothing is written.
        before = servers_in_file(daemon)
        form.get_by_label("Name", exact=True).fill("not a name!")
        form.get_by_label("Command", exact=True).fill(sys.executable)
        form.get_by_label("Arguments", exact=True).fill(str(SERVER))
        form.get_by_role("button", name="Add server").click()
        name_field = form.get_by_label("Name", exact=True)
        expect(name_field).to_have_attribute("aria-invalid", "true")
        expect(form.locator(".field-error")).to_contain_text("1-48 letters")
        expect(name_field).to_be_focused()
        assert servers_in_file(daemon) == before

        # Added, with a variable whose value is marked secret (a credential's name marks it).
        name_field.fill(name)
        form.get_by_role("button", name="Add a variable").click()
        expect(form.get_by_label("Variable 1 name", exact=True)).to_be_focused()
        form.get_by_label("Variable 1 name", exact=True).fill("API_TOKEN")
        expect(form.get_by_label("Variable 1 is a secret", exact=True)).to_be_checked()
        form.get_by_label("Variable 1 value", exact=True).fill(SECRET)
        expect(form.get_by_label("Variable 1 value", exact=True)).to_have_attribute("type", "password")
        if kind == "phone":
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
            box = form.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"]
            screenshot(page, "phone-mcp-add")
        form.get_by_role("button", name="Add server").click()
        row = page.get_by_role("list", name="MCP servers").get_by_role("listitem", name=name)
        expect(row.locator(".badge.mcp-running")).to_have_text("running")
        expect(row.locator("summary").first).to_have_text("7 tools")
        expect(row.locator(".mcp-env")).to_have_text(f"Variables: API_TOKEN (secret {name}-API_TOKEN)")
        row.locator("summary").first.click()
        expect(row.get_by_role("list", name=f"Tools of {name}")).to_contain_text(f"{name}_echo")
        saved = servers_in_file(daemon)[name]
        assert saved == {"command": sys.executable, "args": [str(SERVER)],
                         "env": {"API_TOKEN": f"${{secret:{name}-API_TOKEN}}"}}
        assert SECRET not in page.content() and SECRET not in (daemon.data_dir / "mcp.json").read_text()
        with httpx.Client(base_url=daemon.url, timeout=30) as c:
            stored = {s["name"]: s for s in c.get("/api/secrets").json()["secrets"]}
        assert stored[f"{name}-API_TOKEN"]["stored"] is True
        screenshot(page, f"{kind}-mcp-running")

        # Edited: the saved value kept (left empty), the new command started with its new tool.
        row.get_by_role("button", name=f"Edit {name}").click()
        edit = page.get_by_role("form", name=f"Edit {name}")
        expect(edit.get_by_label("Name", exact=True)).to_have_attribute("readonly", "")
        expect(edit.get_by_label("Variable 1 value", exact=True)).to_have_value("")
        edit.get_by_label("Arguments", exact=True).fill(f"{SERVER}\n--extra-tool\nmore")
        edit.get_by_role("button", name="Save server").click()
        expect(row.locator("summary").first).to_have_text("8 tools")
        expect(row.locator(".badge.mcp-running")).to_have_text("running")
        assert servers_in_file(daemon)[name] == {**saved, "args": [str(SERVER), "--extra-tool", "more"]}

        # Switched off: kept, not started, no tools.
        row.get_by_role("button", name=f"Switch off {name}").click()
        expect(row.locator(".badge.mcp-off")).to_have_text("switched off")
        expect(row.locator("summary")).to_have_count(0)
        expect(row.get_by_role("button", name=f"Switch on {name}")).to_be_focused()  # the keyboard stays there
        expect(page.locator("#toast")).to_have_text(f"{name} switched off.")
        assert servers_in_file(daemon)[name]["enabled"] is False
        screenshot(page, f"{kind}-mcp-off")

        # Removed, once asked again.
        row.get_by_role("button", name=f"Remove {name}").click()
        again = row.get_by_role("button", name=f"Really remove {name}?")
        expect(again).to_have_text("Remove?")
        assert name in servers_in_file(daemon)
        again.click()
        expect(page.get_by_role("list", name="MCP servers").get_by_role("listitem", name=name)).to_have_count(0)
        expect(page.get_by_role("button", name="Add a server")).to_be_focused()
        assert name not in servers_in_file(daemon)
        ctx.close()
        watch.check()
