"""A client run inside a network namespace by tests/test_netns_locality.py.

It reads a plan (a JSON list of requests) on stdin, sends each to the daemon at the
address given, and prints one JSON list of answers: {status, body} per request, where
body is the parsed JSON (or the text). A step {"events": seconds} reads /api/events
for that long and answers with the events it saw, as [name, data, id] lists. With
"until": a conversation id, it stops early once that conversation's state event says
idle or error. With "announce": true, it first prints the line `open` (flushed) as
soon as the stream's first bytes arrive: the daemon sends them once the subscription
is in place, so every event published after that line reaches this stream if the
peer may see it.
"""

from __future__ import annotations

import json
import sys
import time

import httpx

OPEN_LINE = "open"
ENDED = ("idle", "error")


def read_events(client: httpx.Client, seconds: float, headers: dict[str, str], until: str | None = None,
                announce: bool = False) -> dict:
    seen: list[list] = []
    deadline = time.monotonic() + seconds
    ev_id: int | None = None
    name, data = "message", ""
    try:
        with client.stream("GET", "/api/events", headers=headers, timeout=httpx.Timeout(10, read=seconds)) as resp:
            if resp.status_code != 200:
                return {"status": resp.status_code, "body": json.loads(resp.read() or b"null")}
            for line in resp.iter_lines():
                if line.startswith(":") and announce:  # `: connected`, sent once subscribed
                    print(OPEN_LINE, flush=True)
                    announce = False
                elif line.startswith("id: "):
                    ev_id = int(line[4:])
                elif line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    data += line[6:]
                elif line == "" and data:
                    event = json.loads(data)
                    seen.append([name, event, ev_id])
                    ev_id, name, data = None, "message", ""
                    if until is not None and seen[-1][0] == "conversation" and event.get("id") == until \
                            and event.get("state") in ENDED:
                        break
                if time.monotonic() > deadline:
                    break
    except httpx.ReadTimeout:
        pass
    return {"status": 200, "body": seen}


def main() -> None:
    base, key = sys.argv[1], sys.argv[2]
    plan = json.load(sys.stdin)
    out = []
    with httpx.Client(base_url=base, timeout=20) as client:
        for step in plan:
            headers = {"Authorization": f"Bearer {key}"} if step.get("key", True) else {}
            headers.update(step.get("headers", {}))
            if "events" in step:
                out.append(read_events(client, float(step["events"]), headers, step.get("until"),
                                       bool(step.get("announce"))))
                continue
            if "sleep" in step:
                time.sleep(float(step["sleep"]))
                out.append({"status": 0, "body": None})
                continue
            resp = client.request(step["method"], step["path"], json=step.get("json"), headers=headers)
            try:
                body = resp.json()
            except ValueError:
                body = resp.text
            out.append({"status": resp.status_code, "body": body})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
