// Live: the node's /metrics every 2 s, as small charts drawn here (inline
// SVG): hooks/s, answers by status, fsync latency and archive lag
// (docs/metrics.md names each metric). The figures are the node's, of
// every tenant: /metrics has no tenant label.
import { h, svg, notice } from "./dom.js";
import { checkPath } from "./api.js";

const PERIOD = 2000;
const POINTS = 60; // two minutes

// generation is the polling loop's: stop() (a navigation, a log out)
// moves it on, and a loop of an older one schedules nothing more; its
// in-flight read is aborted.
let generation = 0;
let timer = null;
let inflight = null;

export function stop() {
  generation++;
  if (timer) clearTimeout(timer);
  timer = null;
  if (inflight) inflight.abort();
  inflight = null;
}

// parse reads Prometheus text into name -> [{labels, value}].
export function parse(text) {
  const out = new Map();
  for (const line of text.split("\n")) {
    if (!line || line[0] === "#") continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{([^}]*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    if (m[3]) for (const l of m[3].matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    if (!out.has(m[1])) out.set(m[1], []);
    out.get(m[1]).push({ labels, value: Number(m[4]) });
  }
  return out;
}

const sum = (m, name, pred) => (m.get(name) || []).filter((s) => !pred || pred(s.labels)).reduce((a, s) => a + s.value, 0);
const has = (m, name) => m.has(name);

export async function render(ctx) {
  stop();
  const my = generation;
  const stale = () => my !== generation || (ctx.stale && ctx.stale());
  const { root } = ctx;
  const status = h("p", { class: "hint", id: "live-status" }, "Reading /metrics every 2 s…");
  const charts = {
    hooks: chart("live-hooks", "Hooks stored per second (node-wide, all tenants)", "/s"),
    answers: chart("live-answers", "Answers of the public listener by status, per second (node-wide, all tenants)", "/s"),
    fsync: chart("live-fsync", "WAL fsync latency, mean per batch (node-wide)", " ms"),
    lag: chart("live-lag", "Archive lag, oldest segment not uploaded (node-wide)", " s"),
  };
  // A tenant-scoped token (it cannot list tenants) sees the node's figures
  // too: say so, they are not its tenant's.
  const scoped = ctx.known === null && ctx.refused
    ? h("p", { class: "notice info", id: "live-node-wide" }, "These figures are node-wide: they count every tenant's hooks, not only " + (ctx.tenant || "yours") + ".")
    : h("p", { class: "hint", id: "live-node-wide" }, "Node-wide figures: every tenant's hooks.");
  root.append(scoped, status, h("div", { class: "charts" }, Object.values(charts).map((c) => c.el)));
  let prev = null;
  const series = { hooks: [], answers: new Map(), fsync: [], lag: [] };
  const push = (arr, v) => { arr.push(v); if (arr.length > POINTS) arr.shift(); };

  const again = () => { if (!stale()) timer = setTimeout(tick, PERIOD); };

  async function tick() {
    timer = null;
    if (stale()) return;
    let m;
    const ac = new AbortController();
    inflight = ac;
    try {
      const resp = await fetch(checkPath("/metrics", true), { cache: "no-store", credentials: "omit", signal: ac.signal });
      if (!resp.ok) throw new Error("HTTP " + resp.status);
      m = parse(await resp.text());
    } catch (e) {
      if (stale()) return;
      status.replaceChildren(notice("error", "/metrics: " + e.message));
      again();
      return;
    } finally {
      if (inflight === ac) inflight = null;
    }
    if (stale()) return;
    const now = Date.now();
    const cur = {
      at: now,
      stored: has(m, "ankusa_wal_records_total") ? sum(m, "ankusa_wal_records_total")
        : sum(m, "ankusa_edge_requests_total", (l) => l.code === "201" || l.code === "202"),
      codes: new Map((m.get("ankusa_edge_requests_total") || []).map((s) => [s.labels.code, s.value])),
      fsyncSum: sum(m, "ankusa_wal_fsync_seconds_sum"),
      fsyncCount: sum(m, "ankusa_wal_fsync_seconds_count"),
      lag: sum(m, "ankusa_archive_lag_seconds"),
    };
    if (prev) {
      const dt = (cur.at - prev.at) / 1000;
      push(series.hooks, Math.max(0, (cur.stored - prev.stored) / dt));
      for (const [code, v] of cur.codes) {
        if (!series.answers.has(code)) series.answers.set(code, []);
        push(series.answers.get(code), Math.max(0, (v - (prev.codes.get(code) || 0)) / dt));
      }
      const dc = cur.fsyncCount - prev.fsyncCount;
      push(series.fsync, dc > 0 ? ((cur.fsyncSum - prev.fsyncSum) / dc) * 1000 : 0);
      push(series.lag, cur.lag);
      charts.hooks.draw([["stored", series.hooks]]);
      // The statuses the listener ever gave (every one is registered at 0).
      charts.answers.draw([...series.answers].filter(([code]) => cur.codes.get(code) > 0).sort());
      charts.fsync.draw([["mean", series.fsync]]);
      charts.lag.draw([["lag", series.lag]]);
      status.textContent = `Updated ${new Date(now).toLocaleTimeString()}; ${cur.stored} hooks stored since start.`;
    }
    prev = cur;
    again();
  }
  await tick();
}

// chart is a small line chart: draw([[label, values], ...]).
function chart(id, title, unit) {
  const W = 320, H = 90;
  const box = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": title, class: "chart" });
  const legend = h("p", { class: "legend" });
  const el = h("figure", { class: "panel chart-box", id }, h("figcaption", {}, title), box, legend);
  const draw = (lines) => {
    const max = Math.max(1e-9, ...lines.flatMap(([, vs]) => vs));
    const parts = [svg("rect", { x: 0, y: 0, width: W, height: H, class: "chart-bg" }),
      svg("text", { x: 4, y: 12, class: "chart-axis" }, fmt(max) + unit)];
    lines.forEach(([, vs], i) => {
      const pts = vs.map((v, j) => `${(W * (POINTS - vs.length + j)) / (POINTS - 1)},${H - 4 - ((H - 20) * v) / max}`).join(" ");
      parts.push(svg("polyline", { points: pts, class: "line line-" + (i % 6), fill: "none" }));
    });
    box.replaceChildren(...parts);
    legend.replaceChildren(...lines.map(([label, vs], i) =>
      h("span", { class: "key line-" + (i % 6) }, `${label}: ${fmt(vs[vs.length - 1] || 0)}${unit} `)));
    if (!lines.length) legend.textContent = "nothing yet";
  };
  return { el, draw };
}

function fmt(v) {
  return v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(1) : v.toFixed(3);
}
