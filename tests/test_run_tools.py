"""The run's own tools (actors/runs/agent/run_tools/todos_and_questions.py): the todo list and questions to the person;
why a run ended (`end_reason`); and resuming a run that did not finish."""

from __future__ import annotations

import attrs
import pytest
import trio

from actors import notices
from actors.errors import Busy, Invalid, NotFound, NothingToResume, ToolError
from actors.record.items import Todo
from actors.record.transcript import restored
from actors.runs.agent import history
from actors.runs.agent.run_tools import todos_and_questions as run_tools
from tests.waiting import drained, wait_for, wait_state


def todo(content: str, status: str) -> dict[str, str]:
    return {"content": content, "status": status}


async def workspace_conv(daemon, tmp_path, mode: str = "ask"):
    folder = tmp_path / "ws"
    folder.mkdir(exist_ok=True)
    ws = await daemon.hub.add_workspace(str(folder))
    return await daemon.hub.create(workspace=ws.id, mode=mode)


def cards(conv):
    return [i for i in conv.items if i.kind == "tool"]


# ---- the checks, without a run ----


def test_a_good_list_is_taken_whole():
    todos = run_tools.parse_todos({"todos": [todo("read", "completed"), todo(" write ", "in_progress"),
                                             todo("test", "pending")]})
    assert todos == (Todo("read", "completed"), Todo("write", "in_progress"), Todo("test", "pending"))
    assert "[>] write" in run_tools.todo_summary(todos)


@pytest.mark.parametrize("bad, why", [
    ({"todos": "read"}, "must be an array"),
    ({"todos": [todo("a", "in_progress"), todo("b", "in_progress")]}, "at most one may be"),
    ({"todos": [todo("a", "done")]}, "status must be one of"),
    ({"todos": [todo("", "pending")]}, "non-empty"),
    ({"todos": [todo("x" * 500, "pending")]}, "under 500"),
    ({"todos": [todo(f"s{n}", "pending") for n in range(51)]}, "at most 50"),
    ({"todos": ["a"]}, "must be an object"),
])
def test_a_bad_list_is_refused_with_what_is_wrong(bad, why):
    with pytest.raises(ToolError, match=why):
        run_tools.parse_todos(bad)


def test_answers_take_free_text_and_lists_only_when_several_are_allowed():
    one = run_tools.parse_question({"question": "Which?", "options": ["a", "b"]})
    several = run_tools.parse_question({"question": "Which?", "options": ["a", "b"], "multiple": True})
    assert run_tools.check_answer(one, "something else") == "something else"
    assert run_tools.check_answer(several, ["a", "b"]) == ["a", "b"]
    for question, answer in ((one, ["a"]), (one, ""), (one, 3), (several, [1])):
        with pytest.raises(ValueError):
            run_tools.check_answer(question, answer)
    with pytest.raises(ToolError, match="At most 6"):
        run_tools.parse_question({"question": "q", "options": list("abcdefg")})


# ---- in a run ----


async def test_todo_write_replaces_the_list_and_events_carry_it(daemon, tmp_path):
    conv = await workspace_conv(daemon, tmp_path)
    first = [todo("look", "in_progress"), todo("change", "pending")]
    daemon.backend.push({"tool_calls": [{"name": "todo_write", "arguments": {"todos": first}}]},
                        {"tool_calls": [{"name": "todo_write", "arguments": {"todos": [todo("look", "completed")]}}]},
                        {"text": "done"})
    with daemon.bus.subscribe() as sub:
        await conv.send_message("plan it")
        await wait_state(conv, "idle")
        events = drained(sub)
    assert conv.info.todos == (Todo("look", "completed"),)
    assert conv.to_json()["todos"] == [{"content": "look", "status": "completed"}]
    seen = [e.data["todos"] for e in events if e.name == "conversation" and e.data["todos"]]
    assert seen[0] == first and seen[-1] == [{"content": "look", "status": "completed"}]
    assert [c.state for c in cards(conv)] == ["done", "done"]
    assert cards(conv)[0].title == "Update the todo list"
    assert "todo_write" in [t.name for t in daemon.backend.turns[0].tools]
    await conv.flush()
    assert daemon.store.load_conversations()[0].info.todos == (Todo("look", "completed"),)


