// One conversation: its header (title, state, plan mode, goal, mode, model), its
// items as they stream (items.js draws each, cards.js the cards), why the last run
// ended (and Resume), the todo list, the context bar with Compact (context.js) and
// the message box (composer.js).
//
// Items are upserted by id from `item` events; `delta` events grow a streaming answer.
// An event that names a `task` card is a helper's: its item goes to that card's
// transcript (helpers.js), never among the conversation's own. A card keeps which of
// its folds are open and where the keyboard was when it is drawn again, so a growing
// card does not snatch the person's place. Items a compaction summarised are shown
// folded under its notice. Scrolled up while items come, the person keeps their place
// and "Jump to latest" offers the way down (keepScroll).

import { api, ApiError, fileBlobUrl, keyInUse } from "./api.js";
import { clear, h } from "./dom.js";
import { isOpenPlan, renderLoadingAnswer, renderReadingAnswer } from "./cards.js";
import { Composer } from "./composer.js";
import { ContextBar } from "./context.js";
import { ConversationHeader } from "./header.js";
import { HelperItems, isTask } from "./helpers.js";
import { layoutOf, renderItem } from "./items.js";
import { modelMemory, watchModelMemory } from "./modelstate.js";
import { isOpenApproval, PinnedApproval, shortcutOf } from "./pinned.js";
import { keepRenderedIn, onRenderedClick } from "./rendered.js";
import { isOpenQuestion, newlyCompleted, renderRunEnd, renderTodos, RESUMABLE } from "./run.js";
import { attempt, problem, shell, toast } from "./ui.js";

const NEAR_BOTTOM_PX = 120;
// What a conversation event carries besides its title, state and time.
const INFO_KEYS = ["todos", "end_reason", "plan_mode", "plan", "goal", "context"];

