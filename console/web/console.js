// The rths console page: live telemetry of every node of a test (server-sent events from
// rths-console), or the records of a finished run folder for replay. uPlot draws the charts.
//
// Telemetry is data: every string from it reaches the page as text (textContent, uPlot's labels),
// never as markup; the server's Content-Security-Policy forbids any script but this file and uPlot.
// Names from telemetry key Maps or null-prototype objects, never plain objects ("__proto__").
"use strict";

const token = new URLSearchParams(location.search).get("token");
const withToken = (path) => (token ? `${path}${path.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}` : path);
const plain = () => Object.create(null);

// What the page knows, also read by the console's end-to-end test: each node's last datagram and
// how many arrived, the charts' sample counts per site, the charts themselves (unit, legend), the
// alerts shown and how many chart draws were made.
const rths = (window.rths = {
  mode: "live", nodes: plain(), datagrams: plain(), samples: plain(), testState: "waiting", charts: plain(),
  alerts: [], draws: 0, redraws: 0, experiment: "", progress: "",
});

const WINDOW_S = 10;           // live charts show the last 10 s
// The table and the alerts at most 10 times a second, the charts at most 5, each only when its data
// changed: a chart's draw is most of the page's CPU time (Chromium, two sites: about 35 % of a core
// at 10 draws a second, 18 % at 5), and a browser on a node's host competes with the step.
const REDRAW_MS = 100;
const CHART_EVERY = 2;        // redraws per chart draw
const MAX_NODES = 64;          // the page's node table, as the console's
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];

// ---- units: a column's suffix says its kind (m, rad, N, Nm) ----
const UNITS = {
  m: { label: "mm", scale: 1e3, kind: "translation", minSpan: 1 },
  rad: { label: "mrad", scale: 1e3, kind: "rotation", minSpan: 1 },
  N: { label: "kN", scale: 1e-3, kind: "force", minSpan: 0.1 },
  Nm: { label: "kN·m", scale: 1e-3, kind: "moment", minSpan: 0.1 },
};
const suffixOf = (column) => (/_(Nm|rad|N|m)$/.exec(column) || [])[1];
const baseOf = (column) => column.replace(/_(Nm|rad|N|m)$/, "");
const scaled = (v, unit) => (typeof v === "number" && Number.isFinite(v) ? v * UNITS[unit].scale : NaN);

// ---- numbers as text ----
function fmtValue(v, digits) {
  if (v === null || v === undefined) return "--";
  if (typeof v !== "number" || Number.isNaN(v)) return "NaN";
  const a = Math.abs(v);
  const d = digits ?? (a >= 100 ? 1 : a >= 1 ? 2 : 3);
  return v.toFixed(d);
}
const num = (v) => (typeof v === "number" ? v : v === null ? NaN : undefined);

// The axis of a signal keeps at least minSpan, centred on the signal: a signal that is exactly 0
// shows as 0 on a small span, not as noise stretched over the whole chart.
function spanned(min, max, minSpan) {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [-minSpan / 2, minSpan / 2];
  if (max - min >= minSpan) {
    const pad = 0.05 * (max - min);
    return [min - pad, max + pad];
  }
  const mid = (min + max) / 2;
  return [mid - minSpan / 2, mid + minSpan / 2];
}

// Chart sizes from the window: a site's row of charts fits across it, two sites and the numerical
// model fit a 1400 x 1000 screen.
function chartSize() {
  const perRow = 5;
  const width = Math.max(220, Math.floor((document.documentElement.clientWidth - 40) / perRow) - 8);
  return { width, height: 150 };
}

