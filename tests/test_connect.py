"""Connect (bmoe_daemon/connect.py, bmoe_daemon/routes/connect.py): the catalog, the
snippets, real settings files of each kind, and the routes."""

from __future__ import annotations

import difflib
import json
import os
import stat
import tomllib
from pathlib import Path

import pytest
import yaml

from actors.model.engine import Engine
from bmoe_daemon import connect
from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.store import write_atomic
from tests.special_files import SPARSE_BYTES, bounded, fifo, releasing, sparse, zero_link

LOCAL = {"client": ("127.0.0.1", 40000)}
NET = {"client": ("192.0.2.7", 40000)}
KEY = "sk-bmoe-very-secret-4242"
ADDRESS = "http://127.0.0.1:4321"
VALUES = connect.Values(base_url=ADDRESS, model="SmolLM2-135M-Instruct", context=8192, key_needed=True)

CODEX_TOML = """\
# Codex settings, kept by hand.
model = "gpt-5"  # the default
approval_policy = "on-request"

[model_providers.other]
name = "Other"   # another provider
base_url = "https://example.invalid/v1"

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-server"]
"""

OPENCODE_JSON = {
    "$schema": "https://opencode.ai/config.json",
    "theme": "tokyonight",
    "provider": {"other": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "https://example.invalid/v1"}}},
    "model": "other/some-model",
}


def client(client_id: str) -> connect.Client:
    return next(c for c in connect.load_catalog() if c.id == client_id)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bmoe-backup-*"))


def text(path: str | Path) -> str:
    return Path(path).read_text()


def strings(value) -> list[str]:
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return [value] if isinstance(value, str) else []


# ---- the catalog and its snippets ----


def test_the_catalog_lists_the_apps_with_their_acp_entries():
    rows = {c.id: c for c in connect.load_catalog()}
    assert {"opencode", "claude-code", "codex", "pi", "continue", "aider", "zed", "open-webui", "openai"} <= set(rows)
    assert {c.file_format for c in rows.values() if c.file} == {"json", "toml"}
    assert rows["codex"].file == ".codex/config.toml" and rows["opencode"].file == ".config/opencode/opencode.json"
    assert rows["openai"].file is None and rows["claude-code"].file is None
    assert "gateway" in rows["claude-code"].how.lower() and "Messages API" in rows["claude-code"].how
    assert rows["opencode"].acp["command"] == ["opencode", "acp"]
    for agent in ("claude-code", "codex", "pi"):
        acp = rows[agent].acp
        assert acp["command"][:2] == ["npx", "-y"] and acp["command"][2].endswith("@" + acp["version"])
        assert "npx" in acp["needs"]
    assert "pi" in rows["pi"].acp["needs"]


@pytest.mark.parametrize("key_needed", [True, False])
def test_every_snippet_parses_as_its_kind_and_names_the_daemon(key_needed):
    values = connect.Values(base_url=ADDRESS, model='odd "model" id', context=4096, key_needed=key_needed)
    for c in connect.load_catalog():
        snippet = connect.render(c, values)
        assert ADDRESS in snippet, c.id
        assert "{{" not in snippet, c.id
        if c.snippet_format == "json":
            assert any('odd "model" id' in s for s in strings(json.loads(snippet)))
        elif c.snippet_format == "toml":
            data = tomllib.loads(snippet)
            assert data["profiles"]["bmoe"]["model"] == 'odd "model" id'
            assert ("env_key" in data["model_providers"]["bmoe"]) is key_needed
        elif c.snippet_format == "yaml":
            assert any('odd "model" id' in s for s in strings(yaml.safe_load(snippet)))
        elif c.snippet_format == "python":
            compile(snippet, c.id, "exec")
        if key_needed and c.key is not None:
            assert "BMOE_API_KEY" in snippet or "key" in snippet.lower(), c.id


def test_json_snippets_fill_numbers_as_numbers():
    data = connect.snippet_value(client("pi"), VALUES)
    model = data["providers"]["bmoe"]["models"][0]
    assert model == {"id": "SmolLM2-135M-Instruct", "name": "SmolLM2-135M-Instruct (bmoe-daemon)",
                     "contextWindow": 8192, "maxTokens": 2048}
    assert data["providers"]["bmoe"]["apiKey"] == "BMOE_API_KEY"
    opencode = connect.snippet_value(client("opencode"), VALUES)
    assert opencode["provider"]["bmoe"]["models"]["SmolLM2-135M-Instruct"]["limit"]["context"] == 8192
    assert opencode["provider"]["bmoe"]["options"] == {"baseURL": ADDRESS + "/v1", "apiKey": "{env:BMOE_API_KEY}"}


