"""The four tool-call syntaxes: their tags, `detect_format` (which one a GGUF chat
template teaches), and the per-format tables ToolCallParser reads (what may open an answer, which
tags break up text) and its envelope reader (how deep the JSON scanner watches).

The syntaxes themselves are described in the package docstring (actors/model/toolcalls/__init__.py).
"""

from __future__ import annotations

FORMATS = ("hermes", "llama3", "mistral", "generic")

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
HERMES_OPEN = "<tool_call>"
HERMES_CLOSE = "</tool_call>"
MISTRAL_OPEN = "[TOOL_CALLS]"
PYTHON_TAG = "<|python_tag|>"


def detect_format(chat_template: str | None) -> str:
    """The tool-call syntax a GGUF chat template teaches its model (one of FORMATS)."""
    t = chat_template or ""
    if HERMES_OPEN in t:
        return "hermes"
    if MISTRAL_OPEN in t:
        return "mistral"
    if PYTHON_TAG in t or ("<|start_header_id|>" in t and '"parameters"' in t):
        return "llama3"
    return "generic"


# What the parser (and its envelope reader) does differently per format.
WATCH = {"hermes": 2, "mistral": 2, "llama3": 1, "generic": 3}
OPENERS = {
    "hermes": (THINK_OPEN, HERMES_OPEN),
    "mistral": (THINK_OPEN, MISTRAL_OPEN),
    "llama3": (THINK_OPEN, PYTHON_TAG, "{"),
    "generic": (THINK_OPEN, "{"),
}
TEXT_TAGS = {"hermes": (HERMES_OPEN, HERMES_CLOSE), "mistral": (MISTRAL_OPEN,), "llama3": (PYTHON_TAG,), "generic": ()}
