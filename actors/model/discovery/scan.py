"""The person's GGUF models: where other apps and the person keep them, each described
from its header (actors/model/discovery/gguf_header.py) without loading it.

The places: the daemon's `<data>/models/`, each `--models-dir`, LM Studio's
(`~/.lmstudio/models`, `~/.cache/lm-studio/models`), the Hugging Face cache
(`~/.cache/huggingface/hub`, whose snapshots link to blobs), and Ollama's
(`~/.ollama/models`, whose manifests name each model's blob). Nothing leaves the
computer. A split model (`name-00001-of-00003.gguf`) is listed once, by its first
part, with the parts' sizes added. A vision projector (`mmproj*.gguf`) is not a model:
it marks the models beside it. A place that cannot be read is left out with a notice.

`scan` is blocking (a walk and a header read per file): run it in a worker thread.
It stops at MAX_FILES models or after SCAN_BUDGET_S, saying so in a notice.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import attrs

from actors.model.discovery.gguf_header import NotGguf, read_header_file
from actors.model.toolcalls import detect_format

MAX_FILES = 500
SCAN_BUDGET_S = 20.0
MAX_DEPTH = 6  # folders below a place's root that are walked
MAX_MANIFEST_BYTES = 256 * 1024

SPLIT = re.compile(r"^(?P<stem>.+)-(?P<part>\d{5})-of-(?P<parts>\d{5})\.gguf$", re.IGNORECASE)
OLLAMA_MODEL = "application/vnd.ollama.image.model"
OLLAMA_PROJECTOR = "application/vnd.ollama.image.projector"


@attrs.frozen
class Place:
    source: str  # "data", "folder", "lmstudio", "huggingface", "ollama", "bundled"
    root: Path


@attrs.frozen
class ModelFile:
    name: str
    path: str
    source: str
    size: int
    architecture: str | None = None
    parameters: int | None = None
    quantization: str | None = None
    context_length: int | None = None
    tool_calls: bool = False
    tool_format: str | None = None
    vision: bool = False
    error: str | None = None  # the header could not be read: why

    def to_json(self) -> dict[str, object]:
        return attrs.asdict(self)


@attrs.frozen
class Listing:
    models: list[ModelFile]
    notices: list[str]

    def to_json(self) -> dict[str, object]:
        return {"models": [m.to_json() for m in self.models], "notices": self.notices}


def places(home: Path, data_dir: Path, folders: tuple[Path, ...] = ()) -> list[Place]:
    """Where models are looked for, in listing order."""
    out = [Place("data", data_dir / "models")]
    out += [Place("folder", f.expanduser()) for f in folders]
    out += [
        Place("lmstudio", home / ".lmstudio" / "models"),
        Place("lmstudio", home / ".cache" / "lm-studio" / "models"),
        Place("huggingface", home / ".cache" / "huggingface" / "hub"),
        Place("ollama", home / ".ollama" / "models"),
    ]
    return out


def inside_places(path: Path, roots: list[Place]) -> bool:
    """Whether `path` (resolved, links followed) lies inside one of the places (resolved)."""
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return False
    for place in roots:
        try:
            root = place.root.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        if real == root or real.is_relative_to(root):
            return True
    return False


def describe(path: Path, *, name: str, source: str, size: int | None = None, vision: bool = False) -> ModelFile:
    """The listing's entry for one GGUF, its header read (never an exception: a header
    that cannot be read is the entry's `error`)."""
    shown = str(path)
    try:
        real_size = size if size is not None else path.stat().st_size
        header = read_header_file(path)
    except (OSError, NotGguf) as exc:
        return ModelFile(name, shown, source, size or 0, error=f"cannot read its header: {exc}")
    template = header.chat_template
    fmt = detect_format(template) if template else None
    return ModelFile(
        name=name, path=shown, source=source, size=real_size, architecture=header.architecture,
        parameters=header.parameters or None, quantization=header.quantization,
        context_length=header.context_length, tool_calls=fmt is not None and fmt != "generic",
        tool_format=fmt, vision=vision,
    )


@attrs.define
class _Budget:
    deadline: float
    files: int = 0
    stopped: str | None = None

    def more(self) -> bool:
        if self.stopped is None:
            if self.files >= MAX_FILES:
                self.stopped = f"The listing stops at {MAX_FILES} models; more may be in the folders."
            elif time.monotonic() > self.deadline:
                self.stopped = f"The listing stopped after {SCAN_BUDGET_S:g} s; more may be in the folders."
        return self.stopped is None