// One chart: x in seconds, one or more series, its data kept as column arrays; drawn only when
// something changed, its legend showing the newest values unless the cursor is over it.
class Chart {
  constructor(parent, key, title, unit, names, minSpan, options = {}) {
    this.el = document.createElement("div");
    this.el.className = "chart";
    this.el.dataset.chart = key;
    parent.appendChild(this.el);
    this.key = key;
    this.unit = unit;
    this.title = `${title} (${unit})`;
    this.data = [[]].concat(names.map(() => []));
    this.dirty = false;
    this.hover = false;
    const series = [{ label: options.xLabel || "t (s)", value: (u, v) => fmtValue(v, 2) }].concat(names.map((name, i) => ({
      label: name,
      stroke: PALETTE[(options.colour ? options.colour(i) : i) % PALETTE.length],
      dash: options.dashed && options.dashed(i) ? [6, 4] : undefined,
      width: 1.5,
      value: (u, v) => fmtValue(v),
      paths: options.bars ? uPlot.paths.bars({ size: [0.9, 40] }) : undefined,
    })));
    const { width, height } = chartSize();
    this.plot = new uPlot({
      title: this.title, width, height, series,
      scales: { x: { time: false, distr: options.logX ? 3 : 1 }, y: { range: (u, min, max) => spanned(min, max, minSpan) } },
      axes: [{ size: 28 }, { size: 50 }],
      legend: { live: !options.fixedLegend },
    }, this.data, this.el);
    this.el.addEventListener("mouseenter", () => { this.hover = true; });
    this.el.addEventListener("mouseleave", () => { this.hover = false; this.dirty = true; });
    rths.charts[key] = this;
  }
  push(t, values) {
    if (typeof t !== "number" || !Number.isFinite(t)) return;
    const x = this.data[0];
    if (x.length && t <= x[x.length - 1]) return;  // the same row again: nothing new
    x.push(t);
    values.forEach((v, i) => this.data[i + 1].push(typeof v === "number" ? v : NaN));
    while (x.length > 1 && x[0] < t - WINDOW_S) for (const col of this.data) col.shift();
    this.dirty = true;
  }
  set(columns) { this.data = columns; this.dirty = true; }
  draw() {
    if (!this.dirty) return false;
    this.dirty = false;
    this.plot.setData(this.data);
    if (!this.hover && this.data[0].length) this.plot.setLegend({ idx: this.data[0].length - 1 });
    rths.draws++;
    return true;
  }
  // The legend's values as shown (the end-to-end test reads them).
  legend() { return [...this.el.querySelectorAll(".u-legend .u-value")].map((e) => e.textContent); }
  yRange() { const s = this.plot.scales.y; return [s.min, s.max]; }
  highlight(level) { this.el.classList.toggle("over", level === "over"); this.el.classList.toggle("warn", level === "warn"); }
  remove() { this.plot.destroy(); this.el.remove(); delete rths.charts[this.key]; }
}

function section(title, prepend) {
  const el = document.createElement("section");
  const h = document.createElement("h2");
  h.textContent = title;
  const row = document.createElement("div");
  row.className = "site";
  el.append(h, row);
  const charts = document.getElementById("charts");
  if (prepend) charts.prepend(el); else charts.appendChild(el);
  return { el, row };
}

// ---- a site's channels, by kind ----
// Channel c of a site has target<c>_<u>, measured<c>_<u>, force<c>_<f>, model_error<c>_<f>, where u
// is m or rad and f is N or Nm: each chart holds one unit only, so a rotation never lands on a mm axis.
function siteChannels(columns) {
  const has = new Set(columns);
  const channels = [];
  for (const c of columns) {
    const m = /^target(\d*)_(m|rad)$/.exec(c);
    if (!m || !has.has(`measured${m[1]}_${m[2]}`)) continue;
    const find = (prefix) => ["N", "Nm"].map((u) => `${prefix}${m[1]}_${u}`).find((n) => has.has(n));
    const force = find("force");
    channels.push({ id: m[1], motion: m[2], force, forceUnit: force && suffixOf(force), modelError: find("model_error") });
  }
  return channels;
}

