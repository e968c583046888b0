// The daemon's event stream, read with fetch() so it can carry the key.
//
// EventSource cannot send an Authorization header, so the stream is read by hand:
// each event is `id:`, `event:` and `data:` lines ended by a blank line. After a drop
// (sleep, a lost network, the daemon restarting) it reconnects with `Last-Event-ID`
// and the daemon replays what it still holds. When the first event after a reconnect
// is not the next number (the daemon no longer held them, or it restarted and counts
// from 1 again), what was missed is gone: `onResync` asks the page to re-read its
// state whole. The conversations whose tool calls this page answers (`serve`) go in the
// stream's address (`?tools=`): the daemon counts the page as their app while it is open.

import { askKey, authHeaders } from "./api.js";

const SILENCE_MS = 40000; // the daemon pings every 15 s: this long without a byte is a dead line
const RETRY_MS = [250, 1000, 2000, 5000];

export class EventStream {
  constructor({ onEvent, onResync, onStatus }) {
    this.onEvent = onEvent;
    this.onResync = onResync;
    this.onStatus = onStatus;
    this.lastId = null;
    this.stopped = false;
    this.controller = null;
    this.connected = false;
    this.served = "";
    this.switching = false;
  }

  // The page answers these conversations' tool calls from now on: the stream opens
  // again naming them (and replays what came meanwhile, as after any drop).
  serve(ids) {
    const served = [...ids].join(",");
    if (served === this.served) return;
    this.served = served;
    if (!this.controller) return; // the first connection names them
    this.switching = true; // a new address, not a drop: no "Reconnecting…", no wait
    this.controller.abort();
  }

  start() {
    this.loop();
  }

  stop() {
    this.stopped = true;
    if (this.controller) this.controller.abort();
  }

  // Drops the current connection (as a lost network would): the loop reconnects.
  reconnect() {
    if (this.controller) this.controller.abort();
  }

  setStatus(connected) {
    this.connected = connected;
    this.onStatus(connected);
  }

  async loop() {
    let failures = 0;
    let unreachable = false;
    while (!this.stopped) {
      const resumed = this.lastId !== null;
      this.controller = new AbortController();
      let watchdog = null;
      try {
        const headers = authHeaders({ Accept: "text/event-stream" });
        if (resumed) headers["Last-Event-ID"] = String(this.lastId);
        let resp;
        try {
          const url = this.served ? `/api/events?tools=${encodeURIComponent(this.served)}` : "/api/events";
          resp = await fetch(url, { headers, signal: this.controller.signal, cache: "no-store" });
        } catch (err) {
          unreachable = true; // no answer at all, not a line that dropped
          throw err;
        }
        if (resp.status === 401) {
          await askKey(true);
          continue;
        }
        if (!resp.ok || !resp.body) throw new Error(`events answered ${resp.status}`);
        failures = 0;
        // The daemon could not be reached: it may have restarted, and counts its events
        // from 1 again, so what this page holds may be stale. Read it again whole.
        if (resumed && unreachable) this.onResync();
        unreachable = false;
        this.setStatus(true);
        const controller = this.controller;
        const arm = () => {
          clearTimeout(watchdog);
          watchdog = setTimeout(() => controller.abort(), SILENCE_MS);
        };
        arm();
        let first = true;
        await this.read(resp.body, arm, (id) => {
          if (first && resumed && id !== this.lastId + 1) this.onResync();
          first = false;
        });
      } catch (err) {
        if (this.stopped) return;
      } finally {
        clearTimeout(watchdog);
      }
      if (this.switching && !this.stopped) {
        this.switching = false;
        continue;
      }
      this.setStatus(false);
      if (this.stopped) return;
      await new Promise((r) => setTimeout(r, RETRY_MS[Math.min(failures++, RETRY_MS.length - 1)]));
    }
  }

  async read(body, arm, checkFirst) {
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = "";
    let id = null;
    let name = "message";
    let data = "";
    let connectedSeen = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      arm();
      buf += value;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, "");
        buf = buf.slice(nl + 1);
        if (line.startsWith(":")) {
          if (!connectedSeen) {
            connectedSeen = true;
            // The first comment says the stream is subscribed: from here nothing is missed,
            // so a fresh start reads the state now.
            if (this.lastId === null) this.onResync();
          }
          continue;
        }
        if (line === "") {
          if (name === "lagged") return; // the daemon dropped us: reconnect and replay
          if (data) {
            let parsed = null;
            try {
              parsed = JSON.parse(data);
            } catch {
              parsed = null;
            }
            if (id !== null) {
              checkFirst(id);
              this.lastId = id;
            }
            if (parsed !== null) this.onEvent(name, parsed, id);
          }
          id = null;
          name = "message";
          data = "";
          continue;
        }
        const colon = line.indexOf(":");
        const fieldName = colon < 0 ? line : line.slice(0, colon);
        const fieldValue = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
        if (fieldName === "id") id = Number.parseInt(fieldValue, 10);
        else if (fieldName === "event") name = fieldValue;
        else if (fieldName === "data") data += (data ? "\n" : "") + fieldValue;
      }
    }
  }
}
