// A conversation's Changes (#/c/<id>/changes, #/c/<id>/changes/<message id>): for each
// message whose run changed files in the workspace, the files it added, modified and
// deleted with their lines added and removed, each file's diff (drawn as an approval
// card draws one), and "Undo this run" with its two choices said in words before one
// is taken: the files only, or the files and the conversation from that message on.
//
// A file the person changed after the run is not overwritten: the daemon refuses
// (409 `changed_since` with the `paths`), the view names them and offers "Undo anyway"
// as a choice of its own. A scheduled task's run is a conversation: its changes are
// shown, and undone, here the same way.
//
// It reads GET /api/conversations/<id>/changes (the runs), `?item=&path=` (a file's
// diff) and the conversation itself (the messages' words, its state: no undo while a
// run is on), and sends POST .../rewind.

import { api, ApiError, authHeaders } from "./api.js";
import { alertLine, clear, h, timeStamp } from "./dom.js";
import { renderDiff } from "./markdown.js";
import { pageTitle, problem, shell } from "./ui.js";

const STATUS_WORDS = { added: "added", modified: "modified", deleted: "deleted" };
// How much of a message names its run in a heading.
const MESSAGE_SHOWN = 90;

function enc(s) {
  return encodeURIComponent(s);
}

function plural(n, one, many) {
  return `${n.toLocaleString("en")} ${n === 1 ? one : many}`;
}

function num(v) {
  return Number.isFinite(v) ? v : 0;
}

// One file of a run as the daemon lists it, in the names this view uses.
function fileOf(f) {
  return {
    path: f.path,
    status: f.status || f.change || f.kind || "modified",
    added: num(f.added ?? f.lines_added),
    removed: num(f.removed ?? f.lines_removed),
    changedSince: Boolean(f.changed_since),
  };
}

// The runs the daemon lists (oldest first), each `{item, created, files}`.
export function runsOf(data) {
  const list = Array.isArray(data) ? data : (data && (data.runs || data.changes || data.items)) || [];
  return list.map((r) => ({
    item: r.item ?? r.message ?? r.id,
    created: r.created ?? r.at ?? null,
    files: (r.files || []).map(fileOf),
  })).filter((r) => r.item && r.files.length);
}

function countsText(added, removed) {
  return `+${added.toLocaleString("en")} −${removed.toLocaleString("en")}`;
}

function counts(added, removed) {
  return h("span.line-counts", { "aria-label": `${plural(added, "line", "lines")} added, ${plural(removed, "line", "lines")} removed` },
    h("span.count-add", { "aria-hidden": "true" }, `+${added.toLocaleString("en")}`), " ",
    h("span.count-del", { "aria-hidden": "true" }, `−${removed.toLocaleString("en")}`));
}

// A message's words, shortened to name its run.
function shortText(text) {
  const one = String(text || "").replace(/\s+/g, " ").trim();
  return one.length > MESSAGE_SHOWN ? `${one.slice(0, MESSAGE_SHOWN - 1)}…` : one;
}

// A diff as the daemon answers it: JSON ({diff}) or the text itself.
async function readDiff(url) {
  const resp = await fetch(url, { headers: authHeaders(), cache: "no-store" });
  const text = await resp.text();
  let data = null;
  try {
    data = JSON.parse(text);
  } catch {
    data = null;
  }
  if (!resp.ok) {
    throw new ApiError(resp.status, (data && data.code) || "internal",
      (data && data.error) || `The daemon answered ${resp.status}.`);
  }
  if (data === null) return text;
  return typeof data === "string" ? data : data.diff || "";
}

export class ChangesView {
  constructor(main, id, item) {
    this.main = main;
    this.conversationId = id;
    this.focusItem = item || null; // the run to show first (a message's link)
    this.name = "changes";
    this.info = null;
    this.items = new Map(); // the conversation's items by id: a run's message
    this.runs = [];
    this.diffs = new Map(); // "item\npath" -> the file's diff, read once
    this.open = new Set(); // "item\npath": the files whose diff is shown
    this.undo = null; // {item, stage: "choose" | "busy" | "refused", paths, conversation, error}
    this.said = ""; // what the last undo did
    this.changesError = ""; // why the changes could not be read
    this.closed = false;
    this.serial = 0;
  }

  get path() {
    return `/api/conversations/${enc(this.conversationId)}`;
  }

  close() {
    this.closed = true;
  }

  get running() {
    return Boolean(this.info) && (this.info.state === "running" || this.info.state === "waiting");
  }

