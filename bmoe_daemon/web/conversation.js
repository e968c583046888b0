// One conversation: its header (title, state, plan mode, goal, mode, model), its
// items as they stream, why the last run ended (and Resume), the todo list, the
// context bar with Compact (context.js) and the message box (composer.js).
//
// This view holds what the conversation is (its info and its items, read whole and
// kept by the events) and sends what the person does; its parts draw it: the log
// (log.js: each item's element, drawn once a frame; scroll.js: where the person
// scrolled it), the cards that wait on the person and the keyboard around them
// (waiting.js), the todo list and the run's end (progress.js), the header (header.js).
//
// Items are upserted by id from `item` events; `delta` events grow a streaming answer.
// An event that names a `task` card is a helper's: its item goes to that card's
// transcript (helpers.js), never among the conversation's own.

import { api, ApiError, fileBlobUrl, keyInUse } from "./api.js";
import { clear, h } from "./dom.js";
import { isOpenPlan, renderLoadingAnswer, renderReadingAnswer, renderWaitingAnswer } from "./cards.js";
import { answerShowFile, offersShowFile, resetPreview, SHOW_FILE } from "./clienttools.js";
import { runsOf } from "./changes.js";
import { Composer } from "./composer.js";
import { ContextBar } from "./context.js";
import { ConversationHeader } from "./header.js";
import { HelperItems, isTask } from "./helpers.js";
import { HelperTree } from "./helpertree.js";
import { ConversationLog } from "./log.js";
import { modelMemory, watchModelMemory } from "./modelstate.js";
import { RunProgress } from "./progress.js";
import { isOpenQuestion } from "./run.js";
import { conversationInfo } from "./sidebar.js";
import { attempt, problem, shell, toast } from "./ui.js";
import { WaitingCards } from "./waiting.js";

// What a conversation event carries besides its title, state and time.
const INFO_KEYS = ["todos", "end_reason", "plan_mode", "plan", "goal", "context", "budget"];

function enc(s) {
  return encodeURIComponent(s);
}

export class ConversationView {
  constructor(main, id, target = null) {
    this.main = main;
    this.conversationId = id;
    this.target = target; // an item to show once read (a search's match), or null
    this.name = "conversation";
    this.info = null;
    this.items = [];
    this.byId = new Map();
    this.editing = null;
    this.closed = false;
    this.providers = [];
    this.workspaces = null;
    this.model = null; // the loaded model: {model, n_ctx} (GET /api/model, events); in memory: modelstate.js
    this.sending = false; // a message's request is on its way
    this.sendOutrun = false; // its run began and ended on the stream before the reply came
    this.sendSerial = 0;
    this.stopping = false;
    this.touched = null; // ids events touched while a refresh travels
    this.serial = 0;
    this.infoSerial = 0; // counts conversation events: an answer older than one is not applied
    this.helpers = new HelperItems(); // the helpers' items, by their task card
    this.changed = new Map(); // a message id -> how many files its run changed (changes.js has them)
    this.toolClients = null; // event streams open that answer this conversation's tool calls (the daemon counts)
    this.shown = new Set(); // show_file calls this page answered (clienttools.js)
    // The view's parts, made by build(): the log (log.js, its scrolling scroll.js), the
    // cards that wait on the person (waiting.js), the todo list and why the run ended
    // (progress.js), the header, the context bar and the message box.
    this.log = null;
    this.waiting = null;
    this.progress = null;
  }

  get path() {
    return `/api/conversations/${enc(this.conversationId)}`;
  }

  close() {
    this.closed = true;
    if (this.log) this.log.close();
    if (this.unwatch) this.unwatch();
    if (this.composer) this.composer.close();
    if (this.waiting) this.waiting.close();
    if (this.helperTree) this.helperTree.close();
    shell.serveTools?.([]);
  }

