// The approval pinned above the message box: while a call waits on the person, a
// compact copy of its card (what it asks: the tool's title, and its command, how much
// its change adds and removes, or its arguments) with Approve, Deny and a reason for
// the Deny that the agent reads, and Always allow with the rules the card offers (the
// narrowest first, each in words of how much it covers; no shortcut widens anything). The card in the log stays as it is; both answer
// through the view (waiting.js holds this copy). With several waiting, the oldest is pinned.
//
// Approve and Deny have keyboard shortcuts that work anywhere in the conversation but
// in a text field. They take a modifier (Alt+Shift): a single letter typed by mistake,
// or by a voice control that types words, must never approve a command.

import { alertLine, clear, h } from "./dom.js";
import { alwaysControls, PLAN_TOOL, ruleBody } from "./cards.js";
import { TASK_TOOL } from "./helpers.js";
import { limits } from "./limits.js";
import { ASK_USER } from "./run.js";

export const SHORTCUTS = { approve: "Alt+Shift+A", deny: "Alt+Shift+D" };
const BY_KEY = { a: "approve", d: "deny" };
const BY_CODE = { KeyA: "approve", KeyD: "deny" };
const ARGS_CHARS = 300;
// Cards answered in their own way: a question, a plan, a helper's task.
const OWN_WAY = new Set([ASK_USER, PLAN_TOOL, TASK_TOOL]);
// Inputs one does not type text into: a shortcut's letter is not theirs.
const NOT_TYPED = new Set(["button", "checkbox", "color", "file", "image", "radio", "range", "reset", "submit"]);

export function isOpenApproval(item) {
  return item.kind === "tool" && item.state === "waiting" && !OWN_WAY.has(item.tool);
}

function linesText(n, what) {
  return `${n.toLocaleString("en")} ${n === 1 ? "line" : "lines"} ${what}`;
}

// What the call asks, in a line.
export function askSummary(item) {
  const args = item.args || {};
  if (typeof args.command === "string" && args.command) return `$ ${args.command}`;
  if (item.diff) {
    let added = 0;
    let removed = 0;
    for (const line of item.diff.split("\n")) {
      if (line.startsWith("+++") || line.startsWith("---")) continue;
      if (line.startsWith("+")) added++;
      else if (line.startsWith("-")) removed++;
    }
    return `The change: ${linesText(added, "added")}, ${linesText(removed, "removed")}`;
  }
  const text = Object.keys(args).length ? JSON.stringify(args) : item.raw_args || "";
  return text.length > ARGS_CHARS ? `${text.slice(0, ARGS_CHARS)}…` : text;
}

function typesText(el) {
  if (!el) return false;
  if (el.isContentEditable || el.tagName === "TEXTAREA" || el.tagName === "SELECT") return true;
  return el.tagName === "INPUT" && !NOT_TYPED.has(el.type);
}

// The decision a key press asks for ("approve", "deny"), or null: not a shortcut, or
// the keyboard is in a text field or a dialog, where the keys are that place's.
export function shortcutOf(ev) {
  if (!ev.altKey || !ev.shiftKey || ev.ctrlKey || ev.metaKey || ev.isComposing || ev.repeat) return null;
  if (typesText(document.activeElement) || document.querySelector("dialog[open]")) return null;
  const key = (ev.key || "").toLowerCase();
  // The letter the key types; where Alt makes it another character (a Mac's Option),
  // the key's place.
  return /^[a-z]$/.test(key) ? BY_KEY[key] || null : BY_CODE[ev.code] || null;
}

// How a shortcut is written for the person: a Mac's keys by their signs.
function keysText(keys) {
  const platform = navigator.userAgentData?.platform || navigator.platform || "";
  return /mac/i.test(platform) ? keys.replace("Alt+", "⌥").replace("Shift+", "⇧") : keys;
}

export class PinnedApproval {
  // `onDecide(item, decision, reason, rule)`; `onPick(item, i)`: another offered rule
  // picked; `onShow(item)`: to the card in the log.
  constructor({ onDecide, onPick, onShow }) {
    this.onDecide = onDecide;
    this.onPick = onPick;
    this.onShow = onShow;
    this.item = null;
    this.kept = null;
    this.shown = "";
    this.element = h("section.pinned-approval", { "aria-labelledby": "pinned-title", hidden: true, tabindex: "-1",
      "data-focus": "region" });
  }

