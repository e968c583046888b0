"""Prefix reuse: how much of round 2's prompt the local backend prefills again.

LocalBackend (bundled GGUF) is driven directly with the messages a conversation
sends. Round 1 is the system prompt and a user message; round 2 is the same with
round 1's reply appended, then either a tool result (the next round of a run) or a
second user message (the next message of a chat); once with a reply cut at
--max-tokens, once with a short reply the model ends itself, and once with tools
offered as a run offers them (for the bundled model, whose template has no tool
syntax: described in the system message, the answer held to JSON by a grammar, the
call given back in round 2 as the model wrote it, which the backend keeps so the
prompt matches the KV cache). The figure is

    TurnResult.prefill_tokens of round 2 / (prompt tokens of round 2 - of round 1)

i.e. what round 2 prefilled over what round 1's turn added to the prompt. With the
KV cache reused it is below 1 (round 1's reply is already in the cache); above 1
means part of round 1's prompt was prefilled again. The bench also counts the
tokens llama.cpp was actually given to decode in round 2 (by wrapping Llama.eval),
to check the backend's own count. Temperature 0 and a fixed max of tokens keep it
repeatable.

Three conversations taking turns (A, B, C, A, B, C, ... for --rounds rounds, each
round a reply and the next user message, each turn with its conversation's
cache_key) measure the prompt cache each conversation keeps across the others'
turns (actors/model/backends/prompt_cache.py): the same ratio for each conversation's
round 2 (and the worst of its later rounds), with the cache and with it off
(--prompt-cache-mib 0, as before it existed: the last turn's cache only), and what
each switch between conversations costs (saving the cache of the one leaving plus
restoring the one coming), median and p95. --long-tokens N adds three conversations
whose first message is about N tokens, for the switch's cost at that size.

    .venv/bin/python ops/bench/prefix_reuse.py [--max-tokens 96] [--rounds 6] [--long-tokens 0] [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import sys
import threading
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import CpuWatch, Report, bundled_model, exit_on_sigterm, median, parse_args, percentile  # noqa: E402

TARGET = 1.1
CTX_SIZE = 8192
USER_1 = "List the files you would create for a small Python command-line tool that counts words, and say why."
TOOL_RESULT = "README.md\npyproject.toml\nsrc/wordcount/__init__.py\nsrc/wordcount/cli.py\ntests/test_cli.py\n"
USER_2 = "Now write the cli.py file."
USER_SHORT = "In one short sentence: what does a README file hold?"
USER_TOOL = "Use the echo tool to say hello."
STOP_MAX_TOKENS = 512  # the short question's reply ends on its own well before this
SWITCH_TARGET_MS = 20.0
# A switch whose wall time passes its thread's CPU time by more than this waited for a
# core other processes held: shown, not judged.
OFF_CORE_MS = 1.0
TAKING_TURNS = {
    "A": "List the files you would create for a small Python command-line tool that counts words, and say why.",
    "B": "Explain what a Python virtual environment is for and how to make one.",
    "C": "Write a short shell script that copies a folder into a tar file named with today's date.",
}
NEXT_USER = "Go on: say more about that."
LONG_FILLER = "The quick brown fox jumps over the lazy dog near the river bank. "  # ~14 tokens


class EvalCounter:
    """Wraps the Llama's eval to record how many tokens each call decodes, and its
    sample to mark where the prompt's calls end (the backend decodes a long prompt a
    batch at a time, a call each): `prompt` is the tokens decoded before the first sample."""

    def __init__(self, llm: Any) -> None:
        self.calls: list[int] = []
        self.prompt_calls: int | None = None
        self._eval, self._sample = llm.eval, llm.sample
        llm.eval = self

        def sample(*args: Any, **kwargs: Any) -> Any:
            if self.prompt_calls is None:
                self.prompt_calls = len(self.calls)
            return self._sample(*args, **kwargs)

        llm.sample = sample

    def __call__(self, tokens: Any) -> Any:
        self.calls.append(len(tokens))
        return self._eval(tokens)

    @property
    def prompt(self) -> int:
        return sum(self.calls[: self.prompt_calls])

    def reset(self) -> None:
        """Before the next turn."""
        self.calls.clear()
        self.prompt_calls = None


async def one_turn(
    backend: Any,
    messages: tuple[dict[str, Any], ...],
    max_tokens: int,
    tools: tuple[Any, ...] = (),
    choice: str | None = None,
) -> tuple[Any, float]:
    from actors.model.turns import TurnInput

    t0 = time.perf_counter()
    first: list[float] = []

    async def emit(_piece: Any) -> None:
        if not first:
            first.append(time.perf_counter())

    turn = TurnInput(messages, tools, max_tokens, 0.0, choice)
    result = await backend.generate(turn, emit, threading.Event())
    return result, ((first[0] if first else time.perf_counter()) - t0)


def tool_specs() -> tuple[Any, ...]:
    """The tools a scripted daemon offers (echo, pause, note), as the model is told of them."""
    from actors.tools.registry import Registry
    from actors.tools.testing import test_tools

    tools = test_tools()
    return Registry(tools).specs(tools)


async def scenario(path: Path, kind: str, user: str, max_tokens: int) -> dict[str, Any]:
    from actors.model.backends.local import LocalBackend
    from actors.runs.agent.prompt import system_prompt

    backend = await LocalBackend.load(path, n_ctx=CTX_SIZE)
    try:
        with_tools = kind == "tools"
        specs = tool_specs() if with_tools else ()
        system = {
            "role": "system",
            "content": system_prompt(
                workspace=None, mode="ask", today=datetime.date.today(), tools=kind.startswith("run") or with_tools
            ),
        }
        round1 = (system, {"role": "user", "content": user})
        # With tools, round 1 must call one (as the round before a tool result does).
        r1, ttft1 = await one_turn(backend, round1, max_tokens, specs, "required" if with_tools else None)
        if with_tools:
            # As _Run.messages writes the round that called the tool, and its result.
            calls = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in r1.tool_calls
            ]
            round2 = round1 + (
                {"role": "assistant", "content": r1.text, "tool_calls": calls},
                *({"role": "tool", "tool_call_id": c["id"], "content": TOOL_RESULT} for c in calls),
            )
        elif kind.startswith("run"):
            call = {"id": "call_1", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}
            round2 = round1 + (
                {"role": "assistant", "content": r1.text, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_1", "content": TOOL_RESULT},
            )
        else:
            round2 = round1 + ({"role": "assistant", "content": r1.text}, {"role": "user", "content": USER_2})
        counter = EvalCounter(backend._llm)
        r2, ttft2 = await one_turn(backend, round2, max_tokens, specs)
        tok1 = len(backend.tokenize(backend.render(round1, specs)[0]))
        tok2 = len(backend.tokenize(backend.render(round2, specs)[0]))
        return {
            "kind": kind,
            "r1": r1,
            "r2": r2,
            "tok1": tok1,
            "tok2": tok2,
            "added": tok2 - tok1,
            "decoded": counter.prompt,
            "ttft1": ttft1,
            "ttft2": ttft2,
            "calls": [f"{c.name} {c.arguments}" for c in r1.tool_calls],
        }
    finally:
        await backend.aclose()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-tokens", type=int, default=96)
    ap.add_argument("--model", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=6, help="rounds of the three conversations taking turns (0: none)")
    ap.add_argument("--long-tokens", type=int, default=0, help="also three conversations of about this many tokens")
    args = parse_args(ap, quick={"max_tokens": 16, "rounds": 2})
    exit_on_sigterm()

    path = bundled_model(args.model)
    rep = Report("prefix_reuse", "round 2 prefill tokens / tokens round 1's turn added to the prompt")
    rep.figure("model, max tokens, temperature", f"{path.name}, {args.max_tokens}, 0")
    worst = 0.0
    scenarios = (
        ("run", "run: reply (cut at max tokens) + tool result", USER_1, args.max_tokens),
        ("chat", "chat: reply (cut at max tokens) + next user message", USER_1, args.max_tokens),
        ("run-eos", "run: reply ended by the model + tool result", USER_SHORT, STOP_MAX_TOKENS),
        ("tools", "run with tools offered: a call (generic JSON format) + its result", USER_TOOL, STOP_MAX_TOKENS),
    )
    for kind, label, user, max_tokens in scenarios:
        s = trio.run(scenario, path, kind, user, max_tokens)
        r1, r2 = s["r1"], s["r2"]
        ratio = r2.prefill_tokens / s["added"]
        worst = max(worst, ratio)
        print(f"   -- {label}")
        rep.figure(
            f"[{kind}] round 1 prompt / prefill / reply tokens",
            f"{r1.prompt_tokens} / {r1.prefill_tokens} / {r1.completion_tokens} ({r1.finish_reason})",
        )
        if s["calls"]:
            rep.figure(f"[{kind}] round 1 called", "; ".join(s["calls"]))
        rep.figure(f"[{kind}] round 2 prompt tokens", r2.prompt_tokens, "", "{}")
        rep.figure(f"[{kind}] tokens round 1's turn added", s["added"], "", "{}")
        rep.figure(f"[{kind}] round 2 prefill_tokens (backend)", r2.prefill_tokens, "", "{}")
        rep.figure(f"[{kind}] round 2 tokens decoded (Llama.eval)", s["decoded"], "", "{}")
        rep.figure(
            f"[{kind}] time to first piece, round 1 / 2", f"{s['ttft1'] * 1000:.0f} / {s['ttft2'] * 1000:.0f}", "ms"
        )
        rep.figure(f"[{kind}] ratio", ratio, "", "{:.3f}")
        rep.check(f"[{kind}] round 2: the backend's prefill count is what llama.cpp decoded",
                  s["decoded"] == r2.prefill_tokens,
                  f"the backend reports {r2.prefill_tokens} prefilled tokens, llama.cpp decoded {s['decoded']}")
        rep.target(f"[{kind}] prefill / added", ratio, "<=", TARGET, "", "{:.3f}")
    rep.figure("worst ratio", worst, "", "{:.3f}")
    if args.rounds >= 2:
        report_taking_turns(rep, path, args.max_tokens, args.rounds)
    if args.long_tokens > 0:
        report_long_switches(rep, path, args.max_tokens, args.long_tokens)
    return rep.finish()


# ---- three conversations taking turns ----


async def taking_turns(
    path: Path, firsts: dict[str, str], max_tokens: int, rounds: int, cache_mib: int | None
) -> dict[str, Any]:
    """Each conversation's turns in rounds, A B C A B C ...: per conversation its turns'
    (prompt tokens, prefill_tokens, tokens Llama.eval was given first); per switch its
    cost. `cache_mib` None: the backend's default."""
    from actors.model.backends.local import LocalBackend
    from actors.model.backends.prompt_cache import MIB
    from actors.model.turns import TurnInput
    from actors.runs.agent.prompt import system_prompt

    extra = {} if cache_mib is None else {"prompt_cache_bytes": cache_mib * MIB}
    backend = await LocalBackend.load(path, n_ctx=CTX_SIZE, **extra)
    try:
        system = {
            "role": "system",
            "content": system_prompt(workspace=None, mode="ask", today=datetime.date.today(), tools=True),
        }
        convs = {k: [system, {"role": "user", "content": u}] for k, u in firsts.items()}
        turns: dict[str, list[tuple[int, int, int]]] = {k: [] for k in firsts}
        switches: list[Any] = []
        counter = EvalCounter(backend._llm)

        async def emit(_piece: Any) -> None:
            pass

        for _ in range(rounds):
            for k, msgs in convs.items():
                counter.reset()
                turn = TurnInput(tuple(msgs), max_tokens=max_tokens, temperature=0.0, cache_key=k)
                r = await backend.generate(turn, emit, threading.Event())
                turns[k].append((r.prompt_tokens, r.prefill_tokens, counter.prompt))
                if backend.prompt_cache.last_switch is not None:
                    switches.append(backend.prompt_cache.last_switch)
                msgs += [{"role": "assistant", "content": r.text}, {"role": "user", "content": NEXT_USER}]
        return {"turns": turns, "switches": switches, "stats": backend.prompt_cache.statistics()}
    finally:
        await backend.aclose()


