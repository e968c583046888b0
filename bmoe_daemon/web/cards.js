// The items of a conversation: the person's messages (with Edit), the agent's
// answers (with Copy, Regenerate on the last one, and what each cost in tokens), each
// with "Fork from here", and
// the cards of its calls and its notices: a tool card (its diff, command or
// arguments; Approve, Always allow with the rules the daemon offers, the narrowest
// first and each said in words of how much it covers, Deny; the rule that let it run
// without a card), the plan card (the plan in Markdown, its
// revision, Approve, Reject with a feedback box) and a notice, with a compaction's
// fold over the items it summarised. A helper's task card is helpers.js's.
//
// Pure drawing, as run.js: each function takes the item and what the view keeps for
// it (an action on its way, the daemon's refusal, a draft) and answers an element.

import { alertLine, h, sizeText, timeStamp } from "./dom.js";
import { renderDiff, renderMarkdown } from "./markdown.js";

export const PLAN_TOOL = "exit_plan_mode";

// Rendered Markdown in its box. A code block scrolls sideways: it takes the keyboard's
// focus, so arrow keys scroll it too.
function markdownBox(tag, text) {
  const box = h(tag, { html: renderMarkdown(text) });
  for (const pre of box.querySelectorAll("pre")) pre.tabIndex = 0;
  return box;
}

const TOOL_STATES = {
  composing: "writing the call",
  running: "running",
  waiting: "waiting for your answer",
  waiting_client: "waiting for the app",
  done: "done",
  denied: "denied",
  error: "error",
};
const PLAN_STATES = {
  composing: "being written",
  running: "showing",
  waiting: "waiting for your approval",
  done: "approved",
  denied: "rejected",
  error: "not shown",
};
// Who ended a card that did not run (`ended_by`), in the words every card uses: the
// person's stop is "stopped", the daemon's stop or a cut round "not run", and only a
// no (the person's, a rule's) is the card's own word for denied.
const ENDED_WORDS = { stop: "stopped", daemon: "not run", cut: "not run" };

export function stateWord(item, words) {
  const state = item.state || "running";
  if ((state === "denied" || state === "error") && ENDED_WORDS[item.ended_by]) return ENDED_WORDS[item.ended_by];
  return words[state] || state;
}

// What the person reads of a card's result: their own words when the result is the
// model's (a refusal, a result with the model's note first).
export function resultText(item) {
  return item.person_text || item.result || "";
}

// What the person reads of a notice: the model's notices have their own words beside.
export function noticeText(item) {
  return item.person_text || (item.for_model ? "" : item.text || "");
}

const NOTICE_LABELS = { info: "Note", warn: "Warning", error: "Error" };
// Calls whose rule is a command's words (another agent's `execute` too); the others'
// rule is about files of the workspace. Only for a card kept before cards offered
// several rules (`rules`), whose one `rule` is a folder or a command's first words.
const COMMAND_TOOLS = new Set(["exec_shell_command", "execute"]);
// The starts of a plan card's results (actors/plans.py).
const APPROVED = "The plan is approved";
const REJECTED = "The person rejected the plan.";
const SAID = /They said: ([\s\S]*?) Revise the plan file/;

export function isOpenPlan(item) {
  return item.kind === "tool" && item.tool === PLAN_TOOL && item.state === "waiting";
}

// The rules a waiting card offers, narrowest first ({kind, text, exact, covers}).
export function ruleChoices(item) {
  if (Array.isArray(item.rules) && item.rules.length) return item.rules;
  if (!item.rule) return [];
  const command = COMMAND_TOOLS.has(item.tool) || typeof (item.args || {}).command === "string";
  const covers = command ? "commands" : item.rule === "./" ? "workspace" : "folder";
  return [{ kind: command ? "command" : "path", text: item.rule, exact: false, covers, legacy: true }];
}

// How much a rule covers, short (a choice's label) and in a sentence (its hint).
export function ruleWords(rule) {
  switch (rule.covers) {
    case "file": return `Only this file: ${rule.text}`;
    case "folder": return `Any file in ${rule.text} and its subfolders`;
    case "workspace": return "Any file in this workspace";
    case "command": return `Only this exact command: ${rule.text}`;
    default: return `Any command that starts with “${rule.text}”`;
  }
}

