"""Export and import of a conversation (actors/record/exchange.py, and the routes in
bmoe_daemon/routes/conversations.py over HTTP against the real daemon)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.record import exchange
from actors.record.exchange import BadDocument, document, markdown, read_document
from actors.record.items import ConversationInfo, ConversationRecord, Goal, Item, Todo, ToolCall
from tests.daemon_proc import run_daemon
from tests.waiting import wait_http_state


def record(*items: Item, state: str = "idle", end_reason: str | None = "answered") -> ConversationRecord:
    info = ConversationInfo(id="c_src", title="Fix the `build` <now>", workspace="w_here", mode="read_only",
                            route="prov/model", agent="builtin", state=state, created=100.0, updated=200.0,  # type: ignore[arg-type]
                            todos=(Todo("Run the tests", "in_progress"),), goal=Goal("Green build"),
                            end_reason=end_reason, acp_session="sess-1", instructions=("/home/me/AGENTS.md",))  # type: ignore[arg-type]
    return ConversationRecord(info, items)


ITEMS = (
    Item(id="i1", kind="user", text="Why does it fail?", created=101.0),
    Item(id="i2", kind="assistant", text="Let me look.", created=102.0,
         tool_calls=(ToolCall("call_1", "read_file", '{"path": "a.py"}'),), usage={"prompt_tokens": 5}),
    Item(id="i3", kind="tool", tool="read_file", title="Read a.py", args={"path": "a.py"}, state="done",
         result="```\nprint(1)\n````", call_id="call_1", bytes=20, created=103.0),
    Item(id="i4", kind="tool", tool="edit_file", title="Edit a.py", args={"path": "a.py"}, state="done",
         diff="-a\n+b\n", file="a.py", call_id="call_2", created=104.0),
    Item(id="i5", kind="notice", text="Context compacted.", level="info", created=105.0),
    Item(id="i6", kind="assistant", text="Fixed it.", created=106.0),
)


def test_a_document_reads_back_to_the_same_items_with_new_ids() -> None:
    doc = json.loads(json.dumps(document(record(*ITEMS), exported=300.0)))
    assert doc["format"] == exchange.FORMAT and doc["version"] == exchange.VERSION
    text = json.dumps(doc)
    for local in ("c_src", "w_here", "prov/model", "sess-1", "/home/me/AGENTS.md"):
        assert local not in text  # nothing of this computer's
    got = read_document(doc, workspace=None)
    assert got.info.id != "c_src" and got.info.workspace is None and got.info.route == "local"
    assert got.info.agent == "builtin" and got.info.acp_session is None
    assert (got.info.title, got.info.mode, got.info.todos, got.info.goal) == (
        "Fix the `build` <now>", "read_only", (Todo("Run the tests", "in_progress"),), Goal("Green build"))
    assert got.info.state == "idle" and got.info.end_reason == "answered"
    assert [i.id for i in got.items] != [i.id for i in ITEMS] and len({i.id for i in got.items}) == len(ITEMS)
    strip = [{k: v for k, v in i.to_json().items() if k != "id"} for i in got.items]
    assert strip == [{k: v for k, v in i.to_json().items() if k != "id"} for i in ITEMS]
    # Read twice: two conversations, nothing shared.
    again = read_document(doc, workspace="w2")
    assert again.info.id != got.info.id and not {i.id for i in again.items} & {i.id for i in got.items}
    assert again.info.workspace == "w2"


def test_what_was_under_way_ends_as_after_a_restart() -> None:
    waiting = Item(id="t1", kind="tool", tool="exec_shell_command", title="Run make", state="waiting", args={})
    running = Item(id="t2", kind="tool", tool="read_file", title="Read b", state="running", args={})
    streaming = Item(id="a1", kind="assistant", text="half", streaming=True)
    doc = document(record(ITEMS[0], waiting, running, streaming, state="running", end_reason=None))
    got = read_document(doc, workspace=None)
    states = [(i.kind, i.state, i.streaming) for i in got.items]
    assert states == [("user", None, None), ("tool", "denied", None), ("tool", "error", None),
                      ("assistant", None, False)]
    assert got.info.state == "idle" and got.info.end_reason == "stopped" and got.info.waiting_cards == 0


def valid() -> dict[str, Any]:
    return json.loads(json.dumps(document(record(*ITEMS))))


def _set(path: tuple[Any, ...], value: Any) -> Any:
    def change(doc: dict[str, Any]) -> dict[str, Any]:
        at: Any = doc
        for key in path[:-1]:
            at = at[key]
        at[path[-1]] = value
        return doc
    return change


BAD = [
    ("not an object", lambda d: [d]),
    ("another format", _set(("format",), "other")),
    ("another version", _set(("version",), 2)),
    ("an unknown top field", _set(("extra",), 1)),
    ("an export time as text", _set(("exported",), "today")),
    ("no items", lambda d: {k: v for k, v in d.items() if k != "items"}),
    ("items not a list", _set(("items",), {"a": 1})),
    ("an item not an object", _set(("items", 0), "hello")),
    ("an item without an id", _set(("items", 0, "id"), "")),
    ("an unknown kind", _set(("items", 0, "kind"), "robot")),
    ("an unknown item field", _set(("items", 0, "secret"), "x")),
    ("text not a string", _set(("items", 0, "text"), 5)),
    ("a bool as a number", _set(("items", 2, "bytes"), True)),
    ("negative bytes", _set(("items", 2, "bytes"), -1)),
    ("an unknown state", _set(("items", 2, "state"), "exploded")),
    ("a tool call of the wrong shape", _set(("items", 1, "tool_calls"), [{"id": "x"}])),
    ("an image that is not a data URL", _set(("items", 0, "images"), ["https://example.com/a.png"])),
    ("created as text", _set(("items", 0, "created"), "yesterday")),
    ("two items with one id", _set(("items", 1, "id"), "i1")),
    ("a title not text", _set(("conversation", "title"), ["x"])),
    ("a long title", _set(("conversation", "title"), "x" * (exchange.MAX_TITLE_CHARS + 1))),
    ("an unknown mode", _set(("conversation", "mode"), "god")),
    ("an unknown head field", _set(("conversation", "workspace"), "w_1")),
    ("a todo of the wrong shape", _set(("conversation", "todos"), [{"content": "x"}])),
    ("a goal of the wrong shape", _set(("conversation", "goal"), "be good")),
    ("an unknown end reason", _set(("conversation", "end_reason"), "exploded")),
    ("too many items", lambda d: {**d, "items": d["items"] * (exchange.MAX_ITEMS // len(d["items"]) + 1)}),
]


@pytest.mark.parametrize(("what", "damage"), BAD, ids=[b[0] for b in BAD])
def test_a_malformed_document_is_refused_with_what_is_wrong(what: str, damage: Any) -> None:
    with pytest.raises(BadDocument) as exc:
        read_document(damage(valid()), workspace=None)
    assert str(exc.value)


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                        max_size=3), max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(where=st.sampled_from(["top", "conversation", "item"]), key=st.sampled_from(
    ["format", "version", "items", "conversation", "title", "mode", "todos", "goal", "created", "id", "kind", "text",
     "tool_calls", "images", "args", "rules", "state", "bytes", "task", "x"]), value=json_values,
    n=st.integers(0, len(ITEMS) - 1))
def test_any_damage_is_a_bad_document_or_a_conversation(where: str, key: str, value: Any, n: int) -> None:
    doc = valid()
    target = doc if where == "top" else doc["conversation"] if where == "conversation" else doc["items"][n]
    target[key] = copy.deepcopy(value)
    try:
        got = read_document(doc, workspace=None)
    except BadDocument:
        return
    json.dumps(document(got))  # what was taken is a conversation that exports again


def test_the_markdown_folds_tool_calls_and_keeps_their_text_inert() -> None:
    md = markdown(record(*ITEMS), exported=300.0)
    assert md.startswith("# Fix the `build` &lt;now&gt;\n")  # a title is text, never HTML
    assert "## You\n\nWhy does it fail?" in md and "## Answer\n\nFixed it." in md
    assert "<summary>Read a.py (done)</summary>" in md and md.count("<details>") == md.count("</details>") == 2
    # The result holds a run of four backticks: its fence is longer, so it cannot close early.
    assert "`````\n```\nprint(1)\n````\n`````" in md
    assert "```diff\n-a\n+b\n```" in md and "> Context compacted." in md
    card = Item(id="t", kind="tool", tool="x", title="<script>alert(1)</script>", state="done")
    assert "<summary>&lt;script&gt;alert(1)&lt;/script&gt; (done)</summary>" in markdown(record(card))


# ---- over HTTP ----

SCRIPT = {
    "token_delay": 0.0,
    "rounds": [
        {"when": "echo", "tool_calls": [{"name": "echo", "arguments": {"text": "tuba"}}]},
        {"when": "echo", "text": "It said tuba."},
    ],
}


def comparable(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in i.items() if k != "id"} for i in items]


async def test_export_and_import_over_http(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    folder = tmp_path / "work"
    folder.mkdir()
    data = tmp_path / "data"
    async with run_daemon(data, "--scripted", str(script)) as d, d.client() as c:
        await c.post("/api/providers", json={"name": "Paid AI", "base_url": "https://api.example.invalid/v1",
                                             "models": ["m1"], "api_key": "sk-never-exported-123"})
        providers = (await c.get("/api/providers")).json()
        route = f"{providers[0]['id']}/m1"
        ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()["id"]
        cid = (await c.post("/api/conversations", json={"title": "Brass band", "workspace": ws})).json()["id"]
        assert (await c.post(f"/api/conversations/{cid}/messages", json={"text": "echo please"})).status_code == 202
        source = await wait_http_state(c, cid, "idle")
        assert [i["kind"] for i in source["items"]] == ["user", "assistant", "tool", "assistant"]
        # The route changed to the provider's: its key is in the providers file, never in the export.
        assert (await c.patch(f"/api/conversations/{cid}", json={"route": route})).status_code == 200

        r = await c.get(f"/api/conversations/{cid}/export")
        assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
        assert r.headers["content-disposition"] == 'attachment; filename="Brass-band.bmoe.json"'
        assert "sk-never-exported-123" not in r.text and ws not in r.text and cid not in r.text
        exported = r.json()
        md = await c.get(f"/api/conversations/{cid}/export", params={"format": "markdown"})
        assert md.status_code == 200 and md.headers["content-type"].startswith("text/markdown")
        assert "<summary>Echo tuba (done)</summary>" in md.text and "sk-never" not in md.text
        assert (await c.get(f"/api/conversations/{cid}/export", params={"format": "pdf"})).status_code == 400
        assert (await c.get("/api/conversations/nope/export")).status_code == 404

        # Imported twice: two new conversations, neither the source; tool cards exactly.
        made = []
        for _ in range(2):
            r = await c.post("/api/conversations/import", content=json.dumps(exported))
            assert r.status_code == 201, r.text
            made.append(r.json())
        assert len({m["id"] for m in made} | {cid}) == 3
        for m in made:
            assert m["workspace"] is None and m["route"] == "local" and m["title"] == "Brass band"
            assert comparable(m["items"]) == comparable(source["items"])
        assert (await c.get(f"/api/conversations/{cid}")).json()["items"] == source["items"]
        # Bound to a workspace only when the person names one that exists.
        r = await c.post("/api/conversations/import", params={"workspace": ws}, content=json.dumps(exported))
        assert r.status_code == 201 and r.json()["workspace"] == ws
        # The import goes on like any conversation.
        new = r.json()["id"]
        assert (await c.post(f"/api/conversations/{new}/messages", json={"text": "echo again"})).status_code == 202
        await wait_http_state(c, new, "idle")

        # Malformed, oversized, or naming a workspace there is not: 400, and nothing written.
        files = sorted(p.name for p in (data / "agent" / "conversations").iterdir() if not p.name.startswith("."))
        listed = len((await c.get("/api/conversations")).json())
        bad_bodies = [b"", b"not json", b"[]", b'{"format": "bmoe-conversation"}',
                      json.dumps({**exported, "version": 99}).encode(),
                      json.dumps({**exported, "items": [{"id": "x", "kind": "user", "text": 5}]}).encode(),
                      b'{"format": "bmoe-conversation", "pad": "' + b"x" * (33 * 1024 * 1024) + b'"}']
        for body in bad_bodies:
            r = await c.post("/api/conversations/import", content=body)
            assert r.status_code == 400 and r.json()["code"] == "bad_request" and r.json()["error"], body[:60]
        for params in ({"workspace": "w_nope"}, {"workspace": ""}):
            r = await c.post("/api/conversations/import", params=params, content=json.dumps(exported))
            assert r.status_code == 400 and r.json()["code"] == "bad_request", (params, r.text)
        saved = (data / "agent" / "conversations").iterdir()
        assert sorted(p.name for p in saved if not p.name.startswith(".")) == files
        assert len((await c.get("/api/conversations")).json()) == listed
