"""Harness overhead: a local round's tokens per second as an SSE client sees it, over
a bare llama-cpp-python loop's on the same GGUF, context size and rendered prompt.

The daemon runs as a subprocess with the bundled model and --chat-only, so a round is
plain text: with tools offered, a model without a tool syntax in its template (the
bundled SmolLM2) answers in grammar-constrained JSON whose deltas are not one per
token, and the run goes on to tool rounds. The bench starts it through a
short bootstrap (BOOTSTRAP) that sets the local backend's DEFAULT_TEMPERATURE to 0 and
DEFAULT_MAX_TOKENS to --tokens (the HTTP API has no per-message setting for either),
so both sides generate the same tokens and the texts can be compared, and that
writes down the messages of each turn, so the bare loop renders exactly the prompt
the daemon sent (with the product's own LocalBackend.render). Rates are
counted from the first token to the last: (n - 1) / (t_last - t_first), with n the
delta events on one side and the non-empty streamed chunks on the other, so prefill
is left out of both. Daemon and bare repetitions alternate (the machine is small:
only one of them generates at a time) and the figure is the median of the ratios.
The machine may be shared: a repetition during which other processes used more
than FOREIGN_LIMIT cores (from /proc/stat, less our own processes) is reported but
not counted, and another is run, within --budget seconds.

A third, diagnostic, loop is the bare one with the same llama.cpp abort callback the
local backend installs (a ctypes call back into Python, which llama.cpp polls while
it computes), to tell that cost apart from the rest of the harness. --variant runs
the daemon changed in one respect (see BOOTSTRAP), for diagnosis only.

    .venv/bin/python ops/bench/harness_overhead.py [--reps 15] [--tokens 128] [--variant as-shipped] [--quick]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
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
    split_address,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from actors.model.backends.local import default_batch_threads, default_threads

TARGET_RATIO = 0.95
CTX_SIZE = 8192  # the daemon's default --ctx-size, passed explicitly to both sides
USER_TEXT = (
    "Write a long story about a lighthouse keeper who finds a message in a bottle. "
    "Make it at least 600 words, with dialogue."
)

BOOTSTRAP = """
import json, os, sys
import actors.model.backends.local as local
local.DEFAULT_TEMPERATURE = 0.0
local.DEFAULT_MAX_TOKENS = int(sys.argv[1])
variant = sys.argv[2]
_generate = local.LocalBackend.generate
async def generate(self, turn, emit, abort):
    # Hand the bench the messages of the turn, so the bare loop renders the same prompt.
    with open(os.environ["BENCH_TURN_FILE"], "w", encoding="utf-8") as fh:
        json.dump(list(turn.messages), fh)
    return await _generate(self, turn, emit, abort)
local.LocalBackend.generate = generate
if variant == "no-abort-callback":
    _init = local.LocalBackend.__init__
    def __init__(self, llm, path, *, abort_callback=True):
        _init(self, llm, path, abort_callback=False)
    local.LocalBackend.__init__ = __init__
elif variant == "store-off":
    import bmoe_daemon.store as store
    async def save_conversation(self, record, *, durable=True):
        return None
    store.Store.save_conversation = save_conversation
elif variant.startswith("threads="):
    _load = local.LocalBackend.load.__func__
    async def load(cls, path, *, n_ctx, n_threads=None):
        return await _load(cls, path, n_ctx=n_ctx, n_threads=int(variant.split("=", 1)[1]))
    local.LocalBackend.load = classmethod(load)
elif variant.startswith("switch-interval="):
    sys.setswitchinterval(float(variant.split("=", 1)[1]))
elif variant != "as-shipped":
    raise SystemExit(f"unknown variant {variant}")
