"""Each conversation's prompt cache on the local model, kept across other turns.

llama.cpp's context holds one KV cache: the tokens of the last turn. A turn of
another conversation overwrote it, and the first conversation's next turn prefilled
its whole prompt again. Here the cache of the conversation that holds the context is
saved when another conversation's turn takes the context (it is parked), and put back
when that conversation's turn comes again, from a store bounded in bytes that drops
the least recently used first.

Why saved and restored, not llama.cpp sequences in one context: llama-cpp-python's
`Llama` decodes into one sequence (0) and does its prefix matching and trimming on
that one list of tokens, so sequences would mean a decode and sampling loop of our own
(grammar, stop strings, streaming). And sequences share the context's cells: the
parked conversations would take room from the running turn (a context that holds them
is allocated whole, up front, whatever is parked), and llama.cpp attends over the
whole used range of cells, masked, so every token of the running turn would pay for
the parked ones. Saved state costs RAM only for what is kept, and the running turn
computes exactly as before.

Why `llama_state_seq_get_data`/`set_data` on sequence 0 and not `Llama.save_state()`:
save_state copies the whole context state three times, with a batch of logits (100 MB
for the bundled model): 270 ms to save and 550 ms to load 1,000 tokens, measured. The
sequence functions copy that sequence's KV cells only (23 KB a token for the bundled
model): about 2.5 ms each way for 1,000 tokens into memory already in use.

A switch costs one save (of the conversation leaving, when its turns changed the
cache since it was saved or restored) and one restore (of the conversation coming,
when its saved cache holds more of its prompt than the context does). A save copies
only the cells past the chunks saved before that are still valid (a conversation is
mostly appended to), through a second sequence of the same context (see
`with_scratch_sequence` and `kept_chunks`); a restore copies every chunk back. Turns
without a key (`/v1`) use the context as it is, as before, and keep nothing; a
conversation's turns in a row pay nothing. Everything here runs in the generating
thread, one turn at a time (the backend's limiter).

Writing a save into memory the process has not touched yet costs a page fault a page,
and measured here that cost varies between processes and moments, from 1.5 to 9 ms for
the bundled model's 117-token prompt (2.7 MB), where the copy itself takes 0.4 ms. A
park is on the path of the turn that takes the context: its first token waited for
those faults. So after each turn `ready_spare` puts in the pool a buffer, its pages
already touched, that the live conversation's next save fits: the faults are paid
after a turn, while the person reads, not before the next one's first token.
"""

from __future__ import annotations

import ctypes
import mmap
import time
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:  # importing llama_cpp loads llama.cpp, which waits until a model is loaded
    from llama_cpp import Llama

MIB = 1024 * 1024
DEFAULT_PROMPT_CACHE_BYTES = 1024 * MIB
# The sequence llama-cpp-python's Llama decodes into.
LIVE_SEQ = 0
# The sequence a save copies a conversation's newest cells through, and a restore its
# later chunks; empty between switches (see `with_scratch_sequence`).
SCRATCH_SEQ = 1
# Writing into fresh memory costs a page fault a page (about 0.5 ms a MB measured on a
# shared virtual machine, five times the copy itself), so the buffers of chunks no
# longer kept are reused for new ones, up to this many bytes (within the limit).
POOL_BYTES = 64 * MIB
# A buffer is reused for a chunk at most this many times smaller than it.
SHRINK_FACTOR = 2
# Without the scratch sequence each save copies the whole cache again: its buffer is
# allocated with room to grow by half again, so the next saves reuse it.
GROWTH = 1.5

Tokens = npt.NDArray[np.intc]


def common_prefix(held: Tokens, tokens: Tokens) -> int:
    """How many leading tokens `held` and `tokens` share, in one vectorised comparison
    (a Python loop over a long conversation took milliseconds, holding the GIL)."""
    n = min(held.shape[0], tokens.shape[0])
    same = held[:n] == tokens[:n]
    return n if bool(same.all()) else int(np.argmin(same))


