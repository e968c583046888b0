// The limits the daemon enforces that the page shows or keeps to (GET /api/limits):
// a field's bounds and default, how many images go with a message, how long a
// denial's reason may be, where the daemon compacts, the most rows one read of the
// conversations gives. The daemon reads them from the constants of the modules that
// enforce them, so none is written here a second time.
//
// app.js reads them before it draws the first view (and the sidebar before its first
// read): from then on `limits` holds them.

import { api } from "./api.js";

export const limits = {};

let reading = null;

// The one read of the limits, shared by whoever waits for it; one that failed (the
// daemon out of reach) is tried again on the next call.
export function readLimits() {
  if (!reading) {
    reading = api("GET", "/api/limits").then(
      (got) => {
        Object.assign(limits, got);
      },
      (err) => {
        reading = null;
        throw err;
      },
    );
  }
  return reading;
}
