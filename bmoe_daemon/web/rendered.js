// What rendered Markdown (markdown.js's) does once it is on the page: a code block's
// Copy, a workspace file's link opening the preview, a fragment link finding its
// heading, and, while an answer streams, the parts it finished kept as they are.
//
// The clicks are taken where the conversation's items are drawn (one listener for all,
// so they work on HTML drawn again at any time). A streaming answer is drawn whole for
// each few words: `keepRendered` puts back the elements that came out the same, so a
// finished code block keeps its Copy button (and a click on it, or the keyboard) while
// the words after it are still coming.

import { toast } from "./ui.js";

const COPIED_MS = 1500;

// The HTML each element of rendered Markdown had when it was drawn, for the elements a
// click changed since (a Copy button that says "Copied").
const drawnAs = new WeakMap();

function htmlAsDrawn(el) {
  return drawnAs.has(el) ? drawnAs.get(el) : el.outerHTML;
}

// Remembers how `el` and what holds it (up to the Markdown's box) were drawn, before a
// click changes `el`. Nothing outside rendered Markdown is kept.
function rememberDrawn(el) {
  const box = el.closest(".markdown");
  if (!box) return;
  for (let at = el; at && at !== box; at = at.parentElement) if (!drawnAs.has(at)) drawnAs.set(at, at.outerHTML);
}

// `fresh` (a new drawing of `old`'s Markdown, not yet on the page) takes `old`'s
// elements wherever they came out the same, at any depth. Only elements drawn to the
// same HTML are kept, so what is shown is what `fresh` says.
export function keepRendered(old, fresh) {
  const olds = old.children;
  const news = [...fresh.children];
  for (let i = 0; i < news.length && i < olds.length; i++) {
    const was = olds[i];
    const now = news[i];
    if (was.tagName !== now.tagName) continue;
    if (htmlAsDrawn(was) === now.outerHTML) {
      const spare = now.cloneNode(false);
      was.replaceWith(spare); // keeps `old`'s indexes for the siblings still to come
      now.replaceWith(was);
    } else if (was.children.length && now.children.length) {
      keepRendered(was, now);
    }
  }
}

// Every rendered Markdown box under `oldRoot` whose counterpart under `newRoot` (same
// order) came out the same in places keeps those places.
export function keepRenderedIn(oldRoot, newRoot) {
  const olds = oldRoot.querySelectorAll(".markdown");
  const news = newRoot.querySelectorAll(".markdown");
  for (let i = 0; i < olds.length && i < news.length; i++) keepRendered(olds[i], news[i]);
}

// Puts `text` on the clipboard; false when the browser would not (a page over plain
// HTTP from another machine has no navigator.clipboard: the old way is tried there).
export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    /* refused: the old way below */
  }
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.style.position = "fixed";
  area.style.opacity = "0";
  document.body.append(area);
  area.select();
  let done = false;
  try {
    done = document.execCommand("copy");
  } catch {
    done = false;
  }
  area.remove();
  return done;
}

// Says "Copied" on `button` a moment, or why not in a toast.
export async function copyFrom(button, text) {
  const done = await copyText(text);
  if (!done) {
    toast("The browser did not let the page copy: select the text and copy it yourself.");
    return;
  }
  rememberDrawn(button);
  const label = button.dataset.label || button.textContent;
  button.dataset.label = label;
  button.textContent = "Copied";
  clearTimeout(Number(button.dataset.timer));
  button.dataset.timer = String(setTimeout(() => (button.textContent = label), COPIED_MS));
}

// GitHub's way of naming a heading in a link: lower case, spaces as hyphens, no
// punctuation but hyphens and underscores.
function slug(text) {
  return text.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, "").replace(/\s/g, "-");
}

// A click anywhere in rendered Markdown: answers whether it was one of its own.
// `preview(path)` opens a workspace file in the preview.
export function onRenderedClick(ev, { preview }) {
  const box = ev.target.closest(".markdown");
  if (!box) return false;
  const copy = ev.target.closest("button.copy-code");
  if (copy) {
    const code = copy.closest(".code-block")?.querySelector("pre code");
    if (code) copyFrom(copy, code.textContent);
    return true;
  }
  const file = ev.target.closest("button[data-file]");
  if (file) {
    preview(file.dataset.file);
    return true;
  }
  const link = ev.target.closest("a[href^='#']");
  if (link) {
    // The page's own address is its route: a fragment never changes it.
    ev.preventDefault();
    let want = link.getAttribute("href").slice(1);
    try {
      want = decodeURIComponent(want);
    } catch {
      /* a stray % is part of the name */
    }
    want = want.toLowerCase();
    const heading = [...box.querySelectorAll("h3, h4, h5, h6")].find((h) => slug(h.textContent) === want);
    if (heading) heading.scrollIntoView({ block: "start", behavior: "smooth" });
    return true;
  }
  return false;
}
