// How the conversation view (conversation.js, its log log.js) draws one item: the
// person's messages, the answers, the cards (a question, a plan, a helper's task, any
// other call) and the notices, each with what the view keeps for it (waiting.js: a
// draft, an answer on its way, the daemon's refusal) and the view's actions. A
// helper's items are drawn the same way inside its card, so its approval cards are
// answered there, through the conversation's own routes.

import { h } from "./dom.js";
import { PLAN_TOOL, renderAssistant, renderNotice, renderPlan, renderTool, renderUser } from "./cards.js";
import { renderTask, renderTaskMessage, scoped, TASK_TOOL } from "./helpers.js";
import { copyFrom } from "./rendered.js";
import { ASK_USER, renderQuestion } from "./run.js";

// The items in the order they are shown: a compaction's notice heads the items it
// summarised (`groups`: each such item's notice), which follow it folded.
export function layoutOf(items) {
  const order = [];
  const groups = new Map();
  let pending = [];
  for (const item of items) {
    if (item.compacted) {
      pending.push(item);
    } else if (item.compaction && pending.length) {
      order.push(item, ...pending);
      for (const p of pending) groups.set(p.id, item.id);
      pending = [];
    } else {
      order.push(...pending, item);
      pending = [];
    }
  }
  order.push(...pending);
  return { order, groups };
}

// How many items fold under this compaction notice.
function foldCount(items, notice) {
  let n = 0;
  for (const owner of layoutOf(items).groups.values()) if (owner === notice.id) n++;
  return n;
}

export function renderItem(view, item) {
  switch (item.kind) {
    case "user":
      return renderUser(item, { editing: view.editing === item.id, busy: view.running,
        onEdit: () => view.startEdit(item),
        onCancel: () => {
          view.editing = null;
          view.log.drawItem(item);
        },
        onResend: (text) => view.resend(item, text),
        onFork: view.byId.get(item.id) === item ? () => view.fork(item) : null,
        changed: view.changed.get(item.id) || 0,
        changesHref: `#/c/${encodeURIComponent(view.conversationId)}/changes/${encodeURIComponent(item.id)}` });
    case "assistant":
      return renderAssistant(item, { loadingModel: view.loadingModel, rate: view.log.writingRate(item.id) ?? null,
        onCopy: (button) => copyFrom(button, item.text || ""),
        // the conversation's own answers; a helper's is not the person's to regenerate
        onRegenerate: view.byId.get(item.id) === item ? () => view.regenerate(item) : null,
        onFork: view.byId.get(item.id) === item ? () => view.fork(item) : null,
        last: view.log.lastAnswerId() === item.id, busy: view.running });
    case "tool":
      return renderCard(view, item);
    case "notice":
      return renderNotice(item, { count: item.compaction ? foldCount(view.items, item) : 0,
        open: view.log.unfolded.has(item.id), onFold: () => view.log.toggleFold(item),
        merged: view.progress.merged === item.id });
    default:
      return h("div.item.muted", {}, `(${item.kind})`);
  }
}

function renderCard(view, item) {
  const { waiting } = view;
  const kept = { draft: waiting.draftFor(item.id), busy: waiting.busy.has(item.id), error: waiting.errors.get(item.id) };
  if (item.tool === ASK_USER) {
    return renderQuestion(item, { ...kept, onAnswer: (answer) => waiting.act(item, "answer", { answer }),
      onDraft: () => waiting.errors.delete(item.id) });
  }
  if (item.tool === PLAN_TOOL) {
    return renderPlan(item, { ...kept, onDraft: () => waiting.redrawPlan(item),
      onDecide: (decision, feedback) => waiting.act(item, "approval", feedback ? { decision, feedback } : { decision }) });
  }
  if (item.tool === TASK_TOOL) return renderHelper(view, item);
  return renderTool(item, { ...kept, workspace: view.info && view.info.workspace, noApp: view.toolClients === 0,
    onDecide: (decision, rule) => waiting.act(item, "approval", rule ? { decision, rule } : { decision }),
    onPick: (i) => waiting.pickRule(item, i), onPreview: (file) => view.preview(file) });
}

// A task card; its helper's items drawn inside it while it is open. It opens by
// itself when one of them waits on the person, and stays open once that is answered.
function renderHelper(view, item) {
  const items = view.helpers.items(item.id);
  if (items.some((i) => i.kind === "tool" && i.state === "waiting")) view.log.tasksOpen.add(item.id);
  const open = view.log.tasksOpen.has(item.id);
  const drawn = open ? items.map((i, n) => scoped(
    i.kind === "user" ? renderTaskMessage(i, n === 0) : renderItem(view, i), i.id)) : [];
  return renderTask(item, { items, open, drawn, onToggle: () => view.log.toggleTask(item) });
}
