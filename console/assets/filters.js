// The filter bar the dead-letter and quarantine views share: source,
// since and until (received time), kept in the view's URL.
import { h, field, toRFC3339 } from "./dom.js";

export function filterBar(ctx, onApply) {
  const p = ctx.params;
  const source = h("input", { size: 20, value: p.get("source") || "", id: "filter-source" });
  const since = h("input", { type: "datetime-local", step: 1, value: p.get("since") || "", id: "filter-since" });
  const until = h("input", { type: "datetime-local", step: 1, value: p.get("until") || "", id: "filter-until" });
  const form = h("form", { class: "inline-form filters", id: "filters" },
    field("Source", "source", source), field("Received since (local)", "since", since), field("until", "until", until),
    h("button", { type: "submit", id: "filter-apply" }, "Filter"));
  const values = () => ({ source: source.value.trim(), since: toRFC3339(since.value), until: toRFC3339(until.value) });
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    onApply(values());
  });
  return { form, values };
}

// confirmButton is a button that asks for a second click before f runs.
export function confirmButton(label, question, f, cls) {
  const b = h("button", { type: "button", class: cls });
  b.textContent = label;
  let armed = false;
  b.addEventListener("click", async () => {
    if (!armed) {
      armed = true;
      b.textContent = question;
      b.classList.add("armed");
      setTimeout(() => { armed = false; b.textContent = label; b.classList.remove("armed"); }, 5000);
      return;
    }
    b.disabled = true;
    try { await f(); } finally { b.disabled = false; }
  });
  return b;
}
