"""What the local backend uses inside llama-cpp-python, and the check that it is there.

`Llama` does not offer everything the local backend needs, so it reaches inside it:

- `Llama._ctx`, replaced (prompt_cache.with_scratch_sequence): the old context is
  closed and `llama_cpp._internals.LlamaContext(model=llm._model, params=..., verbose=...)`
  put in its place, with room for a second sequence. Llama takes no argument for
  `n_seq_max` or `kv_unified`, so its own context cannot be asked for that. Since 0.3.35
  a LlamaContext registers its close on its model, so this one is freed before the
  model when Llama closes; before, it outlived the model.
- `Llama._model`, the model the new context is made for (above).
- `Llama._requires_eval`, set after a saved cache is restored (prompt_cache): the
  logits are not restored, so a prompt the cache holds whole must decode its last token
  again. Since 0.3.32 `generate` reads the flag; setting a flag nobody reads raises
  nothing, so without the check a changed Llama would sample from stale logits.
- `llama_grammar.SchemaConverter._format_literal` (overridden), `._rules` and
  `._add_rule` (generic_grammar.schema_to_gbnf): the literals escaped as llama.cpp reads
  them, and the rules of a string with exclusions. A converter that fails there only
  makes the grammar looser (generic_grammar catches it), so it too would go unseen.
- `llama_cpp.llama_cpp.llama_model_default_params`, wrapped on a CPU with AMX
  (local.avoid_amx_repack) to set `llama_model_params.use_extra_bufts`; it works because
  `Llama.__init__` looks the function up on that module when it loads a model.
- Public attributes written, not only read: `Llama.n_tokens`, `Llama.input_ids` (the
  prefill and the restore) and `Llama.context_params` (`n_seq_max`, `kv_unified`).

Where a public API does the same, it is used instead: `Llama.ctx` for the context's
pointer (not `_ctx.ctx`), and `llama_model_n_params(llm.model)` and
`llama_model_get_vocab(llm.model)` (not `_model.n_params()`, `_model.vocab`).

pyproject.toml pins llama-cpp-python to SUPPORTED, the releases these members are known
in. `check_module()` (before a model loads) and `check_loaded(llm)` (once it has) raise
LlamaChanged, naming the installed version and every member missing, so a changed
llama-cpp-python stops the load with a plain message, not a turn with an AttributeError.
"""

from __future__ import annotations

import importlib.metadata
import inspect
from typing import Any

from actors.errors import TurnFailed

# The releases of llama-cpp-python the members above are known in (pyproject.toml says
# the same, and tests/test_llama_internals.py checks that it does). 0.3.35: the first
# that frees a replaced context before its model (and has `_requires_eval`, from 0.3.32);
# its llama.py, _internals.py and llama_grammar.py are those of 0.3.36, the one these tests ran on.
SUPPORTED = ">=0.3.35,<0.4"
DISTRIBUTION = "llama-cpp-python"


class LlamaChanged(TurnFailed):
    """The installed llama-cpp-python lacks a member the local backend uses inside it."""


def installed_version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        import llama_cpp

        return str(getattr(llama_cpp, "__version__", "of unknown version"))


