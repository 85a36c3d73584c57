// The rths console page, part 2: live telemetry of every node of a test (server-sent events from
// rths-console) or the records of a finished run folder for replay, drawn with charts.js's charts;
// the nodes' table, alerts and notes, the Stop button.
//
// Telemetry is data: every string from it reaches the page as text (textContent), never as markup.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const withToken = (path) => (token ? `${path}${path.includes("?") ? "&" : "?"}token=${encodeURIComponent(token)}` : path);
// The table and the alerts at most 10 times a second, the charts at most 5, each only when its data
// changed: a chart's draw is most of the page's CPU time (Chromium, two sites: about 35 % of a core
// at 10 draws a second, 18 % at 5), and a browser on a node's host competes with the step.
const REDRAW_MS = 100;
const CHART_EVERY = 2;        // redraws per chart draw
const MAX_NODES = 64;          // the page's node table, as the console's
const STALE_S = 3;             // a node not heard for this long: its state is not known any more

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
const notDrawn = new Set();    // sites beyond MAX_SITES

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
  if (name.startsWith("site ") && notDrawn.delete(name.slice(5))) {
    note("sites", notDrawn.size ? `${notDrawn.size} site(s) not drawn (at most ${MAX_SITES}; the table shows every node)` : "");
  }
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
    if (!sites.has(name)) {
      if (sites.size >= MAX_SITES) {
        notDrawn.add(name);
        note("sites", `${notDrawn.size} site(s) not drawn (at most ${MAX_SITES}; the table shows every node)`);
        return;
      }
      sites.set(name, siteCharts(name, d.columns));
    }
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
  // When each node was last heard, by the console's clock (a page that just connected got the newest
  // telemetry of every run at once, however old).
  const now = performance.now();
  const heardAgo = new Map();  // the newest run of each name
  for (const n of s.nodes) {
    if (typeof n.heard_s_ago === "number") heardAgo.set(n.node, Math.min(heardAgo.get(n.node) ?? Infinity, n.heard_s_ago));
  }
  for (const [name, ago] of heardAgo) if (name in rths.nodes) rths.nodes[name].heardAt = now - 1000 * ago;
  const num = s.nodes.filter((n) => n.node === "numerical").reduce((a, b) => (a && a.heard_s_ago <= b.heard_s_ago ? a : b), null);
  if (num && numericalRun && num.run !== numericalRun) {
    if (numerical) {
      for (const c of numerical.charts) c.chart.remove();
      for (const c of [numerical.loop, numerical.roundTrip, numerical.rates]) if (c) c.remove();
      numerical.el.remove();
      numerical = null;
    }
    lastCounts.clear();
    // A new test: what the stop line said was of the one before.
    rths.stopPressed = false;
    rths.stopAcknowledged = false;
    rths.stopSentTo = undefined;
    document.getElementById("stop-result").textContent = "";
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
  const where = (t) => `${t.node} at ${t.source}` +
    (typeof t.heard_s_ago === "number" && t.heard_s_ago > STALE_S ? ` (not heard for ${t.heard_s_ago.toFixed(0)} s)` : "");
  result.textContent = !targets.length ? "no numerical node heard in the last minute that is not stopped: nothing to stop"
    : rths.stopAcknowledged ? `stop acknowledged by ${targets.map(where).join(", ")}`
      : `stop sent to ${targets.map(where).join(", ")}, not acknowledged yet`;
}

// Seconds since a node was last heard (live only).
const silentFor = (n) => (rths.mode === "live" ? (performance.now() - n.heardAt) / 1000 : 0);

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
    const silent = n.state !== "stopped" && silentFor(n) > STALE_S;
    setCell(t[1], silent ? `${n.state}? not heard for ${silentFor(n).toFixed(0)} s` : n.state, silent ? "state unknown" : `state ${n.state}`);
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
    if (n.state !== "stopped" && !silent) {
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
  // A numerical node that went silent (killed, its host gone, the network cut) may still be running
  // or may be gone: the page says it does not know, and Stop still goes to its last address.
  const silent = n.state !== "stopped" && silentFor(n) > STALE_S;
  const state = silent ? "unknown" : n.state;
  rths.testState = state;
  el.dataset.state = state;
  setCell(el, silent ? `unknown: the numerical node was not heard for ${silentFor(n).toFixed(0)} s (last said ${n.state})`
    : n.state + (n.reason ? ` (${n.reason})` : ""), `state ${failed ? "failed" : state}`);
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

// The event stream. EventSource reconnects by itself after a dropped connection (the console closed
// it: too slow a reader, or a newer stream took its place), but not after an answer other than 200
// (a console restarting, a proxy's error): then the page tries again itself, 1 s, 2 s, ... up to 10 s
// apart, and says so.
let retryMs = 1000;
function streamNote(text) {
  const el = document.getElementById("stream-status");
  if (el.textContent === text) return;
  el.textContent = text;
  if (text) rths.streamNotes = rths.streamNotes.slice(-9).concat(text);
}

function connect() {
  const events = new EventSource(withToken("api/events"));
  events.onopen = () => {
    rths.streamOpens++;
    retryMs = 1000;
    streamNote("");
  };
  events.onerror = () => {
    rths.streamErrors++;
    if (events.readyState === EventSource.CLOSED) {
      streamNote(`telemetry stream refused or lost: trying again in ${retryMs / 1000} s`);
      setTimeout(connect, retryMs);
      retryMs = Math.min(2 * retryMs, 10000);
    } else {
      streamNote("telemetry stream lost: reconnecting");
    }
  };
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
}

function live() {
  connect();
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
  setInterval(() => { tableDirty = true; }, 1000);  // "not heard for N s" counts on with no telemetry
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
// A record's JSON, or null and a note saying it is damaged (cut by a crash, edited by hand).
async function fetchJson(file) {
  try {
    const res = await fetch(withToken(`run/${file}`));
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const value = JSON.parse(await res.text());
    if (!value || typeof value !== "object" || Array.isArray(value)) throw new Error("not a JSON object");
    return value;
  } catch (err) {
    note(`damaged ${file}`, `${file} is damaged and left out (${err.message})`);
    return null;
  }
}

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
  if (files.has("summary.json")) summary = await fetchJson("summary.json");
  if (summary) {
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
    if (!m) continue;
    const site = await fetchJson(file);
    if (site) siteSummaries.push([m[1], site]);
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
  .then((r) => {
    if (!r.ok) throw new Error(r.status === 403 ? "the console needs its token: open the page as /?token=TOKEN" : `HTTP ${r.status}`);
    return r.json();
  })
  .then((mode) => (mode.mode === "replay" ? replay(mode) : live()))
  .catch((err) => {
    rths.failed = String(err.message || err);
    const el = document.getElementById("test-state");
    el.textContent = `the page could not start: ${rths.failed}`;
    el.className = "state failed";
  });
