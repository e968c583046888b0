"""Ids and times of the records: opaque URL-safe ids, and Unix seconds to the millisecond."""

from __future__ import annotations

import secrets
import time


def new_id(prefix: str = "") -> str:
    """An opaque, URL-safe id."""
    return prefix + secrets.token_urlsafe(9)


def now() -> float:
    return round(time.time(), 3)
