// The workspaces page: the folders the agent may work in, and each one's always-allow
// rules (kept by "Always allow" on an approval card, or added here), with Remove.
//
// `#/workspaces/<id>` opens it at one workspace. Every change goes through the public
// API; a refusal is said beside what was done, in the daemon's words.

import { api } from "./api.js";
import { alertLine, clear, h, select } from "./dom.js";
import { attemptAt } from "./fielderrors.js";
import { notSandboxedBanner, sandboxStatus } from "./sandbox.js";
import { attemptIn, pageView, problem, toast } from "./ui.js";

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

// One workspace and its rules; `reload` reads its rules again.
function workspaceRow(ws) {
  const rulesEl = h("div.rules");
  const titleId = `ws-title-${ws.id}`;
  const row = h("li.row.workspace-row", { id: `ws-${ws.id}`, "aria-labelledby": titleId, tabindex: "-1" },
    h("div.row-main", {},
      h("h2.ws-name", { id: titleId }, ws.name), h("code.muted.ws-path", {}, ws.path),
      networkSwitch(ws),
      h("h3.rules-title", {}, "Always allowed"),
      rulesEl));
  const reload = async (focus) => {
    let rules;
    try {
      rules = await api("GET", `/api/workspaces/${enc(ws.id)}/rules`);
    } catch (err) {
      clear(rulesEl, h("p.error-text", { role: "alert" }, problem(err)));
      return;
    }
    clear(rulesEl,
      rules.length
        ? h("ul.rule-list", { "aria-label": `Rules of ${ws.name}` }, rules.map((r) => ruleRow(ws, r, () => reload("remove"))))
        : h("p.muted.small.no-rules", {}, "No rules: every change asks. “Always allow” on an approval card keeps one here."),
      addRuleForm(ws, () => reload("add"), focus === "add"));
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
  const load = async () => {
    const [workspaces, sandbox] = await Promise.all([api("GET", "/api/workspaces"), sandboxStatus()]);
    const rows = workspaces.map(workspaceRow);
    clear(body, notSandboxedBanner(sandbox),
      workspaces.length ? null : h("p.muted", {}, "No folders yet: add one when you start a conversation."),
      h("ul.rows.workspaces", { "aria-label": "Workspaces" }, rows.map((r) => r.row)));
    await Promise.all(rows.map((r) => r.reload()));
    const target = which && document.getElementById(`ws-${which}`);
    if (target) {
      target.scrollIntoView({ block: "start" });
      target.focus();
    }
  };
  return pageView(load, body); // a rule being typed is kept when the stream comes back
}
