"""Always-allow rules (actors/policy/rules.py): what a card offers, what a rule matches, where
it applies, and that it is kept."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors import notices
from actors.policy.rules import (
    BadRule,
    Offer,
    RuleBook,
    check_rule,
    chosen_offer,
    command_matches,
    command_offers,
    command_rule,
    path_matches,
    path_offers,
    path_rule,
)
from actors.runs.agent.run import AgentRun
from actors.runs.base import RunRequest
from tests.waiting import wait_for, wait_state


@pytest.mark.parametrize("command, rule", [
    ("npm test", "npm test"),
    ("pytest -x tests/", "pytest"),
    ("cargo build --release", "cargo build"),
    ("git status", "git status"),
    ("git log --oneline", "git log"),
    ("npm 'test'", "npm"),
    ("touch made.txt", "touch"),
    ("make all install", "make all install"),
    ("ls | wc -l", None),
    ("npm test; rm -rf x", None),
    ("npm test && echo ok", None),
    ("npm test > out.txt", None),
    ("npm test $(whoami)", None),
    ("FOO=1 npm test", None),
    ("./run.sh", None),
    ("/usr/bin/make", None),
    ("", None),
])
def test_the_rule_a_card_offers(command, rule):
    assert command_rule(command) == rule


def test_a_command_rule_matches_at_word_boundaries_and_only_one_simple_command():
    assert command_matches("git log", "git log --oneline")
    assert command_matches("git log", "git log")
    assert not command_matches("git log", "git logger")
    assert not command_matches("git log", "git")
    assert not command_matches("git log", "git 'log'")
    for tail in ("; rm -rf x", " && rm -rf x", " | sh", " $(rm -rf x)", " `rm x`", " > /etc/passwd", " &"):
        assert not command_matches("git log", "git log" + tail)


words = st.text(alphabet="abcdefgh-_", min_size=1, max_size=6).filter(lambda w: not w.startswith("-"))
operators = st.sampled_from([";", "&&", "||", "|", "&", ">", "<", "$(x)", "`x`", "\n", "(", ")", "{ x; }"])


@given(st.lists(words, min_size=1, max_size=3), st.lists(words, max_size=3), operators, st.lists(words, max_size=2))
def test_a_rule_never_matches_a_longer_line_with_an_operator(rule_words, more, op, after):
    rule = " ".join(rule_words)
    line = " ".join(rule_words + more) + f" {op} " + " ".join(after)
    assert not command_matches(rule, line)


@given(st.lists(words, min_size=1, max_size=3), st.text(alphabet="abcdefgh_", min_size=1, max_size=3))
def test_a_rule_never_matches_another_program_sharing_its_prefix(rule_words, extra):
    rule = " ".join(rule_words)
    longer = rule_words[:-1] + [rule_words[-1] + extra]
    assert not command_matches(rule, " ".join(longer) + " --flag")


def test_what_a_card_offers_narrowest_first():
    assert [(o.text, o.exact, o.covers) for o in command_offers("python app.py")] == [
        ("python app.py", True, "command"), ("python", False, "commands")]
    assert [(o.text, o.exact) for o in command_offers("cargo build --release")] == [
        ("cargo build --release", True), ("cargo build", False), ("cargo", False)]
    assert [(o.text, o.exact) for o in command_offers("npm test")] == [("npm test", True), ("npm test", False),
                                                                       ("npm", False)]
    assert [(o.text, o.exact) for o in command_offers("./run.sh --fast")] == [("./run.sh --fast", True)]
    for line in ("ls | wc -l", "npm test; rm -rf x", "FOO=1 npm test", "", "x" * 300):
        assert command_offers(line) == []
    assert [(o.text, o.exact, o.covers) for o in path_offers("app.py")] == [
        ("app.py", True, "file"), ("./", False, "workspace")]
    assert [(o.text, o.exact, o.covers) for o in path_offers("src/app/x.py")] == [
        ("src/app/x.py", True, "file"), ("src/app/", False, "folder"), ("./", False, "workspace")]


def test_an_exact_rule_covers_that_command_or_that_file_only():
    assert command_matches("python app.py", "python app.py", exact=True)
    assert command_matches("python app.py", "python  'app.py'", exact=True)  # the same words
    for other in ("python other.py", "python app.py --x", "python", "python app.py; rm x", "python app.p*"):
        assert not command_matches("python app.py", other, exact=True)
    assert path_matches("app.py", "app.py", exact=True)
    for other in ("app.py.bak", "app.pyc", "src/app.py", "other.py"):
        assert not path_matches("app.py", other, exact=True)
    assert check_rule("path", "src/app.py", exact=True) == ("path", "src/app.py")
    assert check_rule("command", "python  app.py", exact=True) == ("command", "python  app.py")
    for bad in ("src/", "./", "../x", "/etc/passwd", "a/./b"):
        with pytest.raises(BadRule):
            check_rule("path", bad, exact=True)
    with pytest.raises(BadRule):
        check_rule("command", "python app.py && rm x", exact=True)


def test_the_rule_kept_is_one_the_card_offers():
    offers = [o.to_json() for o in path_offers("src/x.py")]
    assert chosen_offer(offers, "src/x.py", "write_file", None) == Offer("path", "src/x.py", True, "file")
    picked = {"kind": "path", "text": "src/", "exact": False}
    assert chosen_offer(offers, "src/x.py", "write_file", picked).covers == "folder"
    for bad in ({"kind": "path", "text": "src/", "exact": True}, {"kind": "path", "text": "./x/", "exact": False},
                {"kind": "command", "text": "src/x.py", "exact": True}):
        with pytest.raises(BadRule, match="not one this card offers"):
            chosen_offer(offers, "src/x.py", "write_file", bad)
    with pytest.raises(BadRule, match="offers no rule"):
        chosen_offer(None, None, "t_echo", None)
    # A card kept from before cards offered several: its one rule, as it was offered then.
    assert chosen_offer(None, "./", "write_file", None) == Offer("path", "./", False, "workspace")
    assert chosen_offer(None, "npm test", "exec_shell_command", None) == Offer("command", "npm test", False, "commands")


async def test_rules_kept_before_exact_rules_read_as_before(tmp_path):
    path = tmp_path / "permission-rules.json"
    path.write_text(json.dumps({"w1": [
        {"id": "r1", "kind": "command", "text": "npm test", "created": 1.0},
        {"id": "r2", "kind": "path", "text": "./", "created": 2.0},
        {"id": "r3", "kind": "path", "text": "src/", "created": 3.0},
    ]}))
    os.chmod(path, 0o600)
    book = RuleBook(path)
    assert [(r.text, r.exact) for r in book.listing("w1")] == [("npm test", False), ("./", False), ("src/", False)]
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    allowed = book.allowing("w1", ws, "exec_shell_command", {"command": "npm test --watch"})
    assert allowed is not None and allowed.text == "npm test"
    allowed = book.allowing("w1", ws, "write_file", {"path": "top.py"})
    assert allowed is not None and allowed.text == "./"
    # `./` from a card (the old offer for a file at the root) is kept, not refused.
    assert check_rule("path", "./") == ("path", "./") == check_rule("path", ".")
    kept = await book.add("w1", "path", "src/a.py", exact=True)
    assert kept.exact and await book.add("w1", "path", "src/a.py", exact=True) == kept
    assert json.loads(path.read_text())["w1"][-1]["exact"] is True
    assert [(r.text, r.exact) for r in RuleBook(path).listing("w1")][-1] == ("src/a.py", True)


def test_path_rules():
    assert path_rule("src/app/x.py") == "src/app/"
    assert path_rule("x.py") == "./"
    assert path_matches("src/", "src/a.py") and path_matches("src/", "src/deep/b.py")
    assert not path_matches("src/", "srcx/a.py") and not path_matches("src/", "x.py")
    assert check_rule("path", "src") == ("path", "src/")
    for bad in ("../x", "/etc", "a/../../b", "a\\b"):
        with pytest.raises(BadRule):
            check_rule("path", bad)
    with pytest.raises(BadRule):
        check_rule("command", "git log; rm")
    with pytest.raises(BadRule):
        check_rule("other", "x")


async def project(d, tmp_path, mode="ask"):
    folder = tmp_path / "proj"
    folder.mkdir(exist_ok=True)
    (folder / "src").mkdir(exist_ok=True)
    ws = await d.hub.add_workspace(str(folder))
    return folder, ws, await d.hub.create(workspace=ws.id, mode=mode)


def cards(conv):
    return [i for i in conv.items if i.kind == "tool"]


def command(text):
    return {"name": "exec_shell_command", "arguments": {"command": text}}


async def test_approve_always_keeps_the_rule_and_later_calls_run_without_a_card(real_tools, tmp_path):
    d = real_tools
    folder, ws, conv = await project(d, tmp_path)
    d.backend.push({"tool_calls": [command("touch made.txt")]}, {"text": "ok"})
    await conv.send_message("make a file")
    await wait_state(conv, "waiting")
    card = cards(conv)[0]
    assert card.rule == "touch made.txt"  # the narrowest: this command; every `touch` is picked
    await conv.approve(card.id, True, always=True, rule={"kind": "command", "text": "touch", "exact": False})
    await wait_state(conv, "idle")
    assert (folder / "made.txt").exists()
    assert [r.text for r in d.hub.env.rules.listing(ws.id)] == ["touch"]
    d.backend.push({"tool_calls": [command("touch second.txt"), command("touch ../outside.txt")]}, {"text": "ok"})
    await conv.send_message("two more")
    await wait_for(lambda: len(cards(conv)) == 3 and cards(conv)[2].state == "waiting")
    second, outside = cards(conv)[1:]
    assert second.state == "done" and second.allowed_by == "touch" and (folder / "second.txt").exists()
    assert outside.allowed_by is None  # a rule never reaches outside the workspace
    await conv.approve(outside.id, False)
    await wait_state(conv, "idle")
    assert not (tmp_path / "outside.txt").exists()
    # The rule is on disk, readable by this user only, and read back after a restart.
    path = d.data / "agent" / "permission-rules.json"
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert [r.text for r in RuleBook(path).listing(ws.id)] == ["touch"]


async def test_a_folder_rule_lets_changes_inside_it_only(real_tools, tmp_path):
    d = real_tools
    folder, ws, conv = await project(d, tmp_path)
    await d.hub.env.rules.add(ws.id, "path", "src/")
    write = {"name": "write_file", "arguments": {"path": "src/a.py", "content": "x = 1\n"}}
    other = {"name": "write_file", "arguments": {"path": "b.py", "content": "y = 1\n"}}
    d.backend.push({"tool_calls": [write, other]}, {"text": "ok"})
    await conv.send_message("write two files")
    await wait_for(lambda: len(cards(conv)) == 2 and cards(conv)[1].state == "waiting")
    assert cards(conv)[0].state == "done" and cards(conv)[0].allowed_by == "src/"
    assert cards(conv)[1].rule == "b.py" and [r["text"] for r in cards(conv)[1].rules] == ["b.py", "./"]
    await conv.approve(cards(conv)[1].id, False)
    await wait_state(conv, "idle")


async def test_a_rule_never_applies_in_read_only_plan_mode_or_for_a_network_client(real_tools, tmp_path):
    d = real_tools
    folder, ws, conv = await project(d, tmp_path)
    await d.hub.env.rules.add(ws.id, "command", "touch")
    registry = d.hub.env.registry
    shell = registry.get("exec_shell_command")
    network = AgentRun(conv._t, d.hub.env, RunRequest(local=False))
    assert await network.calls.rule_for(shell, {"command": "touch a"}, folder) is None
    local = AgentRun(conv._t, d.hub.env, RunRequest(local=True))
    assert await local.calls.rule_for(shell, {"command": "touch a"}, folder) == "touch"
    await conv.patch({"mode": "read_only"})
    done = await local.calls.run_tool(shell, "no-card", {"command": "touch a"})
    assert (done.state, done.result) == ("denied", notices.DENIED_READ_ONLY)
    await conv.patch({"mode": "ask", "plan_mode": True})
    done = await local.calls.run_tool(shell, "no-card", {"command": "touch a"})
    assert done.state == "denied"
    assert not (folder / "a").exists()


async def test_rules_over_http(tmp_path):
    from tests.daemon_proc import run_daemon
    from tests.test_e2e import write_script

    folder = tmp_path / "ws"
    folder.mkdir()
    async with run_daemon(tmp_path / "data", "--scripted", str(write_script(tmp_path, {"rounds": []}))) as d:
        async with d.client() as c:
            ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
            url = f"/api/workspaces/{ws['id']}/rules"
            assert (await c.get(url)).json() == []
            r = await c.post(url, json={"kind": "command", "text": "npm test"})
            assert r.status_code == 201 and r.json()["text"] == "npm test"
            r = await c.post(url, json={"kind": "command", "text": "npm test; rm -rf /"})
            assert r.status_code == 400 and "not a command rule" in r.json()["error"]
            r = await c.post(url, json={"kind": "path", "text": "../up"})
            assert r.status_code == 400 and r.json()["code"] == "bad_request"
            rules = (await c.get(url)).json()
            assert [x["text"] for x in rules] == ["npm test"]
            assert (await c.delete(f"{url}/{rules[0]['id']}")).status_code == 200
            assert (await c.delete(f"{url}/{rules[0]['id']}")).status_code == 404
            assert (await c.get("/api/workspaces/nope/rules")).status_code == 404
    saved = json.loads((tmp_path / "data" / "agent" / "permission-rules.json").read_text())
    assert saved == {ws["id"]: []}


@pytest.mark.parametrize("line", [
    "touch ../out", "touch /etc/x", "touch ~/x", "touch --reference=/etc/passwd a", "sort -o/tmp/x a",
    "touch a/../../out", "touch link/x",
])
def test_a_command_rule_never_reaches_outside_the_workspace(tmp_path, line):
    from actors.policy.rules import command_stays_inside

    (tmp_path / "outside").mkdir()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "link").symlink_to(tmp_path / "outside")
    assert not command_stays_inside(line, ws)
    assert command_stays_inside("touch inside.txt sub/new.txt", ws)


async def test_another_agents_permissions_follow_the_same_rules(tmp_path):
    from tests.test_acp import acp_daemon, items_of

    async with acp_daemon(tmp_path) as s:
        (s.ws / "sub").mkdir()
        cid = await s.create("ask")
        await s.send(cid, "write sub/a.txt one")
        conv = await s.wait_state(cid, ("waiting",))
        card = items_of(conv, "tool")[-1]
        assert card["rule"] == "sub/a.txt"
        assert [(o["text"], o["covers"]) for o in card["rules"]] == [
            ("sub/a.txt", "file"), ("sub/", "folder"), ("./", "workspace")]
        r = await s.c.post(f"/api/conversations/{cid}/approval",
                           json={"item": card["id"], "decision": "approve_always", "rule": card["rules"][1]})
        assert r.status_code == 200
        await s.wait_state(cid)
        assert (s.ws / "sub" / "a.txt").read_text() == "one"
        conv = await s.run(cid, "write sub/b.txt two")  # no card: the rule says yes
        assert (s.ws / "sub" / "b.txt").read_text() == "two"
        assert items_of(conv, "tool")[-1]["allowed_by"] == "sub/"
        await s.send(cid, "write c.txt three")  # outside the rule's folder: it asks
        conv = await s.wait_state(cid, ("waiting",))
        await s.c.post(f"/api/conversations/{cid}/approval",
                       json={"item": items_of(conv, "tool")[-1]["id"], "decision": "deny"})
        await s.wait_state(cid)
        assert not (s.ws / "c.txt").exists()
        rules = (await s.c.get(f"/api/workspaces/{s.ws_id}/rules")).json()
        assert [(x["kind"], x["text"]) for x in rules] == [("path", "sub/")]
