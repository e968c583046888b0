// The home page: start by typing. The message box comes first; the workspace, the mode
// and the model are controls beside it, set to what was picked last, so a new
// conversation is one message away. Sending makes the conversation and sends the
// message, then opens it. The form with everything (a title, adding a folder, the
// agent, importing a conversation) stays at #/new.
//
// On a phone the home is the conversation list, with this box under it (style.css):
// compact, the Send button beside the box and the three choices in a row below it,
// narrowed to fit the screen; the box grows with its text, and is not given the
// keyboard by itself (that would open the phone's keyboard over the list).

import { api } from "./api.js";
import { SHOW_FILE_TOOL } from "./clienttools.js";
import { clear, h, select, typingIn } from "./dom.js";
import { attachMentions } from "./mention.js";
import { importControl } from "./exchange.js";
import { MODE_OPTIONS, problem, routeOptions, shell, toast, wsOptions } from "./ui.js";

const DRAFT_KEY = "bmoe.draft.home";
const CHOICE_KEY = "bmoe.home.choice"; // {workspace, mode, route}: the last picked
const PHONE = "(max-width: 760px)"; // style.css's phone layout

function stored(key, fallback) {
  try {
    const raw = localStorage.getItem(key);
    return raw === null ? fallback : JSON.parse(raw);
  } catch {
    return fallback; // storage off, or not ours
  }
}

function store(key, value) {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, JSON.stringify(value));
  } catch {
    /* storage off or full: nothing kept */
  }
}

// On a phone, the box as tall as its text (the stylesheet caps it, where it scrolls);
// elsewhere the stylesheet's height, as it was.
function fit(box) {
  box.style.height = "";
  if (!box.isConnected || !matchMedia(PHONE).matches) return;
  box.style.height = "0";
  box.style.height = `${box.scrollHeight + box.offsetHeight - box.clientHeight}px`;
}

// The workspaces by their names (a name two share, with its path), each path in its
// option's title: a choice is read whole, a phone's row included.
function shortWsOptions(workspaces) {
  const named = new Map();
  for (const w of workspaces) named.set(w.name, (named.get(w.name) || 0) + 1);
  const byId = new Map(workspaces.map((w) => [w.id, w]));
  return wsOptions(workspaces).map(([value, text]) => {
    const w = byId.get(value);
    if (!w) return [value, value ? text : "No workspace"];
    return [value, named.get(w.name) > 1 ? text : w.name];
  });
}

// `value` when `control` offers it (a workspace removed since is not picked).
function pick(control, value) {
  if (value && [...control.options].some((o) => o.value === value)) control.value = value;
}

// Start the home's message with `text` (an MCP server's prompt, picked on the Agent &
// MCP page): it becomes the home box's draft, and the home is shown.
export function startWith(text) {
  store(DRAFT_KEY, text);
  location.hash = "#/";
}

