"""The OpenAPI 3.1 description of the daemon's HTTP API (`GET /openapi.json`).

Built, not written: the request bodies are the attrs classes the routes structure
(bmoe_daemon/bodies.py and the route modules' own), turned into JSON Schema 2020-12
by `schema_of`; the paths are the app's URL rules; the error answers are the
`{"error", "code"}` shape with the codes errors.py defines for each status; who may
call what comes from access.py. So a field added to a body, a route added to a
blueprint or a code added to errors.py shows here without anyone editing this package.
What a route answers is described beside it in OPERATIONS, from the same classes and
Literal types where the answer is one (`Mode`, `ConversationState`, `ModelFile`, ...).

A route registered without an entry in OPERATIONS is still listed (tests/test_openapi.py
fails until it is described). The document is built once per app and kept.

The parts, lowest first: schemas.py (JSON Schema from Python types), answers.py (what
the routes answer), request_bodies.py (the bodies not taken from one attrs class as it
is), operations.py (the table) and document.py (the assembly). bmoe_daemon/api_doc.py
serves it; nothing under bmoe_daemon/routes/ imports this package, as it imports theirs.
"""

from __future__ import annotations

from bmoe_daemon.openapi.document import build, routes
from bmoe_daemon.openapi.operations import OPERATIONS, Op
from bmoe_daemon.openapi.schemas import Components, schema_of

__all__ = ["OPERATIONS", "Components", "Op", "build", "routes", "schema_of"]
