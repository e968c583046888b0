"""One run of a conversation worked by another agent over ACP (actors/peers/acp/agents.py).

It takes the place of the built-in run loop for a conversation whose `agent` is not
`builtin` and reports what the agent does the way the built-in run does: text and
reasoning stream into an `assistant` item as `delta` events, each tool call is a
`tool` card, a plan is a notice kept up to date. The agent's permission requests are
decided by the same policy as the built-in agent's calls (actors/policy/modes.py: `full`
allows, `read_only` refuses, `ask` shows an approval card and waits), and its file reads and
writes are served inside the workspace only (actors/fs/paths.py), a read-only
conversation taking no write.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import trio

from actors import notices
from actors.fs.paths import NotRegularFile, PathRefused, file_kind, open_regular, read_fd, relative, resolve
from actors.ids import new_id
from actors.notices import EndedBy
from actors.peers.acp.agents import INVALID_PARAMS, REFUSED, AcpFailed, RequestRefused
from actors.peers.acp.updates import CANCELLED, chunk_text, pick_option, plan_text, selected, text_slice, tool_fields
from actors.policy.modes import decide
from actors.policy.rules import as_builtin, card_fields, offered_rules
from actors.record.items import EndReason, Item, notice_item
from actors.record.transcript import Transcript
from actors.runs.base import RunEnd, RunRequest
from actors.runs.env import Env
from actors.runs.streaming import AssistantStream
from actors.tools.files import MAX_READ_BYTES, MAX_WRITE_BYTES, write_whole


class AcpRun(AssistantStream):
    """The sink of one prompt (actors/peers/acp/agents.py's `Sink`) and a run (actors/runs/base.py's `Run`)."""

    def __init__(self, transcript: Transcript, env: Env, request: RunRequest) -> None:
        self.t = transcript
        self.env = env
        self.req = request
        self.refused = 0
        self.assistant: str | None = None
        self.text = ""
        self.reasoning = ""
        self.cards: dict[str, str] = {}  # the agent's toolCallId -> the card's item id
        self.plan: str | None = None  # the plan notice's item id
        self.error: str | None = None
        self.end_reason: EndReason = "answered"

    def workspace(self) -> Path | None:
        ws = self.t.info.workspace
        return self.env.resolve_workspace(ws) if ws else None

    # -- the run --

    async def loop(self) -> None:
        agents = self.env.acp
        agent_id = self.t.info.agent
        ws = self.workspace()
        if agents is None or not agents.knows(agent_id):
            self.fail(notices.AGENT_UNKNOWN.format(agent=agent_id))
            return
        if ws is None:
            self.fail(notices.AGENT_NO_WORKSPACE)
            return
        text = next((i.text or "" for i in reversed(self.t.items) if i.kind == "user"), "")
        try:
            agent = await agents.agent(self.t.id, agent_id)
            opened = await agent.open(ws, self.t.info.acp_session)
            if opened.session != self.t.info.acp_session:
                self.t.set_info(acp_session=opened.session)
            if opened.notice:
                self.t.notice(opened.notice, "info")
            reason = await agent.prompt(opened.session, text, self)
        except AcpFailed as exc:
            self.fail(str(exc))
            return
        self.end_assistant()
        if reason == "refusal":
            self.t.notice(notices.AGENT_REFUSAL, "warn", "answered")
        elif reason in ("max_tokens", "max_turn_requests"):
            self.t.notice(notices.AGENT_LIMIT, "warn", "max_rounds")
            self.end_reason = "max_rounds"

    def fail(self, text: str) -> None:
        self.t.notice(text, "error", "error")
        self.error = text

    def abandon_round(self) -> None:
        self.end_assistant()

    def finish(self, stop_notice: str | None) -> RunEnd:
        stopped = stop_notice is not None
        self.end_assistant()
        self.cancelled()
        for card_id in self.cards.values():
            card = self.t.find(card_id)
            if card is None or card.state not in ("running", "waiting", "composing"):
                continue
            if card.state == "waiting":
                self.t.update(card_id, state="denied", result=notices.DENIED_WAITING_STOPPED)
            elif stopped or self.error:
                by: EndedBy = "stop" if stopped and not self.t.daemon_stopping else "daemon"
                self.t.update(card_id, state="error", result=card.result or notices.ERROR_RUNNING_STOPPED, ended_by=by)
            else:
                # The agent ended its turn: its calls are over, whatever it last said of them.
                self.t.update(card_id, state="done")
        if self.refused:
            self.t.notice(notices.refused_unattended(self.refused), "warn")
        if stop_notice is not None:
            self.t.notice(stop_notice, "info", "stopped")
            return RunEnd("idle", "stopped")
        return RunEnd("error", "error") if self.error else RunEnd("idle", self.end_reason)

    # -- items --

    def card(self, call: dict[str, Any]) -> str:
        """The card of a tool call (made when new), updated with what the call says."""
        call_id = call.get("toolCallId")
        call_id = call_id if isinstance(call_id, str) and call_id else new_id("call_")
        card_id = self.cards.get(call_id)
        current = self.t.find(card_id) if card_id else None
        fields = tool_fields(call, self.workspace(), first=current is None)
        if current is None:
            # Text after a tool call is a new assistant item, so the order reads right.
            self.end_assistant()
            card = Item(id=new_id("i"), kind="tool", call_id=call_id, **fields)
            self.cards[call_id] = card.id
            self.t.upsert(card, urgent=True)
            return card.id
        if current.state in ("denied", "waiting") and "state" in fields:
            del fields["state"]  # a refusal stays one; a card waiting for a person waits
        self.t.update(current.id, urgent=fields.get("state") != current.state, **fields)
        return current.id

    # -- the Sink protocol (actors/peers/acp/agents.py) --

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
                self.t.upsert(item, urgent=True)
            else:
                self.t.update(self.plan, text=text)
        # user_message_chunk, available_commands_update, current_mode_update, ...: not shown.

    async def permission(self, params: dict[str, Any]) -> dict[str, Any]:
        """A permission the agent asks for is a change, decided by the policy as the
        built-in agent's calls are."""
        call = params.get("toolCall")
        card_id = self.card(call if isinstance(call, dict) else {})
        options = params.get("options")
        mapped = self.as_builtin(card_id)
        rules, ws, ws_id = self.env.rules, self.workspace(), self.t.info.workspace
        rule = None
        if mapped and rules and ws and ws_id and self.req.local and self.t.info.mode == "ask":
            rule = await trio.to_thread.run_sync(rules.allowing, ws_id, ws, *mapped)
        verdict = decide(mode=self.t.info.mode, change=True, unattended=self.req.unattended,
                         rule=rule.text if rule else None)
        if verdict.action == "run":
            if verdict.allowed_by is not None:
                self.t.update(card_id, allowed_by=verdict.allowed_by)
            return selected(pick_option(options, True))
        if verdict.action == "refuse":
            self.refused += int(verdict.unattended)
            self.t.update(card_id, state="denied", result=verdict.why)
            return selected(pick_option(options, False))
        offered = []
        if mapped and rules and ws and self.req.local:
            offered = await trio.to_thread.run_sync(offered_rules, *mapped, ws)
        self.t.update(card_id, state="waiting", **card_fields(offered))
        answer = await self.t.wait_approval(card_id)
        if answer is None:
            self.t.update(card_id, state="denied", result=notices.DENIED_WAITING_STOPPED)
            return dict(CANCELLED)
        if not answer.approve:
            self.t.update(card_id, state="denied", result=notices.denied_by_person(answer.feedback))
            return selected(pick_option(options, False))
        self.t.update(card_id, state="running")
        return selected(pick_option(options, True))

    def as_builtin(self, card_id: str) -> tuple[str, dict[str, Any]] | None:
        card = self.t.find(card_id)
        return as_builtin(card.tool, card.args, card.file) if card is not None else None

    def cancelled(self) -> None:
        """The prompt is being stopped: every permission still open is answered `cancelled`."""
        self.t.cancel_approvals()

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
            # A regular file only, opened without waiting: a FIFO or a device is refused.
            try:
                fd = open_regular(real)
                try:
                    size = os.fstat(fd).st_size
                    if size > MAX_READ_BYTES:
                        raise RequestRefused(REFUSED, f"{rel} is too large to read ({size} bytes)")
                    return read_fd(fd, MAX_READ_BYTES).decode("utf-8", errors="replace")
                finally:
                    os.close(fd)
            except FileNotFoundError:
                raise RequestRefused(REFUSED, f"{rel} does not exist") from None
            except NotRegularFile as exc:
                raise RequestRefused(REFUSED, f"{rel} is {exc.kind}, not a regular file") from None
            except OSError as exc:
                raise RequestRefused(REFUSED, f"cannot read {rel}: {exc.strerror}") from None

        text = await trio.to_thread.run_sync(read)
        return {"content": text_slice(text, params.get("line"), params.get("limit"))}

    async def write_text_file(self, params: dict[str, Any]) -> dict[str, Any]:
        if self.t.info.mode == "read_only":
            raise RequestRefused(REFUSED, "this conversation is read-only, so the daemon takes no write")
        content = params.get("content")
        if not isinstance(content, str):
            raise RequestRefused(INVALID_PARAMS, "content must be a string")
        _, real, rel = self._path(params)
        data = content.encode("utf-8")
        if len(data) > MAX_WRITE_BYTES:
            raise RequestRefused(REFUSED, f"the content is too large to write ({len(data)} bytes)")
        try:
            mode = os.lstat(real).st_mode
        except OSError:
            mode = None  # a new file
        if mode is not None and not stat.S_ISREG(mode):
            raise RequestRefused(REFUSED, f"{rel} is {file_kind(mode)}, not a regular file")
        try:
            await trio.to_thread.run_sync(write_whole, real, data)
        except OSError as exc:
            raise RequestRefused(REFUSED, f"cannot write {rel}: {exc.strerror}") from None
        return {}
