"""Real peers: what a test does when one is missing.

Some tests talk to something outside this repository: OpenCode, the reference MCP
server, Debian's chromium under Playwright, a network namespace, llama-cpp-python's
own server. Without it, such a test calls `need_peer(reason)`. Run by hand, the test
is then skipped with that reason (`pytest -rs` prints it). Under BMOE_REQUIRE_PEERS=1,
which `.ci/run` sets once it has installed every peer, the same reason fails the test:
CI cannot pass by skipping.
"""

from __future__ import annotations

import importlib.util
import os
from typing import NoReturn

import pytest

REQUIRE_PEERS = "BMOE_REQUIRE_PEERS"


def peers_required() -> bool:
    """Whether a missing peer fails the test (BMOE_REQUIRE_PEERS set, and not to 0)."""
    return os.environ.get(REQUIRE_PEERS, "") not in ("", "0")


def need_peer(reason: str) -> NoReturn:
    """End the calling test for want of a real peer: skipped with `reason`, or failed
    with it under BMOE_REQUIRE_PEERS."""
    if peers_required():
        pytest.fail(f"{reason} [{REQUIRE_PEERS}=1: a missing peer fails the test]", pytrace=False)
    pytest.skip(reason)


def need_modules(reason: str, *names: str) -> None:
    """`need_peer(reason)` unless every module named is installed. Each is only found,
    not imported: a test's own import then meets the module under the suite's warning
    filters as it always did."""
    for name in names:
        try:
            found = importlib.util.find_spec(name) is not None
        except ImportError:  # a dotted name whose parent package is missing
            found = False
        if not found:
            need_peer(f"{reason} (no module named {name!r})")
