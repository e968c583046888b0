"""The connect routes: other apps' settings for this daemon's /v1, for a client on this
computer only (they name this computer's files and write into them).

The address written is the one the daemon serves (`listening on ...`), never the
request's Host header: a page that reached the daemon under another name (DNS
rebinding) cannot make it write that name into another app's settings.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import trio
from quart import Blueprint, Response, jsonify

from actors.fs.atomic import write_atomic
from bmoe_daemon import connect
from bmoe_daemon.context import daemon
from bmoe_daemon.errors import BadRequest, NoModelError, NotFoundError, SettingsConflict

bp = Blueprint("connect", __name__)


@functools.cache
def _catalog() -> tuple[connect.Client, ...]:
    return tuple(connect.load_catalog())


def _values() -> connect.Values:
    d = daemon()
    address = d.address or f"http://{d.config.host}:{d.config.port}"
    backend = d.engine.backend
    return connect.Values(
        base_url=connect.local_base_url(address),
        model=d.engine.model_id or connect.NO_MODEL_ID,
        context=int(getattr(backend, "n_ctx", 0) or d.config.ctx_size),
        key_needed=d.config.api_key is not None,
    )


def _row(client: connect.Client, values: connect.Values, home: Path | None) -> dict[str, Any]:
    file = str(home / client.file) if home is not None and client.file is not None else None
    return {"id": client.id, "name": client.name, "how": client.how, "snippet": connect.render(client, values),
            "file": file, "writable": file is not None}


@bp.get("/api/connect")
async def get_connect() -> Response:
    values, home = _values(), connect.home_folder()
    return jsonify([_row(c, values, home) for c in _catalog()])


def _writable(client_id: str) -> tuple[connect.Client, Path, Path]:
    """The app whose settings file may be written, the home folder it is under and the
    file; the error that says why not."""
    client = next((c for c in _catalog() if c.id == client_id), None)
    if client is None:
        raise NotFoundError("There is no such app to connect.")
    if daemon().engine.model_id is None:
        raise NoModelError("No model is loaded, and the app's settings name the model; start the daemon with one.")
    if client.file is None:
        raise BadRequest(f"{client.name} has no settings file the daemon writes; copy its snippet instead.")
    home = connect.home_folder()
    if home is None:
        raise BadRequest("There is no home folder here, so there is no settings file to write.")
    return client, home, home / client.file


@bp.get("/api/connect/<client_id>/preview")
async def preview_connect(client_id: str) -> Response:
    """What POST would change in the file, as a diff, for the person to see first."""
    client, home, file = _writable(client_id)
    values = _values()
    try:
        shown = await trio.to_thread.run_sync(functools.partial(connect.preview, client, home, values))
    except connect.SettingsError as exc:
        raise SettingsConflict(f"{file}: {exc}") from None
    except OSError as exc:
        raise SettingsConflict(f"{file} cannot be read: {exc.strerror or exc}.") from None
    return jsonify(shown)


@bp.post("/api/connect/<client_id>")
async def post_connect(client_id: str) -> Response:
    client, home, file = _writable(client_id)
    values = _values()
    try:
        path, backup = await trio.to_thread.run_sync(
            functools.partial(connect.apply, client, home, values, write_file=write_atomic)
        )
    except connect.SettingsError as exc:
        raise SettingsConflict(f"{file}: {exc}") from None
    except OSError as exc:
        raise SettingsConflict(f"{file} cannot be written: {exc.strerror or exc}.") from None
    return jsonify({"file": str(path), "backup": str(backup) if backup is not None else None})
