"""What the HTTP layer holds of the running daemon."""

from __future__ import annotations

import time

import attrs

from actors.bus import EventBus
from actors.engine import Engine
from actors.hub import Hub
from bmoe_daemon.config import Config


@attrs.define
class DaemonContext:
    config: Config
    hub: Hub
    engine: Engine
    bus: EventBus
    started: float = attrs.field(factory=time.time)