def kept_chunks(ends: Sequence[int], valid: int, n: int) -> int:
    """How many of a conversation's saved chunks a save that brings it to `n` tokens
    keeps (the rest is saved again as one chunk). `ends`: where each chunk ends, in
    order (each starts where the one before ends, the first at 0); `valid`: how many
    leading tokens the saved ones and the context still share. Kept: the leading
    chunks wholly within `valid` that are each larger than everything after them. So a
    conversation has at most log2(n + 1) chunks (a restore pays about 0.25 ms a chunk),
    and each token is copied again about log2(n) times over its life, as a binary
    counter's carries go."""
    k = 0
    begin = 0
    while k < len(ends) and ends[k] <= valid and ends[k] - begin > n - ends[k]:
        begin = ends[k]
        k += 1
    return k


@attrs.frozen
class Switch:
    """What one switch between conversations did and cost (`PromptCache.switch`)."""

    saved_bytes: int = 0
    save_s: float = 0.0
    restored_tokens: int = 0
    restored_bytes: int = 0
    restored_chunks: int = 0
    restore_s: float = 0.0
    evicted: tuple[str, ...] = ()
    # The generating thread's CPU time for the switch (page faults included): the wall
    # time less what the thread spent waiting for a core other processes held.
    cpu_s: float = 0.0

    @property
    def seconds(self) -> float:
        return self.save_s + self.restore_s


@attrs.frozen
class PromptCacheStats:
    limit: int
    used: int
    entries: tuple[tuple[str, int], ...]  # (key, bytes), least recently used first
    chunks: tuple[int, ...]  # each entry's chunks, in the same order
    live: str | None  # whose cache the context holds
    saves: int
    restores: int
    evictions: int


@attrs.define
class _Chunk:
    end: int  # the position after its last cell; it starts where the chunk before ends
    state: npt.NDArray[np.uint8]  # llama_state_seq_get_data's bytes, in its first `size`
    size: int


@attrs.define
class _Entry:
    tokens: Tokens  # the tokens whose KV cells the chunks hold, from position 0
    chunks: list[_Chunk]

    @property
    def nbytes(self) -> int:
        return int(self.tokens.nbytes + sum(c.state.nbytes for c in self.chunks))


def _supported() -> bool:
    import llama_cpp

    return all(
        hasattr(llama_cpp, name)
        for name in ("llama_state_seq_get_size", "llama_state_seq_get_data", "llama_state_seq_set_data",
                     "llama_get_memory", "llama_memory_seq_rm", "llama_memory_seq_cp",
                     "llama_memory_seq_pos_max", "llama_n_seq_max")
    )


def with_scratch_sequence(llm: Llama) -> bool:
    """Give `llm` a context like its own with room for a second sequence, through which
    a save copies only a conversation's newest cells (`llama_memory_seq_cp` shares
    cells, it copies no data). The cells stay one pool (kv_unified) with the same size,
    so what a turn computes, and at what cost, is unchanged. False, with `llm` as it
    was, where this llama-cpp-python's context parameters lack what it needs."""
    from llama_cpp import _internals

    params = llm.context_params
    if not (_supported() and hasattr(params, "kv_unified") and hasattr(params, "n_seq_max")):
        return False
    params.n_seq_max = 2
    params.kv_unified = True
    # Llama's private context and model (llama_internals.py checks them at load).
    old: Any = llm._ctx  # its close() has no annotations
    old.close()  # its KV cache goes before the new one is allocated
    llm._ctx = _internals.LlamaContext(model=llm._model, params=params, verbose=llm.verbose)
    return True


def _new_buffer(size: int) -> npt.NDArray[np.uint8]:
    """Fresh memory for a chunk, mapped without the huge-page advice numpy gives large
    arrays: where the kernel compacts memory on a fault for advised huge pages
    (transparent_hugepage/defrag = madvise), writing 8 MB into np.empty's memory took
    17 ms against 4.4 ms for this, measured."""
    return np.frombuffer(mmap.mmap(-1, size), dtype=np.uint8)


