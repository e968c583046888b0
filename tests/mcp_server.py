"""A small MCP server for the tests: stdio, one JSON-RPC message a line, stdlib only.

Run it with `sys.executable tests/mcp_server.py [options]`. Its tools:

    echo {text}          answers "echo: <text>"
    fail {why}           answers with isError
    hang {child}         never answers; with child, first starts a grandchild that sleeps
    crash                exits (code 3) in the middle of the call, without an answer
    shout {text}         prints text to stderr, then answers "printed"
    slow {seconds}       answers after that many seconds
    pid                  answers its process id

It prints a banner to stderr when it starts, and lists its tools in two pages (so the
client's cursor is exercised). Options change how it starts:

    --hang-start         never answers initialize
    --bad-handshake      answers initialize with an error
    --exit-at-start      exits at once, before reading anything
    --stdout-noise       writes a line that is not JSON to stdout first
    --extra-tool NAME    one more tool like echo, named NAME (repeatable)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

_out = threading.Lock()

TOOLS = [
    {"name": "echo", "description": "Answers with the text it is given.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "fail", "description": "Always fails, saying why.",
     "inputSchema": {"type": "object", "properties": {"why": {"type": "string"}}}},
    {"name": "hang", "description": "Never answers.",
     "inputSchema": {"type": "object", "properties": {"child": {"type": "boolean"}}}},
    {"name": "crash", "description": "Exits in the middle of the call.", "inputSchema": {"type": "object"}},
    {"name": "shout", "description": "Prints its text to stderr.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "slow", "description": "Answers after a while.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "pid", "description": "Answers its process id.", "inputSchema": {"type": "object"}},
]


def send(msg: dict) -> None:
    with _out:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def text_result(rid, text: str, is_error: bool = False) -> None:
    result: dict = {"content": [{"type": "text", "text": text}]}
    if is_error:
        result["isError"] = True
    send({"jsonrpc": "2.0", "id": rid, "result": result})


def call(rid, name: str, args: dict, extra: list[str]) -> None:
    if name == "echo" or name in extra:
        text_result(rid, f"echo: {args.get('text', '')}")
    elif name == "fail":
        text_result(rid, f"it failed: {args.get('why', 'no reason')}", is_error=True)
    elif name == "hang":
        if args.get("child"):
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        while True:
            time.sleep(60)
    elif name == "crash":
        sys.stderr.write("test server: crashing now\n")
        sys.stderr.flush()
        os._exit(3)
    elif name == "shout":
        sys.stderr.write(f"{args.get('text', '')}\n")
        sys.stderr.flush()
        text_result(rid, "printed")
    elif name == "slow":
        time.sleep(float(args.get("seconds", 1)))
        text_result(rid, "slept")
    elif name == "pid":
        text_result(rid, str(os.getpid()))
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})


def main(argv: list[str]) -> int:
    if "--exit-at-start" in argv:
        return 1
    extra = [argv[i + 1] for i, a in enumerate(argv) if a == "--extra-tool" and i + 1 < len(argv)]
    tools = TOOLS + [{"name": n, "description": "Like echo.", "inputSchema": {"type": "object"}} for n in extra]
    sys.stderr.write("test server: starting\n")
    sys.stderr.flush()
    if "--stdout-noise" in argv:
        send_raw = "this line is not JSON"
        with _out:
            sys.stdout.write(send_raw + "\n")
            sys.stdout.flush()
    half = len(tools) // 2
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, rid = msg.get("method"), msg.get("id")
        if method == "initialize":
            if "--hang-start" in argv:
                while True:
                    time.sleep(60)
            if "--bad-handshake" in argv:
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32600, "message": "not today"}})
                continue
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "test-server", "version": "1"}}})
        elif method == "tools/list":
            cursor = (msg.get("params") or {}).get("cursor")
            if cursor == "page2":
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools[half:]}})
            else:
                send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools[:half], "nextCursor": "page2"}})
        elif method == "tools/call":
            params = msg.get("params") or {}
            threading.Thread(target=call, args=(rid, params.get("name"), params.get("arguments") or {}, extra),
                             daemon=True).start()
        elif rid is not None:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
