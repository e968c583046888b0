"""First token: a message's POST to its first `delta` at an SSE client, over a bare
llama-cpp-python loop's first token on the same rendered prompt, model and cache state.

The daemon runs as a subprocess with the bundled GGUF, started through a short
bootstrap (BOOTSTRAP) that sets the local backend's temperature to 0 and its max tokens
to --tokens, keeps the messages of each turn (so the bare loop renders exactly the
prompt the daemon sent, with the product's own LocalBackend.render and tokenize), and
stamps the way from the POST to the first delta with `time.perf_counter()` (the
system's monotonic clock, so the daemon's stamps and the bench's compare). The
conversation has no workspace, so no tool is offered and the answer is plain text (as
the bare loop's), but the run's `prepare` runs as it ships. The daemon's first token
runs from just before the POST's bytes are written (on a connection opened before)
to the read that completes the first `delta` frame at a raw SSE client; the bare
loop's from the rendered prompt in hand (tokenize, `create_completion(stream=True)`)
to its first non-empty chunk.

Three cache states, each explicit and the same on both sides:

- cold: the KV cache holds an unrelated prompt (POLLUTE_*, sent to the daemon as a
  /v1 request of one token, and evaluated the same way by the bare loop), so the
  message's whole prompt is prefilled but for the template's first few tokens, which
  both share with the unrelated one (the figure "tokens cached" says how many);
- warm: the cache holds this very prompt (the cold round's, in another conversation),
  so both evaluate only its last token again;
- system cached: a new conversation with another message after that: the system
  prompt is cached, the message is prefilled (the usual case of a new conversation).

The ratio (median over median) is judged for cold and system cached. Warm is judged
by its difference instead (issue 34's target: at most WARM_OVER_MS over bare, the
median of the repetitions' differences): its bare first token is about 10 ms here, so
a ratio of 1.1 would leave 1 ms for HTTP in, the actors and SSE out.

A repetition runs each state on the daemon, then on the bare loop, one at a time (the
machine has 2 cores); one during which other processes used more than FOREIGN_LIMIT
cores is shown but not counted, and another is run, within --budget seconds.

The stamps give the breakdown: each point's median time from the POST, in order, and
what ran beside the way (the user item's durable save and its fsyncs); llama-cpp-python's
part split on both sides (Python before the first eval, llama_decode, Python after);
and the time the trio thread spent on each task meanwhile (a trio Instrument). --no-stamps
runs the daemon without them (to show what they cost); --variant changes the daemon in
one respect, for diagnosis.

    .venv/bin/python ops/bench/first_token.py [--reps 15] [--tokens 8] [--budget 240] [--no-stamps] [--variant V]
    [--quick]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    CpuWatch,
    DaemonProcess,
    Report,
    SSEClient,
    bundled_model,
    exit_on_sigterm,
    median,
    parse_args,
    percentile,
    split_address,
)
from harness_overhead import CTX_SIZE, load_bare  # noqa: E402  (the same bare Llama as that bench's)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from actors.model.backends.local import default_batch_threads, default_threads

TARGET_RATIO = 1.1
# Warm: the daemon's own milliseconds over bare, at most.
WARM_OVER_MS = 5.0
USER_TEXT = "Write a short poem about a lighthouse keeper and the sea."
OTHER_TEXT = "Name three rivers in Europe and say where each one reaches the sea."
# What the cache holds before a cold repetition: shares nothing with the message's
# prompt but the chat template's opening tokens.
POLLUTE_SYSTEM = "Zebras graze at dawn; quantum kettles whistle in the archive of lost umbrellas."
POLLUTE_USER = "List seven vegetables, one per line, in alphabetical order."
# (state, message, whether the cache is first given the unrelated prompt), in the order
# they run: the warm one follows the cold one's message, and "system cached" (a new
# conversation after another) a different message after the warm one.
STATES = (("cold", USER_TEXT, True), ("warm", USER_TEXT, False), ("system cached", OTHER_TEXT, False))
# The states whose ratio is judged (see the README on warm).
TARGETED = ("cold", "system cached")
# A repetition during which other processes used more than this many cores is not counted.
FOREIGN_LIMIT = 0.15
# Daemon variants for diagnosis (--variant); the target is judged on "as-shipped" only.
VARIANTS = ("as-shipped", "store-off", "no-fsync", "switch-interval=0.0005", "one-sequence", "index-off", "omp-passive")
SETTLE_S = 0.3  # between a conversation's creation (and the last round's final save) and the POST

BOOTSTRAP = r"""
import inspect, json, os, signal, sys, time
import actors.model.backends.local as local
local.DEFAULT_TEMPERATURE = 0.0
local.DEFAULT_MAX_TOKENS = int(sys.argv[1])
STAMPS_ON = sys.argv[2] == "stamps"
OUT = os.environ["BENCH_DUMP_FILE"]
clock = time.perf_counter
TURNS, S, SAVES, FSYNCS, STEPS, EVALS = [], {}, [], [], [], []
WINDOW = [False]  # from a message's request to its first delta's SSE frame

