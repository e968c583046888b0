"""Compaction: its own cost with the summary turn aside, and the prompt cache after it.

Part 1, the daemon's side (a Hub over a real Store in a temporary folder, the scripted
backend): a conversation of N items (a message, a `write_file` call with its card and
diff, an answer, over and over; eight files in the workspace) is compacted on demand,
the summary turn replaced by a fixed five-section answer so only the compaction's own
work is timed: the run from the request to its end (picking the cut, the transcript
text, the token estimates, re-reading the files edited last, marking the items, the
notice, the record's save at the run's end). Per size: the median of --reps, and parts
alone: one whole save of the record (written to a temporary file, fsynced, renamed),
the cut with the transcript text and the estimate, the five files re-read.

Part 2, the bundled model (LocalBackend, as ops/bench/prefix_reuse.py drives it): a
conversation of --turns exchanges (fixed texts, the last answer the model's own) at
--ctx-size, then the person's next message, sent two ways: as it is (uncompacted: the
KV cache holds everything but the new message), and after a compaction (the summary
turn runs first, without the conversation's cache key as Compactor.summarise sends it,
then the prompt is the system prompt, the summary and the new message, as
history.messages makes it). Figures: prompt tokens, tokens prefilled (evaluated) and
the time to the first piece of each; the summary turn's own.

    .venv/bin/python ops/bench/compaction.py [--sizes 50 200 1000] [--reps 5] [--turns 12] [--ctx-size 8192] [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
from _common import CpuWatch, Report, bundled_model, exit_on_sigterm, median, parse_args, scripted_hub  # noqa: E402

SUMMARY = (
    "## Goal\nA small word-count command-line tool in Python.\n"
    "## Done\nsrc/wordcount/cli.py reads files and counts words; tests/test_cli.py covers empty input.\n"
    "## Files\nsrc/wordcount/cli.py, src/wordcount/__init__.py, tests/test_cli.py\n"
    "## Open work\nCounting lines as well as words.\n"
    "## Next\nAdd a --lines option and a test for it."
)
FILE_TEXT = "def count(text):\n    return len(text.split())\n\n" * 100  # ~4.7 KB a file
FILES = 8
USER_TEXT = "Now change module {k} so that the counting also handles tabs and several spaces in a row. "
ANSWER_TEXT = "I changed the module; the counting now splits on any run of whitespace, and the tests pass. "
# Part 2's conversation: varied enough that its tokens are not a repeated pattern.
TURN_USER = [
    "List the files you would create for a small Python command-line tool that counts words, and say why.",
    "Explain what a Python virtual environment is for and how to make one.",
    "Write a short shell script that copies a folder into a tar file named with today's date.",
    "What does a pyproject.toml file hold, and which tools read it?",
    "How would you test a function that reads from standard input?",
    "Describe how argparse handles an option that takes a number.",
]
TURN_ANSWER = (
    "Here is what I would do. First, keep the module small and give it one job. Second, write a test "
    "for the empty case and one for a long input. Third, document the option in the README, with an "
    "example of the command and what it prints. That keeps the tool easy to read and to change later."
)
NEXT_MESSAGE = "Now add a --lines option that counts lines instead of words."


# ---- part 1: the daemon's side ----


def build_items(n: int) -> list[Any]:
    """About `n` items: message, call, card, answer, repeated; the last a message."""
    import json

    from actors.record.items import Item, ToolCall

    items: list[Item] = []
    k = 0
    while len(items) < n - 1:
        path = f"src/m{k % FILES}.py"
        args = json.dumps({"path": path, "content": FILE_TEXT[:600]})
        items += [
            Item(id=f"u{k}", kind="user", text=USER_TEXT.format(k=k) * 3),
            Item(id=f"a{k}", kind="assistant", text="", tool_calls=(ToolCall(f"c{k}", "write_file", args),)),
            Item(id=f"t{k}", kind="tool", tool="write_file", title=f"Write {path}", call_id=f"c{k}", state="done",
                 args={"path": path}, result=f"replaced {path}: 300 lines", diff="@@ -1 +1 @@\n-a\n+b\n", file=path),
            Item(id=f"r{k}", kind="assistant", text=ANSWER_TEXT * 2),
        ]
        k += 1
    items.append(Item(id="now", kind="user", text="and the last one"))
    return items


async def compaction_cost(sizes: list[int], reps: int) -> dict[int, dict[str, list[float]]]:
    from actors.fs.paths import read_workspace_text
    from actors.runs.agent import compaction_cut as compaction
    from actors.runs.agent import history
    from actors.runs.agent.compaction_turn import Compactor

    async def fixed_summary(self: Any, text_in: str) -> str:
        return SUMMARY

    Compactor.summarise = fixed_summary  # type: ignore[method-assign]  # the summary turn aside
    out: dict[int, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ws_dir = root / "ws"
        (ws_dir / "src").mkdir(parents=True)
        for n in range(FILES):
            (ws_dir / "src" / f"m{n}.py").write_text(FILE_TEXT)
        _backend, engine, store, hub = scripted_hub(root, lambda _: ws_dir)
        async with trio.open_nursery() as nursery:
            await nursery.start(engine.run)
            await nursery.start(hub.run)
            ws = (await hub.add_workspace(str(ws_dir))).id
            for size in sizes:
                items = build_items(size)
                got: dict[str, list[float]] = {"compact": [], "write": [], "pure": [], "files": []}
                for rep in range(reps + 1):  # the first is a warm-up
                    conv = await hub.create(workspace=ws, mode="full", items=list(items))
                    await conv.flush()  # the record as created is on disk first
                    t0 = time.perf_counter()
                    await conv.compact()
                    await conv.wait_run_end()
                    t1 = time.perf_counter()
                    # The run's end saved it already; one more whole save is what writing it costs.
                    await store.save_conversation(conv.record())
                    t2 = time.perf_counter()
                    if not any(i.compaction for i in conv.items):
                        raise RuntimeError(f"{size} items: no compaction happened")
                    cut = compaction.cut_point(items)
                    assert cut is not None
                    t3 = time.perf_counter()
                    compaction.transcript_text(items[:cut])
                    compaction.estimate_tokens(history.messages(items, "system"))
                    t4 = time.perf_counter()
                    for path in compaction.edited_files(items[:cut]):
                        await trio.to_thread.run_sync(read_workspace_text, ws_dir, path, compaction.FILE_CHARS)
                    t5 = time.perf_counter()
                    if rep:
                        got["compact"].append(t1 - t0)
                        got["write"].append(t2 - t1)
                        got["pure"].append(t4 - t3)
                        got["files"].append(t5 - t4)
                    await hub.delete(conv.id)
                out[len(items)] = got
            hub.close()
            engine.close()
    return out


# ---- part 2: the prompt cache after a compaction, on the bundled model ----


async def cache_after(path: Path, turns: int, ctx: int, max_tokens: int) -> dict[str, Any]:
    from actors.model.backends.local import LocalBackend
    from actors.model.turns import TurnInput
    from actors.record.items import Item
    from actors.runs.agent import compaction_cut as compaction
    from actors.runs.agent import history
    from actors.runs.agent.prompt import system_prompt

    backend = await LocalBackend.load(path, n_ctx=ctx)
    system = system_prompt(workspace=None, mode="ask", today=datetime.date.today(), tools=False)

    async def turn(items: list[Item], key: str | None, *, msgs: Any = None) -> tuple[Any, float]:
        first: list[float] = []

        async def emit(_piece: Any) -> None:
            if not first:
                first.append(time.perf_counter())

        t0 = time.perf_counter()
        messages = tuple(msgs if msgs is not None else history.messages(items, system))
        r = await backend.generate(TurnInput(messages, max_tokens=max_tokens, temperature=0.0, cache_key=key),
                                   emit, threading.Event())
        return r, (first[0] if first else time.perf_counter()) - t0

    try:
        items: list[Item] = []
        for k in range(turns):
            items += [Item(id=f"u{k}", kind="user", text=TURN_USER[k % len(TURN_USER)]),
                      Item(id=f"r{k}", kind="assistant", text=TURN_ANSWER)]
        items.append(Item(id="last", kind="user", text="Sum up what we decided in two sentences."))
        key = "conversation"
        before, _ = await turn(items, key)  # the last round: the cache holds it and its answer
        items.append(Item(id="said", kind="assistant", text=before.text))
        nxt = [*items, Item(id="next", kind="user", text=NEXT_MESSAGE)]

        plain, plain_s = await turn(nxt, key)  # uncompacted
        # Compacted: the same state again (the last round asked once more), the summary
        # turn (no cache key, as Compactor.summarise), then the round after it.
        again, _ = await turn(items, key)
        text_in = compaction.transcript_text(items)
        summary_msgs = ({"role": "system", "content": compaction.SUMMARY_PROMPT},
                        {"role": "user", "content": text_in})
        summ, summ_s = await turn([], None, msgs=summary_msgs)
        record = compaction.record(summary=SUMMARY, tokens_before=0, items_summarised=len(items), todos=(),
                                   plan=None, files={})
        kept = [Item(id=i.id, kind=i.kind, text=i.text, compacted=True) for i in items]
        notice = Item(id="n", kind="notice", text="compacted", compaction=record)
        after, after_s = await turn([*kept, notice, nxt[-1]], key)
        return {"before": before, "plain": plain, "plain_s": plain_s, "again": again, "summary": summ,
                "summary_s": summ_s, "after": after, "after_s": after_s, "same_answer": again.text == before.text}
    finally:
        await backend.aclose()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[50, 200, 1000])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--turns", type=int, default=12, help="exchanges before the compaction, on the bundled model")
    ap.add_argument("--ctx-size", type=int, default=8192)
    ap.add_argument("--max-tokens", type=int, default=48)
    ap.add_argument("--model", type=Path, default=None)
    args = parse_args(ap, quick={"sizes": [50, 200], "reps": 2, "turns": 2, "max_tokens": 8})
    exit_on_sigterm()
    path = bundled_model(args.model)  # part 2's, checked before part 1 runs

    rep = Report("compaction", "the compaction's own cost (summary turn aside); the prompt cache after it")
    print("   -- part 1: compacting on demand, the summary turn replaced by a fixed answer")
    cpu = CpuWatch().start()
    cost = trio.run(compaction_cost, args.sizes, args.reps)
    for n, got in cost.items():
        rep.figure(f"[{n} items] compaction run, its save included, median", median(got["compact"]) * 1000, "ms",
                   "{:.1f}")
        rep.figure(f"[{n} items] of which: writing the record (fsync)", median(got["write"]) * 1000, "ms", "{:.1f}")
        rep.figure(f"[{n} items] of which: cut + transcript + estimate", median(got["pure"]) * 1000, "ms", "{:.2f}")
        rep.figure(f"[{n} items] of which: 5 edited files re-read", median(got["files"]) * 1000, "ms", "{:.2f}")
    rep.figure("other processes' CPU during part 1", cpu.foreign_cores(), "cores")

    print(f"   -- part 2: the first round after a compaction on {path.name}, ctx {args.ctx_size}")
    s = trio.run(cache_after, path, args.turns, args.ctx_size, args.max_tokens)
    b, p, a, sm = s["before"], s["plain"], s["after"], s["summary"]
    rep.figure("conversation before the next message", f"{b.prompt_tokens} prompt tokens ({args.turns} exchanges)")
    rep.figure("uncompacted: prompt / prefilled tokens", f"{p.prompt_tokens} / {p.prefill_tokens}")
    rep.figure("uncompacted: time to first piece", s["plain_s"] * 1000, "ms", "{:.0f}")
    rep.figure("summary turn: prompt / prefilled tokens", f"{sm.prompt_tokens} / {sm.prefill_tokens}")
    rep.figure("summary turn: time to first piece", s["summary_s"] * 1000, "ms", "{:.0f}")
    rep.figure("compacted: prompt / prefilled tokens", f"{a.prompt_tokens} / {a.prefill_tokens}")
    rep.figure("compacted: time to first piece", s["after_s"] * 1000, "ms", "{:.0f}")
    rep.figure("compacted: prompt reused from the cache", a.prompt_tokens - a.prefill_tokens, "tokens", "{}")
    if not s["same_answer"]:
        rep.note("the last round asked again gave another answer: the compacted state differs a little")
    return rep.finish()


if __name__ == "__main__":
    sys.exit(main())
