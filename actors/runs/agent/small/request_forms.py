"""The forms of a person's request a small model's run is led by: a question (of where
something is, or which file has it), a request to take something out."""

from __future__ import annotations

import re

from actors.model.backends import worked_examples

# After the request's polite start (worked_examples.POLITE): where-questions, and which file.
_WHERE_FIRST = re.compile(
    r"\s*(?:show\s+me\s+|find\s+(?:out\s+)?)*(?:(?:in|from)\s+)?(?:where(?:'s|\s+(?:is|are|was|does|do|did|can|"
    r"should))?\b|(?:which|what)\s+(?:files?|modules?|scripts?|folders?)\b)", re.IGNORECASE)
_WHERE = re.compile(r"\bwhere\b|\bwhich\s+(?:files?|modules?|scripts?|folders?|paths?)\b", re.IGNORECASE)


def where_question(asked: str) -> bool:
    """Whether a request is a question of where something is, or which file has it (it
    begins so: "where's x defined"; asked so, SmolLM2's nearest example was an edit's)."""
    return _WHERE_FIRST.match(worked_examples.POLITE.sub("", asked)) is not None


def asks_where(asked: str) -> bool:
    """Whether a request asks where something is, or which file has it."""
    return _WHERE.search(asked) is not None


# Verbs of a request that takes something out of a file.
_REMOVES = re.compile(
    r"^\s*(?:(?:can|could|would|will) you\s+|please\s+)*(?:remove|delete|drop|strip|erase|ditch|scrap)\b",
    re.IGNORECASE)
# Words later in a request that ask to take something out ("… clear them out").
_TAKES_OUT = re.compile(
    r"\b(?:remove|delete|drop|strip|erase|ditch|scrap|get\s+rid\s+of|get\s+shot\s+of|do\s+away\s+with|"
    r"(?:clear|clean|take|cut|rip|pull|tear|throw)\s+(?:\w+\s+){0,4}?out)\b", re.IGNORECASE)
# Verbs of a request that asks for a change other than taking out.
_CHANGE_VERBS = (r"(?:add|rename|change|replace|set|update|convert|move|switch|make|write|create|put|insert|fix|turn|"
                 r"swap|sort|split|merge|append|use|read|keep)")
_OTHER_CHANGE = re.compile(rf"\b{_CHANGE_VERBS}\b", re.IGNORECASE)
# Such a verb said as what will not happen ("we're never going to switch it on, so rip it
# out"; "don't add anything"): no other change.
_NOT_DONE = re.compile(rf"\b(?:never|not|no\s+longer|\w+n['\u2019]t)\s+(?:\w+\s+){{0,3}}?{_CHANGE_VERBS}\b",
                       re.IGNORECASE)


def removes(asked: str) -> bool:
    """Whether the request asks to take something out and nothing else: it begins so
    (`remove the line …`), or says so later in a request that asks no other change
    ("the old debug prints in x.py can go, clear them out")."""
    return _REMOVES.match(asked) is not None \
        or _TAKES_OUT.search(asked) is not None and _OTHER_CHANGE.search(_NOT_DONE.sub(" ", asked)) is None \
        and not asks_question(asked)


# A request that begins as a question does (its question mark may be left out).
_QUESTION_START = re.compile(r"\s*(?:what|what'?s|which|where|who|whose|why|when|how|is|are|does|do|did|was|were)\b",
                             re.IGNORECASE)


# A request for a change put politely, as a question ("could you rename them?", "can u
# please drop the old ones?"): a request, its question mark aside.
_POLITE_CHANGE = re.compile(
    r"^\s*(?:(?:hi|hey|hello|ok|okay|so)\b[\s,!.]*)?(?:(?:can|could|would|will)\s+(?:you|u)\s+|please\s+)"
    rf"(?:(?:please|just|also|maybe)\s+)*(?:{_CHANGE_VERBS}|remove|delete|drop|strip|erase|ditch|scrap|get\s+rid|"
    r"clear|clean|take|cut|tidy|rewrite|edit|tweak|bump|pad|split|join|group|format|wrap|comment|uncomment)\b",
    re.IGNORECASE)


def question_mark(asked: str) -> bool:
    """Whether the request ends with a question mark and is no request for a change put
    as a question ("can you rename them?" asks for the change: its answer is judged as
    one)."""
    return asked.rstrip().endswith(("?", "\uff1f")) and not polite_change(asked)


def polite_change(asked: str) -> bool:
    """Whether the request is a change asked for politely: from its start ("could you
    rename them?"), or in its last sentence after the problem is told ("Zoe's name comes
    out wrong. can you sort it out?")."""
    return any(_POLITE_CHANGE.match(part) is not None for part in (asked, worked_examples.last_sentence(asked)))


def asks_question(asked: str) -> bool:
    """Whether the request `asked` is a question: it ends with a question mark, or
    begins as a question does; not a request for a change put politely as one."""
    if polite_change(asked):
        return False
    return question_mark(asked) or _QUESTION_START.match(asked) is not None
