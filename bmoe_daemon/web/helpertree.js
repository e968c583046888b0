// The conversation's helpers at a glance, above the message box: each helper (its
// kind, task, state, rounds, whether it works in the background) under the
// conversation's run, as GET /api/conversations/<id>/helpers gives them, drawn from the
// `task` cards the page already keeps live. One working with nothing written for
// the daemon's default (`helper_stall_s` of GET /api/limits) is flagged;
// the flag is looked at again every few seconds. A click goes to the helper's card.
// Helpers in the background work on after the run's answer, when the message box
// offers no Stop: "Stop the helpers" stops them (a stop of the conversation).

import { clear, h, heldBy } from "./dom.js";
import { isTask } from "./helpers.js";
import { limits } from "./limits.js";

const LOOK_MS = 5000;
const STATES = { waiting: "waiting", running: "working", done: "done", error: "failed", stopped: "stopped" };

// The tree's nodes, as the API's `helpers`: from the conversation's task cards.
export function helperNodes(items, nowS = Date.now() / 1000) {
  const stallS = (limits.helper_stall_s || {}).default;
  return items.filter((i) => isTask(i) && i.task).map((i) => {
    const t = i.task;
    const progress = typeof t.progress === "number" ? t.progress : i.created;
    return {
      id: i.id, kind: t.kind || "explore", description: t.description || "", state: t.state || "waiting",
      rounds: t.rounds || 0, background: Boolean(t.background), progress,
      stalled: t.state === "running" && typeof stallS === "number" && nowS - progress > stallS,
    };
  });
}

function ago(seconds) {
  const s = Math.max(0, Math.round(seconds));
  return s < 90 ? `${s} s ago` : `${Math.round(s / 60)} min ago`;
}

export class HelperTree {
  constructor(view) {
    this.view = view;
    this.open = true;
    this.element = h("section.helper-tree", { "aria-labelledby": "helper-tree-title", hidden: true });
    this.timer = setInterval(() => this.render(), LOOK_MS);
    this.renderLater = () => this.closed || this.render(); // a row's button takes its click
  }

  close() {
    clearInterval(this.timer);
    this.closed = true;
  }

  render() {
    if (heldBy(this.element, this.renderLater)) return;
    const nodes = helperNodes(this.view.items || []);
    this.element.hidden = nodes.length === 0;
    if (!nodes.length) return clear(this.element);
    const working = nodes.filter((n) => n.state === "waiting" || n.state === "running").length;
    const stalled = nodes.filter((n) => n.stalled).length;
    const nowS = Date.now() / 1000;
    const rows = nodes.map((n) => h(`li.helper-node.state-${n.state}${n.stalled ? ".stalled" : ""}`, { "data-helper": n.id },
      h("button.quiet.helper-node-go", { type: "button", title: "Go to the helper's card",
        onclick: () => this.view.log.element.querySelector(`[data-item="${CSS.escape(n.id)}"]`)?.scrollIntoView({ block: "center" }) },
      h(`span.badge.helper-kind.kind-${n.kind}`, {}, n.kind),
      h("span.helper-node-description", {}, n.description || "…")),
      n.background ? h("span.small.muted", {}, "background") : null,
      h("span.small.muted", {}, n.rounds === 1 ? "1 round" : `${n.rounds} rounds`),
      h(`span.badge.tool-state.state-${n.state}`, {}, STATES[n.state] || n.state),
      n.stalled ? h("span.helper-stalled", { role: "status" }, `No progress since ${ago(nowS - n.progress)}`) : null));
    const count = `${nodes.length} ${nodes.length === 1 ? "helper" : "helpers"}${working ? `, ${working} working` : ""}`;
    const fold = h("details.todos-fold.helper-tree-fold", { open: this.open, ontoggle: (e) => (this.open = e.target.open) },
      h("summary", {},
        h("span.todos-title#helper-tree-title", {}, "Helpers"),
        h("span.todo-count", {}, count),
        stalled ? h("span.helper-stalled", {}, stalled === 1 ? "1 without progress" : `${stalled} without progress`) : null),
      h("ul.helper-nodes", { "aria-label": "The conversation's run and its helpers" }, rows),
      working && !this.view.running
        ? h("button.quiet.helper-stop", { type: "button", onclick: () => this.view.stop() }, "Stop the helpers") : null);
    const held = this.element.contains(document.activeElement);
    clear(this.element, fold);
    if (held) fold.querySelector("summary").focus();
  }
}