export function homeView(main) {
  const form = h("form.page.home.home-composer", { "aria-labelledby": "home-title" });
  clear(main, form);
  let made = null;
  let drawn = false; // the box takes the focus on the first draw only, not on a redraw after a reconnect
  const phone = matchMedia(PHONE);
  const refit = () => made && fit(made.box);
  phone.addEventListener("change", refit);
  const draw = async () => {
    const [agentInfo, workspaces, providers] = await Promise.all([
      api("GET", "/api/agent").catch(() => ({ tools: false })),
      api("GET", "/api/workspaces").catch(() => null),
      api("GET", "/api/providers").catch(() => []),
    ]);
    // Read again (after a drop in the stream): what was typed and picked stays.
    const kept = made ? { text: made.box.value, workspace: made.workspace.value, mode: made.mode.value,
      route: made.route.value } : { text: stored(DRAFT_KEY, ""), ...stored(CHOICE_KEY, {}) };
    const focused = made && form.contains(document.activeElement) ? document.activeElement.name : null;
    const tools = Boolean(agentInfo.tools) && workspaces !== null;
    // a phone's box starts one line tall, its placeholder too (fit() counts its lines)
    const box = h("textarea", { name: "text", rows: "4", "aria-label": "Message",
      placeholder: phone.matches ? "Ask the agent…" : "Ask the agent, or tell it what to change…" });
    box.value = typeof kept.text === "string" ? kept.text : "";
    const workspace = select({ name: "workspace", "aria-label": "Workspace" }, shortWsOptions(workspaces || []), "");
    const mode = select({ name: "mode", "aria-label": "Mode" }, MODE_OPTIONS, "ask");
    const route = select({ name: "route", "aria-label": "Model" }, routeOptions(providers), "local");
    for (const o of workspace.options) o.title = (workspaces || []).find((w) => w.id === o.value)?.path || "Plain chat";
    pick(workspace, kept.workspace);
    pick(mode, kept.mode);
    pick(route, kept.route);
    const error = h("p.error-text", { role: "alert", hidden: true });
    const send = h("button.primary", { type: "submit" }, "Send");
    const control = (label, el) => h("label.home-control", {}, h("span.label", {}, label), el);
    const importing = importControl(workspaces);
    clear(form,
      h("h1#home-title", {}, "What should the agent do?"),
      h("p.muted", {}, "Runs go on in the daemon: closing this page stops nothing."),
      box,
      h("div.home-controls", {},
        h("div.home-choices", {},
          tools ? control("Workspace", workspace) : null,
          tools ? control("Mode", mode) : null,
          control("Model", route)),
        send),
      error,
      h("p.small", {},
        tools && !(workspaces || []).length ? "No folder is added yet: this is plain chat. " : "",
        tools && !(workspaces || []).length ? h("a", { href: "#/workspaces/add" }, "Add a folder") : null,
        tools && !(workspaces || []).length ? " · " : "",
        h("a", { href: "#/new" }, "More choices (a title, another agent)"), " · ", importing.control),
      importing.panel);
    made = { box, workspace, mode, route, tools, error, send };
    attachMentions(box, () => (tools && workspace.value ? workspace.value : null));
    fit(box);
    box.addEventListener("input", () => {
      store(DRAFT_KEY, box.value.trim() ? box.value : null);
      fit(box);
    });
    box.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        form.requestSubmit();
      }
    });
    for (const el of [workspace, mode, route]) {
      el.addEventListener("change", () => store(CHOICE_KEY, { workspace: workspace.value, mode: mode.value,
        route: route.value }));
    }
    if (focused && form.elements[focused]) form.elements[focused].focus();
    // Not from a field the person went to while the page came (the search box).
    else if (!drawn && !phone.matches && !typingIn()) box.focus();
    drawn = true;
  };
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const { box, workspace, mode, route, tools, error, send } = made;
    const text = box.value.trim();
    if (!text) {
      error.textContent = "Write a message first.";
      error.hidden = false;
      box.focus();
      return;
    }
    error.hidden = true;
    send.disabled = true;
    const body = { route: route.value, mode: tools ? mode.value : "ask" };
    if (tools && workspace.value) body.workspace = workspace.value;
    if (body.workspace) body.tools = [SHOW_FILE_TOOL]; // the page's own (clienttools.js)
    let conv = null;
    try {
      conv = await api("POST", "/api/conversations", body);
      shell.conversationChanged?.(conv);
      await api("POST", `/api/conversations/${encodeURIComponent(conv.id)}/messages`, { text });
    } catch (err) {
      send.disabled = false;
      if (!conv) {
        error.textContent = problem(err);
        error.hidden = false;
        return;
      }
      // The conversation was made but the message not sent: it waits there as its draft
      // (the composer's, kept as plain text).
      toast(`${problem(err)} The message waits in the conversation's box.`);
      try {
        localStorage.setItem(`bmoe.draft.${conv.id}`, box.value);
      } catch {
        /* storage off: the text is lost with this page */
      }
    }
    store(DRAFT_KEY, null);
    shell.focusComposer = conv.id; // the conversation's view puts the keyboard in its message box
    location.hash = `#/c/${encodeURIComponent(conv.id)}`;
  });
  return { name: "home", load: draw, refresh: draw, close: () => phone.removeEventListener("change", refit) };
}