async def test_a_bad_todo_list_is_an_error_the_model_reads(daemon, tmp_path):
    conv = await workspace_conv(daemon, tmp_path)
    two = [todo("a", "in_progress"), todo("b", "in_progress")]
    daemon.backend.push({"tool_calls": [{"name": "todo_write", "arguments": {"todos": two}}]}, {"text": "ok"})
    await conv.send_message("go")
    await wait_state(conv, "idle")
    assert cards(conv)[0].state == "error" and "at most one may be" in cards(conv)[0].result
    assert conv.info.todos == ()


async def test_plain_chat_is_not_offered_the_run_tools(daemon):
    conv = await daemon.hub.create()
    await conv.send_message("hi")
    await wait_state(conv, "idle")
    assert not {"todo_write", "ask_user_question"} & {t.name for t in daemon.backend.turns[0].tools}


async def test_a_question_waits_for_the_answer_and_the_model_reads_it(daemon, tmp_path):
    conv = await workspace_conv(daemon, tmp_path)
    ask = {"question": "Which colour?", "options": ["red", "blue"]}
    daemon.backend.push({"tool_calls": [{"name": "ask_user_question", "arguments": ask}]}, {"text": "Blue it is."})
    await conv.send_message("paint it")
    await wait_state(conv, "waiting")
    card = cards(conv)[0]
    assert card.state == "waiting" and card.args == ask and card.title == "Ask: Which colour?"
    with pytest.raises(NotFound):
        await conv.approve(card.id, True)  # a question is answered, not approved
    with pytest.raises(Invalid, match="one answer"):
        await conv.answer(card.id, ["red", "blue"])
    await conv.answer(card.id, "blue, but dark")
    await wait_state(conv, "idle")
    assert cards(conv)[0].state == "done" and cards(conv)[0].result == "The person answered: blue, but dark"
    assert daemon.backend.turns[-1].messages[-1]["content"] == "The person answered: blue, but dark"
    assert conv.info.end_reason == "answered"
    with pytest.raises(NotFound):
        await conv.answer(card.id, "again")


async def test_a_stop_while_a_question_waits_ends_it_denied(daemon, tmp_path):
    conv = await workspace_conv(daemon, tmp_path)
    daemon.backend.push({"tool_calls": [{"name": "ask_user_question", "arguments": {"question": "Sure?"}}]})
    await conv.send_message("go")
    await wait_state(conv, "waiting")
    await conv.stop()
    assert cards(conv)[0].state == "denied" and cards(conv)[0].result == notices.QUESTION_STOPPED
    assert conv.info.end_reason == "stopped"
    assert conv.items[-1].end_reason == "stopped" and conv.items[-1].text == notices.STOPPED


async def test_a_scheduled_run_gets_told_nobody_will_answer(daemon, tmp_path):
    conv = await workspace_conv(daemon, tmp_path)
    daemon.backend.push({"tool_calls": [{"name": "ask_user_question", "arguments": {"question": "Sure?"}}]},
                        {"text": "I chose yes."})
    await conv.send_message("go", unattended=True)
    await wait_state(conv, "idle")
    assert cards(conv)[0].state == "done" and cards(conv)[0].result == notices.NOBODY_TO_ANSWER


async def test_a_question_open_at_a_restart_can_still_be_answered(daemon, tmp_path):
    conv = await workspace_conv(daemon, tmp_path)
    daemon.backend.push({"tool_calls": [{"name": "ask_user_question", "arguments": {"question": "Which file?"}}]})
    await conv.send_message("go")
    await wait_state(conv, "waiting")
    record = restored(conv.record())  # what the next start reads
    assert record.info.state == "waiting" and record.info.end_reason == "stopped"
    assert [i.state for i in record.items if i.kind == "tool"] == ["waiting"]
    assert restored(record).items == record.items  # a second restart adds nothing
    await conv.stop()
    # A conversation started from that record: the answer starts a run that goes on from it.
    from actors.conversations.actor import Conversation

    again = Conversation(attrs.evolve(record, info=attrs.evolve(record.info, id=conv.id + "x")), daemon.hub.env)
    daemon.backend.push({"text": "Thanks, main.py."})
    async with trio.open_nursery() as nursery:
        await nursery.start(again.run)
        card = [i for i in again.items if i.kind == "tool"][0]
        with pytest.raises(NothingToResume, match="question is waiting"):
            await again.resume()
        await again.answer(card.id, "main.py")
        await wait_for(lambda: again.info.state == "idle" and not again.running)
        assert [i for i in again.items if i.kind == "tool"][0].state == "done"
        assert again.items[-1].text == "Thanks, main.py."
        assert history.well_formed(daemon.backend.turns[-1].messages) is None
        again.close()


