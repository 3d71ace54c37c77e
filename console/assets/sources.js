// Sources: the tenant's sources, created and edited with a form or as
// JSON (the API's body: the YAML spec's keys plus name); a 400's message
// shows beside the field it names (verify.type, sinks[0].url, ...).
import { api, listAll, tenantPath, ApiError } from "./api.js";
import { h, table, notice, field, button, when, showFieldError, clearFieldErrors } from "./dom.js";

const readOnly = ["secrets_set", "from_config", "created_at", "updated_at", "url_path"];
// The verifier types; a preset's name is one too (ankusa presets lists them).
const verifyTypes = ["none", "hmac", "stripe", "github", "shopify", "slack", "standardwebhooks"];

export async function render(ctx) {
  const { root, tenant } = ctx;
  const msg = h("div", { class: "messages", id: "sources-messages" });
  const list = h("section", { class: "panel" }, h("h2", {}, `Sources of ${tenant}`), msg);
  const editor = h("section", { class: "panel", id: "source-editor" });
  root.append(list, editor);
  let sources;
  try {
    sources = await listAll(tenantPath(tenant, "sources"), "sources");
    if (ctx.stale()) return;
  } catch (e) {
    if (ctx.stale()) return;
    msg.append(notice("error", String(e)));
    return;
  }
  list.append(sources.length ? table("data", ["Name", "Catch URL path", "Verify", "Sinks", "On failure", "Updated", ""],
    sources.map((s) => h("tr", { "data-source": s.name },
      h("td", {}, s.name), h("td", { class: "mono" }, s.url_path || ""), h("td", {}, s.verify?.type || ""),
      h("td", {}, (s.sinks || []).map((k) => `${k.id || "?"} (${k.type})`).join(", ")),
      h("td", {}, s.on_verify_failure || "reject"), h("td", {}, s.from_config ? "config file" : when(s.updated_at)),
      h("td", {}, s.from_config ? "" : [
        button("Edit", () => edit(ctx, editor, s)), " ",
        button("Delete", async () => {
          try {
            await api("DELETE", tenantPath(tenant, "sources", s.name));
            ctx.setTenant(tenant);
          } catch (e) { msg.replaceChildren(notice("error", String(e))); }
        }, "danger")]))))
    : h("p", {}, "No sources yet."));
  edit(ctx, editor, null);
}

// edit fills the editor: a new source (s null) or s.
function edit(ctx, editor, s) {
  const { tenant } = ctx;
  const spec = s ? Object.fromEntries(Object.entries(s).filter(([k]) => !readOnly.includes(k))) : null;
  const v = (s && s.verify) || {};
  const f = {
    name: h("input", { value: s ? s.name : "", size: 30, disabled: !!s, placeholder: "minted when empty" }),
    vtype: h("input", { value: v.type || "none", list: "verify-types", size: 20 }),
    vheader: h("input", { value: v.header || "", size: 24 }),
    vsecret: h("input", { type: "password", value: "", size: 30, autocomplete: "off", placeholder: s && (s.secrets_set || []).length ? "kept unless given" : "" }),
    onfail: h("select", {}, ["reject", "quarantine", "accept_flag"].map((o) => h("option", { value: o, selected: (s?.on_verify_failure || "reject") === o }, o))),
    sinks: h("textarea", { rows: 4, cols: 70, class: "mono" }),
    json: h("textarea", { rows: 8, cols: 70, class: "mono", id: "source-json" }),
  };
  f.sinks.value = s && s.sinks ? JSON.stringify(s.sinks, null, 1) : "[]";
  f.json.value = spec ? JSON.stringify(spec, null, 2) : "";
  const msg = h("div", { class: "messages", id: "source-messages" });
  const form = h("form", { id: "source-form" },
    h("datalist", { id: "verify-types" }, verifyTypes.map((t) => h("option", { value: t }))),
    field("Name", "name", f.name),
    field("verify.type", "verify.type", f.vtype),
    field("verify.header", "verify.header", f.vheader),
    field("verify.secret", "verify.secret", f.vsecret, "The secret itself; never shown back."),
    field("on_verify_failure", "on_verify_failure", f.onfail),
    field("sinks (JSON array)", "sinks", f.sinks),
    field("Or the whole source as JSON (used when not empty)", "json", f.json, "Any key of the source spec; the form above is ignored."),
    h("button", { type: "submit", id: "source-save" }, s ? `Save ${s.name}` : "Create source"), " ",
    s ? button("New source instead", () => edit(ctx, editor, null)) : null, msg);
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    clearFieldErrors(form);
    msg.replaceChildren();
    let body;
    if (f.json.value.trim()) {
      body = f.json.value;
    } else {
      const verify = { type: f.vtype.value.trim() };
      if (f.vheader.value.trim()) verify.header = f.vheader.value.trim();
      if (f.vsecret.value) verify.secret = f.vsecret.value;
      let sinks;
      try { sinks = JSON.parse(f.sinks.value || "[]"); } catch (e) {
        showFieldError(form, "sinks: not JSON: " + e.message);
        return;
      }
      body = { verify, on_verify_failure: f.onfail.value };
      if (sinks.length) body.sinks = sinks;
      if (!s && f.name.value.trim()) body.name = f.name.value.trim();
    }
    try {
      const saved = s ? await api("PUT", tenantPath(tenant, "sources", s.name), body)
        : await api("POST", tenantPath(tenant, "sources"), body);
      ctx.flash("ok", `Saved source ${saved.name}; it answers on ${saved.url_path || "its routes"}.`);
      ctx.setTenant(tenant);
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 400 && showFieldError(form, e.message))) {
        msg.replaceChildren(notice("error", String(e)));
      }
    }
  });
  editor.replaceChildren(h("h2", {}, s ? `Edit ${s.name}` : "New source"), form);
}
