// A conversation's header: its title (rename, delete), its state, "Planning" while
// plan mode is on, the workspace (with a way to its always-allow rules), mode and
// model (the route, and the model it runs on with its context size: the loaded one's
// for the local route, whichever is loaded now), the way to what its runs changed in
// the workspace (changes.js), what its answers used and cost with its budget
// (usage.js), the goal with where it stands, and the conversation's export (exchange.js).
//
// It reads and changes the conversation through its view (conversation.js): the
// view's `info` is what it shows, and a change it makes is applied to it. On a phone the
// workspace, mode and model fold behind a button (menuOpen).

import { api } from "./api.js";
import { clear, h, select } from "./dom.js";
import { exportButtons } from "./exchange.js";
import { modelMemory } from "./modelstate.js";
import { renderGoal } from "./run.js";
import { NOT_SANDBOXED, notSandboxedWhy, sandboxStatus } from "./sandbox.js";
import { ConversationUsage } from "./usage.js";
import { attempt, memoryText, MODE_OPTIONS, pageTitle, problem, routeModel, routeOptions, shell, stateWords, tokensText,
  wsOptions } from "./ui.js";

export class ConversationHeader {
  constructor(view) {
    this.view = view;
    this.goalBusy = false;
    this.goalError = "";
    this.titleEl = h("h1.conv-title#conv-title", {}, "…");
    this.stateEl = h("span.badge", { role: "status", "aria-label": "Conversation state" });
    this.planningEl = h("span.badge.planning", { hidden: true,
      title: "Nothing in the workspace changes until you approve the plan" }, "Planning");
    this.wsEl = h("span.workspace.muted");
    // The built-in agent's workspace can change between runs (the daemon answers 409
    // busy while one runs); another agent's session lives in its folder, so it stays.
    this.wsSelect = select({ "aria-label": "Workspace", class: "ws-select" }, wsOptions([]), "");
    this.wsSelect.addEventListener("change", () => this.patch({ workspace: this.wsSelect.value || null }));
    this.wsPicker = h("label.inline", { hidden: true }, h("span.label", {}, "Workspace"), this.wsSelect);
    this.rulesLink = h("a.rules-link.small", { hidden: true }, "Rules");
    this.sandboxEl = h("span.badge.not-sandboxed", { hidden: true, role: "status" }, NOT_SANDBOXED);
    // What the runs changed in the workspace, with Undo (changes.js)
    this.changesLink = h("a.changes-link.small", { hidden: true,
      href: `#/c/${encodeURIComponent(view.conversationId)}/changes` }, "Changes");
    this.modeSelect = select({ "aria-label": "Mode", class: "mode-select" }, MODE_OPTIONS, "ask");
    this.modeSelect.addEventListener("change", () => this.patch({ mode: this.modeSelect.value }));
    this.routeSelect = select({ "aria-label": "Model", class: "route-select" }, [["local", "local"]], "local");
    this.routeSelect.addEventListener("change", () => this.patch({ route: this.routeSelect.value }));
    this.modelEl = h("span.model-info", { role: "status", "aria-label": "Model and context size" });
    this.renameBtn = h("button.quiet", { type: "button", onclick: () => this.startRename() }, "Rename");
    this.deleteBtn = h("button.quiet.danger", { type: "button", onclick: () => this.askDelete() }, "Delete");
    this.goalEl = h("div.conv-head-goal", { hidden: true });
    this.usage = new ConversationUsage(view, (changes) => this.patchOrThrow(changes));
    const settingsId = `head-settings-${view.conversationId}`;
    this.settingsEl = h("div.head-settings", { id: settingsId },
      this.wsEl, this.wsPicker, this.rulesLink, this.changesLink,
      h("label.inline", {}, h("span.label", {}, "Mode"), this.modeSelect),
      h("label.inline", {}, h("span.label", {}, "Model"), this.routeSelect), this.modelEl, this.usage.element,
      exportButtons(view));
    this.menuBtn = h("button.quiet.head-menu", { type: "button", "aria-expanded": "false", "aria-controls": settingsId,
      onclick: () => this.toggleMenu() }, "Workspace, mode, model");
    this.element = h("header.conv-head", {},
      h("div.conv-head-top", {},
        h("a.back", { href: "#/", "aria-label": "Back to the conversations" }, "‹ Conversations"),
        h("div.title-box", {}, this.titleEl),
        h("div.head-buttons", {}, this.renameBtn, this.deleteBtn)),
      h("div.conv-head-bottom", {},
        this.stateEl, this.planningEl, this.sandboxEl, this.menuBtn, this.settingsEl),
      this.goalEl);
    this.settingsEl.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape" && this.menuOpen()) {
        this.toggleMenu(false);
        this.menuBtn.focus();
      }
    });
  }

  // On a phone the workspace, mode and model are behind a menu button (style.css shows
  // them in the row elsewhere, where there is room): every control in reach without
  // scrolling the header sideways.
  menuOpen() {
    return this.menuBtn.getAttribute("aria-expanded") === "true";
  }

  toggleMenu(open = !this.menuOpen()) {
    this.menuBtn.setAttribute("aria-expanded", String(open));
    this.element.classList.toggle("menu-open", open);
  }

  render() {
    const { info, workspaces, providers } = this.view;
    this.titleEl.textContent = info.title || "New conversation";
    this.stateEl.textContent = stateWords(info);
    this.stateEl.className = `badge state-${info.state}`;
    this.planningEl.hidden = !info.plan_mode;
    this.modeSelect.value = info.mode;
    clear(this.routeSelect, routeOptions(providers, info.route).map(([v, t]) => h("option", { value: v }, t)));
    this.routeSelect.value = info.route;
    let ws = "No workspace: plain chat";
    const found = info.workspace ? (workspaces || []).find((w) => w.id === info.workspace) : null;
    if (info.workspace) {
      ws = found ? `In ${found.name}` : "In a workspace";
      this.wsEl.title = found ? found.path : "";
    }
    this.wsEl.textContent = ws;
    // the picker where the workspaces can be listed (a local client, not plain chat only)
    const pick = workspaces !== null && (info.agent || "builtin") === "builtin";
    this.wsEl.hidden = pick;
    this.wsPicker.hidden = !pick;
    if (pick) {
      clear(this.wsSelect, wsOptions(workspaces, info.workspace).map(([v, t]) => h("option", { value: v }, t)));
      this.wsSelect.value = info.workspace || "";
      this.wsSelect.title = found ? found.path : "";
    }
    this.rulesLink.hidden = !found;
    // Only the built-in agent's commands go through the sandbox (another agent runs its own).
    const confinable = Boolean(info.workspace) && (info.agent || "builtin") === "builtin";
    sandboxStatus().then((s) => {
      this.sandboxEl.hidden = !(confinable && s && !s.confined);
      this.sandboxEl.title = notSandboxedWhy(s);
    });
    this.changesLink.hidden = !info.workspace;
    if (found) {
      this.rulesLink.href = `#/workspaces/${encodeURIComponent(found.id)}`;
      this.rulesLink.setAttribute("aria-label", `Always-allow rules of ${found.name}`);
    }
    this.renderModel();
    this.usage.render();
    this.renderGoal();
    pageTitle(`${info.title || "New conversation"} · bmoe`);
  }

  // The model the route runs on and its context; the loaded model's state when it is
  // not in memory. Another agent (ACP) runs on a model of its own: nothing is said.
  renderModel() {
    const { info, providers, model } = this.view;
    const builtin = (info.agent || "builtin") === "builtin";
    const runs = builtin ? routeModel(info.route, providers, model) : null;
    const local = info.route === "local";
    const inMemory = modelMemory();
    const memory = local && model ? memoryText(inMemory.state, inMemory.loaded) : null;
    this.modelEl.hidden = !builtin;
    clear(this.modelEl,
      runs ? h("span.model-name", {}, runs.name) : builtin ? h("span.muted", {}, "No model loaded") : null,
      runs && runs.n_ctx ? h("span.model-ctx.muted", {}, ` · ${tokensText(runs.n_ctx)} of context`) : null,
      memory ? h("span.badge.model-asleep", {}, memory) : null);
    this.modelEl.title = runs && runs.n_ctx
      ? `${local ? "The loaded model" : "The provider's model"}, ${runs.name}, holds ${tokensText(runs.n_ctx)} of context.` : "";
  }

  renderGoal() {
    const focused = this.goalEl.contains(document.activeElement);
    const { info } = this.view;
    const line = renderGoal(info.goal, { busy: this.goalBusy, error: this.goalError,
      running: info.state === "running" || info.state === "waiting", endReason: info.end_reason,
      onClear: () => this.clearGoal() });
    clear(this.goalEl, line);
    this.goalEl.hidden = !line;
    if (focused) (this.goalEl.querySelector("button") || this.view.composer.textarea).focus();
  }

  // A message set a goal: it shows at once, before the daemon's event says so.
  setGoal(goal) {
    this.view.info.goal = goal;
    this.goalError = "";
    this.renderGoal();
  }

  async clearGoal() {
    if (this.goalBusy) return;
    this.goalBusy = true;
    this.goalError = "";
    this.renderGoal();
    try {
      await this.view.change({ goal: null });
    } catch (err) {
      this.goalError = problem(err);
    }
    this.goalBusy = false;
    if (!this.view.closed) this.render();
  }

  async patch(changes) {
    const info = await attempt(() => this.view.change(changes));
    if (info) shell.conversationChanged(info);
    this.render();
    this.view.updateComposer(); // what it offers follows the route (images) and the mode
  }

  // A change whose refusal the caller says itself (the budget's form, beside its fields).
  async patchOrThrow(changes) {
    const info = await this.view.change(changes);
    shell.conversationChanged(info);
    this.render();
  }

  startRename() {
    const input = h("input", { type: "text", value: this.view.info.title || "", "aria-label": "Title" });
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
    clear(this.element.querySelector(".title-box"), this.titleEl);
    this.render();
    this.renameBtn.focus();
  }

  // A running conversation cannot be deleted (the daemon answers busy): the question
  // then offers "Stop and delete", which stops the run (waiting for it to end) first.
  askDelete() {
    const box = this.element.querySelector(".head-buttons");
    const running = this.view.info && this.view.info.state === "running";
    const yes = h("button.danger", { type: "button" }, running ? "Stop and delete" : "Delete for good");
    const no = h("button.quiet", { type: "button" }, "Keep it");
    no.addEventListener("click", () => {
      clear(box, this.renameBtn, this.deleteBtn);
      this.deleteBtn.focus();
    });
    yes.addEventListener("click", async () => {
      const done = await attempt(async () => {
        if (running) await api("POST", `${this.view.path}/stop`, {});
        return api("DELETE", this.view.path);
      });
      if (!done) return;
      shell.forgetConversation(this.view.conversationId);
      location.hash = "#/";
    });
    clear(box, h("span.muted", {}, running ? "It is running: stop it and delete it?" : "Delete this conversation?"),
      yes, no);
    no.focus();
  }
}
