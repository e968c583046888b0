"""GET /api/agent: what conversations here may use: tools, commands, agents, MCP servers,
the language servers whose diagnostics follow an edit, and how many helpers (subagents)
may run at once on the local model (`serve --helpers`).

The MCP servers not started yet are started first (each at most its start limit), so
the listing shows their tools as the model calls them. A client on the network gets
no servers (MCP or language): they name programs and folders of this computer.
"""

from __future__ import annotations

from quart import Blueprint, Response, jsonify

from actors.tools.registry import Tool
from actors.tools.shell import can_run_commands
from bmoe_daemon.context import daemon, is_local

bp = Blueprint("agent", __name__)

BUILTIN_AGENT = {"id": "builtin", "name": "Built-in agent", "available": True, "missing": []}


def _agents(tools: bool) -> list[dict[str, object]]:
    """The built-in agent first, then the other agents (over ACP) where commands can
    run: each with whether its programs are on PATH (`missing` names the others)."""
    acp = daemon().acp
    others = acp.listing() if tools and can_run_commands() and acp is not None else []
    return [dict(BUILTIN_AGENT), *others]


@bp.get("/api/agent")
async def get_agent() -> Response:
    d = daemon()
    tools = not d.config.chat_only
    mcp: list[dict[str, object]] = []
    if tools and is_local() and d.mcp is not None:
        await d.mcp.prepare()
        registry = d.registry

        def shown(tool: Tool) -> bool:
            return registry is None or registry.get(tool.name) is tool  # a built-in tool's name wins

        mcp = d.mcp.listing(shown)
    lsp = d.lsp.listing() if tools and is_local() and d.lsp is not None else []
    return jsonify(
        {
            "tools": tools,
            "commands": tools and can_run_commands(),
            "agents": _agents(tools),
            "mcp": mcp,
            "lsp": lsp,
            "helpers": d.config.helpers,
        }
    )
