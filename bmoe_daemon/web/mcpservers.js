// The MCP servers on the agent page: each with its state, its tools, prompts and
// resources, and Edit, Switch off/on and Remove; and the "Add a server" form
// (mcpform.js). Every change goes through /api/mcp/servers, and the page is read again.

import { api } from "./api.js";
import { alertLine, clear, field, h, when } from "./dom.js";
import { startWith } from "./home.js";
import { serverForm } from "./mcpform.js";
import { deleteButton } from "./settings.js";
import { attemptIn, toast } from "./ui.js";

const TRANSPORTS = { "streamable-http": "Streamable HTTP", sse: "HTTP+SSE", stdio: "stdio" };
const STATES = { off: "switched off" };

const count = (n, what) => `${n} ${what}${n === 1 ? "" : "s"}`;
const serverPath = (name) => `/api/mcp/servers/${encodeURIComponent(name)}`;

// After a change the page is drawn again: the keyboard goes back to the control named
// `label` (the row's own, as it now reads), and what was done is said.
async function redrawn(reload, label, said) {
  await reload();
  const el = [...document.querySelectorAll("button")].find((b) => b.getAttribute("aria-label") === label
    || (!b.hasAttribute("aria-label") && b.textContent === label));
  if (el) el.focus();
  toast(said, "info");
}

function secondsFromNow(at) {
  const s = Math.max(0, Math.round(at - Date.now() / 1000));
  return s ? `in ${s} s` : "now";
}

// A prompt's arguments, asked for when it is used; its text then starts a message on
// the home page (as a draft the person reads and sends).
function promptForm(server, p) {
  const inputs = p.arguments.map((a) => [a, h("input", { type: "text", required: a.required, autocomplete: "off" })]);
  const error = alertLine("");
  const form = h("form.card.prompt-form", { "aria-label": `Use the prompt ${p.name}` },
    inputs.map(([a, el]) => field(a.required ? a.name : `${a.name} (optional)`, el)), error,
    h("div.actions", {}, h("button.primary", { type: "submit" }, "Start a message with it")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const args = Object.fromEntries(inputs.filter(([, el]) => el.value.trim()).map(([a, el]) => [a.name, el.value]));
    const got = await attemptIn(error, () => api("POST",
      `/api/mcp/${encodeURIComponent(server)}/prompts/${encodeURIComponent(p.name)}`, { arguments: args }));
    if (got) startWith(got.text);
  });
  return form;
}

function promptItem(server, p) {
  const use = h("button.quiet", { type: "button", "aria-label": `Use ${p.name}` }, "Use");
  const item = h("li.mcp-prompt", { "aria-label": p.name }, h("code", {}, p.name),
    p.arguments.length ? ` (${p.arguments.map((a) => a.name + (a.required ? "" : "?")).join(", ")})` : "",
    p.description ? ` — ${p.description}` : "", " ", use);
  use.addEventListener("click", () => {
    use.hidden = true;
    item.append(promptForm(server, p));
    item.querySelector("input, button.primary").focus();
  });
  return item;
}

// A server's names of variables or headers, with the secrets each names (never a value).
const namesText = (list) => list.map((x) => (x.secrets.length ? `${x.name} (secret ${x.secrets.join(", ")})` : x.name))
  .join(", ");

// What Remove says before it removes: the secrets the server names go from the key store
// with it (the daemon keeps one another server names).
function removalNote(m) {
  const entry = m.entry || {};
  const named = [...new Set([...entry.env || [], ...entry.headers || m.headers || []].flatMap((x) => x.secrets))];
  if (!named.length) return null;
  const one = named.length === 1;
  return `Its saved ${one ? "secret" : "secrets"} (${named.join(", ")}) will be deleted from the `
    + `key store too, unless another server uses ${one ? "it" : "them"}.`;
}