  // The page answers this conversation's show_file calls while it is open (clienttools.js):
  // its stream says so, and a call that waited before the page opened is answered now.
  serveTools() {
    const serving = offersShowFile(this.info);
    shell.serveTools?.(serving ? [this.conversationId] : []);
    if (!serving) return;
    for (const item of this.items) {
      if (item.kind === "tool" && item.tool === SHOW_FILE && item.state === "waiting_client") {
        this.showFile({ item: item.id, arguments: item.args || {} });
      }
    }
  }

  showFile(request) {
    if (this.shown.has(request.item) || !offersShowFile(this.info)) return;
    this.shown.add(request.item);
    answerShowFile(this.path, request);
  }

  // The local model is being loaded again (let go after idle minutes) for the turn
  // this run waits on: its answer says so until the first word.
  get loadingModel() {
    return this.running && this.info.route === "local" && (this.info.agent || "builtin") === "builtin"
      && modelMemory().state === "loading";
  }

  // The model came into memory, or began to: the header and a waiting answer say so.
  memoryChanged() {
    if (this.closed || !this.info) return;
    this.header.renderModel();
    for (const item of this.items) if (item.kind === "assistant" && item.streaming && !item.text) this.log.schedule(item.id);
    this.log.scroll.keep(() => this.renderPending());
  }

  // An answer on its way that the daemon has not begun (no item yet): while the model
  // loads, a card says so where the answer will be.
  // While the model reads a long prompt (`prefill` events), the same place says how far.
  // From Send on, until the answer's first word, it says what the run waits for: the
  // turn line behind another conversation (`turn_line` events, naming which), the
  // model reading the conversation, or a provider's answer.
  renderPending() {
    const begun = this.items.some((i) => i.kind === "assistant" && i.streaming);
    const loading = this.loadingModel && !begun;
    // Not while a card is on (a call being written or run, an approval waiting).
    const carded = this.items.some((i) => i.kind === "tool" && ["composing", "running", "waiting", "waiting_client"].includes(i.state));
    // The model is asked next: after the person's message, a call's result or what the
    // model is told; not after an answer the run ends on.
    const last = this.items.findLast((i) => i.kind !== "notice" || i.for_model);
    const next = !last || last.kind !== "assistant";
    const asking = next && !loading && !begun && !carded && Boolean(this.info) && this.info.state === "running";
    this.log.pendingEl.hidden = !loading && !asking;
    clear(this.log.pendingEl, loading ? renderLoadingAnswer() : !asking ? null : this.pendingAnswer());
  }

  pendingAnswer() {
    if (this.behind !== undefined) {
      const other = this.behind ? conversationInfo(this.behind) : null;
      const whose = other ? `“${other.title || "New conversation"}”` : "another conversation";
      return renderWaitingAnswer(`Waiting for the model: it is answering ${whose} first.`, "turn-line");
    }
    if (this.reading) return renderReadingAnswer(this.reading);
    const local = this.info.route === "local" && (this.info.agent || "builtin") === "builtin";
    // Let go after idle minutes: the turn loads it first (the loading line, once it begins).
    if (local && modelMemory().state === "asleep") return renderLoadingAnswer();
    return renderWaitingAnswer(local ? "Reading the conversation…"
      : (this.info.agent || "builtin") === "builtin" ? "Sent to the provider; waiting for its answer…"
        : "Waiting for the agent…", "starting");
  }

  async load() {
    this.build();
    await this.readChoices();
    await this.refresh();
    if (this.target && !this.closed) this.showItem(this.target);
    // Sent from the home page: the keyboard goes on in this conversation's message box
    // (unless the person already put it somewhere, or an approval took it).
    if (shell.focusComposer === this.conversationId && !this.closed) {
      shell.focusComposer = null;
      const at = document.activeElement;
      if (!at || at === document.body) this.textarea.focus();
    }
  }

