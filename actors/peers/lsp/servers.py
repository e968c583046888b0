"""Language servers: what a file's language server says right after an edit.

`LspManager` is the run's `Diagnostics` (actors/runs/env.py): after a `write_file` or
`edit_file`, `after_edit` finds the file's language by its name (actors/peers/lsp/wire.py),
and the actor of that workspace and language tells the server the file's new text
(`textDocument/didOpen`, then `didChange`, and `didSave` where the server wants it) and
waits for its `textDocument/publishDiagnostics` of that version: DIAGNOSTICS_WAIT_S at
most in all, its start included. A file no server here covers costs a dictionary
lookup.

One `LanguageServer` actor per workspace and language, made when first wanted. Its
program is the first of the language's servers found (`.venv/bin` of the daemon's own
environment first, then PATH), started in a session and process group of its own
with the daemon's environment less its own variables and the provider keys
(actors/peers/program.py), then `initialize` with the workspace as rootUri and
`initialized`; actors/peers/lsp/program.py reads it. It is ended (`shutdown`,
`exit`, then its whole group signalled and reaped) after IDLE_S without an edit, with
the daemon, and once no conversation uses its workspace (a sweep every SWEEP_S asks
the daemon). A program that ends by itself or fails its start is a crash: it is
started again by the next edit once; after MAX_CRASHES the language's diagnostics are
off in that workspace, said once in an edit's result and in `GET /api/agent`, until the
daemon restarts. Its stderr goes to the log, never to the model.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import sysconfig
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs
import trio

from actors.actor import MAILBOX_SIZE, ActorStats, Reply, fail_pending, mailbox_depth
from actors.errors import ActorGone
from actors.fs.paths import PathRefused, read_regular, resolve
from actors.peers.jsonrpc import (
    METHOD_NOT_FOUND,
    Ignored,
    Notification,
    Request,
    WireError,
    encode_error,
    encode_notification,
    encode_result,
)
from actors.peers.lsp.program import LspProgram, watch_exit
from actors.peers.lsp.wire import (
    LANGUAGES,
    Diagnostic,
    Language,
    answer_to,
    diagnostic_lines,
    did_change,
    did_open,
    did_save,
    file_uri,
    initialize_params,
    language_of,
    published,
    sync_of,
    uri_key,
)
from actors.peers.program import ProgramEnded, RpcError, serving
from actors.process import STDERR_LINE_CHARS, StartFailed, command_environment, start_program, wait_exit

log = logging.getLogger("bmoe.lsp")

DIAGNOSTICS_WAIT_S = 3.0  # an edit waits at most this long for its diagnostics, a start included
START_TIMEOUT_S = 30.0  # for the answer to initialize; the edit that started it has long gone on
IDLE_S = 600.0
SWEEP_S = 60.0  # how often the workspaces no conversation uses any more are looked for
MAX_CRASHES = 2
SHUTDOWN_S = 1.0  # for `shutdown` and `exit` before the group is signalled
KILL_GRACE_S = 1.0
MAX_FILE_BYTES = 2 * 1024 * 1024  # a larger file gets no diagnostics
MAX_OPEN_DOCS = 64  # per server; the least recently edited is closed beyond


@attrs.frozen
class WantMsg:
    reply: Reply[trio.Event]


def _load(workspace: Path, rel: str) -> tuple[Path, str] | None:
    """The file's real path inside the workspace and its text; None when it leads out,
    is not a regular file, cannot be read or is larger than MAX_FILE_BYTES."""
    try:
        real = resolve(workspace, rel)
        raw = read_regular(real, MAX_FILE_BYTES + 1)
    except (PathRefused, OSError):
        return None
    if len(raw) > MAX_FILE_BYTES:
        return None
    return real, raw.decode("utf-8", errors="replace")


@attrs.frozen
class ServerInfo:
    """One language server's row of `GET /api/agent`'s `lsp`."""

    language: str
    command: str | None
    workspace: str | None
    state: str
    pid: int | None = None
    error: str | None = None

    def to_json(self) -> dict[str, object]:
        return {k: v for k, v in attrs.asdict(self).items() if v is not None or k in ("command", "workspace")}


class LanguageServer:
    """The actor of one language's server in one workspace; see the module docstring."""

    def __init__(self, workspace: Path, language: Language, argv: Sequence[str], *,
                 start_timeout: float = START_TIMEOUT_S, idle_s: float = IDLE_S,
                 kill_grace: float = KILL_GRACE_S) -> None:
        self.workspace = workspace
        self.language = language
        self.argv = tuple(argv)
        self.name = os.path.basename(self.argv[0])
        self._root = Path(os.path.realpath(workspace))
        self._start_timeout = start_timeout
        self._idle_s = idle_s
        self._kill_grace = kill_grace
        self._state = "stopped"  # stopped | starting | running | off
        self._program: LspProgram | None = None
        self._start_done: trio.Event | None = None
        self._nursery: trio.Nursery | None = None
        self._send, self._rx = trio.open_memory_channel[WantMsg](MAILBOX_SIZE)
        self._lock = trio.Lock()  # one document update at a time, so versions go up in order
        self._stopped = trio.Event()
        self.crashes = 0
        self.why_off: str | None = None
        self._told_off = False
        self.last_end = ""
        self.starts = 0
        self.pid: int | None = None
        self._busy = 0  # edits in hand: the server is not idle while one waits on it
        self._last_done = 0.0

    @property
    def state(self) -> str:
        """`stopped` (not started, idle, or after a crash), `starting`, `running`, `off`."""
        if self._state == "running" and (self._program is None or self._program.ended.is_set()):
            return "stopped"
        return self._state

    def info(self) -> ServerInfo:
        error = self.why_off or (f"it crashed once ({self.last_end})" if self.crashes else None)
        return ServerInfo(self.language.name, " ".join(self.argv), str(self.workspace), self.state, self.pid, error)

    def statistics(self) -> ActorStats:
        return ActorStats(kind="lsp", id=f"{self.language.name}:{self.workspace}", state=self.state,
                          mailbox=mailbox_depth(self._rx), run=str(self.pid) if self.pid else None)

    # ---- the actor ----

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until `close()`: each want starts the program unless it runs; IDLE_S
        after the last, it is ended. On the way out it is ended (politely, then its
        group; bounded) and reaped."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                async with self._rx:
                    await self._serve()
                if self._program is not None:
                    self._program.ask_to_end("it is closed")
        finally:
            self._nursery = None
            fail_pending(self._rx, f"the {self.language.title} language server is closing")
            if self._start_done is not None:
                self._start_done.set()
            self._stopped.set()

    async def _serve(self) -> None:
        idle_at = float("inf")
        while True:
            with trio.move_on_at(idle_at):
                try:
                    msg = await self._rx.receive()
                except trio.EndOfChannel:
                    return
                msg.reply.capture(self._start)
                idle_at = trio.current_time() + self._idle_s
                continue
            now = trio.current_time()
            if self._busy or now < self._last_done + self._idle_s:
                idle_at = now + self._idle_s if self._busy else self._last_done + self._idle_s
                continue
            idle_at = float("inf")
            if self._program is not None:
                log.info("%s for %s in %s: idle for %g s, ended", self.name, self.language.title,
                         self.workspace, self._idle_s)
                self._program.ask_to_end(f"it was idle for {self._idle_s:g} s")

    def close(self) -> None:
        """Stop serving; a running program is ended."""
        self._send.close()

    async def wait_stopped(self) -> None:
        """Wait until `run` has returned: the program ended and reaped."""
        await self._stopped.wait()

    def _start(self) -> trio.Event:
        """The event the current start attempt sets when it ends, starting one if needed."""
        state = self.state
        if state == "starting" and self._start_done is not None:
            return self._start_done
        if state in ("running", "off") or self._nursery is None:
            done = trio.Event()
            done.set()
            return done
        self._state = "starting"
        self._program = prog = LspProgram()
        self._start_done = done = trio.Event()
        self.starts += 1
        self._nursery.start_soon(self._run_program, prog, done)
        return done

    # ---- an edit ----

    async def after_edit(self, rel: str, language_id: str) -> str | None:
        """What the server reports of `rel` (inside the workspace) once it has its new
        text, as lines for the result; None when it reports nothing or not in time.
        The caller bounds the wait; cancelled, only the wait ends (a start goes on)."""
        if self._state == "off":
            return self._off_once()
        self._busy += 1
        try:
            return await self._diagnose(rel, language_id)
        finally:
            self._busy -= 1
            self._last_done = trio.current_time()

    async def _diagnose(self, rel: str, language_id: str) -> str | None:
        msg = WantMsg(Reply())
        try:
            await self._send.send(msg)
            done = await msg.reply.wait()
        except (trio.ClosedResourceError, trio.BrokenResourceError, ActorGone):
            return None
        await done.wait()
        prog = self._program
        if self._state == "off":
            return self._off_once()
        if prog is None or self.state != "running":
            return None
        loaded = await trio.to_thread.run_sync(_load, self.workspace, rel)
        if loaded is None:
            return None
        real, text = loaded
        try:
            key, version, seq = await self._update(prog, real, language_id, text)
            diagnostics = await self._wait_published(prog, key, version, seq)
        except ProgramEnded:
            await prog.reaped.wait()  # its crash counted
            return self._off_once() if self._state == "off" else None
        return diagnostic_lines(rel, diagnostics, self.name)

    def _off_once(self) -> str | None:
        if self._told_off:
            return None
        self._told_off = True
        return (f"Diagnostics for {self.language.title} are off in this workspace: {self.why_off} "
                "They come back when the daemon restarts; the server's stderr is in the daemon's log.")

    async def _update(self, prog: LspProgram, real: Path, language_id: str, text: str) -> tuple[str, int, int]:
        """Send the document's new text: (its key, the version sent, the publication
        count before it)."""
        uri = file_uri(real)
        key = uri_key(uri) or str(real)
        async with self._lock:
            seq = prog.seq
            last = prog.docs.pop(key, None)
            if last is None:
                version = 1
                await prog.send(encode_notification("textDocument/didOpen", did_open(uri, language_id, 1, text)))
            else:
                version = last + 1
                await prog.send(encode_notification("textDocument/didChange", did_change(uri, version, text)))
            prog.docs[key] = version  # the most recently edited last
            if prog.sync.save:
                await prog.send(encode_notification("textDocument/didSave",
                                                    did_save(uri, text if prog.sync.save_text else None)))
            while len(prog.docs) > MAX_OPEN_DOCS:
                oldest = next(iter(prog.docs))
                del prog.docs[oldest]
                prog.published.pop(oldest, None)
                await prog.send(encode_notification("textDocument/didClose",
                                                    {"textDocument": {"uri": Path(oldest).as_uri()}}))
        return key, version, seq

    @staticmethod
    async def _wait_published(prog: LspProgram, key: str, version: int, seq: int) -> tuple[Diagnostic, ...]:
        """The diagnostics of the first publication for `key` of `version` or later (or,
        from a server that sends no version, the first after `seq`). ProgramEnded when
        it ends first."""
        while True:
            news = prog.news
            got = prog.published.get(key)
            if got is not None:
                got_seq, got_version, diagnostics = got
                if (got_version >= version) if got_version is not None else got_seq > seq:
                    return diagnostics
            if prog.ended.is_set():
                raise ProgramEnded(prog.why)
            await news.wait()

    # ---- the program ----

    async def _run_program(self, prog: LspProgram, done: trio.Event) -> None:
        try:
            with prog.scope:
                await self._serve_program(prog, done)
        except Exception:
            log.exception("%s for %s: its program's task failed", self.name, self.language.title)
            prog.end("something went wrong inside the daemon with it; the log has the details")
        finally:
            # Ended before its task was: by itself, or failing its start. Otherwise the
            # daemon's own nursery is being cancelled, which is no crash of the server's.
            crashed = prog.asked is None and prog.ended.is_set()
            prog.end(prog.asked or "the daemon is stopping")
            if self._program is prog:
                self._program = None
                self.pid = None
                self.last_end = prog.why
                self._state = "stopped"
                if crashed:
                    self._crashed(prog.why)
            log.info("%s for %s in %s: its program ended: %s", self.name, self.language.title, self.workspace,
                     prog.why)
            done.set()
            prog.reaped.set()

    def _crashed(self, why: str) -> None:
        self.crashes += 1
        log.warning("%s for %s in %s crashed (%d of %d): %s", self.name, self.language.title, self.workspace,
                    self.crashes, MAX_CRASHES, why)
        if self.crashes >= MAX_CRASHES:
            self._state = "off"
            self.why_off = f"{self.name} ended by itself {self.crashes} times (last: {why})."

    async def _serve_program(self, prog: LspProgram, done: trio.Event) -> None:
        try:
            proc = await start_program(list(self.argv), env=command_environment(), cwd=str(self._root))
        except StartFailed as exc:
            prog.end(f"it could not be started ({exc})")
            return
        self.pid = proc.pid
        label = f"{self.name} ({self.language.title}, {self.workspace})"
        log.info("%s started (pid %d)", label, proc.pid)
        handle = functools.partial(self._on_message, prog)
        async with serving(prog, proc, handle, log=log, label=label, kill_grace=self._kill_grace,
                           exit_wait=KILL_GRACE_S) as nursery:
            nursery.start_soon(watch_exit, prog, proc)
            try:
                with trio.fail_after(self._start_timeout):
                    prog.sync = sync_of(await prog.request("initialize", initialize_params(self._root, os.getpid())))
                    await prog.send(encode_notification("initialized", {}))
            except trio.TooSlowError:
                prog.end(f"it did not answer initialize within {self._start_timeout:g} s")
                return
            except (WireError, RpcError) as exc:
                prog.end(f"it failed initialize: {exc}")
                return
            self._state = "running"
            done.set()
            await prog.wake.wait()
            if prog.asked is not None and not prog.ended.is_set():
                with trio.move_on_after(SHUTDOWN_S):
                    try:
                        await prog.request("shutdown")
                        await prog.send(encode_notification("exit"))
                        await wait_exit(proc.pid, SHUTDOWN_S)
                    except (ProgramEnded, RpcError):
                        pass
                prog.end(prog.asked)

    def _on_message(self, prog: LspProgram, msg: Request | Notification | Ignored, nursery: trio.Nursery) -> None:
        if isinstance(msg, Request):
            # Answered from a task of its own: the reader never waits on the program's input.
            known, result = answer_to(msg.method, msg.params)
            data = encode_result(msg.id, result) if known else encode_error(
                msg.id, METHOD_NOT_FOUND, f"bmoe-daemon does not offer {msg.method}")
            nursery.start_soon(prog.send_quietly, data)
        elif isinstance(msg, Notification):
            if msg.method == "textDocument/publishDiagnostics":
                found = published(msg.params)
                if found is not None:
                    prog.publish(found.key, found.version, found.diagnostics)
            elif msg.method in ("window/logMessage", "window/showMessage"):
                log.debug("%s says: %s", self.name, str(msg.params)[:STDERR_LINE_CHARS])
        else:
            log.debug("%s wrote %s; ignored", self.name, msg.why)


