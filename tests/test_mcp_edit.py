"""Adding, changing, switching and removing MCP servers over the API (bmoe_daemon/routes/mcp.py,
actors/peers/mcp/edit.py), against the daemon as a process and real server programs
(tests/mcp_server.py, written with the official SDK): the file is written whole with
what it held kept, each server is started, started again or ended at once, a bad
request leaves the file's bytes as they were, and no value of a variable comes back.
"""

from __future__ import annotations

import json
import socket
import stat
import sys
from pathlib import Path

import psutil
import pytest
import trio

from actors.peers.mcp.config import MissingSecret, parse_config
from tests.daemon_proc import run_daemon
from tests.test_mcp import SERVER, everything, wait_gone  # noqa: F401 (a fixture)

TOOLS = ["echo", "fail", "hang", "crash", "shout", "slow", "pid"]
PLAIN = "plain-value-" + "5eed" * 4
SECRET = "secret-value-" + "c0de" * 4
SCRIPT = {"token_delay": 0, "rounds": [
    {"when": "which tools", "say": "tools", "repeat": 20},
    {"when": "env please", "tool_calls": [{"name": "sec_env", "arguments": {"name": "TOKEN"}}]},
    {"when": "env please", "say": "tool_result"},
    # The program prints the secret it was given to its stderr, which goes to the log.
    {"when": "shout please", "tool_calls": [{"name": "sec_shout", "arguments": {"text": "the token is " + SECRET}}]},
    {"when": "shout please", "text": "Shouted."},
]}
KEEP = {"command": sys.executable, "args": [str(SERVER)], "disabled": True, "note": "the person's own key"}


def server_procs(pid: int) -> list[psutil.Process]:
    """The daemon's processes of tests/mcp_server.py."""
    out = []
    for p in psutil.Process(pid).children(recursive=True):
        try:
            if str(SERVER) in p.cmdline() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.NoSuchProcess:
            pass
    return out


async def wait_procs(pid: int, pred, limit: float = 15) -> list[psutil.Process]:
    with trio.fail_after(limit):
        while not pred(procs := server_procs(pid)):
            await trio.sleep(0.05)
    return procs


async def ask(c, folder: Path, text: str) -> str:
    """A full-mode conversation's answer to `text` (the scripted model's)."""
    ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
    conv = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "full"})).json()
    assert (await c.post(f"/api/conversations/{conv['id']}/messages", json={"text": text})).status_code == 202
    with trio.fail_after(20):
        while True:
            body = (await c.get(f"/api/conversations/{conv['id']}")).json()
            if body["state"] == "idle" and body["items"][-1]["kind"] == "assistant":
                return str(body["items"][-1]["text"])
            await trio.sleep(0.05)


def names(row: dict) -> list[str]:
    return [t["name"] for t in row["tools"]]


def test_a_switched_off_entry_is_listed_apart_and_a_variable_may_name_a_secret():
    config = parse_config({"mcpServers": {
        "a": {"command": "x", "enabled": False}, "b": {"command": "x", "disabled": True, "keep": 1},
        "c": {"command": "x", "env": {"T": "Bearer ${secret:tok}", "P": "plain"}},
        "d": {"command": "x", "enabled": "no"}, "e": {"command": "x", "env": {"T": "${secret:no such}"}},
    }})
    assert [s.name for s in config.off] == ["a", "b"] and [s.name for s in config.servers] == ["c"]
    assert [s.name for s in config.skipped] == ["d", "e"]
    (c,) = config.servers
    assert c.secret_names == ("tok",) and "Bearer" not in repr(c) and "plain" not in repr(c)
    assert c.shown_env() == [{"name": "T", "secrets": ["tok"]}, {"name": "P", "secrets": []}]
    assert c.environment({}, lambda n: "v" if n == "tok" else None) == {"T": "Bearer v", "P": "plain"}
    with pytest.raises(MissingSecret, match="'tok'"):
        c.environment({}, lambda n: None)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    data = tmp_path / "data"
    data.mkdir()
    (data / "mcp.json").write_text(json.dumps({"comment": "kept as it is", "mcpServers": {"keep": KEEP}}))
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    folder = tmp_path / "ws"
    folder.mkdir()
    return data, script, folder