  // Scrolls the log to an item and marks it (a search's match); the keyboard goes to it.
  showItem(id) {
    this.log.flush();
    const el = this.log.cardEl(id);
    if (!el) {
      toast("That message is no longer in this conversation.");
      return;
    }
    el.classList.add("found-item");
    el.setAttribute("tabindex", "-1");
    el.scrollIntoView({ block: "center" });
    el.focus({ preventScroll: true });
  }

  // What the header offers to pick: the providers' models and the workspaces.
  async readChoices() {
    const [providers, workspaces] = await Promise.all([
      api("GET", "/api/providers").catch(() => []),
      api("GET", "/api/workspaces").catch(() => null),
    ]);
    this.providers = providers;
    this.workspaces = workspaces;
  }

  // The stream is back after a drop: it replays the conversation's events, not the
  // workspaces and providers the header offers, so those are read again (and the
  // conversation whole when it was never read).
  async reconnected() {
    await this.readChoices();
    if (this.closed) return;
    if (this.info) this.renderHeader();
    else await this.refresh();
  }

  // The loaded model and its context; null when there is none or the daemon cannot
  // say. A `model` event that comes meanwhile wins.
  async readModel() {
    const seen = this.modelSerial || 0;
    const model = await api("GET", "/api/model").catch(() => null);
    if (seen !== (this.modelSerial || 0) || !model) return;
    this.model = { model: model.model, n_ctx: model.n_ctx };
  }