  async load() {
    this.titleEl = h("h1#changes-title", {}, "Changes");
    this.introEl = h("p.muted.changes-intro");
    this.statusEl = h("p.changes-status", { role: "status", tabindex: "-1" });
    this.busyEl = h("p.changes-busy.small", { hidden: true },
      "A run is on: undo once it ends (the daemon keeps the workspace as the run leaves it).");
    this.listEl = h("div.changes-runs");
    const back = h("a.back.changes-back", { href: `#/c/${enc(this.conversationId)}` }, "‹ Back to the conversation");
    this.element = h("section.page.changes", { "aria-labelledby": "changes-title" },
      back, this.titleEl, this.introEl, this.statusEl, this.busyEl, this.listEl);
    clear(this.main, this.element);
    await this.refresh();
    if (this.focusItem) this.showRun(this.focusItem);
  }

  // The conversation and its runs' changes, read whole (on opening, after an undo,
  // when a run ends, after a gap in the stream).
  async refresh() {
    const serial = ++this.serial;
    const settled = (p) => p.then((value) => ({ value }), (error) => ({ error }));
    const [conv, changes] = await Promise.all([settled(api("GET", this.path)),
      settled(api("GET", `${this.path}/changes`))]);
    if (this.closed || serial !== this.serial) return;
    if (conv.error) {
      if (conv.error instanceof ApiError && conv.error.status === 404) {
        this.gone();
        return;
      }
      if (!this.info) throw conv.error; // never shown: the page says it could not be, with Retry
      this.say(problem(conv.error));
      return;
    }
    const { items, ...info } = conv.value;
    this.info = info;
    this.items = new Map((items || []).map((i) => [i.id, i]));
    // A conversation without a workspace has no changes; a refusal otherwise is said.
    this.changesError = changes.error && info.workspace ? problem(changes.error) : "";
    if (!changes.error) this.runs = runsOf(changes.value);
    if (this.undo && !this.runs.some((r) => r.item === this.undo.item)) this.undo = null;
    this.render();
  }

  onEvent(name, data) {
    if (this.closed) return;
    if (name === "conversation_deleted" && data.id === this.conversationId) {
      this.gone();
    } else if (name === "conversation" && data.id === this.conversationId && this.info) {
      const was = this.running;
      Object.assign(this.info, { title: data.title, state: data.state });
      // a run that ended may have changed files: its changes are read
      if (was && !this.running) this.refresh();
      else this.renderFrame();
    }
  }

  gone() {
    clear(this.main, h("section.page", {},
      h("h1", {}, "This conversation is gone"),
      h("p", {}, "It was deleted, or never existed here."),
      h("a.button", { href: "#/" }, "Back to the conversations")));
    shell.forgetConversation(this.conversationId);
    this.closed = true;
  }

  say(text) {
    this.said = text;
    this.statusEl.textContent = text;
    this.statusEl.hidden = !text;
  }

  // The title, the words under it, and what a run being on forbids.
  renderFrame() {
    const title = this.info.title || "New conversation";
    this.titleEl.textContent = `Changes in “${title}”`;
    pageTitle(`Changes · ${title} · bmoe`);
    clear(this.introEl, !this.info.workspace ? "This conversation has no workspace: nothing in a folder changes."
      : this.changesError ? "The changes could not be read."
      : this.runs.length ? `What each run changed in the workspace, by the message that started it. ${
        this.info.task ? "A scheduled task's run: undo takes back what it did." : ""}`
        : "No run in this conversation has changed a file yet.");
    this.busyEl.hidden = !this.running;
    for (const btn of this.listEl.querySelectorAll("button.needs-idle")) btn.disabled = this.running;
  }

  render() {
    const focusKey = document.activeElement && this.listEl.contains(document.activeElement)
      ? document.activeElement.dataset.focus : null;
    this.renderFrame();
    this.statusEl.hidden = !this.said;
    clear(this.listEl, this.changesError ? h("p.error-text", { role: "alert" }, this.changesError) : null,
      this.runs.length ? h("ol.changes-list", { "aria-label": "Runs that changed files" },
      this.runs.map((run, at) => this.renderRun(run, this.runs.length - at - 1))) : null);
    this.renderFrame();
    const again = focusKey ? this.listEl.querySelector(`[data-focus="${CSS.escape(focusKey)}"]`) : null;
    if (again) again.focus();
  }