def _bytes(buf: npt.NDArray[np.uint8]) -> ctypes._Pointer[ctypes.c_uint8]:
    return buf.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))


class PromptCache:
    """See the module docstring. `limit` is in bytes; 0 keeps nothing (the context's
    cache then goes to whichever turn comes, as before). Changing `limit` takes effect
    at the next switch. With a llama-cpp-python too old for the sequence functions,
    the limit is 0; with a context of one sequence (see `with_scratch_sequence`), each
    save copies the whole cache."""

    def __init__(self, llm: Llama, limit: int) -> None:
        import llama_cpp

        self._llm = llm
        supported = _supported()
        self.limit = max(0, limit) if supported else 0
        self._scratch = supported and llama_cpp.llama_n_seq_max(llm.ctx) > SCRATCH_SEQ
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._pool: list[npt.NDArray[np.uint8]] = []  # buffers no chunk holds, oldest first
        self._live: str | None = None
        self.last_switch: Switch | None = None  # the last turn's, None when it took no switch
        self._saves = 0
        self._restores = 0
        self._evictions = 0
        self._stats = self._snapshot()

    @property
    def live(self) -> str | None:
        return self._live

    def statistics(self) -> PromptCacheStats:
        """As the last switch left the store (taken in the generating thread, so the
        caller's thread never reads the store while a switch changes it)."""
        return self._stats

    def _snapshot(self) -> PromptCacheStats:
        entries = tuple((k, e.nbytes) for k, e in self._entries.items())
        return PromptCacheStats(
            self.limit, self._used(), entries, tuple(len(e.chunks) for e in self._entries.values()),
            self._live, self._saves, self._restores, self._evictions,
        )

    def switch(self, key: str | None, tokens: Tokens) -> Switch | None:
        """Before a turn of `key` (None: a turn that keeps no cache) decodes `tokens`:
        park the conversation whose cache the context holds, and restore `key`'s cache
        when it holds more of `tokens` than the context does. None when the context
        stays with the same conversation. In the generating thread; not interrupted by
        a stop (it takes milliseconds)."""
        self.last_switch = None
        if key == self._live:
            return None
        t0 = time.perf_counter()
        cpu0 = time.thread_time()
        saved = self._park()
        t1 = time.perf_counter()
        restored = 0
        restored_bytes = 0
        chunks = 0
        entry = self._entries.get(key) if key is not None else None
        if key is not None and entry is not None:
            self._entries.move_to_end(key)
            if common_prefix(entry.tokens, tokens) > common_prefix(self._held(), tokens) and self._restore(key, entry):
                restored, chunks = int(entry.tokens.shape[0]), len(entry.chunks)
                restored_bytes = sum(c.size for c in entry.chunks)
        t2 = time.perf_counter()
        self._live = key
        sw = Switch(saved, t1 - t0, restored, restored_bytes, chunks, t2 - t1, self._evict(), time.thread_time() - cpu0)
        self.last_switch = sw
        self._stats = self._snapshot()
        return sw

    def clear(self) -> None:
        """Drop every saved cache (the model is being let go)."""
        self._entries.clear()
        self._pool.clear()
        self._live = None
        self._stats = self._snapshot()

    # ---- in the generating thread ----

    def _held(self) -> Tokens:
        """The tokens whose KV cells the context holds, as Llama counts them."""
        llm = self._llm
        return llm.input_ids[: llm.n_tokens]

    def _park(self) -> int:
        """Save the live conversation's cache, its cells past the chunks still valid,
        unless it is unchanged since it was saved or restored. The bytes copied."""
        key = self._live
        if key is None or self.limit == 0:
            return 0
        import llama_cpp

        llm = self._llm
        mem = llama_cpp.llama_get_memory(llm.ctx)
        n = llm.n_tokens
        # Cells past what Llama counts (a decode a stop cut short) are not this
        # conversation's tokens: they go before anything is kept.
        llama_cpp.llama_memory_seq_rm(mem, LIVE_SEQ, n, -1)
        entry = self._entries.get(key)
        held = llm.input_ids[:n]
        if self._unchanged(entry, held):
            return 0
        if n == 0 or llama_cpp.llama_memory_seq_pos_max(mem, LIVE_SEQ) + 1 != n:
            self._drop(key)  # nothing held, or not what Llama counts: nothing worth keeping
            return 0
        old = entry.chunks if entry is not None else []
        keep = self._kept(entry, held)
        chunks = old[:keep]
        if entry is not None:
            entry.chunks = chunks  # so that a drop below gives back only these
        self._release(old[keep:])
        start = chunks[-1].end if chunks else 0
        budget = self.limit - held.nbytes - sum(c.state.nbytes for c in chunks)
        chunk = None
        if start < n:
            chunk = self._save(start, n, budget)
            if chunk is None:
                self._drop(key)  # over the limit alone, or llama.cpp refused
                return 0
            chunks.append(chunk)
        self._entries[key] = _Entry(held.copy(), chunks)
        self._entries.move_to_end(key)
        self._saves += 1
        return chunk.size if chunk is not None else 0

    @staticmethod
    def _unchanged(entry: _Entry | None, held: Tokens) -> bool:
        """Whether `entry` holds exactly `held`: a park then saves nothing."""
        return entry is not None and entry.tokens.shape[0] == held.shape[0] and bool(np.array_equal(entry.tokens, held))

    def _kept(self, entry: _Entry | None, held: Tokens) -> int:
        """How many of `entry`'s chunks a save of `held` keeps (see `kept_chunks`)."""
        if entry is None or not self._scratch:
            return 0
        return kept_chunks([c.end for c in entry.chunks], common_prefix(entry.tokens, held), held.shape[0])

    def ready_spare(self) -> int:
        """After a turn, in the generating thread: make sure the pool holds a buffer,
        its pages already touched, that the live conversation's next save fits (see
        the module docstring), with room for it to grow by half. Not past POOL_BYTES,
        nor past the limit: a spare never pushes a conversation's cache out. The bytes
        touched (0: one was there, or none is needed)."""
        key = self._live
        if key is None or self.limit == 0:
            return 0
        import llama_cpp

        llm = self._llm
        n = llm.n_tokens
        held = llm.input_ids[:n]
        entry = self._entries.get(key)
        if n == 0 or self._unchanged(entry, held):
            return 0
        keep = self._kept(entry, held)
        start = entry.chunks[keep - 1].end if entry is not None and keep else 0
        ctx = llm.ctx
        if start > 0:
            mem = llama_cpp.llama_get_memory(ctx)
            llama_cpp.llama_memory_seq_cp(mem, LIVE_SEQ, SCRATCH_SEQ, start, n)
            try:
                size = int(llama_cpp.llama_state_seq_get_size(ctx, SCRATCH_SEQ))
            finally:
                llama_cpp.llama_memory_seq_rm(mem, SCRATCH_SEQ, -1, -1)
        else:
            size = int(llama_cpp.llama_state_seq_get_size(ctx, LIVE_SEQ))
        if size == 0 or any(size <= b.nbytes <= size * SHRINK_FACTOR for b in self._pool):
            return 0
        room = int(size * GROWTH)
        if room > POOL_BYTES or self._used() + room > self.limit:
            return 0
        buf = _new_buffer(room)
        buf.fill(0)  # the page faults, here rather than in the next park
        self._release([_Chunk(0, buf, 0)])
        self._stats = self._snapshot()
        return room

    def _save(self, start: int, end: int, budget: int) -> _Chunk | None:
        """The live cells from `start` to `end` (all it holds past `start`), copied into
        a buffer of the pool when one fits, else a new one; None past `budget` bytes or
        on failure."""
        import llama_cpp

        ctx = self._llm.ctx
        mem = llama_cpp.llama_get_memory(ctx)
        seq = LIVE_SEQ
        if start > 0:
            llama_cpp.llama_memory_seq_cp(mem, LIVE_SEQ, SCRATCH_SEQ, start, -1)
            seq = SCRATCH_SEQ
        try:
            size = int(llama_cpp.llama_state_seq_get_size(ctx, seq))
            if size > budget:
                return None
            buf = self._buffer(size, size if self._scratch else min(int(size * GROWTH), budget))
            if int(llama_cpp.llama_state_seq_get_data(ctx, _bytes(buf), size, seq)) != size:
                self._pool.append(buf)
                return None
            return _Chunk(end, buf, size)
        finally:
            if seq == SCRATCH_SEQ:
                llama_cpp.llama_memory_seq_rm(mem, SCRATCH_SEQ, -1, -1)

    def _restore(self, key: str, entry: _Entry) -> bool:
        """Put `entry`'s cells in the context in place of what it holds: the first chunk
        into the live sequence, each other through the scratch one. On failure the
        context holds nothing (the next turn prefills whole) and the entry goes."""
        import llama_cpp

        llm = self._llm
        ctx = llm.ctx
        mem = llama_cpp.llama_get_memory(ctx)
        llama_cpp.llama_memory_seq_rm(mem, LIVE_SEQ, -1, -1)
        llm.n_tokens = 0
        n = int(entry.tokens.shape[0])
        ok = True
        for i, chunk in enumerate(entry.chunks):
            seq = LIVE_SEQ if i == 0 else SCRATCH_SEQ
            ok = int(llama_cpp.llama_state_seq_set_data(ctx, _bytes(chunk.state), chunk.size, seq)) == chunk.size
            if seq == SCRATCH_SEQ:
                if ok:
                    llama_cpp.llama_memory_seq_cp(mem, SCRATCH_SEQ, LIVE_SEQ, -1, -1)
                llama_cpp.llama_memory_seq_rm(mem, SCRATCH_SEQ, -1, -1)
            if not ok:
                break
        if not ok or llama_cpp.llama_memory_seq_pos_max(mem, LIVE_SEQ) + 1 != n:
            llama_cpp.llama_memory_seq_rm(mem, LIVE_SEQ, -1, -1)
            self._drop(key)
            return False
        llm.input_ids[:n] = entry.tokens
        llm.n_tokens = n
        # The logits are not restored: a prompt the cache holds whole decodes its last
        # token again (Llama does so when this is set).
        llm._requires_eval = True  # private, checked at load (llama_internals.py)
        self._restores += 1
        return True

    def _buffer(self, size: int, room: int) -> npt.NDArray[np.uint8]:
        """A buffer for `size` bytes: the smallest of the pool that fits, else a new one
        of `room` bytes (at least `size`)."""
        fits = [i for i, b in enumerate(self._pool) if size <= b.nbytes <= size * SHRINK_FACTOR]
        if fits:
            return self._pool.pop(min(fits, key=lambda i: self._pool[i].nbytes))
        return _new_buffer(max(size, room))

    def _release(self, chunks: list[_Chunk]) -> None:
        """Give the buffers of `chunks`, which no entry holds any more, to the pool;
        the oldest go past POOL_BYTES."""
        self._pool.extend(c.state for c in chunks)
        pooled = sum(b.nbytes for b in self._pool)
        while pooled > POOL_BYTES:
            pooled -= self._pool.pop(0).nbytes

    def _used(self) -> int:
        return sum(e.nbytes for e in self._entries.values()) + sum(b.nbytes for b in self._pool)

    def _evict(self) -> tuple[str, ...]:
        """Drop the pool's buffers, then the least recently used conversations, until
        the store is within its limit."""
        used = self._used()
        while used > self.limit and self._pool:
            used -= self._pool.pop(0).nbytes
        gone: list[str] = []
        while used > self.limit and self._entries:
            key, entry = self._entries.popitem(last=False)
            used -= entry.nbytes
            gone.append(key)
        self._evictions += len(gone)
        return tuple(gone)

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._release(entry.chunks)
