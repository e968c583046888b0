"""What a small model and the person are told of an answer the run's record
contradicts (steps.find_fault finds the `Fault`): the notice the model reads, sent
back once (`told`), the person's words beside it (`fault_for_person`), and what the
person reads instead once it is still at fault (`could_not`)."""

from __future__ import annotations

import attrs

from actors import notices
from actors.runs.agent.small import quotes


@attrs.frozen
class Fault:
    """What an answer says that the run's record contradicts: `file` a file it names
    that the workspace does not have, or `claim` the words in which it claims a change
    when none ran, or `unfound` the files a search found when it names none of them,
    or `copied` words it repeats from the worked examples or a refusal, or `nofile`
    when it names no file at all though asked where something is, or `nonumber` when
    it gives no number though asked how many, or `notmade` a new file the request
    names that is still not there, or `parroted` an answer to a request for a change
    when none ran that says only what the tools printed, or `idle` any other answer to
    a request for a change when none ran that neither says why not nor asks back, or
    `misquote` a line it quotes in a search's shape that its file does not say now, or
    `wordless` an answer with no word at all (`{`, `...`)."""

    file: str | None = None
    claim: str | None = None
    unfound: tuple[str, ...] = ()
    copied: str | None = None
    nofile: bool = False
    nonumber: bool = False
    notmade: str | None = None
    parroted: str | None = None
    idle: str | None = None
    misquote: quotes.Misquote | None = None
    wordless: str | None = None


def told(fault: Fault) -> str:
    """What the model is told of its answer's `fault`, a notice it reads so it can look again."""
    if fault.misquote is not None:
        return quotes.told(fault.misquote)
    if fault.wordless is not None:
        return WORDLESS
    if fault.parroted is not None:
        return PARROTED
    if fault.idle is not None:
        return IDLE
    if fault.file is not None:
        return (f"Your answer names {fault.file}, which is not a file of this workspace. Look again with the "
                "tools (search the text, or read the file that has it), then answer from what they show.")
    if fault.copied is not None:
        return COPIED_PREFIX + f"\u201c{fault.copied}\u201d" + COPIED_SUFFIX
    if fault.unfound:
        return UNFOUND_PREFIX + ", ".join(fault.unfound) + UNFOUND_SUFFIX
    if fault.nofile:
        return NO_FILE
    if fault.nonumber:
        return NO_NUMBER
    if fault.notmade is not None:
        return NOT_MADE_PREFIX + fault.notmade + NOT_MADE_SUFFIX
    return CLAIMED_CHANGE


COPIED_PREFIX = "Your answer repeats "
COPIED_SUFFIX = (", which is not from this conversation's files. Answer the person's request in your own words, "
                 "from what the tools showed here.")
NO_FILE = ("Your answer names no file, but the person asked where it is. Search for the name (grep_search), "
           "then answer with the file that defines it.")
NOT_MADE_PREFIX = "The person asked for "
NOT_MADE_SUFFIX = (", which is not there yet. Make it with a tool (write_file writes a new file), "
                   "then answer.")
NO_NUMBER = ("Your answer gives no number, but the person asked how many. Count them in what the tools showed, "
             "then answer with the number.")
WORDLESS = "Your answer has no words. Answer the person in words: what you did, or what you found."
UNFOUND_PREFIX = "Your answer names none of the files the search found: "
UNFOUND_SUFFIX = ". Answer with the one that has what was asked, as the search showed it."


def fault_for_person(told: str) -> str:
    """The person's words beside `told`, what `answer_fault` told the model."""
    if told == CLAIMED_CHANGE:
        return notices.ANSWER_CLAIMED_CHANGE
    if told.startswith(COPIED_PREFIX):
        return notices.ANSWER_COPIED
    if told.startswith(UNFOUND_PREFIX) or told == NO_FILE:
        return notices.ANSWER_UNFOUND
    if told == NO_NUMBER:
        return notices.ANSWER_NO_NUMBER
    if told == WORDLESS:
        return notices.ANSWER_WORDLESS
    if told == PARROTED:
        return notices.ANSWER_PARROTED
    if told == IDLE:
        return notices.ANSWER_IDLE
    if told.startswith(quotes.TOLD_PREFIX):
        return notices.ANSWER_MISQUOTED
    if told.startswith(NOT_MADE_PREFIX):
        return notices.ANSWER_NOT_MADE.format(file=told.removeprefix(NOT_MADE_PREFIX).split(",", 1)[0])
    named = told.removeprefix("Your answer names ").split(", which is not a file", 1)[0]
    return notices.ANSWER_NAMED_MISSING.format(file=named)


PARROTED = ("Your answer only repeats what the tools printed, and nothing was changed yet. The person asked for a "
            "change: make it with a tool (edit_file changes lines of a file), then say what you changed.")
IDLE = ("Nothing was changed yet, and the person asked for a change. Make it with a tool (edit_file changes lines "
        "of a file), then say what you changed; if it cannot be done, say why.")
CLAIMED_CHANGE = ("Your answer says something changed, but no change was made in this run. Make the change with a "
                  "tool (edit_file changes a line of a file), then answer.")


def could_not(fault: Fault) -> str:
    """What the person reads instead of an answer still at fault once it was sent back:
    that the model could not do it, and what to try."""
    if fault.file is not None:
        return (f"The model could not do this: it named {fault.file}, which is not a file of this workspace. "
                "Try a larger model (the models page) or say exactly which file to look in.")
    if fault.copied is not None:
        return ("The model could not do this: its answer repeated words that are not from this conversation "
                f"(\u201c{fault.copied}\u201d). Try a larger model (the models page) or ask more exactly.")
    if fault.nofile:
        return ("The model could not do this: asked where something is, its answer named no file. Try a larger "
                "model (the models page) or search for the name yourself.")
    if fault.notmade is not None:
        return (f"The model could not do this: {fault.notmade} is still not there. Try a larger model "
                "(the models page) or say exactly what it should hold.")
    if fault.nonumber:
        return ("The model could not do this: asked how many, its answer gave no number. Try a larger model "
                "(the models page).")
    if fault.parroted is not None:
        return ("The model could not do this: it changed nothing, and its answer only repeated what a tool printed "
                f"(\u201c{fault.parroted}\u201d). Try a larger model (the models page) or say exactly which file "
                "to change and how.")
    if fault.idle is not None:
        return ("The model could not do this: asked for a change, it changed nothing (its answer: "
                f"\u201c{fault.idle}\u201d). Try a larger model (the models page) or say exactly which file to change "
                "and how.")
    if fault.misquote is not None:
        return quotes.could_not(fault.misquote)
    if fault.wordless is not None:
        return (f"The model could not do this: its answer had no words (\u201c{fault.wordless}\u201d). Any change it "
                "made is on its card, to check. Try a larger model (the models page) or ask more exactly.")
    if fault.unfound:
        return (f"The model could not do this: the search found {', '.join(fault.unfound)}, and its answer named "
                "none of them. Try a larger model (the models page) or say exactly which file to look in.")
    return (f"The model could not do this: it said it changed something (\u201c{fault.claim}\u201d) but no file "
            "changed. Try a larger model (the models page) or say exactly which file to change.")
