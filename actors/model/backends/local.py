"""The local backend: a GGUF run by llama.cpp (llama-cpp-python) in a worker thread.

The prompt comes from the GGUF's own chat template (actors/model/backends/chat_template.py),
which is given the turn's `think` where it has a thinking switch.
The KV cache keeps the previous turn's tokens, and a new turn that starts with them
(the same system prompt, a conversation only appended to) prefills only what is new;
to keep that true after a turn that called tools, the model's calls are given back
as it wrote them (actors/model/backends/written.py). Each conversation (a turn's
`cache_key`) keeps its cache across other conversations' turns: it is saved when
another takes the context and restored when its turn comes again
(actors/model/backends/prompt_cache.py).

Generation runs in a worker thread, one turn at a time. Its pieces go to the trio
side through a bounded pipe (actors/model/backends/piece_pipe.py): the thread does not wait
for each piece to be emitted, and waits only when the trio side is PIPE_PIECES
behind. A stop raises the turn's abort flag, which the thread checks between tokens
and llama.cpp's abort callback reads inside its computation, prefill included
(natively, without Python, where the machine allows: actors/model/backends/abort_callback.py).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

# numpy's BLAS (OpenBLAS) starts a thread per core at import, which waits spinning for
# work that never comes here: llama.cpp computes with threads of its own, and numpy only
# holds token arrays. On two cores those threads took a third of the model's speed
# (doctor's 32 tokens: 31 -> 42 tokens/s with one) and, with their buffers, 9 MB of what
# a daemon holds once its model is let go. Set before numpy's first import; a value the
# person set is kept.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import outcome
import trio

from actors.errors import ContextFull, TurnFailed
from actors.model.backends import llama_internals
from actors.model.backends.abort_callback import AbortCallback
from actors.model.backends.chat_template import ChatTemplate, Rendered
from actors.model.backends.generic_grammar import GenericGrammars, reply_schema
from actors.model.backends.model_thread import ModelThread
from actors.model.backends.piece_pipe import PieceMapper, PiecePipe
from actors.model.backends.prompt_cache import (
    DEFAULT_PROMPT_CACHE_BYTES,
    PromptCache,
    common_prefix,
    with_scratch_sequence,
)
from actors.model.backends.repeats import CLOSE, CONTENT, TurnWatch
from actors.model.backends.template_messages import IMAGE_LEFT_OUT, template_call_id, template_messages
from actors.model.backends.threads import default_batch_threads, default_threads
from actors.model.backends.written import WrittenReplies
from actors.model.reasoning import ThinkSplitter
from actors.model.toolcalls import ToolCallParser
from actors.model.turns import Aborted, CallOut, Emit, Piece, ToolSpec, TurnInput, TurnResult

if TYPE_CHECKING:  # importing llama_cpp loads llama.cpp, which waits until a model is loaded
    from collections.abc import Callable, Generator

    from llama_cpp import Llama
    from llama_cpp.llama_grammar import LlamaGrammar
    from llama_cpp.llama_types import CreateCompletionStreamResponse

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
    "MIN_REPLY_TOKENS",
    "LocalBackend",
    "default_batch_threads",
    "default_threads",
    # What a template is given, imported from here by tests that predate the split.
    "IMAGE_LEFT_OUT",
    "template_call_id",
    "template_messages",
]

MIN_REPLY_TOKENS = 256
# The generic format lists the tools in the system message: past this share of the
# context (at about this many characters a token, JSON being dense) they are listed
# one line each, so a small context is left room for the conversation.
GENERIC_TOOLS_SHARE = 0.25
GENERIC_TOOLS_CHARS_PER_TOKEN = 3
DEFAULT_MAX_TOKENS = 2048
DEFAULT_TEMPERATURE = 0.3


class LocalBackend:
    """See the module docstring. Construct with `await LocalBackend.load(...)`."""

    def __init__(
        self, llm: Llama, path: Path, *, abort_callback: bool = True,
        prompt_cache_bytes: int = DEFAULT_PROMPT_CACHE_BYTES, chat_template: str | None = None,
    ) -> None:
        """`abort_callback=False` is for benchmarks only: the bare llama.cpp loop they
        compare with must run without the callback a stop relies on.
        `prompt_cache_bytes`: RAM for the conversations' saved caches (0: none).
        `chat_template`: the person's template for this model, used instead of the
        file's (TurnFailed when it does not parse or renders no message)."""
        import llama_cpp

        self._llm = llm
        self.path = path
        self.model_id = path.name.removesuffix(".gguf")
        self.n_ctx = int(llm.n_ctx())
        self._thread = ModelThread(f"model {self.model_id}")  # every turn's llama.cpp calls (model_thread.py)
        self._abort = AbortCallback(llm, enabled=abort_callback)
        source = chat_template or (llm.metadata or {}).get("tokenizer.chat_template")
        if not source:
            raise TurnFailed(f"{path.name} has no chat template; pick a chat (instruct) model, or give it a "
                             "template on the models page.")
        self.template_from = "person" if chat_template else "file"
        self._given_template = chat_template or None
        eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", errors="ignore")
        bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", errors="ignore")
        self._template = person_template(source, eos, bos, self.model_id) if chat_template else \
            file_template(source, eos, bos, self.model_id)
        self.tool_format = self._template.tool_format
        self.last_prefill = 0
        self._grammars = GenericGrammars(self._grammar_parses)
        self._written = WrittenReplies()
        self.prompt_cache = PromptCache(llm, prompt_cache_bytes)
        self._closed = False
        self.n_gpu_layers = 0  # as loaded (LocalBackend.load sets it)
        # Each completion's sampling seed (LocalBackend.load sets it); None: llama-cpp-python's
        # own, drawn from the one before, so a reply depends on how many came before it.
        self.seed: int | None = None
        # The model's size (which the run reads, runs/agent/small/leader.py), through the public pointer.
        self.n_params = int(llama_cpp.llama_model_n_params(llm.model))

    @classmethod
    async def load(
        cls, path: Path, *, n_ctx: int, n_threads: int | None = None,
        prompt_cache_bytes: int = DEFAULT_PROMPT_CACHE_BYTES, n_gpu_layers: int | None = None,
        chat_template: str | None = None,
        seed: int | None = None,
    ) -> LocalBackend:
        """Load the GGUF in a worker thread. Raises TurnFailed with a plain reason.
        `n_gpu_layers`: layers offloaded to the GPU (-1 all, 0 none; None: every layer
        when this build of llama.cpp can offload, else none). `chat_template`: the
        person's, instead of the file's. `seed`: every completion samples from it,
        whatever ran before (tests; None: llama-cpp-python's own)."""

        def _load() -> LocalBackend:
            try:
                from llama_cpp import Llama
            except Exception as exc:  # a missing package, or its library failing to load (RuntimeError, OSError)
                raise TurnFailed(f"llama-cpp-python cannot be loaded ({exc}); install it again in the "
                                 "daemon's environment (ops/install.sh does)") from None

            llama_internals.check_module()  # a changed llama-cpp-python is refused before the load
            avoid_amx_repack()
            # The person's --threads bounds both; by default writing leaves the daemon a core.
            try:
                threads = n_threads or default_threads()
                batch_threads = n_threads or default_batch_threads()
            except ValueError as exc:
                raise TurnFailed(str(exc)) from None
            layers = (-1 if gpu_offload_supported() else 0) if n_gpu_layers is None else n_gpu_layers
            try:
                llm = Llama(
                    model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=batch_threads,
                    verbose=False, logits_all=False, n_gpu_layers=layers,
                )
                try:
                    llama_internals.check_loaded(llm)
                except llama_internals.LlamaChanged:
                    llm.close()
                    raise
                if prompt_cache_bytes > 0:
                    with_scratch_sequence(llm)
            except (ValueError, RuntimeError, OSError) as exc:
                raise TurnFailed(f"Could not load {path}: {exc}") from None
            try:
                backend = cls(llm, path, prompt_cache_bytes=prompt_cache_bytes, chat_template=chat_template)
            except TurnFailed:
                llm.close()
                raise
            backend.n_gpu_layers = layers
            backend.seed = seed
            return backend

        if not await trio.Path(path).is_file():
            raise TurnFailed(f"There is no model file at {path}.")
        return await trio.to_thread.run_sync(_load)

    def device(self) -> dict[str, Any]:
        """Where the model runs, as /health says it: on the GPU when this build can
        offload and any layer was asked for (-1 is every layer), else on the CPU."""
        supported = gpu_offload_supported()
        offloaded = self.n_gpu_layers if supported else 0
        return {"runs_on": "gpu" if offloaded != 0 else "cpu", "gpu_layers": offloaded,
                "gpu_layers_asked": self.n_gpu_layers, "gpu_offload_supported": supported}

    def template_info(self) -> dict[str, Any]:
        """What the models page shows of the chat template: the tool-call format found
        in it, where it came from ("file" or "person") and the changes histories have
        needed to render in it (template_shapes.Shape's names), and the person's
        template when it is theirs (null otherwise)."""
        return {"tool_format": self.tool_format, "template_from": self.template_from,
                "template_shapes": self._template.shapes_needed(), "chat_template": self._given_template}

    @property
    def native_abort(self) -> bool:
        """Whether llama.cpp reads the abort flag natively (see abort_callback.py)."""
        return self._abort.native

    # ---- prompt ----

    def render(
        self, messages: tuple[dict[str, Any], ...], tools: tuple[ToolSpec, ...] = (), *, think: bool | None = None,
        examples: bool = False, terse_tools: bool = False,
    ) -> tuple[str, list[str]]:
        """The prompt and stop strings for `messages` (see actors/model/backends/chat_template.py);
        `examples`, `terse_tools` as in TurnInput."""
        out = self._render(messages, tools, think, examples=examples, terse_tools=terse_tools)
        return out.prompt, out.stops

    def _render(
        self, messages: tuple[dict[str, Any], ...], tools: tuple[ToolSpec, ...], think: bool | None, *,
        examples: bool = False, terse_tools: bool = False,
    ) -> Rendered:
        # Whether the prompt has worked examples and its tools tersely is the run's to
        # say (TurnInput): the generic format shows them as asked, a template with tool
        # syntax has neither. Else the tools are described in full up to a share of the context.
        chars = 0 if terse_tools else int(self.n_ctx * GENERIC_TOOLS_SHARE * GENERIC_TOOLS_CHARS_PER_TOKEN)
        return self._template.render(messages, tools, think=think, as_written=self._written.apply(messages),
                                     tools_chars=chars, examples=examples)

    def _grammar_parses(self, text: str) -> bool:
        """Whether llama.cpp takes the grammar `text`: a sampler built from one it refuses
        would be no sampler at all, and using it would crash the process."""
        import llama_cpp

        vocab = llama_cpp.llama_model_get_vocab(self._llm.model)
        sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode("utf-8"), b"root")
        if not sampler:
            return False
        llama_cpp.llama_sampler_free(sampler)
        return True

    async def count_tokens(self, turn: TurnInput) -> int:
        """The prompt's length in tokens as `generate` would send it (engine.CountsTokens):
        rendered and tokenised in a worker thread, beside any turn that runs (both only
        read the vocabulary)."""
        tools = self.described_tools(turn)

        def count() -> int:
            rendered = self._render(turn.messages, tools, turn.think, examples=turn.examples,
                                    terse_tools=turn.terse_tools)
            return len(self.tokenize(rendered.prompt))

        return await trio.to_thread.run_sync(count)

    def described_tools(self, turn: TurnInput) -> tuple[ToolSpec, ...]:
        """The tools the prompt describes. `tool_choice: "none"` leaves them out of a
        template with tool syntax; the generic format keeps them described (its prompt,
        and so its cache, stays that of the rounds before) and its grammar admits only
        a reply (a run's answering round, actors/runs/agent/run.py)."""
        if turn.tool_choice == "none" and self.tool_format != "generic":
            return ()
        return turn.tools

    def tokenize(self, prompt: str) -> list[int]:
        return self._llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    @property
    def grammars(self) -> GenericGrammars:
        """The grammars of generic-format answers (see actors/model/backends/generic_grammar.py)."""
        return self._grammars

    # ---- generation ----

    async def generate(self, turn: TurnInput, emit: Emit, abort: threading.Event) -> TurnResult:
        """Run one turn in a worker thread, emitting its pieces in order. Raises Aborted
        when `abort` goes up or emitting fails, ContextFull when the prompt leaves less
        than MIN_REPLY_TOKENS. Cancelled: the flag goes up, and this returns (raising
        the cancellation) once the thread has stopped at its next check."""
        tools = self.described_tools(turn)
        rendered = self._render(turn.messages, tools, turn.think, examples=turn.examples, terse_tools=turn.terse_tools)
        opened = rendered.thinking_open
        grammar = None
        if turn.answer_schema is not None:
            grammar = self._grammars.for_schema(turn.answer_schema)
        elif tools and turn.tool_choice == "none":
            grammar = self._grammars.for_schema(reply_schema(turn.reply_starts))  # generic: a reply, tools described
        elif tools and self.tool_format == "generic":
            grammar = self._grammars.get(tools, required=turn.tool_choice == "required",
                                         parallel=turn.parallel_calls, avoid=turn.avoid, names=turn.names,
                                         shapes=turn.shapes, banned=turn.banned)
        temperature = DEFAULT_TEMPERATURE if turn.temperature is None else turn.temperature
        parser = ToolCallParser(self.tool_format, thinking_open=opened) if tools else None
        pipe = PiecePipe(emit, abort)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(pipe.deliver)
            try:
                # The thread's outcome is kept, not raised here: an error leaving the
                # nursery's body would come out wrapped in an exception group. The
                # prompt is tokenised in the thread (ContextFull comes from there): it
                # takes time in proportion to the whole conversation, which the event
                # loop spends on HTTP and events meanwhile. The model's one thread runs
                # the turns one at a time (model_thread.py says why one).
                done = await self._thread.run(
                    outcome.capture, self._generate_sync, rendered.prompt, rendered.stops, turn.max_tokens,
                    temperature, pipe.send, abort, opened, grammar, parser, turn.cache_key,
                    TurnWatch(CLOSE if turn.watch_calls_closely else CONTENT) if turn.stop_repeats else None,
                    turn.repeat_penalty or 1.0,
                )
            finally:
                pipe.close_from_trio()
                # Touched memory for this conversation's save, ready before another's
                # turn parks it (prompt_cache.py says why), a stopped turn's too; the
                # result does not wait for it.
                self._thread.soon(self.prompt_cache.ready_spare)
        pipe.raise_failure()  # emitting failed (a stop): that is what ended the turn
        result, raw = done.unwrap()
        if not opened:
            # With the reasoning block opened by the prompt, the raw text does not
            # stand alone as an answer.
            self._written.remember(result, raw)
        return result

    def _fit(self, prompt: str, max_tokens: int | None) -> tuple[list[int], int]:
        """The prompt's tokens and the reply's token budget; ContextFull when the prompt
        leaves less than MIN_REPLY_TOKENS."""
        tokens = self.tokenize(prompt)
        room = self.n_ctx - len(tokens)
        if room < MIN_REPLY_TOKENS:
            raise ContextFull(
                f"The request needs {len(tokens)} tokens of a {self.n_ctx}-token context.",
                needed=len(tokens) + MIN_REPLY_TOKENS,
                available=self.n_ctx,
            )
        return tokens, min(room, max_tokens or DEFAULT_MAX_TOKENS)

    def _generate_sync(
        self,
        prompt: str,
        stops: list[str],
        max_tokens: int | None,
        temperature: float,
        send: Callable[[Piece], None],
        abort: threading.Event,
        opened: bool,
        grammar: LlamaGrammar | None = None,
        parser: ToolCallParser | None = None,
        cache_key: str | None = None,
        watch: TurnWatch | None = None,
        repeat_penalty: float = 1.0,
    ) -> tuple[TurnResult, str]:
        """In the worker thread: the turn's result, and the text the model wrote when
        it was parsed for tool calls ("" otherwise). `opened`: the prompt opened the
        reasoning block, so the answer starts inside it. `max_tokens` None: as many
        as DEFAULT_MAX_TOKENS and the context allow. `cache_key`: whose saved cache
        the context takes first (see actors/model/backends/prompt_cache.py). `watch`:
        fed the pieces, the generation ends where it loops (actors/model/backends/repeats.py)."""
        llm = self._llm
        tokens, budget = self._fit(prompt, max_tokens)
        wanted = np.asarray(tokens, dtype=llm.input_ids.dtype)
        self.prompt_cache.switch(cache_key, wanted)
        # What the KV cache holds already (llama.cpp keeps those) after the switch.
        common = common_prefix(llm.input_ids[: llm.n_tokens], wanted)
        prefill = len(tokens) - common if common < len(tokens) else 1
        self.last_prefill = prefill
        splitter = ThinkSplitter(start_in_reasoning=opened)
        text: list[str] = []
        reasoning: list[str] = []
        finish = "stop"
        produced = 0
        looped: list[str] = []

        def watched(piece: Piece) -> None:
            send(piece)
            if watch is not None and not looped and (unit := watch.feed(piece)) is not None:
                looped.append(unit)

        pieces = PieceMapper(watched)
        raw: list[str] = []
        repeated: str | None = None

        def take(piece_text: str) -> None:
            if parser is not None:
                raw.append(piece_text)
                pieces.events(parser.feed(piece_text))
                return
            for kind, part in splitter.feed(piece_text):
                (reasoning if kind == "reasoning" else text).append(part)
                watched(Piece(kind, part))

        with self._abort.lent(abort):
            try:
                if abort.is_set():
                    raise Aborted()
                if prefill > llm.n_batch:
                    _prefill_in_batches(llm, tokens, common, send, abort)
                stream = _completion_stream(llm, tokens, budget, temperature, stops, grammar, self.seed,
                                            repeat_penalty)
                try:
                    for chunk in stream:
                        if abort.is_set():
                            raise Aborted()
                        choice = chunk["choices"][0]
                        piece = choice.get("text") or ""
                        if piece:
                            produced += 1
                            take(piece)
                            if looped:
                                repeated = looped[0]
                                finish = "length"  # cut, as by the token limit: a call in it is not kept
                                break
                        reason = choice.get("finish_reason")
                        if reason:
                            finish = reason
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
        calls: tuple[CallOut, ...] = ()
        if parser is not None:
            res = parser.result
            text, reasoning = [res.text], [res.reasoning]
            calls = tuple(CallOut(c.id, c.name, c.arguments) for c in res.calls)
        result = TurnResult(
            text="".join(text),
            reasoning="".join(reasoning),
            tool_calls=calls,
            # A call cut by the token limit is not a finished call: the answer was cut.
            finish_reason="length" if finish == "length" else ("tool_calls" if calls else "stop"),
            prompt_tokens=len(tokens),
            prefill_tokens=prefill,
            completion_tokens=produced,
            repeated=repeated,
        )
        return result, "".join(raw)

    def _close_sync(self) -> None:
        """In the model's thread, after every call given before (a spare being readied
        among them): the saved caches go, then llama.cpp's model and context."""
        self.prompt_cache.clear()
        self._llm.close()

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await self._thread.run(self._close_sync)
            self._thread.close()


