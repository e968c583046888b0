// What the answers used and cost (GET /api/usage, summed from the daemon's usage
// ledger): the totals by provider on the providers page, and a conversation's own in
// its header beside its budget, which the header sets, changes or removes (PATCH).
// A cost is in US dollars at the prices entered on a provider; a provider without
// prices has none ("no prices"), never a guessed one; the local model costs nothing.

import { api } from "./api.js";
import { alertLine, clear, field, h, select } from "./dom.js";
import { limits } from "./limits.js";
import { problem } from "./ui.js";

const num = (n) => Number(n).toLocaleString("en");

// Dollars and cents; below a dollar to a hundredth of a cent, as far as it has digits
// ($0.25, $0.004, $0.0041).
export function costText(cost) {
  if (cost === null || cost === undefined) return "";
  return `$${cost === 0 || cost >= 1 ? cost.toFixed(2) : cost.toFixed(4).replace(/0{1,2}$/, "")}`;
}

// The two sides of a group (local and provider routes) as one.
function both(group) {
  const { local, provider } = group;
  return {
    answers: local.answers + provider.answers,
    tokens: local.tokens + provider.tokens,
    cost: provider.cost,
    unpriced: provider.unpriced_answers,
  };
}

// "1,234 tokens · $0.0123", with what could not be priced.
export function sumsText(sums) {
  let text = `${num(sums.tokens)} tokens`;
  if (sums.cost !== null) text += ` · ${costText(sums.cost)}`;
  if (sums.unpriced) text += ` (${num(sums.unpriced)} answers without prices)`;
  return text;
}

