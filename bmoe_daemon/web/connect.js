// The connect page: settings for other apps (coding agents, editors) to use this
// daemon's model, each to copy or, where the daemon may, to write into the app's file
// after showing what changes.

import { api } from "./api.js";
import { clear, h } from "./dom.js";
import { renderDiff, renderMarkdown } from "./markdown.js";
import { page } from "./settings.js";
import { attempt, inUseOnReread, pageView, toast } from "./ui.js";

export function connectPage(main) {
  const body = page(main, "Connect other apps",
    "Settings for coding agents and editors to use this daemon's model. The key, if any, is never written into them.");
  const load = async () => {
    const clients = await api("GET", "/api/connect");
    if (inUseOnReread(body)) return;
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
