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
    status: f.status || "modified",
    added: num(f.added),
    removed: num(f.removed),
    binary: Boolean(f.binary),
    changedSince: Boolean(f.changed_since),
  };
}

// Seconds since the epoch from the daemon's ISO time (or seconds); null when none.
function seconds(at) {
  if (typeof at === "number") return at;
  const ms = typeof at === "string" ? Date.parse(at) : NaN;
  return Number.isFinite(ms) ? ms / 1000 : null;
}

// The entries the daemon lists (oldest first): a message's runs (`kind` "run", `item`
// the message) or an undo (`kind` "rewind", `item` the undo's own id, `of` the message
// it went back to), each `{item, kind, of, at, files, notRestorable}`.
export function runsOf(data) {
  const list = Array.isArray(data) ? data : (data && (data.changes || data.runs || data.entries)) || [];
  return list.map((r) => ({
    item: r.item,
    kind: r.kind === "rewind" ? "rewind" : "run",
    of: r.of || null,
    at: seconds(r.at),
    files: (r.files || []).map(fileOf),
    notRestorable: r.not_restorable || [],
  })).filter((r) => r.item && (r.files.length || r.notRestorable.length));
}

// Lines added and removed: "+2 −1" to see, in words to a screen reader.
function counts(added, removed) {
  return h("span.line-counts", {},
    h("span.visually-hidden", {}, `${plural(added, "line", "lines")} added, ${plural(removed, "line", "lines")} removed`),
    h("span.count-add", { "aria-hidden": "true" }, `+${added.toLocaleString("en")}`),
    h("span.count-del", { "aria-hidden": "true" }, ` −${removed.toLocaleString("en")}`));
}

// A message's words, shortened to name its run.
function shortText(text) {
  const one = String(text || "").replace(/\s+/g, " ").trim();
  return one.length > MESSAGE_SHOWN ? `${one.slice(0, MESSAGE_SHOWN - 1)}…` : one;
}

// A diff as the daemon answers it, JSON ({diff, truncated}) or the text itself: `{text, cut}`.
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
  if (data === null) return { text, cut: false };
  return typeof data === "string" ? { text: data, cut: false } : { text: data.diff || "", cut: Boolean(data.truncated) };
}

