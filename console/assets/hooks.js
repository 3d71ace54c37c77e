// Hooks: one stored hook found by its id: what the node received
// (headers, body), the verification verdict, the delivery attempts per
// sink, and a redelivery to a sink whose delivery is not pending.
import { api, tenantPath, query, ApiError, validEvent, badEvent } from "./api.js";
import { h, table, notice, field, button, when } from "./dom.js";

export async function render(ctx) {
  const { root, params } = ctx;
  const input = h("input", { id: "hook-id", size: 34, value: params.get("id") || "", placeholder: "evt_...", class: "mono" });
  const form = h("form", { id: "hook-form", class: "inline-form" }, field("Event id", "event_id", input), h("button", { type: "submit", id: "hook-find" }, "Find"));
  const out = h("div", { id: "hook" });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const id = input.value.trim();
    if (!validEvent(id)) {
      out.replaceChildren(notice("error", badEvent(id)));
      return;
    }
    history.replaceState(null, "", "#/hooks?" + new URLSearchParams({ id }));
    show(ctx, id, out);
  });
  root.append(h("section", { class: "panel" }, form), out);
  if (input.value) await show(ctx, input.value.trim(), out);
}

// show looks hook id up; an id that is not one is never put in a path.
async function show(ctx, id, out) {
  const { tenant } = ctx;
  if (!validEvent(id)) {
    out.replaceChildren(notice("error", badEvent(id)));
    return;
  }
  out.replaceChildren(notice("info", "Looking…"));
  let hook, attempts;
  try {
    hook = await api("GET", tenantPath(tenant, "hooks", id));
    if (ctx.stale()) return;
  } catch (e) {
    if (ctx.stale()) return;
    const hint = e instanceof ApiError && e.status === 404 ? " (a hook is found by its tenant and id: is the tenant right?)" : "";
    out.replaceChildren(notice("error", String(e) + hint));
    return;
  }
  try {
    attempts = (await api("GET", tenantPath(tenant, "hooks", id, "attempts"))).attempts || [];
    if (ctx.stale()) return;
  } catch (e) {
    if (ctx.stale()) return;
    attempts = null;
    out.append(notice("error", "attempts: " + e));
  }
  const v = hook.verification || {};
  const verdict = v.verified ? `verified by ${v.verifier}` : v.flagged ? `NOT verified (${v.verifier || "no verifier"}), delivered flagged` : `not verified (${v.verifier || "verify: none"})`;
  const info = table("data kv", ["", ""], [
    ["id", hook.id], ["seq", hook.seq], ["tenant", hook.tenant_id], ["source", hook.source_id],
    ["received", when(hook.received_at)], ["from", hook.remote_addr || ""], ["event type", hook.event_type || ""],
    ["dedupe key", hook.dedupe_key || ""], ["verification", verdict],
  ]);
  const headers = table("data", ["Header", "Value"],
    Object.entries(hook.headers || {}).flatMap(([k, vs]) => vs.map((x) => [k, x])));
  const body = h("pre", { class: "body", id: "hook-body" }, prettyBody(hook));
  const nodes = [
    h("section", { class: "panel" }, h("h2", {}, "Hook"), info),
    h("section", { class: "panel" }, h("h2", {}, "Headers"), headers),
    h("section", { class: "panel" }, h("h2", {}, `Body (${hook.body_encoding})`), body),
  ];
  const del = h("section", { class: "panel", id: "hook-deliveries" }, h("h2", {}, "Deliveries"));
  nodes.push(del);
  out.replaceChildren(...nodes);
  if (attempts) await deliveries(ctx, hook, attempts, del);
}

function prettyBody(hook) {
  if (hook.body_encoding === "claim") return "delivered by reference: " + JSON.stringify(hook.body_claim);
  if (hook.body_encoding !== "utf8") return hook.body;
  try { return JSON.stringify(JSON.parse(hook.body), null, 2); } catch { return hook.body; }
}

// deliveries shows each sink's attempts and its state, and offers a
// redelivery to each sink not pending (a dead letter's is its retry).
async function deliveries(ctx, hook, attempts, panel) {
  const { tenant } = ctx;
  let dead = [];
  try {
    const until = new Date(Date.parse(hook.received_at) + 1000).toISOString();
    const page = await api("GET", tenantPath(tenant, "deliveries") + query({ state: "dead", source: hook.source_id, since: hook.received_at, until, limit: 1000 }));
    dead = (page.deliveries || []).filter((d) => d.event_id === hook.id);
    if (ctx.stale()) return;
  } catch (e) {
    if (ctx.stale()) return;
    panel.append(notice("error", "dead letters: " + e));
  }
  const sinks = new Map();
  for (const a of attempts) {
    if (!sinks.has(a.sink)) sinks.set(a.sink, []);
    sinks.get(a.sink).push(a);
  }
  for (const d of dead) if (!sinks.has(d.sink)) sinks.set(d.sink, []);
  if (!sinks.size) panel.append(h("p", {}, "No attempt yet (a source without sinks, or the first attempt is on its way)."));
  for (const [sink, list] of sinks) {
    // By time: a retried dead letter's attempts count from 1 again.
    list.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
    const last = list[list.length - 1];
    const isDead = dead.some((d) => d.sink === sink);
    let state, action = null;
    // The API's redelivery: a new delivery row for the sink, due now (a
    // dead letter is retried); a pending one is the dispatcher's.
    const redeliver = (label) => button(label, async (b) => {
      try {
        await api("POST", tenantPath(tenant, "hooks", hook.id, "sinks", sink, "redeliver"));
        b.replaceWith(notice("ok", `Redelivered: sink ${sink} gets it again.`));
      } catch (e) { b.replaceWith(notice("error", String(e))); }
    });
    if (isDead) {
      state = "dead letter";
      action = redeliver("Redeliver (retry the dead letter)");
    } else if (last && last.outcome === "delivered") {
      state = "delivered";
      action = redeliver("Redeliver");
    } else {
      state = last ? "retrying (" + last.outcome + ")" : "pending";
      action = h("span", { class: "hint" }, "Redelivery: a delivery to this sink is pending; the dispatcher owns it.");
    }
    panel.append(h("div", { class: "sink", "data-sink": sink },
      h("h3", {}, `Sink ${sink}: `, h("span", { class: "state state-" + state.split(" ")[0], "data-state": state.split(" ")[0] }, state)), action,
      list.length ? table("data", ["#", "At", "Status", "Latency ms", "Outcome", "Error"],
        list.map((a) => [a.attempt, when(a.at), a.status || "", a.latency_ms.toFixed(1), a.outcome, a.error || ""])) : null));
  }
}
