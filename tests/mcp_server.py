"""A small MCP server for the tests, written with the official `mcp` SDK (stdio, or
Streamable HTTP with `--http`).

Run it with `sys.executable tests/mcp_server.py [options]`. It is the peer the daemon's
own client (actors/peers/mcp/servers.py, which speaks the wire on trio itself) is tested against, so
that what the daemon sends and reads is checked by an implementation that is not ours.
Its tools:

    echo {text}          answers "echo: <text>"
    fail {why}           answers with isError
    hang {child}         never answers; with child, first starts a grandchild that sleeps
    crash                exits (code 3) in the middle of the call, without an answer
    shout {text}         prints text to stderr, then answers "printed"
    slow {seconds}       answers after that many seconds
    pid                  answers its process id

Its one prompt, `review {topic}`, gives "Review <topic> carefully.".

It prints a banner to stderr when it starts, and lists its tools in two pages (so the
client's cursor is exercised). Options change how it starts:

    --hang-start         never answers initialize
    --bad-handshake      answers initialize with an error
    --exit-at-start      exits at once, before reading anything
    --stdout-noise       writes a line that is not JSON to stdout first
    --extra-tool NAME    one more tool like echo, named NAME (repeatable)
    --env-tool           one more tool, `env {name}`, answering that variable of its environment
                         (what the daemon gave it; "(unset)" when it has none)
    --http               serve Streamable HTTP (JSON answers) at http://127.0.0.1:PORT/mcp
                         instead of stdio, on a free port it prints as `listening on PORT`;
                         with TEST_MCP_TOKEN in its environment (never on its command line)
                         every request must carry `Authorization: Bearer <that token>`,
                         else it answers 401

The SDK owns the handshake, so the two faulty handshakes go through its middleware (which
sees `initialize` before the SDK answers it); the crash is `os._exit`, which no SDK can
stand in for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

TOOLS = [
    types.Tool(name="echo", description="Answers with the text it is given.",
               input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
    types.Tool(name="fail", description="Always fails, saying why.",
               input_schema={"type": "object", "properties": {"why": {"type": "string"}}}),
    types.Tool(name="hang", description="Never answers.",
               input_schema={"type": "object", "properties": {"child": {"type": "boolean"}}}),
    types.Tool(name="crash", description="Exits in the middle of the call.", input_schema={"type": "object"}),
    types.Tool(name="shout", description="Prints its text to stderr.",
               input_schema={"type": "object", "properties": {"text": {"type": "string"}}}),
    types.Tool(name="slow", description="Answers after a while.",
               input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}}),
    types.Tool(name="pid", description="Answers its process id.", input_schema={"type": "object"}),
]
PROMPTS = [types.Prompt(name="review", description="Asks for a careful review.",
                         arguments=[types.PromptArgument(name="topic", required=True)])]
PAGE_2 = "page2"
CRASH_CODE = 3
# JSON-RPC codes the faulty handshake and an unknown tool answer with.
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def say(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def text(body: str, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=body)], is_error=is_error)


def build(argv: list[str]) -> Server[Any]:
    extra = [argv[i + 1] for i, a in enumerate(argv) if a == "--extra-tool" and i + 1 < len(argv)]
    tools = TOOLS + [types.Tool(name=n, description="Like echo.", input_schema={"type": "object"}) for n in extra]
    if "--env-tool" in argv:
        tools.append(types.Tool(name="env", description="Answers a variable of its environment.",
                                input_schema={"type": "object", "properties": {"name": {"type": "string"}}}))
    half = len(tools) // 2

    async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                         ) -> types.ListToolsResult:
        if params is not None and params.cursor == PAGE_2:
            return types.ListToolsResult(tools=tools[half:])
        return types.ListToolsResult(tools=tools[:half], next_cursor=PAGE_2)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        name, args = params.name, params.arguments or {}
        if name == "echo" or name in extra:
            return text(f"echo: {args.get('text', '')}")
        if name == "fail":
            return text(f"it failed: {args.get('why', 'no reason')}", is_error=True)
        if name == "hang":
            if args.get("child"):
                # Started and left to run (the test looks for it), never awaited. The
                # SDK points fd 0/1 away from the wire while it serves, so the
                # grandchild cannot write into it.
                subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # noqa: ASYNC220
            await anyio.sleep_forever()
        if name == "crash":
            say("test server: crashing now")
            os._exit(CRASH_CODE)
        if name == "shout":
            say(str(args.get("text", "")))
            return text("printed")
        if name == "slow":
            await anyio.sleep(float(args.get("seconds", 1)))
            return text("slept")
        if name == "pid":
            return text(str(os.getpid()))
        if name == "env" and "--env-tool" in argv:
            return text(os.environ.get(str(args.get("name", "")), "(unset)"))
        raise MCPError(INVALID_PARAMS, f"Unknown tool: {name}")

    async def list_prompts(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                           ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=PROMPTS)

    async def get_prompt(ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != "review":
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name}")
        topic = (params.arguments or {}).get("topic", "")
        return types.GetPromptResult(messages=[
            types.PromptMessage(role="user", content=types.TextContent(text=f"Review {topic} carefully."))])

    server: Server[Any] = Server("test-server", version="1", on_list_tools=list_tools, on_call_tool=call_tool,
                                 on_list_prompts=list_prompts, on_get_prompt=get_prompt)

    async def handshake_faults(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "initialize":
            if "--hang-start" in argv:
                await anyio.sleep_forever()
            if "--bad-handshake" in argv:
                raise MCPError(INVALID_REQUEST, "not today")
        return await call_next(ctx)

    server.middleware.insert(0, handshake_faults)
    return server


async def serve(argv: list[str]) -> None:
    server = build(argv)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def serve_http(argv: list[str]) -> None:
    import socket

    import uvicorn

    token = os.environ.get("TEST_MCP_TOKEN", "")
    app = build(argv).streamable_http_app(json_response=True, host="127.0.0.1")

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and token:
            given = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            if given != f"Bearer {token}":
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b'{"error": "invalid_token"}'})
                return
        await app(scope, receive, send)

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sys.stdout.write(f"listening on {sock.getsockname()[1]}\n")
    sys.stdout.flush()
    config = uvicorn.Config(guarded, lifespan="on", log_level="warning")
    await uvicorn.Server(config).serve(sockets=[sock])


def main(argv: list[str]) -> int:
    if "--exit-at-start" in argv:
        return 1
    say("test server: starting")
    if "--stdout-noise" in argv:
        # Before the SDK claims stdout, so the line really reaches the client.
        sys.stdout.write("this line is not JSON\n")
        sys.stdout.flush()
    if "--http" in argv:
        anyio.run(serve_http, argv, backend="asyncio")  # uvicorn's loop
    else:
        anyio.run(serve, argv, backend="trio")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
