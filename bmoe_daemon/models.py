"""The person's choice of model: which GGUF the engine loads, kept for the next start.

A choice made with `PUT /api/model` is written to `<data>/model.json` (whole, then
renamed) once the model has loaded; the next start loads it again unless `--model`
or `--no-model` says otherwise. A chat template the person gives a model (for one whose
own is broken or missing) is kept in `<data>/chat_templates.json` by the model file's
path, and used for that model at every load until they take it back. Only a model the listing could show may be chosen
(a file inside the places actors/model/discovery/scan.py looks in, the bundled one, or the one
given with --model): a client must not make the daemon open any file it names.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import attrs
import cattrs
import trio

from actors.fs.atomic import read_own_file, write_atomic
from actors.model.discovery.bundled import bundled_model_path
from actors.model.engine import Engine, Loader, ModelState
from actors.model.turns import Backend
from bmoe_daemon.config import Config
from bmoe_daemon.defaults import MAX_GPU_LAYERS

log = logging.getLogger("bmoe.models")

CHOICE_FILE = "model.json"
MAX_CHOICE_BYTES = 64 * 1024
MIN_CTX = 512
MAX_CTX = 1024 * 1024
MAX_THREADS = 256
TEMPLATES_FILE = "chat_templates.json"
MAX_TEMPLATE_CHARS = 128 * 1024  # the longest templates shipped in GGUFs are about 20 KiB
MAX_TEMPLATES_BYTES = 16 * 1024 * 1024

_converter = cattrs.Converter(forbid_extra_keys=True)


@attrs.frozen
class ModelChoice:
    path: str
    ctx_size: int | None = None
    n_gpu_layers: int | None = None
    threads: int | None = None
    # The person's chat template for this model: None keeps the one kept (or the
    # file's), "" goes back to the file's. Kept in TEMPLATES_FILE, not with the choice.
    chat_template: str | None = None

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
        if self.chat_template is not None and len(self.chat_template) > MAX_TEMPLATE_CHARS:
            return f"chat_template may be at most {MAX_TEMPLATE_CHARS:,} characters."
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
    kept = _converter.unstructure(attrs.evolve(choice, chat_template=None))
    kept.pop("chat_template", None)
    write_atomic(data_dir / CHOICE_FILE, json.dumps(kept, indent=1).encode())


def _template_key(path: Path) -> str:
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return str(path)


def kept_templates(data_dir: Path) -> dict[str, str]:
    """The person's chat templates by model path; empty when none are kept or the file
    does not read (which is logged: the models then use their own)."""
    path = data_dir / TEMPLATES_FILE
    try:
        raw = json.loads(read_own_file(path, MAX_TEMPLATES_BYTES))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("the kept chat templates %s cannot be read (%s); the models use their own", path, exc)
        return {}
    if not isinstance(raw, dict):
        return {}
    return {k: v for k, v in raw.items() if isinstance(k, str) and isinstance(v, str) and v}


def kept_template(data_dir: Path, model: Path) -> str | None:
    """The person's chat template for the model file `model`, None when there is none."""
    return kept_templates(data_dir).get(_template_key(model))


def keep_template(data_dir: Path, model: Path, template: str) -> None:
    """Keep `template` for `model` ("" takes the person's back: the file's is used)."""
    templates = kept_templates(data_dir)
    if template:
        templates[_template_key(model)] = template
    elif templates.pop(_template_key(model), None) is None:
        return
    data_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(data_dir / TEMPLATES_FILE, json.dumps(templates, indent=1).encode())


def model_event(state: ModelState) -> dict[str, object]:
    """The `model` event: which model, its context, and whether it is in memory
    (`state`: loaded, loading for a waiting turn, or asleep after --idle-unload)."""
    return {"model": state.model, "n_ctx": state.n_ctx, "loaded": state.loaded, "state": state.state}


def model_places(config: Config) -> list[Path]:
    from actors.model.discovery.scan import places

    return [p.root for p in places(Path.home(), config.data_dir, config.models_dirs)]


def given_models(config: Config, engine: Engine) -> list[tuple[Path, str]]:
    """The models outside the places that may be loaded all the same: the bundled one,
    the one given with --model, and the one that serves now."""
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
    from actors.model.discovery.scan import inside_places, places

    if inside_places(path, places(Path.home(), config.data_dir, config.models_dirs)):
        return True
    try:
        real = path.resolve(strict=True)
        return any(real == given.resolve() for given, _ in given_models(config, engine))
    except (OSError, RuntimeError):
        return False


def local_loader(config: Config, choice: ModelChoice, *, keep: bool) -> Loader:
    """What loads `choice` with llama.cpp (the daemon's own settings where it says
    nothing, the person's kept template for the file unless it gives one); `keep`:
    once loaded, the choice is kept for the next start."""

    async def load() -> Backend:
        from actors.model.backends.local import LocalBackend

        path = Path(choice.path)
        template = choice.chat_template
        if template is None:
            template = await trio.to_thread.run_sync(kept_template, config.data_dir, path)
        backend = await LocalBackend.load(
            path, n_ctx=choice.ctx_size or config.ctx_size, n_threads=choice.threads or config.threads,
            prompt_cache_bytes=config.prompt_cache_mib * 1024 * 1024,
            n_gpu_layers=config.n_gpu_layers if choice.n_gpu_layers is None else choice.n_gpu_layers,
            chat_template=template or None,
            seed=config.seed,
        )
        if choice.chat_template is not None:  # the person's change of template, once it loads
            try:
                await trio.to_thread.run_sync(keep_template, config.data_dir, path, choice.chat_template)
            except OSError as exc:
                log.warning("the chat template could not be kept in %s: %s", config.data_dir, exc)
        if keep:
            try:
                await trio.to_thread.run_sync(remember, config.data_dir, choice)
            except OSError as exc:  # the model serves all the same; only the next start will not know
                log.warning("the model choice could not be kept in %s: %s", config.data_dir, exc)
        return backend

    return load
