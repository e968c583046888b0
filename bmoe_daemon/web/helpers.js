// Helpers (subagents): the agent's `task` cards and the helper's own transcript.
//
// A helper's items are not the conversation's: they come as the parent's `item` and
// `delta` events with a `task` key naming the card, and whole on the card itself
// (`task.items`, on every change that completes an item and on a GET). HelperItems
// keeps them per card; renderTask draws the card (kind, state, rounds, what it is
// doing now) with its transcript behind Show, drawn by the view as the conversation's
// items are.

import { resultText, stateWord } from "./cards.js";
import { h } from "./dom.js";

export const TASK_TOOL = "task";
// What the card's result says while the helper waits for a slot (actors/subagents.py).
const SLOT_WAIT = "Waiting for a free helper slot.";

const TASK_STATES = {
  waiting: "waiting to start",
  running: "working",
  done: "done",
  error: "failed",
  stopped: "stopped",
};
const CARD_STATES = { composing: "being written", running: "starting", error: "failed", denied: "not started" };
const KINDS = {
  explore: "Explores: reads and searches, changes nothing",
  general: "Works with the agent's tools; its changes ask you here",
};

export function isTask(item) {
  return item.kind === "tool" && item.tool === TASK_TOOL;
}

function isOpenCard(item) {
  return item.kind === "tool" && item.state === "waiting";
}

// The helpers' items of one conversation, by card, as the page knows them.
export class HelperItems {
  constructor() {
    this.cards = new Map(); // card id -> the helper's items, in order
    this.owners = new Map(); // a helper's item id -> its card's id
  }

  items(cardId) {
    return this.cards.get(cardId) || [];
  }

  owner(itemId) {
    return this.owners.get(itemId);
  }

  find(itemId) {
    const card = this.owners.get(itemId);
    return card ? this.items(card).find((i) => i.id === itemId) : undefined;
  }

  // The helpers' cards that wait on the person.
  waiting() {
    return [...this.cards.values()].flat().filter(isOpenCard);
  }

  // What the card carries is the helper's transcript as of its event (or a GET). An
  // item `newer(id)` says an event touched while that GET travelled stays as this page has it.
  take(card, newer = null) {
    if (!card.task) return;
    const before = new Map(this.items(card.id).map((i) => [i.id, i]));
    const given = card.task.items || [];
    const items = given.map((i) => (newer && newer(i.id) && before.has(i.id) ? before.get(i.id) : { ...i }));
    if (newer) {
      const ids = new Set(given.map((i) => i.id));
      for (const [id, i] of before) if (newer(id) && !ids.has(id)) items.push(i);
    }
    this.set(card.id, items);
  }

  // After a GET: the cards read (`items`) are all there are.
  sync(items, touched) {
    const cards = items.filter(isTask);
    const ids = new Set(cards.map((c) => c.id));
    for (const id of [...this.cards.keys()]) if (!ids.has(id)) this.set(id, null);
    for (const card of cards) {
      // a card an event touched keeps its transcript as the events left it
      if (!touched.has(card.id) || !this.cards.has(card.id)) this.take(card, (id) => touched.has(id));
    }
  }

  set(cardId, items) {
    for (const i of this.items(cardId)) this.owners.delete(i.id);
    if (!items) {
      this.cards.delete(cardId);
      return;
    }
    this.cards.set(cardId, items);
    for (const i of items) this.owners.set(i.id, cardId);
  }

  upsert(cardId, item) {
    const items = this.cards.get(cardId) || [];
    const at = items.findIndex((i) => i.id === item.id);
    if (at >= 0) items[at] = item;
    else items.push(item);
    this.cards.set(cardId, items);
    this.owners.set(item.id, cardId);
  }

  // A `delta` event grows one of a helper's answers; the item it grew, or null.
  delta(data) {
    const item = this.find(data.item);
    if (!item) return null;
    if (data.text) item.text = (item.text || "") + data.text;
    if (data.reasoning) item.reasoning = (item.reasoning || "") + data.reasoning;
    return item;
  }
}

