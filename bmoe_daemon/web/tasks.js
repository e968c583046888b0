// The tasks page: prompts that run as a conversation on a schedule, each with its
// form (a refusal said beside the field it concerns), its switch, Run now, and the
// fold of its runs (taskruns.js).

import { api } from "./api.js";
import { alertLine, clear, field, h, select, when } from "./dom.js";
import { attemptAt, sayAt, unsay } from "./fielderrors.js";
import { limits } from "./limits.js";
import { deleteButton, page } from "./settings.js";
import { endWords } from "./run.js";
import { runsFold } from "./taskruns.js";
import { attempt, MODE_OPTIONS, pageView, routeOptions, toast, wsOptions } from "./ui.js";
import { budgetText } from "./usage.js";

const SCHEDULE_KINDS = [["once", "Once"], ["interval", "Every few minutes"], ["daily", "Every day"], ["weekly", "Every week"]];
const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

function scheduleText(s) {
  if (!s) return "";
  if (s.kind === "once") return `once, at ${s.at}`;
  if (s.kind === "interval") return `every ${s.every_minutes} minutes`;
  if (s.kind === "daily") return `every day at ${s.at}`;
  if (s.kind === "weekly") return `${(s.weekdays || []).map((d) => DAYS[d]).join(", ")} at ${s.at}`;
  return s.kind;
}

const NEW_SCHEDULE = { kind: "daily", at: "09:00", every_minutes: 60, weekdays: [1, 2, 3, 4, 5] };

// The daemon's refusals of a task, said for a person beside the field they concern.
function taskRules(f) {
  return [
    [/schedule\.at .*between 00:00 and 23:59/, f.at, "The time must be like 09:30, between 00:00 and 23:59."],
    [/schedule\.at must be a time/, f.at, "The time must be like 09:30."],
    [/schedule\.at must be a local date and time/, f.at, "For once, give a date and a time like 2026-12-24T09:30."],
    [/schedule\.at is not a real date/, f.at, "That day is not on the calendar: check the month and the day."],
    [/every_minutes must be at least (\d+)/, f.every, (m) => `Runs are at least ${m[1]} minutes apart.`],
    [/every_minutes must be at most/, f.every, "At most a year between runs; for longer, choose Once."],
    [/every_minutes/, f.every, "Give the minutes as a whole number, such as 60."],
    [/weekdays/, f.days, "Pick at least one day."],
    [/needs a prompt/, f.prompt, "Say what the task should ask."],
    [/prompt is at most (\d+)/, f.prompt, (m) => `The prompt is too long: at most ${Number(m[1]).toLocaleString("en")} characters.`],
    [/title is at most (\d+)/, f.title, (m) => `The title is too long: at most ${Number(m[1]).toLocaleString("en")} characters.`],
    [/budget\.tokens/, f.budgetTokens, "The token budget is a whole number of tokens from 1, or empty for none."],
    [/budget\.cost/, f.budgetCost, "The cost budget is a number of US dollars above 0, like 0.50, or empty for none."],
    [/no saved provider/, f.route, "That provider is no longer saved: pick another model."],
    [/workspace/i, f.ws, "That folder is no longer added: pick another, or add it first."],
    [/keeps between (\d+) and (\d+) of its runs/, f.keep, (m) => `A task keeps between ${m[1]} and ${m[2]} of its runs.`],
  ];
}

// A `once` time (YYYY-MM-DDTHH:MM, local) that has already passed.
function inThePast(at) {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(at);
  return Boolean(m) && new Date(+m[1], +m[2] - 1, +m[3], +m[4], +m[5]) < new Date();
}

function checkedDays(days) {
  return days.map((l) => l.querySelector("input")).filter((c) => c.checked).map((c) => Number(c.value));
}

// The first local instant after `from` at hh:mm (on one of `weekdays`, when given), as
// actors/scheduling/schedule.py's next_slot counts it.
function nextAt(hh, mm, from, weekdays) {
  for (let i = 0; i < 9; i++) {
    const d = new Date(from.getFullYear(), from.getMonth(), from.getDate() + i, hh, mm);
    if (d > from && (!weekdays || weekdays.includes(d.getDay()))) return d;
  }
  return null;
}

function dayAndTime(d, now) {
  const time = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hourCycle: "h23" }); // as "At" is written
  const tomorrow = new Date(now.getFullYear(), now.getMonth(), now.getDate() + 1);
  if (d.toDateString() === now.toDateString()) return `today at ${time}`;
  if (d.toDateString() === tomorrow.toDateString()) return `tomorrow at ${time}`;
  return `${d.toLocaleDateString([], { weekday: "long", day: "numeric", month: "long" })} at ${time}`;
}

