"""What a conversation and its runs need from the daemon around them.

The hub, the server, the scheduler and the runs name these; none of them imports the
conversation actor for it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import attrs
import trio

if TYPE_CHECKING:
    # Names for the annotations only: what a conversation needs is made by the server,
    # and importing it here would load the run's machinery with the first import of Env.
    from actors.bus import EventBus
    from actors.checkpoints.store import Checkpoints
    from actors.model.engine import Engine
    from actors.model.providers.entries import Prices
    from actors.model.turns import Backend
    from actors.model.usage import UsageLedger
    from actors.peers.acp.agents import AcpAgents
    from actors.policy.hooks_config import HookEvent
    from actors.policy.rules import RuleBook
    from actors.record.cards import PlanFiles
    from actors.record.items import ConversationRecord
    from actors.tools.memory import MemoryBook
    from actors.tools.registry import Registry


class Store(Protocol):
    async def save_conversation(self, record: ConversationRecord, *, durable: bool = True) -> None:
        """Write the record whole; raises OSError when it cannot (a full disk)."""
        ...

    async def delete_conversation(self, conversation_id: str) -> None: ...


class Providers(Protocol):
    def backend(self, route: str) -> Backend:
        """The backend for a provider route; raises NotFound when it is not saved."""
        ...

    def context_length(self, route: str) -> int:
        """The context, in tokens, of the model a provider route names."""
        ...

    def prices(self, route: str) -> Prices | None:
        """What the provider of a route charges per million tokens; None: no prices entered."""
        ...

    def name_of(self, route: str) -> str:
        """The name the person gave the provider of a route."""
        ...

    def knows(self, route: str) -> bool:
        """Whether a `<provider>/<model>` route names a saved provider."""
        ...


class Hooks(Protocol):
    async def fire(self, event: HookEvent) -> str | None:
        """Run the person's hooks for the event; for `pre_tool_use`, why a hook blocks
        the call (None: it goes on). Bounded; a failing hook blocks nothing. Cancelled
        (a stop): every hook's process group is ended."""
        ...


class Diagnostics(Protocol):
    async def after_edit(self, workspace: Path, path: str) -> str | None:
        """The errors and warnings a language server reports for `path` (relative to
        the workspace) right after an edit, as lines for the call's result; None when
        no server covers the file or it said nothing. Bounded (a few seconds)."""
        ...


class Skills(Protocol):
    async def switched_on(self, workspace: Path | None = None) -> list[tuple[str, str]]:
        """(name, description) of each switched-on skill, the workspace's included."""
        ...


@attrs.frozen
class Env:
    """What a conversation needs from the daemon around it."""

    engine: Engine
    bus: EventBus
    store: Store
    registry: Registry
    resolve_workspace: Callable[[str], Path | None]
    chat_only: bool = False
    # Saved OpenAI-compatible providers: the backend for a "<provider>/<model>" route.
    providers: Providers | None = None
    # The skills (actors/skills/catalog.py): the switched-on ones are named in the prompt.
    skills: Skills | None = None
    # Other agents over ACP (actors/peers/acp/agents.py): a conversation whose `agent` is not
    # "builtin" is worked by one of them instead of the built-in run.
    acp: AcpAgents | None = None
    # The plan files (actors/runs/agent/run_tools/plans.py): None where conversations cannot plan.
    plans: PlanFiles | None = None
    # The person's hooks (<data>/agent/hooks.json) and the language servers' diagnostics.
    hooks: Hooks | None = None
    diagnostics: Diagnostics | None = None
    # The always-allow rules of each workspace (actors/policy/rules.py).
    rules: RuleBook | None = None
    # How many helpers (actors/runs/agent/run_tools/helpers.py) run at once on the local model; None: no limit.
    helpers: trio.CapacityLimiter | None = None
    # The rounds a new helper may take (serve --helper-rounds); None: helpers.HELPER_ROUNDS.
    helper_rounds: int | None = None
    # Whether a small local model is led (serve --leading; actors/runs/agent/small/leader.py); False: none is.
    leading: bool = True
    # The workspaces' checkpoints (actors/checkpoints/store.py); None: runs are not checkpointed.
    checkpoints: Checkpoints | None = None
    # What the agent remembers of each workspace (actors/tools/memory.py): a compaction adds the matching ones.
    memory: MemoryBook | None = None
    # The usage ledger (actors/model/usage.py): each answer's tokens and cost; None: not kept.
    usage: UsageLedger | None = None
