"""grep_search's patterns on RE2 (actors/tools/grep_regex.py, and matching_lines in
actors/tools/grep_search.py): Python's meaning, linear time, plain refusals."""

from __future__ import annotations

import re
import threading
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.errors import ToolError
from actors.tools.grep_search import (
    LONG_LINE_UNITS,
    SEARCH_CALL_UNITS,
    compile_query,
    grep_data,
    matching_lines,
)

# ---- a grammar of patterns: nested groups, repeats and alternations ----

ASCII_ATOMS = ["a", "b", "A", "1", "_", " ", ".", "[ab]", "[^a]", "[a-c1]", r"\w", r"\W", r"\d", r"\D", r"\s", r"\S",
               "[^\\W\\d]", "[\\s1]"]  # fmt: skip
ASCII_ANCHORS = ["^", "$", r"\b", r"\B"]
UNICODE_ATOMS = ["a", "é", "Ω", "ω", "٣", "_", " ", "\u2003", ".", "[éa]", "[^é]", r"\w", r"\W", r"\d", r"\D", r"\s",
                 r"\S", "[\\dé]"]  # fmt: skip
REPEATS = ["*", "+", "?", "{0,2}", "{1,3}", "{2}", "{,2}", "{2,}", "*?", "+?", "??", "{1,2}?"]


def patterns(atoms: list[str], anchors: list[str]) -> st.SearchStrategy[str]:
    leaf = st.sampled_from(atoms + anchors)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, inner).map("".join),
            st.tuples(inner, inner).map("|".join),
            st.tuples(st.sampled_from(["(", "(?:", "(?i:"]), inner).map(lambda t: f"{t[0]}{t[1]})"),
            st.tuples(st.sampled_from(["(", "(?:"]), inner, st.sampled_from(REPEATS)).map(
                lambda t: f"{t[0]}{t[1]}){t[2]}"
            ),
            st.tuples(st.sampled_from(atoms), st.sampled_from(REPEATS)).map("".join),
        )

    return st.recursive(leaf, extend, max_leaves=6)


def reference_lines(data: str, pattern: str, *, ignore_case: bool, as_bytes: bool) -> list[int]:
    """Python's `re`, one line at a time (as grep promises), on bytes or on text."""
    flags = re.MULTILINE | (re.IGNORECASE if ignore_case else 0)
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if as_bytes:
        rx_b = re.compile(pattern.encode(), flags)
        return [i + 1 for i, line in enumerate(lines) if rx_b.search(line.encode())]
    rx = re.compile(pattern, flags)
    return [i + 1 for i, line in enumerate(lines) if rx.search(line)]


def found_lines(data: bytes, pattern: str, *, ignore_case: bool) -> list[int]:
    query = compile_query(pattern, ignore_case=ignore_case)
    return [data.count(b"\n", 0, start) + 1 for start, _ in matching_lines(data, query)]


@pytest.mark.slow(reason="a long property test; CI runs it")
@settings(max_examples=3000)
@given(
    patterns(ASCII_ATOMS, ASCII_ANCHORS),
    # No empty line: Python's `re` before 3.14 lets `\B` match nowhere in an empty text,
    # a quirk 3.14 dropped; RE2 (and grep here) match it there, as 3.14 does.
    st.lists(st.text(alphabet="abAB1 _\t", min_size=1, max_size=10), max_size=6).map("\n".join),
    st.booleans(),
)
def test_an_ascii_pattern_finds_the_lines_pythons_re_finds_on_bytes(pattern: str, text: str, icase: bool) -> None:
    expected = reference_lines(text, pattern, ignore_case=icase, as_bytes=True)
    assert found_lines(text.encode(), pattern, ignore_case=icase) == expected, compile_query(pattern).pattern


@pytest.mark.slow(reason="a long property test; CI runs it")
@settings(max_examples=2000)
@given(
    patterns(UNICODE_ATOMS, ["^", "$"]),
    st.lists(st.text(alphabet="aAéÉΩω٣ _\u2003", max_size=8), max_size=5).map("\n".join),
    st.booleans(),
)
def test_a_unicode_pattern_finds_the_lines_pythons_re_finds_on_text(pattern: str, text: str, icase: bool) -> None:
    pattern = "(?:é|" + pattern + ")" if pattern.isascii() else pattern  # non-ASCII: the text mode
    expected = reference_lines(text, pattern, ignore_case=icase, as_bytes=False)
    assert found_lines(text.encode(), pattern, ignore_case=icase) == expected, compile_query(pattern).pattern


