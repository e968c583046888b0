"""A person's answers to a conversation's cards: approvals (a plan's too) and questions.

A card a run waits for gets the answer through the transcript, and the run goes on. A
question or plan card left waiting by a restart has no run to wait for it: the answer
is recorded as the card's result, and the caller (the conversation actor,
actors/conversations/actor.py) starts a run that goes on from it. No I/O here: these
change the transcript and say whether a run is to start.
"""

from __future__ import annotations

from actors.conversations.messages import AnswerMsg, ApprovalMsg
from actors.errors import Invalid, NotFound
from actors.policy.rules import kind_of
from actors.record import cards
from actors.record.cards import ASK_USER
from actors.record.items import Item, PlanInfo
from actors.record.transcript import ANSWERABLE_AFTER_RESTART, Transcript
from actors.runs.agent.run_tools import plans
from actors.runs.agent.run_tools.todos_and_questions import answer_text, check_answer, parse_question

# The rule an approval keeps for good: (workspace id, kind, text).
KeptRule = tuple[str, str, str]


def open_cards(t: Transcript) -> list[Item]:
    """Question and plan cards still waiting, for a caller that knows no run waits for them."""
    return [i for i in t.items if i.kind == "tool" and i.tool in ANSWERABLE_AFTER_RESTART and i.state == "waiting"]


def approve(t: Transcript, msg: ApprovalMsg) -> tuple[KeptRule | None, bool]:
    """Answer the approval card: with `always`, the rule to keep; and whether a run is
    to start (a plan card answered after a restart)."""
    card = t.find(msg.item)
    is_plan = card is not None and card.tool == cards.EXIT_PLAN
    value = cards.Decision(msg.approve, None if msg.approve else msg.feedback)
    keep = None
    if msg.always:
        ws_id = t.info.workspace
        if card is None or not card.rule or ws_id is None or not msg.local or t.waiting_for(msg.item) is None:
            raise Invalid("This card offers no rule to keep; approve it once instead.")
        keep = (ws_id, kind_of(card.tool), card.rule)
    if card is None or card.state != "waiting" or t.waiting_for(msg.item) == "approval" or not is_plan:
        t.answer(msg.item, value, "approval")
        return keep, False
    # A plan card answered after a restart: the answer is recorded and a run goes on.
    plan = t.info.plan
    revision = plan.revision if plan else 1
    if msg.approve:
        t.update(msg.item, state="done", result=plans.APPROVED)
        t.set_info(plan_mode=False, plan=PlanInfo(revision, "approved"))
    else:
        t.update(msg.item, state="denied", result=plans.rejected(msg.feedback))
        t.set_info(plan=PlanInfo(revision, "rejected"))
    return None, True


def answer_question(t: Transcript, msg: AnswerMsg) -> bool:
    """Answer the question card; whether a run is to start (the card was answered after
    a restart). NotFound when the card is not waiting; Invalid when the answer's shape
    is wrong."""
    card = t.find(msg.item)
    if card is None or card.tool != ASK_USER or card.state != "waiting":
        raise NotFound("That card is not waiting for an answer.")
    question = parse_question(card.args or {})
    try:
        answer = check_answer(question, msg.answer)
    except ValueError as exc:
        raise Invalid(str(exc)) from None
    if t.waiting_for(msg.item) == "question":
        t.answer(msg.item, answer, "question")
        return False
    # Answered after a restart: the answer is the card's result, and a run goes on from it.
    t.update(msg.item, state="done", result=answer_text(question, answer))
    return True