function siteCharts(name, columns) {
  const { el, row } = section(`site ${name}`, false);
  const channels = siteChannels(columns);
  const label = (what, ch) => `${what}${ch.id ? " " + ch.id : ""}`;
  const charts = [];
  const key = (what) => `site ${name} ${what}`;
  for (const unit of ["m", "rad"]) {
    const chs = channels.filter((ch) => ch.motion === unit);
    if (!chs.length) continue;
    const what = unit === "m" ? "displacement" : "rotation";
    charts.push({
      chart: new Chart(row, key(what), `target and measured ${what}`, UNITS[unit].label,
        chs.flatMap((ch) => [label("target", ch), label("measured", ch)]), UNITS[unit].minSpan,
        { dashed: (i) => i % 2 === 0 }),
      values: (r) => chs.flatMap((ch) => [scaled(r[`target${ch.id}_${unit}`], unit), scaled(r[`measured${ch.id}_${unit}`], unit)]),
    });
  }
  for (const unit of ["N", "Nm"]) {
    const chs = channels.filter((ch) => ch.forceUnit === unit);
    if (!chs.length) continue;
    charts.push({
      chart: new Chart(row, key(unit === "N" ? "force" : "moment"), `measured ${unit === "N" ? "force" : "moment"}`,
        UNITS[unit].label, chs.map((ch) => label(unit === "N" ? "force" : "moment", ch)), UNITS[unit].minSpan),
      values: (r) => chs.map((ch) => scaled(r[ch.force], unit)),
    });
  }
  for (const unit of ["m", "rad"]) {
    const chs = channels.filter((ch) => ch.motion === unit);
    if (!chs.length) continue;
    // measured - target, as the run's plots (rths-numerical plot) and the tracking metrics take it.
    charts.push({
      chart: new Chart(row, key(`tracking ${unit}`), "tracking error, measured − target", UNITS[unit].label,
        chs.map((ch) => label("error", ch)), UNITS[unit].minSpan / 10),
      values: (r) => chs.map((ch) => scaled(r[`measured${ch.id}_${unit}`], unit) - scaled(r[`target${ch.id}_${unit}`], unit)),
    });
  }
  for (const unit of ["N", "Nm"]) {
    const chs = channels.filter((ch) => ch.modelError && suffixOf(ch.modelError) === unit);
    if (!chs.length) continue;
    charts.push({
      chart: new Chart(row, key(`model error ${unit}`), "Smith model error", UNITS[unit].label,
        chs.map((ch) => label("model error", ch)), UNITS[unit].minSpan),
      values: (r) => chs.map((ch) => scaled(r[ch.modelError], unit)),
    });
  }
  let loop = null;
  if (rths.mode === "live") {
    loop = new Chart(row, key("loop"), "site loop", "µs", ["lateness", "compute"], 100);
  }
  return { el, channels, charts, loop };
}

// The numerical model's DOF columns: every _m or _rad column but the sites' and springs' own.
function dofColumns(columns) {
  return columns.filter((c) => (suffixOf(c) === "m" || suffixOf(c) === "rad") &&
    !/^(v|u|f|e|fm|xm|st|sc|sm|us|fs)_/.test(c)).slice(0, 6);
}

function numericalCharts(columns, reference) {
  const { el, row } = section("numerical model", true);
  const charts = [];
  for (const unit of ["m", "rad"]) {
    const dofs = dofColumns(columns).filter((c) => suffixOf(c) === unit);
    if (!dofs.length) continue;
    const withRef = reference ? dofs.filter((d) => reference.includes(d)) : [];
    const names = dofs.map(baseOf).concat(withRef.map((d) => `${baseOf(d)} reference`));
    charts.push({
      dofs, withRef,
      chart: new Chart(row, `numerical ${unit === "m" ? "floors" : "rotations"}`,
        unit === "m" ? "floor displacements" : "rotations", UNITS[unit].label, names, UNITS[unit].minSpan,
        { dashed: (i) => i >= dofs.length, colour: (i) => (i >= dofs.length ? dofs.indexOf(withRef[i - dofs.length]) : i) }),
      values: (r) => dofs.map((d) => scaled(r[d], unit)),
      unit,
    });
  }
  const live = rths.mode === "live";
  return {
    el, charts,
    loop: live ? new Chart(row, "numerical loop", "numerical loop", "µs", ["lateness", "compute"], 100) : null,
    roundTrip: live ? new Chart(row, "round trip", "round trip p50", "ms", ["round trip"], 1) : null,
    rates: live ? new Chart(row, "network rates", "held steps, drops and late ticks", "per s",
      ["held steps", "dropped packets", "late ticks"], 1) : null,
  };
}

// Values of one row by column name (a Map: column names are telemetry).
function rowOf(columns, values) {
  const r = plain();
  columns.forEach((c, i) => { r[c] = values[i]; });
  return r;
}

// ---- live ----
const sites = new Map();
let numerical = null;
let numericalRun = "";
const lastCounts = new Map();  // node -> {t, held, drops, late}: rates from successive figures

