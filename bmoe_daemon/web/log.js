// The conversation's log: each item's element (items.js draws it), drawn again once a
// frame however many events came, in the order a compaction folds them; a task card's
// helper items opened or shut; an answer's writing speed; the slots for an answer not
// begun (the view's renderPending) and for why the run ended (progress.js). Where the
// person scrolled it is scroll.js's.
//
// A card keeps which of its folds are open and where the keyboard was when it is drawn
// again, so a growing card does not snatch the person's place. Items a compaction
// summarised are shown folded under its notice. Nothing is drawn again between a press
// on the log and its release (dom.js heldBy): a streaming answer's Copy, a fold
// clicked while the conversation is read, take their click.

import { clear, h, heldBy } from "./dom.js";
import { layoutOf, renderItem } from "./items.js";
import { keepRenderedIn, onRenderedClick } from "./rendered.js";
import { LogScroll } from "./scroll.js";

export class ConversationLog {
  constructor(view) {
    this.view = view;
    this.els = new Map(); // item id -> its element
    this.dirty = new Set(); // ids to draw in the next frame
    this.frame = 0;
    this.rates = new Map(); // answer id -> {first, last, pieces}: its deltas, for tokens a second
    this.unfolded = new Set(); // compaction notices whose items are shown
    this.tasksOpen = new Set(); // task cards whose helper's items the person opened
    this.element = h("div.log", { role: "log", "aria-label": "Messages", "aria-live": "polite", tabindex: "0" });
    // rendered Markdown's own clicks: a code block's Copy, a workspace file's link
    this.element.addEventListener("click", (ev) => onRenderedClick(ev, { preview: (file) => view.preview(file) }));
    this.scroll = new LogScroll(this.element);
    this.drawLater = () => this.closed || this.schedule(null);
    this.renderLater = () => this.closed || this.renderAll();
    this.endEl = h("div.run-end-slot", { hidden: true });
    this.pendingEl = h("div.pending-answer-slot", { hidden: true });
    // In the log from the start: an item an event brings before the first read is drawn
    // before them (a conversation opened while its run writes).
    this.element.append(this.pendingEl, this.endEl);
  }

  close() {
    cancelAnimationFrame(this.frame);
    this.closed = true;
  }

  // How fast the model writes an answer, from its `delta` events: a local model sends
  // one a token, so pieces a second is tokens a second (about, for a provider's chunks).
  countPiece(id) {
    const now = performance.now();
    const rate = this.rates.get(id);
    if (!rate) this.rates.set(id, { first: now, last: now, pieces: 1 });
    else Object.assign(rate, { last: now, pieces: rate.pieces + 1 });
  }

  // An answer's writing speed once a second of it has been seen; null before.
  writingRate(id) {
    const rate = this.rates.get(id);
    if (!rate || rate.last - rate.first < 1000) return null;
    return (rate.pieces - 1) / ((rate.last - rate.first) / 1000);
  }

  // The item to draw again for this one: itself, or a helper's item's card.
  topOf(id) {
    return this.view.helpers.owner(id) || id;
  }

  redraw(id) {
    this.drawItem(this.view.byId.get(this.topOf(id)));
    this.view.waiting.renderPinned();
  }

