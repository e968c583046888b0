// The page as an app with a tool of its own (README "Tools a client brings"): a
// conversation the page starts with a folder is given `show_file`, and while that
// conversation is open the page answers its calls: the file opens in the preview,
// scrolled to the line and marked, and the page sends back what it showed
// (POST .../tool_result). Its event stream names the conversation it answers for
// (`?tools=`), so the daemon counts it, and a card waiting for an app that is gone
// says so (cards.js).

import { api, authHeaders } from "./api.js";
import { clear, h } from "./dom.js";

export const SHOW_FILE = "show_file";

export const SHOW_FILE_TOOL = {
  name: SHOW_FILE,
  description: "Show the person a file of the workspace in their page's preview, scrolled to a line, "
    + "to point at the code you are talking about.",
  parameters: {
    type: "object",
    properties: {
      path: { type: "string", description: "The file, relative to the workspace" },
      line: { type: "integer", minimum: 1, description: "The line to show (1 is the first)" },
    },
    required: ["path"],
  },
  timeout_s: 60,
};

// The most of a file the preview draws line by line (a bigger one is cut, and says so).
const MAX_SHOWN_BYTES = 1024 * 1024;

// Whether the conversation has the page's tool, so the page answers for it.
export function offersShowFile(info) {
  return Boolean(info && (info.tools || []).some((t) => t.name === SHOW_FILE));
}

// A call of show_file in the open conversation (a `tool_request` event): shown, and answered.
export async function answerShowFile(convPath, request) {
  const args = request.arguments || {};
  let body;
  try {
    const line = Number.isInteger(args.line) && args.line > 0 ? args.line : null;
    body = { item: request.item, result: await showFileAt(convPath, String(args.path || ""), line) };
  } catch (err) {
    body = { item: request.item, error: (err && err.message) || String(err) };
  }
  try {
    await api("POST", `${convPath}/tool_result`, body);
  } catch {
    // Answered by another page of this conversation, or it waits no more: nothing to do.
  }
}

// Opens `path` in the preview dialog as numbered lines, `line` marked and scrolled to
// the middle; what the model reads of it. Throws with the daemon's words when the file
// cannot be shown.
export async function showFileAt(convPath, path, line) {
  if (!path) throw new Error("The call names no file: give `path`, relative to the workspace.");
  const resp = await fetch(`${convPath}/file?path=${encodeURIComponent(path)}`, {
    headers: authHeaders(), cache: "no-store",
  });
  if (!resp.ok) {
    let why = `the daemon answered ${resp.status}`;
    try {
      why = (await resp.json()).error || why;
    } catch {
      /* not JSON */
    }
    throw new Error(`${path} could not be shown: ${why}`);
  }
  const raw = await resp.arrayBuffer();
  const cut = raw.byteLength > MAX_SHOWN_BYTES;
  const text = new TextDecoder("utf-8").decode(cut ? raw.slice(0, MAX_SHOWN_BYTES) : raw);
  const lines = text.split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  const at = line === null ? null : Math.min(line, lines.length);
  const dialog = document.getElementById("preview-dialog");
  const frame = dialog.querySelector("iframe");
  frame.hidden = true;
  dialog.querySelector(".preview-lines")?.remove();
  const rows = lines.map((l, n) => h(n + 1 === at ? "span.preview-line.shown-line" : "span.preview-line",
    { "data-line": String(n + 1) }, h("span.line-no", { "aria-hidden": "true" }, String(n + 1)), l, "\n"));
  const box = h("pre.preview-lines", { tabindex: "0", "aria-label": at ? `${path}, line ${at}` : path }, rows);
  frame.after(box);
  clear(dialog.querySelector("h2"), at ? `${path}:${at}` : path);
  if (!dialog.open) dialog.showModal();
  const marked = box.querySelector(".shown-line");
  if (marked) marked.scrollIntoView({ block: "center" });
  const where = at === null ? "from its top" : `at line ${at}`;
  const past = line !== null && at !== line ? ` (it has ${lines.length} lines)` : "";
  return `Shown ${path} ${where}${past} in the person's preview${cut ? "; only its first 1 MiB is drawn" : ""}.`;
}

// The preview closed: back to its frame for the next file.
export function resetPreview(dialog) {
  dialog.querySelector(".preview-lines")?.remove();
  dialog.querySelector("iframe").hidden = false;
}
