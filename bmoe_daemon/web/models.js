// The models page: the GGUF files on this computer (GET /api/models: the daemon's
// models folder, each --models-dir, LM Studio's, the Hugging Face cache, Ollama's),
// each with its size and what its header says, the one that serves marked, where it
// runs (/health's `device`), and Load (PUT /api/model, with an optional context size).
//
// For the loaded model it also shows its chat template: the tool-call format found in it,
// whether it is the file's or one the person gave, and what shapes of history it needed
// (actors/model/backends/template_shapes.py); and a box to give it a template of one's
// own (PUT /api/model with `chat_template`, "" for the file's again).
//
// Whether its runs are led (GET /api/model's `led`, `leading`): a small local model is
// led step by step unless the daemon was started with --leading off.
//
// A load answers once the new model serves, or 400 with the daemon's words, the old
// model still serving; either way the page is read again. A `model` event (a load from
// anywhere, the model let go after idle minutes or loaded again) reads it again too.

import { api } from "./api.js";
import { alertLine, clear, field, h, heldBy, sizeText } from "./dom.js";
import { limits } from "./limits.js";
import { modelMemory, watchModelMemory } from "./modelstate.js";
import { page } from "./settings.js";
import { memoryText, problem, tokensText } from "./ui.js";

// Where the listing found a model (actors/model_scan.py's sources).
const SOURCES = {
  data: "In the daemon's models folder",
  folder: "In a --models-dir folder",
  lmstudio: "From LM Studio",
  huggingface: "In the Hugging Face cache",
  ollama: "From Ollama",
  bundled: "Shipped with the daemon",
  given: "Given with --model",
  loaded: "The model serving now",
};

const TOOL_FORMATS = { hermes: "Hermes", mistral: "Mistral", llama3: "Llama 3" };

// GET /api/model's `template_shapes`, in words.
const SHAPES = {
  merge_turns: "consecutive turns of one side merged into one",
  system_in_user: "the system message folded into the first user turn",
  one_call_per_turn: "one tool call to an answer",
  tools_as_text: "tool calls and results as plain text",
  one_turn: "the whole conversation as one message",
};

function toolFormatText(format) {
  if (format === "generic") return "Tool calls: JSON, held to the tools by a grammar (the template has no tool syntax).";
  return `Tool calls: the ${TOOL_FORMATS[format] || format} format.`;
}

function shapesText(shapes) {
  if (!shapes.length) return "Shapes it needed: none; it takes every conversation as it is.";
  return `Shapes it needed: ${shapes.map((s) => SHAPES[s] || s).join("; ")}.`;
}

function leadingText(loaded) {
  if (loaded.led) {
    return "Led step by step: it is a small model, so the daemon shows it worked examples, checks its calls and "
      + "answers, and ends a run that goes round in circles. Start the daemon with --leading off to let it work alone.";
  }
  if (loaded.leading === "off") return "Not led: the daemon was started with --leading off, so this model works on its own.";
  return "Works on its own: the daemon leads only small models.";
}

// 134,515,008 -> "135M", 7,241,732,096 -> "7.2B"
export function parametersText(n) {
  if (!n) return null;
  if (n >= 1e9) return `${(n / 1e9).toFixed(n >= 1e10 ? 0 : 1)}B`;
  if (n >= 1e6) return `${Math.round(n / 1e6)}M`;
  return `${Math.round(n / 1e3)}K`;
}

// /health's `device`: "on the CPU", "on the GPU (all layers)", with why not the GPU.
function deviceText(device) {
  if (!device) return null;
  if (device.runs_on === "gpu") {
    const layers = device.gpu_layers < 0 ? "every layer" : `${device.gpu_layers} layers`;
    return `Runs on the GPU (${layers} offloaded).`;
  }
  if (device.gpu_layers_asked !== 0 && !device.gpu_offload_supported)
    return "Runs on the CPU: this build of llama.cpp cannot use a GPU.";
  return "Runs on the CPU.";
}

function facts(m) {
  const out = [sizeText(m.size)];
  if (m.architecture) out.push(m.architecture);
  const params = parametersText(m.parameters);
  if (params) out.push(`${params} parameters`);
  if (m.quantization) out.push(m.quantization);
  if (m.context_length) out.push(`context ${tokensText(m.context_length)}`);
  if (!m.error) out.push(m.tool_calls ? `tool calls: ${TOOL_FORMATS[m.tool_format] || m.tool_format}` : "no tool calls");
  if (m.vision) out.push("vision");
  return out;
}

function emptyState() {
  return h("div.card.models-empty", { role: "note" },
    h("p", {}, h("strong", {}, "No GGUF models found on this computer.")),
    h("p", {}, "Put a model's .gguf file in the ", h("code", {}, "models"),
      " folder inside the daemon's data folder, or start the daemon with ", h("code", {}, "--models-dir"),
      " naming the folder where you keep them. Models downloaded with LM Studio or Ollama, and those in the "
      + "Hugging Face cache, are found by themselves. Then open this page again."));
}

