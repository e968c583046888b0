"""Who may use what, from a real peer on the network.

The test makes a network namespace joined to this one by a veth pair (its own test
addresses, 10.231.x.0/30), starts the daemon listening on all addresses with a key,
and calls it from inside the namespace: the TCP peer is then a real non-loopback
address. Every local-only route answers 403 local_only; the open ones work with the
key. Where namespaces cannot be made (no `ip`, no CAP_NET_ADMIN, `ip` refused), the
test is skipped and says why; under BMOE_REQUIRE_PEERS (CI) it fails with that text
(tests/peers.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trio

from tests.daemon_proc import REPO, SSE, run_daemon
from tests.peers import need_peer

EVERY_5 = {"kind": "interval", "every_minutes": 5}

CLIENT = Path(__file__).with_name("netns_client.py")
CAP_NET_ADMIN, CAP_SYS_ADMIN = 12, 21  # linux/capability.h
PEER_STREAM_S = 60  # the longest the peer's stream is read (it ends at its own conversation's end)
OPEN_TIMEOUT_S = 30
NO_PEER = "cannot make a network namespace here, so there is no non-loopback peer to test from"


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)


def missing_capabilities() -> list[str]:
    """The capabilities `ip netns add` and a veth pair need that this process lacks."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return []  # not Linux's /proc: let `ip` say what fails
    effective = next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("CapEff:")), 0)
    return [name for name, bit in (("CAP_NET_ADMIN", CAP_NET_ADMIN), ("CAP_SYS_ADMIN", CAP_SYS_ADMIN))
            if not effective >> bit & 1]


@pytest.fixture
def netns() -> Iterator[tuple[str, str]]:
    """(namespace name, the host's address as the namespace reaches it)."""
    if shutil.which("ip") is None:
        need_peer(f"{NO_PEER}: there is no `ip` command (install Debian's iproute2)")
    lacking = missing_capabilities()
    if lacking:
        need_peer(f"{NO_PEER}: this process lacks {' and '.join(lacking)} (run the tests as root, in a container "
                  "started with --cap-add NET_ADMIN --cap-add SYS_ADMIN)")
    n = os.getpid() % 250 + 1
    name, host_if, peer_if = f"bmoe-t{os.getpid()}", f"bmh{os.getpid()}"[:15], f"bmp{os.getpid()}"[:15]
    host_ip, peer_ip = f"10.231.{n}.1", f"10.231.{n}.2"
    made = _ip("netns", "add", name)
    if made.returncode != 0:
        need_peer(f"{NO_PEER}: `ip netns add` was refused ({made.stderr.strip()})")
    try:
        steps = [
            ("link", "add", host_if, "type", "veth", "peer", "name", peer_if),
            ("link", "set", peer_if, "netns", name),
            ("addr", "add", f"{host_ip}/30", "dev", host_if),
            ("link", "set", host_if, "up"),
            ("-n", name, "addr", "add", f"{peer_ip}/30", "dev", peer_if),
            ("-n", name, "link", "set", peer_if, "up"),
            ("-n", name, "link", "set", "lo", "up"),
        ]
        for step in steps:
            done = _ip(*step)
            if done.returncode != 0:
                need_peer(f"{NO_PEER}: `ip {' '.join(step)}` was refused ({done.stderr.strip()})")
        yield name, host_ip
    finally:
        _ip("link", "del", host_if)  # takes its peer with it
        _ip("netns", "del", name)


def peer_command(ns: str, url: str, key: str) -> list[str]:
    return ["ip", "netns", "exec", ns, sys.executable, str(CLIENT), url, key]


PEER_ENV = {**os.environ, "PYTHONPATH": str(REPO)}