async def test_a_server_is_added_changed_switched_and_removed_without_a_restart(setup):
    data, script, folder = setup
    config = data / "mcp.json"
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        listing = {m["name"]: m for m in (await c.get("/api/agent")).json()["mcp"]}
        assert listing["keep"]["state"] == "off" and listing["keep"]["tools"] == []  # "disabled": true honoured
        assert server_procs(d.proc.pid) == []

        # Added: written, started, its tools listed and offered.
        r = await c.post("/api/mcp/servers", json={"name": "t2", "command": sys.executable, "args": [str(SERVER)]})
        assert r.status_code == 201, r.text
        row = r.json()
        assert (row["name"], row["state"], names(row)) == ("t2", "running", [f"t2_{t}" for t in TOOLS])
        assert row["entry"] == {"command": sys.executable, "args": [str(SERVER)], "env": []}
        saved = json.loads(config.read_text())
        assert saved == {"comment": "kept as it is",
                         "mcpServers": {"keep": KEEP, "t2": {"command": sys.executable, "args": [str(SERVER)]}}}
        (first,) = await wait_procs(d.proc.pid, lambda ps: len(ps) == 1)
        assert "t2_echo" in (await ask(c, folder, "which tools")).split(", ")

        # Changed: its program ended and the new command started, with its new tool.
        r = await c.put("/api/mcp/servers/t2", json={"command": sys.executable,
                                                      "args": [str(SERVER), "--extra-tool", "more"]})
        assert r.status_code == 200, r.text
        assert r.json()["state"] == "running" and names(r.json())[-1] == "t2_more"
        await wait_gone([first.pid])
        (second,) = await wait_procs(d.proc.pid, lambda ps: len(ps) == 1)
        assert second.cmdline()[-2:] == ["--extra-tool", "more"]
        assert json.loads(config.read_text())["mcpServers"]["t2"]["args"][-1] == "more"

        # Switched off: kept in the file, its program ended, its tools neither listed nor offered.
        r = await c.patch("/api/mcp/servers/t2", json={"enabled": False})
        assert r.status_code == 200, r.text
        assert (r.json()["state"], r.json()["tools"]) == ("off", [])
        assert json.loads(config.read_text())["mcpServers"]["t2"] == {
            "command": sys.executable, "args": [str(SERVER), "--extra-tool", "more"], "enabled": False}
        await wait_gone([second.pid])
        offered = (await ask(c, folder, "which tools")).split(", ")
        assert offered and not [t for t in offered if t.startswith("t2_")]
        listing = {m["name"]: m for m in (await c.get("/api/agent")).json()["mcp"]}
        assert listing["t2"]["state"] == "off" and server_procs(d.proc.pid) == []

        # On again: started, offered.
        r = await c.patch("/api/mcp/servers/t2", json={"enabled": True})
        assert r.status_code == 200, r.text
        assert r.json()["state"] == "running" and "t2_more" in names(r.json())
        assert "enabled" not in json.loads(config.read_text())["mcpServers"]["t2"]
        assert "t2_more" in (await ask(c, folder, "which tools")).split(", ")
        (third,) = await wait_procs(d.proc.pid, lambda ps: len(ps) == 1)

        # Removed: gone from the file and the listing, its program ended.
        r = await c.delete("/api/mcp/servers/t2")
        assert (r.status_code, r.json()) == (200, {"deleted": "t2", "secrets_deleted": []})
        assert json.loads(config.read_text()) == {"comment": "kept as it is", "mcpServers": {"keep": KEEP}}
        await wait_gone([third.pid])
        assert "t2" not in [m["name"] for m in (await c.get("/api/agent")).json()["mcp"]]
        # No temporary file left beside it.
        assert sorted(p.name for p in data.iterdir() if "mcp" in p.name) == ["mcp.json"]


BAD: list[tuple[str, str, object, int, str]] = [
    ("POST", "/api/mcp/servers", {"name": "bad name", "command": "x"}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "-x", "command": "x"}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"command": "x"}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n"}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": " "}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "url": "https://mcp.example.com/mcp"}, 400,
     "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "url": "ftp://mcp.example.com/mcp"}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "url": "http://mcp.example.com/mcp"}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "url": "https://u:p@mcp.example.com/mcp"}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "url": "https://mcp.example.com/mcp", "headers": {"X": "a\r\nb"}},
     400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "url": "https://mcp.example.com/mcp", "headers": {"Host": "a"}},
     400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "env": {"A": 5}}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "env": {"A": "${secret:bad name}"}}, 400,
     "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "args": "-y"}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "timeout_ms": 0}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "enabled": "no"}, 400, "bad_request"),
    ("POST", "/api/mcp/servers", "{not json", 400, "bad_request"),
    ("POST", "/api/mcp/servers", {"name": "keep", "command": "x"}, 409, "exists"),
    ("PUT", "/api/mcp/servers/nope", {"command": "x"}, 404, "not_found"),
    ("PUT", "/api/mcp/servers/keep", {"name": "bad name", "command": "x"}, 400, "bad_request"),
    ("PUT", "/api/mcp/servers/keep", {"command": "x", "url": "https://mcp.example.com/mcp"}, 400, "bad_request"),
    ("PUT", "/api/mcp/servers/keep", {"command": "x", "env": {"NEW": None}}, 400, "bad_request"),
    ("PATCH", "/api/mcp/servers/nope", {"enabled": True}, 404, "not_found"),
    ("PATCH", "/api/mcp/servers/keep", {"enabled": "yes"}, 400, "bad_request"),
    ("PATCH", "/api/mcp/servers/keep", {}, 400, "bad_request"),
    ("DELETE", "/api/mcp/servers/nope", None, 404, "not_found"),
]