export function modelsPage(main) {
  const body = page(main, "Models",
    "The GGUF models on this computer, read from their files. Loading one waits for the turn running to "
    + "finish; then every conversation on the local model uses it.");
  const state = {
    listing: null, // GET /api/models
    health: null, // GET /health
    loading: null, // the model a load from this page waits for
    status: "", // what the last load did
    error: "", // the daemon's refusal of the last load
    serial: 0, // an older read's answer is not shown
  };
  // `ctx_size` as PUT /api/model takes it: limits.ctx_size.
  const ctx = h("input", { type: "number", min: String(limits.ctx_size.min), max: String(limits.ctx_size.max), step: "1",
    inputmode: "numeric", placeholder: "as the daemon was started", autocomplete: "off" });
  const ctxField = field("Context size", ctx, "Tokens the model may hold, for the next load; empty: the daemon's --ctx-size.");
  const statusEl = h("p.models-status", { role: "status", "aria-live": "polite" });
  const errorEl = alertLine("");
  const loadedEl = h("section.card.model-now", { "aria-labelledby": "model-now-title" });
  // The person's chat template for the loaded model: made once, so what is typed survives a redraw.
  const templateBox = h("textarea.model-template-text", { rows: "8", spellcheck: "false", autocomplete: "off",
    placeholder: "{%- for message in messages %}…" });
  const templateField = field("Chat template (Jinja)", templateBox,
    "Used instead of the one in the model's file, for this file only; kept in the daemon's data folder.");
  const useTemplate = h("button", { type: "button", onclick: () => giveTemplate(templateBox.value) },
    "Use this template");
  const fileTemplate = h("button.quiet", { type: "button", onclick: () => giveTemplate("") },
    "Use the file's template");
  const templateEl = h("details.model-template", {},
    h("summary", {}, "Give this model a chat template"),
    h("p.small", {}, "For a model whose template is broken, missing, or refuses conversations."),
    templateField, h("div.row-actions", {}, useTemplate, fileTemplate));
  let templateShownFor = null; // the loaded model whose template the box was filled with
  const noticesEl = h("div.model-notices");
  const listEl = h("ul.rows.models", { "aria-label": "Models" });
  clear(body, loadedEl, ctxField, statusEl, errorEl, noticesEl, listEl);

  const render = () => {
    const { listing, health, loading } = state;
    if (!listing) return;
    if (heldBy(body, () => body.isConnected && render())) return; // a press on the page: drawn after its click
    const loaded = listing.loaded;
    // The keyboard's place: a row's button is drawn again whole.
    const focused = listEl.contains(document.activeElement) ? document.activeElement.dataset.focus : null;
    const memory = modelMemory();
    const inMemory = loaded ? memoryText(memory.state, memory.loaded) : null;
    clear(loadedEl,
      h("h2#model-now-title", {}, "Loaded now"),
      loaded
        ? [h("p.model-now-name", {}, h("strong", {}, loaded.model), " · ", tokensText(loaded.n_ctx), " of context",
            inMemory ? h("span.badge.model-asleep", {}, inMemory) : null),
           h("p.small", {}, deviceText(health && health.device) || "Where it runs is not known (not a llama.cpp model)."),
           loaded.path ? h("p.small.muted", {}, h("code.model-path", {}, loaded.path)) : null,
           typeof loaded.led === "boolean" ? h("p.small.model-leading", {}, leadingText(loaded)) : null,
           loaded.template_from ? [
             h("p.small.model-tool-format", {}, toolFormatText(loaded.tool_format)),
             h("p.small.model-template-from", {}, loaded.template_from === "person"
               ? "Chat template: yours, given on this page." : "Chat template: the one in the model's file."),
             h("p.small.model-shapes", {}, shapesText(loaded.template_shapes || [])),
             loaded.path ? templateEl : null,
           ] : null]
        : h("p", {}, "No model is loaded: conversations on the local model cannot answer. Load one below."));
    if (loaded && loaded.template_from) {
      const key = `${loaded.path}\n${loaded.template_from}\n${loaded.chat_template || ""}`;
      if (key !== templateShownFor) templateBox.value = loaded.chat_template || "";
      templateShownFor = key;
      fileTemplate.hidden = loaded.template_from !== "person";
      for (const b of [useTemplate, fileTemplate]) b.setAttribute("aria-disabled", loading ? "true" : "false");
    }
    statusEl.textContent = loading ? `Loading ${loading.name}… The turn running finishes first; a big model takes a while.`
      : state.status;
    errorEl.textContent = state.error;
    errorEl.hidden = !state.error;
    ctx.readOnly = Boolean(loading);
    clear(noticesEl, listing.notices.length
      ? [h("h2", {}, "Skipped while looking"),
         h("ul.small.model-notice-list", { "aria-label": "Skipped while looking" }, listing.notices.map((n) => h("li", {}, n)))]
      : null);
    listEl.hidden = !listing.models.length;
    clear(listEl, listing.models.map((m) => {
      const isLoaded = Boolean(loaded && loaded.path && loaded.path === m.path);
      const busy = Boolean(loading);
      const button = m.error ? null : h(isLoaded ? "button.quiet" : "button", {
        type: "button", "aria-label": isLoaded ? `Load ${m.name} again` : `Load ${m.name}`,
        // Not `disabled`: the keyboard stays on the button pressed while its model loads.
        "aria-disabled": busy ? "true" : "false", "data-focus": `load:${m.path}`,
        onclick: () => loadModel(m),
      }, loading && loading.path === m.path ? "Loading…" : isLoaded ? "Load again" : "Load");
      return h(`li.row.model${isLoaded ? ".model-loaded" : ""}`, { "aria-label": m.name },
        h("div.row-main", {},
          h("strong.model-name", {}, m.name),
          isLoaded ? h("span.badge.state-running", {}, "loaded") : null,
          h("p.small.model-facts", {}, facts(m).map((f, i) => [i ? " · " : "", h("span", {}, f)])),
          m.error ? h("p.small.error-text", {}, `It cannot be loaded: ${m.error}.`) : null,
          h("p.small.muted", {}, `${SOURCES[m.source] || m.source}: `, h("code.model-path", {}, m.path))),
        h("div.row-actions", {}, button));
    }));
    body.querySelector(".models-empty")?.remove();
    if (!listing.models.length) listEl.after(emptyState());
    if (focused) listEl.querySelector(`[data-focus="${CSS.escape(focused)}"]`)?.focus();
  };

  // Reads the listing and /health again (the listing walks the folders: a second or two).
  const load = async () => {
    const serial = ++state.serial;
    const [listing, health] = await Promise.all([api("GET", "/api/models"), api("GET", "/health").catch(() => null)]);
    if (serial !== state.serial) return;
    state.listing = listing;
    state.health = health;
    render();
  };

  const loadModel = async (m) => {
    if (state.loading) return;
    const wanted = ctx.value.trim();
    if (ctx.validity.badInput || (wanted && !ctx.checkValidity())) {
      state.error = `The context size must be a whole number of tokens from ${limits.ctx_size.min.toLocaleString("en")} `
        + `to ${limits.ctx_size.max.toLocaleString("en")}, or empty for the daemon's own.`;
      render();
      ctx.focus();
      return;
    }
    state.loading = m;
    state.error = "";
    state.status = "";
    render();
    const payload = { path: m.path };
    if (wanted) payload.ctx_size = Number(wanted);
    try {
      const got = await api("PUT", "/api/model", payload);
      state.status = `${got.model} is loaded, with ${tokensText(got.n_ctx)} of context.`;
    } catch (err) {
      state.error = `${m.name} was not loaded. ${problem(err)}`;
    }
    state.loading = null;
    try {
      await load();
    } catch (err) {
      state.error = [state.error, problem(err)].filter(Boolean).join(" ");
      render();
    }
  };

  // The loaded model again, with the person's template ("" the file's): the daemon checks
  // it parses and renders a message first, else says why and the model serves as it was.
  const giveTemplate = async (text) => {
    const loaded = state.listing && state.listing.loaded;
    if (state.loading || !loaded || !loaded.path) return;
    if (text !== "" && !text.trim()) {
      state.error = "The chat template is empty: paste one, or use the file's template.";
      render();
      templateBox.focus();
      return;
    }
    state.loading = { name: loaded.model, path: loaded.path };
    state.error = "";
    state.status = "";
    render();
    try {
      const got = await api("PUT", "/api/model", { path: loaded.path, chat_template: text });
      state.status = text ? `${got.model} now uses your chat template.` : `${got.model} uses its file's chat template again.`;
    } catch (err) {
      state.error = `The chat template was not changed. ${problem(err)}`;
    }
    state.loading = null;
    try {
      await load();
    } catch (err) {
      state.error = [state.error, problem(err)].filter(Boolean).join(" ");
      render();
    }
  };

  let timer = null;
  const unwatch = watchModelMemory(render); // in memory or not, as every view says it
  return {
    name: "page",
    load,
    refresh: load,
    close: () => {
      clearTimeout(timer);
      unwatch();
    },
    onEvent(name, data) {
      if (name !== "model") return;
      // Said at once; the listing (which file it is) is read again after.
      if (state.listing && state.listing.loaded) {
        Object.assign(state.listing.loaded, { model: data.model, n_ctx: data.n_ctx });
        render();
      }
      // This page's load reads it all when it answers; a model let go or loaded again
      // for a turn (`state`) is the same file.
      if (state.loading || (data.state && data.state !== "loaded")) return;
      clearTimeout(timer);
      timer = setTimeout(() => load().catch(() => {}), 200);
    },
  };
}
