// The workspaces page: the folders the agent may work in (added here by their path,
// removed with what that does said first), and each one's always-allow rules (kept by
// "Always allow" on an approval card, or added here), with Remove, and what the agent
// remembered of it (memories.js).
//
// `#/workspaces/<id>` opens it at one workspace, `#/workspaces/add` at the path field. Every change goes through the public
// API; a refusal is said beside what was done, in the daemon's words.

import { api } from "./api.js";
import { alertLine, clear, h, select } from "./dom.js";
import { attemptAt } from "./fielderrors.js";
import { memorySection } from "./memories.js";
import { notSandboxedBanner, sandboxStatus } from "./sandbox.js";
import { attemptIn, inUseOnReread, pageView, problem, toast } from "./ui.js";

const RULE_KINDS = [["command", "Commands that start with"], ["path", "Changes to files in the folder"]];
const RULE_WORDS = { command: "Commands that start with", path: "Changes to files in" };
// An exact rule (kept from a card: one command, one file) covers that one only.
const EXACT_WORDS = { command: "Exactly the command", path: "Changes to the file" };

function enc(s) {
  return encodeURIComponent(s);
}

function ruleRow(ws, rule, onRemoved) {
  const error = alertLine("");
  const remove = h("button.quiet.danger", { type: "button", "aria-label": `Remove the rule ${rule.text}` }, "Remove");
  remove.addEventListener("click", async () => {
    remove.disabled = true;
    const done = await attemptIn(error, () => api("DELETE", `/api/workspaces/${enc(ws.id)}/rules/${enc(rule.id)}`));
    remove.disabled = false;
    if (done) onRemoved();
    else remove.focus();
  });
  return h("li.rule", { "aria-label": rule.text },
    h("span.rule-kind.muted", {}, (rule.exact ? EXACT_WORDS : RULE_WORDS)[rule.kind] || rule.kind), " ",
    h("code.rule-text", {}, rule.text),
    h("span.spacer"),
    remove,
    error);
}

// A rule typed by hand, folded until asked for (`open`: after one was added).
function addRuleForm(ws, onAdded, open) {
  const kind = select({ "aria-label": "Kind of rule" }, RULE_KINDS, "command");
  const text = h("input", { type: "text", required: true, autocomplete: "off", "aria-label": "Rule",
    placeholder: "npm test" });
  kind.addEventListener("change", () => (text.placeholder = kind.value === "command" ? "npm test" : "src/"));
  const error = alertLine("");
  const form = h("form.add-rule", { "aria-label": `Add a rule to ${ws.name}` },
    h("div.add-rule-row", {}, kind, text, h("button", { type: "submit" }, "Add rule")),
    error);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    // Every refusal of a rule is about its text (actors/rules.py says it in words): beside it.
    const added = await attemptAt(error, [[/^(.*)$/s, text, (m) => m[1]]], [text], () =>
      api("POST", `/api/workspaces/${enc(ws.id)}/rules`, { kind: kind.value, text: text.value.trim() }));
    if (added) {
      toast(`Kept the rule ${added.text}.`, "info");
      onAdded();
    } else {
      text.focus();
    }
  });
  return h("details.add-rule-fold", { open }, h("summary", {}, "Add a rule by hand"), form);
}

// The workspace's network switch, with what it lets a command do.
function networkSwitch(ws) {
  const id = `ws-net-${ws.id}`;
  const box = h("input.ws-network-box", { type: "checkbox", id, checked: ws.network,
    "aria-describedby": `${id}-warn` });
  box.addEventListener("change", async () => {
    const want = box.checked;
    box.disabled = true;
    try {
      ws.network = (await api("PATCH", `/api/workspaces/${enc(ws.id)}`, { network: want })).network;
    } catch (err) {
      toast(problem(err));
    }
    box.checked = Boolean(ws.network);
    box.disabled = false;
  });
  return h("div.ws-network", {},
    h("label.inline", { for: id }, box, " Commands may use the network"),
    h("p.small.muted", { id: `${id}-warn` }, "Off by default: commands run in a sandbox without the network. On, a "
      + "command can send this folder's files anywhere and reach services on this computer (a local database, "
      + "other programs' ports). Turn it on only for work you trust the model with."));
}

// A folder added by its path: the field completes the folders under the home folder
// (GET /api/folders, as typed); the daemon checks the folder, and its refusal is said
// beside the field.
const COMPLETE_AFTER_MS = 150;