def ratios(turns: list[tuple[int, int, int]]) -> list[float]:
    """Each round's prefill over what the round before added to the prompt (round 2 first)."""
    return [t[1] / (t[0] - prev[0]) for prev, t in zip(turns, turns[1:], strict=False)]


def report_taking_turns(rep: Report, path: Path, max_tokens: int, rounds: int) -> None:
    print(f"   -- three conversations taking turns, {rounds} rounds (A B C A B C ...)")
    watch = CpuWatch().start()
    off = trio.run(taking_turns, path, TAKING_TURNS, max_tokens, rounds, 0)
    off_cpu = watch.foreign_cores()
    watch = CpuWatch().start()
    on = trio.run(taking_turns, path, TAKING_TURNS, max_tokens, rounds, None)
    on_cpu = watch.foreign_cores()
    for k in TAKING_TURNS:
        t_on, t_off = on["turns"][k], off["turns"][k]
        r_on, r_off = ratios(t_on), ratios(t_off)
        added = t_on[1][0] - t_on[0][0]
        rep.figure(f"[turns {k}] round 1 / 2 prompt tokens", f"{t_on[0][0]} / {t_on[1][0]} (added {added})")
        rep.figure(f"[turns {k}] round 2 prefill, cache off / on", f"{t_off[1][1]} / {t_on[1][1]}")
        rep.figure(f"[turns {k}] round 2 decoded (Llama.eval), off / on", f"{t_off[1][2]} / {t_on[1][2]}")
        rep.figure(f"[turns {k}] round 2 ratio, cache off (before)", r_off[0], "", "{:.3f}")
        rep.figure(f"[turns {k}] worst ratio of rounds 2-{rounds}, off / on", f"{max(r_off):.3f} / {max(r_on):.3f}")
        rep.check(f"[turns {k}] the backend's prefill counts are what llama.cpp decoded",
                  all(t[1] == t[2] for t in t_on[1:]), f"(prompt, prefill, decoded) by round: {t_on}")
        rep.target(f"[turns {k}] round 2 prefill / added (cache on)", r_on[0], "<=", TARGET, "", "{:.3f}")
    report_switches(rep, "turns", on["switches"])
    rep.figure("[turns] saved caches at the end", f"{len(on['stats'].entries)}, {on['stats'].used / 2**20:.1f} MiB")
    rep.figure("[turns] other processes' CPU, cache off / on", f"{off_cpu:.2f} / {on_cpu:.2f}", "cores")


