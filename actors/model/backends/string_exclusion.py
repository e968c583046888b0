"""Strings that are not some values, and hold none of some words: a plain string's
schema narrowed (`string_without`, `with_banned`), held in the schema as JSON Schema says
it, so a validator reads it as the grammar does: {"type": "string", "not": {"anyOf":
[{"enum": [values]}, {"pattern": "(?i)(?:word|word)"}]}}. generic_grammar.schema_to_gbnf
writes it as an automaton (`exclusion_automaton`, `exclusion_rules`): a trie of the
values beside an Aho-Corasick automaton of the words, one rule a state."""

from __future__ import annotations

import re
from typing import Any

# A string a grammar state can follow character by character: no quote, backslash or
# control character, which JSON writes as escapes.
PLAIN_TEXT = re.compile(r'[^"\\\x00-\x1f\x7f]*')
# A word that may be kept out of strings: letters, digits and underscores, matched
# in any case.
_BANNABLE = re.compile(r"[a-z0-9_]+")
_WORDS_PATTERN = re.compile(r"\(\?i\)\(\?:([a-z0-9_|]+)\)")
# States an exclusion may take (values of AVOIDED_CALLS calls, a few words): past it
# the schema is left as it was.
MAX_EXCLUSION_STATES = 2000
_STRING_BOUNDS = ("enum", "const", "pattern", "format", "minLength", "maxLength", "anyOf", "oneOf", "allOf", "$ref")


def string_exclusions(schema: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]] | None:
    """(values, words) a string schema's `not` rules out, ((), ()) when it has none;
    None when its `not` is not of the form `string_without` writes."""
    ruled = schema.get("not")
    if ruled is None:
        return (), ()
    branches = ruled.get("anyOf") if isinstance(ruled, dict) and len(ruled) == 1 else None
    if not isinstance(branches, list):
        return None
    values: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    for branch in branches:
        if isinstance(branch, dict) and set(branch) == {"enum"} and isinstance(branch["enum"], list) \
                and all(isinstance(v, str) and PLAIN_TEXT.fullmatch(v) for v in branch["enum"]):
            values += tuple(branch["enum"])
        elif isinstance(branch, dict) and set(branch) == {"pattern"} and isinstance(branch["pattern"], str) \
                and (m := _WORDS_PATTERN.fullmatch(branch["pattern"])):
            words += tuple(m.group(1).split("|"))
        else:
            return None
    return values, words


def plain_string(schema: Any) -> bool:
    """Whether `schema` is a string's with no bounds, pattern or choices (any `not` of
    the form `string_without` writes): one whose exclusions a grammar can say."""
    return (isinstance(schema, dict) and schema.get("type") == "string"
            and not any(k in schema for k in _STRING_BOUNDS) and string_exclusions(schema) is not None)


def string_without(schema: dict[str, Any], *, values: tuple[str, ...] = (),
                   words: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """A plain string's `schema` that no longer admits `values` (exactly) nor a string
    holding one of `words` (in any case), besides what it ruled out before. None when
    `schema` is not a plain string, a value holds what JSON escapes, a word is not
    letters, digits and underscores, or the automaton would pass MAX_EXCLUSION_STATES."""
    if not plain_string(schema):
        return None
    had = string_exclusions(schema)
    assert had is not None
    words = tuple(w.lower() for w in words)
    if not all(PLAIN_TEXT.fullmatch(v) for v in values) or not all(_BANNABLE.fullmatch(w) for w in words):
        return None
    all_values = tuple(dict.fromkeys(had[0] + values))
    all_words = tuple(dict.fromkeys(had[1] + words))
    if sum(map(len, all_values)) + sum(map(len, all_words)) > MAX_EXCLUSION_STATES // 2:
        return None
    branches: list[dict[str, Any]] = []
    if all_values:
        branches.append({"enum": list(all_values)})
    if all_words:
        branches.append({"pattern": "(?i)(?:" + "|".join(all_words) + ")"})
    out = {k: v for k, v in schema.items() if k != "not"}
    return {**out, "not": {"anyOf": branches}} if branches else out


def with_banned(schema: Any, values: tuple[str, ...]) -> Any:
    """`schema` with every plain string in it (a property's, an item's, an
    alternative's) kept from being any of `values` (whole: a string that holds one
    among other words is left free, so a person's job may need the same word)."""
    values = tuple(v for v in values if PLAIN_TEXT.fullmatch(v))  # one a grammar cannot say leaves the others banned
    if not values:
        return schema
    if isinstance(schema, list):
        return [with_banned(v, values) for v in schema]
    if not isinstance(schema, dict):
        return schema
    if plain_string(schema):
        return string_without(schema, values=values) or schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "patternProperties") and isinstance(value, dict):
            out[key] = {k: with_banned(v, values) for k, v in value.items()}
        elif key in ("items", "anyOf", "oneOf", "allOf", "additionalProperties", "prefixItems"):
            out[key] = with_banned(value, values)
        else:
            out[key] = value
    return out


