// What a run shows beside its items: the todo list pinned above the message box, the
// agent's question cards, the line under the last item that says why the run ended
// (with Resume where the daemon can go on with it), and the goal in the header.
//
// Pure drawing: each function takes what it shows and the view's callbacks, and
// answers an element. The view keeps the state (waiting.js: a question's draft
// answer, an error the daemon gave) so a card drawn again keeps it.

import { stateWord } from "./cards.js";
import { alertLine, h } from "./dom.js";

export const ASK_USER = "ask_user_question";

// How a run may have ended for POST .../resume to go on with it (actors/conversation.py).
export const RESUMABLE = new Set(["stopped", "error", "max_rounds", "stuck", "cut_off", "budget"]);

const END_TEXT = {
  answered: "Run finished: the agent answered.",
  max_rounds: "Run ended: the agent used all its rounds for this message.",
  stuck: "Run ended: the agent was stuck, getting nowhere.",
  stopped: "Run stopped before it finished.",
  error: "Run ended with an error.",
  goal_complete: "Run finished: the goal is reached.",
  goal_blocked: "Run ended: the goal is blocked.",
  plan_proposed: "Run ended: a plan waits for your approval.",
  question: "Run ended: a question waits for your answer.",
  cut_off: "Run ended: the answer was cut off at the token limit.",
  could_not: "Run ended: the model could not do this; its answer was not shown.",
  budget: "Run ended: its budget is used up. Raise the budget to go on, then Resume.",
};

// Why a run ended in a few words: a task's row, its runs, the conversation list.
const END_WORDS = {
  answered: "answered", max_rounds: "used all its rounds", stuck: "stuck", stopped: "stopped", error: "error",
  goal_complete: "goal reached", goal_blocked: "goal blocked", plan_proposed: "plan waits for you",
  question: "question waits for you", cut_off: "cut off", could_not: "could not do it",
};

export function endWords(reason) {
  return reason ? END_WORDS[reason] || reason.replaceAll("_", " ") : "";
}

// The notice that ended the last run, when nothing but notices came after it: the run's
// end line says it (its words for the person) with Resume beside it, in one line.
export function endNotice(items, info) {
  const reason = info && info.end_reason;
  if (!reason) return null;
  for (let at = items.length - 1; at >= 0; at--) {
    const item = items[at];
    if (item.kind !== "notice") return null;
    if (item.end_reason === reason) return item;
  }
  return null;
}

const TODO_MARKS = { completed: "✓", in_progress: "▸", pending: "" };
const TODO_WORDS = { completed: "done", in_progress: "in progress", pending: "to do" };

const QUESTION_STATES = {
  composing: "writing the question",
  running: "asking",
  waiting: "waiting for your answer",
  done: "answered",
  denied: "not answered",
  error: "error",
};
const ANSWER_PREFIX = "The person answered: ";

// ---- the todo list ----

// `todos`: [{content, status}]; `open`: whether its fold is open; `fresh`: the entries
// that turned completed since it was last drawn (they tick). Null when the list is empty.
export function renderTodos(todos, { open, fresh, onToggle }) {
  if (!todos || !todos.length) return null;
  const done = todos.filter((t) => t.status === "completed").length;
  const now = todos.find((t) => t.status === "in_progress");
  const details = h("details.todos-fold", { open },
    h("summary", {},
      h("span.todos-title#todos-title", {}, "Todo list"),
      h("span.todo-count", { "aria-live": "polite" }, `${done} of ${todos.length} done`),
      now ? h("span.todo-now", {}, now.content) : null),
    h("ol.todo-list", {}, todos.map((t, i) =>
      h(`li.todo.todo-${t.status}`, { "data-status": t.status, class: fresh.has(i) ? "ticked" : "" },
        h("span.todo-mark", { "aria-hidden": "true" }, TODO_MARKS[t.status] ?? ""),
        h("span.todo-text", {}, t.content),
        h("span.visually-hidden", {}, ` (${TODO_WORDS[t.status] || t.status})`)))));
  details.addEventListener("toggle", () => onToggle(details.open));
  return details;
}

// The indexes of entries completed in `todos` that were not in `before` (same place,
// same words): what ticked with this change.
export function newlyCompleted(before, todos) {
  const out = new Set();
  (todos || []).forEach((t, i) => {
    const was = before && before[i];
    if (t.status === "completed" && was && was.content === t.content && was.status !== "completed") out.add(i);
  });
  return out;
}

// ---- question cards ----

export function questionOf(item) {
  const args = item.args || {};
  const options = Array.isArray(args.options)
    ? args.options.filter((o) => typeof o === "string" && o.trim()).map((o) => o.trim())
    : [];
  return {
    text: typeof args.question === "string" ? args.question.trim() : "",
    options,
    multiple: args.multiple === true || args.multiple === "true",
  };
}

export function isOpenQuestion(item) {
  return item.kind === "tool" && item.tool === ASK_USER && item.state === "waiting";
}

// `draft`: {text, picked: Set} kept by the view; `busy`: an answer is on its way;
// `error`: the daemon's refusal of the last try; `onAnswer(answer)` sends a string or,
// for a question that takes several, a list.
export function renderQuestion(item, { draft, busy, error, onAnswer, onDraft }) {
  const state = item.state || "running";
  const q = questionOf(item);
  const qid = `question-${item.id}`;
  const parts = [h("p.question-text", { id: qid }, q.text || "…")];
  if (state === "waiting") {
    parts.push(answerForm(item, q, qid, { draft, busy, error, onAnswer, onDraft }));
  } else if (state === "done" && item.result) {
    const said = item.result.startsWith(ANSWER_PREFIX) ? item.result.slice(ANSWER_PREFIX.length) : item.result;
    parts.push(h("p.answer", {}, h("span.label", {}, "Your answer: "), said));
  } else if (item.result) {
    parts.push(h("p.muted.question-why", {}, item.person_text || item.result));
  }
  return h(`article.item.card.tool.question.state-${state}`, {
    "aria-label": `Question: ${q.text || "being written"}`, "data-state": state, tabindex: "-1",
  },
  h("header.card-head", {},
    h("span.question-from", {}, state === "waiting" ? "The agent asks you" : "The agent asked you"),
    h("span.spacer"),
    h(`span.badge.tool-state.state-${state}`, {}, stateWord(item, QUESTION_STATES))),
  parts);
}

