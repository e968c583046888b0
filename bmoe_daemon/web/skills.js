// The skills page: the skills the agent may read (shipped, the person's, a
// workspace's), each switched on or off; the person's own are written and deleted
// here, a shipped one is edited as a copy. A skill's name opens it to read: its
// instructions rendered, the tools it allows, and its SKILL.md as the daemon reads it.

import { api } from "./api.js";
import { alertLine, clear, field, h } from "./dom.js";
import { attemptAt } from "./fielderrors.js";
import { renderMarkdown } from "./markdown.js";
import { deleteButton, page } from "./settings.js";
import { attempt, inUseOnReread, pageView } from "./ui.js";

function skillForm(skill, done) {
  const name = h("input", { type: "text", value: skill ? skill.name : "", required: true, readonly: skill ? true : null,
    pattern: "[a-z0-9]+(-[a-z0-9]+)*", autocomplete: "off" });
  const title = h("input", { type: "text", value: skill ? skill.title : "" });
  const description = h("input", { type: "text", value: skill ? skill.description : "", required: true });
  const body = h("textarea", { rows: "10", value: skill ? skill.body : "" });
  const form = h("form.card.skill-form", { "aria-label": skill ? `Edit ${skill.name}` : "New skill" },
    field("Name", name, "kebab-case: lower-case letters, digits and '-'"),
    field("Title", title),
    field("Description", description, "The model reads this to decide when to use the skill."),
    field("Instructions", body),
    h("div.actions", {}, h("button.primary", { type: "submit" }, skill ? "Save skill" : "Add skill"),
      h("button.quiet", { type: "button", onclick: () => done(false) }, "Cancel")));
  const error = alertLine("");
  form.querySelector(".actions").before(error);
  // The daemon's refusals (actors/skills.py check_new) said for a person, by their field.
  const sentence = (text) => text.charAt(0).toUpperCase() + text.slice(1).replace(/\.?$/, ".");
  const rules = [
    [/exists already/, name, "A skill has this name already: pick another name, or edit that skill."],
    [/^name: (.*)$/s, name, (m) => sentence(m[1])],
    [/^description: at most (\d+) characters/, description, (m) => `Keep the description to at most ${m[1]} characters.`],
    [/^description: (.*)$/s, description, (m) => sentence(m[1])],
    [/^title: at most (\d+) characters/, title, (m) => `Keep the title to at most ${m[1]} characters.`],
    [/^body: at most (.*?)\.?$/, body, (m) => `The instructions can be at most ${m[1]}.`],
    [/^body: it holds a NUL/, body, "The instructions hold a NUL character; take it out."],
    [/^body: (.*)$/s, body, (m) => sentence(m[1])],
  ];
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const payload = { name: name.value.trim(), description: description.value.trim(), body: body.value };
    if (title.value.trim()) payload.title = title.value.trim();
    const saved = await attemptAt(error, rules, [name, title, description, body], () =>
      skill ? api("PUT", `/api/skills/${encodeURIComponent(skill.name)}`, payload) : api("POST", "/api/skills", payload));
    if (saved) done(true);
  });
  return form;
}

// The reading of one skill (GET /api/skills/<name>), in `where`; the name's button
// says whether it is open.
async function readSkill(where, opener, name) {
  const open = opener.getAttribute("aria-expanded") === "true";
  if (open) {
    opener.setAttribute("aria-expanded", "false");
    clear(where);
    return;
  }
  const skill = await attempt(() => api("GET", `/api/skills/${encodeURIComponent(name)}`));
  if (!skill) return;
  opener.setAttribute("aria-expanded", "true");
  const tools = skill.allowed_tools === null
    ? "It does not limit the tools: the conversation's tools stay as they are."
    : skill.allowed_tools.length
      ? ["While it is in use, the agent may use only: ",
          skill.allowed_tools.map((t, i) => [i ? ", " : "", h("code", {}, t)]), "."]
      : "While it is in use, the agent may use no tool.";
  clear(where, h("section.card.skill-reading", { "aria-label": `Skill ${skill.name}` },
    h("p.small", {}, tools),
    h("div.markdown", { html: renderMarkdown(skill.body) }),
    h("details", {}, h("summary", {}, "SKILL.md"), h("pre.skill-file", { tabindex: "0" }, h("code", {}, skill.file)))));
}

// Why the bundled model sees no skill (actors/runs/agent/small/leader.py: a led model
// is offered none), said where a person switches them on.
const SMALL_MODELS = "Not offered to a small local model (under a billion parameters, such as the bundled "
  + "SmolLM2-135M): offered a skill, it asked for the skill instead of doing the job. A larger model, or a "
  + "provider's, sees the skills switched on here.";

export function skillsPage(main) {
  const body = page(main, "Skills",
    "Instructions the agent reads when it needs them. Switch one off and the model no longer sees it.");
  const load = async () => {
    const skills = await api("GET", "/api/skills");
    if (inUseOnReread(body)) return;
    const adding = h("div");
    clear(body,
      h("p.muted.small-models", { role: "note" }, SMALL_MODELS),
      h("button.primary", { type: "button", onclick: () =>
        clear(adding, skillForm(null, (saved) => (saved ? load() : clear(adding)))) }, "New skill"),
      adding,
      h("ul.rows", { "aria-label": "Skills" }, skills.map((s) => {
        const toggle = h("input", { type: "checkbox", role: "switch", checked: s.enabled,
          "aria-label": `Use ${s.name}` });
        toggle.addEventListener("change", async () => {
          const ok = await attempt(() => api("PATCH", `/api/skills/${encodeURIComponent(s.name)}`, { enabled: toggle.checked }));
          if (!ok) toggle.checked = !toggle.checked;
        });
        const editing = h("div");
        const opener = h("button.link.skill-name", { type: "button", "aria-expanded": "false",
          "aria-label": `Read ${s.title || s.name}` }, h("strong", {}, s.title || s.name));
        opener.addEventListener("click", () => readSkill(editing, opener, s.name));
        return h("li.row", { "aria-label": s.title || s.name },
          h("div.row-main", {},
            opener, " ", h("code.muted", {}, s.name),
            h("span.badge", {}, s.source === "bundled" ? "shipped" : s.source === "user" ? "yours" : "workspace"),
            h("p", {}, s.description)),
          h("div.row-actions", {},
            h("label.switch", {}, toggle, h("span", {}, "On")),
            h("button.quiet", { type: "button", "aria-label": s.source === "user" ? `Edit ${s.name}` : `Edit a copy of ${s.name}`,
              onclick: () => {
                opener.setAttribute("aria-expanded", "false");
                clear(editing, skillForm(s, (saved) => (saved ? load() : clear(editing))));
              } },
              s.source === "user" ? "Edit" : "Edit a copy"),
            s.source === "user"
              ? deleteButton(s.name, async () => {
                  if (await attempt(() => api("DELETE", `/api/skills/${encodeURIComponent(s.name)}`))) load();
                })
              : null),
          editing);
      })));
  };
  return pageView(load, body);
}
