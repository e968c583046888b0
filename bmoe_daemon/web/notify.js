// Browser notifications while this tab is hidden: a card waits for the person, or a
// run ended. Off until the person turns them on with the sidebar's switch: the
// browser's permission is asked for only then (a click), never when the page loads,
// and the switch can turn them off again without the browser's settings.
//
// What happened is read from the `conversation` events (every one says the state),
// each compared with the state the last one said.

import { h } from "./dom.js";

const STORE_KEY = "bmoe.notify";
const RUN_STATES = new Set(["running", "waiting"]);

const seen = new Map(); // conversation id -> the state its last event said

function supported() {
  return typeof window.Notification === "function";
}

function wanted() {
  return supported() && Notification.permission === "granted" && localStorage.getItem(STORE_KEY) === "on";
}

// What to say about a change of state, or null: nothing the person needs to know.
function noticeOf(before, data) {
  const title = data.title || "A conversation";
  if (data.state === "waiting" && before !== "waiting") {
    return { title: `Waiting for you: ${title}`, body: "The agent waits for your answer." };
  }
  if (RUN_STATES.has(before) && !RUN_STATES.has(data.state)) {
    const stopped = data.state !== "error" && data.end_reason === "stopped";
    return { title: `${data.state === "error" ? "Run failed" : stopped ? "Run stopped" : "Run finished"}: ${title}`,
      body: data.state === "error" ? "The run ended with an error." : stopped ? "The run stopped before it finished."
        : "The agent is done." };
  }
  return null;
}

// A `conversation` event: a notification when the tab is hidden and the change says one.
// `known`: the state the page held for it before (the list's row), for one not seen yet.
export function noteConversation(data, known) {
  const before = seen.has(data.id) ? seen.get(data.id) : known;
  seen.set(data.id, data.state);
  if (document.visibilityState !== "hidden" || !wanted()) return;
  const said = noticeOf(before, data);
  if (!said) return;
  // one per conversation: a newer one replaces it
  const note = new Notification(said.title, { body: said.body, tag: `bmoe-${data.id}`, icon: "/static/icon.svg" });
  note.addEventListener("click", () => {
    window.focus();
    location.hash = `#/c/${encodeURIComponent(data.id)}`;
    note.close();
  });
}

function hintText() {
  if (Notification.permission === "denied") return "Blocked in this browser's settings for this page.";
  return "When a card waits or a run ends while this tab is hidden.";
}

// The sidebar's switch; null where the browser has no notifications (a page not served
// from this machine or over HTTPS has none).
export function notifySwitch() {
  if (!supported()) return null;
  const box = h("input", { type: "checkbox", role: "switch", "aria-describedby": "notify-hint" });
  const hint = h("small.hint#notify-hint", {});
  const show = () => {
    box.checked = wanted();
    box.disabled = Notification.permission === "denied";
    hint.textContent = hintText();
  };
  box.addEventListener("change", async () => {
    if (!box.checked) {
      localStorage.setItem(STORE_KEY, "off");
      show();
      return;
    }
    if (Notification.permission !== "granted") {
      box.disabled = true; // until the browser answers
      await Notification.requestPermission();
    }
    if (Notification.permission === "granted") localStorage.setItem(STORE_KEY, "on");
    show();
  });
  show();
  return h("div.notify-row", {}, h("label.switch", {}, box, h("span", {}, "Notifications")), hint);
}