def test_local_base_url():
    assert connect.local_base_url("http://0.0.0.0:8765") == "http://127.0.0.1:8765"
    assert connect.local_base_url("http://[::]:8765/") == "http://[::1]:8765"
    assert connect.local_base_url("http://127.0.0.1:9") == "http://127.0.0.1:9"


# ---- TOML: a block of its own ----


def test_toml_block_is_appended_then_replaced_and_the_rest_stays_byte_for_byte(tmp_path):
    path = write(tmp_path / ".codex" / "config.toml", CODEX_TOML)
    file, backup = connect.apply(client("codex"), tmp_path, VALUES, write_file=write_atomic, when=1700000000)
    assert file == path and backup == path.with_name("config.toml.bmoe-backup-1700000000")
    first = path.read_text()
    assert first.startswith(CODEX_TOML)  # everything that was there, untouched
    assert first.count(connect.MARK_BEGIN) == 1 and first.count(connect.MARK_END) == 1
    data = tomllib.loads(first)
    assert data["model"] == "gpt-5" and data["model_providers"]["other"]["name"] == "Other"
    assert data["mcp_servers"]["docs"]["args"] == ["-y", "docs-server"]
    assert data["model_providers"]["bmoe"]["base_url"] == ADDRESS + "/v1"
    assert data["profiles"]["bmoe"] == {"model_provider": "bmoe", "model": "SmolLM2-135M-Instruct"}

    # The person adds something after the block; the next write replaces the block only.
    write(path, first + "\n[tui]\nnotifications = true  # mine\n")
    before = path.read_text()
    again = connect.Values(base_url="http://127.0.0.1:9999", model="other-model", context=4096, key_needed=False)
    _, backup2 = connect.apply(client("codex"), tmp_path, again, write_file=write_atomic, when=1700000000)
    second = path.read_text()
    assert second.count(connect.MARK_BEGIN) == 1 and "4321" not in second and "9999" in second
    start, end = before.index(connect.MARK_BEGIN), before.index(connect.MARK_END) + len(connect.MARK_END) + 1
    s2, e2 = second.index(connect.MARK_BEGIN), second.index(connect.MARK_END) + len(connect.MARK_END) + 1
    assert before[:start] == second[:s2] and before[end:] == second[e2:]
    assert tomllib.loads(second)["tui"] == {"notifications": True}
    # Two writes within a second keep both backups, each with the bytes it replaced.
    assert backup.read_text() == CODEX_TOML
    assert backup2 == path.with_name("config.toml.bmoe-backup-1700000000-2") and backup2.read_text() == before


def test_toml_file_without_a_final_newline_or_missing_gets_a_block(tmp_path):
    path = write(tmp_path / ".codex" / "config.toml", 'model = "x"')
    connect.apply(client("codex"), tmp_path, VALUES, write_file=write_atomic)
    assert path.read_text().startswith('model = "x"\n\n' + connect.MARK_BEGIN)
    fresh = tmp_path / "other"
    fresh.mkdir()
    file, backup = connect.apply(client("codex"), fresh, VALUES, write_file=write_atomic)
    assert backup is None and file.read_text().startswith(connect.MARK_BEGIN)
    assert tomllib.loads(file.read_text())["model_providers"]["bmoe"]["wire_api"] == "chat"


@pytest.mark.parametrize("text, why", [
    ('model = "unterminated\n[broken\n', "not valid TOML"),
    ("[model_providers.bmoe]\nname = 'mine'\n", "clash"),
    (f"{connect.MARK_BEGIN}\nx = 1\n", "closing"),
])
def test_a_toml_file_that_cannot_take_the_block_is_left_untouched(tmp_path, text, why):
    path = write(tmp_path / ".codex" / "config.toml", text)
    with pytest.raises(connect.SettingsError, match=why):
        connect.apply(client("codex"), tmp_path, VALUES, write_file=write_atomic)
    assert path.read_text() == text and backups(path) == []