def scan(place_list: list[Place], *, extra: tuple[tuple[Path, str], ...] = (),
         budget_s: float = SCAN_BUDGET_S) -> Listing:
    """Every model in `place_list` (a missing place is silently empty, an unreadable one
    a notice), after `extra` (a file and its source: the bundled model, the one given
    with --model, the one serving). A file found twice (a link) is listed once; an
    `extra` file that a place holds too is listed as that place finds it (its source,
    name and vision projector), where the extra stood."""
    budget = _Budget(time.monotonic() + budget_s)
    models: list[ModelFile] = []
    notices: list[str] = []
    seen: set[Path] = set()
    extra_at: dict[Path, int] = {}  # an extra's real path -> its row, until a place finds it

    def add(entry: ModelFile, real: Path) -> None:
        if real in seen:
            return
        seen.add(real)
        budget.files += 1
        models.append(entry)

    for path, source in extra:
        if budget.more() and path.is_file():
            real = path.resolve()
            if real not in seen:
                extra_at[real] = len(models)
            add(describe(path, name=path.name.removesuffix(".gguf"), source=source), real)
    for place in place_list:
        if not budget.more():
            break
        try:
            if not place.root.is_dir():
                continue
            if place.source == "ollama":
                found = list(_ollama(place.root, notices))
            elif place.source == "huggingface":
                found = list(_huggingface(place.root, notices, budget))
            else:
                found = list(_folder(place.root, place.source, notices, budget))
        except OSError as exc:
            notices.append(f"{place.root} was skipped: it cannot be read ({exc.strerror or exc}).")
            continue
        for path, name, source, size, vision in found:
            if not budget.more():
                break
            try:
                real = path.resolve(strict=True)
            except (OSError, RuntimeError):
                continue
            if real in extra_at:
                models[extra_at.pop(real)] = describe(path, name=name, source=source, size=size, vision=vision)
            elif real not in seen:
                add(describe(path, name=name, source=source, size=size, vision=vision), real)
    if budget.stopped:
        notices.append(budget.stopped)
    return Listing(models, notices)


# A found model: its path, name, source, size (the parts' sum for a split one) and vision.
_Found = tuple[Path, str, str, int, bool]


def _walk(root: Path, notices: list[str], budget: _Budget) -> Iterator[tuple[Path, list[str]]]:
    """Each folder under `root` (at most MAX_DEPTH below) with its file names; a folder
    that cannot be read is a notice."""

    def failed(exc: OSError) -> None:
        notices.append(f"{exc.filename or root} was skipped: it cannot be read ({exc.strerror or exc}).")

    base = len(root.parts)
    for folder, dirs, files in os.walk(root, onerror=failed, followlinks=False):
        here = Path(folder)
        if len(here.parts) - base >= MAX_DEPTH or not budget.more():
            dirs.clear()
        dirs.sort()
        yield here, sorted(files)


def _group(folder: Path, names: list[str], *, source: str, label: str = "") -> Iterator[_Found]:
    """The models among the file names of one folder: splits once, projectors as vision."""
    ggufs = [n for n in names if n.lower().endswith(".gguf")]
    vision = any(n.lower().startswith("mmproj") for n in ggufs)
    for n in ggufs:
        if n.lower().startswith("mmproj"):
            continue
        split = SPLIT.match(n)
        path = folder / n
        if split:
            if int(split["part"]) != 1:
                continue
            parts = [p for p in ggufs if (m := SPLIT.match(p)) and m["stem"] == split["stem"]]
            size = sum(_size(folder / p) for p in parts)
            stem = split["stem"]
        else:
            size = _size(path)
            stem = n[: -len(".gguf")]
        yield path, f"{label}{stem}" if label else stem, source, size, vision


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _folder(root: Path, source: str, notices: list[str], budget: _Budget) -> Iterator[_Found]:
    for folder, names in _walk(root, notices, budget):
        yield from _group(folder, names, source=source)


def _huggingface(hub: Path, notices: list[str], budget: _Budget) -> Iterator[_Found]:
    """`hub/models--org--name/snapshots/<revision>/...gguf`, each a link to a blob; the
    name is `org/name/file`. Every revision is looked at; a blob seen twice is listed once."""
    for repo in sorted(hub.iterdir()):
        if not repo.name.startswith("models--"):
            continue
        label = repo.name.removeprefix("models--").replace("--", "/") + "/"
        snapshots = repo / "snapshots"
        try:
            revisions = sorted(snapshots.iterdir()) if snapshots.is_dir() else []
        except OSError as exc:
            notices.append(f"{snapshots} was skipped: it cannot be read ({exc.strerror or exc}).")
            continue
        for rev in revisions:
            for folder, names in _walk(rev, notices, budget):
                yield from _group(folder, names, source="huggingface", label=label)


def _ollama(root: Path, notices: list[str]) -> Iterator[_Found]:
    """Each manifest under `root/manifests/<registry>/<namespace>/<model>/<tag>` names
    its model's blob (`root/blobs/sha256-<hex>`); the name is `model:tag` (with the
    namespace when it is not `library`)."""
    manifests = root / "manifests"
    if not manifests.is_dir():
        return
    for folder, _dirs, files in os.walk(manifests):
        for tag in sorted(files):
            path = Path(folder) / tag
            rel = path.relative_to(manifests).parts
            try:
                with open(path, "rb") as f:
                    doc = json.loads(f.read(MAX_MANIFEST_BYTES + 1)[:MAX_MANIFEST_BYTES])
            except (OSError, ValueError) as exc:
                notices.append(f"Ollama's manifest {path} was skipped: {exc}.")
                continue
            layers = doc.get("layers") if isinstance(doc, dict) else None
            if not isinstance(layers, list):
                continue
            kinds = {layer.get("mediaType"): layer for layer in layers if isinstance(layer, dict)}
            model = kinds.get(OLLAMA_MODEL)
            digest = model.get("digest") if model else None
            if not isinstance(digest, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
                continue
            blob = root / "blobs" / digest.replace(":", "-")
            if not blob.is_file():
                continue
            if len(rel) < 3:
                continue
            namespace, model_name = rel[-3], rel[-2]
            name = f"{model_name}:{tag}" if namespace == "library" else f"{namespace}/{model_name}:{tag}"
            yield blob, name, "ollama", _size(blob), OLLAMA_PROJECTOR in kinds
