// The settings pages: skills, tasks, providers, connect, and the agent (its MCP
// servers and the person's hooks). The workspaces page is workspaces.js, the models
// page models.js.
//
// Each page is `{load, refresh, onEvent?}` over <main>; every change goes through the
// public API and the page is read again after it.

import { api, request } from "./api.js";
import { alertLine, clear, field, h, select, when } from "./dom.js";
import { attemptAt, sayAt, unsay } from "./fielderrors.js";
import { renderDiff, renderMarkdown } from "./markdown.js";
import { attempt, DEFAULT_CONTEXT, MODE_OPTIONS, modelName, pageView, problem, routeOptions, STATE_LABELS, toast,
  wsOptions } from "./ui.js";

export function page(main, title, intro) {
  const body = h("div.page-body");
  clear(main, h("section.page", { "aria-labelledby": "page-title" },
    h("a.back", { href: "#/" }, "‹ Conversations"),
    h("h1#page-title", {}, title), intro ? h("p.muted", {}, intro) : null, body));
  return body;
}

// A Delete button that asks once: the first press turns it into "Delete?", a second
// one deletes; leaving it (focus elsewhere) or Escape takes the question back.
function deleteButton(name, action) {
  const label = `Delete ${name}`;
  const button = h("button.quiet.danger", { type: "button", "aria-label": label }, "Delete");
  const disarm = () => {
    delete button.dataset.armed;
    button.textContent = "Delete";
    button.setAttribute("aria-label", label);
  };
  button.addEventListener("click", async () => {
    if (!button.dataset.armed) {
      button.dataset.armed = "yes";
      button.textContent = "Delete?";
      button.setAttribute("aria-label", `Really delete ${name}?`);
      return;
    }
    disarm();
    await action();
  });
  button.addEventListener("blur", disarm);
  button.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") disarm();
  });
  return button;
}

// ---- skills ----

function skillForm(skill, done) {
  const name = h("input", { type: "text", value: skill ? skill.name : "", required: true, readonly: skill ? true : null,
    pattern: "[a-z0-9]+(-[a-z0-9]+)*", autocomplete: "off" });
  const title = h("input", { type: "text", value: skill ? skill.title : "" });
  const description = h("input", { type: "text", value: skill ? skill.description : "", required: true });
  const body = h("textarea", { rows: "10", value: skill ? skill.body : "" });
  const form = h("form.card.skill-form", { "aria-label": skill ? `Edit ${skill.name}` : "New skill" },
    field("Name", name, "kebab-case: lower-case letters, digits and '-'"),
    field("Title", title),
    field("Description", description, "The model reads this to decide when to use the skill."),
    field("Instructions", body),
    h("div.actions", {}, h("button.primary", { type: "submit" }, skill ? "Save skill" : "Add skill"),
      h("button.quiet", { type: "button", onclick: () => done(false) }, "Cancel")));
  const error = alertLine("");
  form.querySelector(".actions").before(error);
  // The daemon's refusals (actors/skills.py check_new) said for a person, by their field.
  const sentence = (text) => text.charAt(0).toUpperCase() + text.slice(1).replace(/\.?$/, ".");
  const rules = [
    [/exists already/, name, "A skill has this name already: pick another name, or edit that skill."],
    [/^name: (.*)$/s, name, (m) => sentence(m[1])],
    [/^description: at most (\d+) characters/, description, (m) => `Keep the description to at most ${m[1]} characters.`],
    [/^description: (.*)$/s, description, (m) => sentence(m[1])],
    [/^title: at most (\d+) characters/, title, (m) => `Keep the title to at most ${m[1]} characters.`],
    [/^body: at most (.*?)\.?$/, body, (m) => `The instructions can be at most ${m[1]}.`],
    [/^body: it holds a NUL/, body, "The instructions hold a NUL character; take it out."],
    [/^body: (.*)$/s, body, (m) => sentence(m[1])],
  ];
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const payload = { name: name.value.trim(), description: description.value.trim(), body: body.value };
    if (title.value.trim()) payload.title = title.value.trim();
    const saved = await attemptAt(error, rules, [name, title, description, body], () =>
      skill ? api("PUT", `/api/skills/${encodeURIComponent(skill.name)}`, payload) : api("POST", "/api/skills", payload));
    if (saved) done(true);
  });
  return form;
}

