// The form that adds an MCP server, or edits one: its name (an edit may rename it); a
// program of this computer (command, arguments one per line, environment variables, the
// folder it starts in) or a remote server (its URL, headers and transport); and the time
// limit of one call. A value marked secret goes to the key store (PUT /api/secrets/<name>,
// named <server>-<variable>) and the config gets only its ${secret:...} reference; a
// saved value is never read back, so an edit leaves it empty to keep it. The daemon's
// refusals are said beside the field they concern (fielderrors.js).

import { api } from "./api.js";
import { alertLine, field, h, select } from "./dom.js";
import { attemptAt } from "./fielderrors.js";
import { attempt } from "./ui.js";

// A name that looks like it holds a credential: its value is marked secret at first.
const CREDENTIAL = /key|token|secret|passw|auth|cookie|credential/i;
let forms = 0;

// The key store's name for a value marked secret.
const secretName = (server, key) => `${server}-${key}`.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 64);

// The variables (or headers) of a server: a row each, with a name, a value and whether
// the value is a secret; `saved`: the listing's names and the secrets they name.
function pairs(kind, saved) {
  const list = h("div.mcp-pairs");
  const rows = [];
  const addRow = (was) => {
    const n = rows.length + 1;
    const name = h("input", { type: "text", value: was ? was.name : "", autocomplete: "off", spellcheck: "false",
      placeholder: kind === "Header" ? "Authorization" : "API_KEY", "aria-label": `${kind} ${n} name` });
    const secretRefs = was && was.secrets.length ? was.secrets.join(", ") : "";
    const value = h("input", { type: "text", autocomplete: "off", spellcheck: "false", "aria-label": `${kind} ${n} value`,
      placeholder: was ? (secretRefs ? `secret ${secretRefs}: empty keeps it` : "saved: empty keeps it") : "value" });
    const secret = h("input", { type: "checkbox", "aria-label": `${kind} ${n} is a secret` });
    const row = { name, value, secret, saved: was ? was.name : null, touched: false };
    const mark = () => {
      value.type = secret.checked ? "password" : "text";
      if (secret.checked) value.setAttribute("autocomplete", "new-password");
    };
    secret.checked = Boolean(secretRefs) || CREDENTIAL.test(name.value);
    mark();
    secret.addEventListener("change", () => {
      row.touched = true;
      mark();
    });
    name.addEventListener("input", () => {
      if (!row.touched) {
        secret.checked = CREDENTIAL.test(name.value);
        mark();
      }
    });
    const remove = h("button.quiet", { type: "button", "aria-label": `Remove ${kind.toLowerCase()} ${n}` }, "Remove");
    const el = h("div.mcp-pair", {}, name, value, h("label.inline.mcp-secret", {}, secret, "Secret"), remove);
    remove.addEventListener("click", () => {
      rows.splice(rows.indexOf(row), 1);
      el.remove();
      box.querySelector("button.mcp-add-pair").focus();
    });
    rows.push(row);
    list.append(el);
    return row;
  };
  for (const was of saved) addRow(was);
  const more = h("button.quiet.mcp-add-pair", { type: "button" }, kind === "Header" ? "Add a header" : "Add a variable");
  more.addEventListener("click", () => addRow(null).name.focus());
  const box = h("fieldset.mcp-pairs-box", {},
    h("legend", {}, kind === "Header" ? "Headers (optional)" : "Environment variables (optional)"),
    h("small.hint", {}, "A value marked secret is kept in the daemon's key store, not in mcp.json."),
    list, more);
  // The values as the daemon takes them: a value left empty keeps a saved one (null),
  // a secret's is its reference; `secrets`: what to save in the key store.
  box.collect = (server, keep) => {
    const values = {};
    const secrets = [];
    for (const r of rows) {
      const key = r.name.value.trim();
      if (!key) continue;
      const typed = r.value.value;
      if (!typed && keep && r.saved === key) values[key] = null;
      else if (typed && r.secret.checked) {
        const ref = secretName(server, key);
        secrets.push([ref, typed]);
        values[key] = `\${secret:${ref}}`;
      } else values[key] = typed;
    }
    return { values, secrets };
  };
  box.forget = () => rows.forEach((r) => (r.value.value = ""));
  return box;
}