# ---- JSON: merged key by key ----


def test_json_is_merged_key_by_key_and_a_second_write_duplicates_nothing(tmp_path):
    path = write(tmp_path / ".config" / "opencode" / "opencode.json", json.dumps(OPENCODE_JSON, indent=4))
    old = path.read_bytes()
    _, backup = connect.apply(client("opencode"), tmp_path, VALUES, write_file=write_atomic)
    data = json.loads(path.read_text())
    assert data["theme"] == "tokyonight"
    assert data["provider"]["other"] == OPENCODE_JSON["provider"]["other"]
    assert data["provider"]["bmoe"]["options"]["baseURL"] == ADDRESS + "/v1"
    assert data["model"] == "bmoe/SmolLM2-135M-Instruct"
    assert backup.read_bytes() == old
    once = path.read_text()
    connect.apply(client("opencode"), tmp_path, VALUES, write_file=write_atomic)
    assert path.read_text() == once

    pi = write(tmp_path / ".pi" / "agent" / "models.json", json.dumps(
        {"providers": {"ollama": {"baseUrl": "http://localhost:11434/v1", "models": [{"id": "llama"}]}}}))
    for _ in range(2):
        connect.apply(client("pi"), tmp_path, VALUES, write_file=write_atomic)
    providers = json.loads(pi.read_text())["providers"]
    assert providers["ollama"]["models"] == [{"id": "llama"}]
    assert [m["id"] for m in providers["bmoe"]["models"]] == ["SmolLM2-135M-Instruct"]


@pytest.mark.parametrize("text", [
    '{\n  // Zed settings\n  "theme": "One Dark",\n}\n',
    '{"theme": "One Dark",}',
    "[1, 2]",
    "{not json",
])
def test_a_json_file_that_does_not_parse_is_left_untouched(tmp_path, text):
    path = write(tmp_path / ".config" / "zed" / "settings.json", text)
    with pytest.raises(connect.SettingsError):
        connect.apply(client("zed"), tmp_path, VALUES, write_file=write_atomic)
    assert path.read_text() == text and backups(path) == []


def test_writing_through_a_link_keeps_the_link_and_the_mode(tmp_path):
    dotfiles = write(tmp_path / "dotfiles" / "opencode.json", '{"theme": "x"}')
    os.chmod(dotfiles, 0o600)
    link = tmp_path / "home" / ".config" / "opencode" / "opencode.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(dotfiles)
    _, backup = connect.apply(client("opencode"), tmp_path / "home", VALUES, write_file=write_atomic)
    assert link.is_symlink() and json.loads(dotfiles.read_text())["theme"] == "x"
    assert "bmoe" in json.loads(dotfiles.read_text())["provider"]
    assert stat.S_IMODE(dotfiles.stat().st_mode) == 0o600
    assert backup.parent == link.parent and backup.read_text() == '{"theme": "x"}'


async def test_a_settings_file_that_is_a_fifo_a_device_or_huge_is_left_untouched(tmp_path):
    path = tmp_path / ".config" / "opencode" / "opencode.json"
    pipe = fifo(path)
    with releasing(pipe):
        with pytest.raises(connect.SettingsError, match="not a regular file"):
            await bounded(connect.apply, client("opencode"), tmp_path, VALUES, write_file=write_atomic)
    assert pipe.is_fifo() and backups(path) == []
    pipe.unlink()
    zero_link(path)
    with pytest.raises(connect.SettingsError, match="not a regular file"):
        await bounded(connect.read_settings, path)
    path.unlink()
    sparse(path)
    with pytest.raises(connect.SettingsError, match="larger than"):
        await bounded(connect.read_settings, path)
    assert path.stat().st_size == SPARSE_BYTES and backups(path) == []


# ---- the routes ----


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    return folder


def make_app(daemon, tmp_path, *, key: str | None = None, engine: Engine | None = None):
    ctx = DaemonContext(config=Config(data_dir=tmp_path / "data", api_key=key), hub=daemon.hub,
                        engine=engine or daemon.engine, bus=daemon.bus, address=ADDRESS)
    return create_app(ctx)


async def call(app, method, path, scope=LOCAL, headers=None):
    resp = await app.test_client().open(path, method=method, scope_base=scope, headers=headers or {})
    return resp.status_code, await resp.get_json()


