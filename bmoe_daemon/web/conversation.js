// One conversation: its header (title, state, mode, model), its items as they stream,
// tool, approval and question cards, why the last run ended (and Resume), the todo
// list and the message box.
//
// Items are upserted by id from `item` events; `delta` events grow a streaming answer.
// A card keeps which of its folds are open and where the keyboard was when it is
// drawn again, so a growing card does not snatch the person's place.

import { api, ApiError, fileBlobUrl, keyInUse } from "./api.js";
import { clear, h, select, sizeText } from "./dom.js";
import { renderDiff, renderMarkdown } from "./markdown.js";
import { ASK_USER, isOpenQuestion, newlyCompleted, renderQuestion, renderRunEnd, renderTodos, RESUMABLE } from "./run.js";
import { attempt, MODE_OPTIONS, problem, routeOptions, shell, STATE_LABELS, toast, wsOptions } from "./ui.js";

const TOOL_STATES = {
  composing: "writing the call",
  running: "running",
  waiting: "waiting for your answer",
  done: "done",
  denied: "denied",
  error: "error",
};
const NOTICE_LABELS = { info: "Note", warn: "Warning", error: "Error" };
const MAX_IMAGES = 8;
const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
const NEAR_BOTTOM_PX = 120;

function enc(s) {
  return encodeURIComponent(s);
}

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

export class ConversationView {
  constructor(main, id) {
    this.main = main;
    this.conversationId = id;
    this.name = "conversation";
    this.info = null;
    this.items = [];
    this.byId = new Map();
    this.els = new Map();
    this.dirty = new Set();
    this.frame = 0;
    this.images = [];
    this.editing = null;
    this.closed = false;
    this.providers = [];
    this.workspaces = null;
    this.sending = false;
    this.stopping = false;
    this.touched = null; // ids events touched while a refresh travels
    this.serial = 0;
    this.infoSerial = 0; // counts conversation events: an answer older than one is not applied
    // Question cards: what was typed or picked, an answer on its way, the daemon's refusal.
    this.drafts = new Map();
    this.answering = new Set();
    this.answerErrors = new Map();
    this.todosOpen = true;
    this.shownTodos = null;
    this.resuming = false;
    this.resumeError = "";
  }

  get path() {
    return `/api/conversations/${enc(this.conversationId)}`;
  }

  close() {
    this.closed = true;
    cancelAnimationFrame(this.frame);
  }

  async load() {
    this.build();
    const [providers, workspaces] = await Promise.all([
      api("GET", "/api/providers").catch(() => []),
      api("GET", "/api/workspaces").catch(() => null),
    ]);
    this.providers = providers;
    this.workspaces = workspaces;
    await this.refresh();
  }

  // Reads the conversation whole (on opening, after an edit, after a gap in the stream).
  //
  // The answer may be older than events that arrive while it travels (the stream and
  // the request are two connections): an item or the state an event touched meanwhile
  // keeps the event's version, which is never older than the answer's; whatever the
  // answer missed comes after it on the stream.
  async refresh() {
    const touched = new Set();
    this.touched = touched;
    const serial = (this.serial = (this.serial || 0) + 1);
    let conv;
    try {
      conv = await api("GET", this.path);
    } catch (err) {
      if (serial === this.serial) this.touched = null;
      if (this.closed) return;
      if (err instanceof ApiError && err.status === 404) {
        clear(this.main, h("section.page", {},
          h("h1", {}, "This conversation is gone"),
          h("p", {}, "It was deleted, or never existed here."),
          h("a.button", { href: "#/" }, "Back to the conversations")));
        shell.forgetConversation(this.conversationId);
        this.closed = true;
        return;
      }
      toast(err.message || String(err));
      return;
    }
    if (this.closed || serial !== this.serial) return;
    this.touched = null;
    const { items, ...info } = conv;
    if (touched.has(":conversation") && this.latestInfo) Object.assign(info, this.latestInfo);
    this.info = info;
    const fresh = items.map((i) => (touched.has(i.id) && this.byId.has(i.id) ? this.byId.get(i.id) : { ...i }));
    const inAnswer = new Set(items.map((i) => i.id));
    for (const id of touched) {
      if (!inAnswer.has(id) && this.byId.has(id)) fresh.push(this.byId.get(id)); // newer than the answer
    }
    this.items = fresh;
    this.byId = new Map(this.items.map((i) => [i.id, i]));
    this.renderHeader();
    this.renderAll();
    this.renderTodos();
    this.updateComposer();
  }

