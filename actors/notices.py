"""Every text the person or the model reads about why something did not happen.

One place, so the built-in run and the runs of other agents say the same thing the same
way, and a test can name the text it expects.

Two readers, two texts. A notice the model reads (`Item.for_model`) and the result of a
call that did not run are written for the model: they tell it what to do next, name its
tools and their arguments. The person reads their own words beside them
(`Item.person_text`): `for_person` gives them for any text below, `card_end` also says
who or what ended a card that did not run (`Item.ended_by`). tests/test_notice_texts.py
walks every text here and checks that the person's names no tool, no argument and
gives the model no instruction.
"""

from __future__ import annotations

import re
from typing import Literal

# ---- notices: items of kind `notice` in a conversation ----

# A stopped run's line carries Resume beside it (the web UI's run-end line): the text
# says what happened, not what to do.
STOPPED = "You stopped the run here."
SHUTDOWN = "The daemon shut down during this run, so it stopped here."
RESTARTED = "The daemon stopped while this conversation was running; the run ended there."
INTERNAL = (
    "Something went wrong inside the daemon and this run stopped; the log has the details. "
    "Send the message again to retry."
)
ROUNDS_OF = (
    "The agent used its {n} rounds for this message and stopped. "
    "Send another message to let it go on."
)
PLAN_ROUNDS_OF = (
    "The agent planned for {n} rounds without showing a plan or asking a question, and stopped. "
    "Tell it what to plan, or switch plan mode off, and send again."
)
REPEATS = (
    "The agent made the same call three times in a row and got nowhere (it failed the same way, "
    "or it had been made already with nothing changed since), so the run stopped. "
    "Tell the agent what to do differently, or change the mode, and send again."
)
FAILING = (
    "The agent's last {n} calls all failed or found nothing, so the run stopped: the model could not find a way "
    "to do this. Rephrase the request with its first step in plain words, or load a larger model on the models page."
)
SHORTENED = (
    "The context ran short, so older tool results, call arguments or messages are shortened for the model "
    "(you still see them whole)."
)
CONTEXT_FULL = (
    "This conversation no longer fits the model's context, even with every tool result, call and message shortened. "
    "Start a new conversation, or load the model with a larger --ctx-size."
)
PROVIDER_GONE = (
    "The provider of this conversation's route ({route}) is not saved any more. "
    "Pick another model for the conversation, then send the message again."
)
MODEL_FAILED = "The model could not answer: {why}. Send the message again to retry."
SAVE_FAILED = (
    "The daemon could not save this conversation: {why}. It keeps everything in memory and saves it "
    "as soon as it can; free some space on the disk of the data folder."
)
SAVED_AGAIN = "The conversation is saved again; nothing was lost."
CHAT_ONLY_NO_WORKSPACE = "This daemon runs as plain chat (--chat-only): a conversation has no workspace."

# A budget reached (actors/runs/agent/meter.py); `whose`: BUDGET_OF's, `to_go_on`: BUDGET_NEXT's.
BUDGET_TOKENS = (
    "Stopped: {whose} budget of {limit:,} tokens is used up ({spent:,} tokens so far). {to_go_on}"
)
BUDGET_COST = (
    "Stopped: {whose} budget of {limit} is used up ({spent} so far, at the provider's prices). {to_go_on}"
)
BUDGET_NO_PRICES = (
    "Stopped before asking the model: {whose} budget is a cost, but the provider {provider} has no prices, so "
    "what it costs cannot be counted. Enter its prices per million tokens on the Providers page, or remove the "
    "cost budget. {to_go_on}"
)
BUDGET_OF = {"conversation": "this conversation's", "task": "this task run's", "message": "this message's"}
BUDGET_NEXT = {
    "conversation": "Raise or remove the budget in the conversation's header, then Resume.",
    "task": "Raise or remove the budget in the conversation's header, then Resume; change the task's budget "
            "for its next runs.",
    "message": "Send another message, or Resume, to go on without this limit.",
}