// When the schedule being written would first run, counted from now (saving it now),
// as the daemon counts it; "" while a field does not say yet.
// `lastRun`: when the task last ran (seconds), which an interval counts from.
export function firstRunText(kind, at, every, weekdays, lastRun = null, now = new Date()) {
  if (kind === "interval") {
    if (!Number.isInteger(every) || every < limits.every_minutes.min) return "";
    const d = new Date((lastRun ? lastRun * 1000 : now.getTime()) + every * 60_000);
    if (d <= now) return `Next run: right away; then every ${every} minutes.`;
    const minutes = Math.round((d - now) / 60_000);
    return `${lastRun ? "Next" : "First"} run: in ${minutes} ${minutes === 1 ? "minute" : "minutes"}, `
      + `${dayAndTime(d, now)}; then every ${every} minutes.`;
  }
  if (kind === "once") {
    const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})$/.exec(at);
    if (!m) return "";
    const d = new Date(+m[1], +m[2] - 1, +m[3], +m[4], +m[5]);
    return d < now ? "That time has passed: it would run once, right away." : `It runs once, ${dayAndTime(d, now)}.`;
  }
  const m = /^(\d{2}):(\d{2})$/.exec(at);
  if (!m || +m[1] > 23 || +m[2] > 59 || (kind === "weekly" && !weekdays.length)) return "";
  const d = nextAt(+m[1], +m[2], now, kind === "weekly" ? weekdays : null);
  return d ? `First run: ${dayAndTime(d, now)}.` : "";
}

