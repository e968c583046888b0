"""Skills (actors/skills/catalog.py, actors/skills/tool.py, bmoe_daemon/routes/skills.py)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from actors.bus import EventBus
from actors.conversations.hub import Hub
from actors.errors import ToolError
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.runs.env import Env
from actors.skills.catalog import SkillCatalog, SkillFormatError, SkillText, parse_skill, read_place, render_skill
from actors.skills.tool import UseSkill
from actors.tools.registry import ToolContext
from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.server import SHIPPED_SKILLS, build_registry
from bmoe_daemon.store import Store, write_atomic
from tests.special_files import bounded, fifo, releasing, sparse, zero_link
from tests.waiting import wait_state

NET = {"client": ("192.0.2.7", 40000)}
LOCAL = {"client": ("127.0.0.1", 40000)}
SHIPPED = ["explain-codebase", "review-change", "summarize-document", "write-tests"]
OUR_TOOLS = {"read_file", "file_glob_search", "grep_search", "get_info", "write_file", "edit_file",
             "exec_shell_command", "use_skill"}


def write_skill(folder: Path, name: str, description: str = "Does a thing.", body: str = "Step one.",
                *, file_name: str | None = None, title: str | None = None) -> Path:
    path = folder / (file_name or name) / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_skill(SkillText(name=name, description=description, body=body, title=title)))
    return path


def catalog(tmp_path: Path, shipped: Path | None = None) -> SkillCatalog:
    return SkillCatalog(shipped=shipped, data_dir=tmp_path / "data", write_file=write_atomic)


# ---- the file format ----


def test_parse_the_forms_front_matter_takes():
    text = (
        "\ufeff---\r\n"
        "# a comment\r\n"
        "name: tidy-up\r\n"
        "title: 'Tidy it''s files'\r\n"
        "description: >\r\n"
        "  Clean the folder\r\n"
        "  before a release.\r\n"
        "allowed-tools: [read_file, grep_search]\r\n"
        "metadata:\r\n"
        "  owner: someone\r\n"
        "---\r\n"
        "\r\n"
        "# Tidy\r\n"
        "Do it.\r\n"
    )
    skill = parse_skill(text)
    assert skill == SkillText(name="tidy-up", description="Clean the folder before a release.",
                              body="# Tidy\nDo it.\n", title="Tidy it's files",
                              allowed_tools=("read_file", "grep_search"))
    plain = parse_skill('---\nname: a\ndescription: one line: with a colon\n  and more # not a comment? yes\n---\nB')
    assert plain.description == "one line: with a colon and more # not a comment? yes"
    quoted = parse_skill('---\nname: a\ndescription: "say \\"hi\\" \\u00e9"\n---\nB')
    assert quoted.description == 'say "hi" é' and quoted.title is None
    block = parse_skill("---\nname: a\ndescription: |\n  line one\n  line two\n---\n")
    assert block.description == "line one line two" and block.body == ""


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("name: a\ndescription: b\n", "does not start with front matter"),
        ("---\nname: a\ndescription: b\n", "no closing"),
        ("---\ndescription: b\n---\n", "no name"),
        ("---\nname: Not_Kebab\ndescription: b\n---\n", "is not valid"),
        ("---\nname: a--b\ndescription: b\n---\n", "is not valid"),
        ("---\nname: a\n---\n", "no description"),
        ("---\nname: a\nname: b\ndescription: c\n---\n", "twice"),
        ("---\nname: a\ndescription: \"open\n---\n", "not closed"),
        ("---\njust words\n---\n", "not `key: value`"),
        ("---\n  indented: x\nname: a\n---\n", "indented"),
        ("---\nname: a\ndescription: " + "x" * 2000 + "\n---\n", "longer than"),
    ],
)
def test_parse_refuses_with_why(text, why):
    with pytest.raises(SkillFormatError, match=re.escape(why)):
        parse_skill(text)


names = st.from_regex(r"\A[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,3}\Z")
words = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60).filter(lambda t: t.strip())


@given(names, words, st.one_of(st.none(), words), st.text(max_size=300).filter(lambda b: b.strip()))
def test_render_then_parse_gives_the_skill_back(name, description, title, body):
    body = body.replace("\r", "").strip("\n") + "\n"
    description = " ".join(description.split())
    title = " ".join(title.split()) if title else None
    skill = SkillText(name=name, description=description, body=body, title=title)
    assert parse_skill(render_skill(skill)) == skill


def test_the_shipped_skills_parse_and_name_only_our_tools():
    skills = read_place(SHIPPED_SKILLS, "bundled")
    assert [s.name for s in skills] == SHIPPED
    for skill in skills:
        assert skill.description and skill.title and len(skill.description) < 300
        assert len(skill.body) > 1500, skill.name  # written out step by step
        named = set(re.findall(r"`([a-z]+(?:_[a-z]+)+)`", skill.body))
        tool_like = {n for n in named if n.endswith(("_file", "_search", "_command", "_info", "_skill"))}
        assert tool_like <= OUR_TOOLS, (skill.name, tool_like - OUR_TOOLS)
        assert len(tool_like) >= 3, skill.name


# ---- the three places ----


def test_a_later_place_replaces_an_earlier_one(tmp_path):
    shipped, ws = tmp_path / "shipped", tmp_path / "ws"
    write_skill(shipped, "alpha", "Bundled alpha.")
    write_skill(shipped, "beta", "Bundled beta.")
    write_skill(tmp_path / "data" / "skills", "beta", "The person's beta.")
    write_skill(tmp_path / "data" / "skills", "gamma", "The person's gamma.")
    write_skill(ws / ".bmoe" / "skills", "gamma", "The workspace's gamma.")
    write_skill(ws / ".bmoe" / "skills", "delta", "The workspace's delta.")
    cat = catalog(tmp_path, shipped)
    got = {s.name: (s.source, s.description) for s in cat.read()}
    assert got == {"alpha": ("bundled", "Bundled alpha."), "beta": ("user", "The person's beta."),
                   "gamma": ("user", "The person's gamma.")}
    got = {s.name: (s.source, s.description) for s in cat.read(ws)}
    assert got["gamma"] == ("workspace", "The workspace's gamma.") and got["delta"][0] == "workspace"
    assert got["beta"] == ("user", "The person's beta.")


def test_a_bad_file_is_skipped_with_a_log_line_and_the_others_listed(tmp_path, caplog):
    place = tmp_path / "data" / "skills"
    write_skill(place, "good")
    write_skill(place, "other-name", file_name="folder-name")  # name is not its folder's
    (place / "broken").mkdir()
    (place / "broken" / "SKILL.md").write_text("no front matter here")
    (place / "binary").mkdir()
    (place / "binary" / "SKILL.md").write_bytes(b"---\nname: binary\n\xff\xfe\n---\n")
    (place / "huge").mkdir()
    (place / "huge" / "SKILL.md").write_text("---\nname: huge\ndescription: d\n---\n" + "x" * 300_000)
    (place / "empty-folder").mkdir()
    (place / "README.md").write_text("not a skill folder")
    with caplog.at_level(logging.WARNING, logger="bmoe.skills"):
        listed = catalog(tmp_path).read()
    assert [s.name for s in listed] == ["good"]
    for why in ("is not its folder's", "does not start with front matter", "not UTF-8", "larger than"):
        assert why in caplog.text


def test_a_workspace_skill_that_leads_outside_the_workspace_is_skipped(tmp_path):
    outside = tmp_path / "outside"
    write_skill(outside, "secret", "Outside the workspace.")
    ws = tmp_path / "ws"
    (ws / ".bmoe" / "skills").mkdir(parents=True)
    (ws / ".bmoe" / "skills" / "secret").symlink_to(outside / "secret")
    assert catalog(tmp_path).read(ws) == []


async def test_a_workspace_skills_folder_that_links_out_is_not_read(tmp_path, caplog):
    outside = tmp_path / "outside"
    write_skill(outside, "secret", "Outside the workspace.")
    ws = tmp_path / "ws"
    (ws / ".bmoe").mkdir(parents=True)
    (ws / ".bmoe" / "skills").symlink_to(outside)
    with caplog.at_level(logging.WARNING, logger="bmoe.skills"):
        assert catalog(tmp_path).read(ws) == []
    assert "leads out of the workspace" in caplog.text
    (ws / ".bmoe" / "skills").unlink()
    (ws / ".bmoe" / "skills" / "inner").mkdir(parents=True)
    (ws / ".bmoe" / "skills" / "inner" / "SKILL.md").symlink_to(outside / "secret" / "SKILL.md")
    assert catalog(tmp_path).read(ws) == []


async def test_a_skill_file_that_is_a_fifo_a_device_or_huge_is_skipped_at_once(tmp_path, caplog):
    ws = tmp_path / "ws"
    user = tmp_path / "data" / "skills"
    pipes = [fifo(ws / ".bmoe" / "skills" / "pipe" / "SKILL.md"), fifo(user / "pipe" / "SKILL.md")]
    zero_link(ws / ".bmoe" / "skills" / "zero" / "SKILL.md")
    zero_link(user / "zero" / "SKILL.md")
    sparse(ws / ".bmoe" / "skills" / "huge" / "SKILL.md")
    sparse(user / "huge" / "SKILL.md")
    write_skill(ws / ".bmoe" / "skills", "fine", "Still listed.")
    with releasing(*pipes), caplog.at_level(logging.WARNING, logger="bmoe.skills"):
        listed = await bounded(catalog(tmp_path).read, ws)
    assert [s.name for s in listed] == ["fine"]
    assert "larger than" in caplog.text


async def test_a_switches_file_that_is_a_fifo_or_huge_turns_every_skill_on(tmp_path, caplog):
    shipped = tmp_path / "shipped"
    write_skill(shipped, "alpha", "A.")
    switches = tmp_path / "data" / "agent" / "skills.json"
    pipe = fifo(switches)
    with releasing(pipe), caplog.at_level(logging.WARNING, logger="bmoe.skills"):
        assert [s.enabled for s in await bounded(catalog(tmp_path, shipped).read)] == [True]
    pipe.unlink()
    sparse(switches)
    with caplog.at_level(logging.WARNING, logger="bmoe.skills"):
        assert [s.enabled for s in await bounded(catalog(tmp_path, shipped).read)] == [True]
    assert "larger than" in caplog.text


def test_a_place_with_very_many_entries_is_read_only_so_far(tmp_path, caplog):
    from actors.skills.catalog import MAX_SCAN_ENTRIES

    place = tmp_path / "data" / "skills"
    place.mkdir(parents=True)
    for i in range(MAX_SCAN_ENTRIES + 50):
        (place / f"f{i:05d}").write_text("")
    with caplog.at_level(logging.WARNING, logger="bmoe.skills"):
        assert catalog(tmp_path).read() == []
    assert f"more than {MAX_SCAN_ENTRIES} entries" in caplog.text


async def test_switches_are_kept_and_every_skill_is_on_until_switched_off(tmp_path):
    shipped = tmp_path / "shipped"
    write_skill(shipped, "alpha", "A.")
    write_skill(shipped, "beta", "B.")
    cat = catalog(tmp_path, shipped)
    assert await cat.switched_on() == [("alpha", "A."), ("beta", "B.")]
    skill = await cat.set_enabled("alpha", False)
    assert skill.enabled is False
    assert json.loads((tmp_path / "data" / "agent" / "skills.json").read_text()) == {"alpha": False}
    assert await cat.switched_on() == [("beta", "B.")]
    assert [s.enabled for s in await cat.listing()] == [False, True]
    await cat.set_enabled("alpha", True)
    assert json.loads((tmp_path / "data" / "agent" / "skills.json").read_text()) == {}
    (tmp_path / "data" / "agent" / "skills.json").write_text("{broken")
    assert len(await cat.switched_on()) == 2


# ---- the routes ----


@attrs.define
class SkillsApp:
    app: object
    hub: Hub
    backend: ScriptedBackend
    catalog: SkillCatalog
    data: Path
    shipped: Path


@pytest.fixture
async def skills_app(tmp_path: Path) -> AsyncIterator[SkillsApp]:
    shipped = tmp_path / "shipped"
    write_skill(shipped, "review-change", "Bundled review.", "Bundled steps.")
    write_skill(shipped, "write-tests", "Bundled tests.", "Test steps.")
    data = tmp_path / "data"
    cat = SkillCatalog(shipped=shipped, data_dir=data, write_file=write_atomic)
    backend = ScriptedBackend()
    engine = Engine(backend)
    store = Store(data)
    registry = build_registry(Config(data_dir=data), skills=cat)
    env = Env(engine=engine, bus=EventBus(), store=store, registry=registry, resolve_workspace=lambda _: None,
              skills=cat)
    hub = Hub(env, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(hub.run)
        ctx = DaemonContext(config=Config(data_dir=data), hub=hub, engine=engine, bus=env.bus, skills=cat)
        yield SkillsApp(create_app(ctx), hub, backend, cat, data, shipped)
        for conv in hub.conversations():
            await conv.flush()
        hub.close()
        engine.close()


async def request(app, method, path, scope=LOCAL, json=None, raw: bytes | None = None):
    client = app.test_client()
    if raw is not None:
        resp = await client.open(path, method=method, data=raw, scope_base=scope,
                                 headers={"content-type": "application/json"})
    else:
        resp = await client.open(path, method=method, json=json, scope_base=scope)
    return resp.status_code, await resp.get_json()


NEW = {"name": "tidy-up", "description": "Tidy a folder.", "body": "1. Look.\n2. Tidy."}


async def test_every_skill_route_answers_to_a_local_client_only(skills_app):
    app = skills_app.app
    for method, path, body in (("GET", "/api/skills", None), ("POST", "/api/skills", NEW),
                               ("GET", "/api/skills/review-change", None),
                               ("PUT", "/api/skills/review-change", {**NEW, "name": "review-change"}),
                               ("PATCH", "/api/skills/review-change", {"enabled": False}),
                               ("DELETE", "/api/skills/review-change", None)):
        status, got = await request(app, method, path, NET, body)
        assert (status, got["code"]) == (403, "local_only"), (method, path)
    assert not (skills_app.data / "skills").exists()
    assert not (skills_app.data / "agent" / "skills.json").exists()


async def test_a_skill_opens_to_read_with_its_allowed_tools_and_its_file(skills_app):
    app, shipped = skills_app.app, skills_app.shipped
    status, got = await request(app, "GET", "/api/skills/review-change")
    assert status == 200
    assert got == {"name": "review-change", "title": "Review change", "description": "Bundled review.",
                   "source": "bundled", "enabled": True, "body": "Bundled steps.\n", "allowed_tools": None,
                   "file": '---\nname: review-change\ndescription: "Bundled review."\n---\n\nBundled steps.\n'}
    # A skill that names its tools: the list as written, and a SKILL.md that reads back the same.
    folder = shipped / "read-only"
    folder.mkdir()
    (folder / "SKILL.md").write_text("---\nname: read-only\ndescription: Look only.\n"
                                     "allowed-tools: read_file, list_files\n---\nLook, do not touch.\n")
    status, got = await request(app, "GET", "/api/skills/read-only")
    assert status == 200 and got["allowed_tools"] == ["read_file", "list_files"]
    assert parse_skill(got["file"]).allowed_tools == ("read_file", "list_files")
    assert parse_skill(got["file"]).body == got["body"]
    # An unknown or malformed name, an unknown workspace: 404 with words, never a 500.
    for path in ("/api/skills/no-such-skill", "/api/skills/Not%20A%20Name", "/api/skills/review-change?workspace=nope"):
        status, got = await request(app, "GET", path)
        assert (status, got["code"]) == (404, "not_found"), path
        assert got["error"]


async def test_list_write_switch_and_delete(skills_app, tmp_path):
    app, data = skills_app.app, skills_app.data
    status, listed = await request(app, "GET", "/api/skills")
    assert status == 200
    assert listed[0] == {"name": "review-change", "title": "Review change", "description": "Bundled review.",
                         "source": "bundled", "enabled": True, "body": "Bundled steps.\n"}
    status, made = await request(app, "POST", "/api/skills", json={**NEW, "title": "Tidy up"})
    assert status == 201 and made["source"] == "user" and made["title"] == "Tidy up"
    assert parse_skill((data / "skills" / "tidy-up" / "SKILL.md").read_text()).description == "Tidy a folder."
    status, got = await request(app, "POST", "/api/skills", json=NEW)
    assert (status, got["code"]) == (409, "exists")
    status, got = await request(app, "POST", "/api/skills", json={**NEW, "name": "review-change"})
    assert (status, got["code"]) == (409, "exists")  # a bundled name: PUT writes the person's version

    # PUT on a bundled skill writes the person's version of it.
    status, put = await request(app, "PUT", "/api/skills/review-change",
                                json={"name": "review-change", "description": "Mine.", "body": "My steps."})
    assert status == 200 and (put["source"], put["body"]) == ("user", "My steps.\n")
    assert (skills_app.shipped / "review-change" / "SKILL.md").read_text().count("Bundled steps.") == 1
    status, put = await request(app, "PUT", "/api/skills/tidy-up", json={**NEW, "body": "Again."})
    assert status == 200 and put["body"] == "Again.\n"

    status, sw = await request(app, "PATCH", "/api/skills/write-tests", json={"enabled": False})
    assert status == 200 and sw["enabled"] is False
    status, listed = await request(app, "GET", "/api/skills")
    assert {s["name"]: s["enabled"] for s in listed} == {"review-change": True, "tidy-up": True, "write-tests": False}

    # The workspace's own, with ?workspace=.
    folder = tmp_path / "ws"
    write_skill(folder / ".bmoe" / "skills", "tidy-up", "The workspace's tidy.")
    ws = await skills_app.hub.add_workspace(str(folder))
    status, listed = await request(app, "GET", f"/api/skills?workspace={ws.id}")
    assert {s["name"]: s["source"] for s in listed}["tidy-up"] == "workspace"
    status, sw = await request(app, "PATCH", f"/api/skills/tidy-up?workspace={ws.id}", json={"enabled": False})
    assert status == 200 and sw["source"] == "workspace" and sw["enabled"] is False

    # DELETE: the person's own only; their version of a bundled one goes, the bundled one shows again.
    status, got = await request(app, "DELETE", "/api/skills/review-change")
    assert status == 200 and not (data / "skills" / "review-change").exists()
    status, listed = await request(app, "GET", "/api/skills")
    assert {s["name"]: s["source"] for s in listed}["review-change"] == "bundled"
    status, got = await request(app, "DELETE", "/api/skills/review-change")
    assert (status, got["code"]) == (400, "bad_request") and "switch it off" in got["error"]
    status, got = await request(app, "DELETE", "/api/skills/tidy-up")
    assert status == 200


async def test_skill_route_errors(skills_app):
    app = skills_app.app
    for method, path, body in (("PUT", "/api/skills/nope", {**NEW, "name": "nope"}),
                               ("PATCH", "/api/skills/nope", {"enabled": True}),
                               ("DELETE", "/api/skills/nope", None),
                               ("DELETE", "/api/skills/..", None),
                               ("GET", "/api/skills?workspace=missing", None)):
        status, got = await request(app, method, path, json=body)
        assert (status, got["code"]) == (404, "not_found"), (method, path)
    bad_bodies = [b"", b"not json", b"[]", b"{}", b'{"name": "x", "description": "d"}',
                  b'{"name": 5, "description": "d", "body": "b"}',
                  b'{"name": "Bad Name", "description": "d", "body": "b"}',
                  b'{"name": "../up", "description": "d", "body": "b"}',
                  b'{"name": "ok", "description": " ", "body": "b"}',
                  b'{"name": "ok", "description": "d", "body": "  "}',
                  b'{"name": "ok", "description": "d", "body": "b", "title": 3}']
    for raw in bad_bodies:
        status, got = await request(app, "POST", "/api/skills", raw=raw)
        assert (status, got["code"]) == (400, "bad_request"), raw
    status, got = await request(app, "PUT", "/api/skills/review-change", json={**NEW})
    assert (status, got["code"]) == (400, "bad_request") and "path" in got["error"]
    for raw in (b"{}", b'{"enabled": "no"}', b'{"enabled": 1}'):
        status, got = await request(app, "PATCH", "/api/skills/review-change", raw=raw)
        assert (status, got["code"]) == (400, "bad_request"), raw
    assert not (skills_app.data / "skills").exists()
    assert not (skills_app.data / "agent" / "skills.json").exists()


# ---- the agent ----


async def test_the_prompt_lists_switched_on_skills_and_use_skill_reads_one(skills_app):
    d = skills_app
    await d.catalog.set_enabled("write-tests", False)
    folder = d.data.parent / "skills-ws"
    folder.mkdir(exist_ok=True)
    ws = await d.hub.add_workspace(str(folder))
    conv = await d.hub.create(workspace=ws.id)
    d.backend.push({"tool_calls": [{"name": "use_skill", "arguments": {"name": "review-change"}}]},
                   {"tool_calls": [{"name": "use_skill", "arguments": {"name": "write-tests"}}]},
                   {"text": "Done."})
    await conv.send_message("review please")
    await wait_state(conv, "idle")
    system = d.backend.turns[0].messages[0]["content"]
    assert "- review-change: Bundled review." in system and "write-tests" not in system
    assert "use_skill" in {t.name for t in d.backend.turns[0].tools}
    ok, off = [i for i in conv.items if i.kind == "tool"]
    assert ok.state == "done" and ok.title == "Read the skill review-change"
    assert ok.result == "Skill review-change: Review change\n\nBundled steps.\n"
    assert off.state == "error" and "no switched-on skill named 'write-tests'" in off.result
    # The prompt is the same for every round of the message.
    assert all(t.messages[0] == d.backend.turns[0].messages[0] for t in d.backend.turns)


async def test_no_skill_on_no_use_skill_and_none_from_the_network(skills_app):
    d = skills_app
    conv = await d.hub.create()
    await conv.send_message("hi from afar", local=False)
    await wait_state(conv, "idle")
    turn = d.backend.turns[-1]
    assert "use_skill" not in {t.name for t in turn.tools} and "review-change" not in turn.messages[0]["content"]
    for name in ("review-change", "write-tests"):
        await d.catalog.set_enabled(name, False)
    await conv.send_message("hi")
    await wait_state(conv, "idle")
    turn = d.backend.turns[-1]
    assert "use_skill" not in {t.name for t in turn.tools} and "Skills you can read" not in turn.messages[0]["content"]


async def test_use_skill_reads_the_workspace_version(tmp_path):
    shipped, ws = tmp_path / "shipped", tmp_path / "ws"
    write_skill(shipped, "tidy", body="Bundled.")
    write_skill(ws / ".bmoe" / "skills", "tidy", body="The workspace's.")
    tool = UseSkill(catalog(tmp_path, shipped))
    got = await tool.run({"name": "tidy"}, ToolContext(conversation="c", workspace=ws, mode="ask"))
    assert got.result.endswith("The workspace's.\n")
    got = await tool.run({"name": "tidy"}, ToolContext(conversation="c", workspace=None, mode="ask"))
    assert got.result.endswith("Bundled.\n")
    with pytest.raises(ToolError, match="needs"):
        await tool.run({}, ToolContext(conversation="c", workspace=None, mode="ask"))
    assert not tool.is_change({"name": "tidy"}) and tool.offered_read_only


async def test_plain_chat_gets_no_skills(skills_app):
    """Skills are ways of working in a folder: a conversation without one is not offered
    use_skill nor told about skills (a small model would call it instead of answering)."""
    d = skills_app
    conv = await d.hub.create()
    d.backend.push({"text": "Hello."})
    await conv.send_message("hi")
    await wait_state(conv, "idle")
    turn = d.backend.turns[-1]
    assert "use_skill" not in {t.name for t in turn.tools}
    assert "review-change" not in turn.messages[0]["content"]
