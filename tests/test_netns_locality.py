"""Who may use what, from a real peer on the network.

The test makes a network namespace joined to this one by a veth pair (its own test
addresses, 10.231.x.0/30), starts the daemon listening on all addresses with a key,
and calls it from inside the namespace: the TCP peer is then a real non-loopback
address. Every local-only route answers 403 local_only; the open ones work with the
key. Where namespaces cannot be made (not root, no `ip`, no permission), the test is
skipped and says why.
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

from tests.daemon_proc import REPO, run_daemon

CLIENT = Path(__file__).with_name("netns_client.py")


def _ip(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)


@pytest.fixture
def netns() -> Iterator[tuple[str, str]]:
    """(namespace name, the host's address as the namespace reaches it)."""
    if shutil.which("ip") is None:
        pytest.skip("no `ip` command (iproute2): cannot make a network namespace for a non-loopback peer")
    if os.geteuid() != 0:
        pytest.skip("not root: cannot make a network namespace for a non-loopback peer")
    n = os.getpid() % 250 + 1
    name, host_if, peer_if = f"bmoe-t{os.getpid()}", f"bmh{os.getpid()}"[:15], f"bmp{os.getpid()}"[:15]
    host_ip, peer_ip = f"10.231.{n}.1", f"10.231.{n}.2"
    made = _ip("netns", "add", name)
    if made.returncode != 0:
        pytest.skip(f"`ip netns add` failed ({made.stderr.strip()}): cannot make a non-loopback peer here")
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
                pytest.skip(f"`ip {' '.join(step)}` failed ({done.stderr.strip()}): no non-loopback peer here")
        yield name, host_ip
    finally:
        _ip("link", "del", host_if)  # takes its peer with it
        _ip("netns", "del", name)


async def from_peer(ns: str, url: str, key: str, plan: list[dict]) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = await trio.run_process(
        ["ip", "netns", "exec", ns, sys.executable, str(CLIENT), url, key],
        stdin=json.dumps(plan).encode(), capture_stdout=True, capture_stderr=True, env=env, check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return json.loads(done.stdout)


SCRIPT = {"token_delay": 0.01, "rounds": [{"when": "hello", "text": "An answer from the script."}]}


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
                ("POST", "/api/tasks", {"title": "t", "prompt": "p", "schedule": {"kind": "interval", "every_minutes": 5}}),
                ("PUT", f"/api/tasks/{tid}", {"title": "t2", "prompt": "p", "schedule": {"kind": "interval", "every_minutes": 5}}),
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
            # peer's stream; the private conversation's events do not.
            async def watch(task_status: trio.TaskStatus[list[dict]] = trio.TASK_STATUS_IGNORED) -> None:
                task_status.started()
                result.extend(await from_peer(ns, peer_url, key, [{"events": 6}]))

            result: list[dict] = []
            async with trio.open_nursery() as nursery:
                await nursery.start(watch)
                await trio.sleep(1.5)  # the peer's stream is open
                r = await local.post(f"{conv}/messages", json={"text": "private question"})
                assert r.status_code == 202
                sent = await from_peer(ns, peer_url, key, [
                    {"method": "POST", "path": f"/api/conversations/{public}/messages", "json": {"text": "hello"}},
                ])
                assert sent[0]["status"] == 202, sent
            events = result[0]["body"]
            convs = {e[1].get("conversation", e[1].get("id")) for e in events if e[0] in ("item", "delta", "conversation")}
            assert public in convs
            assert pid not in convs
            assert not any(e[0] == "task" for e in events)
            assert "An answer from the script." in json.dumps(events)
