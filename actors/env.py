"""What a conversation and its runs need from the daemon around them.

The hub, the server, the scheduler and the runs name these; none of them imports the
conversation actor for it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import attrs

from actors.bus import EventBus
from actors.engine import Backend, Engine
from actors.items import ConversationRecord
from actors.plans import PlanFiles
from actors.tools.registry import Registry

if TYPE_CHECKING:
    from actors.acp import AcpAgents


class Store(Protocol):
    async def save_conversation(self, record: ConversationRecord, *, durable: bool = True) -> None:
        """Write the record whole; raises OSError when it cannot (a full disk)."""
        ...

    async def delete_conversation(self, conversation_id: str) -> None: ...


class Providers(Protocol):
    def backend(self, route: str) -> Backend:
        """The backend for a provider route; raises NotFound when it is not saved."""
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
    # The skills (actors/skills.py): the switched-on ones are named in the prompt.
    skills: Skills | None = None
    # Other agents over ACP (actors/acp.py): a conversation whose `agent` is not
    # "builtin" is worked by one of them instead of the built-in run.
    acp: AcpAgents | None = None
    # The plan files (actors/plans.py): None where conversations cannot plan.
    plans: PlanFiles | None = None
