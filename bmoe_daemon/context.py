"""What the HTTP layer holds of the running daemon, and how a route reaches it.

A route takes everything it needs from `daemon()`: each actor is a field of its own,
so no route reaches through one actor for another. This module imports no route and
not the app, so the routes and the app (which imports them) form no circle.
"""

from __future__ import annotations

import time

import attrs
from quart import current_app, request

from actors.bus import EventBus
from actors.conversations.hub import Hub
from actors.model.engine import Engine
from actors.model.providers.directory import ProviderDirectory
from actors.model.usage import UsageLedger
from actors.peers.acp.agents import AcpAgents
from actors.peers.lsp.servers import LspManager
from actors.peers.mcp.edit import McpFile
from actors.peers.mcp.manager import McpManager
from actors.policy.hooks import HookRunner
from actors.policy.rules import RuleBook
from actors.sandbox.policy import Sandbox
from actors.scheduling.scheduler import Scheduler
from actors.skills.catalog import SkillCatalog
from actors.tools.memory import MemoryBook
from actors.tools.registry import Registry
from bmoe_daemon import access
from bmoe_daemon.config import Config
from bmoe_daemon.indexer import Indexer
from bmoe_daemon.write_guard import WriteGuard

# Where create_app puts the context among the app's extensions.
EXTENSION = "bmoe"


@attrs.define
class DaemonContext:
    config: Config
    hub: Hub
    engine: Engine
    bus: EventBus
    providers: ProviderDirectory | None = None
    mcp: McpManager | None = None
    # The MCP servers' config file, changed from the Agent & MCP page; none in chat-only mode or a test's app.
    mcp_file: McpFile | None = None
    skills: SkillCatalog | None = None
    started: float = attrs.field(factory=time.time)
    scheduler: Scheduler | None = None  # none in chat-only mode
    # The address the daemon serves, once bound (`listening on ...`): what /api/connect
    # writes into other apps' settings, never the request's own Host header.
    address: str | None = None
    # The other agents (ACP); none where no process may start, or in a test's app.
    acp: AcpAgents | None = None
    # The tools the conversations offer, MCP servers' included; none in a test's app
    # that has no run (then no built-in tool's name hides an MCP server's).
    registry: Registry | None = None
    # The language servers whose diagnostics follow an edit; none in chat-only mode or a test's app.
    lsp: LspManager | None = None
    # The person's hooks (<data>/agent/hooks.json); none in chat-only mode or a test's app.
    hooks: HookRunner | None = None
    # The always-allow rules of each workspace; none in chat-only mode.
    rules: RuleBook | None = None
    # The sandbox of the model's commands (/health shows its status); none in chat-only mode or a test's app.
    sandbox: Sandbox | None = None
    # What the agent remembers of each workspace; none in chat-only mode or a test's app.
    memory: MemoryBook | None = None
    # The usage ledger (GET /api/usage); none in a test's app that keeps none.
    usage: UsageLedger | None = None
    # The bound on writes to clients (the debug route shows them); none in a test's app.
    writes: WriteGuard | None = None
    # The full-text index of the conversations (GET /api/search); none in a test's app.
    search: Indexer | None = None


def daemon() -> DaemonContext:
    """The context of the app serving the current request (or WebSocket)."""
    ctx: DaemonContext = current_app.extensions[EXTENSION]
    return ctx


def is_local() -> bool:
    """Whether the current request comes from this computer (loopback)."""
    return access.is_loopback(request.remote_addr)