# A field the form shows, refused with a text that names it (the file left as it was).
BAD_FIELDS: list[tuple[str, str, dict[str, object], str]] = [
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "cwd": "relative/folder"}, "cwd"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "cwd": "/no/such/folder/here"}, "cwd"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "cwd": sys.executable}, "cwd"),  # a file
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "cwd": ""}, "cwd"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "cwd": 5}, "cwd"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "timeout_ms": -5}, "timeout_ms"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "timeout_ms": 3_600_001}, "timeout_ms"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "timeout_ms": "30"}, "timeout_ms"),
    ("POST", "/api/mcp/servers", {"name": "n", "command": "x", "timeout_ms": 1.5}, "timeout_ms"),
    ("POST", "/api/mcp/servers", {"name": "n", "url": "https://mcp.example.com/mcp", "type": "websocket"}, "type"),
    ("PUT", "/api/mcp/servers/keep", {"command": "x", "cwd": "relative/folder"}, "cwd"),
    ("PUT", "/api/mcp/servers/keep", {"command": "x", "timeout_ms": 0}, "timeout_ms"),
    ("PUT", "/api/mcp/servers/keep", {"url": "https://mcp.example.com/mcp", "type": "ws"}, "type"),
]


async def test_a_bad_request_is_refused_and_leaves_the_file_as_it_was(setup):
    data, script, _ = setup
    config = data / "mcp.json"
    before = config.read_bytes()
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        for method, path, body, status, code in BAD:
            if isinstance(body, str):
                r = await c.request(method, path, content=body, headers={"Content-Type": "application/json"})
            else:
                r = await c.request(method, path, json=body)
            assert (r.status_code, r.json()["code"]) == (status, code), (method, path, body, r.text)
            assert r.json()["error"] and config.read_bytes() == before, (method, path, body)
        for method, path, body, field in BAD_FIELDS:
            r = await c.request(method, path, json=body)
            assert (r.status_code, r.json()["code"]) == (400, "bad_request"), (method, path, body, r.text)
            assert field in r.json()["error"].lower() and config.read_bytes() == before, (body, r.text)
        # A file the person broke is not written over: each change is refused, saying so.
        config.write_text('{"mcpServers": {"keep": ')
        broken = config.read_bytes()
        for method, path, body in (("POST", "/api/mcp/servers", {"name": "n", "command": "x"}),
                                   ("DELETE", "/api/mcp/servers/keep", None),
                                   ("PATCH", "/api/mcp/servers/keep", {"enabled": True})):
            r = await c.request(method, path, json=body)
            assert (r.status_code, r.json()["code"]) == (400, "bad_request"), r.text
            assert "not valid JSON" in r.json()["error"] and config.read_bytes() == broken
        assert server_procs(d.proc.pid) == []
    assert sorted(p.name for p in data.iterdir() if "mcp" in p.name) == ["mcp.json"]