// A new task (`task` null) or an existing one's fields; `done(saved)` closes it. A
// refusal stays in the form, beside the field it concerns, with what was typed.
function taskForm(task, workspaces, providers, done) {
  const s = task ? task.schedule : NEW_SCHEDULE;
  const title = h("input", { type: "text", value: task ? task.title : "" });
  const prompt = h("textarea", { rows: "4", required: true, value: task ? task.prompt : "" });
  const ws = select({}, wsOptions(workspaces, task && task.workspace), (task && task.workspace) || "");
  const mode = select({}, MODE_OPTIONS, task ? task.mode : "read_only");
  const route = select({}, routeOptions(providers, task && task.route), task ? task.route : "local");
  const kind = select({}, SCHEDULE_KINDS, s.kind);
  const at = h("input", { type: "text", value: s.at || "", placeholder: "HH:MM, or YYYY-MM-DDTHH:MM for once" });
  // No min and any step here either: the daemon's refusal is said beside the field.
  const every = h("input", { type: "number", step: "any", inputmode: "numeric",
    value: String(s.every_minutes || NEW_SCHEDULE.every_minutes) });
  const weekdays = s.weekdays || NEW_SCHEDULE.weekdays;
  const days = DAYS.map((d, i) => h("label.inline", {}, h("input", { type: "checkbox", value: String(i), checked: weekdays.includes(i) }), d));
  // No min, and any step: the browser would stop the form with words of its own. A whole
  // number is checked here; its range is the daemon's to say.
  const keep = h("input", { type: "number", step: "any", inputmode: "numeric", autocomplete: "off",
    value: String(task ? task.keep_runs ?? limits.keep_runs.default : limits.keep_runs.default) });
  const keepField = field("Keep the last N runs", keep,
    "Each run is a conversation. After a run, older ones beyond this many are deleted (one you have open, "
    + `or one that waits for you, stays). From 1 to ${limits.keep_runs.max.toLocaleString("en")}.`);
  const everyLimits = limits.every_minutes;
  const everyField = field("Every (minutes)", every,
    `At least ${everyLimits.min} minutes apart, at most a year. The first run is one interval after the task is saved.`);
  const daysField = h("fieldset.days", {}, h("legend", {}, "Days"), days);
  // Each run's budget (its conversation carries it): empty for no limit.
  const b = (task && task.budget) || { tokens: null, cost: null };
  const budgetTokens = h("input", { type: "number", step: "any", inputmode: "numeric", autocomplete: "off",
    value: b.tokens === null ? "" : String(b.tokens) });
  const budgetCost = h("input", { type: "number", step: "any", inputmode: "decimal", autocomplete: "off",
    value: b.cost === null ? "" : String(b.cost) });
  const budgetField = h("fieldset.budget", {}, h("legend", {}, "Budget of each run (optional)"),
    field("Tokens", budgetTokens, "Prompt and completion tokens; the run ends once its answers reach it."),
    field("Cost (US$)", budgetCost, "At the provider's prices (entered on the Providers page)."));
  const error = alertLine("");
  const rules = taskRules({ at, every, days: daysField, prompt, title, ws, route, keep, budgetTokens, budgetCost });
  const controls = [at, every, daysField, prompt, title, ws, route, keep, budgetTokens, budgetCost];
  const atField = field("At", at);
  const first = h("p.small.first-run", { "aria-live": "polite" });
  const sync = () => {
    everyField.hidden = kind.value !== "interval";
    daysField.hidden = kind.value !== "weekly";
    // An interval counts from when it is saved: no time of day of its own (the daily
    // default "09:00" kept for "every 5 minutes" once put the first run at 09:00 tomorrow).
    atField.hidden = kind.value === "interval";
    first.textContent = firstRunText(kind.value, at.value.trim(), Number(every.value), checkedDays(days),
      task && task.last_run ? task.last_run.at : null);
  };
  for (const c of [at, every, ...days.map((l) => l.querySelector("input"))]) c.addEventListener("input", sync);
  // A field the new kind hides goes back to how it started, and its error with it: a
  // hidden field the browser finds invalid would stop Add without a word.
  kind.addEventListener("change", () => {
    if (kind.value !== "interval") every.value = String(s.every_minutes || NEW_SCHEDULE.every_minutes);
    if (kind.value !== "weekly") for (const l of days) l.querySelector("input").checked = weekdays.includes(Number(l.querySelector("input").value));
    for (const c of [at, every, daysField]) unsay(c);
    sync();
  });
  sync();
  const form = h("form.card.task-form", { "aria-label": task ? `Edit ${task.title}` : "New task" },
    field("Title", title, task ? "Empty: named after the prompt." : null), field("Prompt", prompt),
    field("Workspace", ws), field("Mode", mode), field("Model", route),
    field("Schedule", kind), atField, everyField, daysField, first, keepField, budgetField, error,
    h("div.actions", {}, h("button.primary", { type: "submit" }, task ? "Save task" : "Add task"),
      h("button.quiet", { type: "button", onclick: () => done(false) }, "Cancel")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const schedule = { kind: kind.value };
    if (at.value.trim() && kind.value !== "interval") schedule.at = at.value.trim();
    if (kind.value === "interval") schedule.every_minutes = Number(every.value);
    if (kind.value === "weekly") schedule.weekdays = checkedDays(days);
    const kept = keep.value.trim();
    if (keep.validity.badInput || !/^-?\d+$/.test(kept)) {
      for (const c of controls) unsay(c);
      sayAt(keep, "Say how many runs to keep as a whole number, such as 100.");
      keep.focus();
      return;
    }
    if (kind.value === "once" && inThePast(schedule.at)
        && !window.confirm(`${schedule.at} has already passed: the task would run once, right away. Add it anyway?`)) {
      at.focus();
      return;
    }
    const body = { prompt: prompt.value, schedule, mode: mode.value, route: route.value, keep_runs: Number(kept) };
    const [bt, bc] = [budgetTokens.value.trim(), budgetCost.value.trim()];
    body.budget = bt || bc ? { tokens: bt ? Number(bt) : null, cost: bc ? Number(bc) : null } : null;
    if (task) {
      // A change sends every field: an emptied title or workspace is a change too.
      body.title = title.value.trim() || null;
      body.workspace = ws.value || null;
    } else {
      if (title.value.trim()) body.title = title.value.trim();
      if (ws.value) body.workspace = ws.value;
    }
    const saved = await attemptAt(error, rules, controls, () =>
      task ? api("PUT", `/api/tasks/${encodeURIComponent(task.id)}`, body) : api("POST", "/api/tasks", body));
    if (saved) done(true);
  });
  return form;
}

// Where the focus is in the page, to put it back once the page is drawn again: the
// element itself when it is drawn again (a runs fold's), else the one like it in the
// same task's row.
function focusSpot(body) {
  const el = document.activeElement;
  if (!el || el === body || !body.contains(el)) return null;
  const row = el.closest("li.row");
  return { el, task: row ? row.dataset.task : null, label: el.getAttribute("aria-label"), text: el.textContent };
}

function refocus(body, spot) {
  if (!spot || (document.activeElement && document.activeElement !== document.body)) return;
  let el = spot.el.isConnected && body.contains(spot.el) ? spot.el : null;
  if (!el) {
    const row = spot.task ? [...body.querySelectorAll("li.row")].find((r) => r.dataset.task === spot.task) : body;
    el = row ? [...row.querySelectorAll(spot.el.tagName)].find((e) =>
      spot.label ? e.getAttribute("aria-label") === spot.label : e.textContent === spot.text) : null;
  }
  if (el) el.focus({ preventScroll: true });
}