def report_switches(rep: Report, tag: str, switches: list[Any]) -> None:
    """Each switch's wall time (save + restore); judged on the switches whose thread was
    not kept waiting for a core (wall time within OFF_CORE_MS of its CPU time), as the
    machine may be shared; all of them are shown too."""
    costs = [s.seconds * 1000 for s in switches]
    cpu = [s.cpu_s * 1000 for s in switches]
    clean = [s.seconds * 1000 for s in switches if (s.seconds - s.cpu_s) * 1000 <= OFF_CORE_MS]
    saves = [s.save_s * 1000 for s in switches if s.saved_bytes]
    restores = [s.restore_s * 1000 for s in switches if s.restored_bytes]
    moved = sum(s.saved_bytes + s.restored_bytes for s in switches)
    rep.figure(f"[{tag}] switches / saves / restores", f"{len(costs)} / {len(saves)} / {len(restores)}")
    rep.figure(f"[{tag}] tokens restored per switch, min-max",
               f"{min(s.restored_tokens for s in switches)}-{max(s.restored_tokens for s in switches)}")
    rep.figure(f"[{tag}] MB saved + restored per switch, median", median([
        (s.saved_bytes + s.restored_bytes) / 1e6 for s in switches]), "MB", "{:.1f}")
    rep.figure(f"[{tag}] save, restore: median", f"{median(saves):.2f}, {median(restores):.2f}", "ms")
    rep.figure(f"[{tag}] copy rate (bytes moved / switch time)", moved / max(sum(costs), 1e-9) / 1e6, "GB/s", "{:.1f}")
    rep.figure(f"[{tag}] switch, all: median / p95 / max",
               f"{median(costs):.2f} / {percentile(costs, 95):.2f} / {max(costs):.2f}", "ms")
    rep.figure(f"[{tag}] switch, its thread's CPU: median / p95",
               f"{median(cpu):.2f} / {percentile(cpu, 95):.2f}", "ms")
    rep.figure(f"[{tag}] switches kept off a core > {OFF_CORE_MS:g} ms", f"{len(costs) - len(clean)} of {len(costs)}")
    if len(clean) < len(costs) / 2:
        rep.not_judged(f"[{tag}] switch median", "<=", SWITCH_TARGET_MS, "ms", "most switches disturbed")
        rep.not_judged(f"[{tag}] switch p95", "<=", SWITCH_TARGET_MS, "ms", "most switches disturbed")
        return
    rep.target(f"[{tag}] switch median", median(clean), "<=", SWITCH_TARGET_MS, "ms", "{:.2f}")
    rep.target(f"[{tag}] switch p95", percentile(clean, 95), "<=", SWITCH_TARGET_MS, "ms", "{:.2f}")


def report_long_switches(rep: Report, path: Path, max_tokens: int, long_tokens: int) -> None:
    print(f"   -- three conversations of ~{long_tokens} tokens taking turns (the switch's cost at that size)")
    filler = LONG_FILLER * max(1, long_tokens // 14)
    firsts = {k: f"{u}\n\nNotes:\n{filler}" for k, u in TAKING_TURNS.items()}
    watch = CpuWatch().start()
    on = trio.run(taking_turns, path, firsts, max_tokens, 3, None)
    rep.figure("[long] round 1 prompt tokens", ", ".join(str(t[0][0]) for t in on["turns"].values()))
    report_switches(rep, "long", on["switches"])
    rep.figure("[long] other processes' CPU", watch.foreign_cores(), "cores", "{:.2f}")


if __name__ == "__main__":
    sys.exit(main())
