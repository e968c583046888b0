// How the conversation's run stands below its log: the todo list the agent keeps, and
// why the last run ended, with Resume where the daemon can go on with it (run.js draws
// both). The end line sits in the log's own slot (log.js), after the last item.

import { api } from "./api.js";
import { clear, h } from "./dom.js";
import { noticeText } from "./cards.js";
import { endNotice, isOpenQuestion, newlyCompleted, renderRunEnd, renderTodos, RESUMABLE } from "./run.js";
import { problem } from "./ui.js";

export class RunProgress {
  constructor(view) {
    this.view = view;
    this.todosOpen = true;
    this.shownTodos = null;
    this.resuming = false;
    this.outrun = false; // the run went on (or ended) on the stream before the reply to Resume came
    this.resumeError = "";
    this.merged = null; // the id of the notice the end line says (not drawn apart)
    this.element = h("section.todos", { "aria-labelledby": "todos-title", hidden: true });
  }

  renderTodos() {
    const todos = (this.view.info && this.view.info.todos) || [];
    // Every conversation event carries the list: it is drawn again only when it changed,
    // so what just ticked ticks once.
    if (this.shownTodos !== null && JSON.stringify(todos) === JSON.stringify(this.shownTodos)) return;
    const fresh = newlyCompleted(this.shownTodos, todos);
    this.shownTodos = todos;
    const list = renderTodos(todos, { open: this.todosOpen, fresh, onToggle: (open) => (this.todosOpen = open) });
    const held = this.element.contains(document.activeElement);
    this.element.hidden = !list;
    clear(this.element, list);
    if (held && list) list.querySelector("summary").focus();
  }

  renderEnd() {
    this.view.renderPending();
    const info = this.view.info;
    const resumable = Boolean(info) && RESUMABLE.has(info.end_reason) && (info.agent || "builtin") === "builtin"
      && !this.view.items.some(isOpenQuestion);
    const focused = this.view.log.endEl.contains(document.activeElement);
    const ended = info && (info.state === "idle" || info.state === "error") ? endNotice(this.view.items, info) : null;
    const said = ended ? noticeText(ended) : "";
    const line = this.view.items.length
      ? renderRunEnd(info, { resumable, busy: this.resuming && !this.outrun, error: this.resumeError, onResume: () => this.resume(), said })
      : null;
    // The notice that ended the run is said once, in the end line with Resume beside it.
    const merged = line && said ? ended.id : null;
    if (merged !== this.merged) {
      for (const id of [this.merged, merged]) {
        const el = id && this.view.log.els.get(id);
        if (el) el.hidden = id === merged || !noticeText(this.view.byId.get(id) || {});
      }
      this.merged = merged;
    }
    clear(this.view.log.endEl, line);
    this.view.log.endEl.hidden = !line;
    // Resume gone (the run goes on): the keyboard goes to the message box, not the page's top.
    if (focused) (this.view.log.endEl.querySelector("button") || this.view.textarea).focus();
  }

  async resume() {
    if (this.resuming) return;
    this.resuming = true;
    this.outrun = false;
    this.resumeError = "";
    this.renderEnd();
    const seen = this.view.infoSerial;
    let info = null;
    try {
      info = await api("POST", `${this.view.path}/resume`, {});
    } catch (err) {
      // shown unless the run changed meanwhile (the line then says what it is now)
      if (seen === this.view.infoSerial) this.resumeError = problem(err);
    }
    this.resuming = false;
    if (this.view.closed) return;
    // The run may have gone on (even ended) on the stream before this answer came.
    if (info && seen === this.view.infoSerial) {
      Object.assign(this.view.info, info);
      this.view.renderHeader();
    }
    this.view.log.scroll.keep(() => this.renderEnd());
    this.renderTodos();
    this.view.updateComposer();
  }}