  // A message's run: its files, and "Undo this run". `later`: how many runs after it
  // changed files too (undoing this one undoes those).
  renderRun(run, later) {
    const message = this.items.get(run.item);
    const headId = `run-${run.item}`;
    const added = run.files.reduce((n, f) => n + f.added, 0);
    const removed = run.files.reduce((n, f) => n + f.removed, 0);
    const since = run.files.filter((f) => f.changedSince);
    const words = message && message.kind === "user" ? shortText(message.text) : "";
    return h("li.card.run-changes", { "data-run": run.item },
      h("section", { "aria-labelledby": headId },
        h("header.run-head", {},
          h("h2.run-title", { id: headId, tabindex: "-1" },
            words ? ["After your message ", h("q", {}, words)] : "A run of this conversation"),
          h("p.run-summary.small.muted", {},
            timeStamp(run.created ?? (message && message.created)),
            `${plural(run.files.length, "file", "files")} changed · `, counts(added, removed),
            since.length ? h("span.badge.changed-since", {}, `${plural(since.length, "file", "files")} changed since`) : null)),
        h("ul.change-files", { "aria-label": `Files this run changed` }, run.files.map((f) => this.renderFile(run, f))),
        this.renderUndo(run, later)));
  }

  renderFile(run, f) {
    const key = `${run.item}\n${f.path}`;
    const diffBox = h("div.file-diff");
    const details = h("details.change-file", { open: this.open.has(key) ? true : null },
      h("summary", { "data-focus": `file:${key}` },
        h(`span.badge.file-status.file-${f.status}`, {}, STATUS_WORDS[f.status] || f.status),
        h("code.file-path", {}, f.path),
        counts(f.added, f.removed),
        f.changedSince ? h("span.badge.changed-since", { title: "You changed this file after the run" }, "changed since")
          : null),
      diffBox);
    const show = () => this.showDiff(run, f, diffBox);
    details.addEventListener("toggle", () => {
      if (details.open) this.open.add(key);
      else this.open.delete(key);
      if (details.open) show();
    });
    if (this.open.has(key)) show();
    return h("li.change-file-row", {}, details);
  }

  async showDiff(run, f, box) {
    const key = `${run.item}\n${f.path}`;
    const drawn = (text) => clear(box, text
      ? h("pre.diff", { tabindex: "0", "aria-label": `The change to ${f.path}`, html: renderDiff(text) })
      : h("p.small.muted", {}, f.status === "deleted" ? "The file was deleted." : "No lines to show (a binary file, or only its mode changed)."));
    if (this.diffs.has(key)) {
      drawn(this.diffs.get(key));
      return;
    }
    clear(box, h("p.small.muted", { role: "status" }, "Reading the change…"));
    try {
      const text = await readDiff(`${this.path}/changes?item=${enc(run.item)}&path=${enc(f.path)}`);
      this.diffs.set(key, text);
      drawn(text);
    } catch (err) {
      clear(box, h("p.error-text", { role: "alert" }, problem(err)));
    }
  }

