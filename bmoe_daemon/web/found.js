// What the sidebar's search finds inside the conversations (GET /api/search): under the
// titles that match (sidebar.js), the messages, answers and tool cards with the words,
// best first, each a snippet with the words marked, a link that opens its conversation
// at that item (#/c/<id>/i/<item>). The titles are the list's: a match in a title only
// is not shown twice here.

import { api } from "./api.js";
import { clear, h } from "./dom.js";
import { problem } from "./ui.js";

const FOUND_LIMIT = 20;
const KIND_LABELS = { user: "Message", assistant: "Answer", tool: "Tool" };

const found = { query: "", serial: 0 };
const els = {};

// The snippet as text nodes, the matched words in <mark> (never HTML from the daemon).
function snippet(text, marks) {
  const out = [];
  let at = 0;
  for (const [start, end] of marks) {
    if (start < at || end <= start || end > text.length) continue;
    out.push(text.slice(at, start), h("mark", {}, text.slice(start, end)));
    at = end;
  }
  out.push(text.slice(at));
  return out;
}

function row(hit) {
  const href = `#/c/${encodeURIComponent(hit.conversation)}/i/${encodeURIComponent(hit.item)}`;
  return h("li", { "data-id": hit.conversation, "data-found": hit.item },
    h("a.conv-link.found-link", { href },
      h("span.conv-title", {}, hit.title || "New conversation"),
      h("span.found-snippet", {}, h("span.badge", {}, KIND_LABELS[hit.kind] || hit.kind), " ",
        snippet(hit.snippet, hit.marks))));
}

function render(hits, note) {
  els.section.hidden = !found.query;
  clear(els.list, hits.map(row));
  els.status.textContent = note;
  els.status.hidden = !note;
}

// Looks for `q` inside the conversations (empty: the section goes).
export async function findInside(q) {
  found.query = q;
  const serial = ++found.serial;
  if (!q) {
    render([], "");
    return;
  }
  let answer;
  try {
    answer = await api("GET", `/api/search?${new URLSearchParams({ q, limit: String(FOUND_LIMIT) })}`);
  } catch (err) {
    if (serial === found.serial) render([], problem(err));
    return;
  }
  if (serial !== found.serial) return;
  const hits = answer.results.filter((r) => r.item);
  let note = "";
  if (!hits.length) note = `No message or answer has “${q}”.`;
  if (answer.indexing) note = `${note} Still reading conversations into the search: some may be missing.`.trim();
  render(hits, note);
}

// Builds the section after `after` in the sidebar's list.
export function startFound(after) {
  els.list = h("ul.conv-list.found-list");
  els.status = h("p.muted.small", { role: "status", hidden: true });
  els.section = h("section.found", { "aria-label": "Found in conversations", hidden: true },
    h("h2.found-head", {}, "In messages"), els.list, els.status);
  after.after(els.section);
}
