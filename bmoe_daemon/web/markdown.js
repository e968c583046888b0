// Markdown to safe HTML (answers, plans, summaries), the code highlighter, and diffs.
//
// CommonMark with GitHub's extensions (tables, task lists, strikethrough, bare
// addresses) is marked's; code is highlighted by highlight.js's core with the
// languages below; DOMPurify then sanitizes what came out, a second line behind the
// renderer's own rules, which are:
// - raw HTML in the text is shown as the text it is, never taken as markup;
// - a link keeps an href only for http(s) (a new tab, rel="noopener noreferrer"),
//   mailto and a fragment; a relative one names a workspace file: a button
//   (data-file) that rendered.js opens in the file preview, since the daemon has no
//   page at that address; any other scheme (javascript:, data:, file:) leaves the text;
// - an image is never loaded (the page's Content-Security-Policy lets images come only
//   from the daemon, and a model's image address could be anywhere): it is a link to
//   the image, a file button, or its alt text.
// What the rendered HTML does once on the page (Copy, the file preview, a fragment) is
// rendered.js's. The vendored modules, their versions and licences: vendor/README.md.

import { Marked } from "./vendor/marked/marked.esm.js";
import DOMPurify from "./vendor/dompurify/purify.es.mjs";
import hljs from "./vendor/highlight/core.js";
import bash from "./vendor/highlight/languages/bash.min.js";
import c from "./vendor/highlight/languages/c.min.js";
import cpp from "./vendor/highlight/languages/cpp.min.js";
import csharp from "./vendor/highlight/languages/csharp.min.js";
import css from "./vendor/highlight/languages/css.min.js";
import diff from "./vendor/highlight/languages/diff.min.js";
import go from "./vendor/highlight/languages/go.min.js";
import ini from "./vendor/highlight/languages/ini.min.js";
import java from "./vendor/highlight/languages/java.min.js";
import javascript from "./vendor/highlight/languages/javascript.min.js";
import json from "./vendor/highlight/languages/json.min.js";
import markdown from "./vendor/highlight/languages/markdown.min.js";
import python from "./vendor/highlight/languages/python.min.js";
import rust from "./vendor/highlight/languages/rust.min.js";
import shell from "./vendor/highlight/languages/shell.min.js";
import sql from "./vendor/highlight/languages/sql.min.js";
import typescript from "./vendor/highlight/languages/typescript.min.js";
import xml from "./vendor/highlight/languages/xml.min.js";
import yaml from "./vendor/highlight/languages/yaml.min.js";

