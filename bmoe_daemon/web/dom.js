// Building the page from plain DOM calls: text always goes in as text.

// h("button.primary", {onclick, "aria-label": "Send"}, "Send") -> <button class="primary">
// h("h1#title.big") -> <h1 id="title" class="big">
export function h(tag, attrs = {}, ...children) {
  const parts = tag.match(/[.#]?[^.#]+/g) || ["div"];
  const name = parts[0].startsWith(".") || parts[0].startsWith("#") ? "div" : parts.shift();
  const el = document.createElement(name);
  const classes = parts.filter((p) => p.startsWith(".")).map((p) => p.slice(1));
  const id = parts.find((p) => p.startsWith("#"));
  if (classes.length) el.className = classes.join(" ");
  if (id) el.id = id.slice(1);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = [el.className, value].filter(Boolean).join(" ");
    else if (key === "html") el.innerHTML = value; // only ever the renderer's safe HTML
    else if (key === "value") el.value = value;
    else if (key === "checked") el.checked = Boolean(value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

// Whether the keyboard is in a place one types in (a field, a text box, an editable
// element): a view drawn meanwhile leaves it there rather than taking the focus.
export function typingIn(el = document.activeElement) {
  return Boolean(el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName)));
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// A labelled form field: the label names the control, the hint describes it.
let fieldCount = 0;
export function field(label, control, hint) {
  if (!control.id) control.id = `field-${++fieldCount}`;
  const hintEl = hint ? h("small.hint", { id: `${control.id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div.field", {}, h("label.label", { for: control.id }, label), control, hintEl);
}

export function select(attrs, options, current) {
  return h(
    "select",
    attrs,
    options.map(([value, text]) => h("option", { value, selected: value === current ? true : null }, text)),
  );
}

export function timeAgo(seconds) {
  if (!seconds) return "";
  const d = Date.now() / 1000 - seconds;
  if (d < 45) return "just now";
  if (d < 3600) return `${Math.round(d / 60)} min ago`;
  if (d < 86400) return `${Math.round(d / 3600)} h ago`;
  return new Date(seconds * 1000).toLocaleDateString();
}

export function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : "never";
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

// A short local time for a message: "14:05" today, "Mar 3, 14:05" earlier this year,
// "Mar 3 2025, 14:05" before it. `now` is injectable for tests.
export function shortTime(seconds, now = new Date()) {
  const d = new Date(seconds * 1000);
  const clock = `${String(d.getHours()).padStart(2, "0")}:${String(d.getMinutes()).padStart(2, "0")}`;
  if (d.toDateString() === now.toDateString()) return clock;
  const year = d.getFullYear() === now.getFullYear() ? "" : ` ${d.getFullYear()}`;
  return `${MONTHS[d.getMonth()]} ${d.getDate()}${year}, ${clock}`;
}

// When an item was written, as a <time> with the full date in its title; nothing for
// an item that carries no time.
export function timeStamp(seconds) {
  if (!Number.isFinite(seconds) || seconds <= 0) return null;
  const d = new Date(seconds * 1000);
  return h("time.stamp", { datetime: d.toISOString(), title: d.toLocaleString() }, shortTime(seconds));
}

export function sizeText(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 * 1024 * 1024) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `${(bytes / 1024 / 1024 / 1024).toFixed(2)} GiB`;
}

// Where an action's refusal is said, beside the action: hidden while there is none.
export function alertLine(error) {
  return h("p.error-text.form-error", { role: "alert", hidden: !error }, error || "");
}

// A press holds the drawing of what it is on until its release (PRESS_HOLD_MS at most):
// an element drawn again between a press and its release takes no click (the browser
// clicks what both were on), so a button clicked while a list, a card or a page changes
// would do nothing. `heldBy(el, fn)`: whether a press on `el` holds it; if so, fn runs in
// the frame after the release, after its click (once however often asked).
const PRESS_HOLD_MS = 1000;
const press = { target: null, timer: 0, waiting: new Set() };

function released() {
  if (press.target === null) return;
  clearTimeout(press.timer);
  press.target = null;
  requestAnimationFrame(() => {
    if (press.target !== null) return; // pressed again: its release runs them
    const fns = [...press.waiting];
    press.waiting.clear();
    fns.forEach((fn) => fn());
  });
}

window.addEventListener("pointerdown", (ev) => {
  clearTimeout(press.timer);
  press.target = ev.target;
  press.timer = setTimeout(released, PRESS_HOLD_MS);
}, true);
for (const name of ["pointerup", "pointercancel"]) window.addEventListener(name, released, true);

export function heldBy(el, fn) {
  if (!(press.target instanceof Node && el.contains(press.target))) return false;
  press.waiting.add(fn);
  return true;
}
