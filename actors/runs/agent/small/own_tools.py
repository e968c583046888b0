"""The run's own tools a small model is offered (the helpers, a phase's own), held to
shapes it can fill: a todo list of a few steps, a plan that is not empty."""

from __future__ import annotations

import re

import attrs

from actors.model.backends import worked_examples
from actors.model.turns import ToolSpec
from actors.record import cards
from actors.runs.agent.run_tools import goals, helpers, plans
from actors.runs.agent.run_tools import todos_and_questions as todos


def small_specs(specs: tuple[ToolSpec, ...], *, planning: bool, helper_asked: bool = True) -> tuple[ToolSpec, ...]:
    """The run's own tools a small model is offered: the helpers where the request asks
    for one (`helper_asked`: a way of doing the work a person asks for by name; not
    asked, SmolLM2 sent a helper the words of its own task in place of an edit that was
    refused, and answered with them) and a phase's own (the goal's update; while
    planning the todo list, questions and the plan's exit), not the todo list, questions
    or plan mode otherwise."""
    kept = {goals.UPDATE_GOAL} | ({helpers.TASK, helpers.SEND} if helper_asked else set())
    if planning:
        kept |= {cards.EXIT_PLAN} | {s.name for s in specs if s.name not in {plans.ENTER}}
    # The task without `background`: get_task_output, wait_tasks and kill_task are not
    # offered to a small model (not measured to help it), so a background helper would be lost to it.
    small = {helpers.TASK: helpers.TASK_SPEC, todos.TODO_WRITE: TODO_SPEC, cards.EXIT_PLAN: EXIT_PLAN_SPEC}
    return tuple(small.get(s.name, s) for s in specs if s.name in kept)


def planning_tool(has_list: bool) -> str:
    """The tool a small model's planning round calls: the todo list until it has a step,
    then the plan (exit_plan_mode). Free to pick, SmolLM2 planned with searches of its own
    words, commands and writes (refused while planning) round after round, and seldom
    reached a plan: tests/test_plan_e2e.py's tries ran to their call bound."""
    return cards.EXIT_PLAN if has_list else todos.TODO_WRITE


# The todo list a small model writes has a step, and a few: given an empty list to
# write, SmolLM2 wrote `{"todos": []}` (refused: the list is empty already) as the first
# call of a plan; given fifty, it wrote fifty steps of one phrase, forty seconds of a
# plan's minute.
SMALL_TODOS = 8
TODO_SPEC = attrs.evolve(todos.TODO_SPEC, parameters={**todos.TODO_SPEC.parameters, "properties": {
    "todos": {**todos.TODO_SPEC.parameters["properties"]["todos"], "minItems": 1, "maxItems": SMALL_TODOS}}})
# Its plan is in the call (it writes no plan file: leader.Leader.plans_by_reading), so
# `plan` is required and not empty.
EXIT_PLAN_SPEC = attrs.evolve(plans.EXIT_SPEC, parameters={**plans.EXIT_SPEC.parameters, "required": ["plan"],
                              "properties": {"plan": {**plans.EXIT_SPEC.parameters["properties"]["plan"],
                                                      "minLength": 1}}})


# The task tool named as such ("use the task tool").
_TASK_TOOL = re.compile(r"\b(?:task|helpers?)\s+tools?\b", re.IGNORECASE)


def asks_helper(asked: str) -> bool:
    """Whether the request `asked` asks for a helper: by its form (worked_examples'
    request_kind) or by the tool's name."""
    return worked_examples.request_kind(asked) == "helper" or _TASK_TOOL.search(asked) is not None