// A datagram that is not what a node sends is ignored whole.
function wellFormed(d) {
  if (!d || typeof d !== "object" || typeof d.node !== "string" || typeof d.state !== "string") return false;
  if (d.reason !== undefined && typeof d.reason !== "string") return false;
  if (d.figures !== undefined && (typeof d.figures !== "object" || d.figures === null || Array.isArray(d.figures))) return false;
  if (d.columns !== undefined && !(Array.isArray(d.columns) && d.columns.every((c) => typeof c === "string"))) return false;
  if (d.values !== undefined && !(Array.isArray(d.values) && d.values.every((v) => v === null || typeof v === "number"))) return false;
  return true;
}

function rememberNode(d) {
  if (!(d.node in rths.nodes)) {
    const names = Object.keys(rths.nodes);
    if (names.length >= MAX_NODES) {
      const oldest = names.reduce((a, b) => (rths.nodes[a].heardAt <= rths.nodes[b].heardAt ? a : b));
      forgetNode(oldest);
    }
  }
  const figures = plain();
  for (const [k, v] of Object.entries(d.figures || {})) figures[k] = num(v);
  rths.nodes[d.node] = { node: d.node, state: d.state, reason: d.reason || "", figures, experiment: typeof d.experiment === "string" ? d.experiment : "", heardAt: performance.now() };
  rths.datagrams[d.node] = (rths.datagrams[d.node] || 0) + 1;
}

function forgetNode(name) {
  delete rths.nodes[name];
  delete rths.datagrams[name];
  lastCounts.delete(name);
  const row = rows.get(name);
  if (row) { row.tr.remove(); rows.delete(name); }
  const site = name.startsWith("site ") ? sites.get(name.slice(5)) : null;
  if (site) {
    for (const c of site.charts) c.chart.remove();
    if (site.loop) site.loop.remove();
    site.el.remove();
    sites.delete(name.slice(5));
  }
}

function rates(name, t, f) {
  const now = { t, held: f.held_steps, drops: f.drops, late: f.late_ticks };
  const before = lastCounts.get(name);
  lastCounts.set(name, now);
  if (!before || !(t > before.t)) return null;
  const rate = (a, b) => (typeof a === "number" && typeof b === "number" ? Math.max(0, (a - b) / (t - before.t)) : NaN);
  return [rate(now.held, before.held), rate(now.drops, before.drops), rate(now.late, before.late)];
}

function accept(d) {
  if (!wellFormed(d)) return;
  rememberNode(d);
  tableDirty = true;
  if (!d.columns || !d.values) return;
  const r = rowOf(d.columns, d.values);
  const f = rths.nodes[d.node].figures;
  if (d.stream === "numerical") {
    numerical ||= numericalCharts(d.columns, null);
    for (const c of numerical.charts) c.chart.push(r.t_s, c.values(r));
    numerical.loop.push(r.t_s, [f.lateness_us, f.compute_us]);
    numerical.roundTrip.push(r.t_s, [f.round_trip_p50_ms]);
    const perSecond = rates(d.node, r.t_s, f);
    if (perSecond) numerical.rates.push(r.t_s, perSecond);
  } else if (d.stream === "site" && d.node.startsWith("site ")) {
    const name = d.node.slice(5);
    if (!sites.has(name)) sites.set(name, siteCharts(name, d.columns));
    const site = sites.get(name);
    for (const c of site.charts) c.chart.push(r.t_s, c.values(r));
    site.loop.push(r.t_s, [f.lateness_us, f.compute_us]);
    rths.samples[name] = (rths.samples[name] || 0) + 1;
  }
}

// The console's own view: which runs it holds (a finished test's nodes leave), its counters, the
// stop request and whether the numerical node acknowledged it.
function consoleStatus(s) {
  if (!s || !Array.isArray(s.nodes)) return;
  rths.console = s;
  const names = new Set(s.nodes.map((n) => n.node));
  for (const name of Object.keys(rths.nodes)) if (!names.has(name)) forgetNode(name);
  const num = s.nodes.find((n) => n.node === "numerical");
  if (num && numericalRun && num.run !== numericalRun && numerical) {
    for (const c of numerical.charts) c.chart.remove();
    for (const c of [numerical.loop, numerical.roundTrip, numerical.rates]) if (c) c.remove();
    numerical.el.remove();
    numerical = null;
    lastCounts.clear();
  }
  if (num) numericalRun = num.run;
  document.getElementById("telemetry-counts").textContent =
    `telemetry: ${s.accepted} taken, ${s.dropped_total} dropped`;
  if (Array.isArray(s.stops) && s.stops.length && rths.stopPressed) showStop(s.stops);
  tableDirty = true;
}

