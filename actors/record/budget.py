"""A budget: how much a conversation, a task's run or one message may spend before its
run ends with `end_reason: budget` (actors/runs/agent/meter.py keeps it).

A budget is `{"tokens": n, "cost": usd}`, either or both set:

- `tokens` counts the prompt and completion tokens of every answer (a cached prompt
  token is still a prompt token), as the answers' `usage` reports them;
- `cost` counts US dollars as the provider's prices per million tokens make them
  (actors/model/usage.py). An answer on the local model costs nothing; a provider
  without prices cannot be held to a cost budget, so a run there ends at once and
  says so, rather than spending without a count.

Where one is set and what it counts:

- a conversation's (`POST /api/conversations`, `PATCH`): every answer of the
  conversation, from its first (raised or removed with a PATCH, then Resume);
- a task's (`POST /api/tasks`, `PUT`): each run of the task, its own conversation,
  which carries it as the conversation's budget;
- a message's (`POST .../messages`, `bmoe-daemon run --max-cost`): that run only.

It is reached once what it counts is at or past it. The check comes before each
round with the model (the first included), so a run ends after the answer that reached
it and the calls that answer made: an answer already asked for is not cut, and the
budget can be passed by that one answer.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from actors.errors import Invalid

MAX_BUDGET_TOKENS = 10**12
MAX_BUDGET_COST = 1_000_000.0  # US dollars


@attrs.frozen
class Budget:
    tokens: int | None = None
    cost: float | None = None  # US dollars

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "cost": self.cost}


def budget_from_json(data: object) -> Budget | None:
    """A budget as a file keeps it (no checks beyond its shape; None when it has none)."""
    if not isinstance(data, dict):
        return None
    tokens, cost = data.get("tokens"), data.get("cost")
    budget = Budget(int(tokens) if isinstance(tokens, int) else None,
                    float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None)
    return budget if budget.tokens is not None or budget.cost is not None else None


def check_budget(data: object, what: str = "budget") -> Budget | None:
    """A budget from a request, or None for no budget (`null`, `{}`, or both fields
    null); Invalid, in plain words naming `what`, for anything else."""
    if data is None:
        return None
    shape = f'{what} is {{"tokens": whole number, "cost": US dollars}} (either may be null), or null for none'
    if not isinstance(data, dict):
        raise Invalid(f"{shape}.")
    extra = sorted(str(k) for k in set(data) - {"tokens", "cost"})
    if extra:
        raise Invalid(f"{shape}; {', '.join(extra)} is not one of its fields.")
    tokens, cost = data.get("tokens"), data.get("cost")
    if tokens is not None:
        if isinstance(tokens, bool) or not isinstance(tokens, int):
            raise Invalid(f"{what}.tokens must be a whole number of tokens.")
        if not 1 <= tokens <= MAX_BUDGET_TOKENS:
            raise Invalid(f"{what}.tokens must be between 1 and {MAX_BUDGET_TOKENS:,}.")
    if cost is not None:
        if isinstance(cost, bool) or not isinstance(cost, int | float) or not math.isfinite(cost):
            raise Invalid(f"{what}.cost must be a number of US dollars, like 0.50.")
        if not 0 < cost <= MAX_BUDGET_COST:
            raise Invalid(f"{what}.cost must be more than 0 and at most {MAX_BUDGET_COST:,.0f} US dollars.")
    if tokens is None and cost is None:
        return None
    return Budget(tokens, float(cost) if cost is not None else None)