# Another agent's run (actors/runs/acp.py).
AGENT_NO_WORKSPACE = (
    "Another agent works in a folder, and this conversation has none any more. "
    "Start a new conversation with a workspace."
)
AGENT_UNKNOWN = "The agent {agent!r} is not offered by this daemon; start a new conversation."
AGENT_REFUSAL = "The agent refused to go on with this message."
AGENT_LIMIT = "The agent stopped at its own limit for one message. Send another message to let it go on."


def refused_unattended(count: int) -> str:
    """The notice at the end of an unattended run that refused `count` changes."""
    what = "1 change was" if count == 1 else f"{count} changes were"
    return (
        f"Nobody was at the screen during this scheduled run, so {what} refused. "
        "Read the refused calls above, then run them yourself or give the task a mode that allows them."
    )


# ---- results: what a card that did not run says (the model reads it too) ----

DENIED_READ_ONLY = (
    "Not done: this conversation is read-only, so changes are refused. Say what you would change instead."
)
READ_LEADS_OUT = (
    "Not done: this command only reads, but it would read outside the workspace: {why}. Here a read outside the "
    "workspace is refused as a change would be (reads inside it run). Read inside the workspace only: name "
    "paths inside it, or leave out the option that follows links."
)
ARGUMENTS_NOT_JSON = "The call was not run: {why}. Write the call again with a JSON object of its parameters."
DENIED_UNATTENDED = (
    "Not done: this is a scheduled run with nobody at the screen to approve changes, so the call was refused. "
    "Do not try it again; say in your answer what you would have changed instead."
)
DENIED_OUTSIDE_READ_ONLY = (
    "Not done: this conversation is read-only, so no command runs outside the sandbox. "
    "Say what the command would need instead."
)
DENIED_OUTSIDE_UNATTENDED = (
    "Not done: a command outside the sandbox needs the person's yes, and nobody is at the screen during this "
    "scheduled run. Do not try it again; say in your answer what it would have done."
)
DENIED_BY_PERSON = "The person denied this call; it was not run. Ask them what to do instead."
DENIED_BY_PERSON_SAYING = "The person denied this call: {why}\nIt was not run. Go on as they said."
DENIED_WAITING_STOPPED = "Stopped while waiting for approval; it was not run."
DENIED_NOT_REACHED = "Stopped before this call ran; it was not run."
DENIED_NOT_REACHED_REPEATS = "Not run: the run stopped, as the agent made the same call three times and got nowhere."
DENIED_NOT_REACHED_FAILING = (
    "Not run: the run stopped, as the agent's calls before this one all failed or found nothing."
)
DENIED_PARTIAL_STOPPED = "Stopped before this call was complete; it was not run."
ERROR_RUNNING_STOPPED = "Stopped before it finished."
ERROR_NOT_REACHED_FAILED = "Not run: the run stopped on an error before this call."
NO_HELPER_WHILE_PLANNING = (
    "Not run: no helper runs while planning. Read and search yourself; helpers can work once the plan is approved."
)
SAME_CALL_IN_ANSWER = "Not run: this answer made the same call earlier; its result is above."
MADE_ALREADY = ("Not run: you made this same call already and nothing has changed since, so it would answer the "
                "same; its result is above. Use it, or do something else.")
ERROR_ANSWER_ENDED = "The answer ended before this call was complete; it was not run."
ERROR_ROUND_FAILED = "The round failed before this call was complete; it was not run."
ERROR_RESTARTED = "The daemon stopped before this call finished."
DENIED_RESTARTED = "The daemon stopped while this call waited for approval; it was not run."
NOT_RUN_IN_HISTORY = "This call was not run."
# A client's tool (actors/runs/agent/client_calls.py): the app that brought it carries the call out.
CLIENT_STOPPED = "Stopped before the app answered this call; whether the app carried it out is unknown."
CLIENT_RESTARTED = "The daemon stopped before the app answered this call; whether the app carried it out is unknown."
CLIENT_TIMED_OUT = (
    "The app that offers {name} did not answer within {seconds:g} s (it may be closed); the call has no result. "
    "Do not call it again unless the person says the app is back; go on without it."
)
CLIENT_FAILED = "The app could not carry out {name}: {why}"
CLIENT_BAD_ARGUMENTS = ("Not sent to the app: the arguments do not fit {name}'s parameters ({why}). "
                        "Call it again with arguments that do.")