function localDay(offsetDays) {
  const d = new Date();
  d.setDate(d.getDate() - offsetDays);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}`;
}

const PERIODS = [["", "All time"], ["0", "Today"], ["6", "Last 7 days"], ["29", "Last 30 days"]];

function cell(sums, key) {
  return h("td.num", {}, sums.answers ? num(sums[key]) : "–");
}

function costCell(group) {
  if (group.key === "local") return h("td.num.muted", {}, "free: runs here");
  const p = group.provider;
  if (p.cost === null) return h("td.num.muted", {}, "no prices");
  return h("td.num", {}, costText(p.cost) + (p.unpriced_answers ? ` (+${num(p.unpriced_answers)} unpriced)` : ""));
}

// The providers page's "Usage" section: a table by provider (this computer's model
// among them) since the period picked.
export function usageTotals() {
  const period = select({ "aria-label": "Usage period", class: "usage-period" }, PERIODS, "");
  // It scrolls sideways on a narrow screen: the keyboard can reach it to scroll it.
  const table = h("div.usage-table", { tabindex: "0", role: "region", "aria-label": "Usage by provider, scrollable" });
  const error = alertLine("");
  const section = h("section.usage", { "aria-labelledby": "usage-title" },
    h("div.usage-head", {}, h("h2#usage-title", {}, "Usage"), period),
    h("p.small.muted", {}, "Tokens the answers used, and what they cost at the prices entered on each provider."),
    error, table);
  section.load = async () => {
    const query = period.value === "" ? "" : `&since=${localDay(Number(period.value))}`;
    let report;
    try {
      report = await api("GET", `/api/usage?by=provider${query}`);
    } catch (err) {
      error.textContent = problem(err);
      error.hidden = false;
      return;
    }
    error.hidden = true;
    const total = both(report);
    clear(table,
      report.groups.length ? h("table", { "aria-label": "Usage by provider" },
        h("thead", {}, h("tr", {}, ["Provider", "Answers", "Prompt", "Cached", "Completion", "Cost"].map((t) =>
          h("th", { scope: "col" }, t)))),
        h("tbody", {}, report.groups.map((g) => {
          const s = g.key === "local" ? g.local : g.provider;
          return h("tr", { "data-key": g.key },
            h("th", { scope: "row" }, g.label || g.key),
            cell(s, "answers"), cell(s, "prompt_tokens"), cell(s, "cached_tokens"), cell(s, "completion_tokens"),
            costCell(g));
        }))) : h("p.muted", {}, "No answers in this period."),
      report.groups.length ? h("p.usage-total", { role: "status" }, `In all: ${num(total.answers)} answers, `
        + sumsText(total)) : null);
  };
  period.addEventListener("change", () => section.load());
  return section;
}

// ---- a conversation's own, in its header ----

// "5,000 tokens or $0.25": what a budget lets the answers spend ("" for none).
export function budgetText(budget) {
  if (!budget) return "";
  const parts = [];
  if (budget.tokens !== null) parts.push(`${num(budget.tokens)} tokens`);
  if (budget.cost !== null) parts.push(costText(budget.cost));
  return parts.join(" or ");
}

// The header's usage line: "1,234 tokens · $0.01 of a budget of $0.50", with Budget to
// set it. `view` is the conversation's (conversation.js): its `info`, `path`, and
// `patch` to change the conversation. Hidden where the daemon does not say (a client
// on the network is refused the ledger).
export class ConversationUsage {
  constructor(view, patch) {
    this.view = view;
    this.patch = patch;
    this.sums = null;
    this.editing = false;
    this.textEl = h("span.conv-usage-text", { role: "status", "aria-label": "Usage of this conversation" });
    this.button = h("button.quiet.small", { type: "button", onclick: () => this.edit(!this.editing) }, "Budget");
    this.formEl = h("div.budget-form-box");
    this.element = h("span.conv-usage", { hidden: true }, this.textEl, this.button, this.formEl);
  }

  // Read on every answer and run's end: reads under way at once may answer out of
  // order, and only the last one asked is shown (an earlier one counts less).
  async read() {
    const id = this.view.conversationId;
    const serial = (this.serial = (this.serial || 0) + 1);
    let sums = null;
    try {
      sums = both(await api("GET", `/api/usage?by=conversation&conversation=${encodeURIComponent(id)}`));
    } catch {
      sums = null;
    }
    if (serial !== this.serial) return;
    this.sums = sums;
    if (!this.view.closed) this.render();
  }

  render() {
    const budget = this.view.info ? this.view.info.budget : null;
    this.element.hidden = this.sums === null;
    if (this.sums === null) return;
    const of = budgetText(budget);
    this.textEl.textContent = sumsText(this.sums) + (of ? ` · budget ${of}` : "");
    this.textEl.title = "What this conversation's answers used"
      + (of ? `; a run ends once they reach ${of}.` : "; it has no budget.");
  }

  edit(open) {
    this.editing = open;
    this.button.setAttribute("aria-expanded", String(open));
    clear(this.formEl, open ? this.form() : null);
  }

  form() {
    const budget = (this.view.info && this.view.info.budget) || { tokens: null, cost: null };
    const tb = limits.budget_tokens || { min: 1 };
    const tokens = h("input", { type: "number", min: String(tb.min), max: tb.max ? String(tb.max) : null, step: "1",
      inputmode: "numeric", value: budget.tokens === null ? "" : String(budget.tokens) });
    const cost = h("input", { type: "number", min: "0", step: "0.01", inputmode: "decimal",
      value: budget.cost === null ? "" : String(budget.cost) });
    const error = alertLine("");
    const save = async (value) => {
      try {
        await this.patch({ budget: value });
      } catch (err) {
        error.textContent = problem(err);
        error.hidden = false;
        return;
      }
      this.edit(false);
      this.render();
      this.button.focus();
    };
    // The daemon's words say what a budget takes (novalidate: the browser's own would not).
    const form = h("form.budget-form", { "aria-label": "Budget of this conversation", novalidate: true },
      field("Tokens", tokens, "Prompt and completion tokens; empty for no limit."),
      field("Cost (US$)", cost, "At the provider's prices; empty for no limit."),
      error,
      h("div.actions", {},
        h("button.primary", { type: "submit" }, "Save budget"),
        budget.tokens !== null || budget.cost !== null
          ? h("button.quiet", { type: "button", onclick: () => save(null) }, "Remove budget") : null,
        h("button.quiet", { type: "button", onclick: () => this.edit(false) }, "Cancel")));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      const t = tokens.value.trim();
      const c = cost.value.trim();
      save(t || c ? { tokens: t ? Number(t) : null, cost: c ? Number(c) : null } : null);
    });
    queueMicrotask(() => tokens.focus());
    return form;
  }
}