export function ruleHint(rule) {
  switch (rule.covers) {
    case "file": return `Always allow: changes to the file “${rule.text}” run without asking in this workspace; other files still ask.`;
    case "folder": return `Always allow: changes to any file in “${rule.text}” (and its subfolders) run without asking in this workspace.`;
    case "workspace": return "Always allow: changes to any file in this workspace run without asking.";
    case "command": return `Always allow: exactly “${rule.text}” runs without asking in this workspace; any other command still asks.`;
    default: return `Always allow: commands that start with “${rule.text}” run without asking in this workspace, as one simple command that stays inside it.`;
  }
}

// The rule picked on a card (`draft.ruleAt`, the narrowest until another is picked),
// and what the approval sends for it (nothing for a card kept before cards offered several).
export function pickedRule(item, draft) {
  const choices = ruleChoices(item);
  return choices[Math.min(draft?.ruleAt || 0, choices.length - 1)] || null;
}

export function ruleBody(rule) {
  return rule && !rule.legacy ? { kind: rule.kind, text: rule.text, exact: rule.exact } : null;
}

// "Always allow" and, where the card offers more than one rule, the choice of how
// much; `onPick(i)` when another is picked. Used by the card and the pinned approval.
export function alwaysControls(item, { draft, busy, hintId, onAlways, onPick, extraClass = "" }) {
  const choices = ruleChoices(item);
  if (!choices.length) return { controls: null, hint: null };
  const picked = pickedRule(item, draft);
  const at = choices.indexOf(picked);
  const always = h(`button.always${extraClass}`, { type: "button", "data-focus": "always", disabled: busy,
    "aria-describedby": hintId, onclick: () => onAlways(picked) }, "Always allow ", h("code", {}, picked.text));
  const choice = choices.length > 1
    ? h("select.rule-choice", { "data-focus": "rule-choice", disabled: busy, "aria-label": "What to always allow",
      onchange: (ev) => onPick(Number(ev.target.value)) },
    choices.map((rule, i) => h("option", { value: String(i), selected: i === at ? true : null }, ruleWords(rule))))
    : null;
  return { controls: [always, choice], hint: h("small.hint.rule-hint", { id: hintId }, ruleHint(picked)) };
}

function rulesLink(workspace) {
  return workspace ? h("a.rules-link", { href: `#/workspaces/${encodeURIComponent(workspace)}` }, "workspace rules") : null;
}

// ---- messages ----

// "Fork from here": a new conversation with the items up to this one (null: none, a
// helper's item).
function forkButton(onFork) {
  return onFork ? h("button.quiet.fork", { type: "button", "data-focus": "fork", onclick: onFork,
    title: "A new conversation with everything up to here; this one stays as it is" }, "Fork from here") : null;
}

// `editing`: the message is being edited (a form instead of the bubble); `busy`: a run
// is on (no edit then); `onEdit()`, `onCancel()`, `onResend(text)`, `onFork()`;
// `changed`: how many files the message's run changed (0: none), seen at `changesHref`.
export function renderUser(item, { editing, busy, onEdit, onCancel, onResend, onFork, changed = 0, changesHref }) {
  if (editing) {
    const area = h("textarea", { "aria-label": "Edit message", rows: "3", value: item.text || "" });
    const form = h("form.item.user.editing", { "aria-label": "Edit your message" }, area,
      h("div.actions", {},
        h("button.primary", { type: "submit" }, "Send again"),
        h("button.quiet", { type: "button", onclick: onCancel }, "Cancel")),
      h("small.hint", {}, "Sending again drops this message and everything after it."));
    area.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (area.value.trim()) onResend(area.value.trim());
    });
    setTimeout(() => area.focus(), 0);
    return form;
  }
  return h("article.item.user", { "aria-label": "Your message" },
    h("div.bubble", {},
      h("div.text", {}, item.text || ""),
      (item.images || []).length
        ? h("div.images", {}, item.images.map((src, i) => h("img", { src, alt: `Image ${i + 1}` })))
        : null),
    h("div.item-actions", {},
      timeStamp(item.created),
      changed ? h("a.run-changed", { href: changesHref, "data-focus": "changes" },
        `${changed} ${changed === 1 ? "file" : "files"} changed`) : null,
      h("button.quiet.edit", { type: "button", disabled: busy, onclick: onEdit,
        "aria-label": "Edit this message and send it again", "data-focus": "edit" }, "Edit"),
      forkButton(onFork)));
}