CLIENT_TOOL_HIDDEN = ("The app's tool {name} is not offered: a tool of the daemon has taken its name since it was "
                      "given. Give the app's tool another name (PUT .../tools).")
NOBODY_TO_ANSWER = "No one is here to answer; choose yourself and say what you chose."
QUESTION_STOPPED = "Stopped before the person answered."
BLOCKED_BY_HOOK = "Not done: a hook of the person's refused this call: {why}"
COMPACTED = (
    "The conversation grew past the model's context, so {n} earlier items were summarised for it "
    "(you still see them)."
)
COMPACTED_DROPPED = (
    "The conversation grew past the model's context and no summary could be made, so {n} earlier items "
    "were left out for the model (you still see them)."
)
COMPACTED_ASKED = "As asked, {n} earlier items were summarised for the model (you still see them)."
COMPACTED_ASKED_DROPPED = (
    "As asked, {n} earlier items were left out for the model, since no summary could be made (you still see them)."
)
NOTHING_TO_COMPACT = "There is nothing before the last message to compact yet."
NO_OPEN_GOAL = "There is no open goal in this conversation; nothing to update."
GOAL_COMPLETE = "The goal is reached."
GOAL_BLOCKED = "The goal is blocked: {why}"
GOAL_STUCK = (
    "The agent answered {n} times in a row without reaching its goal, so the run stopped. Send a message, or resume."
)
LOOPED = (
    'The answer was cut: it kept repeating "{unit}" (a call it was writing was not run). '
    "Write it again, shorter, without repeating."
)
CUT_OFF = "The answer was cut off: it reached the token limit. Continue lets the model go on from where it stopped."
CONTINUE_CUT = (
    "Your last answer was cut off at the token limit. Go on from exactly where it stopped, "
    "without writing again what it already says."
)
HELPER_MESSAGE = "A message from the agent that gave you this task (send_subagent_message): {text}"
LOOPING_STUCK = (
    'The model kept repeating itself ("{unit}"; {n} answers in a row were cut), so the run stopped. '
    "Rephrase the request, or use a larger model."
)
GOAL_UNCHECKED = "The goal was checked {n} times already this message, so this completion was not checked again."
GOAL_CHECKED_COMPLETE = "Checked the goal: it is reached."
GOAL_CHECKED_GAPS = "Checked the goal: not reached yet ({gaps})."
ANSWERED_INSTEAD = "The person sent a new message instead of answering this question."
FILE_CHANGED = (
    "The file changed while this card waited, so the change shown before is not what would happen now. "
    "This is the change as it stands; approve or deny it again."
)
FILE_KEEPS_CHANGING = (
    "The file kept changing while this card waited, so nothing was written. Read the file again and retry."
)


def read_leads_out(why: str) -> str:
    """A refused command that only reads, but out of the workspace (a link it follows,
    a path through one): what it would read and why, so the model does not take its
    reads for changes."""
    return READ_LEADS_OUT.format(why=why)


def denied_by_person(why: str | None) -> str:
    """A denied card's result: what the person said with their no, when they said something."""
    said = (why or "").strip()
    return DENIED_BY_PERSON_SAYING.format(why=said) if said else DENIED_BY_PERSON


_SWITCHED = "[The person switched this conversation to "


def mode_switched(mode: str) -> str:
    """Told in the result of the first call after the person switched the mode mid-run."""
    what = {
        "ask": "changes now ask the person first",
        "read_only": "changes are now refused",
        "full": "changes now run without asking",
    }.get(mode, "")
    return f"{_SWITCHED}{mode} mode while you worked: {what}.]"

