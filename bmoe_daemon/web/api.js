// The daemon's HTTP API, with its key when it runs with one.
//
// A daemon started with --api-key-file answers 401 to a request without the key: the
// page then asks for it once, keeps it in this browser's localStorage and sends it as
// `Authorization: Bearer <key>` from then on.

const KEY_STORE = "bmoe.apiKey";

// `data`: the refusal's whole body (a 409 `changed_since` names its `paths`).
export class ApiError extends Error {
  constructor(status, code, message, data = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.data = data;
  }
}

export function apiKey() {
  try {
    return localStorage.getItem(KEY_STORE) || "";
  } catch {
    return "";
  }
}

export function setApiKey(key) {
  try {
    if (key) localStorage.setItem(KEY_STORE, key);
    else localStorage.removeItem(KEY_STORE);
  } catch {
    /* storage off: the key lives for this page only */
  }
  memoryKey = key;
}

let memoryKey = "";
let asking = null;

export function authHeaders(extra = {}) {
  const key = apiKey() || memoryKey;
  return key ? { ...extra, Authorization: `Bearer ${key}` } : { ...extra };
}

// Asks for the key with the page's key dialog; one question however many requests wait.
export function askKey(wrong) {
  if (asking) return asking;
  const dialog = document.getElementById("key-dialog");
  const form = dialog.querySelector("form");
  const input = dialog.querySelector("input");
  dialog.querySelector(".key-wrong").hidden = !wrong;
  input.value = "";
  asking = new Promise((resolve) => {
    form.onsubmit = (ev) => {
      ev.preventDefault();
      setApiKey(input.value.trim());
      dialog.close();
      asking = null;
      resolve();
    };
  });
  dialog.showModal();
  input.focus();
  return asking;
}

// Sends a request; the body (an object) goes as JSON. Answers the parsed JSON, or
// throws an ApiError carrying the daemon's {error, code}.
export async function api(method, path, body) {
  return (await request(method, path, body)).data;
}

// As api(), answering the response's headers too: `{data, headers}` (a page of the
// conversation list names the next in X-Next-Before).
export async function request(method, path, body) {
  for (let attempt = 0; ; attempt++) {
    const headers = authHeaders(body !== undefined ? { "Content-Type": "application/json" } : {});
    const resp = await fetch(path, {
      method,
      headers,
      body: body !== undefined ? JSON.stringify(body) : undefined,
      cache: "no-store",
    });
    if (resp.status === 401 && attempt < 5) {
      await askKey(attempt > 0 || Boolean(apiKey()));
      continue;
    }
    const text = await resp.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!resp.ok) {
      const message = (data && data.error) || `The daemon answered ${resp.status}.`;
      throw new ApiError(resp.status, (data && data.code) || "internal", message, data);
    }
    return { data, headers: resp.headers };
  }
}

// A workspace file as a blob: URL, for the preview frame when the daemon needs a key
// (a frame cannot send the Authorization header itself).
export async function fileBlobUrl(path) {
  const resp = await fetch(path, { headers: authHeaders(), cache: "no-store" });
  if (!resp.ok) {
    let message = `The daemon answered ${resp.status}.`;
    try {
      message = (await resp.json()).error || message;
    } catch {
      /* not JSON */
    }
    throw new ApiError(resp.status, "preview", message);
  }
  return URL.createObjectURL(await resp.blob());
}

export function keyInUse() {
  return Boolean(apiKey() || memoryKey);
}