// What an answer cost, as the backend counted it: a small line under it.
// `rate`: tokens a second this page saw the answer written at (null: not seen).
function usageLine(usage, rate) {
  const n = (v) => (Number.isFinite(v) ? v : 0).toLocaleString("en");
  const cached = usage.cached_tokens ? ` (${n(usage.cached_tokens)} from the cache)` : "";
  return h("p.usage", { title: "Tokens: the prompt the model read for this answer, and what it wrote" },
    h("span.visually-hidden", {}, "Tokens: "),
    `${n(usage.prompt_tokens)} in${cached} · ${n(usage.completion_tokens)} out`,
    rate === null ? "" : ` · ${speed(rate)}`);
}

function speed(rate) {
  return `${rate < 10 ? rate.toFixed(1) : Math.round(rate)} tokens/s`;
}

// What a streaming answer is doing: thinking before its first word, then writing at
// `rate` tokens a second once a second of it has been seen.
function writingLine(item, rate) {
  const begun = item.text || item.reasoning;
  const words = !begun ? "Thinking…" : rate === null ? "Writing…" : `Writing… ${speed(rate)}`;
  return h("p.writing.small.muted", { role: "status", "aria-live": "off" }, words);
}

// What waits for the model while it is loaded again (let go after idle minutes): said
// in the answer's place, so the person knows why the first word is slow to come.
function loadingLine() {
  return h("p.loading-model", { role: "status" }, "Loading the model…",
    h("span.small.muted", {}, " It was let go after idle minutes; the answer starts once it is in memory."));
}

// The model reads the conversation before it writes (a long prompt takes a small
// machine tens of seconds): how far, from the daemon's `prefill` events.
export function renderReadingAnswer({ done, total }) {
  const words = `Reading the conversation… ${done.toLocaleString("en")} / ${total.toLocaleString("en")} tokens`;
  return h("article.item.assistant.streaming.reading", { "aria-label": "Answer", "aria-busy": "true" },
    h("p.reading-prompt", { role: "status" }, words),
    h("progress.reading-progress", { max: String(total), value: String(done), "aria-label": "Read so far" }));
}

// An answer the daemon has not begun yet: what it waits for, in words (`kind`: why).
export function renderWaitingAnswer(words, kind) {
  return h(`article.item.assistant.streaming.pending-${kind}`, { "aria-label": "Answer", "aria-busy": "true" },
    h("p.reading-prompt", { role: "status" }, words), h("span.cursor", { "aria-hidden": "true" }));
}

// An answer the daemon has not begun yet, while the model loads.
export function renderLoadingAnswer() {
  return h("article.item.assistant.streaming", { "aria-label": "Answer", "aria-busy": "true" },
    loadingLine(), h("span.cursor", { "aria-hidden": "true" }));
}

// A finished answer's time, its Copy (its Markdown), on the conversation's last
// answer Regenerate, and Fork from here. `onRegenerate`, `onFork`: null where there is
// none (a helper's answer).
function answerActions(item, { onCopy, onRegenerate, onFork, last, busy }) {
  return h("div.item-actions.answer-actions", {},
    timeStamp(item.created),
    onCopy ? h("button.quiet.copy-answer", { type: "button", "aria-label": "Copy this answer", "data-focus": "copy",
      onclick: (ev) => onCopy(ev.currentTarget) }, "Copy") : null,
    onRegenerate ? h("button.quiet.regenerate", { type: "button", "aria-label": "Regenerate this answer",
      "data-focus": "regenerate", disabled: busy, hidden: !last, onclick: onRegenerate }, "Regenerate") : null,
    forkButton(onFork));
}