async def test_a_new_message_instead_of_an_answer_ends_the_open_question(daemon, tmp_path):
    conv = await workspace_conv(daemon, tmp_path)
    daemon.backend.push({"tool_calls": [{"name": "ask_user_question", "arguments": {"question": "Which file?"}}]})
    await conv.send_message("go")
    await wait_state(conv, "waiting")
    await conv.stop()
    record = restored(attrs.evolve(conv.record(), info=attrs.evolve(conv.info, state="running", end_reason=None)))
    from actors.conversations.actor import Conversation

    # Rebuild the open question as a restart would have left it.
    items = tuple(attrs.evolve(i, state="waiting", result=None) if i.kind == "tool" else i for i in record.items)
    again = Conversation(attrs.evolve(record, items=items, info=attrs.evolve(record.info, id=conv.id + "y")),
                         daemon.hub.env)
    async with trio.open_nursery() as nursery:
        await nursery.start(again.run)
        await again.send_message("never mind, do this instead")
        await wait_for(lambda: again.info.state == "idle" and not again.running)
        card = [i for i in again.items if i.kind == "tool"][0]
        assert card.state == "denied" and card.result == notices.ANSWERED_INSTEAD
        again.close()


async def test_end_reasons(daemon, tmp_path):
    conv = await workspace_conv(daemon, tmp_path, mode="full")
    await conv.send_message("hi")
    await wait_state(conv, "idle")
    assert conv.info.end_reason == "answered"
    fail = {"name": "echo", "arguments": {"fail": "same"}}
    daemon.backend.push(*[{"tool_calls": [fail]}] * 3)
    await conv.send_message("fail")
    await wait_state(conv, "idle")
    assert conv.info.end_reason == "stuck" and conv.items[-1].end_reason == "stuck"
    daemon.backend.push({"fail": "broken"})
    await conv.send_message("break")
    await wait_state(conv, "error")
    assert conv.info.end_reason == "error" and conv.items[-1].end_reason == "error"


async def test_resume_goes_on_after_a_stop_and_not_after_an_answer(daemon, tmp_path):
    conv = await workspace_conv(daemon, tmp_path)
    with pytest.raises(NothingToResume, match="no run has ended"):
        await conv.resume()
    note = {"name": "note", "arguments": {"path": "a.txt"}}
    daemon.backend.push({"tool_calls": [note, note]})
    await conv.send_message("two notes")
    await wait_state(conv, "waiting")
    with pytest.raises(Busy):
        await conv.resume()
    await conv.stop()
    assert conv.info.end_reason == "stopped"
    daemon.backend.push({"text": "Picking up where I was."})
    await conv.resume()
    await wait_state(conv, "idle")
    assert conv.items[-1].text == "Picking up where I was."
    assert [i.kind for i in conv.items].count("user") == 1  # no new message
    sent = daemon.backend.turns[-1].messages
    assert history.well_formed(sent) is None
    assert [m["content"] for m in sent if m["role"] == "tool"] == [notices.DENIED_WAITING_STOPPED,
                                                                  notices.DENIED_NOT_REACHED]
    assert conv.info.end_reason == "answered"
    with pytest.raises(NothingToResume, match="ended answered"):
        await conv.resume()