function showStop(targets) {
  const result = document.getElementById("stop-result");
  const acked = targets.filter((t) => t.acknowledged);
  rths.stopAcknowledged = targets.length > 0 && acked.length === targets.length;
  result.textContent = !targets.length ? "no running numerical node heard: nothing to stop"
    : rths.stopAcknowledged ? `stop acknowledged by ${targets.map((t) => `${t.node} at ${t.source}`).join(", ")}`
      : `stop sent to ${targets.map((t) => `${t.node} at ${t.source}`).join(", ")}, not acknowledged yet`;
}

// ---- the nodes' table, updated cell by cell ----
const rows = new Map();
let tableDirty = false;
const COLUMNS = 13;
const SHOWN = new Set(["steps_done", "lateness_us", "max_lateness_us", "late_ticks", "compute_us", "held_steps", "drops",
  "round_trip_p50_ms", "interlock_tripped", "rate_hz", "steps", "delay_guard_warned", "delay_guard_use"]);

function setCell(td, text, level) {
  if (td.textContent !== text) td.textContent = text;
  const cls = level || "";
  if (td.className !== cls) td.className = cls;
}

function stepPeriodUs() {
  const rate = rths.nodes.numerical?.figures.rate_hz;
  return 1e6 / (typeof rate === "number" && rate > 0 ? rate : 1024);
}

function renderNodes() {
  const body = document.querySelector("#nodes tbody");
  const period = stepPeriodUs();
  const alerts = [];
  for (const [name, n] of Object.entries(rths.nodes)) {
    let row = rows.get(name);
    if (!row) {
      const tr = document.createElement("tr");
      const tds = [...Array(COLUMNS)].map(() => tr.appendChild(document.createElement("td")));
      if (name === "numerical") body.prepend(tr); else body.appendChild(tr);  // the test's own row first
      row = { tr, tds };
      rows.set(name, row);
    }
    const f = n.figures;
    const rate = 1e6 / period;
    const late = f.lateness_us > period;
    const tripped = f.interlock_tripped !== undefined && f.interlock_tripped !== 0;
    const t = row.tds;
    setCell(t[0], name);
    setCell(t[1], n.state, `state ${n.state}`);
    setCell(t[2], n.reason);
    t[2].title = n.reason;
    setCell(t[3], typeof f.steps_done === "number" ? (f.steps_done / rate).toFixed(2) : "");
    setCell(t[4], f.lateness_us === undefined ? "" : fmtValue(f.lateness_us, 1), late ? "over" : "");
    setCell(t[5], f.max_lateness_us === undefined ? "" : fmtValue(f.max_lateness_us, 1), f.max_lateness_us > period ? "warn" : "");
    setCell(t[6], f.late_ticks === undefined ? "" : fmtValue(f.late_ticks, 0), f.late_ticks > 0 ? "warn" : "");
    setCell(t[7], f.compute_us === undefined ? "" : fmtValue(f.compute_us, 1));
    setCell(t[8], f.held_steps === undefined ? "" : fmtValue(f.held_steps, 0));
    setCell(t[9], f.drops === undefined ? "" : fmtValue(f.drops, 0));
    setCell(t[10], f.round_trip_p50_ms === undefined ? "" : fmtValue(f.round_trip_p50_ms, 3));
    setCell(t[11], f.interlock_tripped === undefined ? "" : tripped ? "TRIPPED" : "armed", tripped ? "over" : "");
    setCell(t[12], Object.entries(f).filter(([k]) => !SHOWN.has(k)).map(([k, v]) => `${k} ${fmtValue(v, 0)}`).join(", "));
    if (n.state !== "stopped") {
      if (late) alerts.push(["over", `${name}: tick ${fmtValue(f.lateness_us, 0)} µs late, more than the step period (${period.toFixed(0)} µs)`]);
      if (tripped) alerts.push(["over", `${name}: interlock TRIPPED`]);
      if (f.watchdog_tripped) alerts.push(["over", `${name}: watchdog tripped`]);
    }
    if (f.delay_guard_warned > 0) {
      const use = typeof f.delay_guard_use === "number" ? ` (round trip at ${(100 * f.delay_guard_use).toFixed(0)} % of its budget)` : "";
      alerts.push([f.delay_guard_use >= 1 ? "over" : "warn", `delay guard: ${f.delay_guard_warned} site(s) past the warning${use}`]);
    }
  }
  // Highlights on the charts too.
  if (numerical && numerical.loop) {
    const f = rths.nodes.numerical?.figures || {};
    numerical.loop.highlight(f.lateness_us > period ? "over" : "");
    numerical.roundTrip.highlight(f.delay_guard_use >= 1 ? "over" : f.delay_guard_warned > 0 ? "warn" : "");
  }
  for (const [name, s] of sites) {
    const f = rths.nodes[`site ${name}`]?.figures || {};
    if (s.loop) s.loop.highlight(f.lateness_us > period ? "over" : "");
    for (const c of s.charts) c.chart.highlight(f.interlock_tripped ? "over" : "");
  }
  renderAlerts(alerts);
  renderTest();
}

