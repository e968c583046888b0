// What the settings pages share: the frame of a page (the way back, its heading and
// intro) and a Delete that asks once. Each page is a module of its own, routed to by
// app.js: skills.js, tasks.js, providers.js, connect.js, agent.js (the agent, its MCP
// servers and the person's hooks), workspaces.js and models.js.
//
// Each page is `{load, refresh, onEvent?}` over <main>; every change goes through the
// public API and the page is read again after it.

import { clear, h } from "./dom.js";

export function page(main, title, intro) {
  const body = h("div.page-body");
  clear(main, h("section.page", { "aria-labelledby": "page-title" },
    h("a.back", { href: "#/" }, "‹ Conversations"),
    h("h1#page-title", {}, title), intro ? h("p.muted", {}, intro) : null, body));
  return body;
}

let notes = 0;

// A Delete button that asks once: the first press turns it into "Delete?", a second
// one deletes; leaving it (focus elsewhere) or Escape takes the question back. `word`
// names the action ("Remove"); `note`, what else goes with it, is said beside the question.
export function deleteButton(name, action, word = "Delete", note = null) {
  const label = `${word} ${name}`;
  const button = h("button.quiet.danger", { type: "button", "aria-label": label }, word);
  let said = null;
  const disarm = () => {
    delete button.dataset.armed;
    button.textContent = word;
    button.setAttribute("aria-label", label);
    if (said) {
      said.remove();
      button.removeAttribute("aria-describedby");
      said = null;
    }
  };
  button.addEventListener("click", async () => {
    if (!button.dataset.armed) {
      button.dataset.armed = "yes";
      button.textContent = `${word}?`;
      button.setAttribute("aria-label", `Really ${word.toLowerCase()} ${name}?`);
      if (note) {  // what else goes with it, said beside the question
        said = h("span.small.delete-note", { id: `delete-note-${++notes}` }, note);
        button.after(said);
        button.setAttribute("aria-describedby", said.id);
      }
      return;
    }
    disarm();
    await action();
  });
  button.addEventListener("blur", disarm);
  button.addEventListener("keydown", (ev) => {
    if (ev.key === "Escape") disarm();
  });
  return button;
}
