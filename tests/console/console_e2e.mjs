// The operator's console end to end, from the page itself: rths-console, a two-site loopback test
// publishing to it, and Debian's chromium (driven by playwright-core) on the console's page. The
// page must receive data for every site and reach "running"; its Stop button must end the test
// with every node's documented exit code (numerical 6, interrupted; each site 5, aborted by the
// numerical node); a screenshot of the running page and one of the stopped page are saved.
//
// Usage: node console_e2e.mjs BIN_DIR SOURCE_DIR OUT_DIR. Exit 0 when every check held, 1 naming
// the first that did not.
import { spawn } from "node:child_process";
import { mkdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const [binDir, sourceDir, outDir] = process.argv.slice(2).map((p) => path.resolve(p));
if (process.argv.length < 5) {
  console.error("usage: node console_e2e.mjs BIN_DIR SOURCE_DIR OUT_DIR");
  process.exit(2);
}
const require = createRequire(path.join(sourceDir, "console/web/package.json"));
const { chromium } = require("playwright-core");

const SITES = ["purdue", "uconn"];
const CONFIG = path.join(sourceDir, "examples/multisite/case3_two_sites.textproto");

function fail(why) {
  console.error(`FAILED: ${why}`);
  process.exitCode = 1;
  throw new Error(why);
}

// A child process whose output lines can be awaited; its exit code as a promise.
function start(exe, args, name) {
  const child = spawn(path.join(binDir, exe), args, { stdio: ["ignore", "pipe", "pipe"] });
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
        await new Promise((r) => setTimeout(r, 50));
      }
      fail(`${name} did not print "${prefix}" within ${seconds} s: ${err}`);
    },
  };
}

async function within(seconds, what, probe) {
  const until = Date.now() + seconds * 1000;
  let last;
  while (Date.now() < until) {
    last = await probe();
    if (last) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  fail(`${what} within ${seconds} s`);
}

rmSync(outDir, { recursive: true, force: true });
mkdirSync(outDir, { recursive: true });
const consoleProc = start("rths-console", ["--listen", "127.0.0.1:0", "--telemetry", "127.0.0.1:0"], "rths-console");
let test;
let browser;
try {
  const page_url = await consoleProc.line("serving ", 10);
  const telemetry = await consoleProc.line("telemetry on ", 10);
  test = start("rths-numerical", ["loopback", CONFIG, "--console", telemetry, "--out", path.join(outDir, "run"),
    "--set", "duration_s=120", "--no-plots", "--quiet"], "rths-numerical");

  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1250 } });
  page.on("pageerror", (e) => fail(`the page threw: ${e.message}`));
  await page.goto(page_url);

  // Live: running, and every site's charts and the numerical node's stream fed.
  await within(30, 'the page showing the test "running"',
    () => page.evaluate(() => window.rths.testState === "running"));
  const samples = await within(20, `charts of every site (${SITES.join(", ")}) with 50 samples or more`,
    () => page.evaluate((sites) => {
      const s = window.rths.samples;
      return sites.every((n) => (s[n] || 0) >= 50) && (window.rths.datagrams.numerical || 0) >= 50 ? s : null;
    }, SITES));
  console.log(`samples per site on the page: ${JSON.stringify(samples)}`);
  const shown = await page.evaluate(() => document.querySelector("#test-state").dataset.state);
  if (shown !== "running") fail(`the state shown is "${shown}", not "running"`);
  await page.screenshot({ path: path.join(outDir, "console-running.png"), fullPage: true });

  // Stop from the page.
  await page.click("#stop");
  await within(20, 'the page showing the test "stopped"',
    () => page.evaluate(() => window.rths.testState === "stopped"));
  const nodes = await within(20, "every node's stopped state on the page", () => page.evaluate((sites) => {
    const n = window.rths.nodes;
    const all = ["numerical", ...sites.map((s) => `site ${s}`)];
    return all.every((k) => n[k] && n[k].state === "stopped")
      ? Object.fromEntries(all.map((k) => [k, n[k].reason])) : null;
  }, SITES));
  console.log(`reasons on the page: ${JSON.stringify(nodes)}`);
  await page.screenshot({ path: path.join(outDir, "console-stopped.png"), fullPage: true });

  const code = await Promise.race([test.exited, new Promise((r) => setTimeout(() => r("timeout"), 30000))]);
  if (code !== 6) fail(`rths-numerical ended with ${code}, expected 6 (interrupted): ${test.err()}`);
  if (!/^exit 6: interrupted/.test(nodes.numerical)) fail(`the numerical node's reason: ${nodes.numerical}`);
  for (const s of SITES) {
    if (!/^exit 5: the numerical node aborted/.test(nodes[`site ${s}`])) {
      fail(`site ${s}'s reason: ${nodes[`site ${s}`]}`);
    }
  }
  console.log("the console's page received every site, showed running, and its Stop ended the test: exit 6, sites 5");

  // Replay: the same page on the run folder the test left, scrubbed to its middle.
  const replayProc = start("rths-console", ["--listen", "127.0.0.1:0", "--telemetry", "127.0.0.1:0", "--replay",
    path.join(outDir, "run")], "rths-console --replay");
  try {
    const replayPage = await browser.newPage({ viewport: { width: 1400, height: 1250 } });
    replayPage.on("pageerror", (e) => fail(`the replay page threw: ${e.message}`));
    await replayPage.goto(await replayProc.line("serving ", 10));
    await within(20, "the replay loaded", () => replayPage.evaluate(() => window.rths.replayReady === true));
    const rows = await replayPage.evaluate(() => window.rths.samples);
    for (const s of SITES) {
      if (!(rows[s] > 1000)) fail(`the replay of site ${s} has ${rows[s]} rows, expected the run's (over 1000)`);
    }
    await replayPage.evaluate(() => {
      const scrub = document.getElementById("scrub");
      scrub.value = 500;
      scrub.dispatchEvent(new Event("input"));
    });
    const to = await replayPage.evaluate(() => window.rths.scrubbedTo);
    const end = await replayPage.evaluate(() => Number(/of ([0-9.]+) s/.exec(document.getElementById("scrub-time").textContent)[1]));
    if (!(Math.abs(to - end / 2) < 0.01)) fail(`scrubbed to ${to} s, expected half of ${end} s`);
    console.log(`replay: rows per site ${JSON.stringify(rows)}, scrubbed to ${to.toFixed(2)} s of ${end.toFixed(2)} s`);
    await replayPage.screenshot({ path: path.join(outDir, "console-replay.png"), fullPage: true });
  } finally {
    replayProc.child.kill("SIGINT");
    await replayProc.exited;
  }
} catch (e) {
  if (!process.exitCode) {
    console.error(`FAILED: ${e.message}`);
    process.exitCode = 1;
  }
} finally {
  if (browser) await browser.close();
  if (test && test.child.exitCode === null) test.child.kill("SIGINT");
  consoleProc.child.kill("SIGINT");
  const consoleCode = await consoleProc.exited;
  if (consoleCode !== 0 && !process.exitCode) {
    console.error(`FAILED: rths-console ended with ${consoleCode} on SIGINT: ${consoleProc.err()}`);
    process.exitCode = 1;
  }
}
