// A task's runs on the tasks page (tasks.js): the fold under a task that lists the
// conversations its runs made, newest first, a page at a time.

import { request } from "./api.js";
import { clear, h, when } from "./dom.js";
import { limits } from "./limits.js";
import { endWords } from "./run.js";
import { problem, stateWords } from "./ui.js";

const RUNS_PAGE = 20;

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
export function runsFold(task, gone) {
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
  let moreAsked = false; // "Load more runs" pressed while another read was under way
  const items = new Map(); // run id -> its <li>, kept across reads (a focused link stays)

  const named = () => {
    summary.textContent = `Runs (the last ${t.keep_runs ?? limits.keep_runs.default} are kept)`;
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
    const state = stateWords(c);
    const end = endWords(c.end_reason);
    clear(li.lastElementChild, h(`span.badge.state-${c.state}`, {}, state),
      end && end !== state ? h("span.small.muted", {}, ` ${end}`) : null);
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
      const p = await page(cursor, Math.min(limit, limits.conversations_limit.max));
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
      if (before) moreAsked = true; // the next page once this read ends (its cursor may move)
      else again = true;
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
    } else if (moreAsked) {
      moreAsked = false;
      if (next) load(next);
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
