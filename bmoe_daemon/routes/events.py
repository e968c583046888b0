"""The event stream: Server-Sent Events at /api/events, the same over a WebSocket at /api/ws.

A client that reconnects with `Last-Event-ID` (or `?last_event_id=`) first gets the
held events after that id, then the live ones. Fifteen seconds of silence send a
`: ping` comment (the bus's keepalive, started by the server, puts it in the queue). A
client too slow to keep up is dropped with a `lagged` event and reconnects to replay
what it missed.

A client that answers conversations' tool calls (their client tools) says so with
`?tools=<conversation id>[,<id>...]`: while its stream is open it is counted as one
that answers them (`tool_clients`), so a card waiting for a client that is gone can say so.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager

import trio
from quart import Blueprint, Response, make_response, request, websocket

from actors.bus import Event, EventBus
from bmoe_daemon import access
from bmoe_daemon.access import is_loopback
from bmoe_daemon.context import daemon, is_local
from bmoe_daemon.errors import BadRequest
from bmoe_daemon.responses import no_timeout

bp = Blueprint("events", __name__)

PING_S = 15.0
MAX_SERVED = 32  # conversations one stream answers the tool calls of


def _after(header: str | None, query: str | None) -> int | None:
    raw = header if header not in (None, "") else query
    if raw in (None, ""):
        return None
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise BadRequest("Last-Event-ID must be an event number.") from None
    if value < 0:
        raise BadRequest("Last-Event-ID must be an event number.")
    return value


def _served(raw: str | None, local: bool) -> list[str]:
    """The conversations whose tool calls the stream answers (`?tools=`): each must be
    one this client may see (404 or 403 otherwise)."""
    if raw is None or not raw.strip():
        return []
    ids = list(dict.fromkeys(part.strip() for part in raw.split(",") if part.strip()))
    if len(ids) > MAX_SERVED:
        raise BadRequest(f"`tools` names {len(ids)} conversations; one stream answers at most {MAX_SERVED}.")
    hub = daemon().hub
    for cid in ids:
        access.check_conversation(hub.peek(cid).local_only, local)
    return ids


# Events that are waiting when the stream wakes go out in one write, at most this many.
BATCH_EVENTS = 64
PING_FRAME = b": ping\n\n"
LAGGED_FRAME = b"event: lagged\ndata: {}\n\n"


def sse_frame(event: Event) -> bytes:
    """The event's frame: encoded once, on its first subscriber's turn, and the same
    bytes for every other."""
    return event.sse_frame()


async def _stream(bus: EventBus, after: int | None, local: bool,
                  serving: AbstractContextManager[None]) -> AsyncIterator[bytes]:
    """One write per wakeup: whatever arrived since the last one (at most BATCH_EVENTS),
    through Quart's streaming response. The stream waits on its queue alone: pings come
    through it from the bus's one keepalive timer, so a delta costs no timeout per
    subscriber. A client that takes nothing has its connection cut by the write guard
    (bmoe_daemon/write_guard.py); one that falls too far behind is dropped by the bus.
    `serving`: held while it is open (the conversations whose tool calls it answers)."""
    with bus.subscribe(after=after, local=local) as sub, serving:
        yield b": connected\n\n"
        while True:
            try:
                got = await sub.receive_batch(BATCH_EVENTS)
            except (trio.EndOfChannel, trio.ClosedResourceError):
                yield LAGGED_FRAME
                return
            if len(got) == 1:
                one = got[0]
                yield sse_frame(one) if isinstance(one, Event) else PING_FRAME
            else:
                yield b"".join([sse_frame(x) if isinstance(x, Event) else PING_FRAME for x in got])


@bp.get("/api/events")
async def get_events() -> Response:
    after = _after(request.headers.get("Last-Event-ID"), request.args.get("last_event_id"))
    local = is_local()
    served = _served(request.args.get("tools"), local)
    resp = await make_response(
        _stream(daemon().bus, after, local, daemon().hub.tool_clients.serving(served)),
        200,
        {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )
    return no_timeout(resp)


@bp.websocket("/api/ws")
async def ws_events() -> None:
    after = _after(None, websocket.args.get("last_event_id"))
    local = is_loopback(websocket.remote_addr)
    served = _served(websocket.args.get("tools"), local)
    await websocket.accept()
    bus = daemon().bus
    with bus.subscribe(after=after, local=local) as sub, daemon().hub.tool_clients.serving(served):
        while True:
            try:
                got = await sub.receive()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                await websocket.send(json.dumps({"event": "lagged", "data": {}}))
                return
            if not isinstance(got, Event):
                await websocket.send(json.dumps({"event": "ping"}))
            else:
                # The data's JSON is the bus's, encoded once for every subscriber.
                await websocket.send(f'{{"id":{got.id},"event":{json.dumps(got.name)},"data":{got.data_json()}}}')
