// The admin API, called with the operator's token. The token and the
// chosen tenant live in this tab's sessionStorage only.

const TOKEN = "ankusa.token";
const TENANT = "ankusa.tenant";

// NAME_RE is config.NameRE (config/names.go): what a tenant or source
// name matches. EVENT_RE is a stored hook's id.
export const NAME_RE = /^[a-z0-9][a-z0-9._-]{0,62}$/;
export const EVENT_RE = /^evt_[0-9A-Z]{26}$/;
// SEGMENT_RE is any other segment of an API path (a route's id, a sink's
// id, a fixed word): never a dot segment, a slash, a percent or a query.
const SEGMENT_RE = /^[A-Za-z0-9_][A-Za-z0-9._~-]{0,127}$/;

export const validTenant = (t) => typeof t === "string" && NAME_RE.test(t);
export const validEvent = (id) => typeof id === "string" && EVENT_RE.test(id);

// badTenant and badEvent are the messages the views show for a name or id
// that is not one.
export const badTenant = (t) => `"${t}" is not a tenant name: 1 to 63 of a-z, 0-9, ".", "_" and "-", starting with a letter or digit.`;
export const badEvent = (id) => `"${id}" is not an event id: evt_ and 26 of 0-9 and A-Z.`;

export const session = {
  get token() { return sessionStorage.getItem(TOKEN) || ""; },
  set token(v) { sessionStorage.setItem(TOKEN, v); },
  // A tenant that is not a name (sessionStorage edited by hand) is none.
  get tenant() { const t = sessionStorage.getItem(TENANT) || ""; return validTenant(t) ? t : ""; },
  set tenant(v) {
    if (v !== "" && !validTenant(v)) throw new Error(badTenant(v));
    sessionStorage.setItem(TENANT, v);
  },
  clear() { sessionStorage.removeItem(TOKEN); sessionStorage.removeItem(TENANT); },
};

// ApiError is an answer other than 2xx: status, the API's code and message.
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || code || "HTTP " + status);
    this.status = status;
    this.code = code || "";
  }
  toString() { return `${this.status} ${this.code}: ${this.message}`; }
}

let onUnauthorized = () => {};
export function whenUnauthorized(f) { onUnauthorized = f; }

// checkPath returns path when it is an absolute path of this origin that
// resolves to itself (no dot segment, no encoded one, nothing a URL parser
// would change) under /v1/ (or /metrics, when metrics is true); it throws
// for any other.
export function checkPath(path, metrics) {
  const u = typeof path === "string" && path.startsWith("/") && !path.startsWith("//") ? new URL(path, location.origin) : null;
  const ok = u && u.origin === location.origin && u.pathname + u.search === path &&
    !/%2e|%2f|%5c|\\/i.test(u.pathname) &&
    (u.pathname.startsWith("/v1/") || (metrics && u.pathname === "/metrics"));
  if (!ok) throw new ApiError(0, "bad_path", "the console refuses to call " + JSON.stringify(path) + ": not a path of the admin API");
  return path;
}

// api calls the admin API: method, a path under /v1, a JSON body (an
// object or a string) or undefined, and opts ({token} to call with a
// token not yet kept, as logging in does). It returns the decoded answer
// (null for 204) or throws an ApiError.
export async function api(method, path, body, opts = {}) {
  checkPath(path, false);
  const token = opts.token !== undefined ? opts.token : session.token;
  const init = { method, headers: { Authorization: "Bearer " + token }, cache: "no-store", credentials: "omit" };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    init.headers["Content-Type"] = "application/json";
  }
  let resp;
  try {
    resp = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, "network", "the admin listener did not answer: " + e.message);
  }
  const text = await resp.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = text; }
  }
  if (resp.ok) return data;
  const err = new ApiError(resp.status, data && data.error, data && data.message);
  if (resp.status === 401) onUnauthorized(err);
  throw err;
}

// tenantPath is /v1/tenants/<tenant>/<segment>/...: the tenant must be a
// name (NAME_RE) and each segment a plain one (SEGMENT_RE); it throws for
// any other, so no value from the URL, a form or an answer can make the
// path leave the tenant.
export function tenantPath(tenant, ...segments) {
  if (!validTenant(tenant)) throw new ApiError(0, "bad_tenant", badTenant(tenant));
  for (const s of segments) {
    if (typeof s !== "string" || !SEGMENT_RE.test(s)) throw new ApiError(0, "bad_path", `the console refuses the path segment ${JSON.stringify(String(s))}`);
  }
  return checkPath(["/v1/tenants", tenant, ...segments].join("/"), false);
}

// query builds ?k=v&... from an object, leaving out empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== "" && v !== undefined && v !== null) q.set(k, v);
  const s = q.toString();
  return s ? "?" + s : "";
}

// listAll follows next_cursor until the end (or max rows); opts as api's.
export async function listAll(path, key, params = {}, max = 5000, opts = {}) {
  const out = [];
  let cursor = "";
  do {
    const page = await api("GET", path + query({ ...params, cursor, limit: 1000 }), undefined, opts);
    out.push(...(page[key] || []));
    cursor = page.next_cursor || "";
  } while (cursor && out.length < max);
  return out;
}
