"""MCP servers added, edited, switched off and removed on the Agent & MCP page
(bmoe_daemon/web/mcpservers.js, mcpform.js), in headless Chromium against the real daemon,
on a desktop (light) and a phone (dark): a refusal said beside its field with the file left alone, a
server added through the form running with its tools, its working folder and time limit, a
value marked secret kept in the key store (never on the page, never in mcp.json), an edit
that starts the new command, a rename, Switch off, and Remove asked once more, saying its
secret goes too, before it removes it and the secret; a remote server's transport chosen and
changed.

The server is tests/mcp_server.py (the official SDK), started by the daemon as a real program.
"""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil
import pytest

from tests.browser import DESKTOP, PHONE, PageWatch, chromium, require_browser, running_daemon, screenshot, write_script
from tests.test_mcp_edit import server_procs

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


def free_port() -> int:
    """A port nothing listens on: a remote server there is tried again, never reached."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def servers_in_file(daemon) -> dict:
    path = daemon.data_dir / "mcp.json"
    return json.loads(path.read_text())["mcpServers"] if path.exists() else {}


@pytest.mark.parametrize(("kind", "viewport", "scheme"), [("desktop", DESKTOP, "light"), ("phone", PHONE, "dark")])
def test_a_server_is_added_edited_switched_off_and_removed_from_the_page(daemon, kind, viewport, scheme, tmp_path):
    from playwright.sync_api import expect

    name = f"ui-{kind}"
    workdir = tmp_path / "server folder"
    workdir.mkdir()
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

        # A working folder that does not exist: said beside it, nothing written.
        name_field.fill(name)
        cwd = form.get_by_label("Working folder (optional)", exact=True)
        cwd.fill(str(tmp_path / "no such folder"))
        form.get_by_role("button", name="Add server").click()
        expect(cwd).to_have_attribute("aria-invalid", "true")
        expect(form.locator(".field-error")).to_contain_text("is not an existing folder")
        expect(cwd).to_be_focused()
        assert servers_in_file(daemon) == before

        # Added, in its folder, with a time limit and a variable whose value is marked secret
        # (a credential's name marks it).
        # A time limit that is not one: said beside it, nothing written.
        cwd.fill(str(workdir))
        limit = form.get_by_label("Time limit of a call, in seconds (optional)", exact=True)
        for typed in ("soon", "0"):
            limit.fill(typed)
            form.get_by_role("button", name="Add server").click()
            expect(limit).to_have_attribute("aria-invalid", "true")
            expect(form.locator(".field-error")).to_have_text("A time limit is a number of seconds, from 0.001 "
                                                              "to 3600.")
            expect(cwd).not_to_have_attribute("aria-invalid", "true")
            assert servers_in_file(daemon) == before
        limit.fill("12.5")
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
                         "env": {"API_TOKEN": f"${{secret:{name}-API_TOKEN}}"}, "cwd": str(workdir),
                         "timeout_ms": 12500}
        assert [p.cwd() for p in server_procs(daemon.proc.pid)] == [str(workdir)]
        assert SECRET not in page.content() and SECRET not in (daemon.data_dir / "mcp.json").read_text()
        with httpx.Client(base_url=daemon.url, timeout=30) as c:
            stored = {s["name"]: s for s in c.get("/api/secrets").json()["secrets"]}
        assert stored[f"{name}-API_TOKEN"]["stored"] is True
        screenshot(page, f"{kind}-mcp-running")

        # Edited: the saved value kept (left empty), the new command started with its new tool.
        row.get_by_role("button", name=f"Edit {name}").click()
        edit = page.get_by_role("form", name=f"Edit {name}")
        expect(edit.get_by_label("Name", exact=True)).to_have_value(name)
        expect(edit.get_by_label("Variable 1 value", exact=True)).to_have_value("")
        expect(edit.get_by_label("Working folder (optional)", exact=True)).to_have_value(str(workdir))
        expect(edit.get_by_label("Time limit of a call, in seconds (optional)", exact=True)).to_have_value("12.5")
        edit.get_by_label("Arguments", exact=True).fill(f"{SERVER}\n--extra-tool\nmore")
        edit.get_by_role("button", name="Save server").click()
        expect(row.locator("summary").first).to_have_text("8 tools")
        expect(row.locator(".badge.mcp-running")).to_have_text("running")
        assert servers_in_file(daemon)[name] == {**saved, "args": [str(SERVER), "--extra-tool", "more"]}
        saved = servers_in_file(daemon)[name]

        # Renamed: started again under the new name, in its place, its secret kept.
        old = server_procs(daemon.proc.pid)
        row.get_by_role("button", name=f"Edit {name}").click()
        edit = page.get_by_role("form", name=f"Edit {name}")
        expect(edit.get_by_label("Name", exact=True)).to_be_focused()
        name, was = f"{name}-new", name
        edit.get_by_label("Name", exact=True).fill(name)
        edit.get_by_role("button", name="Save server").click()
        row = page.get_by_role("list", name="MCP servers").get_by_role("listitem", name=name)
        expect(row.locator(".badge.mcp-running")).to_have_text("running")
        expect(page.locator("#toast")).to_have_text(f"{was} renamed {name}.")
        expect(row.get_by_role("button", name=f"Edit {name}")).to_be_focused()
        rows = page.get_by_role("list", name="MCP servers")
        expect(rows.get_by_role("listitem", name=was, exact=True)).to_have_count(0)
        assert servers_in_file(daemon) == {**before, name: saved}
        row.locator("summary").first.click()
        expect(row.get_by_role("list", name=f"Tools of {name}")).to_contain_text(f"{name}_more")
        assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in old)
        assert [p.cwd() for p in server_procs(daemon.proc.pid)] == [str(workdir)]

        # Switched off: kept, not started, no tools.
        row.get_by_role("button", name=f"Switch off {name}").click()
        expect(row.locator(".badge.mcp-off")).to_have_text("switched off")
        expect(row.locator("summary")).to_have_count(0)
        expect(row.get_by_role("button", name=f"Switch on {name}")).to_be_focused()  # the keyboard stays there
        expect(page.locator("#toast")).to_have_text(f"{name} switched off.")
        assert servers_in_file(daemon)[name]["enabled"] is False
        screenshot(page, f"{kind}-mcp-off")

        # Removed, once asked again, which says its secret goes too; it does.
        secret_name = f"{was}-API_TOKEN"
        row.get_by_role("button", name=f"Remove {name}").click()
        again = row.get_by_role("button", name=f"Really remove {name}?")
        expect(again).to_have_text("Remove?")
        expect(again).to_have_accessible_description(f"Its saved secret ({secret_name}) will be deleted from the key "
                                                     "store too, unless another server uses it.")
        expect(row.locator(".delete-note")).to_be_visible()
        if kind == "phone":
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
            screenshot(page, "phone-mcp-remove")
        assert name in servers_in_file(daemon)
        again.click()
        expect(page.get_by_role("list", name="MCP servers").get_by_role("listitem", name=name)).to_have_count(0)
        expect(page.get_by_role("button", name="Add a server")).to_be_focused()
        expect(page.locator("#toast")).to_have_text(f"{name} removed, and its secret {secret_name}.")
        assert name not in servers_in_file(daemon)
        with httpx.Client(base_url=daemon.url, timeout=30) as c:
            assert secret_name not in [s["name"] for s in c.get("/api/secrets").json()["secrets"]]

        # A remote server that speaks only the older HTTP+SSE, then Streamable HTTP.
        remote = f"far-{kind}"
        page.get_by_role("button", name="Add a server").click()
        form = page.get_by_role("form", name="Add a server")
        form.get_by_label("Name", exact=True).fill(remote)
        form.get_by_label("A remote server (URL)", exact=True).check()
        form.get_by_label("URL", exact=True).fill(f"http://127.0.0.1:{free_port()}/mcp")
        form.get_by_label("Transport", exact=True).select_option("sse")
        form.get_by_role("button", name="Add server").click()
        row = page.get_by_role("list", name="MCP servers").get_by_role("listitem", name=remote)
        expect(page.locator("#toast")).to_have_text("Server added.")
        expect(row.locator(".row-main")).to_contain_text("· HTTP+SSE")
        assert servers_in_file(daemon)[remote]["type"] == "sse"
        row.get_by_role("button", name=f"Edit {remote}").click()
        edit = page.get_by_role("form", name=f"Edit {remote}")
        expect(edit.get_by_label("Transport", exact=True)).to_have_value("sse")
        edit.get_by_label("Transport", exact=True).select_option("streamable-http")
        edit.get_by_role("button", name="Save server").click()
        expect(page.locator("#toast")).to_have_text(f"{remote} saved.")
        expect(row.locator(".row-main")).to_contain_text("· Streamable HTTP")
        expect(row.get_by_role("form")).to_have_count(0)
        assert "type" not in servers_in_file(daemon)[remote]
        screenshot(page, f"{kind}-mcp-remote")
        row.get_by_role("button", name=f"Remove {remote}").click()
        expect(row.locator(".delete-note")).to_have_count(0)  # it names no secret
        row.get_by_role("button", name=f"Really remove {remote}?").click()
        expect(page.get_by_role("list", name="MCP servers").get_by_role("listitem", name=remote)).to_have_count(0)
        assert remote not in servers_in_file(daemon)
        ctx.close()
        watch.check()
