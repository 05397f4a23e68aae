/**
 * Kernel threads in a browser: in a Web Worker of a cross-origin isolated page, the CPU
 * backend's worker pool starts its threads as Web Workers (core/platform/browser.ts) and they
 * share matmul work, with the single-thread answer; on the page's main thread (where
 * Atomics.wait is forbidden) it stays on one thread. Headless Chromium, as the demo test;
 * skipped, saying why, where none is installed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { serveDemo } from "../../demo/web/build.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const CANDIDATES = [process.env.STAGECRAFT_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].filter((p): p is string => !!p);
const chromium = CANDIDATES.find((p) => existsSync(p));

// (inside the package, so that its "browser" field maps dist/'s Node-only modules as it does for users)
const ENTRY = `
import * as sc from "../../dist/api/index.js";
import { poolStats } from "../../dist/backends/cpu/worker-pool.js";
const n = 256;
let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) - 0.5;
const a = Float32Array.from({ length: n * n }, rand), b = Float32Array.from({ length: n * n }, rand);
const want = new Float64Array(n * n);
for (let i = 0; i < n; i++) for (let k = 0; k < n; k++) for (let j = 0; j < n; j++) want[i * n + j] += a[i * n + k] * b[k * n + j];
async function run() {
  let maxErr = 0;
  // The thread policy (backends/cpu/thread-policy.ts) runs threaded only while threads pay and
  // probes them every 16th job; on a loaded machine a probe's helper may not wake before the
  // main thread has taken every task. So run until a helper has taken a share, not a fixed count
  // that a busy machine can make too small: at least 240 products (15 probes), and in the Web
  // Worker for up to 60 s (beside another test file, and the page's main thread running this
  // loop at the same time, 240 products once ended with no share taken).
  const inWorker = typeof WorkerGlobalScope !== "undefined";
  const t0 = performance.now();
  for (let r = 0; !(r >= 30 && poolStats().workerShares > 0) && (r < 240 || (inWorker && performance.now() - t0 < 60000)); r++) {
    const c = sc.matmul(sc.tensor(a, "float32", [n, n]), sc.tensor(b, "float32", [n, n])).dataSync();
    for (let i = 0; i < c.length; i++) maxErr = Math.max(maxErr, Math.abs(c[i] - want[i]));
    await new Promise((res) => setTimeout(res, r === 0 ? 300 : 5)); // (the first lets the workers start)
  }
  const s = poolStats();
  return { threads: s.threads, parallelJobs: s.parallelJobs, workerShares: s.workerShares, maxErr, cores: navigator.hardwareConcurrency, isolated: crossOriginIsolated };
}
const post = typeof WorkerGlobalScope !== "undefined" ? (r) => postMessage(r) : (r) => { globalThis.mainResult = r; };
run().then(post, (e) => post({ error: String(e && e.stack || e) }));
`;

const PAGE = `<!doctype html><link rel="icon" href="data:,"><script src="threads.js"></script>
<script>const w = new Worker("threads.js"); w.onmessage = (e) => { window.workerResult = e.data; }; w.onerror = (e) => { window.workerResult = { error: e.message }; };</script>`;

interface Result {
  threads: number;
  parallelJobs: number;
  workerShares: number;
  maxErr: number;
  cores: number;
  isolated: boolean;
  error?: string;
}

test(
  "in a Web Worker of an isolated page the kernel pool runs on Web Workers with the single-thread answer; on the main thread it stays single",
  { skip: chromium ? false : `no Chromium found (looked for ${CANDIDATES.join(", ")}): apt-get install chromium, or set STAGECRAFT_CHROMIUM`, timeout: 120_000 },
  async () => {
    const dir = path.join(ROOT, "demo-output", "threads-test");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, "entry.js"), ENTRY);
    writeFileSync(path.join(dir, "index.html"), PAGE);
    const r = await esbuild.build({ entryPoints: [path.join(dir, "entry.js")], outfile: path.join(dir, "threads.js"), bundle: true, platform: "browser", format: "iife", logLevel: "silent" });
    assert.deepEqual(r.errors, []);
    const { chromium: playwright } = await import("playwright-core");
    const server = await serveDemo(dir, 0);
    const browser = await playwright.launch({ executablePath: chromium!, args: ["--no-sandbox"] });
    try {
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
      await page.waitForFunction(() => (globalThis as { workerResult?: unknown; mainResult?: unknown }).workerResult && (globalThis as { mainResult?: unknown }).mainResult, null, { timeout: 90_000, polling: 250 });
      const worker = (await page.evaluate(() => (globalThis as unknown as { workerResult: unknown }).workerResult)) as Result;
      const main = (await page.evaluate(() => (globalThis as unknown as { mainResult: unknown }).mainResult)) as Result;
      assert.equal(worker.error, undefined);
      assert.equal(main.error, undefined);
      assert.equal(worker.isolated, true);
      assert.ok(worker.maxErr < 1e-3 && main.maxErr < 1e-3, `matmul agrees with float64 loops: worker ${worker.maxErr}, main ${main.maxErr}`);
      assert.equal(main.threads, 1);
      assert.equal(main.parallelJobs, 0);
      console.log(`kernel threads: worker ${JSON.stringify(worker)}; main ${JSON.stringify(main)}`);
      if (worker.cores < 2) return; // (one core: the pool has nothing to start)
      assert.equal(worker.threads, Math.min(worker.cores, 64));
      assert.ok(worker.parallelJobs > 0 && worker.workerShares > 0, JSON.stringify(worker));
    } finally {
      await browser.close();
      server.close();
    }
  },
);
