"""A conversation's modes: what its agent may run without asking (ask, read only, full).

A word list with nothing to import, so that the command line's options (bmoe_daemon/
options.py, read by every command) take them without loading the record's classes."""

from __future__ import annotations

from typing import Literal, get_args

Mode = Literal["ask", "read_only", "full"]
MODES: tuple[Mode, ...] = get_args(Mode)
