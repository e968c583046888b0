// The sidebar's conversation list: newest first, read a page at a time
// (GET /api/conversations?limit=&before=, the next page's cursor in X-Next-Before),
// more as the person scrolls to its end (or presses "Load more"), a search box that
// asks the daemon (`q`: a part of the title; and what the conversations hold, under
// the titles: found.js), and `conversation` events that put a changed or new
// conversation on top, once.
//
// Each row says how many of its cards wait for the person (`waiting_cards`). The page
// title's count of cards waiting, in every conversation, is not read from the rows
// loaded (a waiting one may be older than every page read): it is the daemon's own
// list of the conversations waiting (`?state=waiting`), read at the start and after a
// gap in the stream, then kept by the events, which say each change of the count.

import { api, request } from "./api.js";
import { clear, h, heldBy, timeAgo } from "./dom.js";
import { findInside, startFound } from "./found.js";
import { limits, readLimits } from "./limits.js";
import { problem, stateWords, toast, waitingCards } from "./ui.js";

export const PAGE_SIZE = 50;
const SEARCH_DELAY_MS = 250;
const TOP_DELAY_MS = 150;
const TOP_ROWS = 20; // read again when a conversation this list does not hold changes

const list = {
  rows: [], // the rows loaded, newest first
  next: null, // the cursor of the page after the rows loaded; null: none (the last was read)
  query: "", // the search, as typed (trimmed)
  serial: 0, // a newer read of the first page makes an older one's answer stale
  more: null, // the read of the next page on its way
  error: "",
  loaded: false, // a first page was read
  waiting: new Map(), // id -> its cards waiting for the person, of every conversation with one (not only those loaded)
  changed: null, // while the waiting ones are read: the counts events said meanwhile (id -> count)
  current: null, // the open conversation's id
  topTimer: null,
  searchTimer: null,
  observer: null,
  // Deleted conversations (their events): a read that was on its way when one was
  // deleted may still hold it, and must not bring its row back. Ids are never reused.
  gone: new Set(),
};
const GONE_KEPT = 1000;

const els = {};

function key(c) {
  return [c.updated || 0, c.created || c.updated || 0, c.id];
}

// Newest first: by updated, then created, then id (the daemon's order).
function newer(a, b) {
  const ka = key(a);
  const kb = key(b);
  for (let i = 0; i < 3; i++) if (ka[i] !== kb[i]) return ka[i] > kb[i] ? -1 : 1;
  return 0;
}

function matches(c) {
  return !list.query || (c.title || "").toLowerCase().includes(list.query.toLowerCase());
}

// The list's search looks at titles only (`match=title`): what the conversations hold is
// found.js's, ranked by item, under the titles.
function path(params) {
  const qs = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") qs.set(k, String(v));
  if (qs.has("q")) qs.set("match", "title");
  return `/api/conversations?${qs}`;
}

// One page: its rows and the next page's cursor (null after the last).
async function readPage(params) {
  const { data, headers } = await request("GET", path(params));
  return { rows: data, next: headers.get("X-Next-Before") };
}

// Rows read (a page, the top again) or said by an event put in: a row already held is
// updated, never doubled. A read answers as things were when it was asked: where the row
// held is newer (an event came meanwhile: its `updated` moves with every change), the
// held fields win and the read only fills in what they lack.
function merge(rows) {
  const byId = new Map(list.rows.map((c) => [c.id, c]));
  for (const r of rows) {
    if (list.gone.has(r.id)) continue;
    const held = byId.get(r.id);
    byId.set(r.id, held && (held.updated || 0) > (r.updated || 0) ? { ...r, ...held } : { ...held, ...r });
  }
  list.rows = [...byId.values()].sort(newer);
}

export function conversationInfo(id) {
  return list.rows.find((c) => c.id === id);
}

// Reads the list again from its top: as many rows as are loaded (at least a page, at
// most what the daemon gives in one read), so the place the person scrolled to stays.
export async function refreshList() {
  const serial = ++list.serial;
  let page;
  try {
    await readLimits();
    const limit = Math.min(limits.conversations_limit.max, Math.max(PAGE_SIZE, list.rows.length));
    page = await readPage({ limit, q: list.query });
  } catch (err) {
    if (serial === list.serial) {
      list.error = problem(err);
      renderList();
    }
    return;
  }
  if (serial !== list.serial) return;
  list.error = "";
  list.loaded = true;
  list.rows = page.rows.filter((c) => !list.gone.has(c.id));
  list.next = page.next;
  list.more = null;
  renderList();
}

