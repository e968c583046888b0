"""What a run spends, and the budgets it is held to (actors/record/budget.py).

Each answer that reports its token counts goes into the usage ledger
(actors/model/usage.py) priced at its provider's prices then; the run asks `reached`
before its first round and after each answer, and ends `budget` with the notice it
gets. A helper's run shares its parent's meter: its answers count for the
conversation and the message, and reaching a budget ends the helper and then the
parent. Without a ledger (a test's daemon) the conversation's total is this run's.
"""

from __future__ import annotations

import time

from actors import notices
from actors.model.usage import Entry, Sums
from actors.record.budget import Budget
from actors.record.transcript import Transcript
from actors.runs.base import RunRequest
from actors.runs.env import Env


class Meter:
    """See the module docstring; made by the conversation's run, handed to its helpers'."""

    def __init__(self, transcript: Transcript, env: Env, request: RunRequest) -> None:
        self._t = transcript  # the conversation's own (not a helper's)
        self._env = env
        self._budget = request.budget  # the message's
        self.run = Sums()  # what this run spent, its helpers' included

    def count(self, item_id: str, usage: dict[str, int] | None) -> None:
        """Count one answer's `usage` (none reported: nothing to count): its line is
        written (the ledger's own task syncs it to disk). OSError when the ledger cannot
        be written; the answer is counted for this run all the same."""
        if not usage:
            return
        info = self._t.info
        # A provider's counts as it sent them: never below 0 (the ledger refuses to read those).
        prompt, completion = max(0, usage.get("prompt_tokens", 0)), max(0, usage.get("completion_tokens", 0))
        cached = min(max(0, usage.get("cached_tokens", 0)), prompt)
        if info.route == "local":
            entry = Entry(time.time(), info.id, info.task, "local", "local", self._env.engine.model_id or "local",
                          item_id, prompt, completion, cached, None)
        else:
            provider, _, model = info.route.partition("/")
            prices = self._env.providers.prices(info.route) if self._env.providers is not None else None
            cost = prices.cost(prompt, completion, cached) if prices is not None else None
            entry = Entry(time.time(), info.id, info.task, "provider", provider, model, item_id,
                          prompt, completion, cached, cost)
        self.run.add(entry)
        if self._env.usage is not None:
            self._env.usage.append_nowait(entry)

    async def reached(self) -> str | None:
        """The notice that ends the run when one of its budgets is reached (see
        actors/record/budget.py), else None. The conversation's budget is read as it
        stands now, so one raised while the run goes on holds at once; its total waits
        for the ledger's file to be read (a run just after the daemon started)."""
        info = self._t.info
        if info.budget is not None and self._env.usage is not None:
            await self._env.usage.wait_loaded()
        checks: list[tuple[Budget, Sums, str]] = []
        if info.budget is not None:
            spent = self._env.usage.conversation(info.id) if self._env.usage is not None else self.run
            checks.append((info.budget, spent, "task" if info.task else "conversation"))
        if self._budget is not None:
            checks.append((self._budget, self.run, "message"))
        for budget, spent, whose in checks:
            words = {"whose": notices.BUDGET_OF[whose], "to_go_on": notices.BUDGET_NEXT[whose]}
            if budget.tokens is not None and spent.tokens >= budget.tokens:
                return notices.BUDGET_TOKENS.format(limit=budget.tokens, spent=spent.tokens, **words)
            if budget.cost is None:
                continue
            providers = self._env.providers
            # (A provider no longer saved is not blamed here: the round says it is gone.)
            if info.route != "local" and providers is not None and providers.knows(info.route) \
                    and providers.prices(info.route) is None:
                return notices.BUDGET_NO_PRICES.format(provider=providers.name_of(info.route), **words)
            if (spent.cost or 0.0) >= budget.cost:
                return notices.BUDGET_COST.format(limit=dollars(budget.cost), spent=dollars(spent.cost or 0.0),
                                                  **words)
        return None


def dollars(amount: float) -> str:
    """US dollars as a person reads them: cents from a dollar up; below, to a hundredth
    of a cent as far as it has digits ($0.25, $0.004, $0.0041), as the web UI says them."""
    if amount >= 1 or amount == 0:
        return f"${amount:,.2f}"
    text = f"{amount:.4f}"
    return "$" + (text[:-2] + text[-2:].rstrip("0") if text.endswith("0") else text)