NO_SUCH_TOOL = "There is no tool named '{name}' here. The tools you can use: {names}."
WRITE_OVER_REFUSED = (
    "{path} is a file of the workspace: change it with edit_file (the line to replace and its new text), "
    "not by writing it over."
)
REMOVE_REFUSED = (
    "Not run: this command removes {path}, which the person named but did not ask to remove or move. "
    "Do what they asked and keep that file."
)
NAME_AS_TEXT_REFUSED = (
    "Not written: {name} is a file's name, not the text {path} should hold. Write the text the person asked for."
)
SPACES_ONLY_REFUSED = (
    "Not changed: this edit changes only spaces or line breaks in {path}, which the person did not ask for. "
    "Make the change they asked for in new_text."
)
VALUE_MISSING_REFUSED = (
    "Not changed: the person asked for {values} in {path}, and this edit's new_text holds none of them. "
    "Give new_text as old_text with the asked value written in."
)
ECHO_REFUSED = (
    "Not written: this text repeats what this daemon told you (\u201c{note}\u201d), not what {path} should hold. "
    "Write what the person asked for, from what the tools showed, or answer that you cannot."
)
PLACEHOLDER_REFUSED = (
    "Not run: {path} is a placeholder, not a path of this workspace.{files} Write the path as the workspace names it, "
    "from the folder the command runs in."
)
PASTED_ERROR_REFUSED = (
    "Not run: this command holds the last command's error (\u201c{words}\u201d), which is what the system said, not "
    "part of a command. Write the command alone, or answer that you cannot."
)
ODD_NAME_REFUSED = (
    "Not written: {path} holds {char}, which is not in a file's name the person gave. "
    "Write to the file the person asked for, or answer that you cannot."
)
BREAKS_FILE_REFUSED = (
    "Not changed: with this edit {path} would no longer parse (line {line}: {error}); it parses now. "
    "Give new_text as the whole of old_text with only the asked change made."
)
UNDEFINES_NAME_REFUSED = (
    "Not changed: with this edit line {line} of {path} would use {name}, which nothing in the file would define "
    "(it runs without that error now). Keep what the file defines, and change only what was asked."
)
# Told to the model only, on the first line of a result the person reads without it.
MODEL_ONLY = frozenset({"mode_switched"})

DENIED_IN_PLAN_MODE = (
    "Not done: this conversation is planning, so nothing in the workspace changes. Write the change into the "
    "plan instead, then call exit_plan_mode."
)


# ---- the person's words beside the model's ----

# Who or what ended a call that did not run (`Item.ended_by`), beside its `state`:
# `person` and `rule` said no (the card reads "denied"); `stop` is the person's stop of
# the run (it reads "stopped"); `daemon` (the daemon stopped, or would not run it) and
# `cut` (the round or the answer ended before the call was whole) read "not run".
EndedBy = Literal["person", "rule", "stop", "daemon", "cut"]

# What the person is shown of a for-model notice (other notices are theirs already).
GOAL_NUDGED = "The goal is not reached yet, so the agent was told what is still open and goes on."
SCHEMA_RETRIED = "The answer did not have the shape this task asks for ({why}), so the agent was asked once more."
ANSWER_NAMED_MISSING = (
    "The answer named {file}, which is not a file of this workspace, so the agent was sent back to look again."
)
ANSWER_CLAIMED_CHANGE = (
    "The answer said something changed, but no change was made in this run, so the agent was sent back to make it."
)
ANSWER_COPIED = (
    "The answer repeated words that are not from this conversation, so the agent was sent back to answer again."
)
ANSWER_UNFOUND = (
    "The answer named none of the files that have what was asked, so the agent was sent back to look again."
)
ANSWER_NOT_MADE = "The answer came while {file} was still not there, so the agent was sent back to make it."
ANSWER_NO_NUMBER = "The answer gave no number to a question of how many, so the agent was sent back to count."
ANSWER_WORDLESS = "The answer had no words, so the agent was sent back to answer in words."
ANSWER_PARROTED = (
    "The answer only repeated what a tool printed, and nothing was changed, so the agent was sent back to make the "
    "change."
)
ANSWER_MISQUOTED = (
    "The answer quoted a line of a file that the file does not say now, so the agent was sent back to answer from "
    "the files as they are."
)
ANSWER_IDLE = (
    "The answer came though nothing was changed and the request asked for a change, so the agent was sent back to "
    "make it."
)
CONTINUING_CUT = "The answer was cut off at the token limit; the agent goes on from where it stopped."
# A led model's answer at fault after the job's whole command did the job: what the command did is shown.
JOB_DONE = "Done: the command above did it and finished without an error."
JOB_DONE_PRINTED = "Done: the command above did it. It printed: {printed}"
ANSWER_FROM_COMMAND = (
    "The model's own words about the job did not match what was done, so the answer says what the command did."
)
ANSWER_KEPT_BEFORE_LOOP = (
    "The answer was cut where the model began to repeat itself (\"{unit}\"); what it wrote before that is shown."
)

