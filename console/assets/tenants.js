// Tenants: the list with counters (tenants:read), or the one tenant a
// tenant-scoped token names; the chosen tenant's rate limit, its
// override set (PUT) and removed (DELETE).
import { api, tenantPath, ApiError } from "./api.js";
import { h, table, notice, field, button, when, showFieldError, clearFieldErrors } from "./dom.js";

export async function render(ctx) {
  const { root, tenant } = ctx;
  let rows = ctx.known;
  if (!rows && !tenant) {
    root.append(notice("info", `This token cannot list tenants (${ctx.refused}): name yours in the bar above.`));
    return;
  }
  if (!rows) {
    root.append(notice("info", `This token cannot list tenants (${ctx.refused}); it sees the tenant named in the bar.`));
    try {
      rows = [await api("GET", tenantPath(tenant))];
      if (ctx.stale()) return;
    } catch (e) {
      if (ctx.stale()) return;
      root.append(notice("error", `Tenant ${tenant}: ${e}`));
      return;
    }
  }
  const limit = (rl) => rl ? `${rl.rate}/s, burst ${rl.burst}` : "—";
  root.append(h("section", { class: "panel" }, h("h2", {}, "Tenants"),
    table("data", ["Tenant", "Ordinal", "First seen", "Hooks", "Bytes", "Rate limit override", ""],
      rows.map((t) => h("tr", { class: t.tenant === tenant ? "selected" : "", "data-tenant": t.tenant },
        h("td", {}, t.tenant), h("td", { class: "num" }, t.ordinal), h("td", {}, when(t.first_seen) || "—"),
        h("td", { class: "num" }, t.hooks ?? "—"), h("td", { class: "num" }, t.bytes ?? "—"),
        h("td", {}, limit(t.rate_limit)),
        h("td", {}, t.tenant === tenant ? "selected" : button("Select", () => ctx.setTenant(t.tenant))))))));
  if (!rows.length) root.querySelector("section.panel").append(h("p", { id: "no-tenants" }, "No tenant has sent a hook to this node yet."));
  if (tenant) await renderLimit(ctx);
}

async function renderLimit(ctx) {
  const { root, tenant } = ctx;
  const panel = h("section", { class: "panel", id: "rate-limit" }, h("h2", {}, `Rate limit of ${tenant}`));
  root.append(panel);
  let rl;
  try {
    rl = await api("GET", tenantPath(tenant, "rate_limit"));
    if (ctx.stale()) return;
  } catch (e) {
    if (ctx.stale()) return;
    panel.append(notice("error", String(e)));
    return;
  }
  const e = rl.effective;
  panel.append(table("data kv", ["", "rate", "burst", "max_queue", "max_queue_bytes", "limited"], [
    ["effective", e.rate, e.burst, e.max_queue, e.max_queue_bytes, e.limited ? "yes" : "no"],
    rl.override ? ["override", rl.override.rate, rl.override.burst, rl.override.max_queue, rl.override.max_queue_bytes, ""] : ["override", "none", "", "", "", ""],
  ]));
  const o = rl.override || e;
  const inputs = {
    rate: h("input", { value: o.rate, size: 10 }),
    burst: h("input", { value: o.burst, size: 10, inputmode: "numeric" }),
    max_queue: h("input", { value: o.max_queue, size: 10, inputmode: "numeric" }),
    max_queue_bytes: h("input", { value: o.max_queue_bytes, size: 12, inputmode: "numeric" }),
  };
  const msg = h("div", { class: "messages" });
  const form = h("form", { class: "inline-form", id: "rate-limit-form" },
    Object.entries(inputs).map(([k, el]) => field(k, k, el)),
    h("button", { type: "submit", id: "rate-limit-submit" }, "Set override"),
    rl.override ? button("Remove override", async () => {
      try {
        await api("DELETE", tenantPath(tenant, "rate_limit"));
        ctx.setTenant(tenant);
      } catch (err) { msg.replaceChildren(notice("error", String(err))); }
    }) : null, msg);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearFieldErrors(form);
    const num = (v) => (/^\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : v.trim());
    const body = {
      rate: inputs.rate.value.trim() === "inf" ? "inf" : num(inputs.rate.value),
      burst: num(inputs.burst.value), max_queue: num(inputs.max_queue.value), max_queue_bytes: num(inputs.max_queue_bytes.value),
    };
    try {
      await api("PUT", tenantPath(tenant, "rate_limit"), body);
      ctx.setTenant(tenant);
    } catch (err) {
      if (!(err instanceof ApiError && showFieldError(form, err.message))) msg.replaceChildren(notice("error", String(err)));
    }
  });
  panel.append(h("h3", {}, "Override (tenants:write)"), form);
}
