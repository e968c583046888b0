"""An answer with no word at all (`{`, `...`; SmolLM2 answered "{" after its loop was
cut): sent back once to answer in words, then the person reads that the model could
not do it, a change it made kept on its card (actors/runs/agent/small/steps.py)."""

from __future__ import annotations

from actors import notices
from actors.runs.agent.small import faults
from actors.runs.agent.small import steps as small_steps
from tests.test_small_steps import call, small_project
from tests.waiting import wait_state


def _fault(text: str, *, changed: bool = False) -> faults.Fault | None:
    return small_steps.find_fault(text, exists=lambda _: True, changed=changed, asked="tidy notes.txt")


def test_an_answer_with_no_word_is_at_fault():
    for text in ("{", "...", " }\n", "**", "-- ;", "\u201c\u201d"):
        fault = _fault(text)
        assert fault is not None and fault.wordless == " ".join(text.split()), text
    for text in ("Done.", "42", "OK", "3 lines", "\u597d", "\u0425\u043e\u0440\u043e\u0448\u043e.", "x = 1"):
        fault = _fault(text, changed=True)
        assert fault is None or fault.wordless is None, text
    assert _fault("") is None  # no answer at all is not judged here


def test_the_fault_the_model_and_the_person_are_told():
    told = small_steps.answer_fault("{", exists=lambda _: True, changed=True, asked="tidy notes.txt")
    assert told == faults.WORDLESS
    assert faults.fault_for_person(told) == notices.ANSWER_WORDLESS
    fault = _fault("{", changed=True)
    assert fault is not None
    said = faults.could_not(fault)
    assert said.startswith("The model could not do this: its answer had no words (\u201c{\u201d).")
    assert "on its card" in said and "models page" in said


async def test_a_wordless_answer_after_a_change_is_sent_back_then_could_not(real_tools, tmp_path):
    d = real_tools
    folder, conv = await small_project(d, tmp_path, {"notes.txt": "alpha\nbeta\n"})
    d.backend.push(
        call("edit_file", path="notes.txt", edits=[{"old_text": "beta", "new_text": "gamma"}]),
        {"text": "{"},
        {"text": "{"},
    )
    await conv.send_message("change beta to gamma in notes.txt")
    await wait_state(conv, "idle", "error")
    sent = [i for i in conv.items if i.kind == "notice" and i.for_model]
    assert [i.text for i in sent] == [faults.WORDLESS]
    # Sent back after the change, the model's next round is the answer (no other change).
    assert d.backend.turns[-1].tool_choice == "none"
    assert conv.info.end_reason == "could_not"
    assert conv.items[-1].text.startswith("The model could not do this: its answer had no words")
    assert (folder / "notes.txt").read_text() == "alpha\ngamma\n"  # the change it made stays


async def test_an_answer_in_words_after_one_sent_back_stands(real_tools, tmp_path):
    d = real_tools
    _, conv = await small_project(d, tmp_path, {"notes.txt": "alpha\nbeta\n"})
    d.backend.push(
        call("edit_file", path="notes.txt", edits=[{"old_text": "beta", "new_text": "gamma"}]),
        {"text": "..."},
        {"text": "Changed beta to gamma in notes.txt."},
    )
    await conv.send_message("change beta to gamma in notes.txt")
    await wait_state(conv, "idle", "error")
    assert conv.info.end_reason == "answered" and conv.items[-1].text == "Changed beta to gamma in notes.txt."
