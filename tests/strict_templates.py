"""Chat templates written for the tests that behave as the strict families' do: each
is ChatML (the bundled model's own format) with one of the checks Gemma's, Mistral's
or Llama 3.1's templates make, raised with `raise_exception` in their words."""

from __future__ import annotations

CHATML = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

ALTERNATION_WORDS = "Conversation roles must alternate user/assistant/user/assistant/..."
# Gemma's check (after an optional system message), which also refuses a tool message
# where an answer or the person's turn is due.
ALTERNATES = (
    "{%- set loop_messages = messages[1:] if messages and messages[0]['role'] == 'system' else messages %}"
    "{%- for message in loop_messages %}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{- raise_exception('" + ALTERNATION_WORDS + "') }}"
    "{%- endif %}{%- endfor %}"
) + CHATML

# Gemma's and Mistral's first templates: no system role.
NO_SYSTEM = (
    "{%- for message in messages %}{%- if message['role'] == 'system' %}"
    "{{- raise_exception('System role not supported') }}"
    "{%- endif %}{%- endfor %}"
) + CHATML

# Mistral's: each call answered by its result right after it; the person's turns and
# the answers without calls alternate.
TOOL_AFTER_CALL = (
    "{%- set ns = namespace(pending=0, index=0) %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'tool' %}"
    "{%- if ns.pending == 0 %}{{- raise_exception('A tool result must follow a tool call') }}{%- endif %}"
    "{%- set ns.pending = ns.pending - 1 %}"
    "{%- else %}"
    "{%- if ns.pending > 0 %}{{- raise_exception('Every tool call must be followed by its result') }}{%- endif %}"
    "{%- if message['role'] == 'assistant' and message['tool_calls'] is defined and message['tool_calls'] %}"
    "{%- set ns.pending = message['tool_calls'] | length %}"
    "{%- elif message['role'] != 'system' %}"
    "{%- if (message['role'] == 'user') != (ns.index % 2 == 0) %}"
    "{{- raise_exception('After the optional system message, conversation roles must alternate "
    "user/assistant/user/assistant/...') }}"
    "{%- endif %}"
    "{%- set ns.index = ns.index + 1 %}"
    "{%- endif %}{%- endif %}{%- endfor %}"
) + CHATML

# A template that knows only three roles.
UNKNOWN_ROLE = (
    "{%- for message in messages %}{%- if message['role'] not in ['system', 'user', 'assistant'] %}"
    "{{- raise_exception('Unknown role: ' + message['role']) }}"
    "{%- endif %}{%- endfor %}"
) + CHATML

# Llama 3.1's: one call to an answer.
SINGLE_CALL = (
    "{%- for message in messages %}"
    "{%- if message['tool_calls'] is defined and message['tool_calls'] and message['tool_calls'] | length != 1 %}"
    "{{- raise_exception('This model only supports single tool-calls at once!') }}"
    "{%- endif %}{%- endfor %}"
) + CHATML

# All of Gemma 1's at once: alternation, no system role, no other role.
STRICTEST = (
    "{%- for message in messages %}"
    "{%- if message['role'] not in ['user', 'assistant'] %}"
    "{{- raise_exception('Only user and assistant roles are supported!') }}"
    "{%- endif %}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}"
    "{{- raise_exception('" + ALTERNATION_WORDS + "') }}"
    "{%- endif %}{%- endfor %}"
) + CHATML

BROKEN_WORDS = "This template renders nothing"
BROKEN = "{{- raise_exception('" + BROKEN_WORDS + "') }}"

STRICT = {
    "alternates": ALTERNATES,
    "no_system": NO_SYSTEM,
    "tool_after_call": TOOL_AFTER_CALL,
    "unknown_role": UNKNOWN_ROLE,
    "single_call": SINGLE_CALL,
    "strictest": STRICTEST,
}
