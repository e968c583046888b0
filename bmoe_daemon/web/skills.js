// The skills page: the skills the agent may read (shipped, the person's, a
// workspace's), each switched on or off; the person's own are written and deleted
// here, a shipped one is edited as a copy.

import { api } from "./api.js";
import { alertLine, clear, field, h } from "./dom.js";
import { attemptAt } from "./fielderrors.js";
import { deleteButton, page } from "./settings.js";
import { attempt, pageView } from "./ui.js";

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

export function skillsPage(main) {
  const body = page(main, "Skills",
    "Instructions the agent reads when it needs them. Switch one off and the model no longer sees it.");
  const load = async () => {
    const skills = await api("GET", "/api/skills");
    const adding = h("div");
    clear(body,
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
        return h("li.row", { "aria-label": s.title || s.name },
          h("div.row-main", {},
            h("strong", {}, s.title || s.name), " ", h("code.muted", {}, s.name),
            h("span.badge", {}, s.source === "bundled" ? "shipped" : s.source === "user" ? "yours" : "workspace"),
            h("p", {}, s.description)),
          h("div.row-actions", {},
            h("label.switch", {}, toggle, h("span", {}, "On")),
            h("button.quiet", { type: "button", "aria-label": s.source === "user" ? `Edit ${s.name}` : `Edit a copy of ${s.name}`,
              onclick: () =>
              clear(editing, skillForm(s, (saved) => (saved ? load() : clear(editing)))) },
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