function cardsWaiting(c) {
  return Number(c.waiting_cards) || 0;
}

// Every card waiting, in every conversation: the page title's count.
function showWaiting() {
  let total = 0;
  for (const n of list.waiting.values()) total += n;
  waitingCards(total);
}

// A conversation's count of cards waiting, as the daemon said it.
function noteWaiting(waiting, id, n) {
  if (n > 0) waiting.set(id, n);
  else waiting.delete(id);
}

// The conversations waiting for the person, every one of them (for the page title).
//
// Events that come while the answer travels are newer than it: their counts win.
export async function refreshWaiting() {
  const changed = new Map();
  list.changed = changed;
  let rows;
  try {
    rows = await api("GET", path({ state: "waiting" }));
  } catch {
    return; // the count stays as the events left it
  } finally {
    if (list.changed === changed) list.changed = null;
  }
  const waiting = new Map();
  for (const c of rows) noteWaiting(waiting, c.id, cardsWaiting(c));
  for (const [id, n] of changed) noteWaiting(waiting, id, n);
  list.waiting = waiting;
  showWaiting();
}

// The next page, after the rows loaded.
export async function loadMore() {
  if (!list.next || list.more) return list.more;
  const serial = list.serial;
  const before = list.next;
  list.more = (async () => {
    let page;
    try {
      page = await readPage({ limit: PAGE_SIZE, before, q: list.query });
    } catch (err) {
      if (serial === list.serial) {
        list.more = null;
        toast(problem(err));
        renderList();
      }
      return;
    }
    if (serial !== list.serial) return; // the list was read again from the top meanwhile
    merge(page.rows);
    list.next = page.next;
    list.more = null;
    renderList();
    // Watched afresh, the sentinel is reported as it is now: still in view (the page
    // did not fill the list), the next page comes too.
    list.observer.unobserve(els.sentinel);
    list.observer.observe(els.sentinel);
  })();
  renderList();
  return list.more;
}

function readTopSoon() {
  clearTimeout(list.topTimer);
  list.topTimer = setTimeout(readTop, TOP_DELAY_MS);
}

// The newest rows again, merged: a conversation this list did not hold that changed
// is among them (with its mode and times, which its event does not carry).
async function readTop() {
  const serial = list.serial;
  let page;
  try {
    page = await readPage({ limit: TOP_ROWS, q: list.query });
  } catch {
    return;
  }
  if (serial !== list.serial) return;
  merge(page.rows);
  renderList();
}

export function forgetConversation(id) {
  list.gone.add(id);
  if (list.gone.size > GONE_KEPT) list.gone.delete(list.gone.values().next().value);
  list.rows = list.rows.filter((c) => c.id !== id);
  if (list.waiting.delete(id)) showWaiting();
  renderList();
}

// A conversation this page made or changed (the daemon's answer): on top at once.
export function conversationChanged(conv) {
  if (matches(conv)) merge([conv]);
  else list.rows = list.rows.filter((c) => c.id !== conv.id);
  renderList();
}

// A `conversation` event: the row moves to where its new time puts it (the top), a
// conversation not held comes from the daemon's top rows; one the search no longer
// finds leaves the list.
export function onConversationEvent(data) {
  const n = cardsWaiting(data);
  if (list.changed) list.changed.set(data.id, n);
  const had = list.waiting.get(data.id) || 0;
  noteWaiting(list.waiting, data.id, n);
  if (had !== n) showWaiting();
  const known = conversationInfo(data.id);
  if (!matches(data)) {
    if (known) forgetRow(data.id);
    return;
  }
  if (!known) {
    // Shown at once from the event; the daemon's top rows fill in the rest.
    // Only what the event says: its mode and creation time come with the top rows.
    merge([{ id: data.id, title: data.title, state: data.state, updated: data.updated, waiting_cards: n,
      end_reason: data.end_reason }]);
    renderList();
    readTopSoon();
    return;
  }
  merge([{ id: data.id, title: data.title, state: data.state, updated: data.updated, waiting_cards: n,
    end_reason: data.end_reason }]);
  renderList();
}

function forgetRow(id) {
  list.rows = list.rows.filter((c) => c.id !== id);
  renderList();
}

export function setCurrent(id) {
  list.current = id;
  renderList();
}

