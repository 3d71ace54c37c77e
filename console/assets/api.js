// The admin API, called with the operator's token. The token and the
// chosen tenant live in this tab's sessionStorage only.

const TOKEN = "ankusa.token";
const TENANT = "ankusa.tenant";

export const session = {
  get token() { return sessionStorage.getItem(TOKEN) || ""; },
  set token(v) { sessionStorage.setItem(TOKEN, v); },
  get tenant() { return sessionStorage.getItem(TENANT) || ""; },
  set tenant(v) { sessionStorage.setItem(TENANT, v); },
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

// api calls the admin API: method, a path under /v1, a JSON body (an
// object or a string) or undefined. It returns the decoded answer (null
// for 204) or throws an ApiError.
export async function api(method, path, body) {
  const init = { method, headers: { Authorization: "Bearer " + session.token }, cache: "no-store", credentials: "omit" };
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

// tenantPath is /v1/tenants/<tenant>/<rest>, the tenant a name of the
// API's grammar (the API refuses any other).
export function tenantPath(tenant, rest) {
  return "/v1/tenants/" + encodeURIComponent(tenant) + (rest ? "/" + rest : "");
}

// query builds ?k=v&... from an object, leaving out empty values.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== "" && v !== undefined && v !== null) q.set(k, v);
  const s = q.toString();
  return s ? "?" + s : "";
}

// listAll follows next_cursor until the end (or max rows).
export async function listAll(path, key, params = {}, max = 5000) {
  const out = [];
  let cursor = "";
  do {
    const page = await api("GET", path + query({ ...params, cursor, limit: 1000 }));
    out.push(...(page[key] || []));
    cursor = page.next_cursor || "";
  } while (cursor && out.length < max);
  return out;
}