LITERAL_ATOMS = ["ab", "ba", "abc", "b", "a", "[ab]", "[abc]", ".", r"\w", "(?:x?)"]


@pytest.mark.slow(reason="a long property test; CI runs it")
@settings(max_examples=2000)
@given(
    patterns(LITERAL_ATOMS, ["^", "$", r"\b"]),
    st.lists(st.text(alphabet="abcx _", min_size=1, max_size=12), max_size=5).map("\n".join),
    st.booleans(),
)
def test_a_file_with_a_match_always_holds_one_of_the_texts_looked_for_first(
    pattern: str, text: str, icase: bool
) -> None:
    query = compile_query(pattern, ignore_case=icase)
    if not reference_lines(text, pattern, ignore_case=icase, as_bytes=True):
        return
    hay = text.encode().lower() if query.fold else text.encode()
    assert not query.needles or any(n in hay for n in query.needles), query.needles
    if query.prefilter is not None:  # the one pass that looks for them finds one too
        assert query.prefilter.search(text.encode(), 0, len(text.encode())) is not None


# ---- linear time ----

NESTED_ATOMS = ["a", "b", "aa", ".", "[ab]", r"\w", "a?", "(?:a|aa)", "(?:a|a)"]
LINE_BYTES = 10 * 1024
MATCH_WITHIN_S = 2.0  # of CPU time: RE2's worst here is well under a second; re never ends on many


