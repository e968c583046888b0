"""What the HTTP layer holds of the running daemon."""

from __future__ import annotations

import time

import attrs

from actors.bus import EventBus
from actors.engine import Engine
from actors.hub import Hub
from actors.mcp import McpManager
from actors.providers import ProviderDirectory
from actors.scheduler import Scheduler
from actors.skills import SkillCatalog
from bmoe_daemon.config import Config


@attrs.define
class DaemonContext:
    config: Config
    hub: Hub
    engine: Engine
    bus: EventBus
    providers: ProviderDirectory | None = None
    mcp: McpManager | None = None
    skills: SkillCatalog | None = None
    started: float = attrs.field(factory=time.time)
    scheduler: Scheduler | None = None  # none in chat-only mode
    # The address the daemon serves, once bound (`listening on ...`): what /api/connect
    # writes into other apps' settings, never the request's own Host header.
    address: str | None = None
