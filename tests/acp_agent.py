"""A scripted ACP agent for tests: plain Python stdlib, run by the daemon as a real
program (JSON-RPC 2.0, one message a line, on stdin/stdout).

What a prompt does is its text's first word:

    stream            thought chunks, then message chunks
    tool              a `read` tool call that reads notes.txt through fs/read_text_file
    write PATH TEXT   an `edit` tool call with a diff; asks permission; writes through
                      fs/write_text_file only when allowed
    writes PATH...    a `write` of each path (its text the path), all asking at once
    read PATH         fs/read_text_file; answers with the content or the error
    plan              a plan update, then an answer
    slow              fifty chunks 0.1 s apart; honours session/cancel ("cancelled")
    hang              starts a child in its group, ignores SIGTERM and session/cancel
    crash             a chunk, then exits with code 3
    env               answers with the names of its environment variables that hold
                      BMOE or SECRET
    session           answers with its session id and whether it was loaded
    anything else     "You said: <text>"

Its start is chosen by the environment: ACP_AGENT_NO_LOAD=1 advertises no loadSession;
ACP_AGENT_HANG_INIT=1 never answers initialize; ACP_AGENT_STATE=DIR keeps each
session's history there (what session/load replays); ACP_AGENT_LOG=FILE gets one JSON
line per message received, with the pid.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

_out_lock = threading.Lock()
_responses: dict[int, tuple[threading.Event, list[Any]]] = {}
_requests: queue.Queue[dict[str, Any] | None] = queue.Queue()
_cancelled = threading.Event()
_hanging = threading.Event()  # SIGTERM is ignored from then on
# From 1, as the daemon's own ids: the two id spaces overlap on purpose.
_ids = iter(range(1, 10**9))
STATE = Path(os.environ["ACP_AGENT_STATE"]) if os.environ.get("ACP_AGENT_STATE") else None
LOG = os.environ.get("ACP_AGENT_LOG")
sessions: dict[str, dict[str, Any]] = {}


def send(msg: dict[str, Any]) -> None:
    line = json.dumps({"jsonrpc": "2.0", **msg}) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def log(msg: dict[str, Any]) -> None:
    if LOG:
        with open(LOG, "a") as fh:
            fh.write(json.dumps({"pid": os.getpid(), **msg}) + "\n")


def call(method: str, params: dict[str, Any]) -> tuple[Any, Any]:
    """A request to the client: (result, error)."""
    rid = next(_ids)
    slot: tuple[threading.Event, list[Any]] = (threading.Event(), [])
    _responses[rid] = slot
    send({"id": rid, "method": method, "params": params})
    slot[0].wait()
    msg = slot[1][0]
    return msg.get("result"), msg.get("error")


def update(sid: str, upd: dict[str, Any]) -> None:
    send({"method": "session/update", "params": {"sessionId": sid, "update": upd}})


def say(sid: str, text: str, kind: str = "agent_message_chunk", size: int = 6) -> None:
    for i in range(0, len(text), size):
        update(sid, {"sessionUpdate": kind, "content": {"type": "text", "text": text[i:i + size]}})


def reader() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        msg = json.loads(line)
        log(msg)
        if "method" in msg and "id" in msg:
            _requests.put(msg)
        elif "method" in msg:
            if msg["method"] == "session/cancel":
                _cancelled.set()
        elif msg.get("id") in _responses:
            slot = _responses.pop(msg["id"])
            slot[1].append(msg)
            slot[0].set()
    _requests.put(None)


def save(sid: str) -> None:
    if STATE is not None:
        STATE.mkdir(parents=True, exist_ok=True)
        (STATE / f"{sid}.json").write_text(json.dumps(sessions[sid]))


def handle(msg: dict[str, Any]) -> None:
    method, params, rid = msg["method"], msg.get("params") or {}, msg["id"]
    if method == "initialize":
        if os.environ.get("ACP_AGENT_HANG_INIT") == "1":
            return
        send({"id": rid, "result": {
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": os.environ.get("ACP_AGENT_NO_LOAD") != "1"},
            "authMethods": [],
        }})
    elif method == "session/new":
        sid = "sess-" + uuid.uuid4().hex[:12]
        sessions[sid] = {"cwd": params["cwd"], "history": [], "loaded": False}
        save(sid)
        send({"id": rid, "result": {"sessionId": sid}})
    elif method == "session/load":
        sid = params["sessionId"]
        path = STATE / f"{sid}.json" if STATE is not None else None
        if path is None or not path.exists():
            send({"id": rid, "error": {"code": -32002, "message": f"session {sid} not found"}})
            return
        sessions[sid] = {**json.loads(path.read_text()), "loaded": True}
        for role, text in sessions[sid]["history"]:  # the replay the client ignores
            say(sid, text, "user_message_chunk" if role == "user" else "agent_message_chunk", size=len(text) or 1)
        send({"id": rid, "result": {}})
    elif method == "session/prompt":
        threading.Thread(target=prompt, args=(rid, params), daemon=True).start()
    else:
        send({"id": rid, "error": {"code": -32601, "message": f"no method {method}"}})


def write(sid: str, cwd: str, name: str, new: str) -> tuple[str, str]:
    """An `edit` call of `name` that asks permission and writes `new` only when allowed:
    (the answer, the stop reason)."""
    reason = "end_turn"
    path = name if os.path.isabs(name) else os.path.join(cwd, name)
    result, error = call("fs/read_text_file", {"sessionId": sid, "path": path})
    old = result["content"] if result else None
    diff = {"type": "diff", "path": path, "oldText": old, "newText": new}
    call_id = "call-" + uuid.uuid4().hex[:6]
    update(sid, {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": f"Write {name}", "kind": "edit",
                 "status": "pending", "content": [diff], "rawInput": {"path": path, "content": new}})
    result, error = call("session/request_permission", {
        "sessionId": sid,
        "toolCall": {"toolCallId": call_id, "title": f"Write {name}", "kind": "edit", "content": [diff]},
        "options": [{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "always", "name": "Always allow", "kind": "allow_always"},
                    {"optionId": "no", "name": "Reject", "kind": "reject_once"}],
    })
    outcome = (result or {}).get("outcome", {})
    if outcome.get("outcome") == "selected" and outcome.get("optionId") in ("yes", "always"):
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "in_progress"})
        result, error = call("fs/write_text_file", {"sessionId": sid, "path": path, "content": new})
        if error:
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed",
                         "content": [{"type": "content", "content": {"type": "text", "text": error["message"]}}]})
            answer = f"The write was refused: {error['message']}"
        else:
            update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "completed",
                         "content": [{"type": "content", "content": {"type": "text", "text": f"wrote {name}"}}]})
            answer = f"Wrote {name}."
    else:
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": call_id, "status": "failed"})
        answer = f"Not written ({outcome.get('outcome')} {outcome.get('optionId')})."
        if outcome.get("outcome") == "cancelled":
            reason = "cancelled"
    return answer, reason


def prompt(rid: int, params: dict[str, Any]) -> None:
    sid = params["sessionId"]
    text = "".join(b.get("text", "") for b in params["prompt"] if b.get("type") == "text")
    _cancelled.clear()
    session = sessions[sid]
    session["history"].append(["user", text])
    reason = "end_turn"
    answer = ""
    word, _, rest = text.strip().partition(" ")
    cwd = session["cwd"]
    if word == "stream":
        say(sid, "Thinking it over.", "agent_thought_chunk")
        answer = "Hello from the scripted agent."
    elif word == "tool":
        path = os.path.join(cwd, "notes.txt")
        update(sid, {"sessionUpdate": "tool_call", "toolCallId": "call-read", "title": "Read notes.txt",
                     "kind": "read", "status": "pending", "locations": [{"path": path}], "rawInput": {"path": path}})
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call-read", "status": "in_progress"})
        result, error = call("fs/read_text_file", {"sessionId": sid, "path": path})
        content = result["content"] if result else f"error: {error['message']}"
        update(sid, {"sessionUpdate": "tool_call_update", "toolCallId": "call-read", "status": "completed",
                     "content": [{"type": "content", "content": {"type": "text", "text": content}}]})
        answer = "Done reading."
    elif word == "write":
        name, _, new = rest.partition(" ")
        answer, reason = write(sid, cwd, name, new)
    elif word == "writes":
        # Each in a thread of its own: the permissions are asked at once, as an agent's
        # parallel calls ask them.
        names = rest.split()
        said: dict[str, tuple[str, str]] = {}

        def one(name: str) -> None:
            said[name] = write(sid, cwd, name, name)

        threads = [threading.Thread(target=one, args=(name,)) for name in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        answer = " ".join(said[name][0] for name in names)
        if any(r == "cancelled" for _, r in said.values()):
            reason = "cancelled"
    elif word == "read":
        result, error = call("fs/read_text_file", {"sessionId": sid, "path": rest})
        answer = f"content: {result['content']}" if result else f"refused: {error['message']}"
    elif word == "outside":
        result, error = call("fs/write_text_file", {"sessionId": sid, "path": rest, "content": "escaped"})
        answer = "written" if error is None else f"refused: {error['message']}"
    elif word == "plan":
        update(sid, {"sessionUpdate": "plan", "entries": [
            {"content": "Read the code", "priority": "high", "status": "completed"},
            {"content": "Change it", "priority": "medium", "status": "in_progress"}]})
        answer = "Planned."
    elif word == "slow":
        for i in range(50):
            if _cancelled.is_set():
                reason = "cancelled"
                break
            say(sid, f"piece {i}. ")
            time.sleep(0.1)
        answer = ""
    elif word == "hang":
        _hanging.set()
        child = subprocess.Popen([sys.executable, "-c",
                                  "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
        say(sid, f"Working (child {child.pid})...", size=1000)
        while True:
            time.sleep(1)
    elif word == "crash":
        say(sid, "About to fail.")
        sys.stdout.flush()
        os._exit(3)
    elif word == "env":
        names = sorted(k for k in os.environ if "BMOE" in k.upper() or "SECRET" in k.upper())
        values = [v for v in os.environ.values() if "sk-secret" in v]
        answer = f"env: {names} values: {len(values)}"
    elif word == "session":
        answer = f"session {sid} loaded={session['loaded']} cwd={cwd}"
    else:
        answer = f"You said: {text}"
    if answer:
        say(sid, answer)
        session["history"].append(["agent", answer])
    save(sid)
    send({"id": rid, "result": {"stopReason": reason}})


def on_term(signum: int, frame: Any) -> None:
    if not _hanging.is_set():
        os._exit(128 + signum)


def main() -> None:
    signal.signal(signal.SIGTERM, on_term)
    threading.Thread(target=reader, daemon=True).start()
    while True:
        msg = _requests.get()
        if msg is None:
            return
        handle(msg)


if __name__ == "__main__":
    main()