// The daemon's refusals, said for a person beside the field they concern.
function rules(f, remote) {
  const said = (m) => m.input;
  return [
    [/server's name|already an MCP server named/, f.name, said],
    [/^Give either a command|^Give a command to start/, remote ? f.url : f.command, said],
    [/^Programs do not start/, f.command, said],
    [/^Args/, f.args, "Arguments are words, one per line."],
    [/http:\/\/ is taken only/, f.url, "http:// is only for a server on this computer or the local network; use https://."],
    [/^Url may not carry/, f.url,
      "Leave the user name and password out of the address; put the credential in a header marked secret."],
    [/^Url/, f.url, "That is not an address that can be used: give one like https://mcp.example.com/mcp."],
    [/\(cwd\)|^Cwd/, f.cwd, (m) => m.input.replace("The working folder (cwd)", "The working folder")],
    [/timeout_ms/i, f.timeout, "A time limit is a number of seconds, from 0.001 to 3600."],
    [/^Type must/, f.transport, "Choose Streamable HTTP or HTTP+SSE."],
    [/header/i, f.headers, said],
    [/^Env |variable/i, f.env, said],
  ];
}

// `m`: the listing's row of the server to edit, or null to add one. `done(name)`: the
// name it was saved under, or false when the form was closed.
export function serverForm(m, done) {
  const entry = (m && m.entry) || {};
  const wasRemote = Boolean(m && m.remote);
  const id = ++forms;
  const name = h("input", { type: "text", value: m ? m.name : "", required: true, autocomplete: "off",
    spellcheck: "false", placeholder: "github" });
  const stdio = h("input", { type: "radio", name: `mcp-kind-${id}`, value: "stdio", checked: !wasRemote });
  const remote = h("input", { type: "radio", name: `mcp-kind-${id}`, value: "remote", checked: wasRemote });
  const command = h("input", { type: "text", autocomplete: "off", spellcheck: "false", placeholder: "npx",
    value: entry.command || (m && !m.remote && !m.entry ? m.command : "") });
  const args = h("textarea", { rows: 3, spellcheck: "false", placeholder: "-y\n@modelcontextprotocol/server-github" });
  args.value = (entry.args || []).join("\n");
  const url = h("input", { type: "url", autocomplete: "off", placeholder: "https://mcp.example.com/mcp",
    value: entry.url || (m && m.remote ? m.url : "") });
  const env = pairs("Variable", entry.env || []);
  const headers = pairs("Header", entry.headers || (m && m.headers) || []);
  const cwd = h("input", { type: "text", autocomplete: "off", spellcheck: "false", placeholder: "/home/me/project",
    value: entry.cwd || "" });
  const transport = select({}, [["streamable-http", "Streamable HTTP (the older HTTP+SSE if it is refused)"],
    ["sse", "HTTP+SSE only (older servers)"]], entry.type === "sse" || (m && m.transport === "sse")
    ? "sse" : "streamable-http");
  const timeout = h("input", { type: "text", inputmode: "decimal", autocomplete: "off", placeholder: "30",
    value: entry.timeout_ms ? String(entry.timeout_ms / 1000) : "" });
  const stdioPart = h("div.mcp-stdio", {},
    field("Command", command, "The program to start, like npx, uvx or a full path."),
    field("Arguments", args, "One per line."), env,
    field("Working folder (optional)", cwd, "The full path of the folder the program starts in; empty: the "
      + "daemon's own."));
  const remotePart = h("div.mcp-remote", {},
    field("URL", url, "Where the server answers, like https://mcp.example.com/mcp (http:// only on this computer "
      + "or network)."), headers,
    field("Transport", transport, "Most servers speak Streamable HTTP; choose HTTP+SSE for one that speaks only "
      + "the older transport."));
  const show = () => {
    stdioPart.hidden = remote.checked;
    remotePart.hidden = !remote.checked;
  };
  stdio.addEventListener("change", show);
  remote.addEventListener("change", show);
  show();
  const error = alertLine("");
  const f = { name, command, args, url, env, headers, cwd, transport, timeout };
  const form = h("form.card.mcp-form", { "aria-label": m ? `Edit ${m.name}` : "Add a server" },
    field("Name", name, m ? "Renamed, the server is started again under its new name, and its tools are named "
      + "<name>_<tool>." : "Letters, digits, '_' or '-'; its tools are named <name>_<tool>."),
    h("fieldset.mcp-kind", {}, h("legend", {}, "Where it runs"),
      h("label.inline", {}, stdio, "A program on this computer"),
      h("label.inline", {}, remote, "A remote server (URL)")),
    stdioPart, remotePart,
    field("Time limit of a call, in seconds (optional)", timeout, "How long one call may take before it is given "
      + "up; empty: 30."),
    error,
    h("div.actions", {}, h("button.primary", { type: "submit" }, m ? "Save server" : "Add server"),
      h("button.quiet", { type: "button", onclick: () => done(false) }, "Cancel")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const isRemote = remote.checked;
    const server = name.value.trim();
    const same = Boolean(m) && isRemote === wasRemote;
    const got = (isRemote ? headers : env).collect(server, same);
    const body = isRemote
      ? { url: url.value.trim(), headers: got.values }
      : { command: command.value.trim(), args: args.value.split("\n").map((a) => a.replace(/\r$/, "")).filter(Boolean),
          env: got.values };
    if (!isRemote && cwd.value.trim()) body.cwd = cwd.value.trim();
    if (isRemote && transport.value === "sse") body.type = "sse";  // else Streamable HTTP, the default
    const seconds = timeout.value.trim();
    if (seconds) {
      // Not a number: sent as typed, for the daemon to say so beside the field.
      body.timeout_ms = Number.isFinite(Number(seconds)) ? Math.round(Number(seconds) * 1000) : seconds;
    }
    body.name = server;  // on an edit, a new one renames the server
    const saved = await attemptAt(error, rules(f, isRemote), Object.values(f), () =>
      m ? api("PUT", `/api/mcp/servers/${encodeURIComponent(m.name)}`, body) : api("POST", "/api/mcp/servers", body));
    if (!saved) return;
    // The secrets after the server: a refused server leaves none behind; a server that
    // waited for its secret is started once it is saved.
    for (const [ref, value] of got.secrets) {
      await attempt(() => api("PUT", `/api/secrets/${encodeURIComponent(ref)}`, { value }));
    }
    env.forget();
    headers.forget();
    done(server);
  });
  return form;
}
