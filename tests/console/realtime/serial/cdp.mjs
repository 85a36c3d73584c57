// A small client of the Chrome DevTools Protocol over --remote-debugging-pipe: Debian's chromium
// driven by Node.js's own modules, no npm package, so the console's browser test runs on Debian 12's
// Node.js 18 as on any later one. The browser reads commands on its fd 3 and writes answers and
// events on its fd 4, each a JSON text ended by a NUL byte.
import { spawn } from "node:child_process";
import { readFileSync, readdirSync, writeFileSync } from "node:fs";

// Debian's chromium, which launch() starts unless told otherwise.
export const CHROMIUM = "/usr/bin/chromium";

export async function launch({ executable = CHROMIUM, args = [] } = {}) {
  const child = spawn(executable, ["--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
    "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-quic", "--mute-audio", ...args, "about:blank"],
  { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stdio[2].on("data", (d) => { stderr = (stderr + d).slice(-4000); });
  const toBrowser = child.stdio[3];
  const fromBrowser = child.stdio[4];
  const pending = new Map();
  const listeners = [];
  let nextId = 0;
  let chunks = [];
  fromBrowser.on("data", (data) => {
    let at;
    while ((at = data.indexOf(0)) >= 0) {
      chunks.push(data.subarray(0, at));
      const message = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      chunks = [];
      data = data.subarray(at + 1);
      if (message.id !== undefined) {
        const call = pending.get(message.id);
        pending.delete(message.id);
        if (message.error) call.reject(new Error(`${call.method}: ${message.error.message}`));
        else call.resolve(message.result);
      } else {
        for (const l of listeners) {
          if (l.method === message.method && (l.sessionId === undefined || l.sessionId === message.sessionId)) l.fn(message.params);
        }
      }
    }
    if (data.length) chunks.push(data);
  });
  const exited = new Promise((resolve) => child.on("exit", resolve));
  exited.then(() => {
    for (const call of pending.values()) call.reject(new Error(`chromium exited: ${stderr}`));
    pending.clear();
  });
  const browser = {
    pid: child.pid,
    send(method, params = {}, sessionId) {
      const id = ++nextId;
      const message = { id, method, params };
      if (sessionId) message.sessionId = sessionId;
      toBrowser.write(JSON.stringify(message) + "\0");
      return new Promise((resolve, reject) => pending.set(id, { resolve, reject, method }));
    },
    on(method, fn, sessionId) { listeners.push({ method, fn, sessionId }); },
    async newPage({ width, height }) { return newPage(browser, width, height); },
    async close() {
      try { await Promise.race([browser.send("Browser.close"), new Promise((r) => setTimeout(r, 3000))]); } catch { /* gone */ }
      if (child.exitCode === null) child.kill("SIGKILL");
      await exited;
    },
    // CPU time (s) of chromium and every process it started, from /proc (utime + stime).
    cpuSeconds() { return processTreeCpuSeconds(child.pid); },
  };
  await browser.send("Target.setDiscoverTargets", { discover: false });
  return browser;
}

async function newPage(browser, width, height) {
  const { targetId } = await browser.send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await browser.send("Target.attachToTarget", { targetId, flatten: true });
  const errors = [];
  const dialogs = [];
  const page = {
    errors,
    dialogs,
    send: (method, params) => browser.send(method, params, sessionId),
    on: (method, fn) => browser.on(method, fn, sessionId),
    async goto(url) {
      const loaded = new Promise((resolve) => page.on("Page.loadEventFired", resolve));
      const { errorText } = await page.send("Page.navigate", { url });
      if (errorText) throw new Error(`${url}: ${errorText}`);
      await loaded;
    },
    // fn's source run in the page with arg (JSON), its value returned (JSON).
    async evaluate(fn, arg) {
      const expression = `(${fn})(${arg === undefined ? "" : JSON.stringify(arg)})`;
      const r = await page.send("Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true });
      if (r.exceptionDetails) {
        throw new Error(`in the page: ${r.exceptionDetails.exception?.description || r.exceptionDetails.text}`);
      }
      return r.result.value;
    },
    async click(selector) {
      const box = await page.evaluate((s) => {
        const r = document.querySelector(s).getBoundingClientRect();
        return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
      }, selector);
      for (const type of ["mousePressed", "mouseReleased"]) {
        await page.send("Input.dispatchMouseEvent", { type, x: box.x, y: box.y, button: "left", clickCount: 1 });
      }
    },
    async screenshot(path, { fullPage = false } = {}) {
      const { data } = await page.send("Page.captureScreenshot", { format: "png", captureBeyondViewport: fullPage });
      writeFileSync(path, Buffer.from(data, "base64"));
    },
  };
  page.on("Runtime.exceptionThrown", (p) => errors.push(p.exceptionDetails.exception?.description || p.exceptionDetails.text));
  page.on("Page.javascriptDialogOpening", (p) => {
    dialogs.push(`${p.type}: ${p.message}`);
    page.send("Page.handleJavaScriptDialog", { accept: true }).catch(() => {});
  });
  page.on("Log.entryAdded", (p) => {
    if (p.entry.level === "error" && /Content Security Policy/i.test(p.entry.text)) errors.push(`CSP: ${p.entry.text}`);
  });
  await page.send("Page.enable");
  await page.send("Runtime.enable");
  await page.send("Log.enable");
  await page.send("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile: false });
  return page;
}

function processTreeCpuSeconds(root) {
  const ticks = 100;  // USER_HZ on Linux
  const stats = new Map();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const text = readFileSync(`/proc/${name}/stat`, "utf8");
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
      stats.set(Number(name), { ppid: Number(fields[1]), cpu: (Number(fields[11]) + Number(fields[12])) / ticks });
    } catch { /* gone meanwhile */ }
  }
  let total = 0;
  const inTree = (pid) => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; p = stats.get(p)?.ppid ?? 0, hops++) if (p === root) return true;
    return false;
  };
  for (const [pid, s] of stats) if (inTree(pid)) total += s.cpu;
  return total;
}