def file_template(source: str, eos: str, bos: str, model: str) -> ChatTemplate:
    """The model file's template; TurnFailed, saying how to give another, when it does not parse."""
    import jinja2

    try:
        return ChatTemplate(source, eos=eos, bos=bos, model=model)
    except jinja2.TemplateSyntaxError as exc:
        raise TurnFailed(f"{model}'s chat template does not parse ({exc}, line {exc.lineno}); give the model one "
                         "that does on the models page (PUT /api/model with chat_template).") from None


def person_template(source: str, eos: str, bos: str, model: str) -> ChatTemplate:
    """The person's template for `model`; TurnFailed, in plain words, when it does not
    parse or does not render even one message of the person's."""
    import jinja2

    try:
        template = ChatTemplate(source, eos=eos, bos=bos, model=model)
        template.render(({"role": "user", "content": "Hello."},))
    except jinja2.TemplateSyntaxError as exc:
        raise TurnFailed(f"The chat template given for {model} does not parse: {exc} (line {exc.lineno}).") from None
    except TurnFailed:
        raise TurnFailed(f"The chat template given for {model} renders no conversation, not even one message.") \
            from None
    return template


def gpu_offload_supported() -> bool:
    """Whether this build of llama.cpp can put layers on a GPU (CUDA, Metal, Vulkan, ...)."""
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def avoid_amx_repack() -> bool:
    """On a CPU with AMX (Intel Xeon Sapphire Rapids and later) llama.cpp repacks the
    weights into its AMX buffer type and, in the builds we meet, crashes the process
    (SIGSEGV in ggml_backend_amx_mul_mat) on the first token: ggml-org/llama.cpp#20824.
    There, every model llama-cpp-python loads afterwards in this process is loaded
    without the extra buffer types (the AMX one and the CPU repacking), which costs some
    speed and nothing else. True when the CPU has AMX (the guard is in place); idempotent."""
    import llama_cpp.llama_cpp as bindings

    if getattr(bindings.llama_model_default_params, "without_extra_buffers", False):
        return True
    if b"AMX_INT8 = 1" not in bindings.llama_print_system_info():
        return False
    original = bindings.llama_model_default_params

    def without_extra_buffers() -> Any:
        params = original()
        params.use_extra_bufts = False
        return params

    without_extra_buffers.without_extra_buffers = True  # type: ignore[attr-defined]
    # llama_cpp.Llama builds its parameters from this function at load and offers no
    # argument for the field, so the function is wrapped where Llama looks it up
    # (llama_internals.check_module checks that it still does).
    bindings.llama_model_default_params = without_extra_buffers
    return True


