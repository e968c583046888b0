// The message box under a conversation: the text, images to send with it, the
// plan-mode switch, a goal for the run, Stop and Send, a note while the agent waits on
// a question, a plan or a helper's approval, and the daemon's refusal of what was done here.
//
// It holds what is being written; the view (conversation.js) sends it and says how
// the conversation stands with update(). The box grows with its text up to half the
// screen (the stylesheet's cap), then scrolls. Text typed and not sent is kept as the
// conversation's draft in this browser's localStorage: it comes back after switching
// conversations or reloading, goes once sent, and goes with the conversation
// (forgetDraft, on its conversation_deleted event). While the daemon is out of reach
// (connection.js) Send, Stop and plan mode wait and the box says why; the text stays
// and can still be written.

import { daemonReachable, watchConnection } from "./connection.js";
import { alertLine, clear, h } from "./dom.js";
import { limits } from "./limits.js";
import { attachMentions } from "./mention.js";
import { toast } from "./ui.js";

// The page's own cap on one image (the daemon takes a body of at most 64 MiB); how many
// go with one message is the daemon's (limits.images).
const MAX_IMAGE_BYTES = 20 * 1024 * 1024;

const NOTES = {
  question: "The agent asked you a question: answer it above, or stop the run. ",
  plan: "The agent's plan waits for you: approve or reject it above, or stop the run. ",
  helper: "A helper waits for your approval: answer it in its card above, or stop the run. ",
};
const GO_TO = { question: "Go to the question", plan: "Go to the plan", helper: "Go to the helper's card" };

const DRAFT_PREFIX = "bmoe.draft.";
const NO_IMAGES = "This conversation's model cannot see images (a local model here has no vision projector): "
  + "send text, or pick a provider's model that can.";
const OFFLINE_NOTE = "Not connected to the daemon: this can be sent once it is back. What you write here is kept.";

function draftKey(conversationId) {
  return DRAFT_PREFIX + conversationId;
}

function readDraft(conversationId) {
  try {
    return localStorage.getItem(draftKey(conversationId)) || "";
  } catch {
    return ""; // storage off: no drafts kept
  }
}

function keepDraft(conversationId, text) {
  try {
    if (text.trim()) localStorage.setItem(draftKey(conversationId), text);
    else localStorage.removeItem(draftKey(conversationId));
  } catch {
    /* storage off or full: the draft lives in the box only */
  }
}

// The conversation is gone: so is its draft.
export function forgetDraft(conversationId) {
  keepDraft(conversationId, "");
}

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