def dump(_signum, _frame):
    data = {"turns": [list(m) for m in TURNS], "stamps": dict(S), "saves": list(SAVES), "fsyncs": list(FSYNCS),
            "steps": list(STEPS), "evals": list(EVALS)}
    for kept in (TURNS, SAVES, FSYNCS, STEPS, EVALS):
        kept.clear()
    with open(OUT + ".tmp", "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    os.replace(OUT + ".tmp", OUT)

signal.signal(signal.SIGUSR1, dump)

def st(name):
    S.setdefault(name, clock())

def wrap(owner, attr, before=None, after=None, when=None):
    orig = getattr(owner, attr)
    if inspect.iscoroutinefunction(orig):
        async def wrapped(*a, **k):
            ok = when is None or when(*a, **k)
            if ok and before: st(before)
            r = await orig(*a, **k)
            if ok and after: st(after)
            return r
    else:
        def wrapped(*a, **k):
            ok = when is None or when(*a, **k)
            if ok and before: st(before)
            r = orig(*a, **k)
            if ok and after: st(after)
            return r
    setattr(owner, attr, wrapped)

_generate = local.LocalBackend.generate
async def generate(self, turn, emit, abort):
    TURNS.append(turn.messages)  # the bare loop renders the same prompt
    if STAMPS_ON: st("generate")
    return await _generate(self, turn, emit, abort)
local.LocalBackend.generate = generate

if STAMPS_ON:
    import quart_trio
    import actors.runs.agent.run as agent_run, actors.bus as bus, actors.conversations.actor as conversation
    import actors.runs.agent.round_stream as round_stream
    import actors.model.engine as engine, actors.model.backends.piece_pipe as piece_pipe
    import bmoe_daemon.routes.conversations as routes, bmoe_daemon.routes.events as events
    import bmoe_daemon.store as store

    import trio, llama_cpp

    class TaskSteps(trio.abc.Instrument):
        # What the trio thread ran during the window: each task step's name and times.
        def before_task_step(self, task):
            self.t = clock()
        def after_task_step(self, task):
            if WINDOW[0]:
                STEPS.append((task.name, self.t, clock()))

    _eval = llama_cpp.Llama.eval
    def llama_eval(self, tokens):
        t = clock()
        try:
            return _eval(self, tokens)
        finally:
            if WINDOW[0]:
                EVALS.append((t, clock()))
    llama_cpp.Llama.eval = llama_eval

    _handle_request = quart_trio.QuartTrio.handle_request
    instrumented = []
    async def handle_request(self, request):
        if not instrumented:
            trio.lowlevel.add_instrument(TaskSteps())
            instrumented.append(True)
        if request.method == "POST" and request.path.endswith("/messages"):
            S.clear()  # a new message: its stamps start here
            WINDOW[0] = True
            st("quart")
        return await _handle_request(self, request)
    quart_trio.QuartTrio.handle_request = handle_request
    wrap(routes, "_conversation", "route")
    wrap(routes, "_check_send", "body parsed")
    wrap(conversation.Conversation, "request", "mailbox put")
    wrap(conversation.Conversation, "_start", "mailbox taken", "user item in, run spawned")
    wrap(conversation.Conversation, "send_message", None, "reply to the route")
    wrap(agent_run.AgentRun, "loop", "run task started")
    wrap(agent_run.AgentRun, "prepare", None, "prepared (system prompt, tools)")
    wrap(engine.Engine, "turn", "history built, turn queued")
    wrap(engine.Engine, "_serve", "turn line took it")
    wrap(local.LocalBackend, "_render", None, "chat template rendered")
    wrap(local.LocalBackend, "tokenize", None, "tokenised")
    wrap(local.LocalBackend, "_generate_sync", "worker thread started")
    import actors.model.backends.prompt_cache as prompt_cache
    wrap(prompt_cache.PromptCache, "switch", "prompt cache switch began", "prompt cache switched")
    _stream = local._completion_stream
    def completion_stream(*a, **k):
        st("llama.cpp called")
        gen = _stream(*a, **k)
        def stamped():
            first = True
            for chunk in gen:
                if first:
                    first = False
                    st("first chunk from llama.cpp")
                yield chunk
        return stamped()
    local._completion_stream = completion_stream
    wrap(piece_pipe.PiecePipe, "send", "piece sent by the thread")
    wrap(piece_pipe.PiecePipe, "_put", "piece queued on the trio side")
    wrap(round_stream.RoundStream, "on_piece", "run got the piece")
    wrap(bus.EventBus, "publish", "delta published", when=lambda self, name, *a, **k: name == "delta")
    _frame = events.sse_frame
    def sse_frame(event):
        if event.name == "delta":
            st("SSE frame written")
            WINDOW[0] = False
        return _frame(event)
    events.sse_frame = sse_frame
    _save = store.Store.save_conversation
    async def save_conversation(self, record, *, durable=True):
        t = clock()
        try:
            return await _save(self, record, durable=durable)
        finally:
            SAVES.append((t, clock(), durable, len(record.items)))
    store.Store.save_conversation = save_conversation
    _fsync = os.fsync
    def fsync(fd):
        t = clock()
        try:
            return _fsync(fd)
        finally:
            FSYNCS.append((t, clock()))
    os.fsync = fsync

VARIANT = sys.argv[3]
if VARIANT == "store-off":
    import bmoe_daemon.store as store
    async def no_save(self, record, *, durable=True):
        return None
    store.Store.save_conversation = no_save
elif VARIANT == "no-fsync":
    os.fsync = lambda fd: None
elif VARIANT.startswith("switch-interval="):
    sys.setswitchinterval(float(VARIANT.split("=", 1)[1]))
elif VARIANT == "one-sequence":  # the context without the prompt cache's scratch sequence
    local.with_scratch_sequence = lambda llm: False
elif VARIANT == "index-off":  # saves not given to the search index
    import bmoe_daemon.indexer as indexer
    indexer.Indexer.saved = lambda self, record, stamp: None
elif VARIANT == "omp-passive":  # OpenMP's idle threads sleep at once instead of spinning
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
elif VARIANT != "as-shipped":
    raise SystemExit(f"unknown variant {VARIANT}")

from bmoe_daemon.cli import main
sys.exit(main(sys.argv[4:]))
"""

# The daemon's stamps in the order of the way; the bench's own come first and last.
STEPS = [
    "quart",
    "route",
    "body parsed",
    "mailbox put",
    "mailbox taken",
    "user item in, run spawned",
    "reply to the route",
    "run task started",
    "prepared (system prompt, tools)",
    "history built, turn queued",
    "turn line took it",
    "generate",
    "chat template rendered",
    "tokenised",
    "worker thread started",
    "prompt cache switch began",
    "prompt cache switched",
    "llama.cpp called",
    "first chunk from llama.cpp",
    "piece sent by the thread",
    "piece queued on the trio side",
    "run got the piece",
    "delta published",
    "SSE frame written",
]


# ---- the daemon side ----


class DaemonSide:
    def __init__(self, daemon: DaemonProcess, dump_file: Path) -> None:
        self.daemon = daemon
        self.dump_file = dump_file
        self.host, self.port = split_address(daemon.address or "")

    def dump(self) -> dict[str, Any]:
        """What the bootstrap noted since the last dump (it writes it on SIGUSR1)."""
        self.dump_file.unlink(missing_ok=True)
        os.kill(self.daemon.pid, signal.SIGUSR1)
        deadline = time.perf_counter() + 10
        while not self.dump_file.exists():
            if time.perf_counter() > deadline:
                raise TimeoutError("the daemon wrote no dump")
            time.sleep(0.005)
        data: dict[str, Any] = json.loads(self.dump_file.read_text(encoding="utf-8"))
        return data

    async def pollute(self) -> None:
        """A /v1 turn of one token on an unrelated prompt: the KV cache then holds it."""
        async with httpx.AsyncClient(base_url=self.daemon.address or "", timeout=60) as http:
            r = await http.post(
                "/v1/chat/completions",
                json={
                    "messages": [
                        {"role": "system", "content": POLLUTE_SYSTEM},
                        {"role": "user", "content": POLLUTE_USER},
                    ],
                    "max_tokens": 1,
                    "temperature": 0,
                },
            )
            r.raise_for_status()

    async def round(self, text: str, limit_s: float) -> dict[str, Any]:
        """A new conversation, one message: POST written → first delta read."""
        client = SSEClient(self.host, self.port)
        conv: list[str] = []
        first: list[tuple[float, str]] = []
        seen: list[tuple[str, Any]] = []
        running, done = trio.Event(), trio.Event()

        def on_event(t: float, name: str, data: str, _id: str) -> None:
            if not conv:
                return
            d = json.loads(data)
            if d.get("conversation") == conv[0] or d.get("id") == conv[0]:
                seen.append((name, d.get("state") or d.get("text") or (d.get("item") or {}).get("kind")))
            if name == "delta" and d.get("conversation") == conv[0] and d.get("text") and not first:
                first.append((t, d["text"]))
            elif name == "conversation" and d.get("id") == conv[0]:
                # Its creation says idle too: the round is done at the idle after running.
                if d.get("state") == "running":
                    running.set()
                elif d.get("state") in ("idle", "error") and running.is_set():
                    done.set()

        status = b""
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client.run, on_event)
            with trio.fail_after(10):
                await client.connected.wait()
            async with httpx.AsyncClient(base_url=self.daemon.address or "", timeout=30) as http:
                r = await http.post("/api/conversations", json={})
                r.raise_for_status()
                conv.append(r.json()["id"])
            body = json.dumps({"text": text}).encode()
            request = (
                f"POST /api/conversations/{conv[0]}/messages HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode() + body
            stream = await trio.open_tcp_stream(self.host, self.port)
            async with stream:
                await trio.sleep(SETTLE_S)  # the creation's save and the last round's are done
                t0 = time.perf_counter()
                await stream.send_all(request)
                with trio.move_on_after(limit_s):
                    status = await read_response(stream)
                    await done.wait()
            nursery.cancel_scope.cancel()
        if not status.startswith(b"HTTP/1.1 202"):
            raise RuntimeError(f"the message was not taken: {status[:200]!r}")
        timed_out = not done.is_set() or not first
        if timed_out:
            print(f"   (round without a first delta: ended {done.is_set()}, events {seen})", flush=True)
        t1, piece = first[0] if first else (None, "")
        return {"t0": t0, "t1": t1, "text": piece, "timed_out": timed_out}


async def read_response(stream: trio.SocketStream) -> bytes:
    """One HTTP/1.1 response with a Content-Length, whole."""
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = await stream.receive_some(65536)
        if not chunk:
            raise ConnectionError("the daemon closed the connection before answering")
        raw += chunk
    head, _, body = raw.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")), 0
    )
    while len(body) < length and (chunk := await stream.receive_some(65536)):
        body += chunk
    return head + b"\r\n\r\n" + body


# ---- the bare side ----


class BareSide:
    """The bare loop, given the prompt as the daemon rendered it."""

    def __init__(self, llm: Any) -> None:
        from actors.model.backends.local import LocalBackend

        self.llm = llm
        # The product's render and tokenize, without the abort callback a bare loop has not.
        self.shell = LocalBackend(llm, Path(llm.model_path), abort_callback=False)
        self.evals: list[tuple[float, float]] = []
        eval_ = llm.eval

        def timed_eval(tokens: Any) -> None:  # the daemon's bootstrap times its evals the same way
            t = time.perf_counter()
            try:
                eval_(tokens)
            finally:
                self.evals.append((t, time.perf_counter()))

        llm.eval = timed_eval

    def render(self, messages: list[dict[str, Any]]) -> tuple[str, list[str]]:
        return self.shell.render(tuple(messages))

    def pollute(self, prompt: str, stops: list[str]) -> None:
        tokens = self.shell.tokenize(prompt)
        for _ in self.llm.create_completion(prompt=tokens, max_tokens=1, temperature=0.0, stop=stops, stream=True):
            pass

    def round(self, prompt: str, stops: list[str], max_tokens: int) -> dict[str, Any]:
        self.evals.clear()
        t0 = time.perf_counter()
        tokens = self.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)
        t_tok = time.perf_counter()
        t1, text = None, ""
        for chunk in self.llm.create_completion(
            prompt=tokens, max_tokens=max_tokens, temperature=0.0, stop=stops or None, stream=True
        ):
            piece = chunk["choices"][0].get("text") or ""
            if piece and t1 is None:
                t1, text = time.perf_counter(), piece
        evals = [e for e in self.evals if t1 is not None and e[1] <= t1]
        return {"t0": t0, "t_tok": t_tok, "t1": t1, "text": text, "timed_out": t1 is None, "evals": evals}


def llama_split(called: float, first: float, evals: list[tuple[float, float]]) -> tuple[float, float, float]:
    """llama-cpp-python's way to its first chunk in ms: Python before the first eval, the
    evals (llama_decode, without the GIL), and Python after the last one (sampling, text)."""
    evals = [e for e in evals if called <= e[0] and e[1] <= first]
    if not evals:
        return math.nan, math.nan, math.nan
    inside = sum(e - s for s, e in evals)
    return (evals[0][0] - called) * 1000, inside * 1000, (first - evals[-1][1]) * 1000


def trio_busy(row: dict[str, Any], start: float, end: float) -> dict[str, float]:
    """Milliseconds the trio thread spent running each task between `start` and `end`."""
    out: dict[str, float] = {}
    for name, s, e in row["steps"]:
        if s < end and e > start:
            short = name.rsplit(".", 2)[-2:]
            key = ".".join(short)
            out[key] = out.get(key, 0.0) + (min(e, end) - max(s, start)) * 1000
    return out


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# ---- the breakdown ----


def offsets(row: dict[str, Any]) -> dict[str, float]:
    """Milliseconds from the POST to each point of the way that was stamped."""
    out = {name: (t - row["t0"]) * 1000 for name, t in row["stamps"].items() if name in STEPS}
    out["delta read at the SSE client (bench)"] = (row["t1"] - row["t0"]) * 1000
    # What ran beside the way: the first durable save that began after the POST, and its fsyncs.
    save = next(((s, e) for s, e, durable, _n in row["saves"] if durable and s > row["t0"]), None)
    if save is not None:
        out["(beside) durable save began"] = (save[0] - row["t0"]) * 1000
        out["(beside) durable save ended"] = (save[1] - row["t0"]) * 1000
        fsyncs = [(s, e) for s, e in row["fsyncs"] if save[0] <= s <= save[1]]
        if fsyncs:
            out["(beside) its first fsync began"] = (fsyncs[0][0] - row["t0"]) * 1000
            out["(beside) its last fsync ended"] = (fsyncs[-1][1] - row["t0"]) * 1000
    return out


def breakdown(rows: list[dict[str, Any]]) -> list[tuple[str, float, float]]:
    """(point, median ms from the POST, ms from the point before), in the order of
    their median times: the steps of the way add up to its median length."""
    at: dict[str, list[float]] = {}
    for row in rows:
        for name, ms in offsets(row).items():
            at.setdefault(name, []).append(ms)
    points = sorted((median(v), name) for name, v in at.items())
    out, before = [], 0.0
    for ms, name in points:
        out.append((name, ms, ms - before))
        before = ms
    return out


def fsync_inside(row: dict[str, Any]) -> float:
    """Milliseconds of fsync (the saver's, in its thread) between the POST and the delta."""
    t0, t1 = row["t0"], row["t1"]
    return sum((min(e, t1) - max(s, t0)) * 1000 for s, e in row["fsyncs"] if s < t1 and e > t0)


def measure(side: DaemonSide, bare: BareSide, prompts: dict[str, tuple[str, list[str]]], turns: dict[str, Any],
            tokens: int, limit: float) -> dict[str, Any]:
    """One repetition: each state on the daemon, then on the bare loop (each keeps its
    own KV cache, so the pairs can alternate and share the machine's moment)."""
    row: dict[str, Any] = {}
    for state, text, pollute in STATES:
        if pollute:
            trio.run(side.pollute)
        side.dump()
        d = trio.run(side.round, text, limit)
        got = side.dump()
        d.update(stamps=got["stamps"], saves=got["saves"], fsyncs=got["fsyncs"], steps=got["steps"],
                 evals=got["evals"])
        d["same_prompt"] = got["turns"] == [turns[text]]
        if pollute:
            bare.pollute(*prompts[POLLUTE_USER])
        b = bare.round(*prompts[text], tokens)
        row[f"d {state}"], row[f"b {state}"] = d, b
        row[f"{state} ms"] = ((d["t1"] - d["t0"]) * 1000 if d["t1"] else math.nan,
                              (b["t1"] - b["t0"]) * 1000 if b["t1"] else math.nan)
        row[f"{state} same text"] = d["text"] == b["text"]
    row["timed out"] = [k for k in row if k[:2] in ("d ", "b ") and row[k]["timed_out"]]
    return row


def print_inside(used: list[dict[str, Any]], state: str) -> None:
    """llama-cpp-python's part on each side, split; and what the trio thread ran meanwhile."""
    for side in ("d", "b"):
        splits = []
        for r in used:
            x = r[f"{side} {state}"]
            if side == "d":
                st = x["stamps"]
                if "llama.cpp called" in st and "first chunk from llama.cpp" in st:
                    splits.append(llama_split(st["llama.cpp called"], st["first chunk from llama.cpp"], x["evals"]))
            else:
                splits.append(llama_split(x["t_tok"], x["t1"], x["evals"]))
        if splits:
            before, inside, after = (median([s[i] for s in splits]) for i in range(3))
            who = "daemon" if side == "d" else "bare  "
            print(f"      {who} llama-cpp-python: {before:.2f} ms before its first eval, {inside:.2f} ms in eval "
                  f"(llama_decode), {after:.2f} ms after it to the first chunk")
    for label, a, b in (("the POST and llama.cpp called", None, "llama.cpp called"),
                        ("llama.cpp called and its first chunk", "llama.cpp called", "first chunk from llama.cpp")):
        per: list[dict[str, float]] = []
        for r in used:
            d = r[f"d {state}"]
            st = d["stamps"]
            start = d["t0"] if a is None else st.get(a)
            end = st.get(b)
            if start is not None and end is not None:
                per.append(trio_busy(d, start, end))
        names = sorted({k for p in per for k in p}, key=lambda k: -median([p.get(k, 0.0) for p in per]))
        total = median([sum(p.values()) for p in per]) if per else math.nan
        shown = ", ".join(f"{k} {median([p.get(k, 0.0) for p in per]):.2f}" for k in names[:6])
        print(f"      trio thread busy between {label}: {total:.2f} ms ({shown})")


def summarise(rep: Report, used: list[dict[str, Any]], judged: bool, stamps: bool) -> None:
    for state, _text, _pollute in STATES:
        d_ms = [r[f"{state} ms"][0] for r in used]
        b_ms = [r[f"{state} ms"][1] for r in used]
        ratio = median(d_ms) / median(b_ms) if used else math.nan
        rep.figure(f"{state}: daemon POST → first delta, median / p95",
                   f"{median(d_ms):.1f} / {percentile(d_ms, 95):.1f}", "ms")
        rep.figure(f"{state}: bare first token, median / p95", f"{median(b_ms):.1f} / {percentile(b_ms, 95):.1f}", "ms")
        over = median([d - b for d, b in zip(d_ms, b_ms, strict=True)]) if used else math.nan
        rep.figure(f"{state}: daemon - bare (median of reps)", over, "ms", "{:.1f}")
        rep.figure(f"{state}: ratio daemon / bare (medians)", ratio, "", "{:.3f}")
        differ = sum(1 for r in used if not r[f"{state} same text"])
        if differ:
            rep.note(f"{state}: the first piece differs between the daemon and the bare loop in {differ} rep(s)")
        differ = sum(1 for r in used if not r[f"d {state}"]["same_prompt"])
        rep.check(f"{state}: the daemon's turn was the prompt the bare loop rendered", bool(used) and not differ,
                  f"not in {differ} of {len(used)} reps" if used else "no repetition ran")
        if stamps and used:
            print(f"   -- {state}: where the milliseconds go (median ms from the POST, and from the step before)")
            print(f"      {0.0:8.2f} {'':8}  POST written (bench)")
            for name, ms, step in breakdown([r[f"d {state}"] for r in used]):
                print(f"      {ms:8.2f} {step:+8.2f}  {name}")
            tok = median([(r[f"b {state}"]["t_tok"] - r[f"b {state}"]["t0"]) * 1000 for r in used])
            print(f"      bare: tokenise {tok:.2f} ms, then llama.cpp to its first chunk {median(b_ms) - tok:.2f} ms")
            print_inside(used, state)
            fsync = median([fsync_inside(r[f"d {state}"]) for r in used])
            rep.figure(f"{state}: fsync time inside the way (median)", fsync, "ms", "{:.2f}")
        if state in TARGETED:
            label = f"{state}: ratio daemon / bare"
            if judged:
                rep.target(label, ratio, "<=", TARGET_RATIO, "", "{:.3f}")
            else:
                rep.not_judged(label, "<=", TARGET_RATIO, "", "no clean repetition", "{:.3f}")
        elif state == "warm":
            label = "warm: daemon - bare"
            if judged:
                rep.target(label, over, "<=", WARM_OVER_MS, "ms", "{:.1f}")
            else:
                rep.not_judged(label, "<=", WARM_OVER_MS, "ms", "no clean repetition", "{:.1f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--tokens", type=int, default=8, help="max tokens of a round, both sides")
    ap.add_argument("--model", type=Path, default=None, help="a GGUF (default: the bundled one)")
    ap.add_argument("--budget", type=float, default=240.0, help="seconds to spend on repetitions at most")
    ap.add_argument("--no-stamps", action="store_true", help="run the daemon without the breakdown's stamps")
    ap.add_argument(
        "--variant", default="as-shipped", choices=VARIANTS, metavar="VARIANT",
        help=f"diagnosis: run the daemon changed in one respect: {', '.join(VARIANTS)}",
    )
    ap.add_argument("--tries", type=int, default=0, help="repetitions to try at most, disturbed ones included "
                    "(default: 4 x --reps)")
    args = parse_args(ap, quick={"reps": 2, "budget": 15.0, "tries": 3})
    exit_on_sigterm()

    path = bundled_model(args.model)
    rep = Report("first_token", "message POST → first delta at an SSE client / bare llama-cpp-python first token")
    rep.figure("model", path.name)
    rep.figure("cores / llama threads (writing, reading)",
               f"{os.cpu_count()} / {default_threads()}, {default_batch_threads()}")
    rep.figure("max tokens, temperature", f"{args.tokens}, 0")
    rep.figure("daemon stamps / variant", f"{'off' if args.no_stamps else 'on'} / {args.variant}")

    tmp = Path(tempfile.mkdtemp(prefix="bench-first-token-"))
    dump_file = tmp / "dump.json"
    daemon = DaemonProcess(
        [
            str(args.tokens), "plain" if args.no_stamps else "stamps", args.variant,
            "serve", "--port", "0", "--model", str(path), "--ctx-size", str(CTX_SIZE), "--data-dir", str(tmp / "data"),
        ],
        code=BOOTSTRAP,
        log_path=tmp / "daemon.log",
        env=dict(os.environ, BENCH_DUMP_FILE=str(dump_file)),
    )
    daemon.start()
    side = DaemonSide(daemon, dump_file)
    bare = BareSide(load_bare(path))
    rows: list[dict[str, Any]] = []
    disturbed: list[dict[str, Any]] = []
    deadline = time.perf_counter() + args.budget
    limit = 30.0
    try:
        # Warm-up, not counted (page faults, thread pools), which also gives the
        # messages of each prompt as the daemon sent them.
        trio.run(side.pollute)
        for text in (USER_TEXT, OTHER_TEXT):
            trio.run(side.round, text, 3 * limit)
        turns = {t[-1]["content"]: t for t in side.dump()["turns"]}
        prompts = {text: bare.render(turns[text]) for text in (POLLUTE_USER, USER_TEXT, OTHER_TEXT)}
        toks = {text: bare.shell.tokenize(prompt) for text, (prompt, _stops) in prompts.items()}
        rep.figure("prompt tokens (message / other message)", f"{len(toks[USER_TEXT])} / {len(toks[OTHER_TEXT])}")
        rep.figure(
            "tokens cached: cold / system cached / warm",
            f"{common_prefix(toks[POLLUTE_USER], toks[USER_TEXT])} / {common_prefix(toks[USER_TEXT], toks[OTHER_TEXT])}"
            f" / {len(toks[USER_TEXT]) - 1}",
        )
        bare.round(*prompts[USER_TEXT], args.tokens)
        attempt = 0
        while len(rows) < args.reps and attempt < (args.tries or args.reps * 4) and time.perf_counter() < deadline:
            attempt += 1
            watch = CpuWatch([daemon.pid]).start()
            row = measure(side, bare, prompts, turns, args.tokens, limit)
            row["foreign"] = watch.foreign_cores()
            clean = row["foreign"] < FOREIGN_LIMIT and not row["timed out"]
            shown = "   ".join(f"{state} {row[f'{state} ms'][0]:6.1f} / {row[f'{state} ms'][1]:6.1f}"
                               for state, _t, _p in STATES)
            print(f"   try {attempt} (daemon / bare ms): {shown}   other processes {row['foreign']:.2f} cores"
                  f"{'' if clean else '  -> disturbed, not counted'}"
                  f"{(' (timed out: ' + ', '.join(row['timed out']) + ')') if row['timed out'] else ''}", flush=True)
            (rows if clean else disturbed).append(row)
    finally:
        daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    used = rows
    rep.figure("clean repetitions / disturbed (not counted)", f"{len(rows)} / {len(disturbed)}")
    if not rows:
        rep.note("every repetition was disturbed by other processes: the figures use them all, for what they are worth")
        used = [r for r in disturbed if not r["timed out"]]
    if used:
        rep.figure("other processes' CPU (median of reps)", median([r["foreign"] for r in used]), "cores", "{:.2f}")
    summarise(rep, used, bool(rows), not args.no_stamps)
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