def ggml_backends() -> list[str]:
    """The compute backends this build of llama.cpp registered ("CPU", "CUDA", "Metal",
    "Vulkan", ...), as ggml names them; empty when its library cannot be asked (a build
    whose libggml is not beside libllama, or one too old to have the registry)."""
    import ctypes

    import llama_cpp

    folder = Path(llama_cpp.__file__).parent / "lib"
    found = sorted(folder.glob("libggml.so*")) + sorted(folder.glob("libggml.dylib")) + sorted(folder.glob("ggml.dll"))
    if not found:
        return []
    try:
        ggml = ctypes.CDLL(str(found[0]))  # already loaded with libllama: the same copy
        ggml.ggml_backend_reg_count.restype = ctypes.c_size_t
        ggml.ggml_backend_reg_get.restype = ctypes.c_void_p
        ggml.ggml_backend_reg_get.argtypes = [ctypes.c_size_t]
        ggml.ggml_backend_reg_name.restype = ctypes.c_char_p
        ggml.ggml_backend_reg_name.argtypes = [ctypes.c_void_p]
    except (OSError, AttributeError):
        return []
    names = (ggml.ggml_backend_reg_name(ggml.ggml_backend_reg_get(i)) for i in range(ggml.ggml_backend_reg_count()))
    return [name.decode("utf-8", errors="replace") for name in names if name]