  onEvent(name, data) {
    if (this.closed) return;
    if (name === "conversation" && data.id === this.conversationId) {
      if (this.touched) this.touched.add(":conversation");
      this.infoSerial++;
      this.latestInfo = { title: data.title, state: data.state, updated: data.updated };
      for (const key of ["todos", "end_reason"]) if (key in data) this.latestInfo[key] = data[key];
      if (!this.info) return;
      this.flush();
      // A refusal of Resume speaks of the run as it was: a new state makes it stale.
      if (data.state !== this.info.state || data.end_reason !== this.info.end_reason) this.resumeError = "";
      Object.assign(this.info, this.latestInfo);
      this.renderHeader();
      this.renderTodos();
      this.keepScroll(() => this.renderEnd());
      this.updateComposer();
    } else if (name === "item" && data.conversation === this.conversationId) {
      this.upsert(data.item);
    } else if (name === "delta" && data.conversation === this.conversationId) {
      const item = this.byId.get(data.item);
      if (!item) return;
      if (this.touched) this.touched.add(item.id);
      if (data.text) item.text = (item.text || "") + data.text;
      if (data.reasoning) item.reasoning = (item.reasoning || "") + data.reasoning;
      this.schedule(item.id);
    }
  }

  upsert(item) {
    if (this.touched) this.touched.add(item.id);
    if (!isOpenQuestion(item)) this.settleQuestion(item.id);
    const known = this.byId.get(item.id);
    if (known) {
      const at = this.items.indexOf(known);
      this.items[at] = item;
    } else {
      this.items.push(item);
    }
    this.byId.set(item.id, item);
    this.schedule(item.id);
  }

