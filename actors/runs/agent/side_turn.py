"""A turn beside a run's rounds: tool-free, its own short conversation, its answer only
kept (a goal's verifier, a compaction's summary). It goes where the conversation's
rounds go: the engine's turn line for the local model, the provider otherwise."""

from __future__ import annotations

from actors.errors import EngineError, NotFound
from actors.model.engine import direct_turn
from actors.model.turns import Piece, TurnInput
from actors.runs.env import Env


class SideTurnFailed(Exception):
    """The turn could not run (no model, no provider, the context full, ...); the text says why."""


async def side_turn(env: Env, route: str, owner: str, turn: TurnInput) -> str:
    """The answer's text. Raises SideTurnFailed. Cancelled (a stop): as a round is."""
    said: list[str] = []

    async def keep(piece: Piece) -> None:
        if piece.kind == "text":
            said.append(piece.text)

    try:
        if route == "local":
            result = await env.engine.turn(turn, keep, owner=owner)
        elif env.providers is not None:
            result = await direct_turn(env.providers.backend(route), turn, keep)
        else:
            raise NotFound("no provider is saved for this route")
    except (EngineError, NotFound) as exc:
        raise SideTurnFailed(str(exc)) from exc
    return result.text or "".join(said)