function addFolderForm(onAdded) {
  const choices = h("datalist#folder-choices");
  const path = h("input#add-folder-path", { type: "text", name: "path", list: "folder-choices", required: true,
    autocomplete: "off", spellcheck: "false", placeholder: "~/projects/site" });
  let timer = null;
  let asked = 0;
  const complete = async () => {
    const serial = ++asked;
    let got;
    try {
      got = await api("GET", `/api/folders?prefix=${enc(path.value.trim() || "~/")}`);
    } catch {
      return; // the field still takes a path typed whole
    }
    if (serial !== asked) return;
    clear(choices, got.folders.map((f) => h("option", { value: f })));
  };
  path.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(complete, COMPLETE_AFTER_MS);
  });
  path.addEventListener("focus", () => choices.children.length || complete(), { once: true });
  const error = alertLine("");
  const form = h("form.add-folder", { "aria-labelledby": "add-folder-title" },
    h("h2#add-folder-title", {}, "Add a folder"),
    h("div.field", {},
      h("label", { for: "add-folder-path" }, "Folder"),
      h("div.add-rule-row", {}, path, h("button.primary", { type: "submit" }, "Add folder")),
      h("p.small.muted.hint", { id: "add-folder-hint" }, "Its path: type ~/ to pick among the folders in your home "
        + "folder. The agent may then read it, and change it as its mode allows.")),
    choices, error);
  path.setAttribute("aria-describedby", "add-folder-hint");
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const typed = path.value.trim();
    // Every refusal of a folder is about its path: beside it, in the daemon's words.
    const ws = await attemptAt(error, [[/^(.*)$/s, path, (m) => m[1]]], [path], () =>
      api("POST", "/api/workspaces", { path: typed.replace(/\/+$/, "") || typed }));
    if (!ws) return;
    toast(`Added ${ws.path}.`, "info");
    onAdded(ws);
  });
  return form;
}

function plural(n, one, many) {
  return `${n.toLocaleString("en")} ${n === 1 ? one : many}`;
}

// What removing a workspace does (DELETE /api/workspaces/<id> forgets it and nothing
// else: actors/conversations/hub.py), said before the yes: its conversations and tasks
// are counted when Remove is pressed.
async function removalText(ws) {
  const [convs, tasks] = await Promise.all([
    api("GET", "/api/conversations").catch(() => null),
    api("GET", "/api/tasks").catch(() => null),
  ]);
  const n = convs ? convs.filter((c) => c.workspace === ws.id).length : null;
  const t = tasks ? tasks.filter((x) => x.workspace === ws.id).length : 0;
  let their = "Its conversations stay, with their messages, but lose the folder:";
  if (n === 0) their = "No conversation is in it.";
  else if (n === 1) their = "Its 1 conversation stays, with its messages, but loses the folder:";
  else if (n !== null) their = `Its ${n.toLocaleString("en")} conversations stay, with their messages, but lose the folder:`;
  return [
    their,
    n === 0 ? "" : " from the next message on, the agent has none of the folder's tools there, and Changes can no "
      + "longer put its files back.",
    t ? ` ${plural(t, "task", "tasks")} in it will not run until given another folder.` : "",
    " The folder and its files stay as they are on disk; adding it again makes a new workspace, which those "
      + "conversations do not get back. What the agent remembered of it stays with the folder (in the daemon's "
      + "data folder) and comes back with it.",
  ].join("");
}

function removeControl(ws, onRemoved) {
  const box = h("div.ws-remove");
  const error = alertLine("");
  const ask = h("button.quiet.danger", { type: "button", "aria-label": `Remove ${ws.name}` }, "Remove");
  const idle = () => clear(box, ask, error);
  ask.addEventListener("click", async () => {
    ask.disabled = true;
    const text = await removalText(ws);
    ask.disabled = false;
    const said = h("p.ws-remove-what", { id: `ws-remove-${ws.id}` }, text);
    const yes = h("button.danger", { type: "button", "aria-describedby": said.id }, `Remove ${ws.name}`);
    const no = h("button.quiet", { type: "button" }, "Keep it");
    no.addEventListener("click", () => {
      idle();
      ask.focus();
    });
    yes.addEventListener("click", async () => {
      yes.disabled = true;
      const done = await attemptIn(error, () => api("DELETE", `/api/workspaces/${enc(ws.id)}`));
      yes.disabled = false;
      if (done) {
        toast(`Removed ${ws.name}; ${ws.path} is still on disk.`, "info");
        onRemoved();
      }
    });
    clear(box, h("div.ws-remove-ask", { role: "group", "aria-label": `Remove ${ws.name}?` }, said,
      h("div.actions", {}, yes, no)), error);
    no.focus();
  });
  idle();
  return box;
}