function skillsPage(main) {
  const body = page(main, "Skills",
    "Instructions the agent reads when it needs them. Switch one off and the model no longer sees it.");
  const load = async () => {
    const skills = await api("GET", "/api/skills");
    const adding = h("div");
    clear(body,
      h("button.primary", { type: "button", onclick: () =>
        clear(adding, skillForm(null, (saved) => (saved ? load() : clear(adding)))) }, "New skill"),
      adding,
      h("ul.rows", { "aria-label": "Skills" }, skills.map((s) => {
        const toggle = h("input", { type: "checkbox", role: "switch", checked: s.enabled,
          "aria-label": `Use ${s.name}` });
        toggle.addEventListener("change", async () => {
          const ok = await attempt(() => api("PATCH", `/api/skills/${encodeURIComponent(s.name)}`, { enabled: toggle.checked }));
          if (!ok) toggle.checked = !toggle.checked;
        });
        const editing = h("div");
        return h("li.row", { "aria-label": s.title || s.name },
          h("div.row-main", {},
            h("strong", {}, s.title || s.name), " ", h("code.muted", {}, s.name),
            h("span.badge", {}, s.source === "bundled" ? "shipped" : s.source === "user" ? "yours" : "workspace"),
            h("p", {}, s.description)),
          h("div.row-actions", {},
            h("label.switch", {}, toggle, h("span", {}, "On")),
            h("button.quiet", { type: "button", "aria-label": s.source === "user" ? `Edit ${s.name}` : `Edit a copy of ${s.name}`,
              onclick: () =>
              clear(editing, skillForm(s, (saved) => (saved ? load() : clear(editing)))) },
              s.source === "user" ? "Edit" : "Edit a copy"),
            s.source === "user"
              ? deleteButton(s.name, async () => {
                  if (await attempt(() => api("DELETE", `/api/skills/${encodeURIComponent(s.name)}`))) load();
                })
              : null),
          editing);
      })));
  };
  return pageView(load, body);
}