// `loadingModel`: the model is being loaded for this answer (it has no words yet);
// `onCopy(button)`, `onRegenerate()`, `last` and `busy`: answerActions'.
export function renderAssistant(item, { loadingModel, rate = null, ...actions } = {}) {
  // An answer the record contradicts is the model's, not the person's: the notice after it says so.
  if (item.not_answer || (!item.text && !item.reasoning && !item.streaming))
    return h("div.item.assistant.empty", { hidden: true });
  if (item.checking) return renderCheckingAnswer(item, rate);
  const streaming = Boolean(item.streaming);
  return h("article.item.assistant", { "aria-label": "Answer", "aria-busy": streaming ? "true" : "false",
    class: streaming ? "streaming" : "" },
    streaming && !item.text && loadingModel ? loadingLine() : null,
    item.reasoning
      ? h("details.reasoning", { "data-key": "reasoning" },
          h("summary", {}, streaming && !item.text ? "Thinking…" : "Reasoning"),
          h("div.reasoning-text", {}, item.reasoning))
      : null,
    item.text ? markdownBox("div.markdown", item.text) : null,
    streaming ? h("span.cursor", { "aria-hidden": "true" }) : null,
    streaming && !(loadingModel && !item.text) ? writingLine(item, rate) : null,
    !streaming && item.text ? answerActions(item, actions) : null,
    !streaming && item.usage ? usageLine(item.usage, rate) : null);
}

// A small model's answer is checked against what the run did before it is shown (a
// change it claims, a file it names): until then its words are not shown as the answer.
function renderCheckingAnswer(item, rate) {
  const streaming = Boolean(item.streaming);
  return h("article.item.assistant.streaming.checking", { "aria-label": "Answer", "aria-busy": "true" },
    h("p.checking-answer.muted", { role: "status" },
      streaming ? "Writing the answer. It is checked against what was done before it is shown."
        : "Checking the answer against what was done…"),
    streaming ? writingLine(item, rate) : null);
}

// ---- tool cards ----

