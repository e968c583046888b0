"""One `bmoe-daemon run` against a daemon's HTTP API: the conversation (made, or the
one given), the event stream (GET /api/events, subscribed before the message is sent so
nothing is missed), the message, the cards that wait for the person (asked on the
terminal, or answered no at once by the daemon when there is none: `unattended`), a
Ctrl-C (SIGINT) that stops the run in the daemon (POST .../stop; a second one leaves at
once), and the result read back from the conversation."""

from __future__ import annotations

import datetime
import json
import signal
import sys
from pathlib import Path
from typing import Any

import attrs
import httpx
import trio

from bmoe_daemon.run_cmd.locate import RunError
from bmoe_daemon.run_cmd.render import Output

TIMEOUT_S = 30.0
CHANNEL_EVENTS = 1024
RUN_EVENTS = ("conversation", "item", "delta", "prefill", "plan")
ANSWERED = ("answered", "goal_complete")
# A budget reached (--max-cost, --max-tokens, the conversation's) is a stop the caller asked for, not a failure.
STOPPED_OR_REFUSED = ("stopped", "plan_proposed", "question", "goal_blocked", "budget")
DECISIONS = {"y": "approve", "yes": "approve", "a": "approve_always", "always": "approve_always",
             "n": "deny", "no": "deny"}


@attrs.frozen
class Ask:
    """What one call asks: the prompt and where it goes."""

    prompt: str
    conversation: str | None = None
    workspace: Path | None = None
    mode: str | None = None
    route: str | None = None
    answer_schema: dict[str, Any] | None = None
    max_rounds: int | None = None
    budget: dict[str, Any] | None = None  # the message's {tokens, cost}
    interactive: bool = False  # a person at the terminal answers the cards


def exit_code(end_reason: str | None) -> int:
    """0 answered, 1 failed (an error, stuck, out of rounds, cut off), 3 stopped or refused
    (a budget reached included)."""
    if end_reason in ANSWERED:
        return 0
    if end_reason in STOPPED_OR_REFUSED:
        return 3
    return 1


def _refusal(resp: httpx.Response) -> RunError:
    try:
        body = resp.json()
        text = f"{body['error']} ({body['code']})"
    except (ValueError, KeyError, TypeError):
        text = resp.text[:200] or resp.reason_phrase
    if resp.status_code == 401:
        return RunError(f"the daemon asks for its key: {text}; pass --api-key-file", 2)
    code = 2 if resp.status_code in (400, 404, 422) else 3 if resp.status_code < 500 else 1
    return RunError(f"the daemon answered {resp.status_code}: {text}", code)


