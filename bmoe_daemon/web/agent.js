// The agent page: what conversations here may use (tools, commands, the agents, the
// MCP servers and their tools, added and changed here: mcpservers.js), the secrets MCP
// servers' headers and variables name, and the person's hooks with their last outcomes.

import { api } from "./api.js";
import { alertLine, clear, field, h, heldBy, when } from "./dom.js";
import { attemptAt } from "./fielderrors.js";
import { mcpSection } from "./mcpservers.js";
import { deleteButton, page } from "./settings.js";
import { attempt, inUseOnReread, pageView, problem } from "./ui.js";

// While a remote server is reconnecting, the page is read again this often.
const RECONNECT_POLL_MS = 2000;
// The key store's named secrets (GET /api/secrets): a remote server's header names one
// as ${secret:NAME} in mcp.json. A value is written here once and never shown again.
function secretsSection(secrets, reload) {
  if (secrets instanceof Error) return [h("h2", {}, "Secrets"), h("p.error-text", { role: "alert" }, problem(secrets))];
  const name = h("input", { type: "text", required: true, autocomplete: "off", placeholder: "github-token" });
  const value = h("input", { type: "password", required: true, autocomplete: "new-password" });
  const error = alertLine("");
  const rules = [[/secret's name/, name, "1-64 letters, digits, '_', '.' or '-', starting with a letter or digit."],
    [/secret|value/, value, (m) => m.input]];
  const form = h("form.card.secret-form", { "aria-label": "Save a secret" },
    field("Name", name, "Named in mcp.json as ${secret:NAME}."),
    field("Value", value, "Written once; the daemon never shows it again."), error,
    h("div.actions", {}, h("button.primary", { type: "submit" }, "Save secret")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const saved = await attemptAt(error, rules, [name, value], () =>
      api("PUT", `/api/secrets/${encodeURIComponent(name.value.trim())}`, { value: value.value }));
    value.value = "";
    if (saved) reload();
  });
  return [
    h("h2", {}, "Secrets"),
    h("p.small.muted", {}, "Values an MCP server's headers or variables name (${secret:NAME}), kept in the daemon's "
      + "key store beside the providers' keys instead of in mcp.json."),
    secrets.secrets.length ? null : h("p.muted", {}, "No secrets."),
    h("ul.rows", { "aria-label": "Secrets" }, secrets.secrets.map((s) =>
      h("li.row", { "aria-label": s.name },
        h("div.row-main", {}, h("strong", {}, s.name), " ",
          h(`span.badge${s.stored ? "" : ".not-stored"}`, {}, s.stored ? "saved" : "not saved yet"),
          s.used_by.length ? h("p.small.muted", {}, `Used by ${s.used_by.join(", ")}`) : null),
        s.stored
          ? h("div.row-actions", {}, deleteButton(s.name, async () => {
            if (await attempt(() => api("DELETE", `/api/secrets/${encodeURIComponent(s.name)}`))) reload();
          }))
          : null))),
    form,
  ];
}

const HOOK_EVENTS = {
  pre_tool_use: "Before a tool runs",
  post_tool_use: "After a tool ran",
  session_start: "When a run starts",
  session_end: "When a run ends",
};
const HOOK_RESULTS = {
  ran: "ran", blocked: "blocked the call", failed: "failed", timed_out: "timed out", stopped: "stopped",
  dropped: "dropped (too many waiting)",
};

function hookRow(hook) {
  const last = hook.last;
  const what = hook.kind === "http" ? hook.url : hook.command;
  const trigger = hook.kind === "http"
    ? `HTTP, on ${(hook.events || []).map((e) => HOOK_EVENTS[e] || e).join(", ").toLowerCase()}`
    : HOOK_EVENTS[hook.event] || hook.event;
  return h("li.row.hook", { "aria-label": `${hook.kind === "http" ? "HTTP" : hook.event}: ${what}` },
    h("div.row-main", {},
      h("strong", {}, trigger), " ",
      hook.kind === "http" ? null : h("code.muted", {}, hook.event),
      hook.kind === "http" ? null : h("span.badge", {}, hook.matcher ? `tools ${hook.matcher}` : "every tool"),
      h("pre.hook-command", {}, what),
      h("p.small.hook-last", {},
        last
          ? [h(`span.badge.hook-${last.result}`, {}, HOOK_RESULTS[last.result] || last.result), " ",
             when(last.at), last.duration_ms ? `, ${last.duration_ms} ms` : "",
             last.detail ? [": ", h("span.hook-detail", {}, last.detail)] : ""]
          : h("span.muted", {}, "Not run since the daemon started."),
        hook.timeout_s && hook.kind !== "http" ? h("span.muted", {}, ` · time limit ${hook.timeout_s} s`) : null)));
}

// The person's hooks (GET /api/hooks): each with its last outcome, and why the file
// cannot be used when it cannot.
function hooksSection(hooks) {
  const intro = "Your own scripts on what the built-in agent does. A hook before a tool that exits 2 blocks the call.";
  if (hooks instanceof Error) {
    return [h("h2", {}, "Hooks"), h("p.error-text", { role: "alert" }, problem(hooks))];
  }
  if (!hooks.enabled) return [h("h2", {}, "Hooks"), h("p.muted", {}, "Hooks are off on this daemon (chat only).")];
  return [
    h("h2", {}, "Hooks"),
    h("p.small.muted", {}, intro, " From ", h("code", {}, hooks.file), ", read again when it changes."),
    hooks.error
      ? h("p.error-text.hooks-error", { role: "alert" }, hooks.error,
          hooks.error_at ? ` (${when(hooks.error_at)}; its last good version is used)` : "")
      : null,
    hooks.hooks.length ? null : h("p.muted", {}, "No hooks."),
    h("ul.rows", { "aria-label": "Hooks" }, hooks.hooks.map(hookRow)),
  ];
}

export function agentPage(main) {
  const body = page(main, "Agent, MCP servers and hooks", "What conversations here may use, and your hooks.");
  let timer = null;
  let view = null;
  // Read again while a server reconnects, unless a form is being filled (then later).
  const poll = () => {
    if (!body.isConnected) return;
    const reading = view.refresh();
    if (reading) reading.catch(() => {});
    else timer = setTimeout(poll, RECONNECT_POLL_MS);
  };
  const load = async () => {
    clearTimeout(timer);
    const [info, hooks, secrets] = await Promise.all([api("GET", "/api/agent"), api("GET", "/api/hooks").catch((err) => err),
      api("GET", "/api/secrets").catch((err) => err)]);
    // A press on the page: read and drawn again after its click, as a refresh is, so
    // not over a form the click opened and is being filled ("Add a server").
    if (heldBy(body, () => body.isConnected && view.refresh()?.catch(() => {}))) return;
    if (inUseOnReread(body)) return;
    clear(body,
      h("ul.facts", {},
        h("li", {}, info.tools ? "Conversations with a workspace get file tools." : "Plain chat only: no tools."),
        h("li", {}, info.commands ? "Commands may run." : "Commands do not run here.")),
      h("h2", {}, "Agents"),
      h("ul.rows", { "aria-label": "Agents" }, info.agents.map((a) =>
        h("li.row", {}, h("div.row-main", {}, h("strong", {}, a.name), " ",
          h("span.badge", {}, a.available ? "available" : `missing ${a.missing.join(", ")}`))))),
      info.tools ? mcpSection(info.mcp, load) : null,
      info.tools ? secretsSection(secrets, load) : null,
      hooksSection(hooks),
    );
    // A server coming back shows without a reload; the timer ends with the page.
    if (info.mcp.some((m) => m.state === "reconnecting")) timer = setTimeout(poll, RECONNECT_POLL_MS);
  };
  view = pageView(load, body);
  return view;
}
