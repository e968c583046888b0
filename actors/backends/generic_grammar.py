"""The grammar of a generic-format answer: with a template that has no tool syntax,
the model answers with one JSON object, a call of one of the offered tools or a
reply, and llama.cpp's sampler is held to that shape."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from actors.engine import ToolSpec

if TYPE_CHECKING:  # importing llama_cpp loads llama.cpp, which waits until a model is loaded
    from llama_cpp.llama_grammar import LlamaGrammar


# Calls one generic-format answer may make at once; the run carries out the reads
# among them side by side (AgentRun.run_calls in actors/agent_run.py).
MAX_GENERIC_CALLS = 4


def generic_schema(
    tools: tuple[ToolSpec, ...], *, required: bool, strict: bool, parallel: bool = True
) -> dict[str, Any]:
    """The JSON schema of a generic-format answer: calls of `tools` (one, or up to
    MAX_GENERIC_CALLS when `parallel`), or a reply."""
    calls = [
        {
            "type": "object",
            "properties": {
                "name": {"const": t.name},
                "arguments": t.parameters if strict else {"type": "object"},
            },
            "required": ["name", "arguments"],
        }
        for t in tools
    ]
    call_branch = {
        "type": "object",
        "properties": {"tool_calls": {"type": "array", "items": {"oneOf": calls}, "minItems": 1,
                                      "maxItems": MAX_GENERIC_CALLS if parallel else 1}},
        "required": ["tool_calls"],
    }
    if required:
        return call_branch
    reply = {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}
    return {"oneOf": [call_branch, reply]}


# Grammars kept: a /v1 client chooses its tools, so what is kept is bounded.
MAX_GRAMMARS = 32


class GenericGrammars:
    """The grammars made lately, one per set of tools (converting a schema takes a
    while), the least recently used forgotten past MAX_GRAMMARS. A set of tools is
    known by its whole specification, not its names: the same names with other
    parameters make another grammar."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, ...], LlamaGrammar] = {}

    def __len__(self) -> int:
        return len(self._made)

    def _keep(self, key: tuple[str, ...], made: LlamaGrammar) -> LlamaGrammar:
        self._made.pop(key, None)
        self._made[key] = made  # most recently used last
        while len(self._made) > MAX_GRAMMARS:
            self._made.pop(next(iter(self._made)))
        return made

    def get(self, tools: tuple[ToolSpec, ...], *, required: bool, parallel: bool = True) -> LlamaGrammar:
        """A llama.cpp grammar that lets the answer be only well-formed tool calls of
        `tools` (one unless `parallel`) or (unless `required`) a reply: the generic
        format's JSON."""
        spec = json.dumps([[t.name, t.parameters] for t in tools], sort_keys=True, default=str)
        key = ("!tools", spec) + (("!required",) if required else ()) + (("!parallel",) if parallel else ())
        made = self._made.get(key)
        if made is None:
            from llama_cpp.llama_grammar import LlamaGrammar

            try:
                schema = generic_schema(tools, required=required, strict=True, parallel=parallel)
                made = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
            except Exception:  # a schema the converter cannot take: any object arguments
                schema = generic_schema(tools, required=required, strict=False, parallel=parallel)
                made = LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        return self._keep(key, made)

    def for_schema(self, schema: dict[str, Any]) -> LlamaGrammar:
        """A llama.cpp grammar that holds the answer to JSON of `schema` (a turn's
        `answer_schema`, such as a goal check's verdict)."""
        key = ("!schema", json.dumps(schema, sort_keys=True))
        made = self._made.get(key)
        if made is None:
            from llama_cpp.llama_grammar import LlamaGrammar

            made = LlamaGrammar.from_json_schema(key[1], verbose=False)
        return self._keep(key, made)
