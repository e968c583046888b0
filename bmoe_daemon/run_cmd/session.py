"""One `bmoe-daemon run` against a daemon's HTTP API: the conversation (made, or the
one given), the event stream (GET /api/events, subscribed before the message is sent so
nothing is missed), the message, the cards that wait for the person (asked on the
terminal, or answered no at once by the daemon when there is none: `unattended`), a
Ctrl-C (SIGINT) that stops the run in the daemon (POST .../stop; a second one leaves at
once), and the result read back from the conversation.

Plain threads on the standard library (client.py says why): the event stream is read
in a thread of its own into a bounded queue, a card waiting for the person is asked in
a thread of its own, and the main thread follows the queue, turns the spinner between
events and handles the signals (their handlers only count, the main thread acts)."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import queue
import signal
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from bmoe_daemon.run_cmd.client import TIMEOUT_S, Client, EventStream
from bmoe_daemon.run_cmd.locate import RunError
from bmoe_daemon.run_cmd.render import SPIN_S, Output

CHANNEL_EVENTS = 1024
RUN_EVENTS = ("conversation", "item", "delta", "prefill", "plan")
ANSWERED = ("answered", "goal_complete")
# A budget reached (--max-cost, --max-tokens, the conversation's) is a stop the caller asked for, not a failure.
STOPPED_OR_REFUSED = ("stopped", "plan_proposed", "question", "goal_blocked", "budget")
DECISIONS = {"y": "approve", "yes": "approve", "a": "approve_always", "always": "approve_always",
             "n": "deny", "no": "deny"}
MAX_ANSWER_BYTES = 64 * 1024  # a line typed at the terminal
# What the reader thread puts in the queue besides the run's events.
SUBSCRIBED = "_subscribed"
FAILED = "_failed"


class Ask(NamedTuple):
    """What one call asks: the prompt and where it goes. (A tuple, not an attrs class:
    the client is standard library only, for its start-up's sake.)"""

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


@contextlib.contextmanager
def counting_signals(count: Callable[[], None]) -> Iterator[None]:
    """SIGINT and SIGTERM call `count` (in the main thread, between two of its steps)
    instead of ending the process, for as long as the block runs."""
    def handler(signum: int, frame: object) -> None:
        count()

    before = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in before.items():
            signal.signal(sig, old)


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, str | None]]:
    """Server-sent events from their lines: (name, data) for each event, and
    ("", None) for each comment (the first says the stream is subscribed)."""
    name, data = "message", ""
    for line in lines:
        if line.startswith(":"):
            yield "", None
        elif line == "":
            if data or name == "lagged":
                yield name, data
            name, data = "message", ""
        else:
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            elif field == "data":
                data += value


