"""One run of a conversation worked by another agent over ACP (actors/acp.py).

It takes the place of the built-in run loop for a conversation whose `agent` is not
`builtin` and reports what the agent does the way the built-in run does: text and
reasoning stream into an `assistant` item as `delta` events, each tool call is a
`tool` card, a plan is a notice kept up to date. The agent's permission requests are
the conversation mode's to answer (`full` allows, `read_only` refuses, `ask` shows an
approval card and waits, reusing the conversation's approvals), and its file reads and
writes are served inside the workspace only (actors/tools/paths.py), a read-only
conversation taking no write.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import trio

from actors.acp import INVALID_PARAMS, REFUSED, AcpFailed, RequestRefused
from actors.acp_map import CANCELLED, chunk_text, pick_option, plan_text, selected, text_slice, tool_fields
from actors.items import Item, new_id, notice_item
from actors.streaming import AssistantStream
from actors.tools.files import MAX_READ_BYTES, MAX_WRITE_BYTES, write_whole
from actors.tools.paths import PathRefused, relative, resolve

if TYPE_CHECKING:
    from actors.conversation import Conversation

NOTICE_NO_WORKSPACE = (
    "Another agent works in a folder, and this conversation has none any more. "
    "Start a new conversation with a workspace."
)
NOTICE_REFUSAL = "The agent refused to go on with this message."
NOTICE_LIMIT = "The agent stopped at its own limit for one message. Send another message to let it go on."
DENIED_READ_ONLY = "Refused: this conversation is read-only, so the agent may not make changes."
DENIED_BY_PERSON = "The person denied this; it was not done."
DENIED_STOPPED = "Stopped while waiting for approval; it was not done."
DENIED_UNATTENDED = "Refused: this is a scheduled run with nobody at the screen to approve changes."


class AcpRun(AssistantStream):
    """The sink of one prompt; `loop`, `drop_partial_round`, `fail` and `finish` are
    what the conversation's run calls, as for the built-in run."""

    def __init__(self, conv: Conversation, local: bool, unattended: bool = False) -> None:
        self.c = conv
        self.env = conv._env
        self.local = local
        self.unattended = unattended
        self.refused = 0
        self.assistant: str | None = None
        self.text = ""
        self.reasoning = ""
        self.cards: dict[str, str] = {}  # the agent's toolCallId -> the card's item id
        self.approvals: dict[str, trio.Event] = {}  # card id -> the event its answer sets
        self.plan: str | None = None  # the plan notice's item id
        self.error: str | None = None
        self.done = False  # finish() ran: a late answer leaves the state alone

    def workspace(self) -> Path | None:
        ws = self.c.info.workspace
        return self.env.resolve_workspace(ws) if ws else None

    # -- the run --

    async def loop(self) -> None:
        agents = self.env.acp
        agent_id = self.c.info.agent
        ws = self.workspace()
        if agents is None or not agents.knows(agent_id):
            self.fail(f"The agent {agent_id!r} is not offered by this daemon; start a new conversation.")
            return
        if ws is None:
            self.fail(NOTICE_NO_WORKSPACE)
            return
        text = next((i.text or "" for i in reversed(self.c._items) if i.kind == "user"), "")
        try:
            agent = await agents.agent(self.c.id, agent_id)
            opened = await agent.open(ws, self.c.info.acp_session)
            if opened.session != self.c.info.acp_session:
                self.c._set_info(acp_session=opened.session)
            if opened.notice:
                self.c._notice(opened.notice, "info")
            reason = await agent.prompt(opened.session, text, self)
        except AcpFailed as exc:
            self.fail(str(exc))
            return
        self.end_assistant()
        if reason == "refusal":
            self.c._notice(NOTICE_REFUSAL, "warn")
        elif reason in ("max_tokens", "max_turn_requests"):
            self.c._notice(NOTICE_LIMIT, "warn")

    def fail(self, text: str) -> None:
        self.c._notice(text, "error")
        self.error = text

    def drop_partial_round(self) -> None:
        self.end_assistant()

    def finish(self, *, stopped: bool) -> str:
        """Leave the items consistent; the conversation's next state. Synchronous."""
        self.done = True
        self.end_assistant()
        self.cancelled()
        for card_id in self.cards.values():
            pos = self.c._position(card_id)
            if pos is None or self.c._items[pos].state not in ("running", "waiting", "composing"):
                continue
            if self.c._items[pos].state == "waiting":
                self.set_card(card_id, state="denied", result=DENIED_STOPPED)
            elif stopped or self.error:
                self.set_card(card_id, state="error", result=self.c._items[pos].result or "Stopped before it finished.")
            else:
                # The agent ended its turn: its calls are over, whatever it last said of them.
                self.set_card(card_id, state="done")
        if self.refused:
            what = "1 change was" if self.refused == 1 else f"{self.refused} changes were"
            self.c._notice(f"Nobody was at the screen during this scheduled run, so {what} refused.", "warn")
        if stopped:
            self.c._notice(self.c._stop_notice, "info")
        return "error" if self.error and not stopped else "idle"

    # -- items --

    def end_assistant(self) -> None:
        if self.assistant is not None:
            item = self.c._item(self.assistant)
            if item.text or item.reasoning:
                self.c._upsert(attrs.evolve(item, streaming=False, reasoning=item.reasoning or None), urgent=True)
            else:
                self.c._drop_item(self.assistant)
        self.assistant, self.text, self.reasoning = None, "", ""

    def set_card(self, card_id: str, **changes: Any) -> None:
        pos = self.c._position(card_id)
        if pos is not None:
            self.c._upsert(attrs.evolve(self.c._items[pos], **changes), urgent=True)

    def card(self, call: dict[str, Any]) -> str:
        """The card of a tool call (made when new), updated with what the call says."""
        call_id = call.get("toolCallId")
        call_id = call_id if isinstance(call_id, str) and call_id else new_id("call_")
        card_id = self.cards.get(call_id)
        pos = self.c._position(card_id) if card_id else None
        fields = tool_fields(call, self.workspace(), first=pos is None)
        if pos is None:
            # Text after a tool call is a new assistant item, so the order reads right.
            self.end_assistant()
            card = Item(id=new_id("i"), kind="tool", call_id=call_id, **fields)
            self.cards[call_id] = card.id
            self.c._upsert(card, urgent=True)
            return card.id
        current = self.c._items[pos]
        if current.state in ("denied", "waiting") and "state" in fields:
            del fields["state"]  # a refusal stays one; a card waiting for a person waits
        self.c._upsert(attrs.evolve(current, **fields), urgent=fields.get("state") != current.state)
        return current.id

    # -- the Sink protocol (actors/acp.py) --

    def update(self, update: dict[str, Any]) -> None:
        kind = update.get("sessionUpdate")
        if kind == "agent_message_chunk":
            self.stream(chunk_text(update.get("content")), reasoning=False)
        elif kind == "agent_thought_chunk":
            self.stream(chunk_text(update.get("content")), reasoning=True)
        elif kind in ("tool_call", "tool_call_update"):
            self.card(update)
        elif kind == "plan":
            text = plan_text(update.get("entries"))
            if text is None:
                return
            if self.plan is None:
                item = notice_item(text, "info")
                self.plan = item.id
                self.c._upsert(item, urgent=True)
            else:
                self.set_card(self.plan, text=text)
        # user_message_chunk, available_commands_update, current_mode_update, ...: not shown.

    async def permission(self, params: dict[str, Any]) -> dict[str, Any]:
        call = params.get("toolCall")
        card_id = self.card(call if isinstance(call, dict) else {})
        options = params.get("options")
        mode = self.c.info.mode
        if mode == "full":
            return selected(pick_option(options, True))
        if mode == "read_only" or self.unattended:
            if mode != "read_only":
                self.refused += 1
            why = DENIED_READ_ONLY if mode == "read_only" else DENIED_UNATTENDED
            self.set_card(card_id, state="denied", result=why)
            return selected(pick_option(options, False))
        answer = await self.wait_approval(card_id)
        if answer is None:
            self.set_card(card_id, state="denied", result=DENIED_STOPPED)
            return dict(CANCELLED)
        if not answer:
            self.set_card(card_id, state="denied", result=DENIED_BY_PERSON)
            return selected(pick_option(options, False))
        self.set_card(card_id, state="running")
        return selected(pick_option(options, True))

    async def wait_approval(self, card_id: str) -> bool | None:
        """The person's answer to a card, or None when the run stopped first."""
        event = trio.Event()
        answer: list[bool] = []
        self.c._approvals[card_id] = (event, answer)
        self.approvals[card_id] = event
        self.set_card(card_id, state="waiting")
        self.c._set_info(state="waiting")
        try:
            await event.wait()
        finally:
            self.c._approvals.pop(card_id, None)
            self.approvals.pop(card_id, None)
            if not self.approvals and not self.done and self.c.info.state == "waiting":
                self.c._set_info(state="running")
        return answer[0] if answer else None

    def cancelled(self) -> None:
        for event in list(self.approvals.values()):
            event.set()  # no answer: cancelled

    def _path(self, params: dict[str, Any]) -> tuple[Path, Path, str]:
        ws = self.workspace()
        if ws is None:
            raise RequestRefused(REFUSED, "this conversation has no workspace, so no file is served")
        raw = params.get("path")
        if not isinstance(raw, str) or not raw:
            raise RequestRefused(INVALID_PARAMS, "path must be a non-empty string")
        try:
            real = resolve(ws, raw)
        except PathRefused as exc:
            raise RequestRefused(REFUSED, str(exc)) from None
        return ws, real, relative(ws, real)

    async def read_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        _, real, rel = self._path(params)

        def read() -> str:
            try:
                st = os.stat(real)
                if stat.S_ISDIR(st.st_mode):
                    raise RequestRefused(REFUSED, f"{rel} is a folder, not a file")
                if st.st_size > MAX_READ_BYTES:
                    raise RequestRefused(REFUSED, f"{rel} is too large to read ({st.st_size} bytes)")
                with open(real, "rb") as fh:
                    return fh.read(MAX_READ_BYTES + 1).decode("utf-8", errors="replace")
            except FileNotFoundError:
                raise RequestRefused(REFUSED, f"{rel} does not exist") from None
            except OSError as exc:
                raise RequestRefused(REFUSED, f"cannot read {rel}: {exc.strerror}") from None

        text = await trio.to_thread.run_sync(read)
        return {"content": text_slice(text, params.get("line"), params.get("limit"))}

    async def write_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.c.info.mode == "read_only":
            raise RequestRefused(REFUSED, "this conversation is read-only, so the daemon takes no write")
        content = params.get("content")
        if not isinstance(content, str):
            raise RequestRefused(INVALID_PARAMS, "content must be a string")
        _, real, rel = self._path(params)
        data = content.encode("utf-8")
        if len(data) > MAX_WRITE_BYTES:
            raise RequestRefused(REFUSED, f"the content is too large to write ({len(data)} bytes)")
        if real.is_dir():
            raise RequestRefused(REFUSED, f"{rel} is a folder, not a file")
        try:
            await trio.to_thread.run_sync(write_whole, real, data)
        except OSError as exc:
            raise RequestRefused(REFUSED, f"cannot write {rel}: {exc.strerror}") from None
        return {}
