// Routes and opaque URLs: the tenant's routes (the token resolver's
// tokens among them); minting one (POST routes with token "auto": the
// token and its URL are shown once, with a copy button); revoking one of
// a route's tokens (PUT keeping the others) and deleting a route (which
// revokes its tokens).
import { api, listAll, tenantPath } from "./api.js";
import { h, table, notice, field, button, when, copyButton } from "./dom.js";

const BASE = "ankusa.public_base";

export async function render(ctx) {
  const { root, tenant } = ctx;
  const msg = h("div", { class: "messages", id: "routes-messages" });
  const listPanel = h("section", { class: "panel" }, h("h2", {}, `Routes of ${tenant}`), msg);
  const mintPanel = h("section", { class: "panel", id: "mint" });
  root.append(mintPanel, listPanel);
  let routes;
  try {
    routes = await listAll(tenantPath(tenant, "routes"), "routes");
    if (ctx.stale()) return;
  } catch (e) {
    if (ctx.stale()) return;
    msg.append(notice("error", String(e)));
    return;
  }
  // A route needs a path or a token: a token-only route's last token is
  // revoked by deleting the route (DELETE revokes its tokens); another
  // token (a rotation's) is revoked by a PUT keeping the rest.
  const revoke = (r, tok) => button("Revoke " + tok.id, async () => {
    try {
      const keep = r.tokens.filter((t) => t.id !== tok.id).map((t) => t.id);
      await api("PUT", tenantPath(tenant, "routes", r.id), { source_id: r.source_id, host: r.host || "", path: r.path || "", tokens: keep });
      ctx.flash("ok", `Revoked token ${tok.id} of route ${r.id}: its URL answers 404 now.`);
      ctx.setTenant(tenant);
    } catch (e) { msg.replaceChildren(notice("error", String(e))); }
  });
  listPanel.append(routes.length ? table("data", ["Route", "Source", "Host", "Path", "Tokens", ""],
    routes.map((r) => {
      const toks = r.tokens || [];
      const canRevoke = !r.from_config && (r.path || toks.length > 1);
      return h("tr", { "data-route": r.id },
        h("td", { class: "mono" }, r.id), h("td", {}, r.source_id || ""), h("td", {}, r.host || ""), h("td", { class: "mono" }, r.path || ""),
        h("td", {}, toks.length ? toks.map((t) => h("div", {}, `${t.id} (${when(t.created_at)}) `, canRevoke ? revoke(r, t) : null)) : "none"),
        h("td", {}, r.from_config ? "config file" : button(toks.length && !r.path ? "Delete (revokes its URL)" : "Delete", async () => {
          try {
            await api("DELETE", tenantPath(tenant, "routes", r.id));
            ctx.flash("ok", `Deleted route ${r.id}` + (toks.length ? ": its URLs answer 404 now." : "."));
            ctx.setTenant(tenant);
          } catch (e) { msg.replaceChildren(notice("error", String(e))); }
        }, "danger")));
    }))
    : h("p", {}, "No routes yet."));
  await renderMint(ctx, mintPanel);
}

async function renderMint(ctx, panel) {
  const { tenant } = ctx;
  // A route may name the tenant's own sources or the shared ones (tenant
  // default): those are listed only when the token can see tenant default
  // (it lists it); else the operator types the name.
  const names = new Set();
  const seesDefault = tenant !== "default" && (ctx.known || []).some((t) => t.tenant === "default");
  for (const t of seesDefault ? [tenant, "default"] : [tenant]) {
    try {
      for (const s of await listAll(tenantPath(t, "sources"), "sources")) names.add(s.name);
    } catch { /* the list is a suggestion only: type the name */ }
    if (ctx.stale()) return;
  }
  const source = h("input", { list: "route-sources", size: 24, id: "mint-source" });
  const id = h("input", { size: 24, placeholder: "minted when empty", id: "mint-id" });
  const host = h("input", { size: 24, id: "mint-host" });
  const path = h("input", { size: 24, placeholder: "only with routes.enabled", id: "mint-path" });
  const token = h("input", { type: "checkbox", checked: true, id: "mint-token" });
  const base = h("input", { size: 30, id: "public-base", value: sessionStorage.getItem(BASE) || `${location.protocol}//${location.hostname}:8080` });
  const out = h("div", { id: "mint-result" });
  const form = h("form", { id: "mint-form", class: "inline-form" },
    h("datalist", { id: "route-sources" }, [...names].map((n) => h("option", { value: n }))),
    field("Source", "source_id", source), field("Route id", "id", id), field("Host", "host", host), field("Path", "path", path),
    h("div", { class: "field" }, h("label", { for: "mint-token" }, "Mint a token"), token),
    field("Public listener (for the full URL)", "public_base", base),
    h("button", { type: "submit", id: "mint-submit" }, "Create route"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    out.replaceChildren();
    sessionStorage.setItem(BASE, base.value.trim());
    const body = { source_id: source.value.trim() };
    if (id.value.trim()) body.id = id.value.trim();
    if (host.value.trim()) body.host = host.value.trim();
    if (path.value.trim()) body.path = path.value.trim();
    if (token.checked) body.token = "auto";
    try {
      const r = await api("POST", tenantPath(tenant, "routes"), body);
      showMinted(ctx, r, base.value.trim());
    } catch (e) {
      out.replaceChildren(notice("error", String(e)));
    }
  });
  panel.replaceChildren(h("h2", {}, "Mint a URL"),
    h("p", { class: "hint" }, "A route with a token is an opaque URL under the token resolver; its token is shown once."),
    seesDefault || tenant === "default" ? null : h("p", { class: "hint", id: "mint-shared-hint" }, "A shared source (of tenant default) is not listed for this token: type its name."),
    form, out);
}

// showMinted shows a new route's token and URL once, above the list
// (shown again, which now holds it).
function showMinted(ctx, r, base) {
  const url = r.url_path ? base.replace(/\/$/, "") + r.url_path : "";
  const box = h("section", { class: "panel minted", id: "minted" },
    h("h2", {}, `Route ${r.id} created`),
    r.token ? h("p", {}, "Its token is shown this once: the node keeps only its SHA-256.") : null,
    r.token ? h("p", {}, "Token: ", h("code", { id: "minted-token" }, r.token), " ", copyButton(r.token)) : null,
    r.url_path ? h("p", {}, "URL path: ", h("code", { id: "minted-path" }, r.url_path), " ", copyButton(r.url_path)) : null,
    url ? h("p", {}, "URL: ", h("code", { id: "minted-url" }, url), " ", copyButton(url)) : null);
  ctx.flash("ok", box);
  ctx.setTenant(ctx.tenant);
}