# An automaton's state: whether the string may end here, its moves as (characters,
# next state), the characters it may not take (each would complete a word), and the
# state every other character (or an escape) leads to.
ExclusionState = tuple[bool, tuple[tuple[str, int], ...], str, int]


def _trie(texts: tuple[str, ...]) -> tuple[list[dict[str, int]], list[bool]]:
    """A trie of `texts`: each node's children by character (node 0 the root), and
    whether a text ends at each node."""
    children: list[dict[str, int]] = [{}]
    ends = [False]
    for text in texts:
        node = 0
        for ch in text:
            if ch not in children[node]:
                children.append({})
                ends.append(False)
                children[node][ch] = len(children) - 1
            node = children[node][ch]
        ends[node] = True
    return children, ends


def exclusion_automaton(values: tuple[str, ...], words: tuple[str, ...]) -> list[ExclusionState]:
    """The states of a string that is none of `values` and holds none of `words` (any
    case), read one character at a time; state 0 first. A state is (a node of the
    values' trie or -1 once the string has left it, a state of the words'
    Aho-Corasick automaton); a move into a word's end is no move."""
    children, ends = _trie(values)  # the values'
    goto, done = _trie(words)  # the words' automaton (lower case), failure links made into full moves below
    alphabet = sorted({ch for w in words for ch in w})
    fail = [0] * len(goto)
    move: list[dict[str, int]] = [dict() for _ in goto]
    order = [0]
    for node in order:  # breadth first: a node's failure is settled before its children's
        for ch in alphabet:
            if ch in goto[node]:
                child = goto[node][ch]
                fail[child] = move[fail[node]][ch] if node else 0
                done[child] = done[child] or done[fail[child]]
                move[node][ch] = child
                order.append(child)
            else:
                move[node][ch] = move[fail[node]][ch] if node else 0

    index: dict[tuple[int, int], int] = {}
    states: list[ExclusionState] = []
    todo: list[tuple[int, int]] = []

    def state_of(key: tuple[int, int]) -> int:
        if key not in index:
            index[key] = len(index)
            todo.append(key)
        return index[key]

    state_of((0 if values else -1, 0))
    while todo:
        node, word_state = todo.pop(0)
        special = set(children[node]) if node >= 0 else set()
        special |= {c for ch in alphabet for c in (ch, ch.upper())}
        grouped: dict[int, list[str]] = {}
        forbidden = ""
        for ch in sorted(special):
            to_node = children[node].get(ch, -1) if node >= 0 else -1
            to_word = move[word_state][ch.lower()] if ch.lower() in move[word_state] else 0
            if done[to_word]:
                forbidden += ch  # the character would complete a word
                continue
            grouped.setdefault(state_of((to_node, to_word)), []).append(ch)
        other = state_of((-1, 0))
        may_end = node < 0 or not ends[node]
        states.append((may_end, tuple(("".join(chs), to) for to, chs in grouped.items()), forbidden, other))
        if len(index) > MAX_EXCLUSION_STATES:
            raise ValueError("the exclusion has too many states")
    # States were numbered as found and built in that order (todo is first in, first out).
    return states


def automaton_admits(states: list[ExclusionState], text: str) -> bool:
    """Whether the automaton admits `text`, a string's plain characters."""
    at = 0
    for ch in text:
        _, moves, forbidden, other = states[at]
        if ch in forbidden or not PLAIN_TEXT.fullmatch(ch):
            return False
        at = next((to for chars, to in moves if ch in chars), other)
    return states[at][0]


def _class_char(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02X}" if code < 0x100 else f"\\u{code:04X}" if code < 0x10000 else f"\\U{code:08X}"


def exclusion_rules(prefix: str, states: list[ExclusionState]) -> dict[str, str]:
    """The automaton's rules as llama.cpp grammar text, `prefix`-0 first: the rest of
    a JSON string after its opening quote (escapes as JSON has them), its closing
    quote and the space after it."""
    escape = r'"\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
    rules: dict[str, str] = {}
    for i, (may_end, moves, forbidden, other) in enumerate(states):
        alts = [r'"\"" space'] if may_end else []
        alts += [f"[{''.join(map(_class_char, chars))}] {prefix}-{to}" for chars, to in moves]
        taken = "".join(_class_char(c) for chars, _ in moves for c in chars) + "".join(map(_class_char, forbidden))
        alts.append(f'[^"\\\\\\x00-\\x1F\\x7F{taken}] {prefix}-{other}')
        alts.append(f"{escape} {prefix}-{other}")
        rules[f"{prefix}-{i}"] = " | ".join(alts)
    return rules
