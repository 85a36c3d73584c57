// The operator's console end to end, from the page itself, in Debian's chromium driven over the
// DevTools protocol (cdp.mjs: no npm package, so it runs on Debian 12's Node.js 18).
//
// 1. Live: rths-console with a fresh key and --token (the control room's setup: the page's own
//    files load without the token, the test's data and Stop need it; a page opened without the
//    token says so), a two-site loopback test publishing to it, the page at 1400 x 1000. The page must show the experiment's name, its progress (t of T), every site's
//    charts fed, the round trip on its own axis in ms, held steps, drops and late ticks as rates,
//    legends with the newest values, both sites within the screen, and redraw at most 10 times a
//    second (each chart at most 5); its Stop button must end the test with every node's documented exit code (numerical
//    6, interrupted; each site 5, aborted by the numerical node), and the page says the stop was
//    acknowledged. Chromium's CPU time over the live run is printed. Then a new numerical run (a test
//    node) clears the stop line; killed (SIGKILL), the page says the test's state is unknown, not
//    heard for N s, and its Stop still goes to the silent run's address.
// 2. Hostile telemetry, sealed with the key (what a compromised node could send): script in every
//    string field, a tick later than the step period, a tripped interlock, the delay guard's
//    warning, a rotation and a moment channel, a signal that is exactly 0. The page shows the script
//    as text and runs none of it, highlights each limit, scales each unit by its suffix (mm, mrad,
//    kN, kN·m), draws the tracking error as measured - target, and gives a zero signal a small axis.
//    A site of 30 channels and 20 more sites: the page draws 8 channels per site and 16 sites, and
//    says what it left out. Another stream from this client closes the page's (one per client
//    here): the page says it lost its stream, reconnects, and gets telemetry again.
// 3. Replay of the run folder the live test left: every site's exit code and reason in the nodes'
//    table, the reference over the floors, the loop timing, a scrub to the middle. The same folder
//    with summary.json and a site's summary cut short: the page says which are damaged, and shows
//    the rest.
// Screenshots: console-running.png, console-stopped.png, console-silent.png, console-hostile.png,
// console-replay.png.
//
// Usage: node console_e2e.mjs BIN_DIR SOURCE_DIR OUT_DIR. Exit 0 when every check held, 1 naming
// the first that did not. RTHS_CONSOLE_CPU_S (default 10) sets how long the CPU is measured.
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";

import { CHROMIUM, launch } from "./cdp.mjs";

if (process.argv.length < 5) {
  console.error("usage: node console_e2e.mjs BIN_DIR SOURCE_DIR OUT_DIR");
  process.exit(2);
}
const [binDir, sourceDir, outDir] = process.argv.slice(2).map((p) => path.resolve(p));
// The browser is a Debian package the README's test command installs: without it the test fails in
// one line that says so, not in a stack trace of a spawn.
if (!existsSync(CHROMIUM)) {
  console.error(`FAIL: ${CHROMIUM} is missing; deploy/test.sh installs it (apt-get install chromium fonts-liberation)`);
  process.exit(1);
}

const SITES = ["purdue", "uconn"];
const CONFIG = path.join(sourceDir, "examples/multisite/case3_two_sites.textproto");
const EXPERIMENT = /^name: "(.*)"/m.exec(readFileSync(CONFIG, "utf8"))[1];
const CPU_S = Number(process.env.RTHS_CONSOLE_CPU_S || 10);
const VIEW = { width: 1400, height: 1000 };