// One workspace, its rules and memories; `reload` reads them again.
function workspaceRow(ws, onRemoved) {
  const rulesEl = h("div.rules");
  const memory = memorySection(ws);
  const titleId = `ws-title-${ws.id}`;
  const row = h("li.row.workspace-row", { id: `ws-${ws.id}`, "aria-labelledby": titleId, tabindex: "-1" },
    h("div.row-main", {},
      h("h2.ws-name", { id: titleId }, ws.name), h("code.muted.ws-path", {}, ws.path),
      networkSwitch(ws),
      h("h3.rules-title", {}, "Always allowed"),
      rulesEl,
      memory.section,
      removeControl(ws, onRemoved)));
  const reload = async (focus) => {
    await Promise.all([reloadRules(focus), memory.reload()]);
  };
  const reloadRules = async (focus) => {
    let rules;
    try {
      rules = await api("GET", `/api/workspaces/${enc(ws.id)}/rules`);
    } catch (err) {
      clear(rulesEl, h("p.error-text", { role: "alert" }, problem(err)));
      return;
    }
    clear(rulesEl,
      rules.length
        ? h("ul.rule-list", { "aria-label": `Rules of ${ws.name}` }, rules.map((r) => ruleRow(ws, r, () => reloadRules("remove"))))
        : h("p.muted.small.no-rules", {}, "No rules: every change asks. “Always allow” on an approval card keeps one here."),
      addRuleForm(ws, () => reloadRules("add"), focus === "add"));
    // After a removal the keyboard stays in the list (or on the form when it is empty).
    if (focus === "remove") (rulesEl.querySelector(".rule button") || rulesEl.querySelector("summary")).focus();
    if (focus === "add") rulesEl.querySelector("input").focus();
  };
  return { row, reload };
}

export function workspacesPage(main, which) {
  const body = h("div.page-body");
  clear(main, h("section.page", { "aria-labelledby": "page-title" },
    h("a.back", { href: "#/" }, "‹ Conversations"),
    h("h1#page-title", {}, "Workspaces"),
    h("p.muted", {}, "Folders the agent may work in. In Ask mode a change waits for your approval unless one of the "
      + "folder's rules allows it: a rule never reaches outside its folder, and never applies in Read only, in plan "
      + "mode, or for a client on the network."),
    body));
  // `focus`: where the keyboard goes once drawn (a workspace's id, "add": the path field).
  const load = async (focus = which) => {
    const [workspaces, sandbox] = await Promise.all([api("GET", "/api/workspaces"), sandboxStatus()]);
    if (inUseOnReread(body)) return;
    const rows = workspaces.map((ws) => workspaceRow(ws, () => load("add")));
    const adding = addFolderForm((ws) => load(ws.id));
    clear(body, notSandboxedBanner(sandbox), adding,
      workspaces.length ? null : h("p.muted.no-folders", {}, "No folders yet: this is plain chat until one is added."),
      h("ul.rows.workspaces", { "aria-label": "Workspaces" }, rows.map((r) => r.row)));
    // The keyboard goes where it was asked as soon as the rows are drawn, not once every
    // row's rules and memories are read (one read each: many folders take a while, and
    // the person who followed a link to a workspace would wait at the page's top, then
    // be moved). Those reads grow the rows above it: it is scrolled to again once they
    // are drawn, unless the person moved on meanwhile.
    const target = focus && focus !== "add" ? document.getElementById(`ws-${focus}`) : null;
    if (focus === "add") adding.querySelector("input").focus();
    if (target) {
      target.scrollIntoView({ block: "start" });
      target.focus({ preventScroll: true });
    }
    await Promise.all(rows.map((r) => r.reload()));
    if (target && document.activeElement === target) target.scrollIntoView({ block: "start" });
  };
  return pageView(load, body); // a rule being typed is kept when the stream comes back
}