class Session:
    def __init__(self, client: Client, ask: Ask, out: Output) -> None:
        self._c = client
        self._ask = ask
        self._out = out
        self._cid = ""
        self._started = False
        self._stops = 0  # Ctrl-Cs counted by the handler
        self._stops_done = 0  # of which the main thread has acted on
        self._asked: set[str] = set()
        self._terminal = threading.Lock()
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(CHANNEL_EVENTS)

    def call(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        return self._c.call(method, url, body)

    def run(self) -> dict[str, Any]:
        """The run, followed to its end: the final object (result, end_reason, usage, conversation)."""
        self._cid = self._conversation()
        stream = self._c.events()
        reader = threading.Thread(target=self._read_events, args=(stream,), name="events", daemon=True)
        reader.start()
        try:
            with counting_signals(self._count_stop):
                self._wait_subscribed()
                body: dict[str, Any] = {"text": self._ask.prompt, "unattended": not self._ask.interactive}
                if self._ask.answer_schema is not None:
                    body["answer_schema"] = self._ask.answer_schema
                if self._ask.max_rounds is not None:
                    body["max_rounds"] = self._ask.max_rounds
                if self._ask.budget is not None:
                    body["budget"] = self._ask.budget
                self._out.reading("")
                sent = self.call("POST", f"/api/conversations/{self._cid}/messages", body)
                end = self._follow()
        finally:
            stream.close()
            self._out.quiet()
        return self._final(sent["item"]["id"], end)

    def _count_stop(self) -> None:
        self._stops += 1

    def _conversation(self) -> str:
        ask = self._ask
        fields: dict[str, Any] = {}
        if ask.workspace is not None:
            fields["workspace"] = self._workspace(ask.workspace)
        if ask.mode is not None:
            fields["mode"] = ask.mode
        if ask.route is not None:
            fields["route"] = ask.route
        if ask.conversation is not None:
            if fields:
                self.call("PATCH", f"/api/conversations/{ask.conversation}", fields)
            return ask.conversation
        made = self.call("POST", "/api/conversations", fields)
        return str(made["id"])

    def _workspace(self, folder: Path) -> str:
        """The id of the workspace at `folder` (resolved), added when it is not one yet."""
        for ws in self.call("GET", "/api/workspaces"):
            if ws["path"] == str(folder):
                return str(ws["id"])
        made = self.call("POST", "/api/workspaces", {"path": str(folder)})
        return str(made["id"])

    # ---- the event stream (its own thread) ----

    def _read_events(self, stream: EventStream) -> None:
        """This conversation's events into the queue, SUBSCRIBED once the daemon's first
        comment came, and FAILED with the RunError when the stream ends or breaks."""
        subscribed = False
        try:
            for name, data in sse_events(stream.lines()):
                if data is None:
                    if not subscribed:
                        subscribed = True
                        self._queue.put((SUBSCRIBED, None))
                elif name == "lagged":
                    raise RunError("the event stream fell behind; the run goes on in the daemon", 1)
                elif name in RUN_EVENTS:
                    event = json.loads(data)
                    if event.get("conversation") == self._cid or event.get("id") == self._cid:
                        self._queue.put((name, event))
            raise RunError("the daemon closed the event stream", 1)
        except RunError as exc:
            if not stream.closed:
                self._queue.put((FAILED, exc))
        except ValueError as exc:
            self._queue.put((FAILED, RunError(f"the daemon sent an event that is not JSON: {exc}", 1)))

    def _wait_subscribed(self) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            name, data = self._next(deadline - time.monotonic())
            if name == SUBSCRIBED:
                return
            if name is None and time.monotonic() >= deadline:
                raise RunError(f"the daemon at {self._c.base_url} did not open its event stream within "
                               f"{TIMEOUT_S:g} s", 1)

    def _next(self, wait: float) -> tuple[str | None, Any]:
        """The queue's next entry within `wait` seconds ((None, None) when there is none),
        after the Ctrl-Cs counted since the last call were acted on."""
        self._act_on_stops()
        try:
            name, data = self._queue.get(timeout=max(wait, 0.0))
        except queue.Empty:
            return None, None
        finally:
            self._act_on_stops()
        if name == FAILED:
            raise data
        return name, data

    def _act_on_stops(self) -> None:
        """The first Ctrl-C stops the run in the daemon (its end then ends the call); a
        second leaves at once."""
        if self._stops == self._stops_done:
            return
        self._stops_done = self._stops
        if self._stops > 1:
            raise RunError("left at a second Ctrl-C; the daemon may still be stopping the run", 3)
        self._out.note("stopping the run… (Ctrl-C again to leave it running)")
        self.call("POST", f"/api/conversations/{self._cid}/stop")

    def _follow(self) -> str | None:
        """Prints the run's events until it ends, turning the spinner between them; its end_reason."""
        while True:
            name, data = self._next(SPIN_S)
            self._out.spin()
            if name is None:
                continue
            self._out.event(name, data)
            if name == "conversation":
                state = data.get("state")
                if state in ("running", "waiting"):
                    self._started = True
                elif self._started and state in ("idle", "error"):
                    return data.get("end_reason")  # type: ignore[no-any-return]
            elif name == "item" and self._ask.interactive:
                item = data.get("item") or {}
                if item.get("state") == "waiting" and item.get("id") not in self._asked:
                    self._asked.add(item["id"])
                    threading.Thread(target=self._card_thread, args=(item,), name="card", daemon=True).start()

    # ---- the cards (a thread each) ----

    def _card_thread(self, item: dict[str, Any]) -> None:
        try:
            self._card(item)
        except RunError as exc:
            self._queue.put((FAILED, exc))

    def _card(self, item: dict[str, Any]) -> None:
        """A card waiting for the person, asked on the terminal and answered."""
        with self._terminal:
            self._out.quiet()
            if item.get("tool") == "ask_user_question":
                args = item.get("args") or {}
                options = ", ".join(str(o) for o in args.get("options") or [])
                said = self._prompt(f"? {args.get('question', '')}" + (f" [{options}]" if options else "") + "\n> ")
                self.call("POST", f"/api/conversations/{self._cid}/answer", {"item": item["id"], "answer": said})
                return
            shown = item.get("diff") or (item.get("args") or {}).get("command") or ""
            text = f"\n? {item.get('title') or item.get('tool')}\n"
            if shown:
                text += "\n".join(str(shown).splitlines()[:40]) + "\n"
            decision = None
            while decision is None:
                said = self._prompt(text + "Approve? [y]es / [n]o / [a]lways: ")
                decision = DECISIONS.get(said.strip().lower())
                text = ""
            self.call("POST", f"/api/conversations/{self._cid}/approval", {"item": item["id"], "decision": decision})
            self._out.reading("")

    def _prompt(self, text: str) -> str:
        """A line read from the terminal (stdin), the question written on stderr. Read from
        the file descriptor, not sys.stdin: a thread left waiting here when the run ends
        holds no lock the interpreter's exit would wait for."""
        sys.stderr.write(text)
        sys.stderr.flush()
        said = b""
        while not said.endswith(b"\n") and len(said) < MAX_ANSWER_BYTES:
            chunk = os.read(sys.stdin.fileno(), 4096)
            if not chunk:
                break
            said += chunk
        return said.decode(errors="replace").split("\n", 1)[0].rstrip("\r")

    # ---- the end ----

    def _final(self, user_item: str, end: str | None) -> dict[str, Any]:
        """The final object, from the conversation as the daemon keeps it: the last
        answer after the message, and the usage of the answers since it summed."""
        conv = self.call("GET", f"/api/conversations/{self._cid}")
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
        usage.update(self._ledger_usage(sent) or {})
        return {"result": result, "end_reason": end_reason, "usage": usage, "conversation": self._cid}

    def _ledger_usage(self, since: float | None) -> dict[str, Any] | None:
        """The run's usage as the daemon's ledger counts it (its helpers' answers too),
        with its cost where the provider has prices; None when the daemon keeps none."""
        if since is None:
            return None
        when = datetime.datetime.fromtimestamp(since, datetime.UTC).isoformat()
        try:
            report = self.call("GET", "/api/usage?" + urllib.parse.urlencode({"conversation": self._cid,
                                                                                "since": when}))
        except RunError:
            return None
        if not isinstance(report, dict):
            return None
        local, provider = report.get("local") or {}, report.get("provider") or {}
        out = {key: int(local.get(key, 0)) + int(provider.get(key, 0))
               for key in ("prompt_tokens", "completion_tokens", "cached_tokens")}
        return {**out, "cost": provider.get("cost")}
