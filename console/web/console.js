// The rths console page: live telemetry of every node of a test (server-sent events from
// rths-console), or the records of a finished run folder for replay. uPlot draws the charts.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const withToken = (path) => (token ? `${path}${path.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}` : path);

// What the page knows, also read by the console's end-to-end test: each node's last datagram and
// how many arrived, and the charts' sample counts per site.
const rths = (window.rths = { mode: "live", nodes: {}, datagrams: {}, samples: {}, testState: "waiting" });

const WINDOW_S = 10;
// Figures with a column of their own in the nodes' table; the others go to its last column.
const SHOWN = new Set(["steps_done", "lateness_us", "max_lateness_us", "compute_us", "held_steps", "drops",
  "round_trip_p50_ms", "interlock_tripped", "late_ticks", "rate_hz", "steps"]);  // live charts show the last WINDOW_S seconds
const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"];

// One chart: x in seconds, one or more series; its data kept as column arrays.
class Chart {
  constructor(parent, title, yLabel, seriesNames) {
    const el = document.createElement("div");
    parent.appendChild(el);
    this.data = [[]].concat(seriesNames.map(() => []));
    const series = [{ label: "t (s)" }].concat(
      seriesNames.map((name, i) => ({ label: name, stroke: PALETTE[i % PALETTE.length], width: 1.5 })));
    this.plot = new uPlot({
      title, width: 440, height: 220, series,
      scales: { x: { time: false } },
      axes: [{ label: "time (s)" }, { label: yLabel, size: 60 }],
    }, this.data, el);
  }
  push(t, values) {
    this.data[0].push(t);
    values.forEach((v, i) => this.data[i + 1].push(v === null ? NaN : v));
    const keepFrom = this.data[0].findIndex((x) => x >= t - WINDOW_S);
    if (keepFrom > 0) this.data = this.data.map((col) => col.slice(keepFrom));
  }
  set(columns) { this.data = columns; this.plot.setData(this.data); }
  draw() { this.plot.setData(this.data); }
}

// The charts of one site: for each quantity every channel of the site.
function channelsOf(columns) {
  return columns.map((c) => /^target(\d*)_m$/.exec(c)).filter(Boolean).map((m) => m[1]);
}

function siteCharts(name, columns) {
  const section = document.createElement("section");
  section.innerHTML = `<h2>site ${name}</h2>`;
  const row = document.createElement("div");
  row.className = "site";
  section.appendChild(row);
  document.getElementById("charts").appendChild(section);
  const channels = channelsOf(columns);
  const per = (what) => channels.map((c) => `${what}${c ? " " + c : ""}`);
  const charts = {
    displacement: new Chart(row, "target and measured displacement", "mm",
      channels.flatMap((c) => [`target${c ? " " + c : ""}`, `measured${c ? " " + c : ""}`])),
    force: new Chart(row, "measured force", "kN", per("force")),
    tracking: new Chart(row, "tracking error (target - measured)", "mm", per("error")),
    model: new Chart(row, "Smith model error", "N", per("model error")),
  };
  if (rths.mode === "live") charts.loop = new Chart(row, "site loop", "us", ["lateness", "compute"]);
  return { channels, charts };
}

function numericalCharts(columns) {
  const floors = columns.filter((c) => /^x\d+_m$/.test(c)).slice(0, 6);
  const section = document.createElement("section");
  section.innerHTML = "<h2>numerical model</h2>";
  const row = document.createElement("div");
  row.className = "site";
  section.appendChild(row);
  document.getElementById("charts").prepend(section);
  return {
    floors,
    chart: new Chart(row, "floor displacements", "mm", floors.map((f) => f.replace(/_m$/, ""))),
    loop: rths.mode === "live" ? new Chart(row, "numerical loop", "us", ["lateness", "compute"]) : null,
    network: rths.mode === "live" ? new Chart(row, "network", "ms / steps", ["round trip p50 (ms)", "held steps", "dropped packets"]) : null,
  };
}

// Values of one row by column name.
const rowOf = (columns, values) => Object.fromEntries(columns.map((c, i) => [c, values[i]]));
const mm = (v) => (v === null || v === undefined ? NaN : 1e3 * v);

function siteValues(site, r) {
  const c = site.channels;
  return {
    displacement: c.flatMap((n) => [mm(r[`target${n}_m`]), mm(r[`measured${n}_m`])]),
    force: c.map((n) => (r[`force${n}_N`] ?? NaN) / 1e3),
    tracking: c.map((n) => mm(r[`target${n}_m`]) - mm(r[`measured${n}_m`])),
    model: c.map((n) => r[`model_error${n}_N`] ?? NaN),
  };
}

// ---- live ----
const sites = {};
let numerical = null;
let dirty = false;

function fmt(v, digits = 1) {
  if (v === undefined) return "";
  if (v === null || Number.isNaN(v)) return '<span class="nan">NaN</span>';
  return Number(v).toFixed(digits);
}

