/**
 * The demo page in a real browser: headless Chromium (Debian's `chromium`, driven by
 * playwright-core; STAGECRAFT_CHROMIUM names another binary) opens `npm run demo:web`'s page,
 * trains a few hundred steps by keyboard, checks that the loss falls and the test accuracy
 * rises, draws a digit on the pad, checks that a prediction shows, and saves a screenshot
 * (demo-output/browser-test/demo.png). Skipped, saying why, where no Chromium is installed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { buildDemo, serveDemo } from "../../demo/web/build.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SHOT_DIR = path.join(ROOT, "demo-output", "browser-test");
// (a build of its own: the WebGPU demo test, which may run beside this file, builds and serves another)
const PAGE_DIR = path.join(SHOT_DIR, "web");
const CANDIDATES = [process.env.STAGECRAFT_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"].filter((p): p is string => !!p);
const chromium = CANDIDATES.find((p) => existsSync(p));
const STEPS = 300;

interface DemoState {
  running: boolean;
  steps: number;
  losses: number[];
  accuracies: { step: number; accuracy: number }[];
  rates: Record<string, number>;
  prediction: null | { digit: number; probability: number };
  error: string | null;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

test(
  "the demo page trains in headless Chromium: the loss falls, the test accuracy rises, a drawn digit gets a prediction",
  { skip: chromium ? false : `no Chromium found (looked for ${CANDIDATES.join(", ")}): apt-get install chromium, or set STAGECRAFT_CHROMIUM`, timeout: 180_000 },
  async () => {
    const { chromium: playwright } = await import("playwright-core");
    await buildDemo(PAGE_DIR);
    const server = await serveDemo(PAGE_DIR, 0);
    const port = (server.address() as { port: number }).port;
    const browser = await playwright.launch({ executablePath: chromium!, args: ["--no-sandbox"] });
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      const consoleErrors: string[] = [];
      page.on("pageerror", (e) => consoleErrors.push(String(e)));
      page.on("console", (m) => void (m.type() === "error" && consoleErrors.push(m.text())));
      await page.goto(`http://127.0.0.1:${port}/`);
      const state = () => page.evaluate(() => (globalThis as unknown as { demo: { state(): DemoState } }).demo.state());
      await page.waitForSelector("#train:not([disabled])", { timeout: 60_000 });
      assert.equal(await page.evaluate(() => (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated), true);

      // by keyboard: Train (eager, the default), then switch to staged while it trains
      const reached = (n: number) =>
        page.waitForFunction((k) => (globalThis as unknown as { demo: { state(): DemoState } }).demo.state().steps >= k, n, { timeout: 120_000, polling: 250 });
      await page.focus("#train");
      await page.keyboard.press("Enter");
      await reached(STEPS / 3);
      await page.focus('input[name="mode"][value="staged"]');
      await page.keyboard.press("Space");
      await reached(STEPS);
      await page.click("#train"); // pause
      await page.waitForFunction(() => !(globalThis as unknown as { demo: { state(): DemoState } }).demo.state().running);
      const s = await state();
      assert.equal(s.error, null);
      assert.ok(mean(s.losses.slice(-25)) < 0.5 * mean(s.losses.slice(0, 25)), `loss fell: first 25 steps ${mean(s.losses.slice(0, 25))}, last 25 ${mean(s.losses.slice(-25))}`);
      assert.ok(s.accuracies.length >= STEPS / 25 - 1);
      const first = s.accuracies[0]!.accuracy, last = s.accuracies[s.accuracies.length - 1]!.accuracy;
      assert.ok(last > first && last > 0.8, `test accuracy rose: ${first} at step ${s.accuracies[0]!.step}, ${last} at step ${s.accuracies[s.accuracies.length - 1]!.step}`);
      assert.ok((s.rates["eager on cpu:0"] ?? 0) > 0 && (s.rates["staged on cpu:0"] ?? 0) > 0, JSON.stringify(s.rates));

      // draw a "1": a vertical stroke down the middle of the pad
      const box = (await page.locator("#pad").boundingBox())!;
      await page.mouse.move(box.x + box.width * 0.5, box.y + box.height * 0.15);
      await page.mouse.down();
      for (let i = 1; i <= 20; i++) await page.mouse.move(box.x + box.width * (0.5 - i * 0.002), box.y + box.height * (0.15 + i * 0.035));
      await page.mouse.up();
      await page.click("#classify");
      await page.waitForFunction(() => (globalThis as unknown as { demo: { state(): DemoState } }).demo.state().prediction !== null);
      const p = (await state()).prediction!;
      assert.ok(Number.isInteger(p.digit) && p.digit >= 0 && p.digit <= 9 && p.probability > 0 && p.probability <= 1);
      assert.match((await page.textContent("#prediction")) ?? "", /^It looks like a \d/);
      assert.equal(await page.locator("#probabilities li").count(), 10);
      assert.equal(p.digit, 1, `a vertical stroke reads as a 1 (got ${p.digit})`);

      mkdirSync(SHOT_DIR, { recursive: true });
      await page.screenshot({ path: path.join(SHOT_DIR, "demo.png"), fullPage: true });
      assert.deepEqual(consoleErrors, []);
    } finally {
      await browser.close();
      server.close();
    }
  },
);
