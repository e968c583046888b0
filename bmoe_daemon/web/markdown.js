// A small, safe Markdown renderer and code highlighter.
//
// Safety: every character of the input is HTML-escaped before any markup is added,
// and the only markup added is a fixed set of tags without style or event
// attributes. A link keeps only http(s), mailto, a fragment or a relative path, and
// opens with rel="noopener noreferrer". The page's Content-Security-Policy forbids
// inline script besides.

export function escapeHtml(text) {
  return String(text)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

// ---- code highlighting ----

const KEYWORDS = {
  js: "async await break case catch class const continue debugger default delete do else export extends false finally for from function if import in instanceof let new null of return static super switch this throw true try typeof undefined var void while with yield",
  py: "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return self True try while with yield match case",
  c: "auto bool break case char class const constexpr continue default delete do double else enum explicit extern false float for friend goto if inline int long namespace new nullptr operator private protected public return short signed sizeof static struct switch template this throw true try typedef typename union unsigned using virtual void volatile while include define",
  rs: "as async await break const continue crate else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while",
  go: "break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false",
  sh: "if then else elif fi for while until do done case esac in function return local export set unset echo exit",
  java: "abstract boolean break byte case catch char class const continue default do double else enum extends final finally float for if implements import instanceof int interface long new null package private protected public return short static super switch this throw throws true false try void volatile while",
  sql: "select from where insert into values update set delete create table drop alter index join left right inner outer on group by order having limit as and or not null primary key",
};

const ALIASES = {
  javascript: "js", ts: "js", typescript: "js", jsx: "js", tsx: "js", mjs: "js", json: "js",
  python: "py", py3: "py",
  cpp: "c", "c++": "c", h: "c", hpp: "c", cc: "c", csharp: "java", cs: "java", kotlin: "java", kt: "java",
  rust: "rs", golang: "go", bash: "sh", shell: "sh", zsh: "sh", console: "sh",
};

const HASH_COMMENT = new Set(["py", "sh"]);
const SQL_COMMENT = new Set(["sql"]);

function languageOf(lang) {
  const key = String(lang || "").toLowerCase().trim();
  const name = ALIASES[key] || key;
  return KEYWORDS[name] ? name : null;
}

// Highlights `code` (raw text) and returns safe HTML: spans around comments,
// strings, numbers and keywords, every piece escaped.
export function highlight(code, lang) {
  const name = languageOf(lang);
  if (!name) return escapeHtml(code);
  const words = new Set(KEYWORDS[name].split(" "));
  const comment = HASH_COMMENT.has(name) ? "#[^\\n]*" : SQL_COMMENT.has(name) ? "--[^\\n]*" : "\\/\\/[^\\n]*|\\/\\*[\\s\\S]*?\\*\\/";
  const strings = name === "py" ? '"""[\\s\\S]*?"""|\'\'\'[\\s\\S]*?\'\'\'|' : name === "js" ? "`(?:\\\\[\\s\\S]|[^`\\\\])*`|" : "";
  const re = new RegExp(
    `(${comment})|(${strings}"(?:\\\\.|[^"\\\\\\n])*"|'(?:\\\\.|[^'\\\\\\n])*')|(\\b\\d[\\d_.]*(?:e[+-]?\\d+)?\\b|\\b0x[0-9a-f]+\\b)|([A-Za-z_$][\\w$]*)`,
    "gi",
  );
  let out = "";
  let last = 0;
  for (const m of code.matchAll(re)) {
    out += escapeHtml(code.slice(last, m.index));
    const [whole, com, str, num, word] = m;
    if (com) out += `<span class="tok-comment">${escapeHtml(com)}</span>`;
    else if (str) out += `<span class="tok-string">${escapeHtml(str)}</span>`;
    else if (num) out += `<span class="tok-number">${escapeHtml(num)}</span>`;
    else if (word && (words.has(word) || (name === "sql" && words.has(word.toLowerCase()))))
      out += `<span class="tok-keyword">${escapeHtml(word)}</span>`;
    else out += escapeHtml(whole);
    last = m.index + whole.length;
  }
  return out + escapeHtml(code.slice(last));
}

// ---- Markdown ----

function safeHref(raw) {
  const url = raw.trim();
  if (/^(https?:|mailto:)/i.test(url)) return url;
  if (/^[a-z][a-z0-9+.-]*:/i.test(url)) return null; // javascript:, data:, anything else
  if (url.startsWith("//")) return null;
  return url; // a fragment or a relative path
}

// Inline markup on one escaped line. Inline code is cut out first so nothing inside
// it is taken for markup.
function inline(raw) {
  const parts = raw.split(/(`+[^`]*`+)/);
  return parts
    .map((part, i) => {
      if (i % 2 === 1) {
        const code = part.replace(/^`+|`+$/g, "");
        return `<code>${escapeHtml(code)}</code>`;
      }
      let s = escapeHtml(part);
      s = s.replace(/\[([^\]]+)\]\(([^)\s]+)\)/g, (m, label, href) => {
        const url = safeHref(href.replace(/&amp;/g, "&"));
        if (url === null) return label;
        return `<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${label}</a>`;
      });
      s = s.replace(/(^|[\s(])(https?:\/\/[^\s<)]+)/g, (m, pre, url) =>
        `${pre}<a href="${url}" target="_blank" rel="noopener noreferrer">${url}</a>`);
      s = s.replace(/\*\*([^*]+)\*\*|__([^_]+)__/g, (m, a, b) => `<strong>${a || b}</strong>`);
      s = s.replace(/(^|[^*\w])\*([^*\s][^*]*)\*(?!\w)/g, (m, pre, a) => `${pre}<em>${a}</em>`);
      s = s.replace(/(^|[^_\w])_([^_\s][^_]*)_(?!\w)/g, (m, pre, a) => `${pre}<em>${a}</em>`);
      s = s.replace(/~~([^~]+)~~/g, "<del>$1</del>");
      return s;
    })
    .join("");
}

// Renders Markdown text to safe HTML: fenced code (highlighted), headings, lists,
// quotes, rules, paragraphs, and the inline markup above. An unclosed fence (the
// model is still writing it) renders as code to the end.
export function renderMarkdown(text) {
  const lines = String(text || "").replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  let para = [];
  let list = null; // {tag, items}
  const flushPara = () => {
    if (para.length) out.push(`<p>${para.map(inline).join("<br>")}</p>`);
    para = [];
  };
  const flushList = () => {
    if (list) out.push(`<${list.tag}>${list.items.map((t) => `<li>${inline(t)}</li>`).join("")}</${list.tag}>`);
    list = null;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const fence = line.match(/^\s*(```+|~~~+)\s*([\w+#.-]*)/);
    if (fence) {
      flushPara();
      flushList();
      const code = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) code.push(lines[i++]);
      const lang = fence[2] || "";
      const label = lang ? ` data-lang="${escapeHtml(lang)}"` : "";
      out.push(`<pre class="code"${label}><code>${highlight(code.join("\n"), lang)}</code></pre>`);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      flushPara();
      flushList();
      const level = Math.min(heading[1].length + 2, 6); // h3..h6 inside a message
      out.push(`<h${level}>${inline(heading[2])}</h${level}>`);
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) {
      flushPara();
      flushList();
      out.push("<hr>");
      continue;
    }
    const bullet = line.match(/^\s*[-*+]\s+(.*)$/);
    const numbered = line.match(/^\s*\d+[.)]\s+(.*)$/);
    if (bullet || numbered) {
      flushPara();
      const tag = bullet ? "ul" : "ol";
      if (!list || list.tag !== tag) {
        flushList();
        list = { tag, items: [] };
      }
      list.items.push((bullet || numbered)[1]);
      continue;
    }
    const quote = line.match(/^\s*>\s?(.*)$/);
    if (quote) {
      flushPara();
      flushList();
      out.push(`<blockquote>${inline(quote[1])}</blockquote>`);
      continue;
    }
    if (!line.trim()) {
      flushPara();
      flushList();
      continue;
    }
    if (list && /^\s{2,}\S/.test(line)) {
      list.items[list.items.length - 1] += " " + line.trim();
      continue;
    }
    flushList();
    para.push(line);
  }
  flushPara();
  flushList();
  return out.join("\n");
}

// A unified diff as safe HTML, one line a span coloured by its kind.
export function renderDiff(diff) {
  return String(diff || "")
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
