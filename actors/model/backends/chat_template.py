"""A GGUF's chat template: the prompt and stop strings for a turn's messages.

The template is the GGUF's own Jinja (`tokenizer.chat_template`), rendered by
llama-cpp-python's `Jinja2ChatFormatter`. With tools, a template that has a tool
syntax gets them as `tools`; a template without one (the generic format) gets them
described in the system message (actors/model/backends/template_messages.py), and the
answer is then constrained by a grammar (actors/model/backends/generic_grammar.py).

Templates differ in what they accept: the shape of history this one takes (turns of
one side merged, the system message folded in, tool results as text, ...) is found
once, when the template is read, by rendering probe histories
(actors/model/backends/template_shapes.py). A render tries, in that shape and then in
shapes with more changes: the messages with this model's own calls as it wrote them (so
the prompt matches the KV cache), then the messages as the template writes them. The
last shape is the whole history as one user turn, so any template that renders a single
user message renders every history; one that does not raises TemplateRefused with the
template's own words.

Thinking. A template with a thinking switch (Qwen3's and others read the variable
`enable_thinking`) is given the turn's `think` when it says on or off, and renders
the model's default when it says nothing; a template without one renders the same
whatever `think` says. Whether the prompt leaves the reasoning block open (some
templates write `<think>` themselves, maybe only with the switch on) is read from
each rendered prompt.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import attrs

from actors.errors import TurnFailed
from actors.model.backends.template_messages import template_messages
from actors.model.backends.template_shapes import PROBE_TOOL, Shape, escalations, find_shape, shape_messages
from actors.model.toolcalls import THINK_OPEN, detect_format
from actors.model.turns import ToolSpec

if TYPE_CHECKING:  # importing llama_cpp loads llama.cpp, which waits until a model is loaded
    from llama_cpp import llama_types
    from llama_cpp.llama_chat_format import ChatFormatterResponse

# The variable of the thinking switch, as Qwen3's templates (and others after them) name it.
THINKING_SWITCH = "enable_thinking"


class TemplateRefused(TurnFailed):
    """No shape of a history renders in the model's chat template."""


@attrs.frozen
class Rendered:
    prompt: str
    stops: list[str]
    thinking_open: bool  # the prompt ends inside an opened reasoning block


class ChatTemplate:
    """See the module docstring."""

    def __init__(self, source: str, *, eos: str, bos: str, model: str = "The model") -> None:
        """Raises jinja2.TemplateSyntaxError for a template that does not parse.
        `model`: the model's name, as an error names it."""
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self._formatter = Jinja2ChatFormatter(template=source, eos_token=eos, bos_token=bos)
        self._eos = eos
        self.model = model
        self.tool_format = detect_format(source)
        self.has_thinking_switch = reads_variable(source, THINKING_SWITCH)
        probe_tools = None if self.tool_format == "generic" else [PROBE_TOOL]
        self.shape: Shape = find_shape(lambda msgs: self._format(msgs, probe_tools, None))
        self._used: set[str] = set(self.shape.names())

    def shapes_needed(self) -> list[str]:
        """The changes histories have needed in this template: the ones its probes
        found, then any a history needed beyond them (template_shapes.Shape's names)."""
        return Shape().with_(**dict.fromkeys(self._used, True)).names()

    def render(
        self,
        messages: tuple[dict[str, Any], ...],
        tools: tuple[ToolSpec, ...] = (),
        *,
        think: bool | None = None,
        as_written: tuple[dict[str, Any], ...] | None = None,
        tools_chars: int | None = None,
        examples: bool = False,
    ) -> Rendered:
        """The prompt and stop strings for `messages` (tried first as `as_written`, the
        same messages with this model's recent calls as it wrote them, when given),
        with the thinking switch set to `think` where the template has one and `think`
        is not None, and the generic format's tools in one line each past `tools_chars`.
        Raises TemplateRefused, with the template's own words, when no shape of the
        messages renders (only where a single user message does not either)."""
        generic = bool(tools) and self.tool_format == "generic"
        given_tools = [t.to_openai() for t in tools] if tools and not generic else None
        switch = think if self.has_thinking_switch else None
        attempts: list[list[dict[str, Any]]] = []
        if as_written is not None:
            attempts.append(template_messages(as_written, tools, self.tool_format, tools_chars, examples))
        attempts.append(template_messages(messages, tools, self.tool_format, tools_chars, examples))
        refusal: Exception | None = None
        for shape in escalations(self.shape):
            for msgs in attempts:
                try:
                    out = self._format(shape_messages(msgs, shape), given_tools, switch)
                except Exception as exc:  # ValueError from raise_exception, jinja2's errors, TypeError
                    refusal = exc  # the last shape's: why even the simplest fails
                    continue
                self._used.update(shape.names())
                return self._rendered(out)
        raise TemplateRefused(
            f"{self.model}'s chat template refuses every form of this conversation, even one message: "
            f"\"{refusal}\". Give the model a chat template that works on the models page "
            "(or PUT /api/model with chat_template)."
        )

    def _rendered(self, out: ChatFormatterResponse) -> Rendered:
        stops = list(out.stop) if isinstance(out.stop, list) else ([out.stop] if out.stop else [])
        if self._eos and self._eos not in stops:
            stops.append(self._eos)
        return Rendered(out.prompt, stops, out.prompt.rstrip().endswith(THINK_OPEN))

    def _format(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, think: bool | None
    ) -> ChatFormatterResponse:
        # llama-cpp-python types messages and tools as its TypedDicts; ours are the
        # same JSON shapes held as plain dicts (and a template reads keys it knows).
        given = cast("list[llama_types.ChatCompletionRequestMessage]", messages)
        given_tools = cast("list[llama_types.ChatCompletionTool] | None", tools)
        if think is None:  # not given at all: `enable_thinking is defined` stays false
            return self._formatter(messages=given, tools=given_tools)
        return self._formatter(messages=given, tools=given_tools, enable_thinking=think)


def reads_variable(source: str, name: str) -> bool:
    """Whether the Jinja template `source` reads the variable `name` from what it is
    given (a comment naming it, or a variable it sets itself first, does not count).
    A template this cannot parse is judged by whether the name appears in it."""
    import jinja2
    import jinja2.ext
    import jinja2.meta
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    try:
        # The extensions the formatter's own environment has, so the same templates parse.
        env = jinja2.Environment(extensions=[Jinja2ChatFormatter.IgnoreGenerationTags, jinja2.ext.loopcontrols])
        return name in jinja2.meta.find_undeclared_variables(env.parse(source))
    except (jinja2.TemplateSyntaxError, AttributeError):  # AttributeError: an older formatter
        return name in source
