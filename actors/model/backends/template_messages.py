"""What a chat template is given: a turn's messages in the shapes templates expect.

The engine's messages are OpenAI chat messages. A GGUF's Jinja template wants them
a little differently: content as text (this model sees no images), a call's
arguments as an object (templates write them with `tojson`), call ids Mistral's
templates accept, and, for a template with no tool syntax (the generic format), the
tools described in the system message and earlier calls written as the JSON the
model answers with. Pure functions; no llama.cpp.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from actors.model.backends.worked_examples import example_messages
from actors.model.turns import ORIGIN, ToolSpec

MISTRAL_ID_CHARS = 9
MISTRAL_ID = re.compile(r"[A-Za-z0-9]{9}")
IMAGE_LEFT_OUT = "[An image was here; this model cannot see images.]"

GENERIC_TOOLS_INTRO = (
    "You can call tools. Answer with exactly one JSON object: "
    '{"tool_calls": [{"name": "<tool name>", "arguments": {...}}]} to call one or more tools, '
    'or {"response": "<your answer>"} to answer the person. The tools:'
)


def template_messages(
    messages: tuple[dict[str, Any], ...], tools: tuple[ToolSpec, ...], tool_format: str,
    tools_chars: int | None = None, examples: bool = False,
) -> list[dict[str, Any]]:
    """The messages as the chat template is given them (see `ChatTemplate.render`).
    `tools_chars`: past this length the generic format's tools are described tersely.
    `examples`: the generic format's worked examples follow the system message
    (actors/model/backends/worked_examples.py)."""
    if tools and tool_format == "generic":
        return _with_generic_tools(messages, tools, tools_chars, examples)
    return [_plain(m, tool_format) for m in messages]


def object_args(raw: object) -> dict[str, Any] | None:
    """A call's arguments as an object, or None when they are not a JSON object."""
    if isinstance(raw, dict):
        return raw
    try:
        value = json.loads(raw) if isinstance(raw, str) and raw.strip() else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def template_call_id(call_id: str, tool_format: str) -> str:
    """The id a template is given for a call. Mistral's templates refuse any id that is
    not 9 letters or digits, so another id is mapped to one (the same one wherever it
    appears, so a result still names its call)."""
    if tool_format != "mistral" or MISTRAL_ID.fullmatch(call_id):
        return call_id
    return hashlib.sha256(call_id.encode("utf-8")).hexdigest()[:MISTRAL_ID_CHARS]


def _text_content(content: object) -> str:
    """A message's content as text. Content parts (a message sent with images on a
    provider route, then moved to this model) keep their text; an image becomes a
    line saying it was left out, as this model has no vision projector."""
    if not isinstance(content, list):
        return content if isinstance(content, str) else ""  # None: no content
    parts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text") or ""))
        elif isinstance(part, dict):
            parts.append(IMAGE_LEFT_OUT)
    return "\n".join(p for p in parts if p)


def _plain(msg: dict[str, Any], tool_format: str = "") -> dict[str, Any]:
    out = {"role": msg["role"], "content": _text_content(msg.get("content"))}
    if msg.get("tool_calls"):
        # Templates write the arguments with `tojson`: they are given the object (as
        # llama.cpp's server does), `{}` when the model's were not one.
        out["tool_calls"] = [
            {
                **c,
                "id": template_call_id(str(c.get("id") or ""), tool_format),
                "function": {**c["function"], "arguments": object_args(c["function"].get("arguments")) or {}},
            }
            for c in msg["tool_calls"]
        ]
    if msg.get("tool_call_id") or (tool_format == "mistral" and msg["role"] == "tool"):
        out["tool_call_id"] = template_call_id(str(msg.get("tool_call_id") or ""), tool_format)
    if msg.get(ORIGIN):  # a notice's or a summary's, for the shaping (template_shapes.py)
        out[ORIGIN] = msg[ORIGIN]
    return out


def generic_tools_text(tools: tuple[ToolSpec, ...], limit: int | None = None) -> str:
    """The tools as the system message describes them in the generic format: each
    with its description and its arguments' JSON schema; past `limit` characters
    (a small context, where the whole listing would crowd out the conversation) each
    as one line: its name, its arguments and their types, the description's first
    sentence. The grammar holds the model's calls to the whole schema either way."""
    lines = [GENERIC_TOOLS_INTRO]
    for t in tools:
        schema = json.dumps(t.parameters, separators=(",", ":"))
        lines.append(f"- {t.name}: {t.description} Arguments (JSON schema): {schema}")
    described = "\n".join(lines)
    if limit is None or len(described) <= limit:
        return described
    terse = [GENERIC_TOOLS_INTRO]
    for t in tools:
        terse.append(f"- {t.name}({_arguments_line(t.parameters)}): {_first_sentence(t.description)}")
    return "\n".join(terse)


def _first_sentence(text: str) -> str:
    match = re.match(r"(.+?[.!?])(\s|$)", text.strip(), re.S)
    return (match.group(1) if match else text.strip()).replace("\n", " ")


def _arguments_line(schema: dict[str, Any]) -> str:
    """`path: string, limit?: integer, mode: "a"|"b"`: optional ones marked `?`."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return ""
    required = set(schema.get("required") or ())
    parts = []
    for name, prop in props.items():
        prop = prop if isinstance(prop, dict) else {}
        if isinstance(prop.get("enum"), list):
            kind = "|".join(json.dumps(v) for v in prop["enum"])
        else:
            given = prop.get("type")
            kind = given if isinstance(given, str) else "any"
        parts.append(f"{name}{'' if name in required else '?'}: {kind}")
    return ", ".join(parts)


def _with_generic_tools(
    messages: tuple[dict[str, Any], ...], tools: tuple[ToolSpec, ...], tools_chars: int | None = None,
    examples: bool = False,
) -> list[dict[str, Any]]:
    """The messages for a template with no tool syntax: the tools described in the
    system message, earlier calls written as the JSON the model answers with, and
    results as tool messages (user text where the template has no tool role)."""
    described = generic_tools_text(tools, tools_chars)
    out: list[dict[str, Any]] = []
    for m in messages:
        role = m["role"]
        if role == "system" and not any(o["role"] == "system" for o in out):
            out.append({"role": "system", "content": (m.get("content") or "") + "\n\n" + described})
        elif role == "assistant" and m.get("written"):
            out.append({"role": "assistant", "content": m.get("content") or ""})
        elif role == "assistant" and m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                try:
                    args = json.loads(c["function"]["arguments"] or "{}")
                except ValueError:
                    args = {}
                calls.append({"name": c["function"]["name"], "arguments": args})
            out.append({"role": "assistant", "content": json.dumps({"tool_calls": calls}, ensure_ascii=False)})
        elif role == "assistant":
            reply = json.dumps({"response": m.get("content") or ""}, ensure_ascii=False)
            out.append({"role": "assistant", "content": reply})
        elif role == "tool":
            out.append({"role": "tool", "content": m.get("content") or ""})
        else:
            out.append(_plain(m))
    if not any(o["role"] == "system" for o in out):
        out.insert(0, {"role": "system", "content": described})
    if examples:
        # Ordered by the conversation's first request, not its latest: the examples stay
        # the same for its whole life, so the prompt's cache holds from message to message.
        asked = next((str(m.get("content") or "") for m in out if m["role"] == "user"), "")
        out[1:1] = example_messages({t.name for t in tools}, asked)
    return out
