// Quarantine: hooks held for failing verification (on_verify_failure:
// quarantine), with the failure; release one (verified again with the
// source's current secrets, or forced), drop one, the selected ones, or
// every one the filter passes.
import { api, listAll, tenantPath, query } from "./api.js";
import { h, table, notice, button, when } from "./dom.js";
import { filterBar, confirmButton } from "./filters.js";

export async function render(ctx) {
  const { root, tenant } = ctx;
  const msg = h("div", { class: "messages", id: "quarantine-messages" });
  const list = h("div", { id: "quarantine-list" });
  const { form, values } = filterBar(ctx, () => load());
  root.append(h("section", { class: "panel" }, form), msg, h("section", { class: "panel" }, h("h2", {}, `Held hooks of ${tenant}`), list));
  const base = tenantPath(tenant, "quarantine");
  const say = (kind, text) => msg.replaceChildren(notice(kind, text));
  const act = async (what, f) => {
    try {
      say("ok", await f());
      await load();
    } catch (e) {
      say("error", `${what}: ${e}`);
    }
  };

  async function load() {
    let rows;
    try {
      rows = await listAll(base, "hooks", values());
      if (ctx.stale()) return;
    } catch (e) {
      if (ctx.stale()) return;
      list.replaceChildren(notice("error", String(e)));
      return;
    }
    if (!rows.length) {
      list.replaceChildren(h("p", { id: "quarantine-empty" }, "No held hooks pass the filter."));
      return;
    }
    const boxes = [];
    const trs = rows.map((q) => {
      const box = h("input", { type: "checkbox", "aria-label": "select " + q.event_id });
      boxes.push([box, q]);
      const release = (force) => act("release", async () => {
        const r = await api("POST", tenantPath(tenant, "quarantine", q.event_id, "release") + (force ? "?force=true" : ""));
        return `Released ${q.event_id}${r.verified ? ", verified" : ", unverified (flagged)"}: ${r.deliveries} deliveries.`;
      });
      return h("tr", { "data-event": q.event_id },
        h("td", {}, box), h("td", { class: "mono" }, q.event_id), h("td", {}, q.source), h("td", {}, when(q.received_at)),
        h("td", { class: "num" }, q.bytes), h("td", { class: "err" }, q.failure),
        h("td", {}, button("Release", () => release(false)), " ",
          confirmButton("Release unverified", "Click again: deliver it unverified", () => release(true)), " ",
          button("Drop", () => act("drop", async () => {
            await api("DELETE", tenantPath(tenant, "quarantine", q.event_id));
            return `Dropped ${q.event_id}.`;
          }), "danger")));
    });
    const f = values();
    list.replaceChildren(
      h("div", { class: "bulk" },
        button("Drop selected", () => act("drop", async () => {
          const sel = boxes.filter(([b]) => b.checked).map(([, q]) => q);
          for (const q of sel) await api("DELETE", tenantPath(tenant, "quarantine", q.event_id));
          return `Dropped ${sel.length} selected.`;
        }), "danger"), " ",
        confirmButton("Drop all passing the filter", "Click again to drop them all", () => act("drop all", async () => {
          const q = f.source || f.since || f.until ? f : { all: "true" };
          const r = await api("POST", tenantPath(tenant, "quarantine", "drop") + query(q));
          return `Dropped ${r.dropped}.`;
        }), "danger")),
      table("data", ["", "Event", "Source", "Received", "Bytes", "Failure", ""], trs));
  }
  await load();
}
