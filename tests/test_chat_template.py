"""Rendering a GGUF's chat template (actors/model/backends/chat_template.py): the thinking
switch, and whether the prompt leaves the reasoning block open. No model is loaded."""

from __future__ import annotations

import pytest

from actors.model.backends.chat_template import THINKING_SWITCH, ChatTemplate, reads_variable

MESSAGES = ({"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"})

_CHATML = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
)
# The end of Qwen3's template: thinking is on unless the switch says false, and then
# the prompt writes an empty reasoning block for the model.
QWEN3_LIKE = _CHATML + (
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}"
)
# A template that opens the reasoning block itself, unless the switch is off.
OPENS_THINK = _CHATML + (
    "{%- set enable_thinking = enable_thinking if enable_thinking is defined else true %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking %}{{- '<think>\\n' }}{%- endif %}{%- endif %}"
)
NO_SWITCH = _CHATML + "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"


def template(source: str) -> ChatTemplate:
    return ChatTemplate(source, eos="<|im_end|>", bos="")


def test_a_template_with_the_switch_renders_think_on_and_off_differently() -> None:
    t = template(QWEN3_LIKE)
    assert t.has_thinking_switch
    on, off, default = (t.render(MESSAGES, think=think) for think in (True, False, None))
    assert on.prompt != off.prompt
    assert off.prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert on.prompt.endswith("<|im_start|>assistant\n") and default.prompt == on.prompt
    assert not (on.thinking_open or off.thinking_open or default.thinking_open)
    assert on.stops == off.stops == ["<|im_end|>"]


def test_the_prompt_s_open_reasoning_block_follows_the_switch() -> None:
    t = template(OPENS_THINK)
    assert t.has_thinking_switch
    assert t.render(MESSAGES).thinking_open
    assert t.render(MESSAGES, think=True).thinking_open
    off = t.render(MESSAGES, think=False)
    assert not off.thinking_open and not off.prompt.rstrip().endswith("<think>")


@pytest.mark.parametrize("think", [True, False])
def test_a_template_without_the_switch_ignores_think(think: bool) -> None:
    t = template(NO_SWITCH)
    assert not t.has_thinking_switch
    assert t.render(MESSAGES, think=think) == t.render(MESSAGES)


@pytest.mark.parametrize(
    ("source", "reads"),
    [
        (QWEN3_LIKE, True),
        (OPENS_THINK, True),  # set from what it is given, so it reads it first
        ("{# enable_thinking is not read here #}{{ messages }}", False),
        ("{%- set enable_thinking = true %}{{ enable_thinking }}", False),
        ("{% generation %}{{ enable_thinking }}{% endgeneration %}", True),  # HF's tag parses
        ("{{ enable_thinking ", True),  # unparsable: judged by the name appearing
        (NO_SWITCH, False),
    ],
)
def test_reads_variable(source: str, reads: bool) -> None:
    assert reads_variable(source, THINKING_SWITCH) is reads