function renderAlerts(alerts) {
  const text = alerts.map(([, a]) => a);
  if (text.join("\n") === rths.alerts.join("\n")) return;
  rths.alerts = text;
  const ul = document.getElementById("alerts");
  ul.replaceChildren(...alerts.map(([level, a]) => {
    const li = document.createElement("li");
    li.className = level;
    li.textContent = a;
    return li;
  }));
}

function renderTest() {
  const n = rths.nodes.numerical;
  const el = document.getElementById("test-state");
  if (!n) return;
  const failed = n.state === "stopped" && !/^exit 0:/.test(n.reason);
  rths.testState = n.state;
  el.dataset.state = n.state;
  el.className = `state ${failed ? "failed" : n.state}`;
  setCell(el, n.state + (n.reason ? ` (${n.reason})` : ""), `state ${failed ? "failed" : n.state}`);
  document.getElementById("stop").disabled = n.state === "stopped";
  if (n.experiment && rths.experiment !== n.experiment) {
    rths.experiment = n.experiment;
    document.getElementById("experiment").textContent = n.experiment;
    document.title = `rths console: ${n.experiment}`;
  }
  const f = n.figures;
  if (typeof f.steps_done === "number" && typeof f.steps === "number" && f.rate_hz > 0) {
    const done = f.steps_done / f.rate_hz;
    const total = Math.max(0, f.steps - 1) / f.rate_hz;
    const text = `t ${done.toFixed(1)} s of ${total.toFixed(1)} s`;
    if (text !== rths.progress) {
      rths.progress = text;
      document.getElementById("progress-text").textContent = text;
      document.getElementById("progress-bar").value = total > 0 ? Math.min(1, done / total) : 0;
    }
  }
}

function redraw() {
  rths.redraws++;
  if (tableDirty) {
    tableDirty = false;
    renderNodes();
  }
  if (rths.redraws % CHART_EVERY !== 0) return;
  if (numerical) {
    for (const c of numerical.charts) c.chart.draw();
    for (const c of [numerical.loop, numerical.roundTrip, numerical.rates]) if (c) c.draw();
  }
  for (const s of sites.values()) {
    for (const c of s.charts) c.chart.draw();
    if (s.loop) s.loop.draw();
  }
}

function live() {
  const events = new EventSource(withToken("api/events"));
  events.onmessage = (e) => {
    try {
      accept(JSON.parse(e.data));
    } catch (err) {
      console.warn("telemetry not understood", err);
    }
  };
  events.addEventListener("console", (e) => {
    try {
      consoleStatus(JSON.parse(e.data));
    } catch (err) {
      console.warn("console status not understood", err);
    }
  });
  const stop = document.getElementById("stop");
  stop.disabled = false;
  stop.onclick = async () => {
    stop.disabled = true;
    rths.stopPressed = true;
    const result = document.getElementById("stop-result");
    result.textContent = "stop requested…";
    try {
      const res = await fetch(withToken("api/stop"), { method: "POST", headers: { "X-Rths-Request": "stop" } });
      const body = await res.json();
      rths.stopSentTo = body.sent_to;
      showStop(body.sent_to);
      if (!body.sent_to.length) stop.disabled = false;
    } catch (err) {
      result.textContent = `stop failed: ${err}`;
      stop.disabled = false;
    }
  };
  setInterval(redraw, REDRAW_MS);
}

