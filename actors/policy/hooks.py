"""The person's hooks: their own commands and URLs, told what the built-in run does.

`HookRunner` implements actors.runs.env.Hooks over `<data>/agent/hooks.json` (its shape, the
matcher and what a hook is told: actors/policy/hooks_config.py). Never a file in a workspace:
a folder may come from anyone.

- A command hook runs `/bin/sh -c command` in the conversation's workspace (the data
  folder when it has none), in a session and process group of its own, with the event
  as JSON on its stdin and in variables (BMOE_EVENT, BMOE_CONVERSATION, BMOE_WORKSPACE,
  BMOE_TOOL, BMOE_TOOL_ARGS, the first 2,000 characters of BMOE_TOOL_RESULT,
  BMOE_TOOL_STATE), in an environment without the daemon's own variables and the
  provider keys. Its stdout is dropped; its stderr is what it says.
- `pre_tool_use`: a hook that exits 2 blocks the call, and the model reads its stderr
  (trimmed, at most WHY_CHARS) as why. Any other failure, a timeout included, is logged
  and blocks nothing. The hooks of an event run one after another in the file's order;
  a block stops the rest.
- When a hook's shell exits, its whole group is killed: a background child it left
  goes with it. A stop (the caller's cancellation) kills the running hook's group at
  once and reaps it.
- An HTTP hook gets the event as a JSON POST, fire and forget: fire() only queues it
  (a full queue drops it, and says so); the actor's task sends it, at most
  HTTP_IN_FLIGHT at once, each within HTTP_TIMEOUT_S. The run never waits for one.
- No hook for an event: fire() is a dict lookup. The file is looked at (size,
  modification time, inode) at most once every RECHECK_S, and read again when it
  changed; one that cannot be used is logged once, its last good version stays in use,
  and `listing()` (GET /api/hooks) says why. A removed file means no hooks.
- Each hook keeps its last outcome: ran, blocked, failed, timed_out, stopped (a stop
  ended it) or dropped (an HTTP post that found the queue full), with when.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs
import trio

from actors.actor import ActorStats, mailbox_depth
from actors.fs.paths import read_regular
from actors.policy.hooks_config import (
    CommandHook,
    HookConfig,
    HookEvent,
    HttpHook,
    event_json,
    hook_environment,
    parse_config,
    shown_url,
)
from actors.process import signal_group, wait_exit

if TYPE_CHECKING:  # imported with the first HTTP hook's post: most daemons have none, and start without it
    import httpx

log = logging.getLogger("bmoe.hooks")

HOOKS_FILE = "hooks.json"
SHELL = "/bin/sh"
BLOCK_EXIT = 2  # a pre_tool_use hook's "no"
HTTP_TIMEOUT_S = 5.0
RECHECK_S = 1.0  # how often fire() looks at the file
MAX_CONFIG_BYTES = 256 * 1024
STDERR_KEEP_BYTES = 8 * 1024
WHY_CHARS = 1000
DETAIL_CHARS = 300
READ_CHUNK = 64 * 1024
REAP_S = 2.0
HTTP_QUEUE = 64
HTTP_IN_FLIGHT = 8

Result = Literal["ran", "blocked", "failed", "timed_out", "stopped", "dropped"]


# ---- running one command ----


@attrs.frozen
class Ran:
    """How one command hook's process ended: its exit code (None: it did not run to its
    end), its stderr (the first STDERR_KEEP_BYTES), and whether its time ran out."""

    code: int | None
    stderr: str
    timed_out: bool = False
    start_failed: str | None = None


async def run_hook_command(command: str, *, cwd: str, env: dict[str, str], stdin: bytes,
                           limit_s: float) -> Ran:
    """Run `/bin/sh -c command` in a session and process group of its own, `stdin` on its
    input. When it exits, its group is killed (a background child goes with it); when
    `limit_s` runs out, too. Cancelled: its group is killed (SIGKILL) and it is reaped
    (shielded, at most REAP_S) before the cancellation goes on."""
    try:
        proc = await trio.lowlevel.open_process(
            [SHELL, "-c", command], cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return Ran(None, "", start_failed=f"it could not start: {why}")
    assert proc.stdin is not None and proc.stderr is not None
    err = bytearray()
    try:
        with trio.move_on_after(limit_s) as deadline:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_feed, proc.stdin, stdin)
                nursery.start_soon(_drain, proc.stderr, err)
                await wait_exit(proc.pid, math.inf)
                # The shell is done: what it left in its group goes too, which also
                # closes the stderr those would hold open. Signalled before the shell
                # is reaped, while the group's id cannot belong to another process.
                signal_group(proc.pid, signal.SIGKILL)
    finally:
        if proc.returncode is None:
            signal_group(proc.pid, signal.SIGKILL)
        with trio.move_on_after(REAP_S) as cs:
            cs.shield = True
            await proc.wait()
        if cs.cancelled_caught:
            log.warning("hook %r (pid %d) could not be reaped in time", command[:80], proc.pid)
        with trio.move_on_after(REAP_S) as cs:
            cs.shield = True
            await proc.stdin.aclose()
            await proc.stderr.aclose()
    text = err.decode("utf-8", errors="replace")
    if deadline.cancelled_caught:
        return Ran(None, text, timed_out=True)
    return Ran(proc.returncode, text)


async def _feed(stream: trio.abc.SendStream, data: bytes) -> None:
    try:
        await stream.send_all(data)
        await stream.aclose()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # it exited without reading all of it: its business


async def _drain(stream: trio.abc.ReceiveStream, keep: bytearray) -> None:
    try:
        while chunk := await stream.receive_some(READ_CHUNK):
            keep += chunk[: max(0, STDERR_KEEP_BYTES - len(keep))]
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


# ---- the actor ----


@attrs.frozen
class LastRun:
    """A hook's last outcome, for GET /api/hooks."""

    result: Result
    at: float  # seconds since the epoch
    detail: str = ""
    duration_ms: int = 0