async def test_get_lists_every_app_with_this_daemon_s_settings(daemon, tmp_path, home):
    status, rows = await call(make_app(daemon, tmp_path), "GET", "/api/connect")
    assert status == 200
    by_id = {r["id"]: r for r in rows}
    assert set(rows[0]) == {"id", "name", "how", "snippet", "file", "writable"}
    assert by_id["codex"]["file"] == str(home / ".codex" / "config.toml") and by_id["codex"]["writable"] is True
    assert by_id["openai"]["file"] is None and by_id["openai"]["writable"] is False
    assert all(ADDRESS + "/v1" in r["snippet"] for r in rows)
    assert 'model = "scripted"' in by_id["codex"]["snippet"]
    assert "not-needed" in by_id["aider"]["snippet"]  # no key: nothing to send


async def test_no_home_folder_means_nothing_is_writable(daemon, tmp_path, monkeypatch):
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.delenv("USERPROFILE", raising=False)
    app = make_app(daemon, tmp_path)
    status, rows = await call(app, "GET", "/api/connect")
    assert status == 200 and all(r["file"] is None and r["writable"] is False for r in rows)
    status, err = await call(app, "POST", "/api/connect/codex")
    assert (status, err["code"]) == (400, "bad_request") and "home folder" in err["error"]


async def test_post_writes_the_settings_with_a_backup(daemon, tmp_path, home):
    app = make_app(daemon, tmp_path)
    path = write(home / ".codex" / "config.toml", CODEX_TOML)
    status, body = await call(app, "POST", "/api/connect/codex")
    assert status == 200 and body["file"] == str(path)
    assert text(body["backup"]) == CODEX_TOML
    assert Path(body["backup"]).name.startswith("config.toml.bmoe-backup-")
    assert tomllib.loads(path.read_text())["profiles"]["bmoe"]["model"] == "scripted"
    status, body = await call(app, "POST", "/api/connect/codex")
    assert status == 200 and path.read_text().count(connect.MARK_BEGIN) == 1
    # A file that does not exist yet is created, with no backup.
    status, body = await call(app, "POST", "/api/connect/opencode")
    assert status == 200 and body["backup"] is None
    assert json.loads(text(body["file"]))["model"] == "bmoe/scripted"


async def test_preview_shows_the_diff_a_write_makes_and_writes_nothing(daemon, tmp_path, home):
    """The person sees what Write will change before it is written: a unified diff of
    the file, nothing written or backed up; the values of lines that look like secrets
    (another app's own key) are hidden; then the write makes exactly that change."""
    app = make_app(daemon, tmp_path)
    mine = CODEX_TOML + 'openai_api_key = "sk-live-not-for-the-page"\n'
    path = write(home / ".codex" / "config.toml", mine)
    status, shown = await call(app, "GET", "/api/connect/codex/preview")
    first = shown
    assert status == 200 and shown["file"] == str(path) and shown["exists"] and shown["changed"]
    assert path.read_text() == mine and backups(path) == []
    assert "sk-live-not-for-the-page" not in json.dumps(shown)
    assert f'openai_api_key = {connect.HIDDEN}' in shown["diff"]
    added = [line[1:] for line in shown["diff"].splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line for line in shown["diff"].splitlines() if line.startswith("-") and not line.startswith("---")]
    assert removed == [] and connect.MARK_BEGIN in added and 'model = "scripted"' in added
    status, body = await call(app, "POST", "/api/connect/codex")
    assert status == 200
    hidden = [connect.hide_secrets(line) for line in path.read_text().splitlines()]
    made = difflib.unified_diff([connect.hide_secrets(line) for line in mine.splitlines()], hidden,
                                fromfile=str(path), tofile=str(path), n=connect.DIFF_CONTEXT, lineterm="")
    assert "\n".join(made) == first["diff"]  # the write made the change shown, and only it
    # Written already: the same write again changes nothing, and says so.
    status, shown = await call(app, "GET", "/api/connect/codex/preview")
    assert status == 200 and not shown["changed"] and shown["diff"] == ""
    # A file that is not there yet: the whole file is new.
    status, shown = await call(app, "GET", "/api/connect/opencode/preview")
    assert status == 200 and not shown["exists"] and shown["diff"].startswith("--- /dev/null")
    assert not (home / ".config" / "opencode").exists()