  holds(el = document.activeElement) {
    return this.element.contains(el);
  }

  // `cards`: the calls waiting on the person, oldest first; `kept`: what the view keeps
  // for the first ({draft, busy, error}). Drawn again only when something shown
  // changed, so the reason being typed keeps its caret; the keyboard keeps its place.
  render(cards, kept) {
    const item = cards[0] || null;
    const key = item ? JSON.stringify([item.id, item.title, askSummary(item), cards.length, kept.busy, kept.error || "",
      item.rules || item.rule || null, kept.draft.ruleAt || 0]) : "";
    if (key === this.shown) return;
    this.shown = key;
    const held = this.holds() ? document.activeElement : null;
    const place = held ? held.dataset.focus : null;
    const caret = held && held.tagName === "INPUT" ? [held.selectionStart, held.selectionEnd] : null;
    this.item = item;
    this.kept = kept;
    this.element.hidden = !item;
    clear(this.element, item ? this.draw(item, cards.length, kept) : null);
    const again = place ? this.element.querySelector(`[data-focus="${place}"]`) : null;
    if (again) {
      again.focus({ preventScroll: true });
      if (caret) again.setSelectionRange(...caret);
    }
  }

  focus() {
    this.element.querySelector("[data-focus=approve]")?.focus();
  }

  // The keyboard on the region itself: read out whole, Tab goes on to Approve.
  focusRegion() {
    if (this.item) this.element.focus();
  }

  // Approve or deny the pinned card (a shortcut, a button); nothing while an answer is on its way.
  decide(decision, rule = null) {
    if (!this.item || this.kept.busy) return;
    this.onDecide(this.item, decision, decision === "deny" ? this.kept.draft.text.trim() : "", rule);
  }

  draw(item, count, { draft, busy, error }) {
    const title = item.title || item.tool || "Tool";
    const reasonId = `pinned-reason-${item.id}`;
    const hintId = "pinned-reason-hint";
    // Not `disabled` while the answer travels: the keyboard stays where it is.
    const busyAttr = busy ? "true" : null;
    const reason = h("input.pinned-reason", { id: reasonId, type: "text", autocomplete: "off", value: draft.text,
      readonly: busy, maxlength: String(limits.feedback.max), "data-focus": "reason", "aria-describedby": hintId,
      placeholder: "What to do instead (optional)" });
    reason.addEventListener("input", () => (draft.text = reason.value));
    const button = (cls, decision, text, type) => h(`button.${cls}`, { type, "data-focus": decision,
      "aria-keyshortcuts": SHORTCUTS[decision], "aria-disabled": busyAttr,
      onclick: type === "button" ? () => this.decide(decision) : null },
    text, h("kbd.shortcut", { "aria-hidden": "true" }, keysText(SHORTCUTS[decision])));
    const form = h("form.pinned-actions", { "aria-label": `Approve or deny: ${title}` },
      button("primary", "approve", "Approve", "button"),
      button("danger", "deny", "Deny", "submit"),
      h("label.pinned-reason-label", { for: reasonId }, "Reason"),
      reason,
      h("small.visually-hidden", { id: hintId }, "Goes with Deny: the agent reads it."));
    // not disabled while the answer travels (the keyboard stays): decide() waits for it
    const { controls, hint } = alwaysControls(item, { draft, busy: false, hintId: `pinned-rule-hint-${item.id}`,
      onAlways: (rule) => this.decide("approve_always", ruleBody(rule)), onPick: (i) => this.onPick(item, i) });
    const always = controls ? h("div.pinned-always", { role: "group", "aria-label": "Always allow" }, controls) : null;
    // Deny is the form's own button: Enter in the reason sends it.
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.decide("deny");
    });
    return [
      h("div.pinned-head", {},
        h("p.pinned-title#pinned-title", {},
          h("span.pinned-label", {}, "Waiting for your approval: "),
          h("span.tool-title", {}, title)),
        count > 1 ? h("span.badge.pinned-count", {}, `1 of ${count}`) : null,
        h("span.spacer"),
        h("button.link.pinned-show", { type: "button", "data-focus": "show", onclick: () => this.onShow(item) },
          "Show the card")),
      h("p.pinned-what", { title: askSummary(item) }, askSummary(item)),
      form,
      always,
      hint,
      alertLine(error),
    ];
  }
}