// A helper's item is drawn inside its card: its `data-key` (a fold kept open) and
// `data-focus` (the keyboard's place) are made its own, so the card, drawn again
// whole, finds each where it was.
export function scoped(el, itemId) {
  for (const node of [el, ...el.querySelectorAll("[data-key], [data-focus]")]) {
    if (node.dataset.key) node.dataset.key = `${itemId}:${node.dataset.key}`;
    if (node.dataset.focus) node.dataset.focus = `${itemId}:${node.dataset.focus}`;
  }
  el.dataset.item = itemId;
  return el;
}

// The message the helper was given (its task, or a later message).
export function renderTaskMessage(item, first) {
  return h("div.item.helper-message", { role: "note", "aria-label": first ? "The helper's task" : "A message to the helper" },
    h("span.helper-message-label", {}, first ? "Task" : "Message"),
    h("div.text", {}, item.text || ""));
}

// What the helper is doing, in a few words: the last thing in its transcript.
function nowLine(items) {
  for (let i = items.length - 1; i >= 0; i--) {
    const it = items[i];
    if (it.kind === "tool") return it.state === "waiting" ? `${it.title || it.tool}: waiting for you` : it.title || it.tool;
    if (it.kind === "assistant" && it.streaming) return it.text ? "Writing its answer…" : "Thinking…";
    if (it.kind === "user") return "Reading the task…";
  }
  return null;
}

function stepCount(items) {
  const n = items.filter((i) => i.kind !== "assistant" || i.text).length;
  return n === 1 ? "1 item" : `${n} items`;
}

// The card of a `task` call. `items`: the helper's, as HelperItems keeps them; `open`:
// its transcript is shown (`drawn`: those items drawn by the view); `onToggle()`.
export function renderTask(item, { items, open, drawn, onToggle }) {
  const task = item.task || null;
  const state = item.state || "running";
  const taskState = task ? task.state : null;
  const description = task ? task.description : (item.args || {}).description;
  const waiting = items.some(isOpenCard);
  const logId = `helper-log-${item.id}`;
  const badge = waiting ? ["waiting", "waiting for your answer"]
    : taskState ? [taskState, TASK_STATES[taskState] || taskState]
      : [state, stateWord(item, CARD_STATES)];
  const parts = [];
  if (task && taskState === "waiting" && item.result === SLOT_WAIT) {
    parts.push(h("p.helper-wait", {}, "Waiting for a free helper slot: a few helpers work at once, the others wait their turn."));
  }
  const now = taskState === "running" && !open ? nowLine(items) : null;
  if (now) parts.push(h("p.helper-now", { "aria-live": "off" }, h("span.label", {}, "Now: "), now));
  if (items.length) {
    parts.push(h("button.quiet.helper-toggle", { type: "button", "aria-expanded": String(open), "aria-controls": logId,
      "data-focus": "helper-toggle", hidden: waiting, onclick: onToggle },
    open ? "Hide the helper's work" : `Show the helper's work (${stepCount(items)})`));
  }
  if (open && items.length) {
    parts.push(h("section.helper-log", { id: logId, "aria-label": `What the helper did: ${description || "its task"}` }, drawn));
  }
  if (item.result && item.result !== SLOT_WAIT && state !== "running") {
    parts.push(h("details.result", { "data-key": "result" },
      h("summary", {}, state === "error" || state === "denied" ? "Why" : "What the agent read back"), h("pre", { tabindex: "0" }, resultText(item))));
  }
  const rounds = task && task.rounds ? h("span.small.muted.helper-rounds", {}, task.rounds === 1 ? "1 round" : `${task.rounds} rounds`) : null;
  const kind = task ? task.kind : (item.args || {}).subagent_type || "explore";
  return h(`article.item.card.tool.helper.state-${waiting ? "waiting" : state}`, {
    "aria-label": item.title || "Helper", "data-state": state, "data-task-state": taskState || "", tabindex: "-1",
  },
  h("header.card-head", {},
    h("span.helper-label", {}, "Helper"),
    h(`span.badge.helper-kind.kind-${kind}`, { title: KINDS[kind] || "" }, kind),
    h("span.helper-description", {}, description || "…"),
    h("span.spacer"),
    rounds,
    h(`span.badge.tool-state.state-${badge[0]}`, {}, badge[1])),
  parts);
}
