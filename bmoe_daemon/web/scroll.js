// Where the person has the conversation's log scrolled. At its bottom, it stays at the
// bottom as items come; scrolled up, the person keeps their place and "Jump to
// latest" offers the way down when what was drawn grew the log.

import { h } from "./dom.js";

const NEAR_BOTTOM_PX = 120;

export class LogScroll {
  constructor(log) {
    this.log = log;
    this.jumpBtn = h("button.jump-latest", { type: "button", hidden: true,
      onmousedown: (ev) => ev.preventDefault(), onclick: () => this.jumpToLatest() }, "Jump to latest");
    // back at the bottom by their own scrolling: the button has nothing left to offer
    this.log.addEventListener("scroll", () => {
      if (!this.jumpBtn.hidden && this.nearBottom) this.jumpBtn.hidden = true;
    }, { passive: true });
  }

  get nearBottom() {
    const log = this.log;
    return log.scrollHeight - log.scrollTop - log.clientHeight < NEAR_BOTTOM_PX;
  }

  // Draws, keeping the log at its bottom when it was there. Scrolled up, the person
  // keeps their place, and "Jump to latest" shows when what was drawn grew the log
  // (`news`: false for a change they made themselves, such as opening a card).
  keep(draw, news = true) {
    const log = this.log;
    const atBottom = this.nearBottom;
    const before = log.scrollHeight;
    draw();
    if (atBottom) log.scrollTop = log.scrollHeight;
    else if (news && log.scrollHeight > before) this.jumpBtn.hidden = false;
  }

  // To the bottom, with nothing left for "Jump to latest" to offer (the log drawn
  // whole, a message sent).
  toBottom() {
    this.log.scrollTop = this.log.scrollHeight;
    this.jumpBtn.hidden = true;
  }

  // "Jump to latest": to the bottom of the log. Clicked, it takes no focus (the keyboard
  // stays where it was); pressed from the keyboard, the keyboard goes to the log rather
  // than to the page's top when the button hides.
  jumpToLatest() {
    const held = this.jumpBtn.contains(document.activeElement);
    this.toBottom();
    if (held) this.log.focus({ preventScroll: true });
  }
}
