// The web UI's shell: the router and the event stream; the conversation list is
// sidebar.js's.
//
// It uses only the public API and /api/events. Views are plain functions that fill
// <main>; the open view may take events (`view.onEvent`) and be re-read whole after a
// gap in the stream (`view.refresh`).

import { api } from "./api.js";
import { clear, field, h, select } from "./dom.js";
import { EventStream } from "./events.js";
import { ConversationView } from "./conversation.js";
import { forgetDraft } from "./composer.js";
import { PAGES } from "./pages.js";
import { modelsPage } from "./models.js";
import { workspacesPage } from "./workspaces.js";
import { conversationChanged, conversationInfo, forgetConversation, onConversationEvent, refreshList, refreshWaiting,
  renderList, setCurrent, startList } from "./sidebar.js";
import { readModelMemory, takeModelEvent } from "./modelstate.js";
import { noteConversation, notifySwitch } from "./notify.js";
import { attempt, MODE_OPTIONS, pageTitle, routeOptions, shell, toast, wsOptions } from "./ui.js";

const ALL_PAGES = { ...PAGES, workspaces: workspacesPage, models: modelsPage };

const app = {
  view: null,
  stream: null,
};

// ---- views ----

function homeView(main) {
  clear(
    main,
    h("section.page.home", {},
      h("h1", {}, "Conversations"),
      h("p", {}, "Pick a conversation, or start one. Runs go on in the daemon: closing this page stops nothing."),
      h("a.button.primary", { href: "#/new" }, "New conversation"),
    ),
  );
  return { name: "home" };
}

async function newConversationView(main) {
  const form = h("form.page.new-conv-form", { "aria-labelledby": "new-title" });
  clear(main, form);
  const [agentInfo, workspaces, providers] = await Promise.all([
    api("GET", "/api/agent").catch(() => ({ tools: false, agents: [] })),
    api("GET", "/api/workspaces").catch(() => null),
    api("GET", "/api/providers").catch(() => []),
  ]);
  const wsSelect = select({ name: "workspace" }, wsOptions(workspaces || []), "");
  const folder = h("input", { name: "folder", type: "text", placeholder: "/path/to/a/project", autocomplete: "off" });
  const addFolder = h("button", { type: "button" }, "Add folder");
  addFolder.addEventListener("click", async () => {
    const path = folder.value.trim();
    if (!path) {
      toast("Type the folder's path first.");
      return;
    }
    const ws = await attempt(() => api("POST", "/api/workspaces", { path }));
    if (!ws) return;
    const all = await api("GET", "/api/workspaces").catch(() => [ws]);
    clear(wsSelect, wsOptions(all).map(([v, t]) => h("option", { value: v }, t)));
    wsSelect.value = ws.id;
    folder.value = "";
    toast(`Added ${ws.path}.`, "info");
  });
  const mode = select({ name: "mode" }, MODE_OPTIONS, "ask");
  const route = select({ name: "route" }, routeOptions(providers), "local");
  const agents = (agentInfo.agents || []).filter((a) => a.available);
  const agent = select({ name: "agent" }, agents.map((a) => [a.id, a.name]), "builtin");
  const title = h("input", { name: "title", type: "text", autocomplete: "off" });
  const tools = agentInfo.tools && workspaces !== null;
  clear(
    form,
    h("h1#new-title", {}, "New conversation"),
    field("Title", title, "Optional: the first message names it otherwise."),
    tools ? field("Workspace", wsSelect, "The folder the agent may read and change. None: plain chat.") : null,
    tools ? h("div.row", {}, field("Add a folder", folder), addFolder) : null,
    tools ? field("Mode", mode, "What the agent may do without asking you.") : null,
    field("Model", route),
    tools && agents.length > 1 ? field("Agent", agent) : null,
    h("div.actions", {}, h("button.primary", { type: "submit" }, "Create conversation")),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = { mode: tools ? mode.value : "ask", route: route.value };
    if (title.value.trim()) body.title = title.value.trim();
    if (tools && wsSelect.value) body.workspace = wsSelect.value;
    if (tools && agents.length > 1) body.agent = agent.value;
    const conv = await attempt(() => api("POST", "/api/conversations", body));
    if (!conv) return;
    conversationChanged(conv);
    location.hash = `#/c/${encodeURIComponent(conv.id)}`;
  });
  return { name: "new" };
}

// ---- the router ----

async function route() {
  const main = document.getElementById("main");
  const hash = decodeURIComponent(location.hash.replace(/^#\/?/, ""));
  const [head, ...rest] = hash.split("/");
  if (app.view && app.view.close) app.view.close();
  app.view = null;
  document.body.classList.toggle("view-list", head === "");
  document.body.classList.toggle("view-main", head !== "");
  for (const a of document.querySelectorAll(".settings-nav a"))
    a.setAttribute("aria-current", a.getAttribute("href") === `#/${head}` ? "page" : "false");
  let view;
  try {
    if (head !== "c") pageTitle("bmoe"); // a conversation's view names itself
    if (head === "c" && rest[0]) {
      view = new ConversationView(main, rest.join("/"));
      app.view = view;
      setCurrent(view.conversationId);
      await view.load();
    } else if (head === "new") {
      app.view = { name: "new" };
      view = await newConversationView(main);
    } else if (ALL_PAGES[head]) {
      view = ALL_PAGES[head](main, rest.join("/"));
      app.view = view;
      await view.load();
    } else {
      view = homeView(main);
    }
  } catch (err) {
    clear(main, h("section.page", {}, h("h1", {}, "This page could not be shown"), h("p.error-text", {}, err.message || String(err))));
    return;
  }
  if (app.view === null) app.view = view;
  setCurrent(app.view && app.view.conversationId);
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

function onResync() {
  refreshList();
  refreshWaiting();
  readModelMemory();
  if (app.view && app.view.refresh) app.view.refresh();
}

function onStatus(connected) {
  const el = document.getElementById("conn");
  el.textContent = connected ? "Live" : "Reconnecting…";
  el.classList.toggle("conn-live", connected);
}

// "/" from anywhere but a place one types in puts the keyboard in the open
// conversation's message box (as in many chat and code tools).
function jumpToComposer(ev) {
  if (ev.key !== "/" || ev.ctrlKey || ev.metaKey || ev.altKey || ev.isComposing) return;
  const at = document.activeElement;
  if (at && (at.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(at.tagName))) return;
  if (document.querySelector("dialog[open]")) return;
  const box = document.querySelector("#main textarea[aria-label='Message']");
  if (!box || box.disabled) return;
  ev.preventDefault();
  box.focus();
}

// The skip link goes to the content: the open conversation's messages, else the view.
// Followed as a link it would change the route (#main), and leave the conversation.
function skipToContent(ev) {
  ev.preventDefault();
  const to = document.querySelector("#main .log") || document.getElementById("main");
  to.focus();
}

function start() {
  Object.assign(shell, { refreshList, forgetConversation, conversationInfo, conversationChanged, renderList });
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
  });
  window.addEventListener("hashchange", route);
  document.addEventListener("keydown", jumpToComposer);
  app.stream = new EventStream({ onEvent, onResync, onStatus });
  app.stream.start();
  route();
}

start();
