"""GET /api/agent: what conversations here may use: tools, commands, agents, MCP servers,
the language servers whose diagnostics follow an edit, and how many helpers (subagents)
may run at once on the local model (`serve --helpers`).

The MCP servers not started yet are started first (each at most its start limit), so
the listing shows their tools as the model calls them. A client on the network gets
no servers (MCP or language): they name programs and folders of this computer.

POST /api/mcp/<server>/prompts/<name>: an MCP server's prompt (`prompts/get`) as text,
for a person to start a message with (local only).
"""

from __future__ import annotations

import attrs
from quart import Blueprint, Response, jsonify, request

from actors.errors import ToolError
from actors.process import can_run_commands
from actors.tools.registry import Tool
from bmoe_daemon.bodies import parse_json, structure
from bmoe_daemon.context import daemon, is_local
from bmoe_daemon.errors import BadRequest, BusyError, NotFoundError

bp = Blueprint("agent", __name__)

MAX_PROMPT_ARGUMENTS = 32
MAX_PROMPT_ARGUMENT_CHARS = 16 * 1024


@attrs.frozen
class PromptArguments:
    """`POST /api/mcp/<server>/prompts/<name>`: the prompt's arguments by name."""

    arguments: dict[str, str] = attrs.field(factory=dict)

BUILTIN_AGENT = {"id": "builtin", "name": "Built-in agent", "available": True, "missing": []}


def _agents(tools: bool) -> list[dict[str, object]]:
    """The built-in agent first, then the other agents (over ACP) where commands can
    run: each with whether its programs are on PATH (`missing` names the others)."""
    acp = daemon().acp
    others = acp.listing() if tools and can_run_commands() and acp is not None else []
    return [dict(BUILTIN_AGENT), *others]


def _helper_rounds() -> int:
    """A helper's default rounds, from the module that runs helpers (loaded with the first run)."""
    from actors.runs.agent.run_tools.helpers import HELPER_ROUNDS

    return HELPER_ROUNDS


@bp.post("/api/mcp/<server>/prompts/<name>")
async def post_mcp_prompt(server: str, name: str) -> Response:
    d = daemon()
    found = d.mcp.server(server) if d.mcp is not None and not d.config.chat_only else None
    if found is None or d.mcp is None:
        raise NotFoundError("There is no such MCP server.")
    raw = await request.get_data()
    body = structure(parse_json(raw), PromptArguments) if raw.strip() else PromptArguments()
    if len(body.arguments) > MAX_PROMPT_ARGUMENTS or any(
        len(v) > MAX_PROMPT_ARGUMENT_CHARS for v in body.arguments.values()
    ):
        raise BadRequest(f"A prompt takes at most {MAX_PROMPT_ARGUMENTS} arguments of at most "
                         f"{MAX_PROMPT_ARGUMENT_CHARS} characters each.")
    await d.mcp.prepare()  # a server not started yet lists its prompts first
    prompt = next((p for p in found.extras.prompts if p["name"] == name), None)
    if prompt is None:
        raise NotFoundError(f"The MCP server {server} lists no prompt {name!r}.")
    arguments = prompt["arguments"] if isinstance(prompt["arguments"], list) else []
    missing = [a["name"] for a in arguments if a["required"] and not body.arguments.get(a["name"], "").strip()]
    if missing:
        raise BadRequest(f"The prompt {name} needs {', '.join(missing)}.")
    try:
        text = await found.get_prompt(name, body.arguments)
    except ToolError as exc:
        raise BusyError(str(exc)) from None
    return jsonify({"text": text})


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
            "helper_rounds": d.config.helper_rounds or _helper_rounds(),
        }
    )
