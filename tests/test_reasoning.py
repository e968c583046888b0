"""ThinkSplitter: reasoning between <think> tags, answer text outside, whatever the cut."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from actors.model.reasoning import CLOSE_TAG, OPEN_TAG, ThinkSplitter


def run(pieces: list[str], *, start_in_reasoning: bool = False) -> list[tuple[str, str]]:
    splitter = ThinkSplitter(start_in_reasoning=start_in_reasoning)
    out: list[tuple[str, str]] = []
    for piece in pieces:
        out.extend(splitter.feed(piece))
    out.extend(splitter.flush())
    return out


def merged(pieces: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Adjacent pieces of the same kind joined: what a reader of the stream sees."""
    out: list[tuple[str, str]] = []
    for kind, text in pieces:
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out


def totals(pieces: list[tuple[str, str]]) -> tuple[str, str]:
    reasoning = "".join(t for k, t in pieces if k == "reasoning")
    text = "".join(t for k, t in pieces if k == "text")
    return reasoning, text


# Letters of the tags, so the segments are full of near-tags and partial tags.
_segment = st.text(alphabet="<>/thinkx \n", max_size=12)


@st.composite
def tagged_text(draw: st.DrawFn) -> tuple[bool, str, list[tuple[str, str]]]:
    """A text with properly alternating tags, and what it should split into."""
    start_in_reasoning = draw(st.booleans())
    segments = draw(st.lists(_segment, max_size=8))
    kind = "reasoning" if start_in_reasoning else "text"
    whole = ""
    expected: list[tuple[str, str]] = []
    opens = closes = 0
    for i, seg in enumerate(segments):
        if i:
            # Switch: close the reasoning block or open one.
            if kind == "reasoning":
                whole += CLOSE_TAG
                closes += 1
                kind = "text"
            else:
                whole += OPEN_TAG
                opens += 1
                kind = "reasoning"
        whole += seg
        if seg:
            expected.append((kind, seg))
    # The segments must not make tags of their own (with each other or with the tags).
    assume(whole.count(OPEN_TAG) == opens and whole.count(CLOSE_TAG) == closes)
    # Nor may the text (or the reasoning) spell a tag once the blocks between its
    # segments are taken out: `<` `<think></think>` `think` `<think></think>` `>` is
    # rightly the answer text "<think>", which the leak check below would call a tag.
    assume(not any(tag in total for total in totals(expected) for tag in (OPEN_TAG, CLOSE_TAG)))
    return start_in_reasoning, whole, merged(expected)


@st.composite
def cut(draw: st.DrawFn, text: str) -> list[str]:
    points = sorted(draw(st.sets(st.integers(0, len(text)), max_size=len(text) + 1)))
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@settings(max_examples=400, deadline=None)
@given(data=st.data(), case=tagged_text())
def test_any_cut_gives_the_same_split_as_the_whole(data: st.DataObject, case: tuple[bool, str, list]) -> None:
    start_in_reasoning, whole, expected = case
    pieces = data.draw(cut(whole))
    assert "".join(pieces) == whole

    at_once = run([whole], start_in_reasoning=start_in_reasoning)
    in_pieces = run(pieces, start_in_reasoning=start_in_reasoning)

    assert totals(in_pieces) == totals(at_once)
    assert merged(in_pieces) == merged(at_once) == expected
    for _, text in in_pieces:
        assert text, "an empty piece was emitted"
    for reasoning_or_text in totals(in_pieces):
        assert OPEN_TAG not in reasoning_or_text
        assert CLOSE_TAG not in reasoning_or_text


@settings(max_examples=300, deadline=None)
@given(data=st.data(), whole=st.text(alphabet="<>/thinkx", max_size=40), start=st.booleans())
def test_any_text_any_cut_same_as_whole(data: st.DataObject, whole: str, start: bool) -> None:
    """Even with tags that do not alternate, the cut never changes what comes out."""
    pieces = data.draw(cut(whole))
    assert merged(run(pieces, start_in_reasoning=start)) == merged(run([whole], start_in_reasoning=start))


def test_plain_text_passes_through() -> None:
    assert run(["Hello, world."]) == [("text", "Hello, world.")]


def test_reasoning_then_answer() -> None:
    assert merged(run(["<think>plan it</think>The answer."])) == [
        ("reasoning", "plan it"),
        ("text", "The answer."),
    ]


def test_tag_split_one_character_at_a_time() -> None:
    text = "a<think>why</think>b"
    assert merged(run(list(text))) == [("text", "a"), ("reasoning", "why"), ("text", "b")]


def test_partial_tag_is_held_back_until_known() -> None:
    s = ThinkSplitter()
    assert s.feed("answer <thi") == [("text", "answer ")]
    assert s.feed("nk>deep") == [("reasoning", "deep")]
    assert s.feed("</th") == []
    assert s.feed("ought>") == [("reasoning", "</thought>")]


def test_held_back_near_tag_comes_out_on_flush() -> None:
    s = ThinkSplitter()
    assert s.feed("x <") == [("text", "x ")]
    assert s.flush() == [("text", "<")]
    assert s.flush() == []


def test_start_in_reasoning() -> None:
    assert merged(run(["still thinking</think>done"], start_in_reasoning=True)) == [
        ("reasoning", "still thinking"),
        ("text", "done"),
    ]


def test_unclosed_reasoning_flushes_as_reasoning() -> None:
    s = ThinkSplitter()
    assert s.feed("<think>abc</thin") == [("reasoning", "abc")]
    assert s.flush() == [("reasoning", "</thin")]


def test_close_tag_outside_reasoning_is_text() -> None:
    assert merged(run(["a</think>b"])) == [("text", "a</think>b")]