  // Draws changed items once per frame, however many events came.
  schedule(id) {
    this.dirty.add(id);
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.drawDirty();
    });
  }

  // Draws what waits for the next frame now: a new state (idle, say) is never shown
  // before the cards the run ended on the way to it.
  flush() {
    if (!this.frame) return;
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.drawDirty();
  }

  drawDirty() {
    const ids = [...this.dirty];
    this.dirty.clear();
    this.keepScroll(() => {
      ids.forEach((i) => this.drawItem(this.byId.get(i)));
      this.renderEnd();
    });
    this.updateComposer();
  }

  keepScroll(draw) {
    const log = this.log;
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < NEAR_BOTTOM_PX;
    draw();
    if (atBottom) log.scrollTop = log.scrollHeight;
  }

  // ---- the frame: header, log, composer ----

  build() {
    this.titleEl = h("h1.conv-title#conv-title", {}, "…");
    this.stateEl = h("span.badge", { role: "status", "aria-label": "Conversation state" });
    this.wsEl = h("span.workspace.muted");
    // The built-in agent's workspace can change between runs (the daemon answers 409
    // busy while one runs); another agent's session lives in its folder, so it stays.
    this.wsSelect = select({ "aria-label": "Workspace", class: "ws-select" }, wsOptions([]), "");
    this.wsSelect.addEventListener("change", () => this.patch({ workspace: this.wsSelect.value || null }));
    this.wsPicker = h("label.inline", { hidden: true }, h("span.label", {}, "Workspace"), this.wsSelect);
    this.modeSelect = select({ "aria-label": "Mode", class: "mode-select" }, MODE_OPTIONS, "ask");
    this.modeSelect.addEventListener("change", () => this.patch({ mode: this.modeSelect.value }));
    this.routeSelect = select({ "aria-label": "Model", class: "route-select" }, [["local", "local"]], "local");
    this.routeSelect.addEventListener("change", () => this.patch({ route: this.routeSelect.value }));
    this.renameBtn = h("button.quiet", { type: "button", onclick: () => this.startRename() }, "Rename");
    this.deleteBtn = h("button.quiet.danger", { type: "button", onclick: () => this.askDelete() }, "Delete");
    this.head = h("header.conv-head", {},
      h("div.conv-head-top", {},
        h("a.back", { href: "#/", "aria-label": "Back to the conversations" }, "‹ Conversations"),
        h("div.title-box", {}, this.titleEl),
        h("div.head-buttons", {}, this.renameBtn, this.deleteBtn)),
      h("div.conv-head-bottom", {},
        this.stateEl, this.wsEl, this.wsPicker,
        h("label.inline", {}, h("span.label", {}, "Mode"), this.modeSelect),
        h("label.inline", {}, h("span.label", {}, "Model"), this.routeSelect)));
    this.log = h("div.log", { role: "log", "aria-label": "Messages", "aria-live": "polite", tabindex: "0" });
    this.endEl = h("div.run-end-slot", { hidden: true });
    this.todosEl = h("section.todos", { "aria-labelledby": "todos-title", hidden: true });

    this.textarea = h("textarea", {
      "aria-label": "Message", rows: "2", placeholder: "Message: Enter sends, Shift+Enter starts a new line",
    });
    this.textarea.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        this.form.requestSubmit();
      }
    });
    this.textarea.addEventListener("paste", (ev) => {
      const files = [...(ev.clipboardData?.files || [])].filter((f) => f.type.startsWith("image/"));
      if (files.length) {
        ev.preventDefault();
        this.addImages(files);
      }
    });
    this.fileInput = h("input.visually-hidden", { type: "file", accept: "image/*", multiple: true, "aria-label": "Attach images" });
    this.fileInput.addEventListener("change", () => {
      this.addImages([...this.fileInput.files]);
      this.fileInput.value = "";
    });
    this.attachments = h("div.attachments", { "aria-label": "Images to send" });
    this.stopBtn = h("button.stop", { type: "button", onclick: () => this.stop() }, "Stop");
    // While the agent's question waits, a message cannot go: say where the answer goes.
    this.questionNote = h("p.composer-note", { hidden: true },
      "The agent asked you a question: answer it above, or stop the run. ",
      h("button.link", { type: "button", onclick: () => this.focusQuestion() }, "Go to the question"));
    this.sendBtn = h("button.primary", { type: "submit" }, "Send");
    this.form = h("form.composer", { "aria-label": "Write a message" },
      this.questionNote,
      this.attachments,
      this.textarea,
      h("div.composer-actions", {},
        h("label.button.quiet.attach", {}, "Attach images", this.fileInput),
        h("span.spacer"),
        this.stopBtn, this.sendBtn));
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.send();
    });
    clear(this.main, h("section.conv", { "aria-labelledby": "conv-title" }, this.head, this.log, this.todosEl, this.form));
  }

  renderHeader() {
    const info = this.info;
    this.titleEl.textContent = info.title || "New conversation";
    this.stateEl.textContent = STATE_LABELS[info.state] || info.state;
    this.stateEl.className = `badge state-${info.state}`;
    this.modeSelect.value = info.mode;
    clear(this.routeSelect, routeOptions(this.providers, info.route).map(([v, t]) => h("option", { value: v }, t)));
    this.routeSelect.value = info.route;
    let ws = "No workspace: plain chat";
    const found = info.workspace ? (this.workspaces || []).find((w) => w.id === info.workspace) : null;
    if (info.workspace) {
      ws = found ? `In ${found.name}` : "In a workspace";
      this.wsEl.title = found ? found.path : "";
    }
    this.wsEl.textContent = ws;
    // the picker where the workspaces can be listed (a local client, not plain chat only)
    const pick = this.workspaces !== null && (info.agent || "builtin") === "builtin";
    this.wsEl.hidden = pick;
    this.wsPicker.hidden = !pick;
    if (pick) {
      clear(this.wsSelect, wsOptions(this.workspaces, info.workspace).map(([v, t]) => h("option", { value: v }, t)));
      this.wsSelect.value = info.workspace || "";
      this.wsSelect.title = found ? found.path : "";
    }
    document.title = `${info.title || "New conversation"} · bmoe`;
  }

  updateComposer() {
    const busy = this.info && (this.info.state === "running" || this.info.state === "waiting");
    this.stopBtn.hidden = !busy;
    this.stopBtn.disabled = this.stopping;
    this.stopBtn.textContent = this.stopping ? "Stopping…" : "Stop";
    this.sendBtn.disabled = Boolean(busy) || this.sending;
    this.sendBtn.title = busy ? "A run is going on: wait for it, or stop it." : "";
    for (const btn of this.log.querySelectorAll("button.edit")) btn.disabled = Boolean(busy);
    this.questionNote.hidden = !(busy && this.items.some(isOpenQuestion));
  }

  // ---- the todo list and why the run ended ----

  renderTodos() {
    const todos = (this.info && this.info.todos) || [];
    // Every conversation event carries the list: it is drawn again only when it changed,
    // so what just ticked ticks once.
    if (this.shownTodos !== null && JSON.stringify(todos) === JSON.stringify(this.shownTodos)) return;
    const fresh = newlyCompleted(this.shownTodos, todos);
    this.shownTodos = todos;
    const list = renderTodos(todos, { open: this.todosOpen, fresh, onToggle: (open) => (this.todosOpen = open) });
    const held = this.todosEl.contains(document.activeElement);
    this.todosEl.hidden = !list;
    clear(this.todosEl, list);
    if (held && list) list.querySelector("summary").focus();
  }

  renderEnd() {
    const info = this.info;
    const resumable = Boolean(info) && RESUMABLE.has(info.end_reason) && (info.agent || "builtin") === "builtin"
      && !this.items.some(isOpenQuestion);
    const focused = this.endEl.contains(document.activeElement);
    const line = this.items.length
      ? renderRunEnd(info, { resumable, busy: this.resuming, error: this.resumeError, onResume: () => this.resume() })
      : null;
    clear(this.endEl, line);
    this.endEl.hidden = !line;
    // Resume gone (the run goes on): the keyboard goes to the message box, not the page's top.
    if (focused) (this.endEl.querySelector("button") || this.textarea).focus();
  }

  async resume() {
    if (this.resuming) return;
    this.resuming = true;
    this.resumeError = "";
    this.renderEnd();
    const seen = this.infoSerial;
    let info = null;
    try {
      info = await api("POST", `${this.path}/resume`, {});
    } catch (err) {
      // shown unless the run changed meanwhile (the line then says what it is now)
      if (seen === this.infoSerial) this.resumeError = problem(err);
    }
    this.resuming = false;
    if (this.closed) return;
    // The run may have gone on (even ended) on the stream before this answer came.
    if (info && seen === this.infoSerial) {
      Object.assign(this.info, info);
      this.renderHeader();
    }
    this.keepScroll(() => this.renderEnd());
    this.renderTodos();
    this.updateComposer();
  }

  async patch(changes) {
    const info = await attempt(() => api("PATCH", this.path, changes));
    if (info) {
      Object.assign(this.info, info);
      shell.refreshList();
    }
    this.renderHeader();
  }

  startRename() {
    const input = h("input", { type: "text", value: this.info.title || "", "aria-label": "Title" });
    const form = h("form.rename", {}, input,
      h("button.primary", { type: "submit" }, "Save"),
      h("button.quiet", { type: "button", onclick: () => this.renderTitle() }, "Cancel"));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      await this.patch({ title: input.value.trim() });
      this.renderTitle();
    });
    input.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") this.renderTitle();
    });
    clear(this.titleEl.parentElement, form);
    input.focus();
    input.select();
  }

  renderTitle() {
    clear(this.head.querySelector(".title-box"), this.titleEl);
    this.renderHeader();
    this.renameBtn.focus();
  }

  askDelete() {
    const box = this.head.querySelector(".head-buttons");
    const yes = h("button.danger", { type: "button" }, "Delete for good");
    const no = h("button.quiet", { type: "button" }, "Keep it");
    no.addEventListener("click", () => {
      clear(box, this.renameBtn, this.deleteBtn);
      this.deleteBtn.focus();
    });
    yes.addEventListener("click", async () => {
      const done = await attempt(() => api("DELETE", this.path));
      if (!done) return;
      shell.forgetConversation(this.conversationId);
      location.hash = "#/";
    });
    clear(box, h("span.muted", {}, "Delete this conversation?"), yes, no);
    no.focus();
  }

  // ---- sending ----

  async addImages(files) {
    for (const file of files) {
      if (this.images.length >= MAX_IMAGES) {
        toast(`At most ${MAX_IMAGES} images go with one message.`);
        break;
      }
      if (!file.type.startsWith("image/")) continue;
      if (file.size > MAX_IMAGE_BYTES) {
        toast(`${file.name} is larger than ${MAX_IMAGE_BYTES / 1024 / 1024} MiB.`);
        continue;
      }
      this.images.push({ name: file.name, url: await readAsDataUrl(file) });
    }
    this.renderAttachments();
  }

  renderAttachments() {
    clear(this.attachments, this.images.map((img, i) =>
      h("figure.thumb", {},
        h("img", { src: img.url, alt: img.name }),
        h("button.quiet", { type: "button", "aria-label": `Remove ${img.name}`, onclick: () => {
          this.images.splice(i, 1);
          this.renderAttachments();
        } }, "×"))));
  }

  async send() {
    const text = this.textarea.value.trim();
    if ((!text && !this.images.length) || this.sending) return;
    this.sending = true;
    this.updateComposer();
    const body = { text };
    if (this.images.length) body.images = this.images.map((i) => i.url);
    const answer = await attempt(() => api("POST", `${this.path}/messages`, body));
    this.sending = false;
    if (answer) {
      this.textarea.value = "";
      this.images = [];
      this.renderAttachments();
      this.upsert(answer.item);
      this.log.scrollTop = this.log.scrollHeight;
    }
    this.updateComposer();
    this.textarea.focus();
  }

  async stop() {
    this.stopping = true;
    this.updateComposer();
    await attempt(() => api("POST", `${this.path}/stop`, {}));
    this.stopping = false;
    this.updateComposer();
  }

  // ---- questions ----

  draftFor(id) {
    if (!this.drafts.has(id)) this.drafts.set(id, { text: "", picked: new Set() });
    return this.drafts.get(id);
  }

  // A question card no longer waits: what was kept for its answer goes.
  settleQuestion(id) {
    this.drafts.delete(id);
    this.answering.delete(id);
    this.answerErrors.delete(id);
  }

  async answer(item, answer) {
    if (this.answering.has(item.id)) return;
    const card = this.els.get(item.id);
    const place = card && card.contains(document.activeElement) ? document.activeElement.dataset.focus : null;
    this.answering.add(item.id);
    this.answerErrors.delete(item.id);
    this.drawItem(this.byId.get(item.id));
    try {
      await api("POST", `${this.path}/answer`, { item: item.id, answer });
    } catch (err) {
      if (this.closed) return;
      this.answering.delete(item.id);
      this.answerErrors.set(item.id, problem(err));
      this.drawItem(this.byId.get(item.id));
      const again = this.els.get(item.id);
      again?.querySelector("[role=alert]")?.scrollIntoView({ block: "nearest" });
      if (place && again && again.contains(document.activeElement)) again.querySelector(`[data-focus="${place}"]`)?.focus();
    }
    // On success the card's item event ends the wait (it may have come already).
  }

  focusQuestion() {
    const open = this.items.filter(isOpenQuestion).pop();
    const el = open && this.els.get(open.id);
    if (!el) return;
    el.scrollIntoView({ block: "nearest" });
    (el.querySelector("button.option, input, button") || el).focus();
  }

  async approve(item, decision) {
    const card = this.els.get(item.id);
    for (const b of card ? card.querySelectorAll(".approval button") : []) b.disabled = true;
    const ok = await attempt(() => api("POST", `${this.path}/approval`, { item: item.id, decision }));
    if (!ok) for (const b of card ? card.querySelectorAll(".approval button") : []) b.disabled = false;
  }

  startEdit(item) {
    this.editing = item.id;
    this.drawItem(item);
  }

  async resend(item, text) {
    const answer = await attempt(() => api("POST", `${this.path}/edit`, { item: item.id, text }));
    if (!answer) return;
    this.editing = null;
    await this.refresh(); // the edited message and what followed are gone: read it whole
  }

  async preview(file) {
    const dialog = document.getElementById("preview-dialog");
    const frame = dialog.querySelector("iframe");
    const url = `${this.path}/file?path=${enc(file)}`;
    try {
      frame.src = keyInUse() ? await fileBlobUrl(url) : url;
    } catch (err) {
      toast(err.message);
      return;
    }
    dialog.querySelector("h2").textContent = file;
    dialog.showModal();
  }

  // ---- items ----

  renderAll() {
    clear(this.log, this.endEl);
    this.els.clear();
    if (!this.items.length)
      this.log.prepend(h("p.muted.empty-log", {}, "Nothing here yet. Write a message below."));
    for (const item of this.items) this.drawItem(item);
    this.renderEnd();
    this.log.scrollTop = this.log.scrollHeight;
  }

  drawItem(item) {
    if (!item) return;
    const old = this.els.get(item.id);
    const el = this.renderItem(item);
    el.dataset.item = item.id;
    if (old) {
      // keep what the person opened, and where the keyboard was
      for (const d of old.querySelectorAll("details[open][data-key]")) {
        const same = el.querySelector(`details[data-key="${d.dataset.key}"]`);
        if (same) same.open = true;
      }
      const held = old.contains(document.activeElement);
      const focused = held ? document.activeElement.dataset.focus : null;
      old.replaceWith(el);
      const again = focused ? el.querySelector(`[data-focus="${focused}"]`) : null;
      // the control the keyboard was on went (a question answered): stay on the card
      if (again && !again.disabled) again.focus();
      else if (held && el.hasAttribute("tabindex")) el.focus();
    } else {
      this.log.querySelector(".empty-log")?.remove();
      this.log.insertBefore(el, this.endEl);
    }
    this.els.set(item.id, el);
  }

  renderItem(item) {
    switch (item.kind) {
      case "user":
        return this.renderUser(item);
      case "assistant":
        return this.renderAssistant(item);
      case "tool":
        return item.tool === ASK_USER ? this.renderQuestion(item) : this.renderTool(item);
      case "notice":
        return h(`div.item.notice.level-${item.level || "info"}`, { role: "note" },
          h("strong", {}, `${NOTICE_LABELS[item.level] || "Note"}: `), item.text || "");
      default:
        return h("div.item.muted", {}, `(${item.kind})`);
    }
  }

  renderUser(item) {
    const busy = this.info && (this.info.state === "running" || this.info.state === "waiting");
    if (this.editing === item.id) {
      const area = h("textarea", { "aria-label": "Edit message", rows: "3", value: item.text || "" });
      const form = h("form.item.user.editing", { "aria-label": "Edit your message" }, area,
        h("div.actions", {},
          h("button.primary", { type: "submit" }, "Send again"),
          h("button.quiet", { type: "button", onclick: () => {
            this.editing = null;
            this.drawItem(item);
          } }, "Cancel")),
        h("small.hint", {}, "Sending again drops this message and everything after it."));
      area.addEventListener("keydown", (ev) => {
        if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
          ev.preventDefault();
          form.requestSubmit();
        }
      });
      form.addEventListener("submit", (ev) => {
        ev.preventDefault();
        if (area.value.trim()) this.resend(item, area.value.trim());
      });
      setTimeout(() => area.focus(), 0);
      return form;
    }
    return h("article.item.user", { "aria-label": "Your message" },
      h("div.bubble", {},
        h("div.text", {}, item.text || ""),
        (item.images || []).length
          ? h("div.images", {}, item.images.map((src, i) => h("img", { src, alt: `Image ${i + 1}` })))
          : null),
      h("div.item-actions", {},
        h("button.quiet.edit", { type: "button", disabled: busy, onclick: () => this.startEdit(item),
          "aria-label": "Edit this message and send it again", "data-focus": "edit" }, "Edit")));
  }

  renderAssistant(item) {
    if (!item.text && !item.reasoning && !item.streaming) return h("div.item.assistant.empty", { hidden: true });
    const streaming = Boolean(item.streaming);
    return h("article.item.assistant", { "aria-label": "Answer", "aria-busy": streaming ? "true" : "false",
      class: streaming ? "streaming" : "" },
      item.reasoning
        ? h("details.reasoning", { "data-key": "reasoning" },
            h("summary", {}, streaming && !item.text ? "Thinking…" : "Reasoning"),
            h("div.reasoning-text", {}, item.reasoning))
        : null,
      item.text ? h("div.markdown", { html: renderMarkdown(item.text) }) : null,
      streaming ? h("span.cursor", { "aria-hidden": "true" }) : null);
  }

  renderQuestion(item) {
    return renderQuestion(item, {
      draft: this.draftFor(item.id),
      busy: this.answering.has(item.id),
      error: this.answerErrors.get(item.id),
      onAnswer: (answer) => this.answer(item, answer),
      onDraft: () => this.answerErrors.delete(item.id),
    });
  }

  renderTool(item) {
    const state = item.state || "running";
    const args = item.args || {};
    const title = item.title || item.tool || "Tool";
    const parts = [];
    if (item.diff) {
      parts.push(h("pre.diff", { "aria-label": "The change", html: renderDiff(item.diff) }));
    } else if (item.tool === "exec_shell_command" && args.command) {
      parts.push(h("pre.command", { "aria-label": "The command" }, `$ ${args.command}`));
    } else if (Object.keys(args).length && state === "waiting") {
      parts.push(h("pre.args", { "aria-label": "The arguments" }, JSON.stringify(args, null, 2)));
    } else if (Object.keys(args).length) {
      parts.push(h("details.args", { "data-key": "args" }, h("summary", {}, "Arguments"),
        h("pre", {}, JSON.stringify(args, null, 2))));
    } else if (item.raw_args) {
      parts.push(h("details.args", { "data-key": "args" }, h("summary", {}, "Arguments as written"),
        h("pre", {}, item.raw_args)));
    }
    if (state === "waiting") {
      parts.push(h("div.approval", { role: "group", "aria-label": `Approve or deny: ${title}` },
        h("button.primary", { type: "button", "data-focus": "approve", onclick: () => this.approve(item, "approve") },
          "Approve"),
        h("button.danger", { type: "button", "data-focus": "deny", onclick: () => this.approve(item, "deny") },
          "Deny")));
    }
    if (item.result) {
      parts.push(h("details.result", { "data-key": "result" },
        h("summary", {}, state === "error" || state === "denied" ? "Why" : "Result",
          item.shortened ? h("span.muted", {}, " (shortened for the model)") : null),
        h("pre", {}, item.result)));
    }
    if (item.file && state === "done" && this.info && this.info.workspace) {
      parts.push(h("button.link.preview-link", { type: "button", "data-focus": "preview",
        onclick: () => this.preview(item.file) }, `Preview ${item.file}`));
    }
    const bytes = state === "composing" && typeof item.bytes === "number"
      ? h("span.bytes", { "aria-label": "Written so far" }, sizeText(item.bytes)) : null;
    return h(`article.item.card.tool.state-${state}`, { "aria-label": `Tool: ${title}`, "data-state": state },
      h("header.card-head", {},
        h("span.tool-title", {}, title),
        item.mcp ? h("span.muted", {}, ` (${item.mcp})`) : null,
        h("span.spacer"),
        bytes,
        h(`span.badge.tool-state.state-${state}`, {}, TOOL_STATES[state] || state)),
      parts);
  }
}

