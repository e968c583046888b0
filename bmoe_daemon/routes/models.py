"""The person's models: `GET /api/models` lists the GGUF files found
(actors/model/discovery/scan.py), `PUT /api/model` loads one between turns, `GET /api/model`
says which one serves (its name and context, for a conversation's header; for a local
model, its chat template's tool format, whether it is the file's or the person's, and
the shapes histories needed to render in it, actors/model/backends/template_shapes.py;
and whether its runs are led, `led`: a small local model is unless the daemon was
started with `--leading off`, which `leading` says).
`PUT /api/model` with `chat_template` gives the model a template of the person's
(kept for that file in the data folder; "" goes back to the file's).

The listing and a load are local only: the listing shows the computer's paths, and a
load opens a file. `GET /api/model` answers any client, with the file's path to a
client on this computer only.
A load answers once the new model serves (a `model` event says so to every client);
a file that is not a GGUF is refused before the old model is touched, and one that
does not load leaves the old model serving. Either is `400` with what is wrong.
"""

from __future__ import annotations

from pathlib import Path

import trio
from quart import Blueprint, Response, jsonify, request

from actors.errors import EngineError
from actors.model.discovery.gguf_header import NotGguf, read_header_file
from actors.runs.agent.small.size import leads
from bmoe_daemon.bodies import parse_json, structure
from bmoe_daemon.context import daemon, is_local
from bmoe_daemon.errors import BadRequest
from bmoe_daemon.models import ModelChoice, given_models, local_loader, may_load

bp = Blueprint("models", __name__)

# One listing at a time: each walks folders and reads headers in a worker thread.
_SCANS = trio.CapacityLimiter(1)


def _loaded() -> dict[str, object] | None:
    d = daemon()
    backend, config = d.engine.backend, d.config
    if backend is None:
        return None
    path = getattr(backend, "path", None)
    out: dict[str, object] = {"model": backend.model_id, "path": str(path) if path is not None else None,
                              "n_ctx": backend.n_ctx}
    info = getattr(backend, "template_info", None)  # a local model's chat template (a provider's is its own)
    if info is not None:
        out.update(info())
    # Whether its runs are led (a small model, unless serve --leading off) and the daemon's --leading.
    out["led"] = config.leading != "off" and leads("local", backend)
    out["leading"] = config.leading
    return out


@bp.get("/api/models")
async def get_models() -> Response:
    from actors.model.discovery.scan import places, scan  # the listing's, loaded at its first read

    d = daemon()
    where = places(Path.home(), d.config.data_dir, d.config.models_dirs)
    extra = tuple(given_models(d.config, d.engine))
    listing = await trio.to_thread.run_sync(lambda: scan(where, extra=extra), limiter=_SCANS)
    return jsonify({**listing.to_json(), "loaded": _loaded()})


@bp.get("/api/model")
async def get_model() -> Response:
    """The model that serves: `{model, n_ctx}` (and `path` for a local client); null for none."""
    loaded = _loaded()
    if loaded is not None and not is_local():
        loaded.pop("path")
    return jsonify(loaded)


@bp.put("/api/model")
async def put_model() -> Response:
    d = daemon()
    choice = structure(parse_json(await request.get_data()), ModelChoice)
    problem = choice.problem()
    if problem is not None:
        raise BadRequest(problem)
    path = Path(choice.path)
    if not path.is_absolute():
        raise BadRequest("path must be a file's whole path, as GET /api/models lists it.")
    if not await trio.to_thread.run_sync(may_load, path, d.config, d.engine):
        raise BadRequest(
            f"{path} is not one of the models GET /api/models lists. Put the file in {d.config.data_dir / 'models'} "
            "or start the daemon with --models-dir naming its folder, then load it again."
        )
    try:
        await trio.to_thread.run_sync(read_header_file, path)
    except NotGguf as exc:
        raise BadRequest(f"{path.name} cannot be loaded: {exc}. The model that was serving still serves.") from None
    except OSError as exc:
        raise BadRequest(f"{path} cannot be read ({exc.strerror or exc}). The model that was serving still serves.") \
            from None
    choice = ModelChoice(str(path), choice.ctx_size, choice.n_gpu_layers, choice.threads, choice.chat_template)
    try:
        await d.engine.switch(local_loader(d.config, choice, keep=True))
    except EngineError as exc:
        after = "The model that was serving still serves." if d.engine.backend is not None else (
            "The model that was serving could not be loaded again either: load one, or restart the daemon.")
        raise BadRequest(f"{exc} {after}") from None
    return jsonify(_loaded())