// `workspace`: the conversation's (for the preview and the rules' page); `busy`: an
// answer is on its way; `error`: the daemon's refusal of the last one; `draft`: what
// is picked on it (`ruleAt`: which offered rule); `onDecide(decision, rule)`: approve,
// approve_always (with the rule picked) or deny; `onPick(i)`: another rule picked.
// `noApp`: no app answers the conversation's tool calls now (a call of one waits in vain).
export function renderTool(item, { workspace, busy, error, draft, onDecide, onPick, onPreview, noApp }) {
  const state = item.state || "running";
  const args = item.args || {};
  const title = item.title || item.tool || "Tool";
  const parts = [];
  if (item.allowed_by) {
    parts.push(h("p.allowed-by", {}, "Allowed by rule ", h("code", {}, item.allowed_by),
      workspace ? [" · ", rulesLink(workspace)] : null));
  }
  if (item.diff) {
    parts.push(h("pre.diff", { "aria-label": "The change", tabindex: "0", html: renderDiff(item.diff) }));
  } else if (item.tool === "exec_shell_command" && args.command) {
    parts.push(h("pre.command", { "aria-label": "The command", tabindex: "0" }, `$ ${args.command}`));
    if (args.outside_sandbox === true) { // always a card: it runs with everything your account can reach
      parts.push(h("p.small.outside-sandbox", {}, h("strong", {}, "Outside the sandbox: "), String(args.reason || "")));
    }
  } else if (Object.keys(args).length && (state === "waiting" || state === "waiting_client")) {
    parts.push(h("pre.args", { "aria-label": "The arguments", tabindex: "0" }, JSON.stringify(args, null, 2)));
  } else if (Object.keys(args).length) {
    parts.push(h("details.args", { "data-key": "args" }, h("summary", {}, "Arguments"),
      h("pre", { tabindex: "0" }, JSON.stringify(args, null, 2))));
  } else if (item.raw_args) {
    parts.push(h("details.args", { "data-key": "args" }, h("summary", {}, "Arguments as written"),
      h("pre", { tabindex: "0" }, item.raw_args)));
  }
  if (state === "waiting") {
    const { controls, hint } = alwaysControls(item, { draft, busy, hintId: `rule-hint-${item.id}`,
      onAlways: (rule) => onDecide("approve_always", ruleBody(rule)), onPick });
    parts.push(h("div.approval", { role: "group", "aria-label": `Approve or deny: ${title}` },
      h("button.primary", { type: "button", "data-focus": "approve", disabled: busy, onclick: () => onDecide("approve") },
        "Approve"),
      h("button.danger", { type: "button", "data-focus": "deny", disabled: busy, onclick: () => onDecide("deny") },
        "Deny"),
      controls));
    parts.push(hint);
    parts.push(alertLine(error));
  }
  if (state === "waiting_client") {
    parts.push(noApp
      ? h("p.client-gone", { role: "status" }, "No app is connected to answer this call. It ends with an error when "
        + "its time runs out; open the app that gave the tool, or stop the run.")
      : h("p.small.muted", { role: "status" }, "The app that gave this tool is carrying the call out."));
  }
  if (item.result) {
    parts.push(h("details.result", { "data-key": "result" },
      h("summary", {}, state === "error" || state === "denied" ? "Why" : "Result",
        item.shortened ? h("span.muted", {}, " (shortened for the model)") : null),
      h("pre", { tabindex: "0" }, resultText(item))));
  }
  if (item.file && state === "done" && workspace) {
    parts.push(h("button.link.preview-link", { type: "button", "data-focus": "preview",
      onclick: () => onPreview(item.file) }, `Preview ${item.file}`));
  }
  const bytes = state === "composing" && typeof item.bytes === "number"
    ? h("span.bytes", { "aria-label": "Written so far" }, sizeText(item.bytes)) : null;
  return h(`article.item.card.tool.state-${state}`, { "aria-label": `Tool: ${title}`, "data-state": state,
    "data-ended-by": item.ended_by || null, tabindex: "-1" },
    h("header.card-head", {},
      h("span.tool-title", {}, title),
      item.mcp ? h("span.muted", {}, ` (${item.mcp})`) : null,
      item.mcp_host ? h("span.badge.on-network", { title: `This call's arguments are sent to ${item.mcp_host}.` },
        `on the network: ${item.mcp_host}`) : null,
      h("span.spacer"),
      bytes,
      h(`span.badge.tool-state.state-${state}`, {}, stateWord(item, TOOL_STATES))),
    parts);
}

// ---- the plan card ----

// `draft`: {rejecting, text} kept by the view (the feedback box open, what is typed in
// it); `onDecide(decision, feedback)`; `onDraft()`: the box opened or closed.
export function renderPlan(item, { draft, busy, error, onDecide, onDraft }) {
  const state = item.state || "running";
  const args = item.args || {};
  const revision = Number.isInteger(args.revision) ? args.revision : null;
  const text = typeof args.plan === "string" ? args.plan : "";
  // Done is approved, but for a scheduled run's plan, left proposed with nobody to ask.
  const approved = state === "done" && (item.result || "").startsWith(APPROVED);
  const parts = [];
  if (text) {
    const body = markdownBox("div.markdown.plan-text", text);
    // A rejected revision folds: the next one is what counts.
    parts.push(state === "denied"
      ? h("details.plan-fold", { "data-key": "plan" }, h("summary", {}, "The plan as it was"), body)
      : body);
  } else if (state === "composing" || state === "running") {
    parts.push(h("p.muted", {}, "Reading the plan…"));
  }
  if (state === "waiting") parts.push(planDecision(item, { draft, busy, error, onDecide, onDraft }));
  else if (approved) parts.push(h("p.plan-outcome", {}, "You approved it: the agent carries it out."));
  else if (state === "denied" && (item.result || "").startsWith(REJECTED)) {
    const said = SAID.exec(item.result);
    parts.push(h("p.plan-outcome", {}, said ? ["You rejected it: ", h("q", {}, said[1])] : "You rejected it."));
  } else if (item.result) parts.push(h("p.muted.plan-outcome", {}, resultText(item)));
  const label = revision ? `Plan, revision ${revision}` : "Plan";
  return h(`article.item.card.tool.plan.state-${state}`, { "aria-label": label, "data-state": state, tabindex: "-1" },
    h("header.card-head", {},
      h("span.plan-from", {}, state === "waiting" ? "The agent proposes a plan" : "The agent's plan"),
      revision ? h("span.badge.revision", {}, `revision ${revision}`) : null,
      h("span.spacer"),
      h(`span.badge.tool-state.state-${state}`, {}, state === "done" && !approved ? "proposed" : stateWord(item, PLAN_STATES))),
    parts);
}

