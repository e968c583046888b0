"""The real tools inside a run: modes, approval cards with diffs, stops."""

from __future__ import annotations

from pathlib import Path

from tests.test_conversation import tool_items
from tests.waiting import drained, wait_for, wait_state


async def make_ws(daemon, tmp_path: Path):
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "app.py").write_text("x = 1\ny = 2\n")
    return folder, await daemon.hub.add_workspace(str(folder))


def edit(old, new):
    return {"name": "edit_file", "arguments": {"path": "app.py", "edits": [{"old_text": old, "new_text": new}]}}


async def test_edit_card_carries_the_diff_before_anything_runs(real_tools, tmp_path):
    folder, ws = await make_ws(real_tools, tmp_path)
    real_tools.backend.push({"tool_calls": [edit("x = 1", "x = 10")]}, {"text": "ok"})
    conv = await real_tools.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("change x")
    await wait_state(conv, "waiting")
    card = tool_items(conv)[0]
    assert card.state == "waiting" and card.title == "Edit app.py" and card.file == "app.py"
    assert "-x = 1\n+x = 10\n" in card.diff
    assert (folder / "app.py").read_text() == "x = 1\ny = 2\n"
    await conv.approve(card.id, True)
    await wait_state(conv, "idle")
    assert (folder / "app.py").read_text() == "x = 10\ny = 2\n"
    assert tool_items(conv)[0].state == "done"


async def test_file_changed_while_card_waits_is_not_overwritten_blind(real_tools, tmp_path):
    folder, ws = await make_ws(real_tools, tmp_path)
    real_tools.backend.push({"tool_calls": [edit("x = 1", "x = 10")]}, {"text": "ok"})
    conv = await real_tools.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("change x")
    await wait_state(conv, "waiting")
    (folder / "app.py").write_text("x = 1\ny = 2\nz = 3\n")  # someone edits meanwhile
    await conv.approve(tool_items(conv)[0].id, True)
    await wait_state(conv, "idle")
    # Computed again from the file as it is now: the other change survives.
    assert (folder / "app.py").read_text() == "x = 10\ny = 2\nz = 3\n"
    assert "+z = 3" not in tool_items(conv)[0].diff and "z = 3" in tool_items(conv)[0].diff


async def test_edit_that_no_longer_applies_fails_after_a_yes(real_tools, tmp_path):
    folder, ws = await make_ws(real_tools, tmp_path)
    real_tools.backend.push({"tool_calls": [edit("x = 1", "x = 10")]}, {"text": "ok"})
    conv = await real_tools.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("change x")
    await wait_state(conv, "waiting")
    (folder / "app.py").write_text("x = 5\n")
    await conv.approve(tool_items(conv)[0].id, True)
    await wait_state(conv, "idle")
    card = tool_items(conv)[0]
    assert card.state == "error" and "was not found" in card.result
    assert (folder / "app.py").read_text() == "x = 5\n"


async def test_an_edit_that_cannot_apply_gets_no_card(real_tools, tmp_path):
    folder, ws = await make_ws(real_tools, tmp_path)
    real_tools.backend.push({"tool_calls": [edit("absent", "x")]}, {"text": "ok"})
    conv = await real_tools.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("change")
    await wait_state(conv, "idle")
    assert tool_items(conv)[0].state == "error"


async def test_read_only_declares_no_change_tools_and_refuses(real_tools, tmp_path):
    folder, ws = await make_ws(real_tools, tmp_path)
    real_tools.backend.push(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "n.txt", "content": "x"}}]}, {"text": "ok"}
    )
    conv = await real_tools.hub.create(workspace=ws.id, mode="read_only")
    await conv.send_message("write")
    await wait_state(conv, "idle")
    offered = {t.name for t in real_tools.backend.turns[0].tools}
    assert "write_file" not in offered and "edit_file" not in offered
    assert {"read_file", "get_info"} <= offered
    assert tool_items(conv)[0].state == "error"
    assert not (folder / "n.txt").exists()


async def test_no_workspace_no_file_tools(real_tools):
    real_tools.backend.push({"text": "which folder?"})
    conv = await real_tools.hub.create()
    await conv.send_message("read my files")
    await wait_state(conv, "idle")
    assert real_tools.backend.turns[0].tools == ()
    assert "open a workspace" in real_tools.backend.turns[0].messages[0]["content"]