@attrs.frozen
class _Post:
    hook: HttpHook
    body: bytes


_Plan = tuple[tuple[CommandHook, ...], tuple[HttpHook, ...]]
_Signature = tuple[int, int, int] | None


def _now() -> float:
    return round(time.time(), 3)


class HookRunner:
    """The person's hooks (see the module's docstring): implements actors.runs.env.Hooks.

    `run()` serves the HTTP hooks' mailbox until `close()`; command hooks run in the
    caller's task, so a stop of the run ends them. `tool_of` finds the tool a name
    stands for (the registry's `get`), to tell MCP tools (they have an `mcp`)."""

    def __init__(self, path: Path, *, home: Path, tool_of: Callable[[str], object | None] | None = None,
                 recheck_s: float = RECHECK_S, http_timeout_s: float = HTTP_TIMEOUT_S) -> None:
        self.path = path
        self._home = home
        self._tool_of = tool_of
        self._recheck_s = recheck_s
        self._http_timeout_s = http_timeout_s
        self._config = HookConfig()
        self._table: dict[str, _Plan] = {}
        self._signature: _Signature = None
        self._error: str | None = None
        self._error_at: float | None = None
        self._next_check = -math.inf
        self._last: dict[tuple[str, ...], LastRun] = {}
        self._send, self._rx = trio.open_memory_channel[_Post](HTTP_QUEUE)
        self._closed = False
        self._state = "starting"
        self._stopped = trio.Event()

    # ---- the lifecycle ----

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Send the HTTP hooks' posts, at most HTTP_IN_FLIGHT at once, until `close()`;
        returns once the posts in flight are over (each at most its time limit). The HTTP
        client is made for the first post (and closed after the last)."""
        try:
            self.refresh()
            async with contextlib.AsyncExitStack() as clients:
                client: httpx.AsyncClient | None = None
                async with trio.open_nursery() as nursery:
                    slots = trio.Semaphore(HTTP_IN_FLIGHT)
                    self._state = "serving"
                    task_status.started()
                    async with self._rx:
                        async for post in self._rx:
                            if client is None:
                                import httpx

                                client = await clients.enter_async_context(
                                    httpx.AsyncClient(follow_redirects=False, trust_env=False))
                            await slots.acquire()
                            nursery.start_soon(self._post, client, post, slots)
                    self._state = "stopping"
        finally:
            self._state = "stopped"
            self._stopped.set()

    def close(self) -> None:
        """No more hooks: fire() does nothing from now on; the posts queued are sent."""
        self._closed = True
        self._table = {}
        self._send.close()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    def statistics(self) -> ActorStats:
        return ActorStats(kind="hooks", id="hooks", state=self._state, mailbox=mailbox_depth(self._rx))

    # ---- the configuration ----

    def refresh(self) -> None:
        """Read the file again if it changed (size, modification time, inode)."""
        if self._closed:
            return
        try:
            st = os.stat(self.path)
            signature: _Signature = (st.st_size, st.st_mtime_ns, st.st_ino)
        except OSError:
            signature = None
        if signature == self._signature:
            return
        self._signature = signature
        if signature is None:
            self._use(HookConfig())
            return
        try:
            data = read_regular(self.path, MAX_CONFIG_BYTES + 1, follow=True)
            if len(data) > MAX_CONFIG_BYTES:
                raise ValueError(f"it is larger than {MAX_CONFIG_BYTES // 1024} KiB")
            config = parse_config(data)
        except (OSError, ValueError) as exc:
            self._error, self._error_at = f"{self.path} cannot be used: {exc}", _now()
            log.warning("%s; its last good version stays in use", self._error)
            return
        self._use(config)
        log.info("hooks: %d command hooks, %d HTTP hooks from %s", len(config.commands), len(config.http), self.path)

    def _use(self, config: HookConfig) -> None:
        self._config = config
        self._table = config.table()
        self._error, self._error_at = None, None
        keys = {h.key for h in config.commands} | {h.key for h in config.http}
        self._last = {k: v for k, v in self._last.items() if k in keys}

    def listing(self) -> dict[str, Any]:
        """GET /api/hooks: the file, why it cannot be used (its last good version is), and
        each hook with its last outcome."""
        self.refresh()
        hooks: list[dict[str, Any]] = []
        for cmd in self._config.commands:
            hooks.append({"kind": "command", "event": cmd.event, "matcher": cmd.matcher, "command": cmd.command,
                          "timeout_s": cmd.timeout_s, "last": self._last_json(cmd.key)})
        for post in self._config.http:
            hooks.append({"kind": "http", "url": shown_url(post.url), "events": list(post.events),
                          "last": self._last_json(post.key)})
        return {"file": str(self.path), "error": self._error, "error_at": self._error_at, "hooks": hooks}

    def _last_json(self, key: tuple[str, ...]) -> dict[str, Any] | None:
        last = self._last.get(key)
        return attrs.asdict(last) if last is not None else None

    # ---- firing ----

    async def fire(self, event: HookEvent) -> str | None:
        """Run the hooks of `event`; for pre_tool_use, why one blocks the call (None: it
        goes on). With no hook for the event, a dict lookup. Cancelled (a stop): the
        running hook's group is ended (see run_hook_command), the rest are not run."""
        if (now := time.monotonic()) >= self._next_check:
            self._next_check = now + self._recheck_s
            self.refresh()
        plan = self._table.get(event.name)
        if plan is None:
            return None
        commands, posts = plan
        wanted = [h for h in commands if h.matches(event.tool, self._is_mcp)]
        if not wanted and not posts:
            return None
        payload = event_json(event)
        if posts:
            self._queue(posts, payload)
        if not wanted:
            return None
        stdin = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8", "replace")
        env = hook_environment(event)
        cwd = str(event.workspace) if event.workspace is not None else str(self._home)
        for hook in wanted:
            why = await self._run_one(hook, event, cwd=cwd, env=env, stdin=stdin)
            if why is not None:
                return why
        return None

    def _is_mcp(self, name: str) -> bool:
        tool = self._tool_of(name) if self._tool_of is not None else None
        return getattr(tool, "mcp", None) is not None

    async def _run_one(self, hook: CommandHook, event: HookEvent, *, cwd: str, env: dict[str, str],
                       stdin: bytes) -> str | None:
        t0 = trio.current_time()
        label = f"{hook.event} hook {hook.command[:80]!r}"
        ran: Ran | None = None
        try:
            ran = await run_hook_command(hook.command, cwd=cwd, env=env, stdin=stdin, limit_s=hook.timeout_s)
        finally:
            if ran is None:  # cancelled (a stop), perhaps inside a group: it goes on as it came
                self._record(hook.key, "stopped", t0, "the run was stopped; its process group was ended")
        said = " ".join(ran.stderr.split())
        if ran.start_failed is not None:
            self._record(hook.key, "failed", t0, ran.start_failed)
            log.warning("%s failed: %s", label, ran.start_failed)
        elif ran.timed_out:
            self._record(hook.key, "timed_out", t0, f"no end after {hook.timeout_s:g} s; its group was ended")
            log.warning("%s timed out after %g s; it blocks nothing", label, hook.timeout_s)
        elif ran.code == BLOCK_EXIT and event.name == "pre_tool_use":
            why = ran.stderr.strip()[:WHY_CHARS] or f"the hook {hook.command[:80]!r} exited {BLOCK_EXIT} without a word"
            self._record(hook.key, "blocked", t0, f"{event.tool}: {said[:DETAIL_CHARS]}")
            log.info("%s blocked %s: %s", label, event.tool, said[:DETAIL_CHARS])
            return why
        elif ran.code == 0:
            self._record(hook.key, "ran", t0, "")
        else:
            detail = f"exit code {ran.code}" + (f": {said[:DETAIL_CHARS]}" if said else "")
            self._record(hook.key, "failed", t0, detail)
            log.warning("%s failed (%s); it blocks nothing", label, detail)
        return None

    def _record(self, key: tuple[str, ...], result: Result, t0: float, detail: str) -> None:
        took = round((trio.current_time() - t0) * 1000)
        self._last[key] = LastRun(result, _now(), detail, took)

    def _queue(self, posts: tuple[HttpHook, ...], payload: dict[str, Any]) -> None:
        body = json.dumps(payload, ensure_ascii=False, default=str).encode("utf-8", "replace")
        for hook in posts:
            try:
                self._send.send_nowait(_Post(hook, body))
            except trio.WouldBlock:
                self._last[hook.key] = LastRun("dropped", _now(), f"more than {HTTP_QUEUE} posts were waiting")
                log.warning("HTTP hook %s: a post dropped, too many waiting", shown_url(hook.url))
            except trio.ClosedResourceError:
                return

    async def _post(self, client: httpx.AsyncClient, post: _Post, slots: trio.Semaphore) -> None:
        import httpx  # loaded by run() with the client

        t0 = trio.current_time()
        url = shown_url(post.hook.url)
        status: int | None = None
        try:
            with trio.move_on_after(self._http_timeout_s):
                # Its answer's status is all that is wanted: the body is never read.
                async with client.stream("POST", post.hook.url, content=post.body, timeout=self._http_timeout_s,
                                         headers={"Content-Type": "application/json"}) as resp:
                    status = resp.status_code
            if status is None:
                self._record(post.hook.key, "timed_out", t0, f"no answer within {self._http_timeout_s:g} s")
                log.warning("HTTP hook %s: no answer within %g s", url, self._http_timeout_s)
            elif 200 <= status < 300:
                self._record(post.hook.key, "ran", t0, f"HTTP {status}")
            else:
                self._record(post.hook.key, "failed", t0, f"HTTP {status}")
                log.warning("HTTP hook %s answered %d", url, status)
        except httpx.TimeoutException:
            self._record(post.hook.key, "timed_out", t0, f"no answer within {self._http_timeout_s:g} s")
            log.warning("HTTP hook %s: no answer within %g s", url, self._http_timeout_s)
        except httpx.HTTPError as exc:
            self._record(post.hook.key, "failed", t0, f"{type(exc).__name__}: {exc}"[:DETAIL_CHARS])
            log.warning("HTTP hook %s failed: %s", url, type(exc).__name__)
        finally:
            slots.release()