// ---- replay ----
function parseCsv(text) {
  const lines = text.trim().split("\n");
  const header = lines[0].split(",");
  const cols = header.map(() => []);
  for (let i = 1; i < lines.length; i++) {
    const cells = lines[i].split(",");
    if (cells.length !== header.length) continue;  // a last line cut by a crash
    cells.forEach((c, j) => cols[j].push(c === "" || c === "nan" || c === "NaN" ? NaN : Number(c)));
  }
  const col = (name) => cols[header.indexOf(name)] || [];
  return { header, cols, col };
}

const fetchText = async (file) => (await fetch(withToken(`run/${file}`))).text();

function replayNodes(summary, siteSummaries) {
  const add = (name, state, reason, figures) => {
    rths.nodes[name] = { node: name, state, reason, figures, experiment: "", heardAt: 0 };
  };
  if (summary) {
    const loop = summary.loop || {};
    const figures = plain();
    figures.steps_done = Number(summary.steps || 0);
    figures.rate_hz = Number(summary.rate_hz || 0);
    figures.steps = Number(summary.planned_steps || 0);
    if (summary.loop) {
      figures.lateness_us = Number(loop.lateness_p99_us);
      figures.max_lateness_us = Number(loop.lateness_max_us);
      figures.late_ticks = Number(loop.late_ticks || 0);
      figures.compute_us = Number(loop.compute_p99_us);
    }
    add("numerical", "stopped", `exit ${summary.exit_code ?? 0}: ${summary.stop_reason || "completed"}`, figures);
  }
  for (const [name, s] of siteSummaries) {
    const figures = plain();
    figures.steps_done = Number(s.steps || 0);
    figures.held_steps = Number(s.held_steps || 0);
    if (s.loop) {
      figures.lateness_us = Number(s.loop.lateness_p99_us);
      figures.max_lateness_us = Number(s.loop.lateness_max_us);
      figures.late_ticks = Number(s.loop.late_ticks || 0);
      figures.compute_us = Number(s.loop.compute_p99_us);
    }
    figures.interlock_tripped = s.interlock && s.interlock !== "not tripped" ? 1 : 0;
    add(`site ${name}`, "stopped", `exit ${s.exit_code ?? 0}: ${s.stop_reason || "completed"}`, figures);
  }
}

// The run's loop timing (timing.csv: histograms of the numerical node's lateness and compute time and
// each site's round trip): steps per bin against the bin's centre, on a log axis.
function timingCharts(text) {
  const { row } = section("loop timing (the whole run)", false);
  const bins = new Map();
  for (const line of text.trim().split("\n").slice(1)) {
    const [h, lo, hi, count] = line.split(",");
    if (!bins.has(h)) bins.set(h, []);
    bins.get(h).push({ centre: (Number(lo) + Number(hi)) / 2, upper: Number(hi), count: Number(count) });
  }
  // A histogram's p50, p99 and largest bin's upper edge, for its label.
  const percentiles = (b) => {
    const total = b.reduce((a, x) => a + x.count, 0);
    const at = (q) => { let sum = 0; for (const x of b) { sum += x.count; if (sum >= q * total) return x.upper; } return NaN; };
    return `p50 ${fmtValue(at(0.5), 0)}, p99 ${fmtValue(at(0.99), 0)}, max ${fmtValue(b[b.length - 1].upper, 0)} µs`;
  };
  const groups = [["loop", [...bins.keys()].filter((h) => !h.startsWith("round_trip_"))],
    ["round trip", [...bins.keys()].filter((h) => h.startsWith("round_trip_"))]];
  for (const [title, hs] of groups) {
    if (!hs.length) continue;
    const joined = uPlot.join(hs.map((h) => [bins.get(h).map((x) => x.centre), bins.get(h).map((x) => x.count)]));
    const chart = new Chart(row, `timing ${title}`, title === "loop" ? "step loop lateness and compute"
      : "round trip per site", "steps per bin", hs.map((h) => `${h}: ${percentiles(bins.get(h))}`), 1,
    { xLabel: "µs", logX: true, fixedLegend: true });
    chart.set(joined);
    chart.draw();
  }
}