async def from_peer(ns: str, url: str, key: str, plan: list[dict]) -> list[dict]:
    done = await trio.run_process(
        peer_command(ns, url, key),
        stdin=json.dumps(plan).encode(), capture_stdout=True, capture_stderr=True, env=PEER_ENV, check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return json.loads(done.stdout)


async def watch_from_peer(ns: str, url: str, key: str, until: str, into: list[list],
                          *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    """Reads /api/events from the peer until conversation `until` ends, putting the
    events in `into`; started once the peer's stream is open (subscribed)."""
    plan = [{"events": PEER_STREAM_S, "until": until, "announce": True}]
    proc = await trio.lowlevel.open_process(peer_command(ns, url, key), stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=PEER_ENV)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        await proc.stdin.send_all(json.dumps(plan).encode())
        await proc.stdin.aclose()
        out = b""
        with trio.fail_after(OPEN_TIMEOUT_S):
            while b"\n" not in out and (chunk := await proc.stdout.receive_some()):
                out += chunk
        first, _, out = out.partition(b"\n")
        assert first == b"open", (first + out, await proc.stderr.receive_some())
        task_status.started()
        while chunk := await proc.stdout.receive_some():
            out += chunk
        assert await proc.wait() == 0, await proc.stderr.receive_some()
        (answer,) = json.loads(out)
        assert answer["status"] == 200, answer
        into.extend(answer["body"])
    finally:
        if proc.returncode is None:
            proc.kill()
            with trio.CancelScope(shield=True):
                await proc.wait()


SCRIPT = {"token_delay": 0.01, "rounds": [{"when": "hello", "text": "An answer from the script."}],
          "default": {"text": "A private answer."}}


async def test_a_network_peer_gets_only_what_the_contract_allows(netns, tmp_path: Path) -> None:
    ns, host_ip = netns
    key = "netns-test-key-1234567890"
    (tmp_path / "key").write_text(key + "\n")
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "a.txt").write_text("local file\n")
    args = ("--host", "0.0.0.0", "--scripted", str(tmp_path / "script.json"), "--api-key-file", str(tmp_path / "key"))
    async with run_daemon(tmp_path / "data", *args) as d:
        port = httpx.URL(d.url).port
        local_url, peer_url = f"http://127.0.0.1:{port}", f"http://{host_ip}:{port}"
        auth = {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(base_url=local_url, headers=auth, timeout=30) as local:
            ws = (await local.post("/api/workspaces", json={"path": str(folder)})).json()
            private = (await local.post("/api/conversations", json={"workspace": ws["id"]})).json()
            task = await local.post(
                "/api/tasks", json={"title": "t", "prompt": "p", "schedule": {"kind": "interval", "every_minutes": 600}}
            )
            assert task.status_code == 201, task.text
            tid = task.json()["id"]
            pid = private["id"]
            conv = f"/api/conversations/{pid}"

            local_only = [
                ("GET", "/api/workspaces", None),
                ("POST", "/api/workspaces", {"path": str(folder)}),
                ("DELETE", f"/api/workspaces/{ws['id']}", None),
                ("GET", "/api/debug/actors", None),
                ("GET", "/api/providers", None),
                ("POST", "/api/providers", {"name": "p", "base_url": "http://10.0.0.9/v1", "models": ["m"]}),
                ("PUT", "/api/providers/p", {"name": "p", "base_url": "http://10.0.0.9/v1", "models": ["m"]}),
                ("DELETE", "/api/providers/p", None),
                ("GET", "/api/connect", None),
                ("POST", "/api/connect/opencode", {}),
                ("GET", "/api/skills", None),
                ("POST", "/api/skills", {"name": "x", "description": "d", "body": "b"}),
                ("PUT", "/api/skills/x", {"name": "x", "description": "d", "body": "b"}),
                ("PATCH", "/api/skills/review-change", {"enabled": False}),
                ("DELETE", "/api/skills/x", None),
                ("GET", "/api/tasks", None),
                ("POST", "/api/tasks", {"title": "t", "prompt": "p", "schedule": EVERY_5}),
                ("PUT", f"/api/tasks/{tid}", {"title": "t2", "prompt": "p", "schedule": EVERY_5}),
                ("POST", f"/api/tasks/{tid}/run", None),
                ("DELETE", f"/api/tasks/{tid}", None),
                ("GET", conv, None),
                ("PATCH", conv, {"title": "taken"}),
                ("POST", f"{conv}/messages", {"text": "hi"}),
                ("POST", f"{conv}/edit", {"item": "i-x", "text": "hi"}),
                ("POST", f"{conv}/stop", None),
                ("POST", f"{conv}/approval", {"item": "i-x", "decision": "approve"}),
                ("GET", f"{conv}/file?path=a.txt", None),
                ("DELETE", conv, None),
                ("POST", "/api/conversations", {"workspace": ws["id"]}),
                ("POST", "/api/conversations", {"route": "p/m"}),
                ("POST", "/api/conversations", {"mode": "full"}),
            ]
            plan = [{"method": m, "path": p, "json": j} for m, p, j in local_only]
            # The peer address is the TCP peer's, never a header's.
            plan.append({"method": "GET", "path": "/api/workspaces", "headers": {"X-Forwarded-For": "127.0.0.1",
                                                                                 "X-Real-IP": "127.0.0.1"}})
            open_steps = [
                {"method": "GET", "path": "/health", "key": False},
                {"method": "GET", "path": "/api/conversations", "key": False},
                {"method": "GET", "path": "/api/agent"},
                {"method": "GET", "path": "/v1/models"},
                {"method": "POST", "path": "/api/conversations", "json": {"mode": "read_only", "title": "from afar"}},
                {"method": "GET", "path": "/api/conversations"},
            ]
            answers = await from_peer(ns, peer_url, key, plan + open_steps)
            refused, opened = answers[: len(plan)], answers[len(plan):]
            for step, got in zip(plan, refused, strict=True):
                assert (got["status"], got["body"]["code"]) == (403, "local_only"), (step, got)
                assert "this computer" in got["body"]["error"]
            health, no_key, agent, models, created, listed = opened
            assert health["status"] == 200
            assert (no_key["status"], no_key["body"]["code"]) == (401, "unauthorized")
            assert agent["status"] == 200 and agent["body"]["mcp"] == []
            assert models["status"] == 200 and models["body"]["data"]
            assert created["status"] == 201
            public = created["body"]["id"]
            assert [c["id"] for c in listed["body"]] == [public]

            # Nothing the peer asked for changed anything here.
            assert (await local.get("/api/workspaces")).json() == [ws]
            here = (await local.get(conv)).json()
            assert here["title"] == private["title"] and here["items"] == []
            assert [t["title"] for t in (await local.get("/api/tasks")).json()] == ["t"]
            assert (await local.get("/api/providers")).json() == []

            # A message from the peer runs (without tools), and its events reach the
            # peer's stream; the private conversation's and the task's do not. They are
            # published while that stream is open: it has said so (it is subscribed)
            # before they are triggered, and the peer's own events, triggered after
            # them, then arrive on it, so none of the events it lacks came too early.
            peer_events: list[list] = []
            local_sse = SSE(local)
            async with trio.open_nursery() as outer:
                await outer.start(local_sse.run)
                with trio.fail_after(PEER_STREAM_S + 30):
                    async with trio.open_nursery() as nursery:
                        await nursery.start(watch_from_peer, ns, peer_url, key, public, peer_events)
                        r = await local.post(f"{conv}/messages", json={"text": "private question"})
                        assert r.status_code == 202
                        ended = await local_sse.wait_for(lambda e: e[1] == "conversation" and e[2]["id"] == pid
                                                         and e[2]["state"] in ("idle", "error"))
                        assert ended[2]["state"] == "idle"
                        renamed = await local.put(f"/api/tasks/{tid}", json={
                            "title": "renamed", "prompt": "p", "schedule": {"kind": "interval", "every_minutes": 600}})
                        assert renamed.status_code == 200, renamed.text
                        await local_sse.wait_for(lambda e: e[1] == "task" and e[2]["title"] == "renamed")
                        hello = {"method": "POST", "path": f"/api/conversations/{public}/messages",
                                 "json": {"text": "hello"}}
                        sent = await from_peer(ns, peer_url, key, [hello])
                        assert sent[0]["status"] == 202, sent
                outer.cancel_scope.cancel()

            def conversation_of(e: tuple | list) -> str | None:
                return e[1].get("conversation", e[1].get("id")) if e[0] in ("item", "delta", "conversation") else None

            # Here the private run and the task change were published (a local stream saw them) ...
            private_ids = [e[0] for e in local_sse.events if (e[2].get("conversation", e[2].get("id")) == pid
                                                               and e[1] in ("item", "delta", "conversation"))]
            assert private_ids and "A private answer." in json.dumps(local_sse.events)
            assert any(e[1] == "task" for e in local_sse.events)
            # ... and the peer's stream, open throughout, carried its own run after them.
            mine = [e for e in peer_events if conversation_of(e) == public]
            assert mine and min(e[2] for e in mine) > max(private_ids), (peer_events, private_ids)
            assert "An answer from the script." in json.dumps(mine)
            assert [e[1]["state"] for e in mine if e[0] == "conversation"][-1] == "idle"
            # None of what the peer may not see reached it.
            assert {conversation_of(e) for e in peer_events} - {None} == {public}, peer_events
            assert not any(e[0] == "task" for e in peer_events)
            assert "A private answer." not in json.dumps(peer_events)
