"""The check of what the local backend uses inside llama-cpp-python: it passes on the
installed version, refuses one that lacks a member with the version and the member in
plain words, and runs when the local backend loads a model."""

from __future__ import annotations

import tomllib
import types
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from actors.errors import TurnFailed
from actors.model.backends import llama_internals
from actors.model.backends.llama_internals import (
    SUPPORTED,
    LlamaChanged,
    check_loaded,
    check_module,
    installed_version,
    missing_in_loaded,
    missing_in_module,
)
from actors.model.backends.local import LocalBackend
from tests.test_model import model_path  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parent.parent


def test_the_installed_llama_cpp_python_has_every_member_the_backend_uses():
    assert missing_in_module() == []
    check_module()


def test_pyproject_pins_the_releases_the_module_names_and_the_installed_one_is_among_them():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    (line,) = [d for d in deps if Requirement(d).name == "llama-cpp-python"]
    assert Requirement(line).specifier == Requirement("llama-cpp-python" + SUPPORTED).specifier
    assert installed_version() in Requirement(line).specifier


def test_a_method_missing_is_refused_with_the_version_and_the_member(monkeypatch):
    from llama_cpp.llama_grammar import SchemaConverter

    monkeypatch.delattr(SchemaConverter, "_format_literal")
    assert missing_in_module() == ["SchemaConverter._format_literal (a method)"]
    with pytest.raises(LlamaChanged) as caught:
        check_module()
    text = str(caught.value)
    assert text.startswith(
        f"llama-cpp-python {installed_version()} lacks what the local backend uses inside it: "
        "SchemaConverter._format_literal (a method). "
    )
    assert f"pip install 'llama-cpp-python{SUPPORTED}'" in text
    assert isinstance(caught.value, TurnFailed)  # so a load's callers say it as they say any failed load


def test_an_object_without_the_members_of_a_loaded_llama_is_refused_naming_each():
    with pytest.raises(LlamaChanged) as caught:
        check_loaded(types.SimpleNamespace(n_tokens=0))
    assert missing_in_loaded(types.SimpleNamespace(n_tokens=0)) == [
        "Llama._ctx (a llama_cpp._internals.LlamaContext)",
        "Llama._model (a llama_cpp._internals.LlamaModel)",
        "Llama._requires_eval (a bool)",
        "Llama.input_ids (a numpy array)",
    ]
    assert "Llama._requires_eval (a bool); Llama.input_ids (a numpy array)." in str(caught.value)


async def test_the_load_is_refused_before_the_model_is_read(monkeypatch, tmp_path):
    """check_module runs before llama.cpp reads the file: this one is no GGUF, and the
    refusal is the check's, not the load's."""
    monkeypatch.setattr(llama_internals, "missing_in_module", lambda: ["Llama.ctx (a property)"])
    not_a_model = tmp_path / "x.gguf"
    not_a_model.write_bytes(b"not a model")
    with pytest.raises(LlamaChanged, match=r"lacks what the local backend uses inside it: Llama.ctx \(a property\)"):
        await LocalBackend.load(not_a_model, n_ctx=512, prompt_cache_bytes=0)


@pytest.mark.model
async def test_a_loaded_model_has_every_member_and_one_without_is_refused_at_load(monkeypatch, model_path):  # noqa: F811
    """The real Llama the backend loads passes the check; the same Llama without
    `_requires_eval` (a flag whose absence would raise nothing, only sample from stale
    logits after a restore) is refused by LocalBackend.load, with the version."""
    seen = []

    def without_the_flag(llm):
        seen.append(missing_in_loaded(llm))
        del llm._requires_eval
        check_loaded(llm)

    monkeypatch.setattr(llama_internals, "check_loaded", without_the_flag)
    with pytest.raises(LlamaChanged) as caught:
        await LocalBackend.load(model_path, n_ctx=512)
    assert seen == [[]]
    assert str(caught.value).startswith(
        f"llama-cpp-python {installed_version()} lacks what the local backend uses inside it: "
        "Llama._requires_eval (a bool). "
    )
