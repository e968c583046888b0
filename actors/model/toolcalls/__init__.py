"""Splits a local model's raw output into answer text, reasoning and tool calls.

The output arrives in pieces cut anywhere (tokens). Four syntaxes are understood,
the families llama.cpp's server parses for the chat templates found in GGUFs:

- ``hermes`` (Hermes 2 Pro, Qwen 2.5, Qwen 3): text, and calls written as
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, one after another.
- ``llama3`` (Llama 3.1-3.3): the whole answer is one object ``{"name": ...,
  "parameters": {...}}`` (``"arguments"`` is taken too), maybe after
  ``<|python_tag|>``; an answer that does not begin with ``{`` is text.
- ``mistral`` (Mistral Nemo, Small): text, then ``[TOOL_CALLS]`` and a JSON array of
  ``{"name", "arguments", "id"}`` objects.
- ``generic`` (templates with no tool syntax; the daemon constrains the answer with a
  grammar): ``{"tool_calls": [...]}``, ``{"tool_call": {...}}`` or ``{"response": "..."}``,
  the response string streaming out as text while it is written.

In all of them ``<think>...</think>`` blocks at the start are reasoning
(``thinking_open=True``: the template opened the block, the answer starts inside
it). A ``</think>`` that was never opened means the template opened it unannounced:
the text shown so far was reasoning, and a `Retract` event says so.

Calls. `CallStart` comes once the name is read and the arguments have begun (in
mistral, once the model's own id is read too, as its models write it last), so the
announced id is final: the model's id when it wrote one by then, else ``call_<n>``.
The arguments then stream as `CallArgs` fragments of the JSON text exactly as
written (from the value's first character to its last); a call without arguments
gets ``{}``. A call that cannot be run (bad JSON, no name, arguments that are not an
object, output cut off) still ends, with `CallEnd.error` saying why and its
arguments as far as they were written; in llama3 (and generic), JSON that is not a
call is shown as text. Pure: feed text in, get events out; no I/O, nothing async,
so cancellation is the caller's.

Cost. Each piece is looked at once: tags are found with ``str.find``/regex searches
over the new text only, and JSON goes through a structural scanner (depth, strings,
escapes, the key at each level, where a value starts and ends) that keeps its state
between pieces, so a call's arguments stream out as they are written and the cost
of a piece does not grow with what came before. The only text held back is what
could still become a tag, plus trailing whitespace (whitespace right before a tag
or at the very end is dropped, so answers do not end in the newlines that separate
calls).

Modules: `events` (what the parser emits and its result), `formats` (the four
syntaxes' tags, `detect_format`, and what the parser does differently per format),
`partial_json` (the structural scanner and the string decoder that follow JSON fed
in pieces), `buffers` (shown text and reasoning, captured stretches, tag tails held
back), `envelope` (`EnvelopeReader`: a call's JSON envelope, read with the scanner
into calls, their names, ids and streamed arguments, until it closes or breaks) and
`parser` (`ToolCallParser`, the state machine that ties them together: text, think
blocks and tags outside the envelopes, and what follows each).
"""

from __future__ import annotations

from actors.model.toolcalls.events import (
    CallArgs,
    CallEnd,
    CallStart,
    Event,
    ParsedCall,
    ParseResult,
    Reasoning,
    Retract,
    Text,
)
from actors.model.toolcalls.formats import (
    FORMATS,
    HERMES_CLOSE,
    HERMES_OPEN,
    MISTRAL_OPEN,
    PYTHON_TAG,
    THINK_CLOSE,
    THINK_OPEN,
    detect_format,
)
from actors.model.toolcalls.parser import ToolCallParser

__all__ = [
    "FORMATS",
    "HERMES_CLOSE",
    "HERMES_OPEN",
    "MISTRAL_OPEN",
    "PYTHON_TAG",
    "THINK_CLOSE",
    "THINK_OPEN",
    "CallArgs",
    "CallEnd",
    "CallStart",
    "Event",
    "ParseResult",
    "ParsedCall",
    "Reasoning",
    "Retract",
    "Text",
    "ToolCallParser",
    "detect_format",
]