async def test_a_variable_names_a_secret_and_no_value_comes_back(tmp_path):
    data = tmp_path / "data"
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    folder = tmp_path / "ws"
    folder.mkdir()
    config = data / "mcp.json"
    entry = {"command": sys.executable, "args": [str(SERVER), "--env-tool"],
             "env": {"TOKEN": "${secret:sec-token}", "PLAIN": PLAIN}}
    answers: list[str] = []
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        r = await c.post("/api/mcp/servers", json={"name": "sec", **entry})
        answers.append(r.text)
        assert r.status_code == 201, r.text
        row = r.json()
        # Its secret is not stored yet: not started, saying which.
        assert row["state"] == "failed" and "'sec-token'" in row["error"]
        assert row["entry"]["env"] == [{"name": "TOKEN", "secrets": ["sec-token"]}, {"name": "PLAIN", "secrets": []}]
        assert stat.S_IMODE(config.stat().st_mode) == 0o600  # a file the daemon made: its own
        assert json.loads(config.read_text())["mcpServers"]["sec"] == entry
        r = await c.put("/api/secrets/sec-token", json={"value": SECRET})
        assert r.status_code == 200 and r.json()["used_by"] == ["sec"]
        listing = await c.get("/api/agent")
        answers.append(listing.text)
        (row,) = listing.json()["mcp"]
        assert row["state"] == "running" and "sec_env" in names(row)
        # The program got the secret's value in its environment; what it prints is logged without it.
        assert await ask(c, folder, "env please") == SECRET
        assert await ask(c, folder, "shout please") == "Shouted."
        # An edit that leaves the values out keeps them.
        r = await c.put("/api/mcp/servers/sec", json={**entry, "env": {"TOKEN": None, "PLAIN": None}})
        answers.append(r.text)
        assert r.status_code == 200 and r.json()["state"] == "running", r.text
        assert json.loads(config.read_text())["mcpServers"]["sec"] == entry
        answers.append((await c.get("/api/secrets")).text)
    for text in [*answers, d.stderr(), d.log_file()]:
        assert PLAIN not in text and SECRET not in text
    assert "MCP server sec stderr: the token is [secret]" in d.log_file()
    assert SECRET not in config.read_text()


async def test_the_reference_server_is_added_and_removed(tmp_path, everything):  # noqa: F811
    """@modelcontextprotocol/server-everything, added over the API: started with its tools, then ended."""
    data = tmp_path / "data"
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    async with run_daemon(data, "--scripted", str(tmp_path / "script.json")) as d, d.client() as c:
        r = await c.post("/api/mcp/servers", json={"name": "everything", "command": "node",
                                                   "args": [str(everything), "stdio"]})
        assert r.status_code == 201, r.text
        assert r.json()["state"] == "running" and "everything_echo" in names(r.json())
        node = [p for p in psutil.Process(d.proc.pid).children(recursive=True) if str(everything) in p.cmdline()]
        assert node
        r = await c.delete("/api/mcp/servers/everything")
        assert r.json() == {"deleted": "everything", "secrets_deleted": []}
        await wait_gone([p.pid for p in node])
        assert (await c.get("/api/agent")).json()["mcp"] == []
        assert json.loads((data / "mcp.json").read_text()) == {"mcpServers": {}}


async def test_a_remote_server_keeps_its_hidden_address_and_header_values_through_an_edit(setup):
    data, script, _ = setup
    config = data / "mcp.json"
    with socket.socket() as s:  # a port nothing listens on: the server is tried again, never reached
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp?key={PLAIN}"
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        headers = {"Authorization": "Bearer " + SECRET, "X-Ref": "${secret:r}"}
        r = await c.post("/api/mcp/servers", json={"name": "far", "url": url, "type": "sse", "headers": headers})
        assert r.status_code == 201, r.text
        row = r.json()
        assert (row["remote"], row["transport"], row["entry"]["type"]) == (True, "sse", "sse")
        assert row["url"] == row["entry"]["url"] == f"http://127.0.0.1:{port}/mcp?key=***"
        assert row["entry"]["headers"] == [{"name": "Authorization", "secrets": []},
                                           {"name": "X-Ref", "secrets": ["r"]}]
        # An edit that sends the address as shown and the headers without values keeps them.
        kept = {"Authorization": None, "X-Ref": None}
        r = await c.put("/api/mcp/servers/far", json={**row["entry"], "headers": kept, "timeout_ms": 5000})
        assert r.status_code == 200, r.text
        saved = json.loads(config.read_text())["mcpServers"]["far"]
        assert saved == {"url": url, "type": "sse", "headers": headers, "timeout_ms": 5000}
        assert PLAIN not in r.text and SECRET not in r.text
        assert PLAIN not in (await c.get("/api/agent")).text
        # Its transport changed to Streamable HTTP (no type: the default), its time limit kept.
        r = await c.put("/api/mcp/servers/far", json={"url": row["entry"]["url"], "headers": kept,
                                                      "timeout_ms": 5000, "cwd": str(data)})
        assert r.status_code == 200, r.text
        assert (r.json()["transport"], r.json()["entry"].get("type")) == ("streamable-http", None)
        saved = json.loads(config.read_text())["mcpServers"]["far"]
        assert saved == {"url": url, "headers": headers, "timeout_ms": 5000}  # a working folder is a program's