def _prefill_in_batches(
    llm: Llama, tokens: list[int], common: int, send: Callable[[Piece], None], abort: threading.Event,
) -> None:
    """In the worker thread: the prompt's tokens from `common` (what the KV cache holds)
    to all but the last, decoded a batch at a time, with a "prefill" piece after each
    (a long conversation takes a small machine tens of seconds to read, and the person
    sees how far it is) and the stop looked at between batches. The completion then
    finds them in the cache and decodes only the last token, as llama-cpp-python does
    for any prefix it holds."""
    end = len(tokens) - 1
    total = len(tokens) - common
    llm.n_tokens = common  # eval() drops what the cache holds past this first
    for start in range(common, end, llm.n_batch):
        if abort.is_set():
            raise Aborted()
        stop = min(end, start + llm.n_batch)
        llm.eval(tokens[start:stop])
        # The last token is the completion's to decode, a moment's work: read, as said.
        send(Piece("prefill", done=total if stop == end else stop - common, total=total))


def _completion_stream(
    llm: Llama,
    tokens: list[int],
    max_tokens: int,
    temperature: float,
    stops: list[str],
    grammar: LlamaGrammar | None,
    seed: int | None = None,
    repeat_penalty: float = 1.0,
) -> Generator[CreateCompletionStreamResponse, None, None]:
    """llama.cpp's completion of `tokens`, chunk by chunk; closing it ends the generation."""
    out = llm.create_completion(
        prompt=tokens, max_tokens=max_tokens, temperature=temperature, stop=stops or None, stream=True,
        grammar=grammar, seed=seed, repeat_penalty=repeat_penalty,
    )
    # With stream=True it is a generator of chunks; its annotation covers both modes.
    return cast("Generator[CreateCompletionStreamResponse, None, None]", out)