# The model's text (a constant above, `{field}`s allowed) -> the person's, and who ended
# the card when it ends one. A text that is the person's already is left out.
_TWINS: tuple[tuple[str, str | None, EndedBy | None], ...] = (
    (DENIED_READ_ONLY, "Not done: this conversation is read-only, so changes are refused.", "rule"),
    (READ_LEADS_OUT, "Not run: this command only reads, but it would read outside the workspace ({why}); "
                     "a read outside it is refused as a change is.", "rule"),
    (ARGUMENTS_NOT_JSON, "Not run: the call was not written whole ({why}).", None),
    (DENIED_UNATTENDED, "Not done: nobody was at the screen during this scheduled run to approve the change.",
     "rule"),
    (DENIED_OUTSIDE_READ_ONLY, "Not run: this conversation is read-only, so no command runs outside the sandbox.",
     "rule"),
    (DENIED_OUTSIDE_UNATTENDED, "Not run: a command outside the sandbox needs your yes, and nobody was at the "
                                "screen during this scheduled run.", "rule"),
    (DENIED_IN_PLAN_MODE, "Not done: this conversation is planning, so nothing in the workspace changes; the "
                          "change goes into the plan.", "rule"),
    (BLOCKED_BY_HOOK, "Not done: one of your hooks refused this call: {why}", "rule"),
    (DENIED_BY_PERSON_SAYING, "You denied this call, saying: {why}", "person"),
    (DENIED_BY_PERSON, "You denied this call; it was not run.", "person"),
    (ANSWERED_INSTEAD, "You sent a new message instead of answering this question.", "person"),
    (DENIED_WAITING_STOPPED, "Stopped while it waited for your approval; it was not run.", "stop"),
    (QUESTION_STOPPED, "Stopped before you answered.", "stop"),
    (DENIED_NOT_REACHED, None, "stop"),
    (DENIED_PARTIAL_STOPPED, None, "stop"),
    (ERROR_RUNNING_STOPPED, None, "stop"),
    (DENIED_NOT_REACHED_REPEATS, None, "daemon"),
    (DENIED_NOT_REACHED_FAILING, None, "daemon"),
    (ERROR_NOT_REACHED_FAILED, None, "daemon"),
    (DENIED_RESTARTED, None, "daemon"),
    (ERROR_RESTARTED, None, "daemon"),
    (NO_HELPER_WHILE_PLANNING, "Not run: no helper runs while the agent plans.", "daemon"),
    (SAME_CALL_IN_ANSWER, "Not run: the same call was made earlier in this answer; its result is above.", "daemon"),
    (MADE_ALREADY, "Not run: the agent made this same call already and nothing changed since; its result is "
                   "above.", "daemon"),
    (ERROR_ANSWER_ENDED, None, "cut"),
    (ERROR_ROUND_FAILED, None, "cut"),
    (NO_SUCH_TOOL, "Not run: the agent called a tool this conversation does not have ({name}).", "daemon"),
    (WRITE_OVER_REFUSED, "Not run: {path} is a file of the workspace, and here the agent may change it only by "
                         "editing lines, not by writing it over.", "rule"),
    (REMOVE_REFUSED, "Not run: the command would have removed {path}, which you named but did not ask to remove.",
     "rule"),
    (NAME_AS_TEXT_REFUSED, "Not run: the agent was writing only a file's name ({name}) into {path}, not what you "
                           "asked for.", "rule"),
    (SPACES_ONLY_REFUSED, "Not run: the edit changed only spaces or line breaks in {path}, which you did not ask "
                          "for.", "rule"),
    (VALUE_MISSING_REFUSED, "Not run: the edit of {path} held none of what you asked for ({values}).", "rule"),
    (ECHO_REFUSED, "Not run: the agent was writing the daemon's own note to it into {path}, not what you asked "
                   "for.", "rule"),
    (ODD_NAME_REFUSED, "Not run: the agent was making a file named {path}, which you did not ask for.", "rule"),
    (PLACEHOLDER_REFUSED, "Not run: the command held {path}, a placeholder, not a path of this workspace.{files}",
     "rule"),
    (PASTED_ERROR_REFUSED, "Not run: the command held the last command's error (\u201c{words}\u201d), not a "
                           "command.", "rule"),
    (BREAKS_FILE_REFUSED, "Not run: the edit would have broken {path} (line {line}: {error}), which parses now.",
     "rule"),
    (UNDEFINES_NAME_REFUSED, "Not run: the edit would have left {path} using {name} (line {line}), which nothing "
                             "in it would define.", "rule"),
    (NOBODY_TO_ANSWER, "Nobody was at the screen to answer, so the agent chose itself.", None),
    # A file that kept changing may carry the tool's own words after it (the model's).
    (FILE_KEEPS_CHANGING + "{more}", "The file kept changing while this card waited, so nothing was written.",
     None),
    (LOOPED, 'The answer was cut: it kept repeating "{unit}" (a call it was writing was not run). '
             "The agent was asked to write it again, shorter.", None),
    (CONTINUE_CUT, CONTINUING_CUT, None),
    (HELPER_MESSAGE, "The agent sent this helper a message: {text}", None),
    (CLIENT_TIMED_OUT, "The app that offers {name} did not answer within {seconds} s (it may be closed); the "
                       "call has no result.", None),
    (CLIENT_BAD_ARGUMENTS, "Not sent to the app: the arguments did not fit {name}'s parameters ({why}).", None),
)


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"\{(\w+)(?::[^}]*)?\}", template)  # a field with its format spec ({seconds:g}) too
    out = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.*?)" for i, p in enumerate(parts))
    return re.compile(out + r"\Z", re.DOTALL)


