// The web UI's shell: the router and the event stream; the conversation list is
// sidebar.js's.
//
// It uses only the public API and /api/events. Views are plain functions that fill
// <main>; the open view may take events (`view.onEvent`) and be re-read whole after a
// gap in the stream (`view.refresh`). Back after a drop, the stream replays what it
// missed, but no event tells of every change (a workspace added, a skill edited), so
// the open view is read again then too: `view.reconnected` where the replay covers
// part of it, else `view.refresh`. A view that could not be shown says why, with Retry.

import { api } from "./api.js";
import { clear, field, h, select, typingIn } from "./dom.js";
import { EventStream } from "./events.js";
import { resetPreview, SHOW_FILE_TOOL } from "./clienttools.js";
import { streamStatus } from "./connection.js";
import { ChangesView } from "./changes.js";
import { ConversationView } from "./conversation.js";
import { forgetDraft } from "./composer.js";
import { importControl } from "./exchange.js";
import { homeView } from "./home.js";
import { readLimits } from "./limits.js";
import { agentPage } from "./agent.js";
import { connectPage } from "./connect.js";
import { modelsPage } from "./models.js";
import { providersPage } from "./providers.js";
import { skillsPage } from "./skills.js";
import { tasksPage } from "./tasks.js";
import { workspacesPage } from "./workspaces.js";
import { conversationChanged, conversationInfo, forgetConversation, onConversationEvent, refreshList, refreshWaiting,
  renderList, setCurrent, startList } from "./sidebar.js";
import { readModelMemory, takeModelEvent } from "./modelstate.js";
import { noteConversation, notifySwitch } from "./notify.js";
import { attempt, MODE_OPTIONS, pageTitle, problem, routeOptions, shell, toast, wsOptions } from "./ui.js";

// The settings pages, by their route (#/skills, ...); settings.js holds what they share.
const PAGES = {
  skills: skillsPage,
  tasks: tasksPage,
  providers: providersPage,
  connect: connectPage,
  agent: agentPage,
  workspaces: workspacesPage,
  models: modelsPage,
};

const app = {
  view: null,
  stream: null,
  routes: 0, // counts route(): a load that ends after the next began is not shown
  drawn: 0, // the route() whose view is drawn (less than `routes` while one loads)
  skipAfterDraw: false, // the skip link was followed while a view loaded
  down: false, // the stream dropped and is not back
  resynced: false, // read whole since it dropped
};

// ---- views ----

