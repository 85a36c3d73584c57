// The rths console page, part 1: what the page knows (window.rths) and its charts: units by a
// column's suffix, numbers as text, the uPlot chart, a site's and the numerical model's charts.
// console.js (loaded after it) feeds them live telemetry or a run folder's records.
//
// Telemetry is data: every string from it reaches the page as text (textContent, uPlot's labels),
// never as markup; the server's Content-Security-Policy forbids any script but the page's own files
// and uPlot. Names from telemetry key Maps or null-prototype objects, never plain objects
// ("__proto__").
"use strict";

const plain = () => Object.create(null);

// What the page knows, also read by the console's end-to-end test: each node's last datagram and
// how many arrived, the charts' sample counts per site, the charts themselves (unit, legend), the
// alerts shown and how many chart draws were made.
const rths = (window.rths = {
  mode: "live", nodes: plain(), datagrams: plain(), samples: plain(), testState: "waiting", charts: plain(),
  alerts: [], notes: [], draws: 0, redraws: 0, experiment: "", progress: "", streamErrors: 0, streamOpens: 0,
  streamNotes: [],
});

const WINDOW_S = 10;           // live charts show the last 10 s
// Charts drawn: a key holder's telemetry (or a very large test) could ask for thousands, each a
// cost at every draw. Sites and channels beyond these are named in a note; the table shows every node.
const MAX_SITES = 16;
const MAX_CHANNELS = 8;        // per site
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

// Notes that stay (what is not drawn, which record is damaged), apart from the alerts of the moment.
const notes = new Map();
function note(key, text) {
  if (text) notes.set(key, text); else notes.delete(key);
  rths.notes = [...notes.values()];
  document.getElementById("notes").replaceChildren(...rths.notes.map((t) => {
    const li = document.createElement("li");
    li.textContent = t;
    return li;
  }));
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
  const all = siteChannels(columns);
  const channels = all.slice(0, MAX_CHANNELS);
  const { el, row } = section(`site ${name}` + (all.length > channels.length
    ? ` (the first ${channels.length} of ${all.length} channels drawn)` : ""), false);
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