class Session:
    def __init__(self, client: httpx.AsyncClient, ask: Ask, out: Output) -> None:
        self._c = client
        self._ask = ask
        self._out = out
        self._cid = ""
        self._started = False
        self._stops = 0
        self._asked: set[str] = set()
        self._terminal = trio.Lock()

    async def call(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        try:
            resp = await self._c.request(method, url, json=body)
        except httpx.HTTPError as exc:
            raise RunError(f"cannot reach the daemon at {self._c.base_url}: {exc}", 1) from None
        if resp.status_code >= 400:
            raise _refusal(resp)
        return resp.json()

    async def run(self) -> dict[str, Any]:
        """The run, followed to its end: the final object (result, end_reason, usage, conversation)."""
        self._cid = await self._conversation()
        send, receive = trio.open_memory_channel[tuple[str, dict[str, Any]]](CHANNEL_EVENTS)
        end: str | None = None
        async with trio.open_nursery() as nursery:
            await nursery.start(self._events, send)
            nursery.start_soon(self._signals, nursery.cancel_scope)
            if not self._out.json_lines:
                nursery.start_soon(self._out.spin)
            body: dict[str, Any] = {"text": self._ask.prompt, "unattended": not self._ask.interactive}
            if self._ask.answer_schema is not None:
                body["answer_schema"] = self._ask.answer_schema
            if self._ask.max_rounds is not None:
                body["max_rounds"] = self._ask.max_rounds
            if self._ask.budget is not None:
                body["budget"] = self._ask.budget
            self._out.reading("")
            sent = await self.call("POST", f"/api/conversations/{self._cid}/messages", body)
            end = await self._follow(receive, nursery)
            nursery.cancel_scope.cancel()
        if self._stops > 1:
            raise RunError("left at a second Ctrl-C; the daemon may still be stopping the run", 3)
        return await self._final(sent["item"]["id"], end)

    async def _conversation(self) -> str:
        ask = self._ask
        fields: dict[str, Any] = {}
        if ask.workspace is not None:
            fields["workspace"] = await self._workspace(ask.workspace)
        if ask.mode is not None:
            fields["mode"] = ask.mode
        if ask.route is not None:
            fields["route"] = ask.route
        if ask.conversation is not None:
            if fields:
                await self.call("PATCH", f"/api/conversations/{ask.conversation}", fields)
            return ask.conversation
        made = await self.call("POST", "/api/conversations", fields)
        return str(made["id"])

    async def _workspace(self, folder: Path) -> str:
        """The id of the workspace at `folder` (resolved), added when it is not one yet."""
        path = folder
        for ws in await self.call("GET", "/api/workspaces"):
            if ws["path"] == str(path):
                return str(ws["id"])
        made = await self.call("POST", "/api/workspaces", {"path": str(path)})
        return str(made["id"])

    async def _events(self, send: trio.MemorySendChannel[tuple[str, dict[str, Any]]], *,
                      task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """GET /api/events: this conversation's events into `send`; started once subscribed."""
        async with send, self._c.stream("GET", "/api/events", timeout=httpx.Timeout(TIMEOUT_S, read=None)) as resp:
            if resp.status_code >= 400:
                await resp.aread()
                raise _refusal(resp)
            name, data, started = "message", "", False
            async for line in resp.aiter_lines():
                if line.startswith(":"):
                    if not started:
                        started = True
                        task_status.started()
                elif line == "":
                    if name == "lagged":
                        raise RunError("the event stream fell behind; the run goes on in the daemon", 1)
                    if data and name in RUN_EVENTS:
                        event = json.loads(data)
                        if event.get("conversation") == self._cid or event.get("id") == self._cid:
                            await send.send((name, event))
                    name, data = "message", ""
                else:
                    field, _, value = line.partition(": ")
                    if field == "event":
                        name = value
                    elif field == "data":
                        data += value
        raise RunError("the daemon closed the event stream", 1)

    async def _follow(self, receive: trio.MemoryReceiveChannel[tuple[str, dict[str, Any]]],
                      nursery: trio.Nursery) -> str | None:
        """Prints the run's events until it ends; its end_reason."""
        async for name, data in receive:
            self._out.event(name, data)
            if name == "conversation":
                state = data.get("state")
                if state in ("running", "waiting"):
                    self._started = True
                elif self._started and state in ("idle", "error"):
                    return data.get("end_reason")
            elif name == "item" and self._ask.interactive:
                item = data.get("item") or {}
                if item.get("state") == "waiting" and item.get("id") not in self._asked:
                    self._asked.add(item["id"])
                    nursery.start_soon(self._card, item)
        raise RunError("the event stream ended before the run", 1)

    async def _card(self, item: dict[str, Any]) -> None:
        """A card waiting for the person, asked on the terminal and answered."""
        async with self._terminal:
            self._out.quiet()
            if item.get("tool") == "ask_user_question":
                args = item.get("args") or {}
                options = ", ".join(str(o) for o in args.get("options") or [])
                said = await self._prompt(f"? {args.get('question', '')}" + (f" [{options}]" if options else "")
                                          + "\n> ")
                await self.call("POST", f"/api/conversations/{self._cid}/answer", {"item": item["id"], "answer": said})
                return
            shown = item.get("diff") or (item.get("args") or {}).get("command") or ""
            text = f"\n? {item.get('title') or item.get('tool')}\n"
            if shown:
                text += "\n".join(str(shown).splitlines()[:40]) + "\n"
            decision = None
            while decision is None:
                said = await self._prompt(text + "Approve? [y]es / [n]o / [a]lways: ")
                decision = DECISIONS.get(said.strip().lower())
                text = ""
            await self.call("POST", f"/api/conversations/{self._cid}/approval",
                            {"item": item["id"], "decision": decision})
            self._out.reading("")

    async def _prompt(self, text: str) -> str:
        """A line read from the terminal (stdin), the question written on stderr."""
        sys.stderr.write(text)
        sys.stderr.flush()
        line = await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        return str(line).rstrip("\n")

    async def _signals(self, scope: trio.CancelScope) -> None:
        """Ctrl-C: the first stops the run in the daemon (its end then ends the call);
        a second leaves at once."""
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                self._stops += 1
                if self._stops > 1:
                    scope.cancel()
                    return
                self._out.note("stopping the run… (Ctrl-C again to leave it running)")
                await self.call("POST", f"/api/conversations/{self._cid}/stop")

    async def _final(self, user_item: str, end: str | None) -> dict[str, Any]:
        """The final object, from the conversation as the daemon keeps it: the last
        answer after the message, and the usage of the answers since it summed."""
        conv = await self.call("GET", f"/api/conversations/{self._cid}")
        items = conv.get("items") or []
        after = next((i + 1 for i, it in enumerate(items) if it.get("id") == user_item), 0)
        usage: dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0, "cached_tokens": 0}
        result = None
        for it in items[after:]:
            if it.get("kind") == "assistant":
                result = it.get("text") or result
                for key, value in (it.get("usage") or {}).items():
                    if isinstance(value, int):
                        usage[key] = usage.get(key, 0) + value
        end_reason = end if self._started else conv.get("end_reason")
        if self._stops and end_reason is None:
            end_reason = "stopped"
        sent = next((it.get("created") for it in items if it.get("id") == user_item), None)
        usage["cost"] = None
        usage.update(await self._ledger_usage(sent) or {})
        return {"result": result, "end_reason": end_reason, "usage": usage, "conversation": self._cid}

    async def _ledger_usage(self, since: float | None) -> dict[str, Any] | None:
        """The run's usage as the daemon's ledger counts it (its helpers' answers too),
        with its cost where the provider has prices; None when the daemon keeps none."""
        if since is None:
            return None
        when = datetime.datetime.fromtimestamp(since, datetime.UTC).isoformat()
        try:
            resp = await self._c.get("/api/usage", params={"conversation": self._cid, "since": when})
            report = resp.json() if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        if not isinstance(report, dict):
            return None
        local, provider = report.get("local") or {}, report.get("provider") or {}
        out = {key: int(local.get(key, 0)) + int(provider.get(key, 0))
               for key in ("prompt_tokens", "completion_tokens", "cached_tokens")}
        return {**out, "cost": provider.get("cost")}