RENAMED_SCRIPT = {"token_delay": 0, "rounds": [
    {"when": "env please", "tool_calls": [{"name": "renamed_env", "arguments": {"name": "TOKEN"}}]},
    {"when": "env please", "say": "tool_result"},
]}


async def stored_secrets(c) -> list[str]:
    return [s["name"] for s in (await c.get("/api/secrets")).json()["secrets"] if s["stored"]]


async def test_a_server_is_renamed_with_its_folder_and_secrets_and_its_unused_secrets_go(tmp_path):
    """A server renamed is ended under its old name and started under the new one, in its
    working folder, its secret still given to it; a secret that a removed server, or an
    edited one's old entry, named alone is deleted from the key store, one another server
    names stays, and one no server ever named is left alone."""
    data = tmp_path / "data"
    data.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(RENAMED_SCRIPT))
    folder = tmp_path / "ws"
    folder.mkdir()
    workdir = tmp_path / "server home"
    workdir.mkdir()
    config = data / "mcp.json"
    entry = {"command": sys.executable, "args": [str(SERVER), "--env-tool"],
             "env": {"TOKEN": "${secret:a-token}", "OTHER": "${secret:shared}"}, "cwd": str(workdir),
             "timeout_ms": 5000}
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        for name, value in (("a-token", SECRET), ("shared", "shared-value"), ("lonely", "lonely-value")):
            assert (await c.put(f"/api/secrets/{name}", json={"value": value})).status_code == 200
        r = await c.post("/api/mcp/servers", json={"name": "a", **entry})
        assert r.status_code == 201 and r.json()["state"] == "running", r.text
        assert (r.json()["entry"]["cwd"], r.json()["entry"]["timeout_ms"]) == (str(workdir), 5000)
        r = await c.post("/api/mcp/servers", json={"name": "b", "command": sys.executable, "args": [str(SERVER)],
                                                   "env": {"S": "${secret:shared}"}, "enabled": False})
        assert r.status_code == 201, r.text
        (first,) = await wait_procs(d.proc.pid, lambda ps: len(ps) == 1)
        assert first.cwd() == str(workdir)

        # A name that is taken is refused, naming it; nothing changes.
        before = config.read_bytes()
        kept = {**entry, "env": {"TOKEN": None, "OTHER": None}}
        r = await c.put("/api/mcp/servers/a", json={**kept, "name": "b"})
        assert (r.status_code, r.json()["code"]) == (409, "exists") and "named b" in r.json()["error"], r.text
        assert config.read_bytes() == before and first.is_running()

        # Renamed: ended as a, started as renamed in its folder, its secret still given to it.
        r = await c.put("/api/mcp/servers/a", json={**kept, "name": "renamed"})
        assert r.status_code == 200, r.text
        row = r.json()
        assert (row["name"], row["state"]) == ("renamed", "running") and "renamed_env" in names(row)
        await wait_gone([first.pid])
        (second,) = await wait_procs(d.proc.pid, lambda ps: len(ps) == 1)
        assert second.cwd() == str(workdir)
        servers = json.loads(config.read_text())["mcpServers"]
        assert list(servers) == ["renamed", "b"]  # in a's place
        assert servers["renamed"] == entry
        listing = [m["name"] for m in (await c.get("/api/agent")).json()["mcp"]]
        assert "a" not in listing and "renamed" in listing
        assert await ask(c, folder, "env please") == SECRET
        assert sorted(await stored_secrets(c)) == ["a-token", "lonely", "shared"]

        # An edit that stops naming a secret another server names keeps it.
        r = await c.put("/api/mcp/servers/renamed", json={**entry, "env": {"TOKEN": None}})
        assert r.status_code == 200, r.text
        assert sorted(await stored_secrets(c)) == ["a-token", "lonely", "shared"]

        # Removed: the secret it alone named is deleted; the others stay.
        r = await c.delete("/api/mcp/servers/renamed")
        assert (r.status_code, r.json()) == (200, {"deleted": "renamed", "secrets_deleted": ["a-token"]})
        await wait_gone([second.pid])
        assert sorted(await stored_secrets(c)) == ["lonely", "shared"]

        # An edit that stops naming the last server's secret deletes it.
        r = await c.put("/api/mcp/servers/b", json={"command": sys.executable, "args": [str(SERVER)], "env": {}})
        assert r.status_code == 200, r.text
        assert await stored_secrets(c) == ["lonely"]
    credentials = json.loads((data / "credentials.json").read_text())
    assert SECRET not in json.dumps(credentials) and "shared-value" not in json.dumps(credentials)
    assert "lonely-value" in json.dumps(credentials)