// Edit, Switch off/on and Remove of one server; a refusal is said in `error`, in the row.
function rowActions(m, editing, error, reload) {
  const off = m.state === "off";
  const act = async (action, label, said) => {
    if (await attemptIn(error, action)) await redrawn(reload, label, said);
  };
  return h("div.row-actions", {},
    h("button.quiet", { type: "button", "aria-label": `Edit ${m.name}`, "aria-expanded": "false", onclick: (ev) => {
      const button = ev.currentTarget;
      if (editing.firstChild) {
        clear(editing);
        button.setAttribute("aria-expanded", "false");
        return;
      }
      button.setAttribute("aria-expanded", "true");
      clear(editing, serverForm(m, (saved) => {
        if (saved) redrawn(reload, `Edit ${saved}`, saved === m.name ? `${saved} saved.` : `${m.name} renamed ${saved}.`);
        else {
          clear(editing);
          button.setAttribute("aria-expanded", "false");
          button.focus();
        }
      }));
      editing.querySelector("input:not([readonly]), textarea").focus();
    } }, "Edit"),
    h("button.quiet", { type: "button", "aria-label": `${off ? "Switch on" : "Switch off"} ${m.name}`,
      onclick: () => act(() => api("PATCH", serverPath(m.name), { enabled: off }),
        `${off ? "Switch off" : "Switch on"} ${m.name}`, `${m.name} switched ${off ? "on" : "off"}.`) },
    off ? "Switch on" : "Switch off"),
    deleteButton(m.name, async () => {
      const gone = await attemptIn(error, () => api("DELETE", serverPath(m.name)));
      if (!gone) return;
      const forgotten = gone.secrets_deleted || [];
      await redrawn(reload, "Add a server", forgotten.length
        ? `${m.name} removed, and its ${forgotten.length === 1 ? "secret" : "secrets"} ${forgotten.join(", ")}.`
        : `${m.name} removed.`);
    }, "Remove", removalNote(m)));
}

// One MCP server: a program of this computer, or a remote one (marked: what its tools
// are given leaves the computer for the address shown).
function mcpRow(m, reload) {
  const editing = h("div.mcp-editing");
  const error = alertLine("");
  const entry = m.entry || {};
  return h("li.row", { "aria-label": m.name },
    h("div.row-main", {},
      h("strong", {}, m.name), " ", h(`span.badge.mcp-${m.state}`, {}, STATES[m.state] || m.state),
      m.remote ? h("span.badge.on-network", { title: "Each call's arguments are sent to this address." },
        "on the network") : null,
      h("p.small.muted", {}, m.remote ? h("code", {}, m.url) : m.command,
        m.remote && m.transport ? ` · ${TRANSPORTS[m.transport] || m.transport}` : ""),
      m.remote ? h("p.small.mcp-leaves", {}, "Not on this computer: what a conversation gives its tools leaves "
        + "the computer for this address.") : null,
      m.headers && m.headers.length ? h("p.small.muted.mcp-headers", {}, "Headers: ", namesText(m.headers)) : null,
      entry.env && entry.env.length ? h("p.small.muted.mcp-env", {}, "Variables: ", namesText(entry.env)) : null,
      m.state === "off" ? h("p.small.muted", {}, "Not started, and its tools are not offered.") : null,
      m.state === "reconnecting" && m.next_try_at
        ? h("p.small.mcp-next-try", {}, `Next try ${secondsFromNow(m.next_try_at)} (${when(m.next_try_at)})`)
        : null,
      m.error ? h("p.error-text.mcp-error", {}, m.error) : null,
      m.tools.length
        ? h("details", {}, h("summary", {}, count(m.tools.length, "tool")),
            h("ul", { "aria-label": `Tools of ${m.name}` },
              m.tools.map((t) => h("li", {}, h("code", {}, t.name), ` — ${t.description || ""}`))))
        : null,
      m.prompts && m.prompts.length
        ? h("details.mcp-prompts", {}, h("summary", {}, count(m.prompts.length, "prompt")),
            h("ul", { "aria-label": `Prompts of ${m.name}` }, m.prompts.map((p) => promptItem(m.name, p))))
        : null,
      m.resources && m.resources.length
        ? h("details.mcp-resources", {}, h("summary", {}, count(m.resources.length, "resource")),
            h("ul", {}, m.resources.map((r) => h("li", {}, h("code", {}, r.uri),
              r.name !== r.uri ? ` ${r.name}` : "", r.description ? ` — ${r.description}` : ""))))
        : null,
      error),
    rowActions(m, editing, error, reload),
    editing);
}

// The section: its heading, "Add a server" and its form, and the servers.
export function mcpSection(servers, reload) {
  const adding = h("div.mcp-adding");
  const add = h("button.primary", { type: "button", "aria-expanded": "false", onclick: () => {
    if (adding.firstChild) return adding.querySelector("input").focus();
    add.setAttribute("aria-expanded", "true");
    clear(adding, serverForm(null, (saved) => {
      if (saved) return redrawn(reload, "Add a server", "Server added.");
      clear(adding);
      add.setAttribute("aria-expanded", "false");
      add.focus();
      return undefined;
    }));
    adding.querySelector("input").focus();
    return undefined;
  } }, "Add a server");
  return [
    h("h2", {}, "MCP servers"),
    h("p.small.muted", {}, "Programs (or remote servers) whose tools conversations with a workspace may use. "
      + "A change is saved in the daemon's mcp.json and takes effect at once."),
    add, adding,
    servers.length ? null : h("p.muted", {}, "No MCP servers yet."),
    h("ul.rows", { "aria-label": "MCP servers" }, servers.map((m) => mcpRow(m, reload))),
  ];
}
