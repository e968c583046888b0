"""Schemathesis hooks for tests/test_schemathesis.py (loaded through SCHEMATHESIS_HOOKS).

The fuzzer learns the bundled model's path from GET /api/models and sends it to
PUT /api/model, which then loads the real model: every later completion and message
would run on it, at up to a million tokens of context it may also draw, and the run
would measure the two cores instead of the API. A PUT /api/model that names a GGUF file
gets a path beside it instead; every other body (a relative path, numbers out of range,
a file that is not one of the listed models) is sent as drawn.

A drawn path is never a folder, so POST /api/workspaces would never add one and the
links from it (its rules, a conversation in it) would never be walked: every other
string path it draws is replaced with a real folder (BMOE_ST_FOLDER).
"""

from __future__ import annotations

import os
from typing import Any

import schemathesis


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    if case.method.upper() == "PUT" and case.path == "/api/model" and isinstance(case.body, dict):
        path = case.body.get("path")
        if isinstance(path, str) and path.lower().endswith(".gguf"):
            case.body["path"] = path + ".not-loaded"
    if case.method.upper() == "POST" and case.path == "/api/workspaces" and isinstance(case.body, dict):
        path = case.body.get("path")
        if isinstance(path, str) and len(path) % 2 == 0 and os.environ.get("BMOE_ST_FOLDER"):
            case.body["path"] = os.environ["BMOE_ST_FOLDER"]
