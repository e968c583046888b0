"""GET /api/limits (bmoe_daemon/routes/limits.py): the limits the daemon enforces, as
the web UI reads them, are the constants of the modules that enforce them; and the
UI's modules write none of them a second time.

The app runs in-process (Quart's test client), so a request can come from a network
address.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from actors.model.providers.entries import DEFAULT_CONTEXT_LENGTH, MAX_CONTEXT_LENGTH, MAX_PRICE, MIN_CONTEXT_LENGTH
from actors.record.budget import MAX_BUDGET_COST, MAX_BUDGET_TOKENS
from actors.record.cards import MAX_FEEDBACK_CHARS
from actors.record.listing import MAX_PAGE
from actors.runs.agent.compaction_cut import TRIGGER
from actors.runs.agent.run_tools.background import STALL_S
from actors.scheduling.schedule import MAX_EVERY_MINUTES, MIN_EVERY_MINUTES
from actors.scheduling.scheduler import DEFAULT_KEEP_RUNS, MAX_KEEP_RUNS
from bmoe_daemon.app import create_app
from bmoe_daemon.bodies import MAX_IMAGES
from bmoe_daemon.config import Config
from bmoe_daemon.context import DaemonContext
from bmoe_daemon.models import MAX_CTX, MIN_CTX

NET = {"client": ("192.0.2.7", 40000)}
LOCAL = {"client": ("127.0.0.1", 40000)}
WEB = Path(__file__).resolve().parent.parent / "bmoe_daemon" / "web"

EXPECTED = {
    "conversations_limit": {"max": MAX_PAGE},
    "images": {"max": MAX_IMAGES},
    "feedback": {"max": MAX_FEEDBACK_CHARS},
    "compaction": {"at": TRIGGER},
    "ctx_size": {"min": MIN_CTX, "max": MAX_CTX},
    "context_length": {"min": MIN_CONTEXT_LENGTH, "max": MAX_CONTEXT_LENGTH, "default": DEFAULT_CONTEXT_LENGTH},
    "keep_runs": {"max": MAX_KEEP_RUNS, "default": DEFAULT_KEEP_RUNS},
    "every_minutes": {"min": MIN_EVERY_MINUTES, "max": MAX_EVERY_MINUTES},
    "budget_tokens": {"min": 1, "max": MAX_BUDGET_TOKENS},
    "budget_cost": {"max": MAX_BUDGET_COST},
    "price": {"min": 0, "max": MAX_PRICE},
    "helper_stall_s": {"default": STALL_S},
}


@pytest.fixture
def make_app(daemon, tmp_path: Path):
    def make(key: str | None = None):
        ctx = DaemonContext(config=Config(data_dir=tmp_path, api_key=key), hub=daemon.hub, engine=daemon.engine,
                            bus=daemon.bus)
        return create_app(ctx)

    return make


@pytest.mark.parametrize("scope", [LOCAL, NET], ids=["loopback", "network"])
async def test_the_limits_are_the_enforcing_modules_constants(make_app, scope):
    """Any client may read them (nothing of this computer's), and each is the constant
    the daemon enforces."""
    resp = await make_app().test_client().get("/api/limits", scope_base=scope)
    assert resp.status_code == 200
    assert await resp.get_json() == EXPECTED


async def test_the_limits_need_the_key_when_the_daemon_has_one(make_app):
    client = make_app("sekret").test_client()
    resp = await client.get("/api/limits", scope_base=LOCAL)
    assert resp.status_code == 401
    resp = await client.get("/api/limits", scope_base=LOCAL, headers={"Authorization": "Bearer sekret"})
    assert resp.status_code == 200


# Numbers the page writes for reasons of its own: 100 (a percentage), 1000 (milliseconds
# in a second).
UNIT_NUMBERS = {100, 1000}


def _spellings(value: float) -> set[str]:
    """How a number could be written in the UI's code or its text (4000, 4_000, 4,000);
    a product such as 1024 * 1024 is not looked for."""
    if isinstance(value, float):
        return {repr(value)}
    return {str(value), f"{value:_}", f"{value:,}"}


def test_the_web_ui_writes_none_of_the_limits_again():
    """A limit the page reads from GET /api/limits is not also written in its modules:
    the numbers of more than two digits are looked for as numbers (not inside others)."""
    sources = {p.name: p.read_text() for p in WEB.glob("*.js")}
    assert "limits.js" in sources
    for key, bounds in EXPECTED.items():
        for name, value in bounds.items():
            if isinstance(value, int) and (value < 100 or value in UNIT_NUMBERS):
                continue  # too short, or too common, to tell from other numbers
            for spelled in _spellings(value):
                pattern = rf"(?<![\w.,]){re.escape(spelled)}(?![\w,]|\.\d)"
                for file, text in sources.items():
                    assert not re.search(pattern, text), f"{file} writes {key}.{name} ({spelled}) itself"
