// Whether this page reaches the daemon, said where the person looks at every width: a
// banner across the top while the event stream is down ("Not connected…"), then
// "Reconnected" for a few seconds once it is back.
//
// app.js feeds it the stream's state (`streamStatus(connected)`); the message box
// asks it (`daemonReachable()`) and is told of each change (`watchConnection(fn)`).
// A drop the stream mends at once (a lagged subscriber, a line cut and reconnected in
// 250 ms) is not said, and neither is the wait for the first connection unless it
// lasts: both only after DOWN_GRACE_MS. While the key dialog asks for the daemon's
// key, the dialog says what is wrong.

const DOWN_GRACE_MS = 1000;
const BACK_SHOWN_MS = 3000;
const DOWN_TEXT = "Not connected to the daemon. Trying again… Messages cannot be sent until it is back.";

const conn = {
  up: false, // the stream, as events.js last said
  everUp: false,
  said: false, // the banner says it is down (what the message box follows)
  downTimer: null,
  backTimer: null,
};
const watchers = new Set();

function banner() {
  return document.getElementById("conn-banner");
}

function show(text, kind) {
  const el = banner();
  el.textContent = text;
  el.dataset.kind = kind || "";
}

function sayDown() {
  conn.downTimer = null;
  if (conn.up) return;
  if (document.getElementById("key-dialog")?.open) {
    conn.downTimer = setTimeout(sayDown, DOWN_GRACE_MS); // the key dialog says it
    return;
  }
  clearTimeout(conn.backTimer);
  show(DOWN_TEXT, "down");
  setSaid(true);
}

function setSaid(said) {
  if (conn.said === said) return;
  conn.said = said;
  for (const fn of watchers) fn(!said);
}

function armDown() {
  if (!conn.downTimer && !conn.said) conn.downTimer = setTimeout(sayDown, DOWN_GRACE_MS);
}

// The event stream connected (true) or dropped (false).
export function streamStatus(connected) {
  const wasUp = conn.everUp;
  conn.up = connected;
  if (!connected) {
    armDown();
    return;
  }
  conn.everUp = true;
  clearTimeout(conn.downTimer);
  conn.downTimer = null;
  if (!conn.said) return;
  setSaid(false);
  show(wasUp ? "Reconnected." : "Connected to the daemon.", "back");
  clearTimeout(conn.backTimer);
  conn.backTimer = setTimeout(() => show("", ""), BACK_SHOWN_MS);
}

// False while the banner says the daemon is out of reach.
export function daemonReachable() {
  return !conn.said;
}

// Calls `fn(reachable)` at each change of daemonReachable(); answers the function
// that stops it.
export function watchConnection(fn) {
  watchers.add(fn);
  return () => watchers.delete(fn);
}

armDown(); // the page starts unconnected
