// A conversation exported and imported (GET /api/conversations/<id>/export, POST
// /api/conversations/import): the conversation's menu offers the two files, JSON (to
// import here or elsewhere) and Markdown (to read); the home page and the New
// conversation page (a phone's way to it: its home hides the line of links) import a
// JSON file, into the workspace the person picks or none.

import { api, fileBlobUrl } from "./api.js";
import { clear, h, select } from "./dom.js";
import { problem, shell, toast, wsOptions } from "./ui.js";

const MAX_IMPORT_BYTES = 32 * 1024 * 1024; // the daemon's bound (bmoe_daemon/routes/conversations.py)

// The file's name as the daemon gives it: letters, digits and dashes of the title.
function fileName(title, suffix) {
  const stem = (title || "").replace(/[^A-Za-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 60) || "conversation";
  return `${stem}${suffix}`;
}

// Fetched with the daemon's key (a plain link cannot send it), then saved by the browser.
async function download(path, name) {
  const url = await fileBlobUrl(path);
  const a = h("a", { href: url, download: name, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

// "Export: JSON · Markdown" for the conversation `view` shows.
export function exportButtons(view) {
  const one = (label, format, suffix, hint) => h("button.quiet.small", { type: "button", title: hint,
    onclick: async () => {
      try {
        await download(`${view.path}/export?format=${format}`, fileName(view.info?.title, suffix));
      } catch (err) {
        toast(problem(err));
      }
    } }, label);
  return h("span.export-buttons", { role: "group", "aria-label": "Export" },
    h("span.label", {}, "Export"),
    one("JSON", "json", ".bmoe.json", "The whole conversation, to import here or in another bmoe"),
    one("Markdown", "markdown", ".md", "The conversation to read, its tool calls folded"));
}

// "Import a conversation…" (the home page's and the New conversation page's): a file,
// then what it holds and where it goes.
export function importControl(workspaces) {
  const input = h("input.visually-hidden", { type: "file", accept: ".json,application/json",
    "aria-label": "A conversation file to import" });
  const open = h("button.link", { type: "button", onclick: () => input.click() }, "Import a conversation…");
  const panel = h("div.home-import", { hidden: true, role: "group", "aria-label": "Import a conversation" });
  const wrap = h("span.import-control", {}, open, input);
  const close = () => {
    panel.hidden = true;
    clear(panel);
    input.value = "";
    open.focus();
  };
  const refused = (text) => {
    clear(panel, h("p.error-text", { role: "alert" }, text),
      h("button.quiet", { type: "button", onclick: close }, "Close"));
    panel.hidden = false;
  };
  input.addEventListener("change", async () => {
    const file = input.files && input.files[0];
    if (!file) return;
    if (file.size > MAX_IMPORT_BYTES) {
      refused(`${file.name} is over 32 MiB: this daemon imports smaller conversations only.`);
      return;
    }
    let data;
    try {
      data = JSON.parse(await file.text());
    } catch {
      refused(`${file.name} is not a conversation file (not JSON). Export one with the JSON button of a conversation.`);
      return;
    }
    const title = (data && data.conversation && data.conversation.title) || "Untitled";
    const count = Array.isArray(data && data.items) ? data.items.length : 0;
    const where = select({ "aria-label": "Workspace for the import" },
      wsOptions(workspaces || []).map(([v, t]) => [v, v ? t : "No workspace"]), "");
    const error = h("p.error-text", { role: "alert", hidden: true });
    const go = h("button.primary", { type: "button" }, "Import");
    go.addEventListener("click", async () => {
      go.disabled = true;
      const qs = where.value ? `?workspace=${encodeURIComponent(where.value)}` : "";
      try {
        const conv = await api("POST", `/api/conversations/import${qs}`, data);
        shell.conversationChanged?.(conv);
        location.hash = `#/c/${encodeURIComponent(conv.id)}`;
      } catch (err) {
        go.disabled = false;
        error.textContent = problem(err);
        error.hidden = false;
      }
    });
    clear(panel,
      h("p", {}, `Import “${title}” (${count} item${count === 1 ? "" : "s"}) as a new conversation.`),
      workspaces !== null ? h("label.home-control", {}, h("span.label", {}, "Workspace"), where) : null,
      h("div.actions", {}, go, h("button.quiet", { type: "button", onclick: close }, "Cancel")),
      error);
    panel.hidden = false;
    go.focus();
  });
  return { control: wrap, panel };
}