// What an undo did, from the daemon's answer ({item, files: {rewind, restored, removed,
// not_restorable}}).
function undoneText(run, answered, conversation, words) {
  const answer = answered.files || {};
  const restored = (answer.restored || []).length + (answer.removed || []).length;
  const before = run.kind === "rewind" ? "as before the undo" : `as before your message${words ? ` “${words}”` : ""}`;
  const parts = [answer.rewind === null && !restored
    ? "Nothing to put back: the files were already as they were before."
    : `Undone: ${plural(restored, "file", "files")} put back ${before}.`];
  if ((answer.not_restorable || []).length)
    parts.push(`Left as they are (too large to keep): ${answer.not_restorable.join(", ")}.`);
  if (conversation) parts.push("The message and everything after it were removed from the conversation.");
  return parts.join(" ");
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
    this.heard = 0; // conversation events heard
    this.latest = null; // what the last one said: {title, state}
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
    const heard = this.heard; // conversation events so far: one during the read is newer than it
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
    if (heard !== this.heard) Object.assign(info, this.latest);
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
    } else if (name === "conversation" && data.id === this.conversationId) {
      this.heard++;
      this.latest = { title: data.title, state: data.state };
      if (!this.info) return;
      const was = this.running;
      Object.assign(this.info, this.latest);
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

  // What names an entry: the words of the message that started the run (for an
  // undo, of the message it went back to), shortened; "" when it is gone.
  wordsOf(id) {
    const message = id ? this.items.get(id) : null;
    return message && message.kind === "user" ? shortText(message.text) : "";
  }

  // An entry (a message's runs, or an undo): its files, and "Undo this run" (or "Undo
  // this undo"). `later`: how many entries after it changed files too (undoing this one
  // undoes those as well).
  renderRun(run, later) {
    const headId = `run-${run.item}`;
    const undoing = run.kind === "rewind";
    const words = this.wordsOf(undoing ? run.of : run.item);
    const added = run.files.reduce((n, f) => n + f.added, 0);
    const removed = run.files.reduce((n, f) => n + f.removed, 0);
    const since = run.files.filter((f) => f.changedSince);
    const title = undoing
      ? (words ? ["Your undo back to before ", h("q", {}, words)] : "Your undo of an earlier run")
      : (words ? ["After your message ", h("q", {}, words)] : "A run of this conversation");
    return h(`li.card.run-changes.kind-${run.kind}`, { "data-run": run.item },
      h("section", { "aria-labelledby": headId },
        h("header.run-head", {},
          h("h2.run-title", { id: headId, tabindex: "-1" }, title),
          h("p.run-summary.small.muted", {},
            timeStamp(run.at),
            `${plural(run.files.length, "file", "files")} changed · `, counts(added, removed),
            since.length ? h("span.badge.changed-since", {}, `${plural(since.length, "file", "files")} changed since`) : null)),
        run.files.length ? h("ul.change-files", { "aria-label": undoing ? "Files this undo changed" : "Files this run changed" },
          run.files.map((f) => this.renderFile(run, f))) : null,
        run.notRestorable.length ? h("p.small.not-restorable", {},
          "Too large to keep, so an undo leaves them as they are: ",
          run.notRestorable.map((p, n) => [n ? ", " : "", h("code", {}, p)])) : null,
        this.renderUndo(run, later)));
  }

  renderFile(run, f) {
    const key = `${run.item}\n${f.path}`;
    const diffBox = h("div.file-diff");
    const details = h("details.change-file", { open: this.open.has(key) ? true : null },
      h("summary", { "data-focus": `file:${key}` },
        h(`span.badge.file-status.file-${f.status}`, {}, STATUS_WORDS[f.status] || f.status),
        h("code.file-path", {}, f.path),
        f.binary ? h("span.small.muted", {}, "binary") : counts(f.added, f.removed),
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
    // git's own header lines (diff --git, index) say nothing the row does not
    const plain = (text) => text.split("\n").filter((l) => !/^(diff --git |index [0-9a-f]+\.\.)/.test(l)).join("\n");
    const drawn = ({ text, cut }) => clear(box, text
      ? h("pre.diff", { tabindex: "0", "aria-label": `The change to ${f.path}`, html: renderDiff(plain(text)) })
      : h("p.small.muted", {}, f.binary ? "A binary file: no lines to show." : "No lines to show (only its mode changed)."),
    cut ? h("p.small.muted", {}, "The diff is long: only its start is shown.") : null);
    if (this.diffs.has(key)) {
      drawn(this.diffs.get(key));
      return;
    }
    clear(box, h("p.small.muted", { role: "status" }, "Reading the change…"));
    try {
      const diff = await readDiff(`${this.path}/changes?item=${enc(run.item)}&path=${enc(f.path)}`);
      this.diffs.set(key, diff);
      drawn(diff);
    } catch (err) {
      clear(box, h("p.error-text", { role: "alert" }, problem(err)));
    }
  }

  // "Undo this run…", then its two choices, each with what it does (an undo is undone
  // with its files only: the messages it removed do not come back); a refusal for
  // files changed since names them and offers to undo anyway.
  renderUndo(run, later) {
    const u = this.undo && this.undo.item === run.item ? this.undo : null;
    const id = run.item;
    const undoing = run.kind === "rewind";
    const laterWords = later ? ` and by ${later === 1 ? "the change listed after it" : `the ${later} changes listed after it`}` : "";
    const openBtn = h("button.undo-open.needs-idle", { type: "button", "data-focus": `undo:${id}`,
      "aria-expanded": String(Boolean(u)), "aria-controls": `undo-${id}`, disabled: this.running,
      onclick: () => this.setUndo(u ? null : { item: id, stage: "choose" }, u ? `undo:${id}` : `choice:${id}`) },
    undoing ? "Undo this undo…" : "Undo this run…");
    if (!u) return h("div.undo", {}, openBtn);
    const busy = u.stage === "busy";
    // Escape leaves the question as Cancel does, the keyboard back on "Undo this run…"
    const escape = (ev) => {
      if (ev.key !== "Escape" || busy) return;
      ev.preventDefault();
      this.setUndo(null, `undo:${id}`);
    };
    if (u.stage === "refused") {
      const listId = `since-${id}`;
      return h("div.undo", {}, openBtn,
        h("div.undo-refused", { id: `undo-${id}`, role: "group", "aria-labelledby": `refused-${id}`, onkeydown: escape },
          h("p.undo-question", { id: `refused-${id}`, role: "alert", tabindex: "-1", "data-focus": `refused:${id}` },
            `Nothing was undone: you changed ${u.paths.length === 1 ? "this file" : "these files"} after ${undoing ? "the undo" : "the run"}, and undoing it would overwrite your changes.`),
          h("ul.since-paths", { id: listId, "aria-label": "Files you changed since" },
            u.paths.map((p) => h("li", {}, h("code", {}, p)))),
          h("div.actions", {},
            h("button.danger.needs-idle", { type: "button", "data-focus": `force:${id}`, disabled: this.running,
              "aria-describedby": listId, onclick: () => this.rewind(run, u.conversation, true) },
            u.conversation ? "Undo anyway, files and conversation" : "Undo anyway, files only"),
            h("button.quiet", { type: "button", "data-focus": `keep:${id}`,
              onclick: () => this.setUndo(null, `undo:${id}`) }, "Keep my changes")),
          h("small.hint", {}, "Undo anyway puts those files back too: what you wrote in them since is lost."),
          alertLine(u.error)));
    }
    const since = run.files.filter((f) => f.changedSince);
    const filesId = `undo-files-${id}`;
    const convId = `undo-conv-${id}`;
    return h("div.undo", {}, openBtn,
      h("div.undo-choices", { id: `undo-${id}`, role: "group", "aria-labelledby": `undo-q-${id}`, onkeydown: escape },
        h("p.undo-question", { id: `undo-q-${id}` },
          undoing ? "Undo this undo: the files go back as they were before it." : "Undo this run: choose what goes back."),
        since.length ? h("p.small.undo-warn", {}, `You changed ${since.map((f) => f.path).join(", ")} after the run: `
          + "the daemon will ask before it overwrites your changes.") : null,
        h("div.undo-choice", {},
          h("button.needs-idle", { type: "button", "data-focus": `choice:${id}`, "aria-describedby": filesId,
            disabled: this.running || busy, onclick: () => this.rewind(run, false, false) }, "Files only"),
          h("p.small.hint", { id: filesId },
            undoing
              ? `Puts back every file changed by this undo${laterWords}, as it was before the undo. The conversation stays as it is: messages the undo removed do not come back.`
              : `Puts back every file changed by this run${laterWords}, as it was before your message: added files are removed, deleted ones come back. The conversation stays as it is.`)),
        // another agent's session cannot be rewritten: its files only
        undoing || (this.info.agent || "builtin") !== "builtin" ? null : h("div.undo-choice", {},
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
  // message, or before an undo; `force` overwrites files the person changed since.
  async rewind(run, conversation, force) {
    const id = run.item;
    const paths = this.undo && this.undo.item === id ? this.undo.paths || [] : [];
    this.undo = { item: id, stage: "busy", paths, conversation, error: "" };
    this.render();
    const body = { item: id, files: true, conversation };
    if (force) body.force = true;
    let answer;
    try {
      answer = await api("POST", `${this.path}/rewind`, body);
    } catch (err) {
      if (this.closed) return;
      if (err instanceof ApiError && err.code === "changed_since") {
        const named = (err.data && err.data.paths) || [];
        this.setUndo({ item: id, stage: "refused", paths: named, conversation, error: "" }, `refused:${id}`);
      } else {
        this.setUndo({ item: id, stage: force ? "refused" : "choose", paths, conversation, error: problem(err) },
          force ? `force:${id}` : conversation ? `choice-conv:${id}` : `choice:${id}`);
      }
      return;
    }
    if (this.closed) return;
    this.undo = null;
    this.diffs.clear();
    this.say(undoneText(run, answer || {}, conversation, this.wordsOf(run.kind === "rewind" ? run.of : run.item)));
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