def test_hide_secrets_hides_values_of_secret_names_only():
    assert connect.hide_secrets('api_key = "sk-1"') == f"api_key = {connect.HIDDEN}"
    assert connect.hide_secrets('  "apiKey": "sk-1",') == f'  "apiKey": {connect.HIDDEN}'
    assert connect.hide_secrets("GITHUB_TOKEN=ghp_1") == f"GITHUB_TOKEN={connect.HIDDEN}"
    assert connect.hide_secrets("password: hunter2") == f"password: {connect.HIDDEN}"
    for kept in ('model = "qwen"', '"base_url": "http://127.0.0.1:8765/v1"', "# the key is elsewhere", "key ="):
        assert connect.hide_secrets(kept) == kept


async def test_post_refuses_what_it_cannot_do(daemon, tmp_path, home):
    app = make_app(daemon, tmp_path)
    zed = write(home / ".config" / "zed" / "settings.json", '{\n  // mine\n  "vim_mode": true\n}\n')
    status, err = await call(app, "POST", "/api/connect/zed")
    assert (status, err["code"]) == (409, "exists") and "not plain JSON" in err["error"]
    assert zed.read_text() == '{\n  // mine\n  "vim_mode": true\n}\n' and backups(zed) == []
    assert (await call(app, "POST", "/api/connect/nope"))[0] == 404
    status, err = await call(app, "POST", "/api/connect/openai")
    assert (status, err["code"]) == (400, "bad_request")
    no_model = make_app(daemon, tmp_path, engine=Engine(None))
    for method, path in (("POST", "/api/connect/codex"), ("GET", "/api/connect/codex/preview")):
        status, err = await call(no_model, method, path)
        assert (status, err["code"]) == (409, "no_model")
    status, err = await call(app, "GET", "/api/connect/zed/preview")
    assert (status, err["code"]) == (409, "exists") and "not plain JSON" in err["error"]
    assert (await call(app, "GET", "/api/connect/nope/preview"))[0] == 404
    assert not (home / ".codex").exists()


async def test_connect_is_local_only(daemon, tmp_path, home):
    app = make_app(daemon, tmp_path)
    for method, path in (("GET", "/api/connect"), ("GET", "/api/connect/codex/preview"),
                         ("POST", "/api/connect/codex")):
        status, err = await call(app, method, path, NET)
        assert (status, err["code"]) == (403, "local_only")
    assert not (home / ".codex").exists()


async def test_the_key_is_never_in_a_snippet_or_a_file(daemon, tmp_path, home):
    app = make_app(daemon, tmp_path, key=KEY)
    auth = {"Authorization": f"Bearer {KEY}"}
    assert (await call(app, "GET", "/api/connect"))[0] == 401
    status, rows = await call(app, "GET", "/api/connect", headers=auth)
    assert status == 200 and KEY not in json.dumps(rows)
    assert all("BMOE_API_KEY" in r["snippet"] or r["id"] in ("continue", "zed") for r in rows)
    for app_id in ("codex", "opencode", "pi", "zed"):
        status, body = await call(app, "POST", f"/api/connect/{app_id}", headers=auth)
        assert status == 200
        assert KEY not in text(body["file"])
    assert tomllib.loads((home / ".codex" / "config.toml").read_text())["model_providers"]["bmoe"]["env_key"] == \
        "BMOE_API_KEY"


async def test_the_address_written_is_the_daemon_s_not_the_request_s(daemon, tmp_path, home):
    # A page that reached the daemon under another name (DNS rebinding) is refused by
    # the Host check; and a request under another address of this machine still gets
    # this daemon's own address written, never the request's Host.
    app = make_app(daemon, tmp_path)
    evil = {"Host": "evil.example:4321", "Origin": "http://evil.example:4321"}
    status, rows = await call(app, "GET", "/api/connect", headers=evil)
    assert status == 403 and rows["code"] == "forbidden_origin"
    other = {"Host": "203.0.113.9:4321"}
    status, rows = await call(app, "GET", "/api/connect", headers=other)
    assert status == 200 and all("203.0.113.9" not in r["snippet"] for r in rows)
    status, body = await call(app, "POST", "/api/connect/opencode", headers=other)
    assert status == 200 and "203.0.113.9" not in text(body["file"])
