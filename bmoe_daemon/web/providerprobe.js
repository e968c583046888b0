// A provider's form asks its address before saving (POST /api/providers/probe):
// "Test" says whether the address answers and the key is taken, "Fetch models" does
// the same and lists the models it serves, each a checkbox that adds it to or takes it
// from the form's Models field. The key typed goes in the request's body only; an
// edited provider's saved key is used by its id (the daemon sends it only to that
// provider's own host), and is never shown.

import { api } from "./api.js";
import { clear, h } from "./dom.js";
import { attemptAt } from "./fielderrors.js";

// `f`: the form's {base, key, models, removeKey} controls; `rules` its refusals by field.
export function probeControls(provider, f, rules) {
  const status = h("p.probe-status", { role: "status", "aria-live": "polite" });
  const error = h("p.error-text", { role: "alert", hidden: true });
  const choices = h("div.probe-models");
  const names = () => f.models.value.split(",").map((m) => m.trim()).filter(Boolean);
  const setNames = (list) => {
    f.models.value = list.join(", ");
    f.models.dispatchEvent(new Event("input")); // the context fields follow the list
  };
  const ask = async (listing, button) => {
    const body = { base_url: f.base.value.trim() };
    if (f.key.value) body.api_key = f.key.value;
    else if (provider && provider.has_key && !f.removeKey.checked) body.provider_id = provider.id;
    clear(status, listing ? "Asking the service for its models…" : "Testing the address and key…");
    button.disabled = true;
    const got = await attemptAt(error, rules, [f.base, f.key], () => api("POST", "/api/providers/probe", body));
    button.disabled = false;
    if (!got) {
      clear(status);
      return;
    }
    status.classList.toggle("error-text", !got.ok);
    clear(status, got.ok ? `✓ ${got.message}` : `✗ ${got.message}`);
    if (!listing || !got.ok) return;
    const have = new Set(names());
    clear(choices, got.models.length
      ? h("fieldset.probe-list", {}, h("legend", {}, "Models the service lists: tick the ones to use"),
        got.models.map((m) => {
          const box = h("input", { type: "checkbox", checked: have.has(m) });
          box.addEventListener("change", () => {
            const now = names().filter((n) => n !== m);
            setNames(box.checked ? [...now, m] : now);
          });
          return h("label.inline", {}, box, m);
        }))
      : h("p.muted", {}, "The service lists no models; type their names above."));
  };
  const test = h("button.quiet", { type: "button" }, "Test");
  const fetchModels = h("button.quiet", { type: "button" }, "Fetch models");
  test.addEventListener("click", () => ask(false, test));
  fetchModels.addEventListener("click", () => ask(true, fetchModels));
  return h("div.probe", {}, h("div.actions", {}, test, fetchModels), status, error, choices);
}