// The form is drawn again when read again (`refresh`, after a drop in the stream):
// what was typed or picked stays where the lists still offer it. Under it, a
// conversation exported before is imported (exchange.js): the home page's line of
// links offers it too, but a phone hides that line, and this page is a phone's way
// there (the list's "New conversation").
function newConversationView(main) {
  const form = h("form.page.new-conv-form", { "aria-labelledby": "new-title" });
  clear(main, form);
  let made = null; // the form's controls as last drawn, and what the daemon said
  const draw = async () => {
    const [agentInfo, workspaces, providers] = await Promise.all([
      api("GET", "/api/agent").catch(() => ({ tools: false, agents: [] })),
      api("GET", "/api/workspaces").catch(() => null),
      api("GET", "/api/providers").catch(() => []),
    ]);
    const kept = made ? Object.fromEntries(new FormData(form)) : {};
    const focused = made && form.contains(document.activeElement) ? document.activeElement.name : null;
    const c = {
      title: h("input", { name: "title", type: "text", autocomplete: "off" }),
      workspace: select({ name: "workspace" }, wsOptions(workspaces || []), ""),
      folder: h("input", { name: "folder", type: "text", placeholder: "/path/to/a/project", autocomplete: "off" }),
      mode: select({ name: "mode" }, MODE_OPTIONS, "ask"),
      route: select({ name: "route" }, routeOptions(providers), "local"),
    };
    const agents = (agentInfo.agents || []).filter((a) => a.available);
    c.agent = select({ name: "agent" }, agents.map((a) => [a.id, a.name]), "builtin");
    const tools = agentInfo.tools && workspaces !== null;
    const addFolder = h("button", { type: "button", onclick: () => addWorkspace(c) }, "Add folder");
    const importing = importControl(workspaces);
    clear(
      form,
      h("a.back", { href: "#/" }, "‹ Conversations"),
      h("h1#new-title", {}, "New conversation"),
      field("Title", c.title, "Optional: the first message names it otherwise."),
      tools ? field("Workspace", c.workspace, "The folder the agent may read and change. None: plain chat.") : null,
      tools ? h("div.row", {}, field("Add a folder", c.folder), addFolder) : null,
      tools ? field("Mode", c.mode, "What the agent may do without asking you.") : null,
      field("Model", c.route),
      tools && agents.length > 1 ? field("Agent", c.agent) : null,
      h("div.actions", {}, h("button.primary", { type: "submit" }, "Create conversation")),
      h("p.new-import", {}, "Or start from a conversation exported before: ", importing.control),
      importing.panel,
    );
    for (const [name, value] of Object.entries(kept)) {
      const control = c[name];
      if (control && (control.tagName !== "SELECT" || [...control.options].some((o) => o.value === value)))
        control.value = value;
    }
    if (focused && c[focused]) c[focused].focus();
    made = { c, tools, agents };
  };
  const addWorkspace = async (c) => {
    const path = c.folder.value.trim();
    if (!path) {
      toast("Type the folder's path first.");
      return;
    }
    const ws = await attempt(() => api("POST", "/api/workspaces", { path }));
    if (!ws) return;
    const all = await api("GET", "/api/workspaces").catch(() => [ws]);
    clear(c.workspace, wsOptions(all).map(([v, t]) => h("option", { value: v }, t)));
    c.workspace.value = ws.id;
    c.folder.value = "";
    toast(`Added ${ws.path}.`, "info");
  };
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const { c, tools, agents } = made;
    const body = { mode: tools ? c.mode.value : "ask", route: c.route.value };
    if (c.title.value.trim()) body.title = c.title.value.trim();
    if (tools && c.workspace.value) body.workspace = c.workspace.value;
    if (tools && agents.length > 1) body.agent = c.agent.value;
    if (body.workspace && (body.agent || "builtin") === "builtin") body.tools = [SHOW_FILE_TOOL]; // the page's own
    const conv = await attempt(() => api("POST", "/api/conversations", body));
    if (!conv) return;
    conversationChanged(conv);
    location.hash = `#/c/${encodeURIComponent(conv.id)}`;
  });
  return { name: "new", load: draw, refresh: draw };
}

// The view could not be loaded: why, in plain words, and Retry (tried by itself too
// when the stream comes back: the daemon was likely out of reach).
function failedView(main, err, retried) {
  const retry = h("button.primary", { type: "button", onclick: () => route(RETRY) }, "Retry");
  clear(main, h("section.page.failed", { "aria-labelledby": "page-title" },
    h("a.back", { href: "#/" }, "‹ Conversations"),
    h("h1#page-title", {}, "This page could not be shown"),
    h("p.error-text", { role: "alert" }, problem(err)),
    h("div.actions", {}, retry)));
  if (retried) retry.focus(); // it failed again: the keyboard stays on Retry
  return { name: "failed", refresh: () => route() };
}

// ---- the router ----

const RETRY = "retry"; // route()'s argument from Retry (else the hashchange event, or nothing)