def missing_in_module() -> list[str]:
    """The members of llama-cpp-python's modules and classes the backend uses that are
    not there, or not of the kind it uses, as `where.name (what is expected)`."""
    import llama_cpp
    import llama_cpp.llama_cpp as bindings
    from llama_cpp import Llama, _internals, llama_grammar

    missing: list[str] = []
    context = getattr(_internals, "LlamaContext", None)
    if not isinstance(context, type):
        missing.append("llama_cpp._internals.LlamaContext (a class)")
    else:
        params = inspect.signature(context).parameters
        absent = [name for name in ("model", "params", "verbose") if name not in params]
        if absent:
            missing.append(f"llama_cpp._internals.LlamaContext's arguments {', '.join(absent)}")
    if not isinstance(getattr(_internals, "LlamaModel", None), type):
        missing.append("llama_cpp._internals.LlamaModel (a class)")
    for name in ("ctx", "model"):
        if not isinstance(inspect.getattr_static(Llama, name, None), property):
            missing.append(f"Llama.{name} (a property)")
    for name in ("llama_model_n_params", "llama_model_get_vocab"):
        if not callable(getattr(llama_cpp, name, None)):
            missing.append(f"llama_cpp.{name} (a function)")
    converter = getattr(llama_grammar, "SchemaConverter", None)
    if not isinstance(converter, type):
        missing.append("llama_cpp.llama_grammar.SchemaConverter (a class)")
    else:
        for name in ("_format_literal", "_add_rule", "visit", "resolve_refs", "format_grammar"):
            if not callable(getattr(converter, name, None)):
                missing.append(f"SchemaConverter.{name} (a method)")
        try:
            made: Any = converter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
        except TypeError as exc:
            missing.append(f"SchemaConverter(prop_order, allow_fetch, dotall, raw_pattern) ({exc})")
        else:
            if not isinstance(getattr(made, "_rules", None), dict):
                missing.append("SchemaConverter._rules (a dict)")
    if not callable(getattr(bindings, "llama_model_default_params", None)):
        missing.append("llama_cpp.llama_cpp.llama_model_default_params (a function)")
    if getattr(Llama.__init__, "__globals__", {}).get("llama_cpp") is not bindings:
        missing.append("Llama.__init__ looking up llama_model_default_params on llama_cpp.llama_cpp")
    fields = {name for name, *_ in getattr(bindings.llama_model_params, "_fields_", ())}
    if "use_extra_bufts" not in fields:
        missing.append("llama_model_params.use_extra_bufts (a field)")
    return missing


def missing_in_loaded(llm: Any) -> list[str]:
    """The members of a loaded `Llama` the backend uses that are not there, or not of
    the kind it uses."""
    from llama_cpp import _internals

    missing: list[str] = []
    ctx = getattr(llm, "_ctx", None)
    if not isinstance(ctx, _internals.LlamaContext):
        missing.append("Llama._ctx (a llama_cpp._internals.LlamaContext)")
    elif not callable(getattr(ctx, "close", None)):
        missing.append("LlamaContext.close (a method)")
    if not isinstance(getattr(llm, "_model", None), _internals.LlamaModel):
        missing.append("Llama._model (a llama_cpp._internals.LlamaModel)")
    if not isinstance(getattr(llm, "_requires_eval", None), bool):
        missing.append("Llama._requires_eval (a bool)")
    if not isinstance(getattr(llm, "n_tokens", None), int):
        missing.append("Llama.n_tokens (an int)")
    if not hasattr(getattr(llm, "input_ids", None), "dtype"):
        missing.append("Llama.input_ids (a numpy array)")
    return missing


def refusal(missing: list[str], version: str) -> LlamaChanged:
    """The error that says what is missing, in which version, and what to install."""
    return LlamaChanged(
        f"llama-cpp-python {version} lacks what the local backend uses inside it: {'; '.join(missing)}. "
        f"bmoe-daemon is written against llama-cpp-python{SUPPORTED} (pyproject.toml); install one of those "
        f"(pip install 'llama-cpp-python{SUPPORTED}'), or carry actors/model/backends/llama_internals.py "
        "and its users over to the new version."
    )


def check_module() -> None:
    """Raise LlamaChanged unless llama-cpp-python's modules have every member the
    backend uses (see the module docstring). Before a model loads: a load takes seconds."""
    missing = missing_in_module()
    if missing:
        raise refusal(missing, installed_version())


def check_loaded(llm: Any) -> None:
    """Raise LlamaChanged unless the loaded `llm` has every member the backend uses."""
    missing = missing_in_loaded(llm)
    if missing:
        raise refusal(missing, installed_version())