  // Draws changed items once per frame, however many events came.
  schedule(id) {
    if (id !== null) this.dirty.add(id);
    if (this.frame || !this.dirty.size) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.drawDirty();
    });
  }

  // Draws what waits for the next frame now: a new state (idle, say) is never shown
  // before the cards the run ended on the way to it.
  flush() {
    if (!this.frame) return;
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.drawDirty();
  }

  drawDirty() {
    if (heldBy(this.element, this.drawLater)) return;
    const ids = [...this.dirty];
    this.dirty.clear();
    this.scroll.keep(() => {
      ids.forEach((i) => this.drawItem(this.view.byId.get(i)));
      if (ids.some((i) => this.view.byId.get(i)?.compacted || this.view.byId.get(i)?.compaction)) this.layout();
      this.markLastAnswer();
      this.view.progress.renderEnd();
    });
    this.view.updateComposer();
  }

  // A card's element; a helper's is inside its task card.
  cardEl(id) {
    const top = this.els.get(this.topOf(id));
    return top && top.dataset.item !== id ? top.querySelector(`[data-item="${CSS.escape(id)}"]`) : top;
  }

  // The answer Regenerate offers: the last of the conversation's own, unless the person
  // wrote since. Tool cards and notices after it do not count.
  lastAnswerId() {
    for (let at = this.view.items.length - 1; at >= 0; at--) {
      const item = this.view.items[at];
      if (item.kind === "user") return null;
      if (item.kind === "assistant" && item.text && !item.streaming && !item.not_answer) return item.id;
    }
    return null;
  }

  // Regenerate shows on the last answer only: the one before a new answer hides it.
  markLastAnswer() {
    const last = this.lastAnswerId();
    for (const btn of this.element.querySelectorAll("button.regenerate"))
      btn.hidden = btn.closest("[data-item]")?.dataset.item !== last;
  }

  renderAll() {
    if (heldBy(this.element, this.renderLater)) return;
    clear(this.element, this.pendingEl, this.endEl);
    this.els.clear();
    if (!this.view.items.length)
      this.element.prepend(h("p.muted.empty-log", {}, "Nothing here yet. Write a message below."));
    for (const item of this.view.items) this.drawItem(item);
    this.layout();
    this.markLastAnswer();
    this.view.progress.renderEnd();
    this.scroll.toBottom();
  }

  // Puts a compaction's notice before the items it summarised and folds them unless
  // the person opened it. Nothing moves in a conversation never compacted.
  layout() {
    if (!this.view.items.some((i) => i.compacted || i.compaction)) return;
    const { order, groups } = layoutOf(this.view.items);
    let prev = null;
    for (const item of order) {
      const el = this.els.get(item.id);
      if (!el) continue;
      const want = prev ? prev.nextElementSibling : this.element.firstElementChild;
      if (want !== el) {
        if (prev) prev.after(el);
        else this.element.prepend(el);
      }
      const group = groups.get(item.id);
      el.classList.toggle("compacted", Boolean(item.compacted));
      el.classList.toggle("folded", Boolean(group) && !this.unfolded.has(group));
      prev = el;
    }
  }

  toggleFold(item) {
    if (this.unfolded.has(item.id)) this.unfolded.delete(item.id);
    else this.unfolded.add(item.id);
    this.drawItem(item);
    this.layout();
  }

  drawItem(item) {
    if (!item) return;
    const old = this.els.get(item.id);
    const el = this.renderItem(item);
    el.dataset.item = item.id;
    if (old) {
      for (const cls of ["compacted", "folded"]) el.classList.toggle(cls, old.classList.contains(cls));
      // keep what the person opened, and where the keyboard was
      for (const d of old.querySelectorAll("details[open][data-key]")) {
        const same = el.querySelector(`details[data-key="${d.dataset.key}"]`);
        if (same) same.open = true;
      }
      const held = old.contains(document.activeElement) ? document.activeElement : null;
      const focused = held ? held.dataset.focus : null;
      keepRenderedIn(old, el); // what a streaming answer finished stays as it was (a code block's Copy)
      old.replaceWith(el);
      const again = focused ? el.querySelector(`[data-focus="${focused}"]`) : null;
      if (held && el.contains(held)) held.focus({ preventScroll: true });
      // the control the keyboard was on went (a card answered): stay on the card
      else if (again && !again.disabled && !again.hidden) again.focus();
      else if (held && el.hasAttribute("tabindex")) el.focus();
    } else {
      this.element.querySelector(".empty-log")?.remove();
      this.element.insertBefore(el, this.pendingEl);
    }
    this.els.set(item.id, el);
  }

  renderItem(item) {
    return renderItem(this.view, item);
  }

  // A task card's helper items, shown or hidden; the keyboard stays on the toggle.
  toggleTask(item) {
    if (this.tasksOpen.has(item.id)) this.tasksOpen.delete(item.id);
    else this.tasksOpen.add(item.id);
    this.scroll.keep(() => this.drawItem(this.view.byId.get(item.id)), false);
  }}
