// DOM helpers: every piece of data goes in as text (textContent, attribute
// values), never as markup, so nothing a hook or a tenant holds can run in
// the page.

// checkAttr throws for an attribute that could run or load something: an
// on* key that is not a function (it would be an inline handler), an
// href or src that is not the page's own (# or one /).
function checkAttr(tag, k, v) {
  const key = k.toLowerCase();
  if (key.startsWith("on") && typeof v !== "function") throw new TypeError(`h(${tag}): ${k} must be a function`);
  if ((key === "href" || key === "src" || key.endsWith(":href")) && v !== undefined && v !== null && v !== false) {
    const s = String(v);
    if (!(s.startsWith("#") || (s.startsWith("/") && !s.startsWith("//") && !s.startsWith("/\\")))) {
      throw new TypeError(`h(${tag}): ${k} ${JSON.stringify(s)} is not a link of this page`);
    }
  }
}

// h builds an element: h("td", {class: "num"}, "12", child). Attributes
// starting with "on" take a function (an event listener), and nothing
// else; href and src start with # or / (checkAttr).
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    checkAttr(tag, k, v);
    if (v === undefined || v === null || v === false) continue;
    if (k.toLowerCase().startsWith("on")) el.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = !!v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// svg builds an SVG element (charts).
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    checkAttr(tag, k, v);
    el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

// table builds a table from column headings and rows of cells.
export function table(cls, headings, rows) {
  return h("table", { class: cls },
    headings.some((t) => t) ? h("thead", {}, h("tr", {}, headings.map((t) => h("th", {}, t)))) : null,
    h("tbody", {}, rows.map((r) => r instanceof Node ? r : h("tr", {}, r.map((c) => c instanceof Node && c.tagName === "TD" ? c : h("td", {}, c))))));
}

// field is a labelled input whose validation message shows beside it:
// key is the API's name for it ("verify.type").
export function field(label, key, input, hint) {
  input.dataset.key = key;
  input.id = input.id || "f-" + key.replace(/[^a-z0-9]+/gi, "-");
  return h("div", { class: "field", "data-field": key },
    h("label", { for: input.id }, label), input,
    hint ? h("small", { class: "hint" }, hint) : null,
    h("p", { class: "field-error", "data-error-for": key }));
}

// showFieldError puts message beside the field of form whose key the
// message names (the longest such key); it returns whether one did.
export function showFieldError(form, message) {
  clearFieldErrors(form);
  // check-config's messages name a source's key from the file's top:
  // sources.<name>.verify.type.
  const keyed = message.replace(/^sources\.[a-z0-9][a-z0-9._-]*?\.(?=[a-z_]+(\[\d+\])?[.:\s])/, "");
  let best = null;
  for (const el of form.querySelectorAll("[data-error-for]")) {
    const key = el.dataset.errorFor;
    if (names(keyed, key) && (!best || key.length > best.dataset.errorFor.length)) best = el;
  }
  if (!best) return false;
  best.textContent = message;
  best.closest(".field")?.classList.add("invalid");
  return true;
}

export function clearFieldErrors(form) {
  for (const el of form.querySelectorAll("[data-error-for]")) el.textContent = "";
  for (const el of form.querySelectorAll(".invalid")) el.classList.remove("invalid");
}

// names reports whether message names key as a whole key: "verify.type"
// in "verify.type: ...", "sinks" in "sinks[0].url: ...", not "type" in
// "verify.type".
function names(message, key) {
  let i = message.indexOf(key);
  while (i >= 0) {
    const before = i === 0 ? "" : message[i - 1];
    const after = message[i + key.length] || "";
    if (!/[\w.]/.test(before) && !/[\w]/.test(after)) return true;
    i = message.indexOf(key, i + 1);
  }
  return false;
}

// button is a button that runs f on click, disabled while f's promise runs.
export function button(label, f, cls) {
  const b = h("button", { type: "button", class: cls });
  b.textContent = label;
  b.addEventListener("click", async (ev) => {
    ev.preventDefault();
    b.disabled = true;
    try { await f(b); } finally { b.disabled = false; }
  });
  return b;
}

// notice is a message line: kind is "ok", "error" or "info".
export function notice(kind, text) {
  return h("p", { class: "notice " + kind, role: kind === "error" ? "alert" : "status" }, text);
}

// when formats an RFC 3339 time for a table (UTC, to the millisecond).
export function when(s) {
  if (!s) return "";
  return s.replace("T", " ").replace(/(\.\d{3})\d*Z$/, "$1Z");
}

// toRFC3339 turns a datetime-local input's value (local time) into an
// RFC 3339 time in UTC; "" stays "".
export function toRFC3339(v) {
  if (!v) return "";
  const d = new Date(v);
  return isNaN(d) ? "" : d.toISOString();
}

// copyButton copies text to the clipboard, saying so.
export function copyButton(text) {
  return button("Copy", async (b) => {
    try {
      await navigator.clipboard.writeText(text);
      b.textContent = "Copied";
    } catch {
      b.textContent = "Select and copy by hand";
    }
  }, "copy");
}