function answerForm(item, q, qid, { draft, busy, error, onAnswer, onDraft }) {
  const errorEl = alertLine(error);
  const say = (text) => {
    errorEl.textContent = text;
    errorEl.hidden = false;
  };
  const controls = [];
  if (q.options.length && !q.multiple) {
    controls.push(h("div.options", { role: "group", "aria-labelledby": qid },
      q.options.map((o, i) => h("button.option", { type: "button", disabled: busy, "data-focus": `option-${i}`,
        onclick: () => onAnswer(o) }, o))));
  } else if (q.options.length) {
    controls.push(h("fieldset.options.several", { disabled: busy },
      h("legend.small.muted", {}, "Pick one or more"),
      q.options.map((o, i) => {
        const box = h("input", { type: "checkbox", value: o, checked: draft.picked.has(o), "data-focus": `option-${i}` });
        box.addEventListener("change", () => {
          if (box.checked) draft.picked.add(o);
          else draft.picked.delete(o);
          onDraft();
        });
        return h("label.option.check", {}, box, h("span", {}, o));
      })));
  }
  const textId = `${qid}-text`;
  const text = h("input", { type: "text", id: textId, value: draft.text, autocomplete: "off", disabled: busy,
    "data-focus": "text" });
  text.addEventListener("input", () => {
    draft.text = text.value;
    onDraft();
  });
  const several = q.options.length && q.multiple;
  const form = h("form.free-answer", { "aria-label": "Answer in your own words" },
    h("label.label", { for: textId }, q.options.length ? "Or in your own words" : "Your answer"),
    h("div.free-row", {}, text,
      h("button.primary", { type: "submit", disabled: busy, "data-focus": "send" },
        busy ? "Sending…" : "Send answer")));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const typed = text.value.trim();
    if (several) {
      const picked = q.options.filter((o) => draft.picked.has(o));
      if (!picked.length && !typed) return say("Pick at least one option, or write an answer.");
      return onAnswer(picked.length ? [...picked, ...(typed ? [typed] : [])] : typed);
    }
    if (!typed) return say(q.options.length ? "Pick an option, or write an answer." : "Write an answer first.");
    return onAnswer(typed);
  });
  return h("div.answer-box", {}, controls, form, errorEl);
}

// ---- why the run ended ----

// The line under the last item. Null while a run is on or before one ended.
// `resumable`: the daemon can go on with it (and the view has checked nothing waits);
// `said`: the words of the notice that ended the run (it is not drawn apart then).
export function renderRunEnd(info, { resumable, busy, error, onResume, said = "" }) {
  const reason = info && info.end_reason;
  if (!reason || (info.state !== "idle" && info.state !== "error")) return null;
  const textId = "run-end-text";
  return h(`div.run-end.reason-${reason}`, { "data-reason": reason },
    h("p.run-end-text", { id: textId }, said || END_TEXT[reason] || `Run ended: ${reason.replaceAll("_", " ")}.`),
    // Not `disabled` while busy: the keyboard stays on it until the run goes on.
    // An answer cut at the token limit goes on where it stopped: Continue.
    resumable
      ? h("button.resume", { type: "button", "aria-disabled": busy ? "true" : null, "aria-describedby": textId,
          title: reason === "cut_off" ? "Let the model go on with its answer from where it was cut"
            : "Go on where the run was, without a new message", onclick: onResume },
        busy ? (reason === "cut_off" ? "Continuing…" : "Resuming…") : reason === "cut_off" ? "Continue" : "Resume")
      : null,
    alertLine(error));
}

// ---- the goal ----

const GOAL_WORDS = { active: "working on it", complete: "reached", blocked: "blocked" };
// An open goal while no run works on it: how the last run left it.
const GOAL_IDLE = { stopped: "stopped", error: "stopped on an error", stuck: "stuck" };

// The conversation's goal under the header: its words, where it stands and why; Clear
// (between runs) drops it. Null without a goal. `running`: a run works on it now.
export function renderGoal(goal, { busy, error, onClear, running = true, endReason = null }) {
  if (!goal) return null;
  const state = goal.state || "active";
  const word = state === "active" && !running ? `not reached yet${GOAL_IDLE[endReason] ? `, ${GOAL_IDLE[endReason]}` : ""}`
    : GOAL_WORDS[state] || state;
  return h(`div.goal.goal-${state}`, { role: "group", "aria-label": "The conversation's goal", "data-state": state },
    h("span.goal-label", {}, "Goal"),
    h("span.goal-text", {}, goal.text),
    h(`span.badge.goal-state.goal-state-${state}`, {}, word),
    goal.verify && state === "active" && running ? h("span.small.muted.goal-verify", {}, "checked before it counts") : null,
    goal.reason ? h("span.goal-reason", {}, goal.reason) : null,
    h("button.quiet.goal-clear", { type: "button", "aria-disabled": busy ? "true" : null, onclick: onClear,
      "aria-label": "Clear the goal" }, busy ? "Clearing…" : "Clear"),
    alertLine(error));
}