function fail(why) {
  console.error(`FAILED: ${why}`);
  process.exitCode = 1;
  throw new Error(why);
}
const check = (ok, why) => { if (!ok) fail(why); };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A child process whose output lines can be awaited; its exit code as a promise.
function start(exe, args, name, stdin = "ignore") {
  const child = spawn(path.join(binDir, exe), args, { stdio: [stdin, "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(code ?? 128 + (signal ? 2 : 0))));
  return {
    child,
    exited,
    err: () => err,
    async line(prefix, seconds) {
      const until = Date.now() + seconds * 1000;
      while (Date.now() < until) {
        const found = out.split("\n").find((l) => l.startsWith(prefix));
        if (found) return found.slice(prefix.length);
        await sleep(50);
      }
      fail(`${name} did not print "${prefix}" within ${seconds} s: ${err}`);
    },
  };
}

async function within(seconds, what, probe) {
  const until = Date.now() + seconds * 1000;
  while (Date.now() < until) {
    const last = await probe();
    if (last) return last;
    await sleep(100);
  }
  fail(`${what} within ${seconds} s`);
}

const started = [];
async function startConsole(args) {
  const c = start("rths-console", ["--listen", "127.0.0.1:0", "--telemetry", "127.0.0.1:0", ...args], "rths-console");
  started.push(c);
  return { proc: c, url: await c.line("serving ", 10), telemetry: args.includes("--replay") ? "" : await c.line("telemetry on ", 10) };
}
async function stopProcess(p) {
  if (p.child.exitCode === null) p.child.kill("SIGINT");
  return Promise.race([p.exited, sleep(15000).then(() => "timeout")]);
}
async function openPage(browser, url) {
  const page = await browser.newPage(VIEW);
  await page.goto(url);
  return page;
}
const pageErrors = (page) => page.errors.concat(page.dialogs.map((d) => `dialog ${d}`));

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const key = path.join(outDir, "console.key");
let browser;
let test;
try {
  const keygen = start("rths-numerical", ["keygen", key], "rths-numerical keygen");
  check((await keygen.exited) === 0, `rths-numerical keygen: ${keygen.err()}`);
  browser = await launch();

  // ---- 1. live, with a token ----
  const TOKEN = "e2e0123456789abcdef";
  const live = await startConsole(["--key", key, "--token", TOKEN]);
  const tokenless = await openPage(browser, live.url);
  const refused = await within(10, "a page without the token saying it needs one", () => tokenless.evaluate(() => window.rths && window.rths.failed));
  check(/token/.test(refused), `a page without the token: ${refused}`);
  test = start("rths-numerical", ["loopback", CONFIG, "--console", live.telemetry, "--console-key", key, "--out",
    path.join(outDir, "run"), "--set", "duration_s=120", "--no-plots", "--quiet"], "rths-numerical");
  started.push(test);
  const page = await openPage(browser, `${live.url}?token=${TOKEN}`);
  await within(30, 'the page showing the test "running"', () => page.evaluate(() => window.rths.testState === "running"));
  const samples = await within(20, `charts of every site (${SITES.join(", ")}) with 50 samples or more`,
    () => page.evaluate((sites) => {
      const s = window.rths.samples;
      return sites.every((n) => (s[n] || 0) >= 50) && (window.rths.datagrams.numerical || 0) >= 50 ? { ...s } : null;
    }, SITES));
  console.log(`samples per site on the page: ${JSON.stringify(samples)}`);
  const view = await page.evaluate((sites) => {
    const r = window.rths;
    const chart = (k) => r.charts[k] && { unit: r.charts[k].unit, legend: r.charts[k].legend(), names: r.charts[k].plot.series.slice(1).map((s) => s.label) };
    const bottom = Math.max(...sites.map((s) => r.charts[`site ${s} displacement`].el.closest("section").getBoundingClientRect().bottom));
    const right = Math.max(...[...document.querySelectorAll(".chart")].map((e) => e.getBoundingClientRect().right));
    const lateHeader = [...document.querySelectorAll("#nodes th")].map((th) => th.textContent).indexOf("late ticks");
    const numericalRow = [...document.querySelectorAll("#nodes tbody tr")].find((tr) => tr.cells[0].textContent === "numerical");
    return {
      experiment: document.getElementById("experiment").textContent,
      progress: document.getElementById("progress-text").textContent,
      roundTrip: chart("round trip"), rates: chart("network rates"), displacement: chart(`site ${sites[0]} displacement`),
      tracking: chart(`site ${sites[0]} tracking m`), bottom, right,
      lateTicks: lateHeader >= 0 && numericalRow ? numericalRow.cells[lateHeader].textContent : null,
      state: document.querySelector("#test-state").dataset.state,
    };
  }, SITES);
  console.log(`the live page: ${JSON.stringify(view)}`);
  check(view.state === "running", `the state shown is "${view.state}", not "running"`);
  check(view.experiment === EXPERIMENT, `the experiment's name shown is "${view.experiment}", not "${EXPERIMENT}"`);
  check(/^t \d+\.\d s of 120\.0 s$/.test(view.progress), `progress "${view.progress}", expected "t X s of 120.0 s"`);
  check(view.roundTrip && view.roundTrip.unit === "ms" && view.roundTrip.names.join() === "round trip",
    `the round trip has no chart of its own in ms: ${JSON.stringify(view.roundTrip)}`);
  check(view.rates && view.rates.unit === "per s" && view.rates.names.join() === "held steps,dropped packets,late ticks",
    `held steps, drops and late ticks are not drawn as rates: ${JSON.stringify(view.rates)}`);
  check(view.lateTicks !== null && /^\d+$/.test(view.lateTicks), `the numerical node's late ticks are not shown: ${view.lateTicks}`);
  check(view.displacement.unit === "mm" && view.tracking.unit === "mm", "site displacement and tracking error not in mm");
  check(view.displacement.legend.slice(1).every((v) => v !== "--" && v !== ""), `a legend without values: ${view.displacement.legend}`);
  check(view.bottom <= VIEW.height && view.right <= VIEW.width,
    `two sites do not fit ${VIEW.width} x ${VIEW.height}: bottom ${view.bottom}, right ${view.right}`);
  // Redraws: the table at most 10 a second, each chart whose data changed at most 5.
  const before = await page.evaluate(() => ({ redraws: window.rths.redraws, draws: window.rths.draws, charts: Object.keys(window.rths.charts).length }));
  const cpu0 = browser.cpuSeconds();
  const t0 = Date.now();
  await sleep(CPU_S * 1000);
  const cpu1 = browser.cpuSeconds();
  const after = await page.evaluate(() => ({ redraws: window.rths.redraws, draws: window.rths.draws }));
  const seconds = (Date.now() - t0) / 1000;
  const redrawHz = (after.redraws - before.redraws) / seconds;
  const drawHz = (after.draws - before.draws) / seconds;
  console.log(`redraws ${redrawHz.toFixed(1)}/s, chart draws ${drawHz.toFixed(1)}/s of ${before.charts} charts; ` +
    `chromium CPU over ${seconds.toFixed(1)} s: ${(100 * (cpu1 - cpu0) / seconds).toFixed(1)} % of a core`);
  check(redrawHz <= 11, `the page redrew ${redrawHz.toFixed(1)} times a second, more than 10`);
  check(drawHz <= 5.5 * before.charts, `${drawHz.toFixed(1)} chart draws a second for ${before.charts} charts, more than 5 each`);
  await page.screenshot(path.join(outDir, "console-running.png"));

  await page.click("#stop");
  await within(20, 'the page showing the test "stopped"', () => page.evaluate(() => window.rths.testState === "stopped"));
  const stopText = await within(10, "the page saying the numerical node acknowledged the stop", () => page.evaluate(() =>
    window.rths.stopAcknowledged ? document.getElementById("stop-result").textContent : null));
  console.log(`stop on the page: ${stopText}`);
  const nodes = await within(20, "every node's stopped state on the page", () => page.evaluate((sites) => {
    const n = window.rths.nodes;
    const all = ["numerical", ...sites.map((s) => `site ${s}`)];
    return all.every((k) => n[k] && n[k].state === "stopped") ? Object.fromEntries(all.map((k) => [k, n[k].reason])) : null;
  }, SITES));
  console.log(`reasons on the page: ${JSON.stringify(nodes)}`);
  await page.screenshot(path.join(outDir, "console-stopped.png"));
  const code = await Promise.race([test.exited, sleep(30000).then(() => "timeout")]);
  check(code === 6, `rths-numerical ended with ${code}, expected 6 (interrupted): ${test.err()}`);
  check(/^exit 6: interrupted/.test(nodes.numerical), `the numerical node's reason: ${nodes.numerical}`);
  for (const s of SITES) {
    check(/^exit 5: the numerical node aborted/.test(nodes[`site ${s}`]), `site ${s}'s reason: ${nodes[`site ${s}`]}`);
  }
  // Nothing changes once the test stopped: no chart is drawn again.
  await sleep(1500);
  const idle0 = await page.evaluate(() => window.rths.draws);
  await sleep(2000);
  const idle1 = await page.evaluate(() => window.rths.draws);
  check(idle1 === idle0, `${idle1 - idle0} chart draws in 2 s with no new telemetry`);
  // A new numerical run (another test): the stop line of the one before goes.
  const next = start("rths_test_telemetry", [key, live.telemetry], "rths_test_telemetry", "pipe");
  started.push(next);
  next.child.stdin.write(JSON.stringify({ node: "numerical", state: "running", reason: "", figures: { rate_hz: 1024 } }) + "\n");
  await within(10, "the stop line cleared when a new numerical run came", () => page.evaluate(() =>
    window.rths.testState === "running" && document.getElementById("stop-result").textContent === ""));
  // Killed: no last word. The page does not know the state any more and says since when.
  next.child.kill("SIGKILL");
  const silent = await within(10, 'the page saying the test\'s state is "unknown", not heard for some seconds', () => page.evaluate(() =>
    window.rths.testState === "unknown" && !document.getElementById("stop").disabled ? document.getElementById("test-state").textContent : null));
  console.log(`a killed numerical node: ${silent}`);
  check(/^unknown: the numerical node was not heard for \d+ s \(last said running\)$/.test(silent), `the page says: ${silent}`);
  await page.screenshot(path.join(outDir, "console-silent.png"));
  await page.click("#stop");
  const stopSilent = await within(5, "the stop sent to the silent run", () => page.evaluate(() =>
    /^stop sent to numerical at 127\.0\.0\.1:\d+ \(not heard for \d+ s\), not acknowledged yet$/.test(document.getElementById("stop-result").textContent)
      ? document.getElementById("stop-result").textContent : null));
  console.log(`Stop with the numerical node silent: ${stopSilent}`);
  check(pageErrors(page).length === 0, `the live page: ${pageErrors(page).join("; ")}`);
  console.log("live (with a token): name, progress, round trip in ms, rates, late ticks, legends, 1400 x 1000, redraws; Stop ended the test: exit 6, sites 5; a new run cleared the stop line; a killed run is shown as not heard, and Stop still reaches it");
  await stopProcess(live.proc);

  // ---- 2. hostile telemetry, sealed with the key ----
  const hostile = await startConsole(["--key", key, "--max-streams-per-client", "1"]);
  const hostilePage = await openPage(browser, hostile.url);
  const XSS = ['<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=2</script>",
    "<svg/onload=window.__pwned=3>", '"><iframe src="javascript:window.__pwned=4"></iframe>'];
  const senders = [];
  const send = () => {
    const s = start("rths_test_telemetry", [key, hostile.telemetry], "rths_test_telemetry", "pipe");
    started.push(s);
    senders.push(s);
    return s;
  };
  const numericalNode = send();
  const site = send();
  const relay = send();
  const siteName = `site ${XSS[0]}`;
  for (let i = 1; i <= 20; i++) {
    const t = i * 0.05;
    numericalNode.child.stdin.write(JSON.stringify({
      node: "numerical", state: "running", reason: XSS[1], experiment: XSS[2], sent: i,
      figures: { steps_done: 2048, steps: 30721, rate_hz: 1024, lateness_us: 5000, max_lateness_us: 6000, late_ticks: 3,
        compute_us: 20, held_steps: 10 * i, drops: 0, round_trip_p50_ms: 2, delay_guard_warned: 1, delay_guard_use: 0.9, [XSS[3]]: 1 },
      stream: "numerical", rows: i, columns: ["t_s", "x1_m", "theta1_rad"], values: [t, 0.001, 0.002],
    }) + "\n");
    site.child.stdin.write(JSON.stringify({
      node: siteName, state: "running", reason: XSS[3], sent: i,
      figures: { steps_done: 2048, lateness_us: 10, compute_us: 5, interlock_tripped: 1, [XSS[1]]: 2 },
      stream: "site", rows: i,
      columns: ["t_s", "target_m", "measured_m", "force_N", "model_error_N", "target2_rad", "measured2_rad", "force2_Nm",
        "model_error2_Nm", `${XSS[2]}_m`],
      values: [t, 0.002, 0.0015, 1500, 0, 0.004, 0.004, 2500, 30, 1],
    }) + "\n");
    relay.child.stdin.write(JSON.stringify({ node: `relay ${XSS[2]}`, state: XSS[0], reason: XSS[2], stream: XSS[1], figures: { [XSS[0]]: 1 } }) + "\n");
    await sleep(60);
  }
  await within(10, "the hostile nodes on the page", () => hostilePage.evaluate((name) =>
    window.rths.nodes[name] && window.rths.nodes.numerical && (window.rths.samples[name.slice(5)] || 0) >= 5 && window.rths.alerts.length >= 3, siteName));
  await sleep(500);
  const shown = await hostilePage.evaluate((name) => {
    const r = window.rths;
    const chart = (k) => r.charts[k] && { unit: r.charts[k].unit, legend: r.charts[k].legend(), range: r.charts[k].yRange(),
      names: r.charts[k].plot.series.slice(1).map((s) => s.label), over: r.charts[k].el.classList.contains("over") };
    const s = name.slice(5);
    return {
      pwned: window.__pwned ?? null,
      injected: document.querySelectorAll("img, iframe, svg, script:not([src])").length,
      cells: [...document.querySelectorAll("#nodes td")].map((td) => td.textContent),
      sections: [...document.querySelectorAll("h2")].map((h) => h.textContent),
      experiment: document.getElementById("experiment").textContent,
      alerts: r.alerts,
      displacement: chart(`site ${s} displacement`), rotation: chart(`site ${s} rotation`), force: chart(`site ${s} force`),
      moment: chart(`site ${s} moment`), trackingM: chart(`site ${s} tracking m`), trackingRad: chart(`site ${s} tracking rad`),
      modelN: chart(`site ${s} model error N`), loop: chart("numerical loop"), roundTrip: chart("round trip"),
      floors: chart("numerical floors"), rotations: chart("numerical rotations"),
    };
  }, siteName);
  console.log(`the hostile page: ${JSON.stringify(shown)}`);
  check(shown.pwned === null && shown.injected === 0, `script from telemetry ran or markup was made: ${shown.pwned}, ${shown.injected}`);
  check(pageErrors(hostilePage).length === 0, `the hostile page: ${pageErrors(hostilePage).join("; ")}`);
  for (const x of XSS) check(shown.cells.some((c) => c.includes(x)), `"${x}" is not shown as text in the nodes' table`);
  check(shown.experiment === XSS[2] && shown.sections.includes(siteName), "the experiment's name or the site's title is not the text sent");
  check(shown.alerts.some((a) => /^numerical: tick 5000 µs late, more than the step period \(977 µs\)$/.test(a)), `no lateness alert: ${shown.alerts}`);
  check(shown.alerts.some((a) => a === `${siteName}: interlock TRIPPED`), `no interlock alert: ${shown.alerts}`);
  check(shown.alerts.some((a) => /^delay guard: 1 site\(s\) past the warning \(round trip at 90 % of its budget\)$/.test(a)), `no delay guard alert: ${shown.alerts}`);
  check(shown.loop.over && shown.displacement.over, "the late loop or the tripped site's charts are not highlighted");
  check(shown.displacement.unit === "mm" && shown.displacement.names.join() === "target,measured",
    `the displacement chart: ${JSON.stringify(shown.displacement)} (a rotation on a mm axis?)`);
  check(shown.rotation.unit === "mrad" && shown.rotation.names.join() === "target 2,measured 2" &&
    shown.rotation.legend.slice(1).join() === "4.00,4.00", `the rotation chart: ${JSON.stringify(shown.rotation)}`);
  check(shown.force.unit === "kN" && shown.force.legend[1] === "1.50", `the force chart: ${JSON.stringify(shown.force)}`);
  check(shown.moment.unit === "kN·m" && shown.moment.legend[1] === "2.50", `the moment chart: ${JSON.stringify(shown.moment)}`);
  check(shown.floors.unit === "mm" && shown.rotations.unit === "mrad" && shown.rotations.legend[1] === "2.00",
    `the numerical model's floors and rotations: ${JSON.stringify([shown.floors, shown.rotations])}`);
  check(shown.trackingM.legend[1] === "-0.500", `the tracking error is not measured - target (1.5 - 2.0 mm): ${shown.trackingM.legend}`);
  const span = (c) => c.range[1] - c.range[0];
  check(Math.abs(span(shown.modelN) - 0.1) < 1e-9 && Math.abs(shown.modelN.range[0] + 0.05) < 1e-9,
    `a model error of exactly 0 kN is drawn on ${shown.modelN.range}, not on [-0.05, 0.05]`);
  check(Math.abs(span(shown.trackingRad) - 0.1) < 1e-9, `a tracking error of exactly 0 mrad is drawn on ${shown.trackingRad.range}`);
  await hostilePage.screenshot(path.join(outDir, "console-hostile.png"));

  // More than the page draws: a site of 30 channels (as many as fit one datagram), and 20 sites more.
  const many = send();
  const wide = ["t_s"].concat([...Array(30).keys()].flatMap((k) => [`target${k}_m`, `measured${k}_m`]));
  many.child.stdin.write(JSON.stringify({ node: "site a-wide", state: "running", stream: "site", columns: wide,
    values: wide.map(() => 0) }) + "\n");
  for (let k = 0; k < 20; k++) {
    many.child.stdin.write(JSON.stringify({ node: `site s${k}`, state: "running", stream: "site",
      columns: ["t_s", "target_m", "measured_m"], values: [0.1, 0.001, 0.001] }) + "\n");
  }
  const bounded = await within(10, "the page drawing 16 sites, 8 channels of the wide one, and saying what it left out", () => hostilePage.evaluate(() => {
    const sections = [...document.querySelectorAll("h2")].map((h) => h.textContent).filter((t) => t.startsWith("site "));
    const notes = window.rths.notes;
    const rows = document.querySelectorAll("#nodes tbody tr").length;
    return sections.length === 16 && rows >= 24 && notes.some((n) => /^\d+ site\(s\) not drawn \(at most 16; the table shows every node\)$/.test(n))
      ? { sections, notes, rows } : null;
  }));
  console.log(`bounded charts: ${JSON.stringify(bounded)}`);
  const wideTitle = bounded.sections.find((t) => t.startsWith("site a-wide"));
  check(wideTitle === "site a-wide (the first 8 of 30 channels drawn)", `the wide site's title: ${wideTitle}`);
  check(bounded.notes.includes("6 site(s) not drawn (at most 16; the table shows every node)"), `the note: ${bounded.notes}`);

  // Another stream from this client (one per client here) closes the page's: the page says so,
  // reconnects (closing the other), and takes telemetry again.
  const before7 = await hostilePage.evaluate(() => ({ opens: window.rths.streamOpens, errors: window.rths.streamErrors, n: window.rths.datagrams.numerical }));
  const hog = http.get(`${hostile.url}api/events`, (res) => res.resume());
  const after7 = await within(15, "the page reconnecting its stream and taking telemetry again", () => hostilePage.evaluate((b) => {
    const r = window.rths;
    return r.streamErrors > b.errors && r.streamOpens > b.opens && r.datagrams.numerical > b.n + 5
      ? { opens: r.streamOpens, errors: r.streamErrors, said: r.streamNotes } : null;
  }, before7));
  hog.destroy();
  console.log(`a stream taken from the page: ${JSON.stringify(after7)}`);
  check(after7.said.includes("telemetry stream lost: reconnecting"), `the page did not say it lost its stream: ${after7.said}`);
  check(pageErrors(hostilePage).length === 0, `the hostile page: ${pageErrors(hostilePage).join("; ")}`);
  for (const s of senders) { s.child.stdin.end(); await stopProcess(s); }
  await stopProcess(hostile.proc);
  console.log("hostile: script in every string shown as text, none ran; limits highlighted; mm, mrad, kN, kN·m by suffix; measured - target; 0 on a small axis; 16 sites and 8 channels drawn, the rest named; a lost stream said and reconnected");

  // ---- 3. replay ----
  const replay = await startConsole(["--replay", path.join(outDir, "run")]);
  const replayPage = await openPage(browser, replay.url);
  await within(20, "the replay loaded", () => replayPage.evaluate(() => window.rths.replayReady === true));
  const r = await replayPage.evaluate((sites) => {
    const rows = [...document.querySelectorAll("#nodes tbody tr")].map((tr) => [...tr.cells].map((c) => c.textContent));
    const floors = window.rths.charts["numerical floors"];
    return {
      rows, samples: { ...window.rths.samples },
      floors: floors ? floors.plot.series.slice(1).map((s) => s.label) : [],
      timing: Object.keys(window.rths.charts).filter((k) => k.startsWith("timing")),
      experiment: document.getElementById("experiment").textContent,
      reasons: Object.fromEntries(sites.map((s) => [s, window.rths.nodes[`site ${s}`]?.reason])),
    };
  }, SITES);
  console.log(`replay: ${JSON.stringify({ ...r, rows: r.rows.length })}`);
  for (const s of SITES) {
    check(r.samples[s] > 1000, `the replay of site ${s} has ${r.samples[s]} rows, expected the run's (over 1000)`);
    check(/^exit 5: the numerical node aborted/.test(r.reasons[s] || ""), `the replay's reason of site ${s}: ${r.reasons[s]}`);
  }
  check(r.rows.length === 1 + SITES.length && r.rows.some((row) => row[0] === "numerical" && /^exit 6:/.test(row[2])),
    `the replay's nodes table: ${JSON.stringify(r.rows)}`);
  check(r.floors.some((n) => / reference$/.test(n)), `no reference over the floors: ${r.floors}`);
  check(r.timing.includes("timing loop") && r.timing.includes("timing round trip"), `no loop timing: ${r.timing}`);
  check(r.experiment === EXPERIMENT, `the replay's experiment: ${r.experiment}`);
  await replayPage.evaluate(() => {
    const scrub = document.getElementById("scrub");
    scrub.value = 500;
    scrub.dispatchEvent(new Event("input"));
  });
  const to = await replayPage.evaluate(() => window.rths.scrubbedTo);
  const end = await replayPage.evaluate(() => Number(/of ([0-9.]+) s/.exec(document.getElementById("scrub-time").textContent)[1]));
  check(Math.abs(to - end / 2) < 0.01, `scrubbed to ${to} s, expected half of ${end} s`);
  check(pageErrors(replayPage).length === 0, `the replay page: ${pageErrors(replayPage).join("; ")}`);
  await replayPage.screenshot(path.join(outDir, "console-replay.png"), { fullPage: true });
  console.log(`replay: exit codes and reasons of every node, reference, loop timing; scrubbed to ${to.toFixed(2)} s of ${end.toFixed(2)} s`);
  await stopProcess(replay.proc);

  // Damaged records: what is left is shown, and the page says which are damaged.
  const damaged = path.join(outDir, "run-damaged");
  cpSync(path.join(outDir, "run"), damaged, { recursive: true });
  for (const f of ["summary.json", `site_${SITES[0]}.json`]) {
    const text = readFileSync(path.join(damaged, f), "utf8");
    writeFileSync(path.join(damaged, f), text.slice(0, Math.floor(text.length / 2)));
  }
  const broken = await startConsole(["--replay", damaged]);
  const brokenPage = await openPage(browser, broken.url);
  const brokenView = await within(20, "the damaged replay loaded", () => brokenPage.evaluate(() =>
    window.rths.replayReady ? { notes: window.rths.notes, samples: { ...window.rths.samples } } : null));
  console.log(`damaged replay: ${JSON.stringify(brokenView)}`);
  for (const f of ["summary.json", `site_${SITES[0]}.json`]) {
    check(brokenView.notes.some((n) => n.startsWith(`${f} is damaged and left out`)), `no note that ${f} is damaged: ${brokenView.notes}`);
  }
  check(SITES.every((s) => brokenView.samples[s] > 1000), `the damaged replay's records: ${JSON.stringify(brokenView.samples)}`);
  check(pageErrors(brokenPage).length === 0, `the damaged replay page: ${pageErrors(brokenPage).join("; ")}`);
  console.log("damaged replay: both damaged summaries named, the records shown");
} catch (e) {
  if (!process.exitCode) {
    console.error(`FAILED: ${e.stack || e.message}`);
    process.exitCode = 1;
  }
} finally {
  if (browser) await browser.close();
  for (const p of started.reverse()) {
    const code = await stopProcess(p);
    if (p !== test && code !== 0 && code !== undefined && !process.exitCode && p.child.spawnfile.endsWith("rths-console")) {
      console.error(`FAILED: rths-console ended with ${code} on SIGINT: ${p.err()}`);
      process.exitCode = 1;
    }
  }
}
