/**
 * The demo page's WebGPU path in a real browser: headless Chromium on SwiftShader's Vulkan driver
 * (Debian's chromium ships it; a page from localhost is a secure context with navigator.gpu) opens
 * "webgpu:0", trains staged steps on it through the page's controls, then the same steps on the
 * CPU from the same start (Reset: same seed, same batches), and the losses agree. Skipped, saying
 * why, where no Chromium is installed or it offers no WebGPU adapter.
 *
 * Losses are compared by position, so they must be exactly the steps of one run: the page's Pause
 * ends after the step in flight and `running` stays true until it has (demo/web/training-loop.ts).
 * Before that, under load, a WebGPU step still in flight at Pause returned after Reset and put its
 * loss into the CPU run (step 1: "webgpu 2.3259 vs cpu 2.1626", the CPU's value being WebGPU's
 * seventh loss); test/demo/training-loop.test.ts forces that interleaving.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { buildDemo, serveDemo } from "../../demo/web/build.js";

const CANDIDATES = [process.env.STAGECRAFT_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].filter((p): p is string => !!p);
const chromium = CANDIDATES.find((p) => existsSync(p));
// (a build of its own: the demo page test, which may run beside this file, builds and serves another)
const PAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..", "demo-output", "webgpu-test", "web");
const STEPS = 6;
const WEBGPU_FLAGS = ["--enable-unsafe-webgpu", "--enable-features=Vulkan", "--use-vulkan=swiftshader", "--use-webgpu-adapter=swiftshader"];

interface DemoState {
  running: boolean;
  steps: number;
  losses: number[];
  rates: Record<string, number>;
  error: string | null;
}

test(
  "the demo page trains staged steps on webgpu:0 in headless Chromium (SwiftShader) and matches the CPU",
  {
    skip: chromium ? false : `no Chromium found (looked for ${CANDIDATES.join(", ")}): apt-get install chromium, or set STAGECRAFT_CHROMIUM`,
    timeout: 240_000,
  },
  async (t) => {
    const { chromium: playwright } = await import("playwright-core");
    await buildDemo(PAGE_DIR);
    const server = await serveDemo(PAGE_DIR, 0);
    const port = (server.address() as { port: number }).port;
    const browser = await playwright.launch({
      executablePath: chromium!,
      args: ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", ...WEBGPU_FLAGS],
    });
    try {
      const page = await browser.newPage();
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.goto(`http://127.0.0.1:${port}/`);
      await page.waitForSelector("#train:not([disabled])", { timeout: 60_000 });
      const adapter = await page.evaluate(async () => {
        const a = await (globalThis as unknown as { navigator: { gpu?: { requestAdapter(): Promise<{ info: { vendor: string; architecture: string } } | null> } } }).navigator.gpu?.requestAdapter();
        return a ? `${a.info.vendor}/${a.info.architecture}` : null;
      });
      if (adapter === null) {
        t.skip("this Chromium offers no WebGPU adapter on SwiftShader");
        return;
      }
      const devices = await page.$$eval("#device option", (os) => os.map((o) => (o as unknown as { value: string }).value));
      assert.deepEqual(devices, ["cpu:0", "webgpu:0"], `the page lists the WebGPU device (adapter ${adapter})`);

      const state = () => page.evaluate(() => (globalThis as unknown as { demo: { state(): DemoState } }).demo.state());
      const trainOn = async (device: string): Promise<DemoState> => {
        await page.selectOption("#device", device);
        await page.check('input[name="mode"][value="staged"]');
        await page.click("#train");
        await page.waitForFunction(
          (k) => {
            const s = (globalThis as unknown as { demo: { state(): DemoState } }).demo.state();
            return s.steps >= k || s.error !== null;
          },
          STEPS,
          { timeout: 180_000, polling: 50 },
        );
        await page.click("#train"); // pause
        await page.waitForFunction(() => !(globalThis as unknown as { demo: { state(): DemoState } }).demo.state().running);
        return state();
      };
      const gpu = await trainOn("webgpu:0");
      assert.equal(gpu.error, null);
      assert.ok((gpu.rates["staged on webgpu:0"] ?? 0) > 0, JSON.stringify(gpu.rates));
      await page.click("#reset");
      const cpu = await trainOn("cpu:0");
      assert.equal(cpu.error, null);
      for (let i = 0; i < STEPS; i++) {
        const [g, c] = [gpu.losses[i]!, cpu.losses[i]!];
        assert.ok(Number.isFinite(g) && Math.abs(g - c) <= 1e-3 * Math.max(1, Math.abs(c)), `step ${i}: webgpu ${g} vs cpu ${c}`);
      }
      assert.deepEqual(errors, []);
    } finally {
      await browser.close();
      server.close();
    }
  },
);
