"""A person's answers to a conversation's cards: approvals (a plan's too) and questions.

A card a run waits for gets the answer through the transcript, and the run goes on. A
question or plan card left waiting by a restart has no run to wait for it: the answer
is recorded as the card's result, and the caller (the conversation actor,
actors/conversations/actor.py) starts a run that goes on from it. No I/O here: these
change the transcript and say whether a run is to start.
"""

from __future__ import annotations

from typing import Any

from actors.conversations.messages import AnswerMsg, ApprovalMsg
from actors.errors import Invalid, NotFound
from actors.policy.rules import BadRule, Offer, RuleBook, chosen_offer
from actors.record import cards
from actors.record.cards import ASK_USER
from actors.record.items import Item, PlanInfo
from actors.record.transcript import ANSWERABLE_AFTER_RESTART, Transcript
from actors.runs.agent.run_tools import plans
from actors.runs.agent.run_tools.todos_and_questions import answer_text, check_answer, parse_question

# The rule an approval keeps for good: (workspace id, the card's offer).
KeptRule = tuple[str, Offer]


def open_cards(t: Transcript) -> list[Item]:
    """Question and plan cards still waiting, for a caller that knows no run waits for them."""
    return [i for i in t.items if i.kind == "tool" and i.tool in ANSWERABLE_AFTER_RESTART and i.state == "waiting"]


def approve(t: Transcript, msg: ApprovalMsg, rules: RuleBook | None) -> tuple[KeptRule | None, bool]:
    """Answer the approval card: with `always`, the rule to keep, checked before the card
    is answered (a rule that cannot be kept leaves it waiting: Invalid); and whether a
    run is to start (a plan card answered after a restart)."""
    card = t.find(msg.item)
    is_plan = card is not None and card.tool == cards.EXIT_PLAN
    value = cards.Decision(msg.approve, None if msg.approve else msg.feedback)
    keep = None
    if msg.always:
        keep = _rule_to_keep(t, msg, card, rules)
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


async def keep_rule(rules: RuleBook, keep: KeptRule) -> None:
    """Keep the rule an approval chose; Invalid when it cannot be kept after all."""
    ws_id, offer = keep
    try:
        await rules.add(ws_id, offer.kind, offer.text, offer.exact)
    except BadRule as exc:  # another answer kept the last rule this workspace may have meanwhile
        raise Invalid(f"The call was approved, but its rule was not kept: {exc}") from None


def _rule_to_keep(t: Transcript, msg: ApprovalMsg, card: Item | None, rules: RuleBook | None) -> KeptRule:
    """The rule an `approve_always` keeps (a helper's card's too); Invalid when none can be."""
    ws_id = t.info.workspace
    offers = _offers_of(t, msg.item, card)
    if offers is None or ws_id is None or not msg.local or rules is None or t.waiting_for(msg.item) != "approval":
        raise Invalid("This card offers no rule to keep; approve it once instead.")
    try:
        offer = chosen_offer(*offers, msg.rule)
        rules.check(ws_id, offer.kind, offer.text, offer.exact)
    except BadRule as exc:
        raise Invalid(str(exc)) from None
    return ws_id, offer


def _offers_of(t: Transcript, item_id: str, card: Item | None) -> tuple[Any, str | None, str | None] | None:
    """A card's (rules, rule, tool), looked for among the helpers' cards too."""
    if card is not None:
        return card.rules, card.rule, card.tool
    for item in t.items:
        rows = item.task.get("items") if item.task else None
        for row in rows or ():
            if isinstance(row, dict) and row.get("id") == item_id:
                return row.get("rules"), row.get("rule"), row.get("tool")
    return None


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
