// The cards that wait on the person in a conversation (an approval, a question, a
// plan, a helper's approval): what was typed or picked for each (its draft), an answer
// on its way, the daemon's refusal of the last one; the approval pinned above the
// message box (pinned.js) with its keyboard shortcuts; and where the keyboard goes
// once a card is answered (to the next that waits, else to the message box).

import { api } from "./api.js";
import { isOpenPlan } from "./cards.js";
import { isTask } from "./helpers.js";
import { h } from "./dom.js";
import { isOpenApproval, PinnedApproval, SHORTCUTS, shortcutOf } from "./pinned.js";
import { isOpenQuestion } from "./run.js";
import { problem, shell } from "./ui.js";

export class WaitingCards {
  constructor(view) {
    this.view = view;
    // What was typed or picked (a question's answer, a plan's feedback), an answer on
    // its way, the daemon's refusal of the last one: by card.
    this.drafts = new Map();
    this.busy = new Set();
    this.errors = new Map();
    this.answered = new Set(); // cards answered from this page, the answer on its way
    this.moveOn = null; // {id, pinned}: a card answered with the keyboard on it, until the keyboard goes on
    this.pinned = new PinnedApproval({
      onDecide: (item, decision, reason, rule) => this.act(item, "approval",
        { decision, ...(reason ? { feedback: reason } : {}), ...(rule ? { rule } : {}) }),
      onPick: (item, i) => this.pickRule(item, i),
      onShow: (item) => this.showCard(item),
    });
    // A call that comes to wait is said here to a screen reader (the pinned copy's own
    // region is hidden until then, and a region that appears is not read out).
    this.announcer = h("p.visually-hidden", { role: "status", "aria-live": "polite" });
    this.announced = new Set(); // the cards pinned so far: each is announced once
    // The conversation was drawn once: what waited then did not "arrive"; in one just
    // sent from the home page, everything did.
    this.primed = shell.focusComposer === view.conversationId;
    this.onShortcut = (ev) => this.shortcut(ev);
    document.addEventListener("keydown", this.onShortcut);
  }

  close() {
    document.removeEventListener("keydown", this.onShortcut);
  }

  draftFor(id) {
    if (!this.drafts.has(id)) this.drafts.set(id, { text: "", picked: new Set(), rejecting: false });
    return this.drafts.get(id);
  }

  // A card no longer waits: what was kept for its answer goes. The keyboard was on it
  // (or on the pinned copy), or it was answered here and the keyboard is nowhere: it
  // goes on to what waits next (goOn).
  settle(id) {
    const was = this.view.byId.get(id) || this.view.helpers.find(id);
    if (was && was.kind === "tool" && was.state === "waiting") {
      const at = document.activeElement;
      const nowhere = !at || at === document.body;
      const pinned = this.pinned.holds(at) || (this.answered.delete(id) && nowhere);
      if (pinned || this.view.log.cardEl(id)?.contains(at)) this.moveOn = { id, pinned };
    }
    this.drafts.delete(id);
    this.busy.delete(id);
    this.errors.delete(id);
  }

  // Sends the person's answer to a waiting card (`route`: answer or approval; a
  // helper's card is answered through this conversation too). A refusal, or a daemon
  // out of reach, is said in the card, which still waits; on success the card's item
  // event ends the wait (it may have come already).
  async act(item, route, body) {
    if (this.busy.has(item.id)) return;
    const top = () => this.view.log.els.get(this.view.log.topOf(item.id));
    const place = top()?.contains(document.activeElement) ? document.activeElement.dataset.focus : null;
    this.busy.add(item.id);
    this.answered.add(item.id);
    this.errors.delete(item.id);
    this.view.log.redraw(item.id);
    try {
      await api("POST", `${this.view.path}/${route}`, { item: item.id, ...body });
    } catch (err) {
      if (this.view.closed) return;
      this.answered.delete(item.id);
      this.busy.delete(item.id);
      this.errors.set(item.id, problem(err));
      this.view.log.redraw(item.id);
      this.view.log.cardEl(item.id)?.querySelector("[role=alert]")?.scrollIntoView({ block: "nearest" });
      const again = top();
      if (place && again && again.contains(document.activeElement)) again.querySelector(`[data-focus="${place}"]`)?.focus();
    }
  }