@settings(max_examples=300)
@given(patterns(NESTED_ATOMS, ["^", "$"]), st.sampled_from([b"a", b"ab", b"aab"]), st.sampled_from([b"", b"c"]))
def test_any_pattern_over_a_10_kib_line_ends_within_a_bound(pattern: str, unit: bytes, tail: bytes) -> None:
    line = (unit * (LINE_BYTES // len(unit)))[:LINE_BYTES] + tail + b"\n"
    pattern = f"(?:{pattern})+c"  # a `c` that is rarely there: the matcher must try everything
    try:
        query = compile_query(pattern)
    except ToolError:
        return  # refused (too large for the engine) also ends at once
    started = time.process_time()
    list(matching_lines(line * 2, query))
    assert time.process_time() - started < MATCH_WITHIN_S, (pattern, query.pattern)


def test_the_issues_example_ends_at_once() -> None:
    query = compile_query("(a|aa)*c")
    started = time.process_time()
    assert list(matching_lines(b"a" * 64 + b"\n", query)) == []
    assert list(matching_lines(b"a" * 64 + b"c\n", query)) == [(0, 65)]
    assert time.process_time() - started < 0.1


def test_the_engine_lets_other_threads_run_while_it_matches() -> None:
    # A search that takes RE2's slow path for a while, in a thread, as the tool runs it.
    query = compile_query("(?:a?){1000}a{1000}c")
    assert query.pattern is not None
    data = (b"a" * (LONG_LINE_UNITS // query.pattern.cost - 10) + b"\n") * 2
    done = threading.Event()
    polls: list[float] = []  # the search polls before each call into the engine

    def search() -> None:
        list(matching_lines(data, query, lambda: polls.append(time.monotonic())))
        polls.append(time.monotonic())
        done.set()

    worker = threading.Thread(target=search)
    ticks, worst, last = 0, 0.0, time.monotonic()
    worker.start()
    while not done.is_set():
        time.sleep(0.005)
        now = time.monotonic()
        worst, last, ticks = max(worst, now - last), now, ticks + 1
    worker.join()
    longest = max(b - a for a, b in zip(polls, polls[1:], strict=False))  # one call into the engine
    assert ticks > 20 and longest > 0.1, "the search was too quick to tell anything"
    # An engine that kept the GIL would stop this thread for a whole call. Judged against
    # the call's own time, so a loaded machine (which stretches both) does not fail it.
    assert worst < 0.6 * longest, f"this thread waited {worst:.2f} s for the GIL; a call took {longest:.2f} s"


def test_a_line_too_long_for_a_costly_pattern_is_left_out_and_counted() -> None:
    query = compile_query("(?:a?){1000}a{1000}c")
    assert query.pattern is not None
    longest = LONG_LINE_UNITS // query.pattern.cost
    data = b"xc\n" + b"a" * (longest + 1) + b"c\n" + b"a" * 1000 + b"c\n"
    too_long: list[int] = []
    started = time.process_time()
    lines, count, _ = grep_data(data, query, "f", budget=100, too_long=too_long)
    assert time.process_time() - started < 2.0
    assert lines == ["f:3:" + "a" * 400 + " [... 601 more characters]"] and count == 1
    assert too_long == [3]


def test_poll_is_called_between_bounded_calls() -> None:
    query = compile_query("[A-Z]{20,}[0-9]{2}")
    assert query.pattern is not None
    span = SEARCH_CALL_UNITS // query.pattern.cost
    data = (b"x" * 99 + b"\n") * (3 * span // 100)
    calls = 0

    def poll() -> None:
        nonlocal calls
        calls += 1

    assert list(matching_lines(data, query, poll)) == []
    assert 3 <= calls <= 5

    class Stop(Exception):
        pass

    def stop() -> None:
        raise Stop

    with pytest.raises(Stop):
        list(matching_lines(data, query, stop))


# ---- what Python's syntax means, and what is refused ----


@pytest.mark.parametrize(
    ("pattern", "text", "lines"),
    [
        ("^x{,2}y$", "xxy\ny\nx{,2}y\n", [1, 2]),  # {,2} is a repeat in Python (a literal in RE2's own syntax)
        (r"a\Z", "a\na", [2]),  # \Z: the end of the file only
        (r"\Aa", "a\na", [1]),
        ("(?x) a  b  # a comment", "ab\na b\n", [1]),
        (r"[^\W\d]+$", "abc\n123\n", [1]),
        (r"\bfoo\b", "foo\nfoobar\nthe foo.\n", [1, 3]),
        ("a.c", "a\nc\nabc\n", [3]),  # no match crosses a line
        (r"a\sc", "a\nc\na c\n", [3]),
        ("a\\nb", "a\nb\n", []),
        ("(?i)ÉTÉ", "été\nete\n", [1]),
        (r"\d+é", "٣é\n3é\nxé\n", [1, 2]),  # non-ASCII: Unicode classes, as Python's re on text
        (r"[\u00e9]", "é\ne\n", [1]),
        (r"\x41", "A\nB\n", [1]),
    ],
)
def test_python_syntax_means_what_python_means(pattern: str, text: str, lines: list[int]) -> None:
    assert found_lines(text.encode(), pattern, ignore_case=False) == lines


def test_an_ascii_pattern_sees_bytes_as_pythons_re_does_on_bytes() -> None:
    # Latin-1 bytes (not UTF-8) are matched byte by byte, as before.
    assert found_lines(b"caf\xe9\nca\n", "caf.$", ignore_case=False) == [1]
    assert found_lines("naïve\n".encode(), "na.ve", ignore_case=False) == []  # ï is two bytes
    assert found_lines("naïve\n".encode(), "na..ve", ignore_case=False) == [1]


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        (r"(a)\1", "backreference"),
        (r"(?P<x>a)(?P=x)", "backreference"),
        ("foo(?=bar)", "lookahead"),
        ("(?<!x)foo", "lookahead or lookbehind"),
        ("(?>ab)c", "atomic group"),
        ("a*+b", "possessive"),
        ("(a)?(?(1)b|c)", "conditional"),
        ("a{1001}", "above 1000"),
        (r"\bcafé", r"\b or \B"),
    ],
)
def test_what_an_automaton_cannot_do_is_refused_in_plain_words(pattern: str, words: str) -> None:
    with pytest.raises(ToolError) as info:
        compile_query(pattern)
    message = str(info.value)
    assert words in message and "literal: true" in message and "Traceback" not in message


@pytest.mark.parametrize(
    ("pattern", "words"),
    [
        ("foo(bar", "invalid regex: missing ), unterminated subpattern"),
        ("a{5,2}", "invalid regex: min repeat greater than max repeat"),
        ("a{99999999999999999999}", "invalid regex: the repetition number is too large"),
        ("(" * 900 + ")" * 900, "nests groups too deeply"),
        ("((a{100}){100}){100}", "nested repeats"),
    ],
)
def test_a_bad_or_huge_pattern_is_a_plain_error(pattern: str, words: str) -> None:
    with pytest.raises(ToolError, match=re.escape(words)):
        compile_query(pattern)


def test_a_literal_never_goes_through_the_regex_engine() -> None:
    query = compile_query("(a|aa)*c", literal=True)
    assert query.exact and query.pattern is None and query.needle == b"(a|aa)*c"
    assert compile_query("Été", literal=True).needle == "Été".encode()
    folded = compile_query("ÉTÉ", literal=True, ignore_case=True)  # Unicode case: the engine
    assert folded.pattern is not None
    assert found_lines("été\nete\n".encode(), "ÉTÉ", ignore_case=True) == [1]
