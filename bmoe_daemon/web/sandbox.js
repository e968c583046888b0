// Whether the model's commands run in a sandbox (/health's `sandbox`: kind, available,
// why, setting, confined), read once per page load: it is fixed when the daemon starts.
// The workspaces page and a conversation's header say so when they do not.

import { api } from "./api.js";
import { h } from "./dom.js";

export const NOT_SANDBOXED = "Commands are not sandboxed";

let pending = null;

export function sandboxStatus() {
  if (!pending) {
    pending = api("GET", "/health").then((b) => b.sandbox || null).catch(() => {
      pending = null; // read again next time
      return null;
    });
  }
  return pending;
}

// Why, in the person's words: the daemon's reason (a missing bwrap and how to install it).
export function notSandboxedWhy(status) {
  if (!status) return "";
  if (status.setting === "off") return "The daemon was started with --sandbox off: commands run with everything your account can reach.";
  return `Commands run with everything your account can reach: ${status.why || "no sandbox is available"}.`;
}

// A warning line for the workspaces page, or null when commands are confined.
export function notSandboxedBanner(status) {
  if (!status || status.confined) return null;
  return h("p.alert.warning.not-sandboxed", { role: "status" }, h("strong", {}, `${NOT_SANDBOXED}. `), notSandboxedWhy(status));
}