async function replay(mode) {
  rths.mode = "replay";
  document.getElementById("replay-bar").hidden = false;
  document.getElementById("replay-run").textContent = mode.run;
  document.getElementById("stop").hidden = true;
  document.getElementById("progress").hidden = true;
  const el = document.getElementById("test-state");
  el.textContent = `replay of ${mode.run}`;
  el.className = "state stopped";
  const files = new Set(mode.files);
  let summary = null;
  if (files.has("summary.json")) {
    summary = await (await fetch(withToken("run/summary.json"))).json();
    const code = summary.exit_code ?? 0;
    el.textContent = `replay of ${mode.run}: exit ${code}, ${summary.stop_reason || "completed"}`;
    el.className = `state ${code === 0 ? "stopped" : "failed"}`;
    if (typeof summary.name === "string") {
      rths.experiment = summary.name;
      document.getElementById("experiment").textContent = summary.name;
    }
  }
  const siteSummaries = [];
  for (const file of mode.files) {
    const m = /^site_(.+)\.json$/.exec(file);
    if (m) siteSummaries.push([m[1], await (await fetch(withToken(`run/${file}`))).json()]);
  }
  replayNodes(summary, siteSummaries);
  // A run's summaries hold percentiles of the whole run, not the last tick's.
  for (const th of document.querySelectorAll("#nodes th")) {
    th.textContent = th.textContent.replace(/^(lateness|compute) \(/, "$1 p99 (");
  }
  renderNodes();
  const all = [];  // [chart, full columns]
  const reference = files.has("reference.csv") ? parseCsv(await fetchText("reference.csv")) : null;
  for (const file of mode.files) {
    const m = /^site_(.+)\.csv$/.exec(file);
    if (file !== "numerical.csv" && !m) continue;
    const csv = parseCsv(await fetchText(file));
    const t = csv.col("t_s");
    const rowAt = (i) => { const r = plain(); csv.header.forEach((h, j) => { r[h] = csv.cols[j][i]; }); return r; };
    const rowsOfCsv = t.map((_, i) => rowAt(i));
    if (file === "numerical.csv") {
      const n = numericalCharts(csv.header, reference ? reference.header : null);
      for (const c of n.charts) {
        const hybrid = c.dofs.map((d) => csv.col(d).map((v) => scaled(v, c.unit)));
        // The reference on the hybrid run's time axis (both are recorded at every step).
        const ref = c.withRef.map((d) => {
          const rt = reference.col("t_s");
          const rv = reference.col(d);
          return t.map((x, i) => (rt[i] === x ? scaled(rv[i], c.unit) : NaN));
        });
        all.push([c.chart, [t].concat(hybrid, ref)]);
      }
    } else {
      const s = siteCharts(m[1], csv.header);
      sites.set(m[1], s);
      for (const c of s.charts) {
        const values = rowsOfCsv.map((r) => c.values(r));
        const width = values.length ? values[0].length : 0;
        all.push([c.chart, [t].concat([...Array(width).keys()].map((i) => values.map((v) => v[i])))]);
      }
      rths.samples[m[1]] = t.length;
    }
  }
  if (files.has("timing.csv")) {
    timingCharts(await fetchText("timing.csv"));
  }
  const end = Math.max(0, ...all.map(([, d]) => d[0][d[0].length - 1] || 0));
  const scrub = document.getElementById("scrub");
  const show = () => {
    const w = Number(document.getElementById("window-s").value) || 10;
    const to = (Number(scrub.value) / 1000) * end;
    const from = Math.max(0, to - w);
    document.getElementById("scrub-time").textContent = `${from.toFixed(2)} - ${to.toFixed(2)} s of ${end.toFixed(2)} s`;
    for (const [chart, data] of all) {
      const lo = data[0].findIndex((x) => x >= from);
      let hi = data[0].findIndex((x) => x > to);
      if (hi < 0) hi = data[0].length;
      chart.set(data.map((c) => c.slice(Math.max(lo, 0), hi)));
      chart.draw();
    }
    rths.scrubbedTo = to;
  };
  scrub.oninput = show;
  document.getElementById("window-s").oninput = show;
  scrub.value = 1000;
  show();
  rths.replayReady = true;
}

fetch(withToken("api/mode"))
  .then((r) => r.json())
  .then((mode) => (mode.mode === "replay" ? replay(mode) : live()));
