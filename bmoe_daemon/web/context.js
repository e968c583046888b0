// The context bar above the message box: how much of the model's context the last
// round's prompt used (of its size, with the percentage; it fills as the conversation
// grows, and warns as it nears the point where the daemon summarises by itself), and
// Compact, which asks the daemon to summarise what is before the last message now
// (POST .../compact). The daemon's refusal (a run is on) is said beside the button.
//
// It reads and changes the conversation through its view (conversation.js), as the
// header does.

import { api } from "./api.js";
import { alertLine, h } from "./dom.js";
import { limits } from "./limits.js";
import { problem } from "./ui.js";

// Past limits.compaction.at (a share of the context) the daemon summarises before the
// next round; the bar warns a little before, from this share.
const WARN_AT = 0.7;

function tokens(n) {
  return n.toLocaleString("en");
}

// "16%", "<1%" for a sliver, never more than 100%.
export function percentText(used, size) {
  if (!size || used <= 0) return "0%";
  const share = Math.min(1, used / size) * 100;
  return share < 1 ? "<1%" : `${Math.round(share)}%`;
}

export class ContextBar {
  constructor(view) {
    this.view = view;
    this.busy = false; // the request is on its way
    this.asked = false; // the compaction this page asked for runs
    this.outrun = false; // it began and ended on the stream before the daemon's reply came
    this.error = "";
    this.fill = h("span.context-fill");
    this.meter = h("span.context-meter", { role: "meter", "aria-label": "Context used", "aria-valuemin": "0" }, this.fill);
    this.text = h("span.context-text#context-text");
    this.button = h("button.quiet.compact", { type: "button", "aria-describedby": "compact-hint",
      onclick: () => this.compact() }, "Compact");
    this.hint = h("span.visually-hidden#compact-hint", {},
      "Summarise the conversation before the last message for the model; you still see every item.");
    this.errorEl = alertLine("");
    this.element = h("div.context-bar", { role: "group", "aria-label": "Context" },
      h("span.context-label", {}, "Context"), this.meter, this.text, h("span.spacer"), this.button, this.hint,
      this.errorEl);
  }

  // A new state: a refusal spoke of the run before, and a compaction asked for is over.
  // The stream and the request are two connections: the compaction's run may begin, and
  // even end, before the reply to the request comes. The button follows the stream, so
  // it never says "Compacting…" beside the notice of a compaction done.
  stateChanged() {
    this.error = "";
    if (this.busy && this.view.running) this.asked = true;
    else if (this.busy && this.asked) this.outrun = true;
    if (!this.view.running) this.asked = false;
    this.render();
  }

  render() {
    const { info, items } = this.view;
    const builtin = Boolean(info) && (info.agent || "builtin") === "builtin";
    const context = info && info.context;
    this.element.hidden = !context && !(builtin && items.length);
    if (this.element.hidden) return;
    const used = context ? context.used : 0;
    const size = context ? context.size : 0;
    const share = size ? Math.min(1, used / size) : 0;
    const pct = percentText(used, size);
    const compactsAt = limits.compaction.at;
    this.fill.style.width = `${share * 100}%`;
    this.element.classList.toggle("context-warn", share >= WARN_AT && share < compactsAt);
    this.element.classList.toggle("context-full", share >= compactsAt);
    if (context) {
      this.meter.setAttribute("aria-valuemax", String(size));
      this.meter.setAttribute("aria-valuenow", String(Math.min(used, size)));
      this.meter.setAttribute("aria-valuetext", `${pct}: ${tokens(used)} of ${tokens(size)} tokens`);
      this.text.textContent = `${tokens(used)} of ${tokens(size)} tokens · ${pct}`;
      this.element.title = `The last round sent the model ${tokens(used)} of the ${tokens(size)} tokens its context holds. `
        + `Past ${Math.round(compactsAt * 100)}% the daemon summarises earlier items before the next round.`;
    } else {
      // A meter must have a value: none measured reads as 0, its text says why.
      this.meter.setAttribute("aria-valuenow", "0");
      this.meter.setAttribute("aria-valuetext", "not measured yet");
      this.text.textContent = "Not measured yet: the next round counts it.";
      this.element.title = "";
    }
    this.button.hidden = !builtin;
    const working = (this.busy && !this.outrun) || (this.asked && this.view.running);
    this.button.textContent = working ? "Compacting…" : "Compact";
    // Not `disabled`: the keyboard stays on it, and pressed during a run it says why not.
    this.button.setAttribute("aria-disabled", working ? "true" : "false");
    this.errorEl.textContent = this.error;
    this.errorEl.hidden = !this.error;
  }

  async compact() {
    const view = this.view;
    if (this.busy || (this.asked && view.running)) return;
    this.busy = true;
    this.outrun = false;
    this.error = "";
    this.render();
    const seen = view.infoSerial;
    try {
      const info = await api("POST", `${view.path}/compact`, {});
      this.asked = seen === view.infoSerial || view.running; // else it ran and ended already
      // the run may have gone on (even ended) on the stream before this answer came
      if (seen === view.infoSerial && !view.closed) {
        Object.assign(view.info, info);
        view.renderHeader();
        view.updateComposer();
      }
    } catch (err) {
      this.error = problem(err);
      this.asked = false; // refused: a run that began meanwhile is not this compaction
    }
    this.busy = false;
    if (!view.closed) this.render();
  }
}