async def test_answer_and_resume_over_http(tmp_path):
    from tests.daemon_proc import run_daemon
    from tests.test_e2e import write_script
    from tests.waiting import wait_http_state

    script = {"rounds": [
        {"when": "ask", "tool_calls": [{"name": "ask_user_question",
                                        "arguments": {"question": "Which?", "options": ["a", "b"], "multiple": True}}]},
        {"when": "ask", "text": "Both, then."},
        {"when": "hang", "hang": True, "delay": 0.01},
    ], "default": {"text": "Going on."}}
    folder = tmp_path / "ws"
    folder.mkdir()
    async with run_daemon(tmp_path / "data", "--scripted", str(write_script(tmp_path, script))) as d:
        async with d.client() as c:
            ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
            cid = (await c.post("/api/conversations", json={"workspace": ws["id"]})).json()["id"]
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "ask me"})
            body = await wait_http_state(c, cid, "waiting")
            card = [i for i in body["items"] if i["kind"] == "tool"][0]
            r = await c.post(f"/api/conversations/{cid}/answer", json={"item": card["id"], "answer": 5})
            assert r.status_code == 400 and r.json()["code"] == "bad_request"
            r = await c.post(f"/api/conversations/{cid}/answer", json={"item": "nope", "answer": "a"})
            assert r.status_code == 404 and r.json()["code"] == "not_found"
            r = await c.post(f"/api/conversations/{cid}/answer", json={"item": card["id"], "answer": ["a", "b"]})
            assert r.status_code == 200
            body = await wait_http_state(c, cid, "idle")
            assert body["items"][-1]["text"] == "Both, then." and body["end_reason"] == "answered"
            r = await c.post(f"/api/conversations/{cid}/resume")
            assert r.status_code == 409 and "ended answered" in r.json()["error"]
            await c.post(f"/api/conversations/{cid}/messages", json={"text": "hang"})
            await wait_http_state(c, cid, "running")
            with trio.fail_after(10):  # the hanging round has begun (a stop before it would leave it to the resume)
                while True:
                    tree = (await c.get("/api/debug/actors")).json()
                    if any(ch["kind"] == "engine" and ch["state"] == "generating" for ch in tree["children"]):
                        break
                    await trio.sleep(0.02)
            r = await c.post(f"/api/conversations/{cid}/resume")
            assert r.status_code == 409 and r.json()["code"] == "busy"
            await c.post(f"/api/conversations/{cid}/stop")
            body = await wait_http_state(c, cid, "idle")
            assert body["end_reason"] == "stopped"
            r = await c.post(f"/api/conversations/{cid}/resume")
            assert r.status_code == 202 and r.json()["state"] == "running"
            body = await wait_http_state(c, cid, "idle")
            assert body["items"][-1]["text"] == "Going on." and body["end_reason"] == "answered"


@pytest.mark.parametrize("where", ["streaming text", "composing a call", "running a call"])
async def test_stop_anywhere_then_resume_goes_on_with_a_whole_history(daemon, tmp_path, where):
    from actors.tools.testing import Pause

    if daemon.hub.env.registry.get("pause") is None:
        daemon.hub.env.registry.add(Pause())
    conv = await workspace_conv(daemon, tmp_path, mode="full")
    rounds = {
        "streaming text": {"when": "go", "text": "word " * 200, "delay": 0.01},
        "composing a call": {"when": "go", "delay": 0.01, "tool_calls": [
            {"name": "echo", "arguments": {"text": "x" * 400}}]},
        "running a call": {"when": "go", "tool_calls": [{"name": "pause", "arguments": {"seconds": 60}}]},
    }
    daemon.backend.push(rounds[where])
    await conv.send_message("go")
    reached = {
        "streaming text": lambda: any(i.kind == "assistant" and len(i.text or "") > 20 for i in conv.items),
        "composing a call": lambda: any(i.kind == "tool" and (i.bytes or 0) > 20 for i in conv.items),
        "running a call": lambda: any(i.kind == "tool" and i.state == "running" for i in conv.items),
    }[where]
    await wait_for(reached)
    await conv.stop()
    assert conv.info.end_reason == "stopped"
    assert all(i.state in ("done", "denied", "error") for i in conv.items if i.kind == "tool")
    daemon.backend.push({"text": "Going on."})
    await conv.resume()
    await wait_state(conv, "idle")
    assert conv.items[-1].text == "Going on." and conv.info.end_reason == "answered"
    assert history.well_formed(daemon.backend.turns[-1].messages) is None


async def test_an_answer_cut_at_the_token_limit_is_said_and_continue_goes_on(daemon):
    conv = await daemon.hub.create()
    daemon.backend.push({"text": "Step 1: open the file. Step 2: find", "cut": True},
                        {"text": " the line, and change it."})
    await conv.send_message("how do I change a setting?")
    await wait_state(conv, "idle")
    assert conv.info.end_reason == "cut_off"
    notice = conv.items[-1]
    assert notice.kind == "notice" and notice.text == notices.CUT_OFF and notice.end_reason == "cut_off"
    await conv.resume()  # the UI's Continue
    await wait_state(conv, "idle")
    assert conv.info.end_reason == "answered"
    assert [i.kind for i in conv.items].count("user") == 1  # no new message from the person
    sent = daemon.backend.turns[-1].messages
    # The model reads its cut answer, then why it is asked again.
    assert sent[-2]["role"] == "assistant" and sent[-2]["content"].endswith("Step 2: find")
    assert notices.CONTINUE_CUT in sent[-1]["content"]
    assert conv.items[-1].text == " the line, and change it."
    with pytest.raises(NothingToResume, match="ended answered"):
        await conv.resume()
