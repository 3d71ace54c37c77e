// Quarantine: hooks held for failing verification (on_verify_failure:
// quarantine), with the failure; release one (verified again with the
// source's current secrets, or forced), drop one, the selected ones, or
// every one the filter passes.
import { api, tenantPath } from "./api.js";
import { h, table, button, when } from "./dom.js";
import { filteredList, confirmButton, dropAllButton } from "./filters.js";

export async function render(ctx) {
  const { tenant } = ctx;
  await filteredList(ctx, {
    id: "quarantine", title: `Held hooks of ${tenant}`, path: tenantPath(tenant, "quarantine"), field: "hooks",
    query: (f) => f, empty: "No held hooks pass the filter.", draw,
  });

  function draw(rows, act, f) {
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
    return [
      h("div", { class: "bulk" },
        button("Drop selected", () => act("drop", async () => {
          const sel = boxes.filter(([b]) => b.checked).map(([, q]) => q);
          for (const q of sel) await api("DELETE", tenantPath(tenant, "quarantine", q.event_id));
          return `Dropped ${sel.length} selected.`;
        }), "danger"), " ",
        dropAllButton(act, tenantPath(tenant, "quarantine", "drop"), f)),
      table("data", ["", "Event", "Source", "Received", "Bytes", "Failure", ""], trs)];
  }
}
