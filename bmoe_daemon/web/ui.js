// What the views share: messages to the person, option lists, and the shell's hooks.

import { ApiError } from "./api.js";
import { heldBy } from "./dom.js";
import { limits } from "./limits.js";

export const STATE_LABELS = { idle: "idle", running: "running", waiting: "waiting for you", error: "error" };

// A conversation's state in words, the same in the header, the list and a task's runs:
// one the person stopped reads "stopped", not "idle".
export function stateWords(c) {
  if (c.state === "idle" && c.end_reason === "stopped") return "stopped";
  return STATE_LABELS[c.state] || c.state;
}
export const MODE_OPTIONS = [
  ["ask", "Ask before changes"],
  ["read_only", "Read only"],
  ["full", "Full access"],
];

// Filled by app.js (sidebar.js's): refreshList(), forgetConversation(id), conversationInfo(id),
// conversationChanged(info), renderList().
export const shell = {};

// The page's title: what is shown (a conversation's title, else "bmoe"), after how many
// cards wait for the person in every conversation, so a tab in the background says so.
const title = { base: "bmoe", waiting: 0 };

export function pageTitle(base) {
  if (base !== undefined) title.base = base;
  document.title = (title.waiting ? `(${title.waiting} waiting) ` : "") + title.base;
}

export function waitingCards(n) {
  title.waiting = n;
  pageTitle();
}

let toastTimer = null;
export function toast(message, kind = "error") {
  const el = document.getElementById("toast");
  el.textContent = message;
  el.className = `toast toast-${kind}`;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (el.hidden = true), kind === "error" ? 8000 : 3000);
}

// What went wrong with an API action, in plain words: the daemon's own for a refusal.
export function problem(err) {
  return err instanceof ApiError ? err.message : `Could not reach the daemon: ${err.message || err}`;
}

// Runs an API action; a refusal is shown in the daemon's own words. Answers the
// action's result, or undefined when it failed.
export async function attempt(action) {
  try {
    return await action();
  } catch (err) {
    toast(problem(err));
    return undefined;
  }
}

// Runs an API action for a form: a refusal is shown in the form's own error line
// (`where`), in the daemon's words, and stays until the next try.
export async function attemptIn(where, action) {
  where.textContent = "";
  where.hidden = true;
  try {
    return await action();
  } catch (err) {
    where.textContent = problem(err);
    where.hidden = false;
    return undefined;
  }
}

// Whether the person is filling a form in `el`: the keyboard in one of its fields, or
// text typed in one. A page read again by itself (after a drop in the stream) would
// drop that, so it waits: the page is read again when the form is saved.
function fillingIn(el) {
  if (el.querySelector("[data-armed]")) return true; // a delete asked once (settings.js deleteButton), not yet confirmed
  const at = document.activeElement;
  if (at && el.contains(at) && at.closest("form") && /^(INPUT|TEXTAREA|SELECT)$/.test(at.tagName)) return true;
  return [...el.querySelectorAll("form input, form textarea")]
    .some((f) => !["checkbox", "radio", "file"].includes(f.type) && f.value !== f.defaultValue);
}

// A settings page over `body`: `load()` draws it; `refresh()` (app.js's, after a drop
// or a gap in the stream) reads it again unless a form there is being filled or a delete
// waits for its second click (drawn again, either would be lost); a press
// on the page holds it: it is read again after the release (dom.js heldBy).
export function pageView(load, body) {
  let rereads = 0; // reads again on their way (a resync and a reconnection may both ask one)
  const refresh = () => {
    if (fillingIn(body)) return undefined;
    if (heldBy(body, () => body.isConnected && refresh()?.catch(() => {}))) return undefined;
    body.dataset.reread = String(++rereads);
    return load().finally(() => {
      if (--rereads) body.dataset.reread = String(rereads);
      else delete body.dataset.reread;
    });
  };
  return { name: "page", load, refresh };
}

// Whether a page read again by itself (pageView's refresh) came back to find itself in
// use (fillingIn): a click or a key while it was read. Its load then draws nothing: what
// the person started stays, and the page is read again when that is done.
export function inUseOnReread(body) {
  return "reread" in body.dataset && fillingIn(body);
}

// `current`: a workspace the thing still names but the daemon no longer lists.
export function wsOptions(workspaces, current) {
  const out = [["", "No workspace (plain chat)"], ...workspaces.map((w) => [w.id, `${w.name} — ${w.path}`])];
  if (current && !out.some(([v]) => v === current)) out.push([current, "A folder no longer added: pick another"]);
  return out;
}

// A provider's model is its name, or {id, context_length} when its context is not the default.
export const modelName = (m) => (typeof m === "string" ? m : m.id);

// What a conversation's route runs on: `{name, n_ctx}` (n_ctx null when not known).
// `model`: the loaded model, as GET /api/model or a `model` event says (null: none).
export function routeModel(route, providers, model) {
  if (route === "local") return model ? { name: model.model, n_ctx: model.n_ctx } : null;
  const provider = (providers || []).find((p) => route.startsWith(`${p.id}/`));
  if (!provider) return { name: route, n_ctx: null };
  const id = route.slice(provider.id.length + 1);
  const m = (provider.models || []).find((x) => modelName(x) === id);
  return { name: `${provider.name}/${id}`, n_ctx: m && typeof m !== "string" ? m.context_length : limits.context_length.default };
}

export function routeOptions(providers, current) {
  const out = [["local", "The loaded model (local)"]];
  for (const p of providers || []) {
    for (const m of (p.models || []).map(modelName)) out.push([`${p.id}/${m}`, `${p.name}: ${m}`]);
  }
  if (current && !out.some(([v]) => v === current)) out.push([current, current]);
  return out;
}

export function tokensText(n) {
  return `${Number(n).toLocaleString("en")} tokens`;
}

// Whether the model is in memory, as /health (`loaded`, `model_state`) or a `model`
// event (`loaded`, `state`) says; a daemon that says neither always holds it.
export function memoryText(state, loaded) {
  if (state === "loading") return "loading into memory…";
  if (loaded === false || state === "asleep") return "not in memory (loads on the next message)";
  return null;
}
