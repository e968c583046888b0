"""Calls of one round in parallel (actors/runs/agent/calls.py run_round): reads at once,
changes one at a time in order, results in the order of the calls."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import trio

from actors.runs.agent import history
from actors.tools.registry import ToolContext, ToolOutcome
from tests.waiting import wait_for, wait_state


@attrs.define
class Meet:
    """A read that answers "met" only when `expected` calls of it are running at once;
    run one after another, each gives up alone after `alone_s`."""

    expected: int = 3
    alone_s: float = 2.0
    name: str = "meet"
    description: str = "Waits for the others."
    parameters: dict[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}})
    needs_workspace: bool = False
    arrived: int = 0
    present: int = 0  # running now
    everyone: trio.Event = attrs.field(factory=trio.Event)

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return False

    def title(self, args: dict[str, Any]) -> str:
        return "Meet"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        self.arrived += 1
        self.present += 1
        try:
            if self.present >= self.expected:
                self.everyone.set()
            with trio.move_on_after(self.alone_s):
                await self.everyone.wait()
                return ToolOutcome(f"met {args.get('n')}")
            return ToolOutcome(f"alone {args.get('n')}")
        finally:
            self.present -= 1


@attrs.define
class Change:
    """A change that notes when it runs, to prove no two overlap."""

    name: str = "change"
    description: str = "Changes a file."
    parameters: dict[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}})
    needs_workspace: bool = False
    running: int = 0
    most: int = 0
    order: list[str] = attrs.field(factory=list)

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return True

    def title(self, args: dict[str, Any]) -> str:
        return "Change"

    async def preview(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome | None:
        return None

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        self.running += 1
        self.most = max(self.most, self.running)
        self.order.append(str(args.get("n")))
        await trio.sleep(float(args.get("sleep", 0.05)))
        self.running -= 1
        return ToolOutcome(f"changed {args.get('n')}")


def cards(conv):
    return [i for i in conv.items if i.kind == "tool"]


async def test_reads_of_one_round_run_at_once(daemon):
    meet = Meet()
    daemon.hub.env.registry.add(meet)
    calls = [{"name": "meet", "arguments": {"n": n}} for n in range(3)]
    daemon.backend.push({"tool_calls": calls}, {"text": "ok"})
    conv = await daemon.hub.create(mode="full")
    await conv.send_message("meet")
    await wait_state(conv, "idle")
    # Each could only say "met" while the other two were running.
    assert [c.result for c in cards(conv)] == ["met 0", "met 1", "met 2"]
    sent = [m for m in daemon.backend.turns[-1].messages if m["role"] == "tool"]
    assert [m["content"] for m in sent] == ["met 0", "met 1", "met 2"]


async def test_changes_run_alone_in_order_and_reads_wait_for_a_change_before_them(daemon):
    change = Change()
    meet = Meet(expected=2, alone_s=0.3)
    daemon.hub.env.registry.add(change)
    daemon.hub.env.registry.add(meet)
    calls = [
        {"name": "change", "arguments": {"n": "a", "sleep": 0.1}},
        {"name": "change", "arguments": {"n": "b", "sleep": 0.01}},
        {"name": "meet", "arguments": {"n": 1}},
        {"name": "change", "arguments": {"n": "c"}},
        {"name": "meet", "arguments": {"n": 2}},
    ]
    daemon.backend.push({"tool_calls": calls}, {"text": "ok"})
    conv = await daemon.hub.create(mode="full")
    await conv.send_message("go")
    await wait_state(conv, "idle")
    assert change.most == 1 and change.order == ["a", "b", "c"]
    # The two reads are split by a change, so neither met the other.
    assert [c.result for c in cards(conv)] == ["changed a", "changed b", "alone 1", "changed c", "alone 2"]
    assert history.well_formed(daemon.backend.turns[-1].messages) is None


async def test_a_stop_during_parallel_reads_ends_every_card(daemon):
    meet = Meet(expected=99, alone_s=60)
    daemon.hub.env.registry.add(meet)
    daemon.backend.push({"tool_calls": [{"name": "meet", "arguments": {"n": n}} for n in range(3)]})
    conv = await daemon.hub.create(mode="full")
    await conv.send_message("wait")
    await wait_for(lambda: meet.arrived == 3)
    with trio.fail_after(2):
        await conv.stop()
    assert [c.state for c in cards(conv)] == ["error"] * 3
    assert conv.info.state == "idle"
