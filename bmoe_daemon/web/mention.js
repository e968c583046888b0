// @-mentions in a message box: typing `@` and part of a path lists the workspace's
// files that match (GET /api/workspaces/<id>/files?q=, at most 50, best first) under
// the box. Arrow keys move through the list, Enter or Tab puts the file in the text as
// `@path` (a path with a space as `@"path"`), Escape closes it; a click picks too. The
// box keeps its textbox role: it names the list (aria-controls), says which option is
// active (aria-activedescendant), and a status line announces how many files match.
// The message reaches the model as typed, the mention a workspace-relative path the
// agent's tools read.

import { api } from "./api.js";
import { clear, h } from "./dom.js";

let lists = 0;
const LIMIT = 12; // shown at once; the daemon ranks the best first

// The `@word` that ends at the caret, as {start, query}, or null.
function mentionAt(box) {
  const caret = box.selectionStart;
  if (caret !== box.selectionEnd) return null;
  const m = /(^|\s)@("?)([^\s@"]*)$/.exec(box.value.slice(0, caret));
  return m ? { start: caret - m[3].length - m[2].length - 1, query: m[3] } : null;
}

// `workspaceOf()`: the workspace whose files the box mentions (null: no mention list).
// Answers `{ refresh() }`: to call when the workspace becomes known or changes, so that
// a mention typed before then (a conversation still being read) is listed.
export function attachMentions(box, workspaceOf) {
  const id = `mention-list-${++lists}`;
  const list = h("ul.mention-list", { id, role: "listbox", "aria-label": "Files to mention", hidden: true });
  const status = h("span.visually-hidden", { role: "status", "aria-live": "polite" });
  box.setAttribute("aria-autocomplete", "list");
  box.setAttribute("aria-controls", id);
  box.after(list, status);
  let items = [];
  let active = -1;
  let at = null;
  let asked = 0;

  const close = () => {
    list.hidden = true;
    items = [];
    active = -1;
    at = null;
    box.removeAttribute("aria-activedescendant");
  };
  const mark = (i) => {
    active = i;
    list.querySelectorAll("[role=option]").forEach((o, n) => o.setAttribute("aria-selected", String(n === i)));
    const option = list.children[i];
    if (option) {
      box.setAttribute("aria-activedescendant", option.id);
      option.scrollIntoView({ block: "nearest" });
    }
  };
  const pick = (path) => {
    const caret = box.selectionStart;
    const text = /\s/.test(path) ? `@"${path}" ` : `@${path} `;
    box.setRangeText(text, at.start, caret, "end");
    close();
    box.dispatchEvent(new Event("input", { bubbles: true })); // the draft and the box's height follow
    box.focus();
  };
  const show = (files) => {
    items = files.slice(0, LIMIT);
    if (!items.length) {
      clear(status, "No file matches.");
      list.hidden = true;
      box.removeAttribute("aria-activedescendant");
      return;
    }
    clear(list, items.map((path, n) => {
      const slash = path.lastIndexOf("/");
      const option = h("li", { id: `${id}-${n}`, role: "option", "aria-selected": "false" },
        h("span.mention-name", {}, path.slice(slash + 1)),
        slash >= 0 ? h("span.mention-folder", {}, path.slice(0, slash + 1)) : null);
      option.addEventListener("mousedown", (ev) => ev.preventDefault()); // the box keeps the focus
      option.addEventListener("click", () => pick(path));
      return option;
    }));
    list.hidden = false;
    mark(0);
    clear(status, `${items.length} file${items.length === 1 ? "" : "s"} to mention: arrows move, Enter picks, Escape closes.`);
  };
  const lookUp = async () => {
    const ws = workspaceOf();
    const found = ws ? mentionAt(box) : null;
    if (!found) return close();
    at = found;
    const mine = ++asked;
    let answer;
    try {
      answer = await api("GET", `/api/workspaces/${encodeURIComponent(ws)}/files?q=${encodeURIComponent(found.query)}`
        + `&limit=${LIMIT}`);
    } catch {
      return close(); // the box goes on as plain text
    }
    if (mine === asked && at) show(answer.files);
  };

  box.addEventListener("input", (ev) => {
    if (ev.isTrusted) lookUp();
  });
  box.addEventListener("blur", close);
  // Before the box's own keys (Enter sends): capture listeners run first at the target.
  box.addEventListener("keydown", (ev) => {
    if (list.hidden || !items.length) return;
    if (ev.key === "ArrowDown" || ev.key === "ArrowUp") {
      mark((active + (ev.key === "ArrowDown" ? 1 : items.length - 1)) % items.length);
    } else if ((ev.key === "Enter" || ev.key === "Tab") && !ev.shiftKey && !ev.isComposing) {
      pick(items[active]);
    } else if (ev.key === "Escape") {
      close();
    } else {
      return;
    }
    ev.preventDefault();
    ev.stopImmediatePropagation();
  }, { capture: true });
  return {
    refresh() {
      if (document.activeElement === box) lookUp();
    },
  };
}