async def test_full_mode_writes_and_reads_back(real_tools, tmp_path):
    folder, ws = await make_ws(real_tools, tmp_path)
    real_tools.backend.push(
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "web/page.html", "content": "<p>hi</p>\n"}}]},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "web/page.html", "append_loc": True}}]},
        {"text": "done"},
    )
    conv = await real_tools.hub.create(workspace=ws.id, mode="full")
    await conv.send_message("make a page")
    await wait_state(conv, "idle")
    cards = tool_items(conv)
    assert [c.state for c in cards] == ["done", "done"]
    assert cards[0].title == "Write web/page.html" and cards[0].file == "web/page.html"
    assert cards[0].result == "Created web/page.html: 1 lines, 10 bytes."
    assert cards[1].result == "1\u2192<p>hi</p>\n"


async def test_outside_path_is_an_error_result_without_outside_content(real_tools, tmp_path):
    folder, ws = await make_ws(real_tools, tmp_path)
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    real_tools.backend.push(
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "../secret.txt"}}]}, {"text": "ok"}
    )
    conv = await real_tools.hub.create(workspace=ws.id, mode="full")
    with real_tools.bus.subscribe() as sub:
        await conv.send_message("read it")
        await wait_state(conv, "idle")
        events = drained(sub)
    card = tool_items(conv)[0]
    assert card.state == "error" and "outside the workspace" in card.result
    assert all("TOP SECRET" not in e.data_json() for e in events)
    await conv.flush()
    assert "TOP SECRET" not in (real_tools.data / "agent" / "conversations" / f"{conv.id}.json").read_text()
    assert "TOP SECRET" not in str(real_tools.backend.turns[1].messages)


async def test_write_file_whose_file_changed_while_its_card_waited_is_shown_again(real_tools, tmp_path):
    from actors.notices import FILE_CHANGED

    folder, ws = await make_ws(real_tools, tmp_path)
    write = {"name": "write_file", "arguments": {"path": "app.py", "content": "x = 100\n"}}
    real_tools.backend.push({"tool_calls": [write]}, {"text": "ok"})
    conv = await real_tools.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("rewrite app.py")
    await wait_state(conv, "waiting")
    card = tool_items(conv)[0]
    assert "-y = 2\n" in card.diff and "keep me" not in card.diff
    (folder / "app.py").write_text("x = 1\ny = 2\nkeep me = 3\n")  # someone edits meanwhile
    await conv.approve(card.id, True)
    # Not written blind: the card is back, with what the write would now throw away.
    await wait_for(lambda: conv.info.state == "waiting" and tool_items(conv)[0].result == FILE_CHANGED)
    card = tool_items(conv)[0]
    assert card.state == "waiting" and card.result == FILE_CHANGED
    assert "-keep me = 3\n" in card.diff
    assert (folder / "app.py").read_text() == "x = 1\ny = 2\nkeep me = 3\n"
    await conv.approve(card.id, True)
    await wait_state(conv, "idle")
    assert (folder / "app.py").read_text() == "x = 100\n"
    assert tool_items(conv)[0].state == "done"


async def test_write_file_refused_after_the_redraw_leaves_the_file_alone(real_tools, tmp_path):
    folder, ws = await make_ws(real_tools, tmp_path)
    write = {"name": "write_file", "arguments": {"path": "app.py", "content": "x = 100\n"}}
    real_tools.backend.push({"tool_calls": [write]}, {"text": "ok"})
    conv = await real_tools.hub.create(workspace=ws.id, mode="ask")
    await conv.send_message("rewrite app.py")
    await wait_state(conv, "waiting")
    (folder / "app.py").write_text("changed\n")
    await conv.approve(tool_items(conv)[0].id, True)
    await wait_for(lambda: conv.info.state == "waiting" and tool_items(conv)[0].result)  # shown again
    await conv.approve(tool_items(conv)[0].id, False)
    await wait_state(conv, "idle")
    assert (folder / "app.py").read_text() == "changed\n"
    assert tool_items(conv)[0].state == "denied"
