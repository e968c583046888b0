"""Every decision on every kind of approval card, over HTTP against the real daemon
(scripted model, tests/acp_agent.py for another agent's permission, tests/mcp_server.py
for an MCP tool): each answers 2xx, or a 4xx `{error, code}` that says why and leaves the
card waiting, never a 5xx. And what "Always allow" keeps: the narrowest rule offered
(a file, the exact command), or the wider one the person picked from the card's list
(actors/policy/rules.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import trio

from tests.daemon_proc import run_daemon
from tests.test_acp import write_agents_file
from tests.test_e2e import write_script
from tests.waiting import wait_http_state

MCP_SERVER = Path(__file__).with_name("mcp_server.py")

# The decisions a person can send, as (decision, feedback, which offered rule to pick).
DECISIONS: list[tuple[str, str | None, str | None]] = [
    ("approve", None, None),
    ("approve", "Looks fine.", None),
    ("approve_always", None, None),
    ("approve_always", None, "widest"),
    ("approve_always", None, "not offered"),
    ("deny", None, None),
    ("deny", "Not that one.", None),
]
NOT_OFFERED = {"kind": "path", "text": "elsewhere/", "exact": False}


def tag(n: int) -> str:
    return f"case{n:03d}"  # equal lengths: no tag is part of another


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


# kind -> (the model's first round for a case's tag, the message's extra fields, the
# helper's round when the card is a helper's)
def rounds_for(kind: str, t: str) -> list[dict[str, Any]]:
    first: dict[str, list[dict[str, Any]]] = {
        "write_root": [call("write_file", path="app.py", content="y = 2\n")],
        "write_deep": [call("write_file", path="src/deep/mod.py", content="z = 3\n")],
        "edit": [call("edit_file", path="app.py", edits=[{"old_text": "x = 1", "new_text": "x = 10"}])],
        "command": [call("exec_shell_command", command="python3 app.py")],
        "mcp": [call("t_echo", text="hi")],
        "helper": [call("task", description="write", prompt=f"helper-{t} write the file", subagent_type="general")],
        "plan": [call("exit_plan_mode", plan="1. Change app.py\n")],
        "question": [call("ask_user_question", question="Which one?", options=["a", "b"])],
    }
    if kind == "acp":
        return []
    out = [{"when": t, "tool_calls": first[kind]}]
    if kind == "helper":
        out.append({"when": f"helper-{t}", "tool_calls": [call("write_file", path="helped.txt", content="h\n")]})
    return out


KINDS = ["write_root", "write_deep", "edit", "command", "mcp", "helper", "plan", "question", "acp"]
CASES = [(kind, decision) for kind in KINDS for decision in DECISIONS]


def waiting_card(body: dict[str, Any]) -> dict[str, Any] | None:
    for item in body["items"]:
        if item["kind"] != "tool":
            continue
        if item.get("state") == "waiting":
            return item
        for row in (item.get("task") or {}).get("items") or ():
            if row.get("kind") == "tool" and row.get("state") == "waiting":
                return row
    return None


async def wait_card(c: httpx.AsyncClient, cid: str, timeout: float = 30) -> dict[str, Any]:
    with trio.fail_after(timeout):
        while True:
            body = (await c.get(f"/api/conversations/{cid}")).json()
            card = waiting_card(body)
            if card is not None:
                return card
            assert body["state"] != "idle" or not body["items"][1:], body["items"]
            await trio.sleep(0.05)


async def card_state(c: httpx.AsyncClient, cid: str, card_id: str) -> str | None:
    body = (await c.get(f"/api/conversations/{cid}")).json()
    for item in body["items"]:
        if item["id"] == card_id:
            return item.get("state")
        for row in (item.get("task") or {}).get("items") or ():
            if row.get("id") == card_id:
                return row.get("state")
    return None


async def walk_case(c: httpx.AsyncClient, tmp_path: Path, n: int, kind: str,
                    decision: tuple[str, str | None, str | None], problems: list[str], walked: list[str]) -> None:
    what, feedback, pick = decision
    folder = tmp_path / tag(n)
    (folder / "src").mkdir(parents=True)
    (folder / "app.py").write_text("x = 1\n")
    ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
    made: dict[str, Any] = {"workspace": ws["id"], "mode": "ask"}
    if kind == "acp":
        made["agent"] = "scripted"
    cid = (await c.post("/api/conversations", json=made)).json()["id"]
    text = "write notes.txt one" if kind == "acp" else f"{tag(n)} go"
    sent = {"text": text, **({"plan": True} if kind == "plan" else {})}
    r = await c.post(f"/api/conversations/{cid}/messages", json=sent)
    assert r.status_code == 202, r.text
    card = await wait_card(c, cid)
    body: dict[str, Any] = {"item": card["id"], "decision": what}
    if feedback is not None:
        body["feedback"] = feedback
    if pick == "widest":
        body["rule"] = (card.get("rules") or [NOT_OFFERED])[-1]
    elif pick == "not offered":
        body["rule"] = NOT_OFFERED
    r = await c.post(f"/api/conversations/{cid}/approval", json=body)
    where = f"{kind} {what} feedback={feedback is not None} rule={pick}: {r.status_code} {r.text}"
    walked.append(where)
    if r.status_code not in expected_codes(kind, what, pick):
        problems.append(where + f" (expected {expected_codes(kind, what, pick)})")
    if r.status_code >= 500 or r.status_code < 200:
        problems.append(where)
    elif r.status_code >= 400:
        answer = r.json()
        if not (answer.get("error") and answer.get("code")):
            problems.append(where + " (no error or code)")
        if await card_state(c, cid, card["id"]) != "waiting":
            problems.append(where + " (a refused answer left the card no longer waiting)")
    else:
        with trio.fail_after(20):
            while await card_state(c, cid, card["id"]) == "waiting":
                await trio.sleep(0.05)
    rules = (await c.get(f"/api/workspaces/{ws['id']}/rules")).json()
    kept = [(x["kind"], x["text"], x["exact"]) for x in rules]
    if what == "approve_always" and r.status_code < 300:
        offers = card["rules"]
        wanted = offers[-1] if pick == "widest" else offers[0]
        if kept != [(wanted["kind"], wanted["text"], wanted["exact"])]:
            problems.append(f"{where}: kept {kept}, offered {offers}")
    elif kept:
        problems.append(f"{where}: kept {kept}")
    await c.post(f"/api/conversations/{cid}/stop")


def expected_codes(kind: str, what: str, pick: str | None) -> set[int]:
    """What each decision answers: 2xx, or the 4xx that says why."""
    if kind == "question" and what != "approve_always":
        return {404}  # a question is answered, not approved: it waits for no approval
    offers_rules = kind not in ("mcp", "plan", "question")
    if what == "approve_always" and (not offers_rules or pick == "not offered"):
        return {400}
    return {200}


async def test_every_decision_on_every_card_answers_2xx_or_a_4xx_that_says_why(tmp_path):
    rounds = [rnd for n, (kind, _) in enumerate(CASES) for rnd in rounds_for(kind, tag(n))]
    script = write_script(tmp_path, {"token_delay": 0, "default": {"text": "Done."}, "rounds": rounds})
    data = tmp_path / "data"
    data.mkdir()
    (data / "mcp.json").write_text(json.dumps({"mcpServers": {"t": {"command": sys.executable,
                                                                    "args": [str(MCP_SERVER)]}}}))
    agents = write_agents_file(tmp_path / "agents.json")
    env = {"ACP_AGENT_STATE": str(tmp_path / "agent-state")}
    problems: list[str] = []
    walked: list[str] = []
    async with run_daemon(data, "--scripted", str(script), "--agents-file", str(agents), env=env) as d, \
            d.client() as c:
        with trio.fail_after(30):  # the MCP server's tools are known once it started
            while "t_echo" not in (await c.get("/api/agent")).text:
                await trio.sleep(0.1)

        async def one_kind(kind: str) -> None:
            for n, (k, decision) in enumerate(CASES):
                if k != kind:
                    continue
                await walk_case(c, tmp_path / "ws", n, kind, decision, problems, walked)

        async with trio.open_nursery() as nursery:
            for kind in KINDS:
                nursery.start_soon(one_kind, kind)
    assert not problems, "\n".join(problems)
    assert len(walked) == len(CASES)


async def test_always_allow_on_a_root_file_keeps_that_file_only_and_the_next_write_asks(tmp_path):
    folder = tmp_path / "ws"
    folder.mkdir()
    script = write_script(tmp_path, {"token_delay": 0, "default": {"text": "Done."}, "rounds": [
        {"when": "first", "tool_calls": [call("write_file", path="app.py", content="a = 1\n")]},
        {"when": "again", "tool_calls": [call("write_file", path="app.py", content="a = 2\n")]},
        {"when": "other", "tool_calls": [call("write_file", path="other.py", content="b = 1\n")]},
        {"when": "run it", "tool_calls": [call("exec_shell_command", command="python3 app.py")]},
        {"when": "run again", "tool_calls": [call("exec_shell_command", command="python3 app.py")]},
        {"when": "run more", "tool_calls": [call("exec_shell_command", command="python3 other.py")]},
    ]})
    async with run_daemon(tmp_path / "data", "--scripted", str(script)) as d, d.client() as c:
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
        cid = (await c.post("/api/conversations", json={"workspace": ws["id"], "mode": "ask"})).json()["id"]

        async def say(text: str) -> dict[str, Any]:
            assert (await c.post(f"/api/conversations/{cid}/messages", json={"text": text})).status_code == 202
            return await wait_http_state(c, cid, "waiting", "idle")

        body = await say("first")
        card = waiting_card(body)
        assert card is not None and card["rule"] == "app.py"
        assert card["rules"] == [
            {"kind": "path", "text": "app.py", "exact": True, "covers": "file"},
            {"kind": "path", "text": "./", "exact": False, "covers": "workspace"},
        ]
        r = await c.post(f"/api/conversations/{cid}/approval", json={"item": card["id"], "decision": "approve_always"})
        assert r.status_code == 200, r.text
        await wait_http_state(c, cid, "idle")
        assert (folder / "app.py").read_text() == "a = 1\n"
        rules = (await c.get(f"/api/workspaces/{ws['id']}/rules")).json()
        assert [(x["kind"], x["text"], x["exact"]) for x in rules] == [("path", "app.py", True)]
        # The same file again: the rule lets it run, and says so.
        body = await say("again")
        assert body["state"] == "idle" and (folder / "app.py").read_text() == "a = 2\n"
        assert body["items"][-2]["allowed_by"] == "app.py"
        # Another file at the root: it asks.
        body = await say("other")
        card = waiting_card(body)
        assert body["state"] == "waiting" and card is not None and card["args"]["path"] == "other.py"
        await c.post(f"/api/conversations/{cid}/approval", json={"item": card["id"], "decision": "deny"})
        await wait_http_state(c, cid, "idle")
        assert not (folder / "other.py").exists()

        # A command's card offers the command itself first, then every `python3` command.
        body = await say("run it")
        card = waiting_card(body)
        assert card is not None and card["rule"] == "python3 app.py"
        assert [(o["text"], o["exact"], o["covers"]) for o in card["rules"]] == [
            ("python3 app.py", True, "command"), ("python3", False, "commands")]
        r = await c.post(f"/api/conversations/{cid}/approval", json={"item": card["id"], "decision": "approve_always"})
        assert r.status_code == 200, r.text
        await wait_http_state(c, cid, "idle")
        body = await say("run again")
        assert body["state"] == "idle" and body["items"][-2]["allowed_by"] == "python3 app.py"
        body = await say("run more")  # not every python3 command: it asks
        card = waiting_card(body)
        assert body["state"] == "waiting" and card is not None and card["args"]["command"] == "python3 other.py"
        await c.post(f"/api/conversations/{cid}/approval", json={"item": card["id"], "decision": "deny"})
        await wait_http_state(c, cid, "idle")
        rules = (await c.get(f"/api/workspaces/{ws['id']}/rules")).json()
        assert [(x["kind"], x["text"], x["exact"]) for x in rules] == [
            ("path", "app.py", True), ("command", "python3 app.py", True)]
