// The providers page: the OpenAI-compatible services a conversation may use instead
// of the local model, each with its models (and their contexts) and its key, which is
// written once and never read back.

import { api } from "./api.js";
import { alertLine, clear, field, h } from "./dom.js";
import { attemptAt, sayAt, unsay } from "./fielderrors.js";
import { limits } from "./limits.js";
import { deleteButton, page } from "./settings.js";
import { attempt, modelName, pageView } from "./ui.js";

// One number field per model named in `models`, for its context in tokens; a value
// typed stays with its model's name while the list is edited.
function contextFields(models, given) {
  const bounds = limits.context_length;
  const typed = new Map(given);
  const box = h("div.context-lengths");
  const names = () => [...new Set(models.value.split(",").map((m) => m.trim()).filter(Boolean))];
  const draw = () => {
    for (const input of box.querySelectorAll("input")) typed.set(input.dataset.model, input.value);
    clear(box, names().map((name) => {
      const input = h("input", { type: "number", min: String(bounds.min), max: String(bounds.max), step: "1",
        inputmode: "numeric", placeholder: String(bounds.default), value: typed.get(name) || "", "data-model": name });
      return field(`Context of ${name}`, input, `Tokens; empty for ${bounds.default.toLocaleString("en")}.`);
    }));
  };
  models.addEventListener("input", draw);
  draw();
  // The models as the daemon takes them: a name, or {id, context_length}.
  box.entries = () => names().map((name) => {
    const input = [...box.querySelectorAll("input")].find((i) => i.dataset.model === name);
    const value = input ? input.value.trim() : "";
    return value ? { id: name, context_length: Number(value) } : name;
  });
  return box;
}

// The daemon's refusals of a provider, said for a person beside the field they concern.
function providerRules(f) {
  const { min, max } = limits.context_length;
  const address = "like https://api.example.com/v1";
  return [
    [/base_url is empty/, f.base, `Give the provider's address, ${address}.`],
    [/base_url must start with/, f.base, "The address starts with https:// (http:// only for a service on this machine or network)."],
    [/^http:\/\/ is accepted only/, f.base, "http:// is only for a service on this machine or the local network; use https://."],
    [/base_url may not carry a user name/, f.base, "Leave the user name and password out of the address; put the key under API key."],
    [/base_url may not have a query/, f.base, `Leave out any ?… or #… part: give the address the API starts at, ${address}.`],
    [/base_url/, f.base, `That is not an address that can be used: give one ${address}.`],
    [/A provider lists at most (\d+)/, f.models, (m) => `At most ${m[1]} models for one provider.`],
    [/context_length of '([^']*)'/, f.models, (m) => `The context of ${m[1]} must be a whole number of tokens, `
      + `from ${min.toLocaleString("en")} to ${max.toLocaleString("en")}.`],
    [/model's name|model's field|body\.models/, f.models, "Give the models' names, separated by commas."],
    [/^name is empty/, f.name, "Give the provider a name."],
    [/^name /, f.name, "That name is too long or holds characters that cannot be shown."],
    [/api_key is longer/, f.key, "That key is too long to be a key."],
    [/api_key/, f.key, "A key holds only printable characters, without spaces."],
  ];
}

function providerForm(provider, done) {
  const name = h("input", { type: "text", value: provider ? provider.name : "", required: true, autocomplete: "off" });
  const base = h("input", { type: "url", value: provider ? provider.base_url : "", required: true,
    placeholder: "https://api.example.com/v1", autocomplete: "off" });
  const models = h("input", { type: "text", value: provider ? provider.models.map(modelName).join(", ") : "",
    placeholder: "model-a, model-b", autocomplete: "off" });
  const contexts = contextFields(models, (provider ? provider.models : [])
    .filter((m) => typeof m !== "string").map((m) => [m.id, String(m.context_length)]));
  // The key is never read back: the field starts empty; empty keeps the saved one.
  const key = h("input", { type: "password", value: "", autocomplete: "new-password",
    placeholder: provider && provider.has_key ? "saved: leave empty to keep it" : "" });
  const removeKey = h("input", { type: "checkbox" });
  const error = alertLine("");
  const rules = providerRules({ name, base, models, key });
  const form = h("form.card.provider-form", { "aria-label": provider ? `Edit ${provider.name}` : "New provider" },
    field("Name", name), field("Base URL", base), field("Models", models, "Separated by commas."), contexts,
    field("API key", key, "Written once; the daemon never shows it again."),
    provider && provider.has_key ? h("label.inline", {}, removeKey, "Remove the saved key") : null, error,
    h("div.actions", {}, h("button.primary", { type: "submit" }, provider ? "Save provider" : "Add provider"),
      h("button.quiet", { type: "button", onclick: () => done(false) }, "Cancel")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = {
      name: name.value.trim(),
      base_url: base.value.trim(),
      models: contexts.entries(),
    };
    if (key.value) body.api_key = key.value;
    else if (removeKey.checked) body.api_key = "";
    // A provider with no models could never be picked: said here, before any request.
    if (!body.models.length) {
      for (const c of [name, base, models, key]) unsay(c);
      sayAt(models, "Name at least one model this provider serves, such as gpt-4o-mini.");
      models.focus();
      return;
    }
    const saved = await attemptAt(error, rules, [name, base, models, key], () =>
      provider ? api("PUT", `/api/providers/${encodeURIComponent(provider.id)}`, body) : api("POST", "/api/providers", body));
    key.value = "";
    if (saved) done(true);
  });
  return form;
}

const modelLabel = (m) => (typeof m === "string" ? m : `${m.id} (${m.context_length.toLocaleString("en")} tokens)`);

export function providersPage(main) {
  const body = page(main, "Providers",
    "OpenAI-compatible services a conversation may use instead of the local model. Only that conversation's messages go there.");
  const load = async () => {
    const providers = await api("GET", "/api/providers");
    const adding = h("div");
    clear(body,
      h("button.primary", { type: "button", onclick: () =>
        clear(adding, providerForm(null, (saved) => (saved ? load() : clear(adding)))) }, "Add a provider"),
      adding,
      providers.length ? null : h("p.muted", {}, "No providers saved."),
      h("ul.rows", { "aria-label": "Providers" }, providers.map((p) => {
        const editing = h("div");
        return h("li.row", { "aria-label": p.name },
          h("div.row-main", {},
            h("strong", {}, p.name), " ", h("code.muted", {}, p.base_url),
            h("span.badge", {}, p.has_key ? "key saved" : "no key"),
            h("p.small", {}, `Models: ${p.models.map(modelLabel).join(", ")}`)),
          h("div.row-actions", {},
            h("button.quiet", { type: "button", "aria-label": `Edit ${p.name}`, onclick: () =>
              clear(editing, providerForm(p, (saved) => (saved ? load() : clear(editing)))) }, "Edit"),
            deleteButton(p.name, async () => {
              if (await attempt(() => api("DELETE", `/api/providers/${encodeURIComponent(p.id)}`))) load();
            })),
          editing);
      })));
  };
  return pageView(load, body);
}