  // The conversation was deleted (here, elsewhere, or never existed): the page says so.
  gone() {
    clear(this.main, h("section.page", {},
      h("h1", {}, "This conversation is gone"),
      h("p", {}, "It was deleted, or never existed here."),
      h("a.button", { href: "#/" }, "Back to the conversations")));
    shell.forgetConversation(this.conversationId);
    this.closed = true;
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
      [conv] = await Promise.all([api("GET", this.path), this.readModel()]);
    } catch (err) {
      if (serial === this.serial) this.touched = null;
      if (this.closed) return;
      if (err instanceof ApiError && err.status === 404) {
        this.gone();
        return;
      }
      if (!this.info) throw err; // never shown: the page says it could not be, with Retry
      toast(err.message || String(err));
      return;
    }
    if (this.closed || serial !== this.serial) return;
    this.touched = null;
    const { items, ...info } = conv;
    if (touched.has(":conversation") && this.latestInfo) Object.assign(info, this.latestInfo);
    const workspaceKnown = this.info && this.info.workspace === info.workspace;
    this.info = info;
    if (!workspaceKnown) this.composer.mentions.refresh(); // an `@` typed while it was read
    const fresh = items.map((i) => (touched.has(i.id) && this.byId.has(i.id) ? this.byId.get(i.id) : { ...i }));
    const inAnswer = new Set(items.map((i) => i.id));
    for (const id of touched) {
      if (!inAnswer.has(id) && this.byId.has(id)) fresh.push(this.byId.get(id)); // newer than the answer
    }
    this.items = fresh;
    this.byId = new Map(this.items.map((i) => [i.id, i]));
    this.helpers.sync(fresh, touched);
    this.helperTree.render();
    this.toolClients = typeof conv.tool_clients === "number" ? conv.tool_clients : null;
    this.renderHeader();
    this.log.renderAll();
    this.progress.renderTodos();
    this.updateComposer();
    this.readChanges();
    this.header.usage.read();
    this.serveTools();
  }

  // Which messages' runs changed files, and how many: each such message links to its
  // run in the Changes view. Read after the conversation, and when a run ends.
  async readChanges() {
    if (!this.info || !this.info.workspace) return;
    let runs;
    try {
      runs = runsOf(await api("GET", `${this.path}/changes`));
    } catch {
      return; // the Changes view says why; the messages simply have no link
    }
    if (this.closed) return;
    const before = this.changed;
    this.changed = new Map(runs.map((r) => [r.item, r.files.length]));
    for (const id of new Set([...before.keys(), ...this.changed.keys()])) {
      if (before.get(id) !== this.changed.get(id) && this.byId.has(id)) this.log.schedule(id);
    }
  }

  onEvent(name, data) {
    if (this.closed) return;
    if (data && data.conversation === this.conversationId && !data.task && this.reading
        && (name === "delta" || (name === "item" && ["assistant", "tool"].includes(data.item.kind)))) {
      // The model began to write: what it read is behind it. The answer's item is drawn
      // (and the slot emptied) with the next frame, not said to be read again before.
      this.reading = null;
      this.behind = undefined;
      this.log.schedule(data.item.id || data.item);
    }
    if (name === "tool_request" && data.conversation === this.conversationId && data.name === SHOW_FILE) {
      this.showFile(data);
    } else if (name === "tool_clients" && data.conversation === this.conversationId) {
      this.toolClients = data.clients;
      for (const item of this.items) if (item.state === "waiting_client") this.log.schedule(item.id);
    } else if (name === "prefill" && data.conversation === this.conversationId) {
      this.reading = { done: data.done, total: data.total };
      this.behind = undefined;
      this.log.scroll.keep(() => this.renderPending());
    } else if (name === "turn_line" && data.conversation === this.conversationId) {
      this.behind = data.behind === null ? undefined : data.behind; // null: its turn came
      this.log.scroll.keep(() => this.renderPending());
    } else if (name === "model") {
      this.modelSerial = (this.modelSerial || 0) + 1;
      this.model = { model: data.model, n_ctx: data.n_ctx };
      if (this.info) this.header.renderModel();
    } else if (name === "conversation_deleted" && data.id === this.conversationId) {
      this.gone();
    } else if (name === "conversation" && data.id === this.conversationId) {
      if (this.touched) this.touched.add(":conversation");
      this.infoSerial++;
      this.latestInfo = { title: data.title, state: data.state, updated: data.updated };
      for (const key of INFO_KEYS) if (key in data) this.latestInfo[key] = data[key];
      if (!this.info) return;
      this.log.flush();
      // A refusal of Resume speaks of the run as it was: a new state makes it stale.
      if (data.state !== this.info.state || data.end_reason !== this.info.end_reason) this.progress.resumeError = "";
      const moved = data.state !== this.info.state;
      if (moved) this.reading = null; // a run began or ended: no reading of its prompt yet
      if (moved) this.behind = undefined;
      if (moved) this.composer.say(""); // so does one of the message box's
      // Resume's run began (or even ended) before the daemon's reply: the end line follows
      // the stream, never "Resuming…" beside a run that ended.
      if (moved && this.progress.resuming) this.progress.outrun = true;
      Object.assign(this.info, this.latestInfo);
      if (moved && this.sending && !this.running) this.sendOutrun = true;
      this.renderHeader();
      if (moved) this.contextBar.stateChanged();
      if (moved && !this.running) this.readChanges(); // the run that ended may have changed files
      if (moved) this.header.usage.read();
      else this.contextBar.render();
      this.progress.renderTodos();
      this.log.scroll.keep(() => this.progress.renderEnd());
      this.updateComposer();
    } else if (name === "plan" && data.conversation === this.conversationId && this.info) {
      this.info.plan_mode = data.plan_mode;
      this.info.plan = { revision: data.revision, state: data.state };
      this.renderHeader();
      this.updateComposer();
    } else if (name === "item" && data.conversation === this.conversationId) {
      if (data.task) this.upsertHelper(data.task, data.item);
      else this.upsert(data.item);
      // An answer ended with its usage: the ledger has counted it before it was shown.
      if (data.item.kind === "assistant" && data.item.usage && !data.item.streaming) this.header.usage.read();
    } else if (name === "delta" && data.conversation === this.conversationId && data.task) {
      const item = this.helpers.delta(data);
      if (!item) return;
      if (this.touched) this.touched.add(item.id);
      this.log.schedule(data.task);
    } else if (name === "delta" && data.conversation === this.conversationId) {
      const item = this.byId.get(data.item);
      if (!item) return;
      if (this.touched) this.touched.add(item.id);
      if (data.text) item.text = (item.text || "") + data.text;
      if (data.reasoning) item.reasoning = (item.reasoning || "") + data.reasoning;
      this.log.countPiece(item.id);
      this.log.schedule(item.id);
    }
  }


  upsert(item) {
    if (this.touched) this.touched.add(item.id);
    if (item.state !== "waiting") this.waiting.settle(item.id);
    const known = this.byId.get(item.id);
    if (known) {
      const at = this.items.indexOf(known);
      this.items[at] = item;
    } else if (item.compaction) {
      // A compaction's notice comes after the items it summarised (marked before it).
      let at = this.items.length;
      while (at > 0 && !this.items[at - 1].compacted) at--;
      this.items.splice(at || this.items.length, 0, item);
    } else {
      this.items.push(item);
    }
    this.byId.set(item.id, item);
    if (isTask(item)) {
      this.helpers.take(item); // the helper's items as the card now holds them
      this.helperTree.render();
    }
    this.log.schedule(item.id);
  }

  // One of a helper's items (`card`: its task card): drawn inside that card.
  upsertHelper(card, item) {
    if (this.touched) this.touched.add(item.id);
    if (item.state !== "waiting") this.waiting.settle(item.id);
    this.helpers.upsert(card, item);
    this.log.schedule(card);
  }

  // ---- the frame: header, log, composer ----

  build() {
    this.header = new ConversationHeader(this);
    this.log = new ConversationLog(this);
    this.unwatch = watchModelMemory(() => this.memoryChanged());
    this.progress = new RunProgress(this);
    this.helperTree = new HelperTree(this);
    this.contextBar = new ContextBar(this);
    this.composer = new Composer({
      conversationId: this.conversationId,
      onSend: () => this.send(),
      onStop: () => this.stop(),
      onPlanMode: (on) => this.setPlanMode(on),
      onGoTo: () => this.waiting.focusWaiting(),
      workspaceOf: () => (this.info ? this.info.workspace : null),
    });
    this.textarea = this.composer.textarea;
    this.waiting = new WaitingCards(this);
    clear(this.main, h("section.conv", { "aria-labelledby": "conv-title" },
      this.header.element, h("div.log-wrap", {}, this.log.element, this.log.scroll.jumpBtn), this.waiting.announcer,
      this.progress.element, this.helperTree.element,
      this.contextBar.element, this.waiting.pinned.element, this.composer.element));
    this.composer.fit(); // a draft kept from before is shown whole
  }

  // The built-in agent in a workspace: plan mode and goals apply.
  get agentTools() {
    return Boolean(this.info && this.info.workspace) && (this.info.agent || "builtin") === "builtin";
  }

  get running() {
    return Boolean(this.info) && (this.info.state === "running" || this.info.state === "waiting");
  }

  renderHeader() {
    this.header.render();
  }

  // A change made here (PATCH), with the daemon's answer: the conversation as it stood
  // when it answered. Events that came while it travelled are newer (the run went on,
  // even ended): then only what was changed here is taken from the answer.
  async change(changes) {
    const seen = this.infoSerial;
    const info = await api("PATCH", this.path, changes);
    if (seen === this.infoSerial) Object.assign(this.info, info);
    else for (const key of Object.keys(changes)) this.info[key] = info[key];
    return info;
  }

  // Plan mode changes between runs; the daemon's refusal is said under the message box.
  async setPlanMode(on) {
    try {
      await this.change({ plan_mode: on });
      this.composer.say("");
      return true;
    } catch (err) {
      this.composer.say(problem(err));
      return false;
    } finally {
      if (!this.closed) this.renderHeader();
    }
  }

  updateComposer() {
    const busy = this.running;
    const waiting = this.items.some(isOpenQuestion) ? "question" : this.items.some(isOpenPlan) ? "plan"
      : this.helpers.waiting().length ? "helper" : null;
    this.composer.update({ busy, sending: this.sending && !this.sendOutrun, stopping: this.stopping, waiting,
      planMode: this.info && this.info.plan_mode, agentTools: this.agentTools,
      // The daemon loads no vision projector: images go only to a provider's model.
      images: Boolean(this.info) && this.info.route !== "local" });
    for (const btn of this.log.element.querySelectorAll("button.edit, button.regenerate")) btn.disabled = busy;
    this.contextBar.render();
    this.waiting.renderPinned();
  }

  // ---- sending ----

  // The stream and the request are two connections: the run may begin, answer and end
  // (its goal reached, even) before the daemon's reply to the send comes. What the events
  // said stands; and once they showed the run over, the next message may go.
  async send() {
    const body = this.composer.message();
    if (!body || (this.sending && !this.sendOutrun)) return;
    const mine = ++this.sendSerial;
    this.sending = true;
    this.sendOutrun = false;
    const seen = this.infoSerial;
    const held = this.composer.take();
    this.updateComposer();
    let answer = null;
    try {
      answer = await api("POST", `${this.path}/messages`, body);
    } catch (err) {
      this.composer.giveBack(held);
      this.composer.say(problem(err));
    }
    if (mine === this.sendSerial) this.sending = false;
    if (answer) {
      this.composer.sent();
      // Shown at once unless the conversation's events already said how it stands.
      if (body.goal && seen === this.infoSerial) {
        this.header.setGoal({ text: body.goal, state: "active", reason: null, verify: body.verify });
      }
      if (!this.byId.has(answer.item.id)) this.upsert(answer.item); // an event's copy is never older
      this.log.scroll.toBottom();
    }
    this.updateComposer();
    // Back to the message box, unless the person went elsewhere while the request was
    // on its way (the run may show before the answer comes, and they may act on it).
    const active = document.activeElement;
    if (!active || active === document.body || this.composer.element.contains(active)) this.textarea.focus();
  }

  async stop() {
    this.stopping = true;
    this.updateComposer();
    await attempt(() => api("POST", `${this.path}/stop`, {}));
    this.stopping = false;
    this.updateComposer();
  }


  startEdit(item) {
    this.editing = item.id;
    this.log.drawItem(item);
  }


  // A new answer in place of `answer`: the message it answered sent again as it was
  // (an edit: that answer and everything after it go).
  regenerate(answer) {
    const at = this.items.indexOf(answer);
    const asked = this.items.slice(0, Math.max(at, 0)).reverse().find((i) => i.kind === "user");
    if (asked) this.resend(asked, asked.text || "");
  }

  async resend(item, text) {
    const answer = await attempt(() => api("POST", `${this.path}/edit`, { item: item.id, text }));
    if (!answer) return;
    this.editing = null;
    await this.refresh(); // the edited message and what followed are gone: read it whole
  }

  // "Fork from here": a new conversation with the items up to and including `item`
  // (the daemon copies them; this one stays as it is), opened at once.
  async fork(item) {
    const conv = await attempt(() => api("POST", `${this.path}/fork`, { item: item.id }));
    if (!conv || this.closed) return;
    shell.conversationChanged(conv);
    toast(`Forked into “${conv.title || "a new conversation"}”.`, "info");
    location.hash = `#/c/${enc(conv.id)}`;
  }

  async preview(file) {
    const dialog = document.getElementById("preview-dialog");
    const frame = dialog.querySelector("iframe");
    const url = `${this.path}/file?path=${enc(file)}`;
    resetPreview(dialog);
    try {
      frame.src = keyInUse() ? await fileBlobUrl(url) : url;
    } catch (err) {
      toast(err.message);
      return;
    }
    dialog.querySelector("h2").textContent = file;
    dialog.showModal();
  }

}