function planDecision(item, { draft, busy, error, onDecide, onDraft }) {
  if (!draft.rejecting) {
    return h("div.plan-decision", {},
      h("div.approval", { role: "group", "aria-label": "Approve or reject the plan" },
        h("button.primary", { type: "button", "data-focus": "approve", disabled: busy,
          onclick: () => onDecide("approve") }, "Approve plan"),
        h("button.danger", { type: "button", "data-focus": "reject", disabled: busy,
          onclick: () => {
            draft.rejecting = true;
            onDraft();
          } }, "Reject…")),
      alertLine(error));
  }
  const boxId = `plan-feedback-${item.id}`;
  const box = h("textarea", { id: boxId, rows: "3", value: draft.text, "data-focus": "feedback", disabled: busy,
    placeholder: "What to change, add or leave out" });
  box.addEventListener("input", () => (draft.text = box.value));
  const form = h("form.plan-feedback", { "aria-label": "Reject the plan" },
    h("label.label", { for: boxId }, "What should change? The agent reads this and revises the plan."),
    box,
    h("div.actions", {},
      h("button.danger", { type: "submit", "data-focus": "send-reject", disabled: busy },
        busy ? "Sending…" : "Reject with this feedback"),
      h("button.quiet", { type: "button", "data-focus": "cancel-reject", disabled: busy, onclick: () => {
        draft.rejecting = false;
        onDraft();
      } }, "Cancel")));
  box.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) {
      ev.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    onDecide("deny", box.value.trim());
  });
  return h("div.plan-decision", {}, form, alertLine(error));
}

// ---- notices ----

// A compaction's notice says what was summarised and folds those items (`count` of
// them, `open`: shown); any other notice is a line.
// A notice written for the model is shown in the person's words (`person_text`), or
// not at all; `merged`: the run's end line says it (run.js endNotice).
export function renderNotice(item, { count, open, onFold, merged = false }) {
  const level = item.level || "info";
  const c = item.compaction;
  if (!c) {
    const text = noticeText(item);
    return h(`div.item.notice.level-${level}`, { role: "note", hidden: merged || !text,
      "data-for-model": item.for_model ? "true" : null },
      h("strong", {}, `${NOTICE_LABELS[level] || "Note"}: `), text);
  }
  const sizes = c.tokens_before && c.tokens_after
    ? `about ${c.tokens_before.toLocaleString()} → ${c.tokens_after.toLocaleString()} tokens` : null;
  return h("section.item.notice.compaction", { "aria-label": "Earlier items summarised", "data-compaction": "true" },
    h("p.compaction-text", {}, h("strong", {}, "Summarised: "), item.text || ""),
    h("div.compaction-actions", {},
      count
        ? h("button.fold", { type: "button", "aria-expanded": String(open), "data-focus": "fold", onclick: onFold },
            open ? `Fold the ${count} summarised items` : `Show the ${count} summarised items`)
        : null,
      sizes ? h("span.small.muted", {}, sizes) : null),
    c.summary
      ? h("details.compaction-summary", { "data-key": "summary" },
          h("summary", {}, "What the model reads instead"), markdownBox("div.markdown", c.summary))
      : null);
}
