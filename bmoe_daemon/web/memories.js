// A workspace's memories on the workspaces page: what the agent kept of the folder with
// memory_write (actors/tools/memory.py), the newest first, each with Edit and Forget,
// and the switch that lets read-only conversations remember too. Every change goes
// through /api/workspaces/<id>/memories; a refusal is said beside the memory.

import { api } from "./api.js";
import { alertLine, clear, h } from "./dom.js";
import { attemptIn, problem, toast } from "./ui.js";

function enc(s) {
  return encodeURIComponent(s);
}

// "build, tests" <-> ["build", "tests"]
function tagsOf(text) {
  return text.split(/[\s,]+/).map((t) => t.trim()).filter(Boolean);
}

function memoryRow(ws, memory, reload) {
  const error = alertLine("");
  const row = h("li.memory", { "aria-label": memory.text.slice(0, 80) });
  const show = () => {
    const edit = h("button.quiet", { type: "button", "aria-label": `Edit the memory ${memory.text.slice(0, 40)}` }, "Edit");
    const forget = h("button.quiet.danger", { type: "button",
      "aria-label": `Forget the memory ${memory.text.slice(0, 40)}` }, "Forget");
    edit.addEventListener("click", editing);
    forget.addEventListener("click", async () => {
      forget.disabled = true;
      const done = await attemptIn(error, () => api("DELETE", `/api/workspaces/${enc(ws.id)}/memories/${enc(memory.id)}`));
      forget.disabled = false;
      if (done) reload("forget");
      else forget.focus();
    });
    clear(row,
      h("p.memory-text", {}, memory.text),
      memory.tags.length ? h("span.memory-tags.muted.small", {}, memory.tags.map((t) => h("code", {}, t))) : null,
      h("span.spacer"), edit, forget, error);
  };
  const editing = () => {
    const text = h("textarea.memory-edit", { rows: 3, maxlength: 2000, "aria-label": "The memory's text" });
    text.value = memory.text;
    const tags = h("input.memory-tags-edit", { type: "text", autocomplete: "off",
      "aria-label": "Its tags, separated by commas", placeholder: "build, tests" });
    tags.value = memory.tags.join(", ");
    const save = h("button.primary", { type: "submit" }, "Save");
    const cancel = h("button.quiet", { type: "button" }, "Cancel");
    const form = h("form.memory-form", { "aria-label": "Edit the memory" }, text, tags,
      h("div.actions", {}, save, cancel), error);
    cancel.addEventListener("click", () => {
      show();
      row.querySelector("button").focus();
    });
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      save.disabled = true;
      const changed = await attemptIn(error, () => api("PATCH", `/api/workspaces/${enc(ws.id)}/memories/${enc(memory.id)}`,
        { text: text.value, tags: tagsOf(tags.value) }));
      save.disabled = false;
      if (!changed) {
        text.focus();
        return;
      }
      Object.assign(memory, changed);
      toast("Memory saved.", "info");
      show();
      row.querySelector("button").focus();
    });
    clear(row, form);
    text.focus();
  };
  show();
  return row;
}

// Whether read-only conversations may write memories (off by default).
function readOnlySwitch(ws) {
  const id = `ws-mem-ro-${ws.id}`;
  const box = h("input.ws-memory-ro-box", { type: "checkbox", id, checked: ws.memory_in_read_only });
  box.addEventListener("change", async () => {
    const want = box.checked;
    box.disabled = true;
    try {
      ws.memory_in_read_only = (await api("PATCH", `/api/workspaces/${enc(ws.id)}`,
        { memory_in_read_only: want })).memory_in_read_only;
    } catch (err) {
      toast(problem(err));
    }
    box.checked = Boolean(ws.memory_in_read_only);
    box.disabled = false;
  });
  return h("label.inline.small", { for: id }, box, " Read-only conversations may remember too");
}

// The section and its `reload` (focus: "forget" keeps the keyboard in the list).
export function memorySection(ws) {
  const listEl = h("div.memories");
  const section = h("section.ws-memories", { "aria-label": `Memories of ${ws.name}` },
    h("h3.rules-title", {}, "Remembered"),
    h("p.small.muted", {}, "What the agent kept of this folder for later conversations. The model reads these as "
      + "notes, never as instructions above yours."),
    readOnlySwitch(ws), listEl);
  const reload = async (focus) => {
    let memories;
    try {
      memories = await api("GET", `/api/workspaces/${enc(ws.id)}/memories`);
    } catch (err) {
      clear(listEl, h("p.error-text", { role: "alert" }, problem(err)));
      return;
    }
    clear(listEl, memories.length
      ? h("ul.memory-list", { "aria-label": `Memories of ${ws.name}` }, memories.map((m) => memoryRow(ws, m, reload)))
      : h("p.muted.small.no-memories", {}, "Nothing remembered yet."));
    if (focus === "forget") (listEl.querySelector(".memory button") || section.querySelector("input")).focus();
  };
  return { section, reload };
}