export function tasksPage(main) {
  const body = page(main, "Tasks", "Prompts that run as a conversation on a schedule, with nobody at the screen: a question is answered no.");
  let stale = false; // a task event came while a form was open
  const folds = new Map(); // task id -> its runs fold, kept across the page's reads
  const gone = new Set(); // the conversations deleted while the page is open
  // `quiet`: read because of an event, so a form opened meanwhile is kept (stale).
  let reads = 0;
  let drawn = 0; // the read last drawn: one that ends after a later one is not drawn
  const load = async (quiet) => {
    stale = false;
    const read = ++reads;
    const [tasks, workspaces, providers] = await Promise.all([
      api("GET", "/api/tasks"),
      api("GET", "/api/workspaces").catch(() => []),
      api("GET", "/api/providers").catch(() => []),
    ]);
    if (read < drawn) return;
    if (quiet === true && body.querySelector("form")) {
      stale = true;
      return;
    }
    // A form closed: read the page again when it was saved or events came meanwhile.
    const closer = (holder) => (saved) => (saved || stale ? load() : clear(holder));
    const adding = h("div");
    for (const id of folds.keys()) if (!tasks.some((t) => t.id === id)) folds.delete(id);
    const fold = (t) => {
      if (!folds.has(t.id)) folds.set(t.id, runsFold(t, gone));
      else folds.get(t.id).update(t);
      return folds.get(t.id).element;
    };
    drawn = read;
    // Drawn again whole, the page stays where it was scrolled to, with the focus where it was.
    const scrolled = main.scrollTop;
    const spot = focusSpot(body);
    clear(body,
      h("button.primary", { type: "button", onclick: () =>
        clear(adding, taskForm(null, workspaces, providers, closer(adding))) }, "New task"),
      adding,
      tasks.length ? null : h("p.muted", {}, "No tasks yet."),
      h("ul.rows", { "aria-label": "Tasks" }, tasks.map((t) => {
        const toggle = h("input", { type: "checkbox", role: "switch", checked: t.enabled, "aria-label": `Enable ${t.title}` });
        toggle.addEventListener("change", async () => {
          if (!(await attempt(() => api("PUT", `/api/tasks/${encodeURIComponent(t.id)}`, { enabled: toggle.checked }))))
            toggle.checked = !toggle.checked;
        });
        const last = t.last_run;
        const editing = h("div");
        return h("li.row", { "aria-label": t.title, dataset: { task: t.id } },
          h("div.row-main", {},
            h("strong", {}, t.title), " ", h("span.badge", {}, scheduleText(t.schedule)),
            t.running ? h("span.badge.state-running", {}, "running") : null,
            h("p.muted", {}, t.prompt),
            h("p.small", {},
              "Last run: ",
              // The run's own end (stuck, used all its rounds...), not only done or error.
              last ? [when(last.at), ` (${last.outcome === "running" ? "running" : endWords(last.end_reason) || last.outcome})`,
                last.conversation
                ? [" · ", h("a", { href: `#/c/${encodeURIComponent(last.conversation)}` }, "open its conversation")] : null]
                : "never",
              " · Next: ", t.next_run ? when(t.next_run) : "not scheduled",
              t.budget ? ` · Budget of each run: ${budgetText(t.budget)}` : null),
            fold(t)),
          h("div.row-actions", {},
            h("label.switch", {}, toggle, h("span", {}, "On")),
            h("button", { type: "button", disabled: t.running, "aria-label": `Run ${t.title} now`, onclick: async () => {
              if (await attempt(() => api("POST", `/api/tasks/${encodeURIComponent(t.id)}/run`, {}))) {
                toast(`${t.title} started.`, "info");
                load();
              }
            } }, "Run"),
            h("button.quiet", { type: "button", "aria-label": `Edit ${t.title}`, onclick: () =>
              clear(editing, taskForm(t, workspaces, providers, closer(editing))) }, "Edit"),
            deleteButton(t.title, async () => {
              if (await attempt(() => api("DELETE", `/api/tasks/${encodeURIComponent(t.id)}`))) load();
            })),
          editing);
      })));
    main.scrollTop = scrolled;
    refocus(body, spot);
  };
  const v = pageView(load, body);
  // After a gap in the events: read again as for an event, keeping a form open.
  v.refresh = () => load(true).catch(() => {});
  let timer = null;
  v.close = () => clearTimeout(timer);
  v.onEvent = (name, data) => {
    if (name === "conversation_deleted") {
      gone.add(data.id);
      for (const f of folds.values()) f.drop(data.id);
      return;
    }
    if (name === "conversation") {
      for (const f of folds.values()) f.changed(data);
      return;
    }
    if (name !== "task") return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      // Reading the page again would drop what the person is typing: wait for the form.
      if (body.querySelector("form")) stale = true;
      else load(true).catch(() => {});
    }, 200);
  };
  return v;
}
