// The console's entry: log in, the nav bar with the tenant picker, and a
// view per #/<name> (each backed by the admin API only).
import { api, listAll, session, whenUnauthorized, ApiError, tenantPath, validTenant, badTenant } from "./api.js";
import { h, notice, field } from "./dom.js";
import * as tenants from "./tenants.js";
import * as sources from "./sources.js";
import * as routes from "./routes.js";
import * as hooks from "./hooks.js";
import * as dead from "./dead.js";
import * as quarantine from "./quarantine.js";
import * as live from "./live.js";

const views = [
  ["tenants", "Tenants", tenants],
  ["sources", "Sources", sources],
  ["routes", "Routes & URLs", routes],
  ["hooks", "Hooks", hooks],
  ["dead", "Dead letters", dead],
  ["quarantine", "Quarantine", quarantine],
  ["live", "Live", live],
];

// known is what the token may list: the tenants GET /v1/tenants returned,
// or null when it is refused (no tenants:read): then the tenant is the
// one the operator names.
const state = { known: null, refused: "", loggingIn: false };

const main = () => document.getElementById("main");
const nav = () => document.getElementById("nav");

whenUnauthorized(() => {
  if (state.loggingIn) return;
  stopCurrent();
  session.clear();
  state.known = null;
  location.hash = "#/login?expired=1";
});


function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [name, q] = raw.split("?");
  return { name: name || "", params: new URLSearchParams(q || "") };
}

let current = null; // the view on screen, whose stop() ends its timers

function stopCurrent() {
  if (current && current.stop) current.stop();
  current = null;
}

// gen counts route()'s runs: a run whose gen is no longer the latest (a
// newer navigation began while it awaited) draws nothing more. seq counts
// the views drawn: body's data-view and data-seq say which one is on
// screen, once it is (the browser tests wait on them).
let gen = 0;
let seq = 0;

function drawn(name) {
  document.body.dataset.view = name;
  document.body.dataset.seq = String(++seq);
}

async function route() {
  const my = ++gen;
  const stale = () => my !== gen;
  const { name, params } = parseHash();
  stopCurrent();
  if (!session.token || name === "login") {
    renderNav(null);
    renderLogin(params);
    return drawn("login");
  }
  const view = views.find((v) => v[0] === name) || views[0];
  const named = params.get("tenant");
  if (named !== null && named !== session.tenant) {
    if (validTenant(named)) session.tenant = named;
    else state.flash = { kind: "error", text: badTenant(named) + " The console keeps " + (session.tenant || "no tenant") + "." };
  }
  // The tenants view shows the list as it is now; the others keep the
  // list of the last time (the picker's suggestions).
  if ((state.known === null && !state.refused) || (view[0] === "tenants" && !state.refused)) {
    try { await loadTenants(); } catch { /* the view shows the error */ }
    if (stale()) return;
  }
  renderNav(view[0]);
  const root = main();
  root.replaceChildren(h("h1", {}, view[1]));
  if (state.flash) {
    const f = state.flash;
    root.append(f.text instanceof Node ? f.text : notice(f.kind, f.text));
    state.flash = null;
  }
  const ctx = { tenant: session.tenant, root, params, known: state.known, refused: state.refused, go, setTenant, flash, stale };
  if (!ctx.tenant && view[0] !== "live" && view[0] !== "tenants") {
    root.append(notice("info", "Name a tenant in the bar above to see its data."));
    return drawn(view[0]);
  }
  current = view[2];
  try {
    await view[2].render(ctx);
  } catch (e) {
    if (stale()) return;
    root.append(notice("error", e instanceof ApiError ? e.toString() : String(e)));
  }
  if (stale()) return;
  drawn(view[0]);
}

function go(name, params) {
  const q = params ? "?" + new URLSearchParams(params).toString() : "";
  location.hash = "#/" + name + q;
}

// setTenant chooses tenant t and shows the current view again (for t).
// A name that is not one is refused with a message, and the view stays.
function setTenant(t) {
  if (validTenant(t)) session.tenant = t;
  else flash("error", badTenant(t));
  const { name } = parseHash();
  const next = "#/" + (name || "tenants");
  if (location.hash === next) route();
  else location.hash = next;
}

// flash keeps a message (text, or a node) for the next view shown (after
// a change that shows the view again).
function flash(kind, text) { state.flash = { kind, text }; }