from bmoe_daemon.cli import main
sys.exit(main(sys.argv[3:]))
"""
# Daemon variants for diagnosis (--variant); the target is judged on "as-shipped" only.
VARIANTS = ("as-shipped", "no-abort-callback", "store-off", "threads=1", "switch-interval=0.0005")
# A repetition during which other processes used more than this many cores is not counted.
FOREIGN_LIMIT = 0.15


# ---- the daemon side ----


async def daemon_round(address: str, text: str, limit_s: float) -> dict[str, Any]:
    """One message in a new conversation; the arrival time of every delta of its reply."""
    host, port = split_address(address)
    client = SSEClient(host, port)
    conv_id: list[str] = []
    times: list[float] = []
    pieces: list[str] = []
    done = trio.Event()

    def on_event(t: float, name: str, data: str, _id: str) -> None:
        if not conv_id:
            return
        if name == "delta":
            d = json.loads(data)
            if d.get("conversation") == conv_id[0] and d.get("text"):
                times.append(t)
                pieces.append(d["text"])
        elif name == "conversation":
            d = json.loads(data)
            if d.get("id") == conv_id[0] and d.get("state") in ("idle", "error") and times:
                done.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(client.run, on_event)
        with trio.fail_after(10):
            await client.connected.wait()
        async with httpx.AsyncClient(base_url=address, timeout=30) as http:
            r = await http.post("/api/conversations", json={})
            r.raise_for_status()
            conv_id.append(r.json()["id"])
            r = await http.post(f"/api/conversations/{conv_id[0]}/messages", json={"text": text})
            r.raise_for_status()
            timed_out = False
            with trio.move_on_after(limit_s):
                await done.wait()
            if not done.is_set():  # far too slow: the machine is busy; stop the run and say so
                timed_out = True
                await http.post(f"/api/conversations/{conv_id[0]}/stop")
            r = await http.get(f"/api/conversations/{conv_id[0]}")
            items = r.json()["items"]
        nursery.cancel_scope.cancel()
    final = next((i.get("text") or "" for i in reversed(items) if i["kind"] == "assistant"), "")
    notices = [i.get("text") for i in items if i["kind"] == "notice"]
    return {"times": times, "text": "".join(pieces), "final": final, "notices": notices, "timed_out": timed_out}


# ---- the bare side ----


def load_bare(path: Path, threads: int | None = None) -> Any:
    from llama_cpp import Llama

    from actors.model.backends.local import avoid_amx_repack

    avoid_amx_repack()  # as LocalBackend.load does
    batch_threads = threads or default_batch_threads()  # what LocalBackend.load picks
    threads = threads or default_threads()
    return Llama(
        model_path=str(path),
        n_ctx=CTX_SIZE,
        n_threads=threads,
        n_threads_batch=batch_threads,
        verbose=False,
        logits_all=False,
    )


def rendered_prompt(llm: Any, messages: tuple[dict[str, Any], ...]) -> tuple[list[int], list[str]]:
    """The tokens and stops of the daemon's turn, from the messages it was given (the
    bootstrap writes them down), rendered by the product's own LocalBackend.render and
    tokenize, built without the abort callback this loop is meant to run without."""
    from actors.model.backends.local import LocalBackend

    shell = LocalBackend(llm, Path(llm.model_path), abort_callback=False)
    prompt, stops = shell.render(messages)
    return shell.tokenize(prompt), stops


def bare_round(llm: Any, tokens: list[int], stops: list[str], max_tokens: int, timeout: float = 1e9) -> dict[str, Any]:
    # No reset: after the warm-up the cache holds this prompt, as the daemon's does for
    # every conversation after its first, so both re-evaluate only the prompt's last
    # token and (at temperature 0) write the same text; a cold prefill gives slightly
    # different logits and soon a different text.
    times: list[float] = []
    pieces: list[str] = []
    stream = llm.create_completion(
        prompt=tokens, max_tokens=max_tokens, temperature=0.0, stop=stops or None, stream=True
    )
    for chunk in stream:
        text = chunk["choices"][0].get("text") or ""
        if text:
            times.append(time.perf_counter())
            pieces.append(text)
            if times[-1] - times[0] > timeout:
                stream.close()
                return {"times": times, "text": "".join(pieces), "timed_out": True}
    return {"times": times, "text": "".join(pieces), "timed_out": False}


class AbortCallback:
    """A callback like LocalBackend's (Python, reading a threading.Event), counting its calls."""

    def __init__(self, llm: Any) -> None:
        import threading

        import llama_cpp

        self.calls = 0
        self._flag = threading.Event()
        self._cb = llama_cpp.ggml_abort_callback(self._should_abort)  # kept alive by self
        llama_cpp.llama_set_abort_callback(llm._ctx.ctx, self._cb, ctypes.c_void_p(0))

    def _should_abort(self, _data: Any) -> bool:
        self.calls += 1
        return self._flag.is_set()


