// The frame the dead-letter and quarantine views share: a filter bar
// (source, since and until, received time, kept in the view's URL), a
// message line, and the list it filters, with the bulk drop.
import { api, listAll, query } from "./api.js";
import { h, field, notice, toRFC3339 } from "./dom.js";

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

// filteredList draws the filter bar, a message line and the list of
// o.path's o.field, loaded with o.query(filter) and drawn by
// o.draw(rows, act, filter) (the nodes to show; o.empty when none pass).
// act(what, f) runs f, says its answer or its error, and loads again.
export function filteredList(ctx, o) {
  const msg = h("div", { class: "messages", id: `${o.id}-messages` });
  const list = h("div", { id: `${o.id}-list` });
  const { form, values } = filterBar(ctx, () => load());
  ctx.root.append(h("section", { class: "panel" }, form), msg, h("section", { class: "panel" }, h("h2", {}, o.title), list));
  const say = (kind, text) => msg.replaceChildren(notice(kind, text));
  const act = async (what, f) => {
    try {
      say("ok", await f());
      await load();
    } catch (e) {
      say("error", `${what}: ${e}`);
    }
  };
  async function load() {
    let rows;
    try {
      rows = await listAll(o.path, o.field, o.query(values()));
      if (ctx.stale()) return;
    } catch (e) {
      if (ctx.stale()) return;
      list.replaceChildren(notice("error", String(e)));
      return;
    }
    if (!rows.length) {
      list.replaceChildren(h("p", { id: `${o.id}-empty` }, o.empty));
      return;
    }
    list.replaceChildren(...o.draw(rows, act, values()));
  }
  return load();
}

// dropAllButton drops every row passing filter f with the API's bulk drop
// at path (all=true when f is empty), after a second click.
export function dropAllButton(act, path, f) {
  return confirmButton("Drop all passing the filter", "Click again to drop them all", () => act("drop all", async () => {
    const q = f.source || f.since || f.until ? f : { all: "true" };
    const r = await api("POST", path + query(q));
    return `Dropped ${r.dropped}.`;
  }), "danger");
}
