"""The loaded model for other apps: GET /v1/models and POST /v1/chat/completions.

Shaped as llama.cpp's server answers (`delta.content`, `delta.reasoning_content`,
`delta.tool_calls[{index, id, type, function: {name, arguments}}]`, a last chunk with
`finish_reason`, then `data: [DONE]`). A request lines up on the same turn line as the
agent's rounds. A streaming client that goes away withdraws its place, or stops its
generation at the engine's next cancellation point. One that takes nothing for
CLIENT_TAKE_S (it stopped reading, or vanished without closing) has its generation
stopped the same way; if it reads again, its stream ends with an error saying why.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import AsyncIterator
from typing import Any, cast

import trio
from quart import Blueprint, Response, current_app, jsonify, make_response, request
from quart_trio import QuartTrio

from actors.errors import ActorError, ContextFull, EngineError, NoModel
from actors.model.turns import Aborted, Piece, ToolSpec, TurnInput, TurnResult
from bmoe_daemon.bodies import parse_json
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import ApiError, BadRequest, NoModelError, NoVision
from bmoe_daemon.responses import no_timeout

bp = Blueprint("openai", __name__)

ROLES = ("system", "user", "assistant", "tool", "developer")
MAX_MESSAGES = 10_000
# A request's tools become a grammar (tool_choice, templates without tool syntax) and
# part of every prompt, at a cost that grows with them (0.2 s for 364 KiB of schemas):
# a request may bring this many, this large in all (as JSON).
MAX_TOOLS = 256
MAX_TOOLS_BYTES = 1024 * 1024
STREAM_QUEUE = 256
# How long a streaming client may leave its pieces untaken (the queue full, its socket
# not read) before its generation is stopped: the turn line is every other turn's, and
# a client that stalls, or left without a word, must not keep it.
CLIENT_TAKE_S = 5.0
STALLED_TEXT = (
    f"The answer stops here: this client took nothing for {CLIENT_TAKE_S:g} s, so the daemon stopped the "
    "generation to free the model for others. Read the stream as it comes, then send the request again."
)
NO_MODEL_TEXT = "No model is loaded; start the daemon with a model to serve it."


class ContextFullError(ApiError):
    status, code = 400, "bad_request"


def _content(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for part in value:
            if not isinstance(part, dict) or "type" not in part:
                raise BadRequest(f"{where}: each content part is an object with a type.")
            if part["type"] == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif part["type"] in ("image_url", "input_image", "image"):
                raise NoVision("The loaded model cannot see images; send text only.")
            else:
                raise BadRequest(f"{where}: unsupported content part {part['type']!r}.")
        return "".join(parts)
    raise BadRequest(f"{where}: content must be a string or a list of parts.")


def _messages(raw: Any) -> tuple[dict[str, Any], ...]:
    if not isinstance(raw, list) or not raw:
        raise BadRequest("messages must be a non-empty array.")
    if len(raw) > MAX_MESSAGES:
        raise BadRequest("Too many messages.")
    out = []
    for i, m in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(m, dict):
            raise BadRequest(f"{where} must be an object.")
        role = m.get("role")
        if role not in ROLES:
            raise BadRequest(f"{where}.role must be one of {', '.join(ROLES)}.")
        msg: dict[str, Any] = {"role": "system" if role == "developer" else role,
                               "content": _content(m.get("content"), where)}
        if role == "assistant" and m.get("tool_calls") is not None:
            calls = m["tool_calls"]
            if not isinstance(calls, list):
                raise BadRequest(f"{where}.tool_calls must be an array.")
            norm = []
            for c in calls:
                fn = c.get("function") if isinstance(c, dict) else None
                if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
                    raise BadRequest(f"{where}.tool_calls: each needs function.name.")
                args = fn.get("arguments", "{}")
                if not isinstance(args, str):
                    args = json.dumps(args)
                norm.append({"id": str(c.get("id") or ""), "type": "function",
                             "function": {"name": fn["name"], "arguments": args}})
            msg["tool_calls"] = norm
        if role == "tool":
            msg["tool_call_id"] = str(m.get("tool_call_id") or "")
        out.append(msg)
    return tuple(out)


def _tools(raw: Any) -> tuple[ToolSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise BadRequest("tools must be an array.")
    if len(raw) > MAX_TOOLS:
        raise BadRequest(f"At most {MAX_TOOLS} tools go with one request.")
    try:
        size = len(json.dumps(raw, ensure_ascii=False))
    except (TypeError, ValueError, RecursionError):
        raise BadRequest("tools cannot be read as JSON.") from None
    if size > MAX_TOOLS_BYTES:
        mib = MAX_TOOLS_BYTES // (1024 * 1024)
        raise BadRequest(f"tools are larger than {mib} MiB as JSON; send fewer or smaller.")
    out = []
    for i, t in enumerate(raw):
        fn = t.get("function") if isinstance(t, dict) else None
        if not isinstance(t, dict) or t.get("type", "function") != "function" or not isinstance(fn, dict):
            raise BadRequest(f"tools[{i}] must be {{type: function, function: {{name, parameters}}}}.")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise BadRequest(f"tools[{i}].function.name must be a non-empty string.")
        params = fn.get("parameters") or {"type": "object", "properties": {}}
        if not isinstance(params, dict):
            raise BadRequest(f"tools[{i}].function.parameters must be a JSON schema object.")
        out.append(ToolSpec(name, str(fn.get("description") or ""), params))
    return tuple(out)


def _tool_choice(raw: Any, tools: tuple[ToolSpec, ...]) -> tuple[str | None, tuple[ToolSpec, ...]]:
    if raw is None:
        return None, tools
    if raw in ("auto", "none", "required"):
        return raw, tools
    if isinstance(raw, dict) and isinstance(raw.get("function"), dict):
        name = raw["function"].get("name")
        chosen = tuple(t for t in tools if t.name == name)
        if not chosen:
            raise BadRequest(f"tool_choice names {name!r}, which is not in tools.")
        return "required", chosen
    raise BadRequest("tool_choice is 'auto', 'none', 'required' or {type: function, function: {name}}.")


def _number(body: dict[str, Any], name: str, kind: type, low: float, high: float) -> Any:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and int(value) != value):
        raise BadRequest(f"{name} must be a number.")
    if not low <= value <= high:
        raise BadRequest(f"{name} must be between {low:g} and {high:g}.")
    return kind(value)


def _turn_input(body: dict[str, Any]) -> tuple[TurnInput, bool, bool]:
    messages = _messages(body.get("messages"))
    tools = _tools(body.get("tools"))
    choice, tools = _tool_choice(body.get("tool_choice"), tools)
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest("stream must be true or false.")
    opts = body.get("stream_options") or {}
    if not isinstance(opts, dict):
        raise BadRequest("stream_options must be an object.")
    usage = bool(opts.get("include_usage", False))
    max_tokens = _number(body, "max_completion_tokens", int, 1, 1 << 20) or _number(body, "max_tokens", int, 1, 1 << 20)
    temperature = _number(body, "temperature", float, 0, 2)
    parallel = body.get("parallel_tool_calls", True)
    if not isinstance(parallel, bool):
        raise BadRequest("parallel_tool_calls must be true or false.")
    turn = TurnInput(messages, tools, max_tokens=max_tokens, temperature=temperature, tool_choice=choice,
                     parallel_calls=parallel)
    return turn, stream, usage


def _chunk(cid: str, model: str, created: int, delta: dict[str, Any] | None, finish: str | None = None,
           usage: dict[str, int] | None = None) -> bytes:
    body: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                            "choices": [] if delta is None else
                            [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        body["usage"] = usage
    return b"data: " + json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode() + b"\n\n"


def _stream_error(text: str) -> bytes:
    return b"data: " + json.dumps({"error": {"message": text, "type": "server_error"}}).encode() + b"\n\n"


def _usage(result: TurnResult) -> dict[str, int]:
    return {"prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens,
            "total_tokens": result.prompt_tokens + result.completion_tokens}


@bp.get("/v1/models")
async def get_models() -> Response:
    model = daemon().engine.model_id
    data = [] if model is None else [{"id": model, "object": "model", "created": int(daemon().started),
                                       "owned_by": "bmoe-daemon"}]
    return jsonify({"object": "list", "data": data})


@bp.post("/v1/chat/completions")
async def post_chat_completions() -> Response:
    engine = daemon().engine
    body = parse_json(await request.get_data())
    model = engine.model_id
    try:
        turn, stream, include_usage = _turn_input(body)
    except NoVision:
        if model is None:  # the images are not what stands in the way: the model is
            raise NoModelError(NO_MODEL_TEXT) from None
        raise
    if model is None:
        raise NoModelError(NO_MODEL_TEXT)
    cid = "chatcmpl-" + secrets.token_urlsafe(12)
    created = int(time.time())
    if not stream:
        calls: list[Piece] = []

        async def collect(piece: Piece) -> None:
            calls.append(piece)

        try:
            result = await engine.turn(turn, collect, owner="v1")
        except ContextFull as exc:
            raise ContextFullError(f"The request does not fit the model's context: {exc}") from None
        except NoModel as exc:
            raise NoModelError(str(exc)) from None
        except EngineError as exc:
            raise ApiError(f"The model failed: {exc}") from None
        message: dict[str, Any] = {"role": "assistant", "content": result.text or None}
        if result.reasoning:
            message["reasoning_content"] = result.reasoning
        if result.tool_calls:
            message["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": c.arguments}}
                                     for c in result.tool_calls]
        return jsonify({"id": cid, "object": "chat.completion", "created": created, "model": model,
                        "choices": [{"index": 0, "message": message, "finish_reason": result.finish_reason}],
                        "usage": _usage(result)})

    send, rx = trio.open_memory_channel[bytes | Exception | TurnResult](STREAM_QUEUE)
    scope = trio.CancelScope()
    gave_up = False  # the client stopped taking pieces: its generation was stopped

    async def offer(item: bytes | Exception | TurnResult) -> bool:
        """Queue `item` for the client; False when it has taken nothing for
        CLIENT_TAKE_S (the queue stays full) or its stream has ended."""
        nonlocal gave_up
        if not gave_up:
            try:
                with trio.move_on_after(CLIENT_TAKE_S):
                    await send.send(item)
                    return True
            except trio.BrokenResourceError:  # the client left: its stream closed the queue
                pass
        gave_up = True
        return False

    async def emit(piece: Piece) -> None:
        """Runs on the engine's turn: a client that does not take its piece in time
        must not keep the line, so its place is freed and its generation stopped."""
        delta: dict[str, Any]
        if piece.kind == "text":
            delta = {"content": piece.text}
        elif piece.kind == "reasoning":
            delta = {"reasoning_content": piece.text}
        elif piece.kind == "tool_call":
            fn: dict[str, Any] = {"arguments": piece.text}
            call: dict[str, Any] = {"index": piece.index, "function": fn}
            if piece.name is not None:
                call.update(id=piece.call_id, type="function")
                fn["name"] = piece.name
            delta = {"tool_calls": [call]}
        else:
            return
        if not await offer(_chunk(cid, model, created, delta)):
            scope.cancel()  # `produce` withdraws: the engine raises this turn's abort flag
            raise Aborted()  # and the backend stops at this piece, not at its next one

    async def produce() -> None:
        async with send:
            with scope:
                got: Exception | TurnResult
                try:
                    got = await engine.turn(turn, emit, owner="v1")
                except (ActorError, Aborted) as exc:
                    got = exc
                await offer(got)

    cast(QuartTrio, current_app).nursery.start_soon(produce)

    async def body_stream() -> AsyncIterator[bytes]:
        try:
            yield _chunk(cid, model, created, {"role": "assistant", "content": ""})
            async for got in rx:
                if isinstance(got, bytes):
                    yield got
                elif isinstance(got, TurnResult):
                    yield _chunk(cid, model, created, {}, finish=got.finish_reason)
                    if include_usage:
                        yield _chunk(cid, model, created, None, usage=_usage(got))
                elif not isinstance(got, Aborted):
                    yield _stream_error(f"The model failed: {got}")
            if gave_up:
                yield _stream_error(STALLED_TEXT)
            yield b"data: [DONE]\n\n"
        finally:
            # The client went away (or the stream ended): free the place on the turn line.
            scope.cancel()
            rx.close()

    resp = await make_response(body_stream(), 200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    return no_timeout(resp)