  // "Undo this run…", then its two choices, each with what it does; a refusal for
  // files changed since names them and offers to undo anyway.
  renderUndo(run, later) {
    const u = this.undo && this.undo.item === run.item ? this.undo : null;
    const id = run.item;
    const laterWords = later ? ` and ${later === 1 ? "the run after it" : `the ${later} runs after it`}` : "";
    const openBtn = h("button.undo-open.needs-idle", { type: "button", "data-focus": `undo:${id}`,
      "aria-expanded": String(Boolean(u)), "aria-controls": `undo-${id}`, disabled: this.running,
      onclick: () => this.setUndo(u ? null : { item: id, stage: "choose" }, u ? `undo:${id}` : `choice:${id}`) },
    "Undo this run…");
    if (!u) return h("div.undo", {}, openBtn);
    const busy = u.stage === "busy";
    if (u.stage === "refused") {
      const listId = `since-${id}`;
      return h("div.undo", {}, openBtn,
        h("div.undo-refused", { id: `undo-${id}`, role: "group", "aria-labelledby": `refused-${id}` },
          h("p.undo-question", { id: `refused-${id}`, role: "alert", tabindex: "-1", "data-focus": `refused:${id}` },
            `Nothing was undone: you changed ${u.paths.length === 1 ? "this file" : "these files"} after the run, and undoing it would overwrite your changes.`),
          h("ul.since-paths", { id: listId, "aria-label": "Files you changed since" },
            u.paths.map((p) => h("li", {}, h("code", {}, p)))),
          h("div.actions", {},
            h("button.danger.needs-idle", { type: "button", "data-focus": `force:${id}`, disabled: this.running,
              "aria-describedby": listId, onclick: () => this.rewind(run, u.conversation, true) },
            u.conversation ? "Undo anyway, files and conversation" : "Undo anyway, files only"),
            h("button.quiet", { type: "button", "data-focus": `keep:${id}`,
              onclick: () => this.setUndo(null, `undo:${id}`) }, "Keep my changes")),
          h("small.hint", {}, "Undo anyway puts those files back as they were before the run too: what you wrote in them since is lost."),
          alertLine(u.error)));
    }
    const since = run.files.filter((f) => f.changedSince);
    const filesId = `undo-files-${id}`;
    const convId = `undo-conv-${id}`;
    return h("div.undo", {}, openBtn,
      h("div.undo-choices", { id: `undo-${id}`, role: "group", "aria-labelledby": `undo-q-${id}` },
        h("p.undo-question", { id: `undo-q-${id}` }, "Undo this run: choose what goes back."),
        since.length ? h("p.small.undo-warn", {}, `You changed ${since.map((f) => f.path).join(", ")} after the run: `
          + "the daemon will ask before it overwrites your changes.") : null,
        h("div.undo-choice", {},
          h("button.needs-idle", { type: "button", "data-focus": `choice:${id}`, "aria-describedby": filesId,
            disabled: this.running || busy, onclick: () => this.rewind(run, false, false) }, "Files only"),
          h("p.small.hint", { id: filesId },
            `Puts back every file this run${laterWords} changed, as it was before your message: added files are removed, deleted ones come back. The conversation stays as it is.`)),
        h("div.undo-choice", {},
          h("button.needs-idle", { type: "button", "data-focus": `choice-conv:${id}`, "aria-describedby": convId,
            disabled: this.running || busy, onclick: () => this.rewind(run, true, false) }, "Files and conversation"),
          h("p.small.hint", { id: convId },
            "Puts the files back the same way, and removes your message and everything after it from the conversation, as if it was never sent.")),
        h("div.actions", {},
          h("button.quiet", { type: "button", "data-focus": `cancel:${id}`, disabled: busy,
            onclick: () => this.setUndo(null, `undo:${id}`) }, "Cancel"),
          busy ? h("span.small.muted", { role: "status" }, "Undoing…") : null),
        alertLine(u.error)));
  }

  // The undo panel as `undo`; the keyboard then goes to the control `focus` names.
  setUndo(undo, focus) {
    this.undo = undo;
    this.render();
    const el = focus ? this.listEl.querySelector(`[data-focus="${CSS.escape(focus)}"]`) : null;
    if (el) el.focus();
  }

  // Puts the files back (and the conversation with `conversation`) to before the run's
  // message; `force` overwrites files the person changed since.
  async rewind(run, conversation, force) {
    const id = run.item;
    const message = this.items.get(id);
    this.undo = { item: id, stage: "busy", paths: [], conversation, error: "" };
    this.render();
    const body = { item: id, files: true, conversation };
    if (force) body.force = true;
    let answer;
    try {
      answer = await api("POST", `${this.path}/rewind`, body);
    } catch (err) {
      if (this.closed) return;
      if (err instanceof ApiError && err.code === "changed_since") {
        const paths = (err.data && err.data.paths) || [];
        this.setUndo({ item: id, stage: "refused", paths, conversation, error: "" }, `refused:${id}`);
      } else {
        this.setUndo({ item: id, stage: force ? "refused" : "choose", paths: this.undo.paths || [], conversation,
          error: problem(err) }, force ? `force:${id}` : conversation ? `choice-conv:${id}` : `choice:${id}`);
      }
      return;
    }
    if (this.closed) return;
    const n = this.runs.filter((r) => this.runs.indexOf(r) >= this.runs.indexOf(run))
      .reduce((all, r) => all.concat(r.files.map((f) => f.path)), []);
    const files = answer && Array.isArray(answer.paths) ? answer.paths.length : new Set(n).size;
    const words = message && message.kind === "user" ? ` “${shortText(message.text)}”` : "";
    this.undo = null;
    this.diffs.clear();
    this.say(`Undone: ${plural(files, "file", "files")} put back as before your message${words}.${
      conversation ? " The message and everything after it were removed from the conversation." : ""}`);
    if (conversation) shell.refreshList?.();
    await this.refresh();
    this.statusEl.focus();
  }

  // Shows a run first (a message's link to its changes): its heading takes the keyboard.
  showRun(item) {
    const head = this.listEl.querySelector(`[data-run="${CSS.escape(item)}"] .run-title`);
    if (!head) return;
    head.scrollIntoView({ block: "start" });
    head.focus({ preventScroll: true });
  }
}