export function escapeHtml(text) {
  return String(text)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

// ---- code highlighting ----

const LANGUAGES = { bash, c, cpp, csharp, css, diff, go, ini, java, javascript, json, markdown, python, rust, shell,
  sql, typescript, xml, yaml };
for (const [name, grammar] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, grammar);
// Names models write that the grammars do not list themselves.
hljs.registerAliases(["py3", "python3"], { languageName: "python" });
hljs.registerAliases(["jsonc", "json5"], { languageName: "json" });
hljs.registerAliases(["kotlin", "kt"], { languageName: "java" });
hljs.configure({ classPrefix: "tok-" }); // the style sheet's token colours

// A streaming answer is drawn again for each few words: the blocks it finished are
// highlighted once, not each time.
const HIGHLIGHTED_KEPT = 64;
const highlighted = new Map();

function languageOf(lang) {
  const key = String(lang || "").toLowerCase().trim();
  return key && hljs.getLanguage(key) ? key : null;
}

// Highlights `code` (raw text) and returns safe HTML: the code escaped, with spans
// (class "tok-<kind>") around its tokens. A language not known here is only escaped.
export function highlight(code, lang) {
  const name = languageOf(lang);
  const text = String(code);
  if (!name) return escapeHtml(text);
  const key = `${name}\n${text}`;
  let html = highlighted.get(key);
  if (html === undefined) {
    try {
      html = hljs.highlight(text, { language: name, ignoreIllegals: true }).value;
    } catch {
      html = escapeHtml(text); // a grammar's fault shows the code plain, never loses it
    }
    if (highlighted.size >= HIGHLIGHTED_KEPT) highlighted.delete(highlighted.keys().next().value);
  } else {
    highlighted.delete(key); // kept as the newest
  }
  highlighted.set(key, html);
  return html;
}

// ---- links and images ----

// What a link's address is: "web", "mail", "fragment", "file" (a path, relative or
// not, in the workspace), or null for anything else. A scheme is looked for as a
// browser reads it, with the tabs and newlines it ignores taken out.
function linkKind(raw) {
  const url = String(raw || "").trim();
  const bare = url.replace(/[\u0000-\u0020\u007f]/g, "");
  if (!bare) return null;
  if (/^https?:\/\//i.test(url)) return "web";
  if (/^mailto:/i.test(url)) return "mail";
  if (url.startsWith("#")) return "fragment";
  if (/^[a-z][a-z0-9+.-]*:/i.test(bare) || bare.startsWith("//") || bare.includes("\\")) return null;
  return "file";
}

// The workspace path a relative link names: no query or fragment, percent-escapes read.
function filePath(url) {
  const path = String(url).trim().split(/[?#]/)[0];
  try {
    return decodeURIComponent(path);
  } catch {
    return path; // a stray % is part of the name
  }
}

// An address as an href: what is not allowed in one is percent-encoded, an escape
// already there kept. Null for one that cannot be (a lone surrogate).
function hrefOf(url) {
  try {
    return encodeURI(String(url).trim()).replace(/%25([0-9a-f]{2})/gi, "%$1");
  } catch {
    return null;
  }
}

function fileButton(path, inner, cls = "file-link") {
  return `<button type="button" class="link ${cls}" data-file="${escapeHtml(path)}" `
    + `title="Preview ${escapeHtml(path)}">${inner}</button>`;
}

// `inner`: the link's text, already rendered.
function renderLink(url, title, inner) {
  const kind = linkKind(url);
  const href = kind && kind !== "file" ? hrefOf(url) : null;
  const titled = title ? ` title="${escapeHtml(title)}"` : "";
  if (kind === "web" && href)
    return `<a href="${escapeHtml(href)}"${titled} target="_blank" rel="noopener noreferrer">${inner}</a>`;
  if ((kind === "mail" || kind === "fragment") && href)
    return `<a href="${escapeHtml(href)}"${titled} rel="noopener noreferrer">${inner}</a>`;
  if (kind === "file" && filePath(url)) return fileButton(filePath(url), inner);
  return inner;
}

function renderImage(url, alt, inLink) {
  if (inLink) return escapeHtml(alt); // the link around it is what opens
  const kind = linkKind(url);
  const label = escapeHtml(`Image: ${alt || url}`);
  const href = kind === "web" ? hrefOf(url) : null;
  if (href) return `<a href="${escapeHtml(href)}" class="image-link" target="_blank" rel="noopener noreferrer">${label}</a>`;
  if (kind === "file" && filePath(url)) return fileButton(filePath(url), label, "file-link image-link");
  return `<span class="image-alt">${escapeHtml(alt)}</span>`;
}

// ---- Markdown ----

function codeBlock(code, lang) {
  const label = lang || "text";
  const tag = lang ? ` data-lang="${escapeHtml(lang)}"` : "";
  return `<div class="code-block"><div class="code-head"><span class="code-lang">${escapeHtml(label)}</span>`
    + `<button type="button" class="quiet copy-code" aria-label="Copy the ${escapeHtml(label)} code">Copy</button>`
    + `</div><pre class="code"${tag}><code>${highlight(code, lang)}</code></pre></div>\n`;
}

let linkDepth = 0; // inside a link's text while it is rendered: an image there is only its alt text

const md = new Marked({
  gfm: true,
  breaks: true, // a single newline is a line break, as in GitHub's comments and in chat
  renderer: {
    html({ text, block }) {
      const shown = escapeHtml(text.replace(/\n+$/, ""));
      return block ? `<p>${shown.replace(/\n/g, "<br>")}</p>\n` : shown;
    },
    heading({ tokens, depth }) {
      const level = Math.min(depth + 2, 6); // h3..h6 inside a message
      return `<h${level}>${this.parser.parseInline(tokens)}</h${level}>\n`;
    },
    code({ text, lang }) {
      return codeBlock(text, (String(lang || "").match(/^\S*/) || [""])[0]);
    },
    // A task item's box is named, as any form control must be: its state says done or not.
    checkbox({ checked }) {
      return `<input ${checked ? 'checked="" ' : ""}disabled="" type="checkbox" aria-label="Done"> `;
    },
    link({ href, title, tokens }) {
      linkDepth++;
      try {
        return renderLink(href, title, this.parser.parseInline(tokens));
      } finally {
        linkDepth--;
      }
    },
    image({ href, text, tokens }) {
      const alt = tokens ? this.parser.parseInline(tokens, this.parser.textRenderer) : text;
      return renderImage(href, alt, linkDepth > 0);
    },
  },
});

// What may come out, whatever went in: the renderer's tags and attributes only, and an
// href only of the kinds above. The attributes named URI-safe hold plain words (DOMPurify
// would test them against the address pattern otherwise).
const PURIFY = {
  ALLOWED_TAGS: ["a", "blockquote", "br", "button", "code", "del", "div", "em", "h3", "h4", "h5", "h6", "hr", "input",
    "li", "ol", "p", "pre", "span", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul"],
  ALLOWED_ATTR: ["align", "aria-label", "checked", "class", "data-file", "data-lang", "disabled", "href", "rel", "start",
    "target", "title", "type"],
  ADD_URI_SAFE_ATTR: ["align", "aria-label", "data-file", "data-lang", "rel", "start", "target", "type"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:|#)/i,
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
};

// Renders Markdown text to safe HTML. Text still being written renders as far as it
// goes: an unclosed fence is code to the end.
export function renderMarkdown(text) {
  const source = String(text || "");
  let html;
  try {
    html = md.parse(source);
  } catch {
    html = `<p>${escapeHtml(source).replace(/\n/g, "<br>")}</p>`; // never an answer lost to a parser's fault
  }
  return DOMPurify.sanitize(html, PURIFY);
}

// A unified diff as safe HTML, one line a span coloured by its kind.
export function renderDiff(text) {
  return String(text || "")
    .split("\n")
    .map((line) => {
      let cls = "";
      if (line.startsWith("+++") || line.startsWith("---")) cls = "diff-file";
      else if (line.startsWith("@@")) cls = "diff-hunk";
      else if (line.startsWith("+")) cls = "diff-add";
      else if (line.startsWith("-")) cls = "diff-del";
      return cls ? `<span class="${cls}">${escapeHtml(line)}</span>` : escapeHtml(line);
    })
    .join("\n");
}