_EXACT = {model: (person, by) for model, person, by in _TWINS if "{" not in model}
_FORMATS = tuple((_pattern(model), person, by) for model, person, by in _TWINS if "{" in model)


def _twin(text: str) -> tuple[str | None, EndedBy | None] | None:
    if text.startswith(_SWITCHED) and "\n" in text:
        text = text.split("\n", 1)[1]  # a result with the mode's note first (mode_switched)
    found = _EXACT.get(text)
    if found is not None:
        return found
    for pattern, person, by in _FORMATS:
        m = pattern.match(text)
        if m is not None:
            return (person.format(**m.groupdict()) if person is not None else None), by
    return None


def for_person(text: str) -> str:
    """What the person reads for `text`, a text of this module: its twin written for
    them, or the text itself when it is theirs already (or not one of these)."""
    found = _twin(text)
    return found[0] if found is not None and found[0] is not None else text


def card_end(result: str | None, *, daemon_stopping: bool = False) -> tuple[EndedBy | None, str | None]:
    """For a card that did not run, ended with `result`: who or what ended it and the
    person's words when the result is not theirs ((None, None) for a call that ran and
    failed). A stop while the daemon shuts down is the daemon's, not the person's."""
    found = _twin(result) if result else None
    if found is None:
        return None, None
    person, by = found
    if by == "stop" and daemon_stopping:
        by = "daemon"
    return by, person