export class Composer {
  // `conversationId`: whose draft the box keeps; `onSend()`, `onStop()`,
  // `onPlanMode(on)` (answers true when the daemon took it), `onGoTo()` (to what
  // waits: the note's button).
  // `workspaceOf()`: the workspace whose files `@` mentions (mention.js), or null.
  constructor({ conversationId, onSend, onStop, onPlanMode, onGoTo, workspaceOf }) {
    this.conversationId = conversationId;
    this.images = [];
    this.goalOpen = false;
    this.textarea = h("textarea", {
      "aria-label": "Message", rows: "2", placeholder: "Message: Enter sends, Shift+Enter starts a new line",
      value: readDraft(conversationId),
    });
    this.textarea.addEventListener("input", () => {
      keepDraft(this.conversationId, this.textarea.value);
      this.fit();
    });
    this.textarea.addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        this.form.requestSubmit();
      }
    });
    this.textarea.addEventListener("paste", (ev) => {
      const files = [...(ev.clipboardData?.files || [])].filter((f) => f.type.startsWith("image/"));
      if (files.length) {
        ev.preventDefault();
        if (this.seesImages) this.addImages(files);
        else toast(NO_IMAGES);
      }
    });
    this.fileInput = h("input.visually-hidden", { type: "file", accept: "image/*", multiple: true, "aria-label": "Attach images" });
    this.fileInput.addEventListener("change", () => {
      this.addImages([...this.fileInput.files]);
      this.fileInput.value = "";
    });
    this.attachments = h("div.attachments", { role: "group", "aria-label": "Images to send" });
    // Offered only where the conversation's model may see images (update's `images`).
    this.attachLabel = h("label.button.quiet.attach", { hidden: true }, "Attach images", this.fileInput);
    this.seesImages = false;

    // Plan mode is the conversation's: the switch says it, and changes it between runs.
    this.planSwitch = h("input", { type: "checkbox", role: "switch", "aria-describedby": "plan-switch-hint" });
    this.planSwitch.addEventListener("change", async () => {
      const on = this.planSwitch.checked;
      this.planBusy = true;
      this.planSwitch.disabled = true;
      if (!(await onPlanMode(on))) this.planSwitch.checked = !on;
      this.planBusy = false;
      this.planSwitch.disabled = this.offline;
    });
    this.planLabel = h("label.switch.plan-switch", {}, this.planSwitch, h("span", {}, "Plan mode"));
    this.planHint = h("span.visually-hidden#plan-switch-hint", {},
      "The agent plans first and changes nothing until you approve the plan.");

    // A goal goes with the next message: the run does not end at an answer while it is open.
    this.goalInput = h("input#goal-input", { type: "text", autocomplete: "off", placeholder: "e.g. the tests pass",
      "aria-describedby": "goal-hint" });
    this.verifyBox = h("input", { type: "checkbox", checked: true });
    this.goalRow = h("div.goal-row#goal-row", { hidden: true },
      h("label.label", { for: "goal-input" }, "Goal"),
      this.goalInput,
      h("label.inline.verify", {}, this.verifyBox, h("span", {}, "Verify it when done")),
      h("small.hint#goal-hint", {}, "Goes with the message: the agent works until the goal is reached or blocked."));
    this.goalBtn = h("button.quiet.goal-toggle", { type: "button", "aria-expanded": "false", "aria-controls": "goal-row",
      onclick: () => this.toggleGoal() }, "Goal");

    this.stopBtn = h("button.stop", { type: "button", onclick: onStop }, "Stop");
    this.goTo = h("button.link", { type: "button", onclick: onGoTo });
    this.note = h("p.composer-note", { hidden: true }, h("span"), this.goTo);
    this.offlineNote = h("p.composer-offline#composer-offline", { hidden: true }, OFFLINE_NOTE);
    this.sendBtn = h("button.primary", { type: "submit" }, "Send");
    this.errorEl = alertLine("");
    this.form = h("form.composer", { "aria-label": "Write a message" },
      this.offlineNote,
      this.note,
      this.goalRow,
      this.attachments,
      this.textarea,
      h("div.composer-actions", {},
        this.attachLabel,
        this.planLabel,
        this.goalBtn,
        h("span.spacer"),
        this.stopBtn, this.sendBtn),
      this.planHint,
      this.errorEl);
    this.mentions = attachMentions(this.textarea, workspaceOf || (() => null));
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (!this.offline) onSend();
    });
    this.shown = { busy: false, sending: false, stopping: false, waiting: null, planMode: false, agentTools: false };
    this.setOffline(!daemonReachable());
    this.unwatch = watchConnection((reachable) => this.setOffline(!reachable));
  }

  // The box is gone (its conversation closed).
  close() {
    this.unwatch();
  }

  setOffline(offline) {
    this.offline = offline;
    this.offlineNote.hidden = !offline;
    if (offline) this.sendBtn.setAttribute("aria-describedby", this.offlineNote.id);
    else this.sendBtn.removeAttribute("aria-describedby");
    this.update(this.shown);
  }

  get element() {
    return this.form;
  }

  focus() {
    this.textarea.focus();
  }

  // The box as tall as its text (the stylesheet caps it at half the screen, where it
  // scrolls); call it once the box is on the page, and after its text is set.
  fit() {
    const box = this.textarea;
    box.style.height = "auto";
    if (!box.isConnected) return;
    box.style.height = `${box.scrollHeight + box.offsetHeight - box.clientHeight}px`;
  }

  // `busy`: a run is on; `waiting`: what the agent waits on ("question", "plan",
  // "helper" or null); `agentTools`: the built-in agent in a workspace (plan mode and goals apply).
  update(shown) {
    const { busy, sending, stopping, waiting, planMode, agentTools, images } = shown;
    this.shown = shown;
    this.seesImages = Boolean(images);
    this.attachLabel.hidden = !images;
    if (!images && this.images.length) {
      // The conversation moved to a model that cannot see them: they would be refused.
      this.images = [];
      this.renderAttachments();
      toast(NO_IMAGES);
    }
    this.stopBtn.hidden = !busy;
    this.stopBtn.disabled = stopping || this.offline;
    this.stopBtn.textContent = stopping ? "Stopping…" : "Stop";
    this.sendBtn.disabled = Boolean(busy) || sending || this.offline;
    this.sendBtn.title = busy && !this.offline ? "A run is going on: wait for it, or stop it." : "";
    const note = busy ? waiting : null;
    this.note.hidden = !note;
    this.note.dataset.kind = note || "";
    if (note) {
      this.note.firstChild.textContent = NOTES[note];
      this.goTo.textContent = GO_TO[note];
    }
    this.planLabel.hidden = !agentTools;
    if (!this.planBusy) this.planSwitch.checked = Boolean(planMode);
    this.planSwitch.disabled = this.planBusy || this.offline;
    this.goalBtn.hidden = !agentTools;
    if (!agentTools) this.showGoal(false);
  }

  toggleGoal() {
    this.showGoal(!this.goalOpen);
    if (this.goalOpen) this.goalInput.focus();
  }

  showGoal(open) {
    this.goalOpen = open;
    this.goalRow.hidden = !open;
    this.goalBtn.setAttribute("aria-expanded", String(open));
  }

  // What Send sends: {text, images?, goal?, verify?}, or null when there is nothing.
  message() {
    const text = this.textarea.value.trim();
    if (!text && !this.images.length) return null;
    const body = { text };
    if (this.images.length) body.images = this.images.map((i) => i.url);
    const goal = this.goalOpen ? this.goalInput.value.trim() : "";
    if (goal) {
      body.goal = goal;
      body.verify = this.verifyBox.checked;
    }
    return body;
  }

  // Send was pressed: the box empties at once (the run's events may show the message,
  // its goal and its first answer before the daemon's reply to the send), and answers
  // what it held, for `giveBack` should the daemon refuse it. The draft stays kept until
  // `sent()`, so a reload in between loses nothing.
  take() {
    const held = { text: this.textarea.value, images: this.images, goal: this.goalInput.value,
      goalOpen: this.goalOpen, verify: this.verifyBox.checked };
    this.textarea.value = "";
    this.fit();
    this.images = [];
    this.renderAttachments();
    this.goalInput.value = "";
    this.verifyBox.checked = true;
    this.showGoal(false);
    return held;
  }

  // The send was refused: what `take()` emptied comes back, before anything typed since.
  giveBack(held) {
    const typed = this.textarea.value.trim();
    this.textarea.value = typed ? `${held.text}\n${typed}` : held.text;
    this.fit();
    this.images = held.images.concat(this.images);
    this.renderAttachments();
    if (!this.goalInput.value.trim()) {
      this.goalInput.value = held.goal;
      this.verifyBox.checked = held.verify;
      if (held.goalOpen) this.showGoal(true);
    }
  }

  // The message went: its draft goes too (the goal now shows in the header).
  sent() {
    if (!this.textarea.value.trim()) forgetDraft(this.conversationId);
    this.say("");
  }

  // The daemon's refusal of what was done here, or "" to clear it.
  say(text) {
    this.errorEl.textContent = text;
    this.errorEl.hidden = !text;
  }

  async addImages(files) {
    for (const file of files) {
      if (this.images.length >= limits.images.max) {
        toast(`At most ${limits.images.max} images go with one message.`);
        break;
      }
      if (!file.type.startsWith("image/")) continue;
      if (file.size > MAX_IMAGE_BYTES) {
        toast(`${file.name} is larger than ${MAX_IMAGE_BYTES / 1024 / 1024} MiB.`);
        continue;
      }
      this.images.push({ name: file.name, url: await readAsDataUrl(file) });
    }
    this.renderAttachments();
  }

  renderAttachments() {
    clear(this.attachments, this.images.map((img, i) =>
      h("figure.thumb", {},
        h("img", { src: img.url, alt: img.name }),
        h("button.quiet", { type: "button", "aria-label": `Remove ${img.name}`, onclick: () => {
          this.images.splice(i, 1);
          this.renderAttachments();
        } }, "×"))));
  }
}