// How many of the conversation's cards wait: a number one sees, said in words.
function waitingBadge(n) {
  if (!n) return null;
  return h("span.badge.waiting-count", { title: n === 1 ? "1 card waiting for you" : `${n} cards waiting for you` },
    h("span", { "aria-hidden": "true" }, String(n)),
    h("span.visually-hidden", {}, `${n} waiting`));
}

function row(c) {
  return h("li", { "data-id": c.id },
    h("a.conv-link", { href: `#/c/${encodeURIComponent(c.id)}`, "aria-current": c.id === list.current ? "page" : null },
      h("span.conv-title", {}, c.title || "New conversation"),
      h("span.conv-meta", {},
        h(`span.badge.state-${c.state}`, {}, stateWords(c)),
        waitingBadge(cardsWaiting(c)),
        c.mode && c.mode !== "ask" ? h("span.badge.mode", {}, c.mode === "full" ? "full access" : "read only") : null,
        h("time.muted", { datetime: new Date(c.updated * 1000).toISOString() }, timeAgo(c.updated)))));
}

export function renderList() {
  if (!els.list) return;
  if (heldBy(els.list, renderList)) return; // a row clicked as the list changes: drawn after the click
  // The keyboard's place: a row drawn again keeps it.
  const focused = els.list.contains(document.activeElement)
    ? document.activeElement.closest("li")?.dataset.id : null;
  clear(els.list, list.rows.map(row));
  if (focused) els.list.querySelector(`li[data-id="${CSS.escape(focused)}"] a`)?.focus();
  const empty = list.loaded && !list.rows.length && !list.next;
  els.empty.hidden = !empty || Boolean(list.error);
  els.empty.textContent = list.query
    ? `No conversation has “${list.query}” in its title.`
    : "No conversations yet.";
  els.error.textContent = list.error;
  els.error.hidden = !list.error;
  els.more.hidden = !list.next;
  // Not `disabled`: the keyboard stays on the button while the page comes.
  els.moreBtn.setAttribute("aria-disabled", list.more ? "true" : "false");
  els.moreBtn.textContent = list.more ? "Loading…" : "Load more";
  els.sentinel.hidden = !list.next;
}

function search() {
  const q = els.search.value.trim();
  if (q === list.query) return;
  list.query = q;
  list.rows = [];
  list.next = null;
  refreshList();
  findInside(q);
}

// Builds the search box, "Load more" and the sentinel around the list in the page.
export function startList() {
  els.list = document.getElementById("conv-list");
  els.empty = document.getElementById("conv-empty");
  els.nav = els.list.closest(".conv-nav");
  els.search = h("input.conv-search", { type: "search", "aria-label": "Search conversations",
    placeholder: "Search", autocomplete: "off", spellcheck: "false" });
  els.error = h("p.error-text.small", { role: "alert", hidden: true });
  els.moreBtn = h("button.quiet.conv-more", { type: "button" }, "Load more");
  els.more = h("div.conv-more-row", { hidden: true }, els.moreBtn);
  els.sentinel = h("div.conv-sentinel", { "aria-hidden": "true", hidden: true });
  els.nav.before(h("div.conv-search-row", { role: "search" }, els.search));
  els.empty.setAttribute("role", "status");
  els.list.after(els.more, els.sentinel);
  startFound(els.sentinel);
  els.empty.after(els.error);
  els.search.addEventListener("input", () => {
    clearTimeout(list.searchTimer);
    list.searchTimer = setTimeout(search, SEARCH_DELAY_MS);
  });
  els.search.addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") {
      clearTimeout(list.searchTimer);
      search();
    } else if (ev.key === "Escape" && els.search.value) {
      els.search.value = "";
      clearTimeout(list.searchTimer);
      search();
    }
  });
  els.moreBtn.addEventListener("click", async () => {
    const held = list.rows.length;
    await loadMore();
    // The last page came and the button went: the keyboard goes to the first row it brought.
    if (document.activeElement === document.body || (els.more.hidden && document.activeElement === els.moreBtn)) {
      els.list.querySelectorAll("a")[held]?.focus();
    }
  });
  // The sentinel after the last row: seen (scrolled near), the next page comes.
  list.observer = new IntersectionObserver((entries) => {
    if (entries[entries.length - 1].isIntersecting) loadMore();
  }, { root: els.nav, rootMargin: "0px 0px 200px 0px" });
  list.observer.observe(els.sentinel);
}
