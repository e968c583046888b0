"""The person's choice of model: which GGUF the engine loads, kept for the next start.

A choice made with `PUT /api/model` is written to `<data>/model.json` (whole, then
renamed) once the model has loaded; the next start loads it again unless `--model`
or `--no-model` says otherwise. Only a model the listing could show may be chosen
(a file inside the places actors/model_scan.py looks in, the bundled one, or the one
given with --model): a client must not make the daemon open any file it names.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import attrs
import cattrs
import trio

from actors.atomic import read_own_file, write_atomic
from actors.engine import Backend, Engine, Loader, ModelState
from actors.model_scan import inside_places, places
from bmoe_daemon.config import Config

log = logging.getLogger("bmoe.models")

CHOICE_FILE = "model.json"
MAX_CHOICE_BYTES = 64 * 1024
MIN_CTX = 512
MAX_CTX = 1024 * 1024
MAX_THREADS = 256
MAX_GPU_LAYERS = 100_000  # -1 is every layer, as llama.cpp takes it

_converter = cattrs.Converter(forbid_extra_keys=True)


@attrs.frozen
class ModelChoice:
    path: str
    ctx_size: int | None = None
    n_gpu_layers: int | None = None
    threads: int | None = None

    def problem(self) -> str | None:
        """What is wrong with the numbers, in words; None when nothing is."""
        if not self.path:
            return "path names the GGUF file to load; it is empty."
        if self.ctx_size is not None and not MIN_CTX <= self.ctx_size <= MAX_CTX:
            return f"ctx_size must be between {MIN_CTX} and {MAX_CTX}."
        if self.n_gpu_layers is not None and not -1 <= self.n_gpu_layers <= MAX_GPU_LAYERS:
            return "n_gpu_layers must be -1 (every layer), 0 (none) or a number of layers."
        if self.threads is not None and not 1 <= self.threads <= MAX_THREADS:
            return f"threads must be between 1 and {MAX_THREADS}."
        return None


def remembered(data_dir: Path) -> ModelChoice | None:
    """The choice kept in the data folder; None when there is none or it does not read
    (which is logged: the daemon then starts as if none were kept)."""
    path = data_dir / CHOICE_FILE
    try:
        raw = read_own_file(path, MAX_CHOICE_BYTES)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        log.warning("the kept model choice %s cannot be read (%s); it is left aside", path, exc)
        return None
    try:
        choice = _converter.structure(json.loads(raw), ModelChoice)
    except (ValueError, TypeError, cattrs.BaseValidationError) as exc:
        log.warning("the kept model choice %s is not one (%s); it is left aside", path, exc)
        return None
    return choice if choice.problem() is None else None


def remember(data_dir: Path, choice: ModelChoice) -> None:
    """Keep `choice` for the next start (whole or not at all)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(data_dir / CHOICE_FILE, json.dumps(_converter.unstructure(choice), indent=1).encode())


def model_event(state: ModelState) -> dict[str, object]:
    """The `model` event: which model, its context, and whether it is in memory
    (`state`: loaded, loading for a waiting turn, or asleep after --idle-unload)."""
    return {"model": state.model, "n_ctx": state.n_ctx, "loaded": state.loaded, "state": state.state}


def model_places(config: Config) -> list[Path]:
    return [p.root for p in places(Path.home(), config.data_dir, config.models_dirs)]


def given_models(config: Config, engine: Engine) -> list[tuple[Path, str]]:
    """The models outside the places that may be loaded all the same: the bundled one,
    the one given with --model, and the one that serves now."""
    from actors.backends.local import bundled_model_path

    out: list[tuple[Path, str]] = []
    bundled = bundled_model_path()
    if bundled is not None:
        out.append((bundled, "bundled"))
    if config.model is not None:
        out.append((config.model, "given"))
    current = getattr(engine.backend, "path", None)
    if isinstance(current, Path):
        out.append((current, "loaded"))
    return out


def may_load(path: Path, config: Config, engine: Engine) -> bool:
    """Whether `path` is a model the listing could show (see the module docstring)."""
    if inside_places(path, places(Path.home(), config.data_dir, config.models_dirs)):
        return True
    try:
        real = path.resolve(strict=True)
        return any(real == given.resolve() for given, _ in given_models(config, engine))
    except (OSError, RuntimeError):
        return False


def local_loader(config: Config, choice: ModelChoice, *, keep: bool) -> Loader:
    """What loads `choice` with llama.cpp (the daemon's own settings where it says
    nothing); `keep`: once loaded, the choice is kept for the next start."""

    async def load() -> Backend:
        from actors.backends.local import LocalBackend

        backend = await LocalBackend.load(
            Path(choice.path), n_ctx=choice.ctx_size or config.ctx_size, n_threads=choice.threads or config.threads,
            prompt_cache_bytes=config.prompt_cache_mib * 1024 * 1024,
            n_gpu_layers=config.n_gpu_layers if choice.n_gpu_layers is None else choice.n_gpu_layers,
            seed=config.seed,
        )
        if keep:
            try:
                await trio.to_thread.run_sync(remember, config.data_dir, choice)
            except OSError as exc:  # the model serves all the same; only the next start will not know
                log.warning("the model choice could not be kept in %s: %s", config.data_dir, exc)
        return backend

    return load