def remove_abort_callback(llm: Any) -> None:
    import llama_cpp

    llama_cpp.llama_set_abort_callback(llm._ctx.ctx, llama_cpp.ggml_abort_callback(0), ctypes.c_void_p(0))


def rate(times: list[float]) -> float:
    if len(times) < 2 or times[-1] <= times[0]:
        return float("nan")
    return (len(times) - 1) / (times[-1] - times[0])


def gap_rate(times: list[float]) -> float:
    """1 / the median gap between tokens: blind to the odd stall when another process
    takes a core (the machine is shared), so steadier than `rate` from run to run."""
    gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
    return 1.0 / median(gaps) if gaps and median(gaps) > 0 else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=15)  # single reps swing ±15% on a shared machine
    ap.add_argument("--tokens", type=int, default=128, help="max tokens of a round, both sides")
    ap.add_argument("--model", type=Path, default=None, help="a GGUF (default: the bundled one)")
    ap.add_argument(
        "--variant",
        default="as-shipped",
        help="diagnosis: run the daemon as-shipped, no-abort-callback, store-off, threads=N (the bare loop too), "
        "or switch-interval=SECONDS",
    )
    ap.add_argument("--budget", type=float, default=240.0, help="seconds to spend on repetitions at most")
    ap.add_argument("--tries", type=int, default=0, help="repetitions to try at most, disturbed ones included "
                    "(default: 4 x --reps)")
    args = parse_args(ap, quick={"reps": 2, "tokens": 32, "budget": 15.0, "tries": 3})
    exit_on_sigterm()

    path = bundled_model(args.model)
    threads = int(args.variant.split("=", 1)[1]) if args.variant.startswith("threads=") else None
    rep = Report("harness_overhead", "local round tok/s seen over SSE / bare llama-cpp-python tok/s")
    rep.figure("model", path.name)
    rep.figure("cores / llama threads", f"{os.cpu_count()} / {threads or default_threads()}")
    rep.figure("variant", args.variant)
    rep.figure("max tokens, temperature", f"{args.tokens}, 0")

    tmp = Path(tempfile.mkdtemp(prefix="bench-harness-"))
    daemon = DaemonProcess(
        [
            str(args.tokens),
            args.variant,
            "serve",
            "--port",
            "0",
            "--model",
            str(path),
            "--ctx-size",
            str(CTX_SIZE),
            "--chat-only",
            "--data-dir",
            str(tmp / "data"),
        ],
        code=BOOTSTRAP,
        log_path=tmp / "daemon.log",
        env=dict(os.environ, BENCH_TURN_FILE=str(tmp / "turn.json")),
    )
    address = daemon.start()
    llm = load_bare(path, threads)
    pairs: list[dict[str, Any]] = []  # clean repetitions
    all_rows: list[dict[str, Any]] = []  # the disturbed ones, in case there is nothing else
    disturbed = 0
    mismatches = 0
    deadline = time.perf_counter() + args.budget
    try:
        # Warm-up, not counted: first-touch page faults, thread pools, caches; and the
        # daemon's turn shows what it sends the model.
        round_limit = max(20.0, args.tokens / 10.0)  # slower than this: disturbed, cut short
        trio.run(daemon_round, address, USER_TEXT, 3 * round_limit)
        messages = tuple(json.loads((tmp / "turn.json").read_text(encoding="utf-8")))
        tokens, stops = rendered_prompt(llm, messages)
        rep.figure("prompt tokens", len(tokens), fmt="{}")
        bare_round(llm, tokens, stops, args.tokens)
        attempt = 0
        while len(pairs) < args.reps and attempt < (args.tries or args.reps * 4) and time.perf_counter() < deadline:
            attempt += 1
            watch = CpuWatch([daemon.pid]).start()
            d = trio.run(daemon_round, address, USER_TEXT, round_limit)
            d_foreign = watch.foreign_cores()
            watch = CpuWatch([daemon.pid]).start()
            b = bare_round(llm, tokens, stops, args.tokens, round_limit)
            b_foreign = watch.foreign_cores()
            cb = AbortCallback(llm)
            watch = CpuWatch([daemon.pid]).start()
            a = bare_round(llm, tokens, stops, args.tokens, round_limit)
            a_foreign = watch.foreign_cores()
            remove_abort_callback(llm)
            row = {
                "d": rate(d["times"]),
                "b": rate(b["times"]),
                "a": rate(a["times"]),
                "gap": gap_rate(d["times"]) / gap_rate(b["times"]),
                "cb_per_token": cb.calls / max(1, len(a["times"])),
                "a_clean": a_foreign < FOREIGN_LIMIT,
                "len": (len(d["times"]), len(b["times"])),
                "same": d["text"] == b["text"],
                "foreign": max(d_foreign, b_foreign),
            }
            row["ratio"] = row["d"] / row["b"]
            clean = row["foreign"] < FOREIGN_LIMIT and not d["timed_out"] and not b["timed_out"]
            row["a_clean"] = row["a_clean"] and not a["timed_out"]
            print(
                f"   try {attempt}: daemon {row['d']:6.1f} tok/s ({row['len'][0]} deltas)  bare {row['b']:6.1f} tok/s "
                f"({row['len'][1]} chunks)  bare+abort-cb {row['a']:6.1f}  ratio {row['ratio']:.3f}  "
                f"other processes {row['foreign']:.2f} cores{'' if clean else '  -> disturbed, not counted'}"
                f"{'' if row['same'] else '  (texts differ)'}",
                flush=True,
            )
            if d["notices"]:
                rep.note(f"try {attempt} notices: {d['notices']}")
            if clean:
                pairs.append(row)
                mismatches += 0 if row["same"] else 1
            else:
                disturbed += 1
                all_rows.append(row)
    finally:
        daemon.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    used = pairs
    if not pairs:
        rep.note(
            "every repetition was disturbed by other processes: the figures below use them all, for what they are worth"
        )
        used = all_rows
    ratio = median([r["ratio"] for r in used])
    rep.figure("clean repetitions / disturbed (not counted)", f"{len(pairs)} / {disturbed}")
    rep.figure("daemon tok/s over SSE (median)", median([r["d"] for r in used]), "tok/s", "{:.1f}")
    rep.figure("bare create_completion tok/s (median)", median([r["b"] for r in used]), "tok/s", "{:.1f}")
    rep.figure("bare + a Python abort callback tok/s (median)", median([r["a"] for r in used]), "tok/s", "{:.1f}")
    cb_rows = [r for r in used if r["a_clean"]]
    if cb_rows:
        cb_ratio = median([r["a"] / r["b"] for r in cb_rows])
        rep.figure("a Python abort callback alone: ratio to bare", cb_ratio, "", "{:.3f}")
    else:
        rep.figure("a Python abort callback alone: ratio to bare", "n/a (its rounds were disturbed)")
    polls = median([r["cb_per_token"] for r in used])
    rep.figure("abort callback polls per token (the daemon's are native)", polls, "", "{:.0f}")
    rep.figure("ratio from median token gaps", median([r["gap"] for r in used]), "", "{:.3f}")
    rep.figure("ratios of the repetitions", ", ".join(f"{r['ratio']:.3f}" for r in used))
    rep.figure("tokens per rep (daemon/bare)", ", ".join(f"{r['len'][0]}/{r['len'][1]}" for r in used))
    rep.figure("reps whose texts differ", mismatches, "", "{}")
    short = [r["len"] for r in pairs + all_rows if min(r["len"]) < 2]
    rep.check("every repetition streamed tokens on both sides (2 at least, for a rate)", bool(pairs + all_rows)
              and not short, f"deltas/chunks {short}" if short else "no repetition ran")
    if mismatches:
        rep.note("texts differ between the daemon and the bare loop: rates are still per token, but check the prompt")
    if pairs:
        rep.target("ratio daemon / bare (median of reps)", ratio, ">=", TARGET_RATIO, "", "{:.3f}")
    else:
        rep.not_judged("ratio daemon / bare (median of reps)", ">=", TARGET_RATIO, "", "no clean repetition", "{:.3f}")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
