// Whether the local model is in memory, one answer for every view: /health's
// `loaded` and `model_state` when the page starts (or after a gap in the stream), then
// each `model` event's `loaded` and `state` (`asleep` once --idle-unload let it go,
// `loading` while a waiting turn loads it again, `loaded` once it serves).
//
// app.js feeds it; the models page, a conversation's header and its answer read it
// (`modelMemory()`) and are told of each change (`watchModelMemory(fn)`).

import { api } from "./api.js";

const memory = { loaded: undefined, state: undefined };
const watchers = new Set();
let serial = 0; // counts events: a /health answer older than one is not applied

function set(loaded, state) {
  if (memory.loaded === loaded && memory.state === state) return;
  memory.loaded = loaded;
  memory.state = state;
  for (const fn of watchers) fn(memory);
}

// `{loaded, state}` as the daemon last said (undefined before it said).
export function modelMemory() {
  return memory;
}

export function takeModelEvent(data) {
  serial++;
  if ("loaded" in data || "state" in data) set(data.loaded, data.state);
}

export async function readModelMemory() {
  const seen = serial;
  const health = await api("GET", "/health").catch(() => null);
  if (health && seen === serial) set(health.loaded, health.model_state);
}

// Calls `fn(memory)` at each change; answers the function that stops it.
export function watchModelMemory(fn) {
  watchers.add(fn);
  return () => watchers.delete(fn);
}