function renderNodes() {
  const body = document.querySelector("#nodes tbody");
  body.innerHTML = "";
  for (const [name, d] of Object.entries(rths.nodes)) {
    const f = d.figures || {};
    const rate = rths.nodes.numerical?.figures?.rate_hz || 1024;
    const tr = document.createElement("tr");
    tr.dataset.node = name;
    tr.innerHTML = `<td>${name}</td><td class="state ${d.state}">${d.state}</td><td>${d.reason || ""}</td>` +
      `<td>${f.steps_done !== undefined ? (f.steps_done / rate).toFixed(2) + " s" : ""}</td>` +
      `<td>${fmt(f.lateness_us)}</td><td>${fmt(f.max_lateness_us)}</td><td>${fmt(f.compute_us)}</td>` +
      `<td>${fmt(f.held_steps, 0)}</td><td>${fmt(f.drops, 0)}</td><td>${fmt(f.round_trip_p50_ms, 3)}</td>` +
      `<td>${f.interlock_tripped === undefined ? "" : f.interlock_tripped ? "TRIPPED" : "armed"}</td>` +
      `<td>${Object.entries(f).filter(([k]) => !SHOWN.has(k)).map(([k, v]) => `${k} ${fmt(v, 0)}`).join(", ")}</td>`;
    body.appendChild(tr);
  }
  const n = rths.nodes.numerical;
  const el = document.getElementById("test-state");
  if (n) {
    const failed = n.state === "stopped" && !/^exit 0:/.test(n.reason || "");
    rths.testState = n.state;
    el.dataset.state = n.state;
    el.className = `state ${failed ? "failed" : n.state}`;
    el.textContent = n.state + (n.reason ? ` (${n.reason})` : "");
    document.getElementById("stop").disabled = n.state === "stopped";
  }
}

function accept(d) {
  rths.nodes[d.node] = d;
  rths.datagrams[d.node] = (rths.datagrams[d.node] || 0) + 1;
  if (!d.columns || !d.rows) return;
  const r = rowOf(d.columns, d.values);
  if (d.stream === "numerical") {
    numerical ||= numericalCharts(d.columns);
    numerical.chart.push(r.t_s, numerical.floors.map((f) => mm(r[f])));
    const f = d.figures;
    numerical.loop.push(r.t_s, [f.lateness_us, f.compute_us]);
    numerical.network.push(r.t_s, [f.round_trip_p50_ms, f.held_steps, f.drops]);
  } else if (d.stream === "site") {
    const name = d.node.replace(/^site /, "");
    sites[name] ||= siteCharts(name, d.columns);
    const values = siteValues(sites[name], r);
    values.loop = [d.figures.lateness_us, d.figures.compute_us];
    for (const [k, chart] of Object.entries(sites[name].charts)) chart.push(r.t_s, values[k]);
    rths.samples[name] = (rths.samples[name] || 0) + 1;
  }
  dirty = true;
}

function redraw() {
  if (dirty) {
    dirty = false;
    renderNodes();
    if (numerical) for (const c of [numerical.chart, numerical.loop, numerical.network]) if (c) c.draw();
    for (const s of Object.values(sites)) for (const c of Object.values(s.charts)) c.draw();
  }
  requestAnimationFrame(redraw);
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
  const stop = document.getElementById("stop");
  stop.disabled = false;
  stop.onclick = async () => {
    stop.disabled = true;
    const result = document.getElementById("stop-result");
    result.textContent = "stop requested…";
    try {
      const res = await fetch(withToken("api/stop"), { method: "POST", headers: { "X-Rths-Request": "stop" } });
      const body = await res.json();
      result.textContent = body.sent_to.length
        ? `stop sent to ${body.sent_to.join(", ")}`
        : "no numerical node heard: nothing to stop";
      rths.stopSentTo = body.sent_to;
    } catch (err) {
      result.textContent = `stop failed: ${err}`;
      stop.disabled = false;
    }
  };
  requestAnimationFrame(redraw);
}

// ---- replay ----
function parseCsv(text) {
  const lines = text.trim().split("\n");
  const header = lines[0].split(",");
  const cols = header.map(() => []);
  for (let i = 1; i < lines.length; i++) {
    const cells = lines[i].split(",");
    if (cells.length !== header.length) continue;  // a last line cut by a crash
    cells.forEach((c, j) => cols[j].push(Number(c)));
  }
  return { header, cols };
}

async function replay(mode) {
  rths.mode = "replay";
  document.getElementById("replay-bar").hidden = false;
  document.getElementById("replay-run").textContent = mode.run;
  document.getElementById("stop").hidden = true;
  const el = document.getElementById("test-state");
  el.textContent = `replay of ${mode.run}`;
  el.className = "state stopped";
  if (mode.files.includes("summary.json")) {
    const summary = await (await fetch(withToken("run/summary.json"))).json();
    const code = summary.exit_code ?? 0;
    el.textContent = `replay of ${mode.run}: exit ${code}, ${summary.stop_reason || "completed"}`;
    el.className = `state ${code === 0 ? "stopped" : "failed"}`;
  }
  const all = [];  // [chart, full columns]
  for (const file of mode.files) {
    const m = /^site_(.+)\.csv$/.exec(file);
    if (file !== "numerical.csv" && !m) continue;
    const csv = parseCsv(await (await fetch(withToken(`run/${file}`))).text());
    const col = (name) => csv.cols[csv.header.indexOf(name)] || [];
    const t = col("t_s");
    if (file === "numerical.csv") {
      const n = numericalCharts(csv.header);
      all.push([n.chart, [t].concat(n.floors.map((f) => col(f).map((v) => 1e3 * v)))]);
    } else {
      const s = siteCharts(m[1], csv.header);
      const rows = t.map((_, i) => Object.fromEntries(csv.header.map((h, j) => [h, csv.cols[j][i]])));
      const values = rows.map((r) => siteValues(s, r));
      for (const k of Object.keys(s.charts)) {
        const width = values.length ? values[0][k].length : 0;
        const series = [...Array(width).keys()].map((i) => values.map((v) => v[k][i]));
        all.push([s.charts[k], [t].concat(series)]);
      }
      rths.samples[m[1]] = t.length;
    }
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