// ---- tasks ----

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
// As the daemon takes `keep_runs` (actors/scheduler.py, DEFAULT_KEEP_RUNS and MAX_KEEP_RUNS).
const DEFAULT_KEEP_RUNS = 100;
const MAX_KEEP_RUNS = 100000;
const RUNS_PAGE = 20;

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
    value: String(task ? task.keep_runs ?? DEFAULT_KEEP_RUNS : DEFAULT_KEEP_RUNS) });
  const keepField = field("Keep the last N runs", keep,
    "Each run is a conversation. After a run, older ones beyond this many are deleted (one you have open, "
    + `or one that waits for you, stays). From 1 to ${MAX_KEEP_RUNS.toLocaleString("en")}.`);
  const everyField = field("Every (minutes)", every);
  const daysField = h("fieldset.days", {}, h("legend", {}, "Days"), days);
  const error = alertLine("");
  const rules = taskRules({ at, every, days: daysField, prompt, title, ws, route, keep });
  const controls = [at, every, daysField, prompt, title, ws, route, keep];
  const sync = () => {
    everyField.hidden = kind.value !== "interval";
    daysField.hidden = kind.value !== "weekly";
  };
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
    field("Schedule", kind), field("At", at), everyField, daysField, keepField, error,
    h("div.actions", {}, h("button.primary", { type: "submit" }, task ? "Save task" : "Add task"),
      h("button.quiet", { type: "button", onclick: () => done(false) }, "Cancel")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const schedule = { kind: kind.value };
    if (at.value.trim()) schedule.at = at.value.trim();
    if (kind.value === "interval") schedule.every_minutes = Number(every.value);
    if (kind.value === "weekly") schedule.weekdays = days.map((l) => l.querySelector("input")).filter((c) => c.checked).map((c) => Number(c.value));
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

// As the daemon pages conversations (actors/listing.py MAX_PAGE): the most in one read.
const MAX_RUNS_READ = 1000;

// How two conversations stand in the daemon's list, newest first by (updated, created,
// id) (actors/listing.py): > 0 when `a` comes before `b`, 0 for the same place.
function listOrder(a, b) {
  if (a.updated !== b.updated) return a.updated - b.updated;
  if (a.created !== b.created) return a.created - b.created;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

// A task's runs, newest first, folded until opened: each a link to its conversation,
// with its state and when it started, 20 at a time. The page makes one fold per task
// and keeps it while it is open (`update` with the task as read again), so reading the
// page again keeps the fold open, the runs loaded with "Load more runs" and the focus
// in it: `update` reads the runs again down to the oldest one shown, a new run coming
// at the top and a deleted one going. `gone`: the runs deleted while the page is open
// (a read already under way may still list them); `drop` takes one away at once.
function runsFold(task, gone) {
  let t = task;
  const summary = h("summary");
  const list = h("ul.task-runs-list");
  const status = h("p.small.muted", { role: "status" });
  const more = h("button.quiet", { type: "button", hidden: true }, "Load more runs");
  const details = h("details.task-runs", {}, summary, list, status, more);
  let rows = []; // the runs shown, as the daemon answered them, newest first
  let next = null; // the cursor of the runs after the last one shown; null: none (or nothing read)
  let read = false; // the runs were read at least once
  let stale = false; // the task was read again while the fold was shut: read the runs on opening
  let busy = false;
  let again = false; // a read again asked while another read was under way
  const items = new Map(); // run id -> its <li>, kept across reads (a focused link stays)

  const named = () => {
    summary.textContent = `Runs (the last ${t.keep_runs ?? DEFAULT_KEEP_RUNS} are kept)`;
    list.setAttribute("aria-label", `Runs of ${t.title}`);
    more.setAttribute("aria-label", `Load more runs of ${t.title}`);
  };
  const item = (c) => {
    let li = items.get(c.id);
    if (!li) {
      li = h("li.task-run", {}, h("a", { href: `#/c/${encodeURIComponent(c.id)}` }, `Run of ${when(c.created)}`),
        " ", h("span"));
      items.set(c.id, li);
    }
    clear(li.lastElementChild, h(`span.badge.state-${c.state}`, {}, STATE_LABELS[c.state] || c.state),
      c.end_reason ? h("span.small.muted", {}, ` ${c.end_reason.replace(/_/g, " ")}`) : null);
    return li;
  };
  // The list as `rows`, moving only the items whose place changed.
  const draw = () => {
    const focused = list.contains(document.activeElement) ? document.activeElement : null;
    const want = rows.map(item);
    want.forEach((li, i) => {
      if (list.children[i] !== li) list.insertBefore(li, list.children[i] || null);
    });
    while (list.children.length > want.length) list.lastElementChild.remove();
    const shown = new Set(rows.map((c) => c.id));
    for (const id of items.keys()) if (!shown.has(id)) items.delete(id);
    more.hidden = !next;
    if (focused && focused.isConnected && document.activeElement !== focused) focused.focus({ preventScroll: true });
  };
  const page = async (before, limit) => {
    const qs = new URLSearchParams({ task: t.id, limit: String(limit) });
    if (before) qs.set("before", before);
    const { data, headers } = await request("GET", `/api/conversations?${qs}`);
    return { data: data.filter((c) => !gone.has(c.id)), next: headers.get("X-Next-Before") };
  };
  // The runs from the newest down to the oldest one shown (all of them when every run
  // was shown; the first page when none was read).
  const readAgain = async () => {
    if (!read) return page(null, RUNS_PAGE);
    const oldest = next ? rows[rows.length - 1] : null; // null: read to the end
    const got = [];
    let cursor = null;
    let limit = Math.max(RUNS_PAGE, rows.length);
    for (;;) {
      const p = await page(cursor, Math.min(limit, MAX_RUNS_READ));
      got.push(...p.data);
      cursor = p.next;
      if (!cursor) break;
      if (oldest && (!got.length || listOrder(got[got.length - 1], oldest) <= 0)) break;
      const seen = new Set(got.map((c) => c.id));
      const unseen = rows.filter((c) => !seen.has(c.id)).length; // the shown runs not read yet
      limit = oldest ? Math.max(1, unseen) : Math.max(RUNS_PAGE, unseen);
    }
    return { data: got, next: cursor };
  };
  // `before`: the next page after the runs shown; without it the runs read again.
  const load = async (before) => {
    if (busy) {
      if (!before) again = true;
      return;
    }
    busy = true;
    more.setAttribute("aria-disabled", "true");
    try {
      const p = before ? await page(before, RUNS_PAGE) : await readAgain();
      if (before) {
        const shown = new Set(rows.map((c) => c.id));
        rows = rows.concat(p.data.filter((c) => !shown.has(c.id)));
      } else {
        rows = p.data;
      }
      next = p.next;
      read = true;
      stale = false;
      draw();
      status.textContent = rows.length ? "" : "No runs kept: Run starts one.";
    } catch (err) {
      status.textContent = problem(err);
    }
    busy = false;
    more.setAttribute("aria-disabled", "false");
    if (again) {
      again = false;
      load(null);
    }
  };
  more.addEventListener("click", () => {
    if (next) load(next);
  });
  details.addEventListener("toggle", () => {
    if (details.open && (!read || stale)) load(null);
  });
  named();
  return {
    element: details,
    update(task) {
      t = task;
      named();
      if (details.open) load(null);
      else stale = true;
    },
    drop(id) {
      if (!rows.some((c) => c.id === id)) return;
      rows = rows.filter((c) => c.id !== id);
      draw();
      if (!rows.length) status.textContent = "No runs kept: Run starts one.";
    },
    // A `conversation` event: a run shown says its new state (its place waits for a read).
    changed(info) {
      const c = rows.find((r) => r.id === info.id);
      if (!c || (c.state === info.state && c.end_reason === info.end_reason)) return;
      c.state = info.state;
      c.end_reason = info.end_reason;
      item(c);
    },
  };
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

function tasksPage(main) {
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
              last ? [when(last.at), ` (${last.outcome})`, last.conversation
                ? [" · ", h("a", { href: `#/c/${encodeURIComponent(last.conversation)}` }, "open its conversation")] : null]
                : "never",
              " · Next: ", t.next_run ? when(t.next_run) : "not scheduled"),
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

// ---- providers ----

// One number field per model named in `models`, for its context in tokens; a value
// typed stays with its model's name while the list is edited.
function contextFields(models, given) {
  const typed = new Map(given);
  const box = h("div.context-lengths");
  const names = () => [...new Set(models.value.split(",").map((m) => m.trim()).filter(Boolean))];
  const draw = () => {
    for (const input of box.querySelectorAll("input")) typed.set(input.dataset.model, input.value);
    clear(box, names().map((name) => {
      const input = h("input", { type: "number", min: "256", max: "16777216", step: "1", inputmode: "numeric",
        placeholder: String(DEFAULT_CONTEXT), value: typed.get(name) || "", "data-model": name });
      return field(`Context of ${name}`, input, "Tokens; empty for 128,000.");
    }));
  };
  models.addEventListener("input", draw);
  draw();
  // The models as the daemon takes them: a name, or {id, context_length}.
  box.entries = () => names().map((name) => {
    const input = [...box.querySelectorAll("input")].find((i) => i.dataset.model === name);
    const value = input ? input.value.trim() : "";
    return value ? { id: name, context_length: Number(value) } : name;
  });
  return box;
}

// The daemon's refusals of a provider, said for a person beside the field they concern.
function providerRules(f) {
  const address = "like https://api.example.com/v1";
  return [
    [/base_url is empty/, f.base, `Give the provider's address, ${address}.`],
    [/base_url must start with/, f.base, "The address starts with https:// (http:// only for a service on this machine or network)."],
    [/^http:\/\/ is accepted only/, f.base, "http:// is only for a service on this machine or the local network; use https://."],
    [/base_url may not carry a user name/, f.base, "Leave the user name and password out of the address; put the key under API key."],
    [/base_url may not have a query/, f.base, `Leave out any ?… or #… part: give the address the API starts at, ${address}.`],
    [/base_url/, f.base, `That is not an address that can be used: give one ${address}.`],
    [/A provider lists at most (\d+)/, f.models, (m) => `At most ${m[1]} models for one provider.`],
    [/context_length of '([^']*)'/, f.models, (m) => `The context of ${m[1]} must be a whole number of tokens, from 256 to 16,777,216.`],
    [/model's name|model's field|body\.models/, f.models, "Give the models' names, separated by commas."],
    [/^name is empty/, f.name, "Give the provider a name."],
    [/^name /, f.name, "That name is too long or holds characters that cannot be shown."],
    [/api_key is longer/, f.key, "That key is too long to be a key."],
    [/api_key/, f.key, "A key holds only printable characters, without spaces."],
  ];
}

function providerForm(provider, done) {
  const name = h("input", { type: "text", value: provider ? provider.name : "", required: true, autocomplete: "off" });
  const base = h("input", { type: "url", value: provider ? provider.base_url : "", required: true,
    placeholder: "https://api.example.com/v1", autocomplete: "off" });
  const models = h("input", { type: "text", value: provider ? provider.models.map(modelName).join(", ") : "",
    placeholder: "model-a, model-b", autocomplete: "off" });
  const contexts = contextFields(models, (provider ? provider.models : [])
    .filter((m) => typeof m !== "string").map((m) => [m.id, String(m.context_length)]));
  // The key is never read back: the field starts empty; empty keeps the saved one.
  const key = h("input", { type: "password", value: "", autocomplete: "new-password",
    placeholder: provider && provider.has_key ? "saved: leave empty to keep it" : "" });
  const removeKey = h("input", { type: "checkbox" });
  const error = alertLine("");
  const rules = providerRules({ name, base, models, key });
  const form = h("form.card.provider-form", { "aria-label": provider ? `Edit ${provider.name}` : "New provider" },
    field("Name", name), field("Base URL", base), field("Models", models, "Separated by commas."), contexts,
    field("API key", key, "Written once; the daemon never shows it again."),
    provider && provider.has_key ? h("label.inline", {}, removeKey, "Remove the saved key") : null, error,
    h("div.actions", {}, h("button.primary", { type: "submit" }, provider ? "Save provider" : "Add provider"),
      h("button.quiet", { type: "button", onclick: () => done(false) }, "Cancel")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = {
      name: name.value.trim(),
      base_url: base.value.trim(),
      models: contexts.entries(),
    };
    if (key.value) body.api_key = key.value;
    else if (removeKey.checked) body.api_key = "";
    // A provider with no models could never be picked: said here, before any request.
    if (!body.models.length) {
      for (const c of [name, base, models, key]) unsay(c);
      sayAt(models, "Name at least one model this provider serves, such as gpt-4o-mini.");
      models.focus();
      return;
    }
    const saved = await attemptAt(error, rules, [name, base, models, key], () =>
      provider ? api("PUT", `/api/providers/${encodeURIComponent(provider.id)}`, body) : api("POST", "/api/providers", body));
    key.value = "";
    if (saved) done(true);
  });
  return form;
}

const modelLabel = (m) => (typeof m === "string" ? m : `${m.id} (${m.context_length.toLocaleString("en")} tokens)`);

function providersPage(main) {
  const body = page(main, "Providers",
    "OpenAI-compatible services a conversation may use instead of the local model. Only that conversation's messages go there.");
  const load = async () => {
    const providers = await api("GET", "/api/providers");
    const adding = h("div");
    clear(body,
      h("button.primary", { type: "button", onclick: () =>
        clear(adding, providerForm(null, (saved) => (saved ? load() : clear(adding)))) }, "Add a provider"),
      adding,
      providers.length ? null : h("p.muted", {}, "No providers saved."),
      h("ul.rows", { "aria-label": "Providers" }, providers.map((p) => {
        const editing = h("div");
        return h("li.row", { "aria-label": p.name },
          h("div.row-main", {},
            h("strong", {}, p.name), " ", h("code.muted", {}, p.base_url),
            h("span.badge", {}, p.has_key ? "key saved" : "no key"),
            h("p.small", {}, `Models: ${p.models.map(modelLabel).join(", ")}`)),
          h("div.row-actions", {},
            h("button.quiet", { type: "button", "aria-label": `Edit ${p.name}`, onclick: () =>
              clear(editing, providerForm(p, (saved) => (saved ? load() : clear(editing)))) }, "Edit"),
            deleteButton(p.name, async () => {
              if (await attempt(() => api("DELETE", `/api/providers/${encodeURIComponent(p.id)}`))) load();
            })),
          editing);
      })));
  };
  return pageView(load, body);
}

// ---- connect ----

function connectPage(main) {
  const body = page(main, "Connect other apps",
    "Settings for coding agents and editors to use this daemon's model. The key, if any, is never written into them.");
  const load = async () => {
    const clients = await api("GET", "/api/connect");
    clear(body, h("ul.rows", { "aria-label": "Apps" }, clients.map((c) => {
      const result = h("p.small", { role: "status" });
      const copy = h("button.quiet", { type: "button", "aria-label": `Copy the ${c.name} snippet` }, "Copy");
      copy.addEventListener("click", async () => {
        try {
          await navigator.clipboard.writeText(c.snippet);
          toast("Copied.", "info");
        } catch {
          toast("The browser did not allow copying: select the text instead.");
        }
      });
      return h("li.row.connect", { "aria-label": c.name },
        h("div.row-main", {},
          h("strong", {}, c.name),
          h("div.small.markdown.how", { html: renderMarkdown(c.how) }),
          h("pre.snippet", { "aria-label": `${c.name} settings`, tabindex: "0" }, c.snippet),
          c.file ? h("p.small.muted", {}, `Its file: ${c.file}`) : null,
          result),
        h("div.row-actions", {}, copy,
          c.writable
            ? h("button", { type: "button", "aria-label": `Write the ${c.name} settings`,
                onclick: (ev) => writeSettings(c, result, ev.currentTarget) }, "Write")
            : null));
    })));
  };
  return pageView(load, body);
}

// Write asks first: what the write changes in the file, as a diff, then Write or
// Cancel. The focus goes back to the button that asked.
async function writeSettings(c, result, opener) {
  const id = encodeURIComponent(c.id);
  const shown = await attempt(() => api("GET", `/api/connect/${id}/preview`));
  if (!shown) return;
  if (!shown.changed) {
    result.textContent = `${shown.file} has these settings already; nothing to write.`;
    return;
  }
  const write = h("button.primary", { type: "submit", value: "write" }, "Write these settings");
  const dialog = h("dialog.dialog.settings-diff", { "aria-labelledby": "settings-diff-title" },
    h("form", { method: "dialog" },
      h("h2#settings-diff-title", {}, `Write the ${c.name} settings?`),
      h("p.small", {}, shown.exists
        ? `This changes ${shown.file}; the file as it is now is kept as a backup beside it.`
        : `This creates ${shown.file}.`),
      h("pre.diff", { "aria-label": "What changes in the file", tabindex: "0", html: renderDiff(shown.diff) }),
      h("div.actions", {}, h("button", { type: "submit", value: "cancel" }, "Cancel"), write)));
  document.body.append(dialog);
  dialog.addEventListener("close", async () => {
    const chosen = dialog.returnValue;
    dialog.remove();
    opener.focus();
    if (chosen !== "write") return;
    const done = await attempt(() => api("POST", `/api/connect/${id}`, {}));
    if (done) result.textContent = `Written to ${done.file}` + (done.backup ? `; the old file is kept as ${done.backup}.` : ".");
  });
  dialog.showModal();
  write.focus();
}

// ---- the agent and its MCP servers ----

const HOOK_EVENTS = {
  pre_tool_use: "Before a tool runs",
  post_tool_use: "After a tool ran",
  session_start: "When a run starts",
  session_end: "When a run ends",
};
const HOOK_RESULTS = {
  ran: "ran", blocked: "blocked the call", failed: "failed", timed_out: "timed out", stopped: "stopped",
  dropped: "dropped (too many waiting)",
};

function hookRow(hook) {
  const last = hook.last;
  const what = hook.kind === "http" ? hook.url : hook.command;
  const trigger = hook.kind === "http"
    ? `HTTP, on ${(hook.events || []).map((e) => HOOK_EVENTS[e] || e).join(", ").toLowerCase()}`
    : HOOK_EVENTS[hook.event] || hook.event;
  return h("li.row.hook", { "aria-label": `${hook.kind === "http" ? "HTTP" : hook.event}: ${what}` },
    h("div.row-main", {},
      h("strong", {}, trigger), " ",
      hook.kind === "http" ? null : h("code.muted", {}, hook.event),
      hook.kind === "http" ? null : h("span.badge", {}, hook.matcher ? `tools ${hook.matcher}` : "every tool"),
      h("pre.hook-command", {}, what),
      h("p.small.hook-last", {},
        last
          ? [h(`span.badge.hook-${last.result}`, {}, HOOK_RESULTS[last.result] || last.result), " ",
             when(last.at), last.duration_ms ? `, ${last.duration_ms} ms` : "",
             last.detail ? [": ", h("span.hook-detail", {}, last.detail)] : ""]
          : h("span.muted", {}, "Not run since the daemon started."),
        hook.timeout_s && hook.kind !== "http" ? h("span.muted", {}, ` · time limit ${hook.timeout_s} s`) : null)));
}

// The person's hooks (GET /api/hooks): each with its last outcome, and why the file
// cannot be used when it cannot.
function hooksSection(hooks) {
  const intro = "Your own scripts on what the built-in agent does. A hook before a tool that exits 2 blocks the call.";
  if (hooks instanceof Error) {
    return [h("h2", {}, "Hooks"), h("p.error-text", { role: "alert" }, problem(hooks))];
  }
  if (!hooks.enabled) return [h("h2", {}, "Hooks"), h("p.muted", {}, "Hooks are off on this daemon (chat only).")];
  return [
    h("h2", {}, "Hooks"),
    h("p.small.muted", {}, intro, " From ", h("code", {}, hooks.file), ", read again when it changes."),
    hooks.error
      ? h("p.error-text.hooks-error", { role: "alert" }, hooks.error,
          hooks.error_at ? ` (${when(hooks.error_at)}; its last good version is used)` : "")
      : null,
    hooks.hooks.length ? null : h("p.muted", {}, "No hooks."),
    h("ul.rows", { "aria-label": "Hooks" }, hooks.hooks.map(hookRow)),
  ];
}

function agentPage(main) {
  const body = page(main, "Agent, MCP servers and hooks", "What conversations here may use, and your hooks.");
  const load = async () => {
    const [info, hooks] = await Promise.all([api("GET", "/api/agent"), api("GET", "/api/hooks").catch((err) => err)]);
    clear(body,
      h("ul.facts", {},
        h("li", {}, info.tools ? "Conversations with a workspace get file tools." : "Plain chat only: no tools."),
        h("li", {}, info.commands ? "Commands may run." : "Commands do not run here.")),
      h("h2", {}, "Agents"),
      h("ul.rows", { "aria-label": "Agents" }, info.agents.map((a) =>
        h("li.row", {}, h("div.row-main", {}, h("strong", {}, a.name), " ",
          h("span.badge", {}, a.available ? "available" : `missing ${a.missing.join(", ")}`))))),
      h("h2", {}, "MCP servers"),
      info.mcp.length ? null : h("p.muted", {}, "None configured (add them to mcp.json in the data folder)."),
      h("ul.rows", { "aria-label": "MCP servers" }, info.mcp.map((m) =>
        h("li.row", { "aria-label": m.name },
          h("div.row-main", {},
            h("strong", {}, m.name), " ", h(`span.badge.mcp-${m.state}`, {}, m.state),
            h("p.small.muted", {}, m.command),
            m.error ? h("p.error-text", {}, m.error) : null,
            m.tools.length
              ? h("details", {}, h("summary", {}, `${m.tools.length} tools`),
                  h("ul", {}, m.tools.map((t) => h("li", {}, h("code", {}, t.name), ` — ${t.description || ""}`))))
              : null)))),
      hooksSection(hooks),
    );
  };
  return pageView(load, body);
}

export const PAGES = {
  skills: skillsPage,
  tasks: tasksPage,
  providers: providersPage,
  connect: connectPage,
  agent: agentPage,
};
