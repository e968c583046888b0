from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from hypothesis import HealthCheck, settings

from actors.bus import EventBus
from actors.conversations.hub import Hub
from actors.errors import ToolError
from actors.fs.atomic import write_atomic
from actors.model.backends.scripted import ScriptedBackend
from actors.model.engine import Engine
from actors.policy.rules import RuleBook
from actors.record.cards import PlanFiles
from actors.runs.env import Env
from actors.tools.registry import Registry, ToolContext, ToolOutcome
from bmoe_daemon.store import Store

# The suite runs on small shared machines (2 cores, other work beside it): timing is
# not what the property tests check, so a slow draw or example is not a failure.
settings.register_profile(
    "shared-machine", deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.load_profile("shared-machine")


@attrs.define
class EchoTool:
    """Reads: answers with its text."""

    name: str = "echo"
    description: str = "Answers with the text it is given."
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: {"type": "object", "properties": {"text": {"type": "string"}}}
    )
    needs_workspace: bool = False
    calls: list[dict[str, Any]] = attrs.field(factory=list)

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return False

    def title(self, args: dict[str, Any]) -> str:
        return f"Echo {args.get('text', '')}".strip()

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        self.calls.append(args)
        if "fail" in args:
            raise ToolError(str(args["fail"]))
        return ToolOutcome(str(args.get("text", "")))


@attrs.define
class NoteTool:
    """A change: writes a note into the workspace; sleeps first when asked."""

    name: str = "note"
    description: str = "Writes a note file in the workspace."
    parameters: dict[str, Any] = attrs.field(
        factory=lambda: {"type": "object", "properties": {"path": {"type": "string"}}}
    )
    needs_workspace: bool = True
    calls: list[dict[str, Any]] = attrs.field(factory=list)

    def is_change(self, args: dict[str, Any], workspace: Path | None = None) -> bool:
        return True

    def title(self, args: dict[str, Any]) -> str:
        return f"Write {args['path']}" if "path" in args else "Write a note"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutcome:
        self.calls.append(args)
        if args.get("sleep"):
            await trio.sleep(float(args["sleep"]))
        assert ctx.workspace is not None
        # Whole, as the daemon's own tools write: a test that sees the file sees all of it.
        write_atomic(ctx.workspace / str(args.get("path", "note.txt")), str(args.get("text", "")).encode())
        return ToolOutcome(f"wrote {args.get('path')}", file=str(args.get("path")))


@attrs.define
class Daemon:
    hub: Hub
    backend: ScriptedBackend
    bus: EventBus
    engine: Engine
    store: Store
    echo: EchoTool
    note: NoteTool
    data: Path


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[Daemon]:
    backend = ScriptedBackend()
    bus = EventBus()
    engine = Engine(backend)
    store = Store(tmp_path / "data")
    echo, note = EchoTool(), NoteTool()
    registry = Registry([echo, note])
    env = Env(engine=engine, bus=bus, store=store, registry=registry, resolve_workspace=lambda _: None,
              plans=PlanFiles(store.agent_dir / "plans"), helpers=trio.CapacityLimiter(2))
    hub = Hub(env, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(hub.run)
        yield Daemon(hub, backend, bus, engine, store, echo, note, tmp_path / "data")
        hub.close()
        engine.close()


@pytest.fixture
async def real_tools(tmp_path: Path) -> AsyncIterator[Daemon]:
    """The scripted engine with the daemon's real built-in tools."""
    async for d in _real_tools(tmp_path):
        yield d


@pytest.fixture
async def unled_tools(tmp_path: Path) -> AsyncIterator[Daemon]:
    """`real_tools` in a daemon started with --leading off."""
    async for d in _real_tools(tmp_path, leading=False):
        yield d


async def _real_tools(tmp_path: Path, *, leading: bool = True) -> AsyncIterator[Daemon]:
    from bmoe_daemon.config import Config
    from bmoe_daemon.server import build_registry

    backend = ScriptedBackend()
    bus = EventBus()
    engine = Engine(backend)
    store = Store(tmp_path / "data")
    registry = build_registry(Config(data_dir=tmp_path / "data"))
    env = Env(engine=engine, bus=bus, store=store, registry=registry, resolve_workspace=lambda _: None,
              plans=PlanFiles(store.agent_dir / "plans"), rules=RuleBook(store.agent_dir / "permission-rules.json"),
              leading=leading)
    hub = Hub(env, store)
    async with trio.open_nursery() as nursery:
        await nursery.start(engine.run)
        await nursery.start(hub.run)
        yield Daemon(hub, backend, bus, engine, store, EchoTool(), NoteTool(), tmp_path / "data")
        hub.close()
        engine.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--tier-reasons", action="store_true",
                     help="print each collected test's tier and, for a slow one, why (tests/tiers.py)")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks `slow` each test that uses the daemon as a process, the browser, a real peer,
    a process of its own or the bundled model (tests/tiers.py): `-m "not slow"` is the
    fast tier."""
    from tests.tiers import Tiers, slow_reason

    tiers = Tiers()
    for item in items:
        why = slow_reason(item, tiers)
        if why is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow(reason=why))
        if config.getoption("--tier-reasons"):
            print(f"{'slow' if why else 'fast'}\t{item.nodeid}\t{why or ''}")


# The bundled model samples from one seed in every daemon the tests start (the daemon's
# hidden --seed): a reply then does not depend on what the model wrote before it in that
# daemon (a title, a compaction, a helper, in whatever order they came).
os.environ.setdefault("BMOE_SEED", "1")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The test process's one Chromium (tests/browser.py) is closed with the session."""
    browser = sys.modules.get("tests.browser")
    if browser is not None:
        browser.close_shared_browser()


DAEMON_LOG_TAIL_BYTES = 6000


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed test that ran a daemon as a process (tests/browser.py) reports the end of
    that daemon's stderr beside its traceback: CI's log is then enough to see why."""
    outcome = yield
    report = outcome.get_result()
    if not report.failed:
        return
    for value in getattr(item, "funcargs", {}).values():
        path = getattr(value, "stderr_path", None)
        if isinstance(path, Path) and path.is_file():
            with path.open("rb") as f:
                f.seek(max(0, path.stat().st_size - DAEMON_LOG_TAIL_BYTES))
                tail = f.read().decode("utf-8", "replace")
            report.sections.append((f"the daemon's stderr, its last {DAEMON_LOG_TAIL_BYTES} bytes ({path.name})", tail))