function enc(s) {
  return encodeURIComponent(s);
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
    this.rates = new Map(); // answer id -> {first, last, pieces}: its deltas, for tokens a second
    this.frame = 0;
    this.editing = null;
    this.closed = false;
    this.providers = [];
    this.workspaces = null;
    this.model = null; // the loaded model: {model, n_ctx} (GET /api/model, events); in memory: modelstate.js
    this.sending = false;
    this.stopping = false;
    this.touched = null; // ids events touched while a refresh travels
    this.serial = 0;
    this.infoSerial = 0; // counts conversation events: an answer older than one is not applied
    // Cards that wait on the person: what was typed or picked (a question's answer, a
    // plan's feedback), an answer on its way, the daemon's refusal of the last one.
    this.drafts = new Map();
    this.busy = new Set();
    this.errors = new Map();
    this.answered = new Set(); // cards answered from this page, the answer on its way
    this.moveOn = null; // {id, pinned}: a card answered with the keyboard on it, until the keyboard goes on
    this.unfolded = new Set(); // compaction notices whose items are shown
    this.helpers = new HelperItems(); // the helpers' items, by their task card
    this.tasksOpen = new Set(); // task cards whose helper's items the person opened
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
    if (this.unwatch) this.unwatch();
    if (this.composer) this.composer.close();
    document.removeEventListener("keydown", this.onShortcut);
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
    for (const item of this.items) if (item.kind === "assistant" && item.streaming && !item.text) this.schedule(item.id);
    this.keepScroll(() => this.renderPending());
  }

  // An answer on its way that the daemon has not begun (no item yet): while the model
  // loads, a card says so where the answer will be.
  // While the model reads a long prompt (`prefill` events), the same place says how far.
  renderPending() {
    const begun = this.items.some((i) => i.kind === "assistant" && i.streaming);
    const reading = this.running && !begun && !this.loadingModel ? this.reading : null;
    const show = (this.loadingModel && !begun) || Boolean(reading);
    this.pendingEl.hidden = !show;
    clear(this.pendingEl, !show ? null : reading ? renderReadingAnswer(reading) : renderLoadingAnswer());
  }

  async load() {
    this.build();
    await this.readChoices();
    await this.refresh();
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
    this.info = info;
    const fresh = items.map((i) => (touched.has(i.id) && this.byId.has(i.id) ? this.byId.get(i.id) : { ...i }));
    const inAnswer = new Set(items.map((i) => i.id));
    for (const id of touched) {
      if (!inAnswer.has(id) && this.byId.has(id)) fresh.push(this.byId.get(id)); // newer than the answer
    }
    this.items = fresh;
    this.byId = new Map(this.items.map((i) => [i.id, i]));
    this.helpers.sync(fresh, touched);
    this.renderHeader();
    this.renderAll();
    this.renderTodos();
    this.updateComposer();
  }

  onEvent(name, data) {
    if (this.closed) return;
    if (data && data.conversation === this.conversationId && !data.task && this.reading
        && (name === "delta" || (name === "item" && ["assistant", "tool"].includes(data.item.kind)))) {
      this.reading = null; // the model began to write: what it read is behind it
      this.keepScroll(() => this.renderPending());
    }
    if (name === "prefill" && data.conversation === this.conversationId) {
      this.reading = { done: data.done, total: data.total };
      this.keepScroll(() => this.renderPending());
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
      this.flush();
      // A refusal of Resume speaks of the run as it was: a new state makes it stale.
      if (data.state !== this.info.state || data.end_reason !== this.info.end_reason) this.resumeError = "";
      const moved = data.state !== this.info.state;
      if (moved) this.reading = null; // a run began or ended: no reading of its prompt yet
      if (moved) this.composer.say(""); // so does one of the message box's
      Object.assign(this.info, this.latestInfo);
      this.renderHeader();
      if (moved) this.contextBar.stateChanged();
      else this.contextBar.render();
      this.renderTodos();
      this.keepScroll(() => this.renderEnd());
      this.updateComposer();
    } else if (name === "plan" && data.conversation === this.conversationId && this.info) {
      this.info.plan_mode = data.plan_mode;
      this.info.plan = { revision: data.revision, state: data.state };
      this.renderHeader();
      this.updateComposer();
    } else if (name === "item" && data.conversation === this.conversationId) {
      if (data.task) this.upsertHelper(data.task, data.item);
      else this.upsert(data.item);
    } else if (name === "delta" && data.conversation === this.conversationId && data.task) {
      const item = this.helpers.delta(data);
      if (!item) return;
      if (this.touched) this.touched.add(item.id);
      this.schedule(data.task);
    } else if (name === "delta" && data.conversation === this.conversationId) {
      const item = this.byId.get(data.item);
      if (!item) return;
      if (this.touched) this.touched.add(item.id);
      if (data.text) item.text = (item.text || "") + data.text;
      if (data.reasoning) item.reasoning = (item.reasoning || "") + data.reasoning;
      this.countPiece(item.id);
      this.schedule(item.id);
    }
  }

  // How fast the model writes an answer, from its `delta` events: a local model sends
  // one a token, so pieces a second is tokens a second (about, for a provider's chunks).
  countPiece(id) {
    const now = performance.now();
    const rate = this.rates.get(id);
    if (!rate) this.rates.set(id, { first: now, last: now, pieces: 1 });
    else Object.assign(rate, { last: now, pieces: rate.pieces + 1 });
  }

  // An answer's writing speed once a second of it has been seen; null before.
  writingRate(id) {
    const rate = this.rates.get(id);
    if (!rate || rate.last - rate.first < 1000) return null;
    return (rate.pieces - 1) / ((rate.last - rate.first) / 1000);
  }

  upsert(item) {
    if (this.touched) this.touched.add(item.id);
    if (item.state !== "waiting") this.settle(item.id);
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
    if (isTask(item)) this.helpers.take(item); // the helper's items as the card now holds them
    this.schedule(item.id);
  }

  // One of a helper's items (`card`: its task card): drawn inside that card.
  upsertHelper(card, item) {
    if (this.touched) this.touched.add(item.id);
    if (item.state !== "waiting") this.settle(item.id);
    this.helpers.upsert(card, item);
    this.schedule(card);
  }

  // The item to draw again for this one: itself, or a helper's item's card.
  topOf(id) {
    return this.helpers.owner(id) || id;
  }

  redraw(id) {
    this.drawItem(this.byId.get(this.topOf(id)));
    this.renderPinned();
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
      if (ids.some((i) => this.byId.get(i)?.compacted || this.byId.get(i)?.compaction)) this.layout();
      this.markLastAnswer();
      this.renderEnd();
    });
    this.updateComposer();
  }


  get nearBottom() {
    const log = this.log;
    return log.scrollHeight - log.scrollTop - log.clientHeight < NEAR_BOTTOM_PX;
  }

  // Draws, keeping the log at its bottom when it was there. Scrolled up, the person
  // keeps their place, and "Jump to latest" shows when what was drawn grew the log
  // (`news`: false for a change they made themselves, such as opening a card).
  keepScroll(draw, news = true) {
    const log = this.log;
    const atBottom = this.nearBottom;
    const before = log.scrollHeight;
    draw();
    if (atBottom) log.scrollTop = log.scrollHeight;
    else if (news && log.scrollHeight > before) this.jumpBtn.hidden = false;
  }

  // "Jump to latest": to the bottom of the log. Clicked, it takes no focus (the keyboard
  // stays where it was); pressed from the keyboard, the keyboard goes to the log rather
  // than to the page's top when the button hides.
  jumpToLatest() {
    const held = this.jumpBtn.contains(document.activeElement);
    this.log.scrollTop = this.log.scrollHeight;
    this.jumpBtn.hidden = true;
    if (held) this.log.focus({ preventScroll: true });
  }

  // ---- the frame: header, log, composer ----

  build() {
    this.header = new ConversationHeader(this);
    this.log = h("div.log", { role: "log", "aria-label": "Messages", "aria-live": "polite", tabindex: "0" });
    // rendered Markdown's own clicks: a code block's Copy, a workspace file's link
    this.log.addEventListener("click", (ev) => onRenderedClick(ev, { preview: (file) => this.preview(file) }));
    this.jumpBtn = h("button.jump-latest", { type: "button", hidden: true,
      onmousedown: (ev) => ev.preventDefault(), onclick: () => this.jumpToLatest() }, "Jump to latest");
    // back at the bottom by their own scrolling: the button has nothing left to offer
    this.log.addEventListener("scroll", () => {
      if (!this.jumpBtn.hidden && this.nearBottom) this.jumpBtn.hidden = true;
    }, { passive: true });
    this.endEl = h("div.run-end-slot", { hidden: true });
    this.pendingEl = h("div.pending-answer-slot", { hidden: true });
    // In the log from the start: an item an event brings before the first read is drawn
    // before them (a conversation opened while its run writes).
    this.log.append(this.pendingEl, this.endEl);
    this.unwatch = watchModelMemory(() => this.memoryChanged());
    this.todosEl = h("section.todos", { "aria-labelledby": "todos-title", hidden: true });
    this.contextBar = new ContextBar(this);
    this.composer = new Composer({
      conversationId: this.conversationId,
      onSend: () => this.send(),
      onStop: () => this.stop(),
      onPlanMode: (on) => this.setPlanMode(on),
      onGoTo: () => this.focusWaiting(),
    });
    this.textarea = this.composer.textarea;
    this.pinned = new PinnedApproval({
      onDecide: (item, decision, reason) => this.act(item, "approval", reason ? { decision, feedback: reason } : { decision }),
      onShow: (item) => this.showCard(item),
    });
    this.onShortcut = (ev) => this.shortcut(ev);
    document.addEventListener("keydown", this.onShortcut);
    clear(this.main, h("section.conv", { "aria-labelledby": "conv-title" },
      this.header.element, h("div.log-wrap", {}, this.log, this.jumpBtn), this.todosEl, this.contextBar.element,
      this.pinned.element, this.composer.element));
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

  // Plan mode changes between runs; the daemon's refusal is said under the message box.
  async setPlanMode(on) {
    try {
      Object.assign(this.info, await api("PATCH", this.path, { plan_mode: on }));
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
    this.composer.update({ busy, sending: this.sending, stopping: this.stopping, waiting,
      planMode: this.info && this.info.plan_mode, agentTools: this.agentTools,
      // The daemon loads no vision projector: images go only to a provider's model.
      images: Boolean(this.info) && this.info.route !== "local" });
    for (const btn of this.log.querySelectorAll("button.edit, button.regenerate")) btn.disabled = busy;
    this.contextBar.render();
    this.renderPinned();
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
    this.renderPending();
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

  // ---- sending ----

  async send() {
    const body = this.composer.message();
    if (!body || this.sending) return;
    this.sending = true;
    this.updateComposer();
    let answer = null;
    try {
      answer = await api("POST", `${this.path}/messages`, body);
    } catch (err) {
      this.composer.say(problem(err));
    }
    this.sending = false;
    if (answer) {
      this.composer.sent();
      if (body.goal) this.header.setGoal({ text: body.goal, state: "active", reason: null, verify: body.verify });
      this.upsert(answer.item);
      this.log.scrollTop = this.log.scrollHeight;
      this.jumpBtn.hidden = true;
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

  // ---- cards that wait on the person ----

  draftFor(id) {
    if (!this.drafts.has(id)) this.drafts.set(id, { text: "", picked: new Set(), rejecting: false });
    return this.drafts.get(id);
  }

  // A card no longer waits: what was kept for its answer goes. The keyboard was on it
  // (or on the pinned copy), or it was answered here and the keyboard is nowhere: it
  // goes on to what waits next (goOn).
  settle(id) {
    const was = this.byId.get(id) || this.helpers.find(id);
    if (was && was.kind === "tool" && was.state === "waiting") {
      const at = document.activeElement;
      const nowhere = !at || at === document.body;
      const pinned = this.pinned.holds(at) || (this.answered.delete(id) && nowhere);
      if (pinned || this.cardEl(id)?.contains(at)) this.moveOn = { id, pinned };
    }
    this.drafts.delete(id);
    this.busy.delete(id);
    this.errors.delete(id);
  }

  // A card's element; a helper's is inside its task card.
  cardEl(id) {
    const top = this.els.get(this.topOf(id));
    return top && top.dataset.item !== id ? top.querySelector(`[data-item="${CSS.escape(id)}"]`) : top;
  }

  // Sends the person's answer to a waiting card (`route`: answer or approval; a
  // helper's card is answered through this conversation too). A refusal, or a daemon
  // out of reach, is said in the card, which still waits; on success the card's item
  // event ends the wait (it may have come already).
  async act(item, route, body) {
    if (this.busy.has(item.id)) return;
    const top = () => this.els.get(this.topOf(item.id));
    const place = top()?.contains(document.activeElement) ? document.activeElement.dataset.focus : null;
    this.busy.add(item.id);
    this.answered.add(item.id);
    this.errors.delete(item.id);
    this.redraw(item.id);
    try {
      await api("POST", `${this.path}/${route}`, { item: item.id, ...body });
    } catch (err) {
      if (this.closed) return;
      this.answered.delete(item.id);
      this.busy.delete(item.id);
      this.errors.set(item.id, problem(err));
      this.redraw(item.id);
      this.cardEl(item.id)?.querySelector("[role=alert]")?.scrollIntoView({ block: "nearest" });
      const again = top();
      if (place && again && again.contains(document.activeElement)) again.querySelector(`[data-focus="${place}"]`)?.focus();
    }
  }

  // The note under the message box leads to what waits: a question, a plan, else a
  // helper's card (its task card opens by itself while one waits).
  focusWaiting() {
    const open = this.items.filter(isOpenQuestion).pop() || this.items.filter(isOpenPlan).pop()
      || this.helpers.waiting().pop();
    this.focusCard(open && this.cardEl(open.id));
  }

  // A card in the log, on its first control.
  focusCard(el) {
    if (!el) return;
    el.scrollIntoView({ block: "nearest" });
    // its own controls, not a button inside the Markdown it shows (a code block's Copy)
    const controls = [...el.querySelectorAll("button.option, button.primary, input, button")];
    (controls.find((c) => !c.closest(".markdown") && !c.disabled) || el).focus();
  }

  // ---- the approval pinned above the message box ----

  // The calls that wait on the person's approval, the conversation's own first.
  approvals() {
    return [...this.items.filter(isOpenApproval), ...this.helpers.waiting().filter(isOpenApproval)];
  }

  renderPinned() {
    const held = this.pinned.holds();
    const cards = this.approvals();
    const first = cards[0];
    this.pinned.render(cards, first ? { draft: this.draftFor(first.id), busy: this.busy.has(first.id),
      error: this.errors.get(first.id) } : null);
    // the pinned card went with the keyboard on it (read again whole, say): never to the page's top
    if (held && !this.pinned.holds() && !this.moveOn) this.moveOn = { id: null, pinned: true };
    this.goOn();
  }

  // The keyboard after an answer (`moveOn`): to the next card that waits (the pinned
  // one, when the answer was given there), else to the message box once the run has
  // ended; until then it waits on the card answered. Moved on by the person
  // meanwhile, it stays where they put it.
  goOn() {
    const move = this.moveOn;
    if (!move) return;
    const at = document.activeElement;
    const answered = move.id === null ? null : this.cardEl(move.id);
    if (at && at !== document.body && !this.pinned.holds(at) && !answered?.contains(at)) {
      this.moveOn = null;
      return;
    }
    const next = this.items.find((i) => i.kind === "tool" && i.state === "waiting" && !isTask(i))
      || this.helpers.waiting()[0];
    if (next && move.pinned && this.pinned.item) {
      this.moveOn = null;
      this.pinned.focus();
    } else if (next) {
      const el = this.cardEl(next.id);
      if (!el) return; // not drawn yet: the next frame's
      this.moveOn = null;
      this.focusCard(el);
    } else if (this.running && answered) {
      // the run goes on, and a card may come to wait yet
      if (!answered.contains(at)) answered.focus({ preventScroll: true });
    } else {
      this.moveOn = null;
      this.textarea.focus();
    }
  }

  // The pinned card's "Show the card": the card in the log, on its Approve.
  showCard(item) {
    this.focusCard(this.cardEl(item.id));
  }

  shortcut(ev) {
    const decision = this.closed || !this.pinned.item ? null : shortcutOf(ev);
    if (!decision) return;
    ev.preventDefault();
    this.pinned.decide(decision);
  }

  // The plan card's feedback box opened or closed: the keyboard goes with it.
  redrawPlan(item) {
    this.drawItem(this.byId.get(item.id));
    const el = this.els.get(item.id);
    el?.querySelector(this.draftFor(item.id).rejecting ? "[data-focus=feedback]" : "[data-focus=reject]")?.focus();
  }

  startEdit(item) {
    this.editing = item.id;
    this.drawItem(item);
  }

  // The answer Regenerate offers: the last of the conversation's own, unless the person
  // wrote since. Tool cards and notices after it do not count.
  lastAnswerId() {
    for (let at = this.items.length - 1; at >= 0; at--) {
      const item = this.items[at];
      if (item.kind === "user") return null;
      if (item.kind === "assistant" && item.text && !item.streaming) return item.id;
    }
    return null;
  }

  // Regenerate shows on the last answer only: the one before a new answer hides it.
  markLastAnswer() {
    const last = this.lastAnswerId();
    for (const btn of this.log.querySelectorAll("button.regenerate"))
      btn.hidden = btn.closest("[data-item]")?.dataset.item !== last;
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
    clear(this.log, this.pendingEl, this.endEl);
    this.els.clear();
    if (!this.items.length)
      this.log.prepend(h("p.muted.empty-log", {}, "Nothing here yet. Write a message below."));
    for (const item of this.items) this.drawItem(item);
    this.layout();
    this.markLastAnswer();
    this.renderEnd();
    this.log.scrollTop = this.log.scrollHeight;
    this.jumpBtn.hidden = true;
  }

  // Puts a compaction's notice before the items it summarised and folds them unless
  // the person opened it. Nothing moves in a conversation never compacted.
  layout() {
    if (!this.items.some((i) => i.compacted || i.compaction)) return;
    const { order, groups } = layoutOf(this.items);
    let prev = null;
    for (const item of order) {
      const el = this.els.get(item.id);
      if (!el) continue;
      const want = prev ? prev.nextElementSibling : this.log.firstElementChild;
      if (want !== el) {
        if (prev) prev.after(el);
        else this.log.prepend(el);
      }
      const group = groups.get(item.id);
      el.classList.toggle("compacted", Boolean(item.compacted));
      el.classList.toggle("folded", Boolean(group) && !this.unfolded.has(group));
      prev = el;
    }
  }

  toggleFold(item) {
    if (this.unfolded.has(item.id)) this.unfolded.delete(item.id);
    else this.unfolded.add(item.id);
    this.drawItem(item);
    this.layout();
  }

  drawItem(item) {
    if (!item) return;
    const old = this.els.get(item.id);
    const el = this.renderItem(item);
    el.dataset.item = item.id;
    if (old) {
      for (const cls of ["compacted", "folded"]) el.classList.toggle(cls, old.classList.contains(cls));
      // keep what the person opened, and where the keyboard was
      for (const d of old.querySelectorAll("details[open][data-key]")) {
        const same = el.querySelector(`details[data-key="${d.dataset.key}"]`);
        if (same) same.open = true;
      }
      const held = old.contains(document.activeElement) ? document.activeElement : null;
      const focused = held ? held.dataset.focus : null;
      keepRenderedIn(old, el); // what a streaming answer finished stays as it was (a code block's Copy)
      old.replaceWith(el);
      const again = focused ? el.querySelector(`[data-focus="${focused}"]`) : null;
      if (held && el.contains(held)) held.focus({ preventScroll: true });
      // the control the keyboard was on went (a card answered): stay on the card
      else if (again && !again.disabled && !again.hidden) again.focus();
      else if (held && el.hasAttribute("tabindex")) el.focus();
    } else {
      this.log.querySelector(".empty-log")?.remove();
      this.log.insertBefore(el, this.pendingEl);
    }
    this.els.set(item.id, el);
  }

  renderItem(item) {
    return renderItem(this, item);
  }

  // A task card's helper items, shown or hidden; the keyboard stays on the toggle.
  toggleTask(item) {
    if (this.tasksOpen.has(item.id)) this.tasksOpen.delete(item.id);
    else this.tasksOpen.add(item.id);
    this.keepScroll(() => this.drawItem(this.byId.get(item.id)), false);
  }
}
