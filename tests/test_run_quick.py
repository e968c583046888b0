from __future__ import annotations

import trio


async def wait_state(conv, state, timeout=5):
    with trio.fail_after(timeout):
        while conv.info.state != state:
            await trio.sleep(0.01)


async def test_simple_reply(daemon):
    daemon.backend.push({"text": "Hello there"})
    conv = await daemon.hub.create()
    await conv.send_message("hi")
    await wait_state(conv, "idle")
    kinds = [i.kind for i in conv.items]
    assert kinds == ["user", "assistant"]
    assert conv.items[1].text == "Hello there"


async def test_tool_round(daemon):
    daemon.backend.push({"tool_calls": [{"name": "echo", "arguments": {"text": "x"}}]}, {"text": "ok"})
    conv = await daemon.hub.create()
    await conv.send_message("hi")
    await wait_state(conv, "idle")
    kinds = [(i.kind, i.state) for i in conv.items]
    assert kinds == [("user", None), ("assistant", None), ("tool", "done"), ("assistant", None)]
