// A form's refusals beside the field they concern, in plain words: the daemon's error
// text (which names API fields, like `schedule.at`) is matched against a form's rules
// and said again for a person next to that field (aria-invalid, aria-describedby).

import { ApiError } from "./api.js";
import { h } from "./dom.js";
import { problem } from "./ui.js";

// `rules`: [pattern, control, words] — `words` a string, or a function of the match.
// Answers {control, text} for the first rule that matches `message`, else null.
export function explain(message, rules) {
  for (const [pattern, control, words] of rules) {
    const m = pattern.exec(message);
    if (m) return { control, text: typeof words === "function" ? words(m) : words };
  }
  return null;
}

// The error shown beside `control` (an input, or a fieldset), with `text`.
export function sayAt(control, text) {
  const id = `${control.id || (control.id = `fe-${++count}`)}-error`;
  let line = document.getElementById(id);
  if (!line) {
    line = h("p.error-text.field-error", { id, role: "alert" });
    // In the field's box, else in the control itself when it holds others (a fieldset
    // of days), else right after it (an input in a row of controls cannot hold a line).
    const box = control.closest(".field") || (/^(INPUT|SELECT|TEXTAREA)$/.test(control.tagName) ? null : control);
    if (box) box.append(line);
    else control.after(line);
  }
  line.textContent = text;
  line.hidden = false;
  control.setAttribute("aria-invalid", "true");
  const described = (control.getAttribute("aria-describedby") || "").split(" ").filter(Boolean);
  if (!described.includes(id)) control.setAttribute("aria-describedby", [...described, id].join(" "));
}
let count = 0;

// The error beside `control` gone, and the control no longer marked invalid.
export function unsay(control) {
  const id = `${control.id}-error`;
  const line = control.id ? document.getElementById(id) : null;
  if (line) line.remove();
  control.removeAttribute("aria-invalid");
  const described = (control.getAttribute("aria-describedby") || "").split(" ").filter((d) => d && d !== id);
  if (described.length) control.setAttribute("aria-describedby", described.join(" "));
  else control.removeAttribute("aria-describedby");
}

// Runs a form's API action: every error beside `controls` is cleared first; a refusal
// a rule knows is said beside its field (which takes the focus), any other in the
// form's own line `where`, in the daemon's words. Answers the result, or undefined.
export async function attemptAt(where, rules, controls, action) {
  for (const c of controls) unsay(c);
  where.textContent = "";
  where.hidden = true;
  try {
    return await action();
  } catch (err) {
    const said = err instanceof ApiError ? explain(err.message, rules) : null;
    if (said) {
      sayAt(said.control, said.text);
      (said.control.matches("fieldset") ? said.control.querySelector("input") : said.control).focus();
    } else {
      where.textContent = problem(err);
      where.hidden = false;
    }
    return undefined;
  }
}
