// The agent page: what conversations here may use (tools, commands, the agents, the
// MCP servers and their tools) and the person's hooks with their last outcomes.

import { api } from "./api.js";
import { clear, h, when } from "./dom.js";
import { page } from "./settings.js";
import { pageView, problem } from "./ui.js";

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
  const load = async () => {
    const [info, hooks] = await Promise.all([api("GET", "/api/agent"), api("GET", "/api/hooks").catch((err) => err)]);
    clear(body,
      h("ul.facts", {},
        h("li", {}, info.tools ? "Conversations with a workspace get file tools." : "Plain chat only: no tools."),
        h("li", {}, info.commands ? "Commands may run." : "Commands do not run here.")),
      h("h2", {}, "Agents"),
      h("ul.rows", { "aria-label": "Agents" }, info.agents.map((a) =>
        h("li.row", {}, h("div.row-main", {}, h("strong", {}, a.name), " ",
          h("span.badge", {}, a.available ? "available" : `missing ${a.missing.join(", ")}`))))),
      h("h2", {}, "MCP servers"),
      info.mcp.length ? null : h("p.muted", {}, "None configured (add them to mcp.json in the data folder)."),
      h("ul.rows", { "aria-label": "MCP servers" }, info.mcp.map((m) =>
        h("li.row", { "aria-label": m.name },
          h("div.row-main", {},
            h("strong", {}, m.name), " ", h(`span.badge.mcp-${m.state}`, {}, m.state),
            h("p.small.muted", {}, m.command),
            m.error ? h("p.error-text", {}, m.error) : null,
            m.tools.length
              ? h("details", {}, h("summary", {}, `${m.tools.length} tools`),
                  h("ul", {}, m.tools.map((t) => h("li", {}, h("code", {}, t.name), ` — ${t.description || ""}`))))
              : null)))),
      hooksSection(hooks),
    );
  };
  return pageView(load, body);
}
