"""The chat-completions stream reader (actors/model/chatstream.py), without I/O."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.model.chatstream import MAX_ANSWER_CHARS, MAX_CALLS, MAX_EVENT_BYTES, ChatStream, StreamError, error_text
from actors.model.turns import Piece


def sse(*chunks: object, done: bool = True) -> list[str]:
    lines: list[str] = []
    for c in chunks:
        lines += [f"data: {c if isinstance(c, str) else json.dumps(c)}", ""]
    if done:
        lines += ["data: [DONE]", ""]
    return lines


def delta(d: dict, finish: str | None = None) -> dict:
    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


def feed(lines: list[str]) -> tuple[ChatStream, list[Piece]]:
    s = ChatStream()
    pieces: list[Piece] = []
    for line in lines:
        pieces += s.feed_line(line)
    pieces += s.finish()
    return s, pieces


def test_text_reasoning_and_done() -> None:
    s, pieces = feed(sse(delta({"role": "assistant"}), delta({"reasoning_content": "Think."}),
                         delta({"reasoning": " More."}), delta({"content": "Hel"}), delta({"content": "lo"}),
                         delta({}, "stop")))
    assert [(p.kind, p.text) for p in pieces] == [
        ("reasoning", "Think."), ("reasoning", " More."), ("text", "Hel"), ("text", "lo")]
    assert s.done and s.complete
    r = s.result()
    assert (r.text, r.reasoning, r.tool_calls, r.finish_reason) == ("Hello", "Think. More.", (), "stop")


def test_comments_other_fields_and_no_space_after_colon() -> None:
    lines = [": keep-alive", "event: message", "id: 3", 'data:{"choices":[{"index":0,"delta":{"content":"x"}}]}', "",
             "retry: 10", "data: [DONE]", ""]
    s, pieces = feed(lines)
    assert [p.text for p in pieces] == ["x"] and s.done


def test_data_split_over_lines_is_one_event() -> None:
    s, pieces = feed(['data: {"choices": [{"index": 0,', 'data: "delta": {"content": "joined"}}]}', ""])
    assert [p.text for p in pieces] == ["joined"]
    assert not s.complete  # no [DONE], no finish reason


def test_last_event_without_blank_line_is_read_at_finish() -> None:
    s, pieces = feed(['data: {"choices": [{"index": 0, "delta": {"content": "end"}, "finish_reason": "length"}]}'])
    assert [p.text for p in pieces] == ["end"] and s.complete and s.result().finish_reason == "length"


def test_tool_calls_assembled_by_index() -> None:
    s, pieces = feed(sse(
        delta({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "read", "arguments": ""}}]}),
        delta({"tool_calls": [{"index": 1, "id": "call_b", "function": {"name": "grep", "arguments": '{"pa'}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"path": '}}]}),
        delta({"tool_calls": [{"index": 1, "function": {"arguments": 'ttern": "x"}'}}]}),
        delta({"tool_calls": [{"index": 0, "function": {"arguments": '"a.txt"}'}}]}),
        delta({}, "tool_calls"),
    ))
    assert pieces == [
        Piece("tool_call", "", index=0, call_id="call_a", name="read"),
        Piece("tool_call", '{"pa', index=1, call_id="call_b", name="grep"),
        Piece("tool_call", '{"path": ', index=0),
        Piece("tool_call", 'ttern": "x"}', index=1),
        Piece("tool_call", '"a.txt"}', index=0),
    ]
    r = s.result()
    assert [(c.id, c.name, c.arguments) for c in r.tool_calls] == [
        ("call_a", "read", '{"path": "a.txt"}'), ("call_b", "grep", '{"pattern": "x"}')]
    assert r.finish_reason == "tool_calls"


def test_a_call_cut_by_the_token_limit_ends_with_length() -> None:
    s, _ = feed(sse(
        delta({"tool_calls": [{"index": 0, "id": "call_a", "function": {"name": "read", "arguments": '{"pa'}}]}),
        delta({}, "length"),
    ))
    r = s.result()
    assert r.finish_reason == "length" and r.tool_calls[0].arguments == '{"pa'


def test_a_call_is_held_back_until_its_name_arrives() -> None:
    s, pieces = feed(sse(
        delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}),
        delta({"tool_calls": [{"index": 0, "id": "late", "function": {"name": "echo", "arguments": ": 1}"}}]}),
        delta({}, "tool_calls"),
    ))
    assert pieces == [Piece("tool_call", '{"a": 1}', index=0, call_id="late", name="echo")]
    assert s.result().tool_calls[0].arguments == '{"a": 1}'


def test_missing_index_and_id_and_object_arguments() -> None:
    s, pieces = feed(sse(delta({"tool_calls": [{"function": {"name": "a", "arguments": {"x": 1}}},
                                               {"function": {"name": "b", "arguments": "{}"}}]}, "tool_calls")))
    calls = s.result().tool_calls
    assert [(c.name, c.arguments) for c in calls] == [("a", '{"x": 1}'), ("b", "{}")]
    assert all(c.id.startswith("call_") for c in calls)
    assert [p.call_id for p in pieces] == [c.id for c in calls]


def test_usage_and_other_choices_and_empty_choices() -> None:
    s, pieces = feed(sse(
        {"choices": [{"index": 1, "delta": {"content": "other"}}]},
        delta({"content": "mine"}, "stop"),
        {"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 3}},
    ))
    assert [p.text for p in pieces] == ["mine"]
    r = s.result()
    assert (r.prompt_tokens, r.completion_tokens) == (12, 3)


@pytest.mark.parametrize("line", ["data: {not json", "data: [1, 2]", 'data: {"choices": 5}'])
def test_bad_chunks_raise(line: str) -> None:
    s = ChatStream()
    s.feed_line(line)
    with pytest.raises(StreamError):
        s.feed_line("")


def test_error_chunk_mid_stream_raises_with_its_message() -> None:
    s = ChatStream()
    s.feed_line('data: {"error": {"message": "model overloaded"}}')
    with pytest.raises(StreamError, match="model overloaded"):
        s.feed_line("")


def test_an_oversized_event_is_refused() -> None:
    s = ChatStream()
    with pytest.raises(StreamError, match="larger than"):
        for _ in range(MAX_EVENT_BYTES // 1024 + 2):
            s.feed_line("data: " + "x" * 1024)


def test_lines_after_done_are_ignored() -> None:
    s, pieces = feed(["data: [DONE]", "", "data: {bad", ""])
    assert s.done and pieces == []


def test_whole_completion() -> None:
    s = ChatStream()
    call = {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}
    pieces = s.feed_completion(
        {"choices": [{"message": {"content": "Hi", "tool_calls": [call]}, "finish_reason": "tool_calls"}]}
    )
    assert [p.kind for p in pieces] == ["text", "tool_call"]
    assert s.complete and s.result().tool_calls[0].id == "c1"
    with pytest.raises(StreamError, match="bad key"):
        ChatStream().feed_completion({"error": {"message": "bad key"}})


def test_error_text_variants() -> None:
    assert error_text({"error": {"message": "a  b\nc"}}) == "a b c"
    assert error_text({"error": "plain"}) == "plain"
    assert error_text({"detail": [{"msg": "x"}]}) == '[{"msg": "x"}]'
    assert error_text({"message": "m"}) == "m"
    assert error_text(["no"]) is None and error_text({}) is None
    assert len(error_text({"error": "y" * 2000}) or "") < 600


# ---- properties ----

_fragment = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)


@st.composite
def call_streams(draw: st.DrawFn) -> tuple[list[tuple[str, str, str]], list[dict]]:
    """Calls, and chunks that interleave their fragments in any order (each call's
    own fragments stay in order)."""
    n = draw(st.integers(1, 4))
    calls, queues = [], []
    for i in range(n):
        frags = draw(st.lists(_fragment, max_size=6))
        calls.append((f"id{i}", f"tool{i}", "".join(frags)))
        head = {"index": i, "id": f"id{i}", "function": {"name": f"tool{i}", "arguments": ""}}
        queues.append([head] + [{"index": i, "function": {"arguments": f}} for f in frags])
    chunks: list[dict] = []
    while any(queues):
        live = [q for q in queues if q]
        q = draw(st.sampled_from(live))
        chunks.append(delta({"tool_calls": [q.pop(0)]}))
    chunks.append(delta({}, "tool_calls"))
    return calls, chunks


@given(call_streams())
def test_any_interleaving_assembles_the_same_calls(case: tuple[list[tuple[str, str, str]], list[dict]]) -> None:
    calls, chunks = case
    s, pieces = feed(sse(*chunks))
    assert [(c.id, c.name, c.arguments) for c in s.result().tool_calls] == calls
    firsts = {}
    for p in pieces:
        firsts.setdefault(p.index, p)
    for i, (cid, name, _) in enumerate(calls):
        assert (firsts[i].call_id, firsts[i].name) == (cid, name)
    # Pieces of each call add up to its arguments; only the first names it.
    for i, (_, _, args) in enumerate(calls):
        mine = [p for p in pieces if p.index == i]
        assert "".join(p.text for p in mine) == args
        assert all(p.name is None and p.call_id is None for p in mine[1:])


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200), st.integers(1, 7))
def test_text_survives_any_split(text: str, size: int) -> None:
    chunks = [delta({"content": text[i : i + size]}) for i in range(0, len(text), size)]
    s, pieces = feed(sse(*chunks, delta({}, "stop")))
    assert "".join(p.text for p in pieces) == text == s.result().text


# ---- what a provider's stream may cost ----


def test_a_long_answer_of_small_chunks_takes_linear_time() -> None:
    # Before, `self.text += piece` copied the whole answer at each chunk: 200,000 chunks
    # took about 25 s (quadratic); each is now kept and joined once.
    line = "data: " + json.dumps(delta({"content": "tok "}))
    s = ChatStream()
    started = time.process_time()
    for _ in range(200_000):
        s.feed_line(line)
        s.feed_line("")
    assert len(s.result().text) == 800_000
    assert time.process_time() - started < 5.0


def test_an_answer_that_does_not_stop_is_refused() -> None:
    s = ChatStream()
    piece = "x" * (1024 * 1024)
    with pytest.raises(StreamError, match="did not stop"):
        for _ in range(MAX_ANSWER_CHARS // len(piece) + 1):
            for line in sse(delta({"reasoning_content": piece}), done=False):
                s.feed_line(line)


def test_an_answer_with_too_many_calls_is_refused() -> None:
    calls = [{"index": i, "id": f"c{i}", "function": {"name": "echo", "arguments": "{}"}} for i in range(MAX_CALLS)]
    s, _ = feed(sse(delta({"tool_calls": calls}), delta({}, "tool_calls")))
    assert len(s.result().tool_calls) == MAX_CALLS
    one_more = {"index": MAX_CALLS, "function": {"name": "echo"}}
    with pytest.raises(StreamError, match=f"more than {MAX_CALLS} tool calls"):
        feed(sse(delta({"tool_calls": [*calls, one_more]})))
