"""A data folder's lock file: who holds the folder, as the daemon that holds it wrote
(bmoe_daemon/startup.py takes the lock and writes it; `bmoe-daemon run` and `doctor`
read it). Standard library only, and a tuple rather than an attrs class: the `run`
client reads it on every call and pays for every import."""

from __future__ import annotations

import json
import os
from typing import NamedTuple

LOCK_FILE = "daemon.lock"
MAX_LOCK_FILE_BYTES = 4096


class Holder(NamedTuple):
    """Who holds a data folder, as its lock file says (either may be missing)."""

    pid: int | None
    address: str | None
    key_file: str | None = None

    def describe(self) -> str:
        who = f"bmoe-daemon pid {self.pid}" if self.pid is not None else "another bmoe-daemon"
        return f"{who} at {self.address}" if self.address else f"{who} (still starting)"


def read_holder(fd: int) -> Holder:
    try:
        data = json.loads(os.pread(fd, MAX_LOCK_FILE_BYTES, 0) or b"{}")
    except (OSError, ValueError):
        return Holder(None, None)
    pid = data.get("pid") if isinstance(data, dict) else None
    address = data.get("address") if isinstance(data, dict) else None
    key_file = data.get("key_file") if isinstance(data, dict) else None
    return Holder(pid if isinstance(pid, int) else None, address if isinstance(address, str) else None,
                  key_file if isinstance(key_file, str) else None)