// loadTenants asks for the list of tenants; without tenants:read it is
// refused (403), and the tenant is the one the operator names.
// opts as api's (a token not yet kept, when logging in).
async function loadTenants(opts = {}) {
  try {
    state.known = (await listAll("/v1/tenants", "tenants", {}, 5000, opts)).filter((t) => validTenant(t.tenant));
    state.refused = "";
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 403) throw e;
    state.known = null;
    state.refused = e.message;
  }
  if (opts.token === undefined && !session.tenant && state.known && state.known.length) {
    session.tenant = state.known.some((t) => t.tenant === "default") ? "default" : state.known[0].tenant;
  }
}

function renderNav(active) {
  const el = nav();
  if (!active) {
    el.replaceChildren(h("span", { class: "brand" }, "Ankusa"));
    return;
  }
  const links = views.map(([name, label]) =>
    h("a", { href: "#/" + name, class: name === active ? "active" : "", "data-view": name }, label));
  // The tenant: typed, or picked from those the token may list.
  const input = h("input", { id: "tenant-picker", "aria-label": "tenant", value: session.tenant, size: 14, placeholder: "tenant", list: "known-tenants", autocomplete: "off" });
  const picker = h("form", { class: "picker", onsubmit: (e) => { e.preventDefault(); setTenant(input.value.trim()); } },
    h("label", { for: "tenant-picker" }, "Tenant "), input,
    h("datalist", { id: "known-tenants" }, (state.known || []).map((t) => h("option", { value: t.tenant }))),
    h("button", { type: "submit", id: "tenant-use" }, "Use"));
  const out = h("button", { type: "button", id: "logout", onclick: logout }, "Log out");
  el.replaceChildren(h("span", { class: "brand" }, "Ankusa"), h("span", { class: "links" }, links), picker, out);
}

function logout() {
  stopCurrent();
  session.clear();
  state.known = null;
  state.refused = "";
  location.hash = "#/login";
}

function renderLogin(params) {
  const token = h("input", { type: "password", id: "login-token", autocomplete: "off", required: true, size: 40 });
  const tenant = h("input", { id: "login-tenant", size: 20, placeholder: "only for a token without tenants:read" });
  const msg = h("div", { id: "login-message" });
  if (params.get("expired")) msg.append(notice("error", "The admin API refused the token (401): log in again."));
  const form = h("form", { id: "login-form", class: "panel" },
    h("p", {}, "Log in with an admin token (admin.tokens, or the bootstrap token's file). It stays in this tab only and goes with every API call as a bearer header."),
    field("Admin token", "token", token),
    field("Tenant", "tenant", tenant, "A token scoped to tenants (tenant:acme) cannot list them: name yours."),
    h("button", { type: "submit", id: "login-submit" }, "Log in"), msg);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    msg.replaceChildren();
    // The token is kept (sessionStorage) only once the node took it.
    const tok = token.value.trim();
    const ten = tenant.value.trim();
    if (ten && !validTenant(ten)) {
      msg.replaceChildren(notice("error", badTenant(ten)));
      return;
    }
    session.clear();
    state.known = null;
    state.refused = "";
    state.loggingIn = true;
    try {
      // A token the node does not know is 401 on any /v1 path.
      await loadTenants({ token: tok });
      if (state.refused && ten) await api("GET", tenantPath(ten), undefined, { token: tok });
    } catch (err) {
      state.known = null;
      state.refused = "";
      if (err instanceof ApiError && err.status === 401) {
        msg.replaceChildren(notice("error", "The admin API refused this token (401 " + err.code + ")."));
        return;
      }
      if (!(err instanceof ApiError && (err.status === 403 || err.status === 404))) {
        msg.replaceChildren(notice("error", String(err)));
        return;
      }
    } finally {
      state.loggingIn = false;
    }
    session.token = tok;
    if (ten) session.tenant = ten;
    else if (state.known && state.known.length) session.tenant = state.known.some((t) => t.tenant === "default") ? "default" : state.known[0].tenant;
    go("tenants");
  });
  main().replaceChildren(h("h1", {}, "Log in"), form);
  token.focus();
}

// A module runs once the document is parsed: draw the view the URL names.
window.addEventListener("hashchange", route);
route();