  // The note under the message box leads to what waits: a question, a plan, else a
  // helper's card (its task card opens by itself while one waits).
  focusWaiting() {
    const open = this.view.items.filter(isOpenQuestion).pop() || this.view.items.filter(isOpenPlan).pop()
      || this.view.helpers.waiting().pop();
    this.focusCard(open && this.view.log.cardEl(open.id));
  }

  // A card in the log, on its first control.
  focusCard(el) {
    if (!el) return;
    el.scrollIntoView({ block: "nearest" });
    // its own controls, not a button inside the Markdown it shows (a code block's Copy)
    const controls = [...el.querySelectorAll("button.option, button.primary, input, button")];
    (controls.find((c) => !c.closest(".markdown") && !c.disabled) || el).focus();
  }

  // ---- the approval pinned above the message box ----

  // The calls that wait on the person's approval, the conversation's own first.
  approvals() {
    return [...this.view.items.filter(isOpenApproval), ...this.view.helpers.waiting().filter(isOpenApproval)];
  }

  renderPinned() {
    const held = this.pinned.holds();
    const cards = this.approvals();
    const first = cards[0];
    this.pinned.render(cards, first ? { draft: this.draftFor(first.id), busy: this.busy.has(first.id),
      error: this.errors.get(first.id) } : null);
    // the pinned card went with the keyboard on it (read again whole, say): never to the page's top
    if (held && !this.pinned.holds() && !this.moveOn) this.moveOn = { id: null, pinned: true };
    this.goOn();
    this.arrived(first);
  }

  // A call pinned for the first time while the page is open: a screen reader hears it,
  // and the keyboard goes to it (its region, not its Approve: a key pressed for
  // something else must not approve) when it is nowhere or in an empty message box.
  // A draft being typed keeps the keyboard.
  arrived(first) {
    const fresh = first && !this.announced.has(first.id);
    if (first) this.announced.add(first.id);
    const primed = this.primed;
    if (this.view.info) this.primed = true;
    if (!fresh || !primed) return;
    const title = first.title || first.tool || "a call";
    this.announcer.textContent = `Waiting for your approval: ${title}. ${SHORTCUTS.approve} approves, `
      + `${SHORTCUTS.deny} denies.`;
    const at = document.activeElement;
    const box = this.view.textarea;
    if (!at || at === document.body || (at === box && !box.value.trim())) this.pinned.focusRegion();
  }

  // The keyboard after an answer (`moveOn`): to the next card that waits (the pinned
  // one, when the answer was given there), else to the message box once the run has
  // ended; until then it waits on the card answered. Moved on by the person
  // meanwhile, it stays where they put it.
  goOn() {
    const move = this.moveOn;
    if (!move) return;
    const at = document.activeElement;
    const answered = move.id === null ? null : this.view.log.cardEl(move.id);
    if (at && at !== document.body && !this.pinned.holds(at) && !answered?.contains(at)) {
      this.moveOn = null;
      return;
    }
    const next = this.view.items.find((i) => i.kind === "tool" && i.state === "waiting" && !isTask(i))
      || this.view.helpers.waiting()[0];
    if (next && move.pinned && this.pinned.item) {
      this.moveOn = null;
      this.pinned.focus();
    } else if (next) {
      const el = this.view.log.cardEl(next.id);
      if (!el) return; // not drawn yet: the next frame's
      this.moveOn = null;
      this.focusCard(el);
    } else if (this.view.running && answered) {
      // the run goes on, and a card may come to wait yet
      if (!answered.contains(at)) answered.focus({ preventScroll: true });
    } else {
      this.moveOn = null;
      this.view.textarea.focus();
    }
  }

  // Another of the rules a card offers is picked (on the card or its pinned copy): both show it.
  pickRule(item, i) {
    this.draftFor(item.id).ruleAt = i;
    this.view.log.redraw(item.id);
  }

  // The pinned card's "Show the card": the card in the log, on its Approve.
  showCard(item) {
    this.focusCard(this.view.log.cardEl(item.id));
  }

  shortcut(ev) {
    const decision = this.view.closed || !this.pinned.item ? null : shortcutOf(ev);
    if (!decision) return;
    ev.preventDefault();
    this.pinned.decide(decision);
  }

  // The plan card's feedback box opened or closed: the keyboard goes with it.
  redrawPlan(item) {
    this.view.log.drawItem(this.view.byId.get(item.id));
    const el = this.view.log.els.get(item.id);
    el?.querySelector(this.draftFor(item.id).rejecting ? "[data-focus=feedback]" : "[data-focus=reject]")?.focus();
  }}