async function route(how) {
  const main = document.getElementById("main");
  const hash = decodeURIComponent(location.hash.replace(/^#\/?/, ""));
  const [head, ...rest] = hash.split("/");
  const serial = ++app.routes;
  if (app.view && app.view.close) app.view.close();
  app.view = null;
  document.body.classList.toggle("view-list", head === "");
  document.body.classList.toggle("view-main", head !== "");
  for (const a of document.querySelectorAll(".settings-nav a"))
    a.setAttribute("aria-current", a.getAttribute("href") === `#/${head}` ? "page" : "false");
  let view;
  try {
    if (head !== "c") pageTitle("bmoe"); // a conversation's view names itself
    // Every view may show a limit of the daemon's: they are read before the first one
    // (once; again after a read that failed). A later route meanwhile is the one drawn.
    await readLimits();
    if (serial !== app.routes) return;
    if (head === "c" && rest[0] && rest[1] === "changes") {
      // #/c/<id>/changes[/<message id>]: what the conversation's runs changed (changes.js)
      view = new ChangesView(main, rest[0], rest[2]);
      app.view = view;
      setCurrent(view.conversationId);
      await view.load();
    } else if (head === "c" && rest[0] && rest[1] === "i" && rest[2]) {
      // #/c/<id>/i/<item id>: the conversation, scrolled to that item (a search's match)
      view = new ConversationView(main, rest[0], rest[2]);
      app.view = view;
      setCurrent(view.conversationId);
      await view.load();
    } else if (head === "c" && rest[0]) {
      view = new ConversationView(main, rest.join("/"));
      app.view = view;
      setCurrent(view.conversationId);
      await view.load();
    } else if (head === "new") {
      view = newConversationView(main);
      app.view = view;
      await view.load();
    } else if (PAGES[head]) {
      view = PAGES[head](main, rest.join("/"));
      app.view = view;
      await view.load();
    } else {
      view = homeView(main);
      app.view = view;
      await view.load();
    }
  } catch (err) {
    if (serial !== app.routes) return;
    if (app.view && app.view.close) app.view.close();
    app.view = failedView(main, err, how === RETRY);
    app.drawn = serial;
    return;
  }
  if (app.view === null) app.view = view;
  setCurrent(app.view && app.view.conversationId);
  app.drawn = serial;
  if (app.skipAfterDraw) {
    app.skipAfterDraw = false;
    const at = document.activeElement;
    if (at === main || at === document.body) skipTarget().focus();
  }
}

// ---- events ----

function onEvent(name, data) {
  if (name === "conversation") {
    noteConversation(data, conversationInfo(data.id)?.state); // before the list takes the new state
    onConversationEvent(data);
  }
  if (name === "conversation_deleted") {
    forgetConversation(data.id);
    forgetDraft(data.id);
  }
  if (name === "model") takeModelEvent(data);
  if (app.view && app.view.onEvent) app.view.onEvent(name, data);
}

// Runs a view's read; its failure is the view's to say (a toast, the failed page).
function reread(view, name) {
  if (view && view[name]) Promise.resolve(view[name]()).catch(() => {});
}

function readShell() {
  refreshList();
  refreshWaiting();
  readModelMemory();
}

// Events were missed: everything is read whole.
function onResync() {
  readShell();
  reread(app.view, "refresh");
  if (!app.down) return;
  // Before the stream says it is back (the daemon restarted): this is that reading.
  app.resynced = true;
  reread(app.view, "reconnected");
}

function onStatus(connected) {
  const el = document.getElementById("conn");
  el.textContent = connected ? "Live" : "Reconnecting…";
  el.classList.toggle("conn-live", connected);
  streamStatus(connected);
  if (!connected) {
    app.down = true;
    return;
  }
  const back = app.down && !app.resynced;
  app.down = false;
  app.resynced = false;
  if (!back) return;
  readShell();
  reread(app.view, app.view && app.view.reconnected ? "reconnected" : "refresh");
}

// "/" from anywhere but a place one types in puts the keyboard in the open
// conversation's message box (as in many chat and code tools).
function jumpToComposer(ev) {
  if (ev.key !== "/" || ev.ctrlKey || ev.metaKey || ev.altKey || ev.isComposing) return;
  if (typingIn()) return;
  if (document.querySelector("dialog[open]")) return;
  const box = document.querySelector("#main textarea[aria-label='Message']");
  if (!box || box.disabled) return;
  ev.preventDefault();
  box.focus();
}

// The skip link goes to the content: the open conversation's messages, else the view.
// Followed as a link it would change the route (#main), and leave the conversation.
// While a view loads, #main still holds the last one, whose parts go when the new one
// is drawn (and the keyboard with them, to the page's body): the skip then holds #main
// itself, and goes on to the new view's content once it is drawn.
function skipTarget() {
  return document.querySelector("#main .log") || document.getElementById("main");
}

function skipToContent(ev) {
  ev.preventDefault();
  if (app.drawn !== app.routes) {
    app.skipAfterDraw = true;
    document.getElementById("main").focus();
    return;
  }
  skipTarget().focus();
}

function start() {
  Object.assign(shell, { refreshList, forgetConversation, conversationInfo, conversationChanged, renderList,
    serveTools: (ids) => app.stream && app.stream.serve(ids) });
  startList();
  document.querySelector("a.skip").addEventListener("click", skipToContent);
  const notify = notifySwitch();
  if (notify) document.querySelector(".settings-nav").after(notify);
  const preview = document.getElementById("preview-dialog");
  preview.querySelector(".preview-close").addEventListener("click", () => preview.close());
  preview.addEventListener("close", () => {
    const frame = preview.querySelector("iframe");
    if (frame.src.startsWith("blob:")) URL.revokeObjectURL(frame.src);
    frame.removeAttribute("src");
    resetPreview(preview);
  });
  window.addEventListener("hashchange", route);
  document.addEventListener("keydown", jumpToComposer);
  app.stream = new EventStream({ onEvent, onResync, onStatus });
  app.stream.start();
  route();
}

start();
