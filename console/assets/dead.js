// Dead letters: the tenant's dead deliveries, by source and received
// time; retry or drop one, the selected ones, or every one the filter
// passes (the API's bulk retry and drop).
import { api, tenantPath, query, validEvent } from "./api.js";
import { h, table, button, when } from "./dom.js";
import { filteredList, dropAllButton } from "./filters.js";

export async function render(ctx) {
  const { tenant } = ctx;
  await filteredList(ctx, {
    id: "dead", title: `Dead letters of ${tenant}`, path: tenantPath(tenant, "deliveries"), field: "deliveries",
    query: (f) => ({ state: "dead", ...f }), empty: "No dead letters pass the filter.", draw,
  });

  function draw(rows, act, f) {
    const boxes = [];
    const trs = rows.map((d) => {
      const box = h("input", { type: "checkbox", "aria-label": "select " + d.event_id + " " + d.sink });
      boxes.push([box, d]);
      return h("tr", { "data-event": d.event_id, "data-sink": d.sink },
        h("td", {}, box), h("td", { class: "mono" }, validEvent(d.event_id) ? h("a", { href: "#/hooks?id=" + d.event_id }, d.event_id) : d.event_id),
        h("td", {}, d.source), h("td", {}, d.sink), h("td", { class: "num" }, d.attempts), h("td", {}, when(d.received_at)),
        h("td", { class: "num", "data-col": "last-status" }, d.last_status || ""), h("td", { class: "err" }, d.last_error),
        h("td", {}, button("Retry", () => act("retry", async () => {
          await api("POST", tenantPath(tenant, "deliveries", d.event_id, d.sink, "retry"));
          return `Retried ${d.event_id} to ${d.sink}.`;
        }), "retry"), " ", button("Drop", () => act("drop", async () => {
          await api("DELETE", tenantPath(tenant, "deliveries", d.event_id, d.sink));
          return `Dropped ${d.event_id} to ${d.sink}.`;
        }), "danger")));
    });
    const selected = () => boxes.filter(([b]) => b.checked).map(([, d]) => d);
    const each = (verb, f) => act(verb, async () => {
      const sel = selected();
      for (const d of sel) await f(d);
      return `${verb} ${sel.length} selected.`;
    });
    return [
      h("div", { class: "bulk" },
        button("Retry selected", () => each("Retried", (d) => api("POST", tenantPath(tenant, "deliveries", d.event_id, d.sink, "retry")))), " ",
        button("Drop selected", () => each("Dropped", (d) => api("DELETE", tenantPath(tenant, "deliveries", d.event_id, d.sink))), "danger"), " ",
        button("Retry all passing the filter", () => act("retry all", async () => {
          const r = await api("POST", tenantPath(tenant, "deliveries", "retry") + query(f));
          return `Retried ${r.retried}.`;
        }), "retry-all"), " ",
        dropAllButton(act, tenantPath(tenant, "deliveries", "drop"), f)),
      table("data", ["", "Event", "Source", "Sink", "Attempts", "Received", "Last status", "Last error", ""], trs)];
  }
}
