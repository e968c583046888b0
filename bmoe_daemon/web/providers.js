// The providers page: the OpenAI-compatible services a conversation may use instead
// of the local model, each with its models (and their contexts), its prices per
// million tokens (entered by the person; none means its answers have no cost) and its
// key, which is written once and never read back; and what the answers used and cost
// (usage.js). The form tests its address and key, and fetches the models the service
// lists, before saving (providerprobe.js).

import { api } from "./api.js";
import { alertLine, clear, field, h } from "./dom.js";
import { attemptAt, sayAt, unsay } from "./fielderrors.js";
import { limits } from "./limits.js";
import { probeControls } from "./providerprobe.js";
import { deleteButton, page } from "./settings.js";
import { attempt, inUseOnReread, modelName, pageView } from "./ui.js";
import { usageTotals } from "./usage.js";

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
    [/prices\.input/, f.priceIn, "Give the input price per million tokens (like 2.50), or leave all three prices empty."],
    [/prices\.output/, f.priceOut, "Give the output price per million tokens (like 10), or leave all three prices empty."],
    [/prices\.cached/, f.priceCached, "The cached price is a number of dollars per million tokens, or empty."],
    [/saved key is sent only to its provider's own address/, f.key,
      "The saved key goes only to this provider's own address: type the key to test it with the new one."],
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
  const prices = (provider && provider.prices) || {};
  const price = (value) => h("input", { type: "number", min: "0", step: "any", inputmode: "decimal",
    value: value === undefined || value === null ? "" : String(value) });
  const priceIn = price(prices.input);
  const priceOut = price(prices.output);
  const priceCached = price(prices.cached);
  const error = alertLine("");
  const rules = providerRules({ name, base, models, key, priceIn, priceOut, priceCached });
  const form = h("form.card.provider-form", { "aria-label": provider ? `Edit ${provider.name}` : "New provider" },
    field("Name", name), field("Base URL", base), field("Models", models, "Separated by commas."), contexts,
    h("fieldset.prices", {}, h("legend", {}, "Prices, US$ per million tokens (optional)"),
      field("Input", priceIn, "Prompt tokens."), field("Output", priceOut, "Completion tokens."),
      field("Cached input", priceCached, "Prompt tokens served from its cache; empty: the input price."),
      h("small.hint", {}, "Without prices its answers are counted in tokens only, with no cost.")),
    field("API key", key, "Written once; the daemon never shows it again."),
    provider && provider.has_key ? h("label.inline", {}, removeKey, "Remove the saved key") : null,
    probeControls(provider, { base, key, models, removeKey }, rules), error,
    h("div.actions", {}, h("button.primary", { type: "submit" }, provider ? "Save provider" : "Add provider"),
      h("button.quiet", { type: "button", onclick: () => done(false) }, "Cancel")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = {
      name: name.value.trim(),
      base_url: base.value.trim(),
      models: contexts.entries(),
    };
    const typed = [priceIn, priceOut, priceCached].map((p) => p.value.trim());
    body.prices = typed.some(Boolean) ? { input: typed[0] === "" ? null : Number(typed[0]),
      output: typed[1] === "" ? null : Number(typed[1]), cached: typed[2] === "" ? null : Number(typed[2]) } : null;
    if (key.value) body.api_key = key.value;
    else if (removeKey.checked) body.api_key = "";
    // A provider with no models could never be picked: said here, before any request.
    if (!body.models.length) {
      for (const c of [name, base, models, key]) unsay(c);
      sayAt(models, "Name at least one model this provider serves, such as gpt-4o-mini.");
      models.focus();
      return;
    }
    const saved = await attemptAt(error, rules, [name, base, models, key, priceIn, priceOut, priceCached], () =>
      provider ? api("PUT", `/api/providers/${encodeURIComponent(provider.id)}`, body) : api("POST", "/api/providers", body));
    key.value = "";
    if (saved) done(true);
  });
  return form;
}

const dollars = (n) => `$${Number(n).toLocaleString("en", { maximumFractionDigits: 6 })}`;

function pricesText(p) {
  if (!p) return "No prices: its answers are counted in tokens only.";
  return `Prices per million tokens: ${dollars(p.input)} input, ${dollars(p.output)} output`
    + (p.cached === null ? "" : `, ${dollars(p.cached)} cached input`) + ".";
}

const modelLabel = (m) => (typeof m === "string" ? m : `${m.id} (${m.context_length.toLocaleString("en")} tokens)`);

export function providersPage(main) {
  const body = page(main, "Providers",
    "OpenAI-compatible services a conversation may use instead of the local model. Only that conversation's messages go there.");
  const totals = usageTotals();
  const load = async () => {
    const providers = await api("GET", "/api/providers");
    if (inUseOnReread(body)) return;
    const adding = h("div");
    totals.load();
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
            h("p.small", {}, `Models: ${p.models.map(modelLabel).join(", ")}`),
            h("p.small.prices-line", {}, pricesText(p.prices))),
          h("div.row-actions", {},
            h("button.quiet", { type: "button", "aria-label": `Edit ${p.name}`, onclick: () =>
              clear(editing, providerForm(p, (saved) => (saved ? load() : clear(editing)))) }, "Edit"),
            deleteButton(p.name, async () => {
              if (await attempt(() => api("DELETE", `/api/providers/${encodeURIComponent(p.id)}`))) load();
            })),
          editing);
      })),
      totals);
  };
  return pageView(load, body);
}