def search_path() -> str:
    """Where servers are looked for: the scripts folder of the daemon's own Python
    environment (`.venv/bin` when it runs from one, where `pip install
    python-lsp-server` puts `pylsp`), then PATH."""
    folders = [sysconfig.get_path("scripts"), os.environ.get("PATH", os.defpath)]
    return os.pathsep.join(f for f in folders if f)


class LspManager:
    """The language servers' actors, by workspace and language; the run's Diagnostics.

    `commands` (language name -> command) stands instead of the PATH search for those
    languages; `in_use(workspace)` says whether a conversation still uses a workspace
    (its servers are ended once none does)."""

    def __init__(self, *, commands: Mapping[str, Sequence[str]] | None = None,
                 in_use: Callable[[Path], bool] | None = None, wait_s: float = DIAGNOSTICS_WAIT_S,
                 start_timeout: float = START_TIMEOUT_S, idle_s: float = IDLE_S, sweep_s: float = SWEEP_S,
                 kill_grace: float = KILL_GRACE_S) -> None:
        self._commands = dict(commands or {})
        self._in_use = in_use
        self._wait_s = wait_s
        self._options = {"start_timeout": start_timeout, "idle_s": idle_s, "kill_grace": kill_grace}
        self._sweep_s = sweep_s
        self._servers: dict[tuple[Path, str], LanguageServer] = {}
        self._nursery: trio.Nursery | None = None
        self._closing = trio.Event()
        self._stopped = trio.Event()
        self._state = "starting"

    @property
    def servers(self) -> tuple[LanguageServer, ...]:
        return tuple(self._servers.values())

    def server(self, workspace: Path, language: str) -> LanguageServer | None:
        return self._servers.get((workspace, language))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until `close()`; returns once every server's program is reaped."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                self._state = "serving"
                task_status.started()
                while not self._closing.is_set():
                    with trio.move_on_after(self._sweep_s):
                        await self._closing.wait()
                    self._sweep()
                self._state = "stopping"
                self._nursery = None  # no server is made from here on
                for server in self._servers.values():
                    server.close()
        finally:
            self._nursery = None
            self._state = "stopped"
            self._stopped.set()

    def close(self) -> None:
        """End every server (politely, then its group) and stop making new ones."""
        self._closing.set()

    async def wait_stopped(self) -> None:
        """Wait until `run` has returned: every program reaped."""
        await self._stopped.wait()

    def forget(self, workspace: Path) -> None:
        """End the servers of a workspace no conversation uses any more."""
        for key in [k for k in self._servers if k[0] == workspace]:
            self._servers.pop(key).close()

    def _sweep(self) -> None:
        if self._in_use is None or self._closing.is_set():
            return
        for workspace in {ws for ws, _ in self._servers}:
            if not self._in_use(workspace):
                log.info("language servers of %s: no conversation uses it any more; ended", workspace)
                self.forget(workspace)

    def command(self, language: Language) -> list[str] | None:
        """The command that serves `language` here: configured, else the first of its
        servers found (see search_path); None when there is none."""
        if language.name in self._commands:
            return list(self._commands[language.name]) or None
        where = search_path()
        for argv in language.servers:
            found = shutil.which(argv[0], path=where)
            if found is not None:
                return [found, *argv[1:]]
        return None

    async def after_edit(self, workspace: Path, path: str) -> str | None:
        """Diagnostics (actors/runs/env.py): at most `wait_s` seconds, a server's start
        included. Cancelled: only the wait ends."""
        found = language_of(path)
        if found is None:
            return None
        language, language_id = found
        server = self._servers.get((workspace, language.name))
        if server is None:
            if self._nursery is None:
                return None
            argv = self.command(language)
            if argv is None:
                return None
            server = LanguageServer(workspace, language, argv, **self._options)
            self._servers[(workspace, language.name)] = server
            self._nursery.start_soon(server.run)
        with trio.move_on_after(self._wait_s):
            return await server.after_edit(path, language_id)
        return None

    def listing(self) -> list[dict[str, object]]:
        """`GET /api/agent`'s `lsp`: each server started with its workspace and state
        (`off` with why); each other language with the command that would serve it
        (`available`) or none (`not_found`)."""
        rows = [s.info() for s in self._servers.values()]
        started = {s.language.name for s in self._servers.values()}
        for language in LANGUAGES:
            if language.name not in started:
                argv = self.command(language)
                rows.append(ServerInfo(language.name, " ".join(argv) if argv else None, None,
                                       "available" if argv else "not_found"))
        return [r.to_json() for r in rows]

    def statistics(self) -> ActorStats:
        return ActorStats(kind="language-servers", id="lsp", state=self._state, mailbox=0,
                          children=tuple(s.statistics() for s in self._servers.values()))
