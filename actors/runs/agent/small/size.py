"""Whether a model is small enough to be led (actors/runs/agent/small/leader.py): by its
size alone, so that what only asks (the models page's `led`) need not load the leading."""

from __future__ import annotations

# A local model under this many parameters is a small one, which a run leads.
SMALL_MODEL_PARAMS = 1_000_000_000


def is_small_model(n_params: int) -> bool:
    """Whether a model of `n_params` parameters is small (0: its size is unknown)."""
    return 0 < n_params < SMALL_MODEL_PARAMS


def leads(route: str, backend: object) -> bool:
    """Whether a run on `route` leads the model `backend` serves: a local one that says
    it is small (its size known: `n_params`, which an asleep model remembers too)."""
    return route == "local" and is_small_model(int(getattr(backend, "n_params", 0) or 0))
