/**
 * stagecraft/esbuild and stagecraft/vite convert user code at build time, so a closure with
 * `while`/`if` and operators on tensors is staged as control flow in a browser bundle (where
 * run-time conversion cannot see a closure's variables: there is no inspector). Uses the built
 * package (dist/), imported by name as an application would.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import * as path from "node:path";
import * as vm from "node:vm";
import * as esbuild from "esbuild";
import { appFolder } from "../util/app-folder.js";

// (TypeScript: the plugins strip types in the same pass)
const APP = `
import * as sc from "stagecraft";
const scale: sc.Tensor = sc.scalar(3);
function repeatAndFold(x: sc.Tensor): sc.Tensor {
  let total = x * 0;
  let i = sc.scalar(0);
  while (i < 3) {
    total = total + x * scale;
    i = i + 1;
  }
  if (total.sum() > 0) return total;
  return -total;
}
const staged = sc.stage(repeatAndFold);
const out: Record<string, unknown> = {};
try {
  out.positive = Array.from(staged(sc.tensor([1, 2])).dataSync());
  out.negative = Array.from(staged(sc.tensor([-1, -2])).dataSync());
  const text = sc.printGraph(staged.concrete(sc.tensor([1, 2])).graph);
  out.ops = ["while", "cond"].filter((op) => text.includes(op));
} catch (e) {
  out.error = String((e as Error).message);
}
(globalThis as Record<string, unknown>).result = out;
`;

/** An app folder that imports the package by name, with a page that loads the app. */
const appWithPage = () => appFolder("plugin", { "app.ts": APP, "index.html": '<!doctype html><script type="module" src="./app.ts"></script>\n' });

function runInPageLikeContext(code: string): Record<string, unknown> {
  const g: Record<string, unknown> = { console, TextEncoder, TextDecoder, atob, btoa, URL, performance, setTimeout, clearTimeout, queueMicrotask };
  g.WebAssembly = (globalThis as Record<string, unknown>).WebAssembly;
  g.globalThis = g;
  vm.runInNewContext(code, g, { filename: "bundle.js" });
  return JSON.parse(JSON.stringify(g.result)) as Record<string, unknown>;
}

const expected = { positive: [9, 18], negative: [9, 18], ops: ["while", "cond"] };

test("stagecraft/esbuild: a bundled closure's while, if and tensor operators are staged as control flow; without the plugin they are not", async () => {
  const dir = appWithPage();
  try {
    const { default: autograph } = (await import("stagecraft/esbuild")) as typeof import("../../src/autograph/esbuild-plugin.js");
    const bundle = async (plugins: esbuild.Plugin[]) => {
      const r = await esbuild.build({ entryPoints: [path.join(dir, "app.ts")], bundle: true, platform: "browser", format: "iife", write: false, logLevel: "silent", plugins });
      assert.deepEqual(r.errors, []);
      return r.outputFiles[0]!.text;
    };
    assert.deepEqual(runInPageLikeContext(await bundle([autograph() as unknown as esbuild.Plugin])), expected);
    // without conversion, the closure's names are out of run-time conversion's sight in a bundle
    const plain = runInPageLikeContext(await bundle([]));
    assert.equal(plain.positive, undefined);
    assert.match(String(plain.error), /tensor|symbolic|condition|bool/i);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("stagecraft/vite: vite build converts the same closure, and the built page script stages it as control flow", async () => {
  const dir = appWithPage();
  try {
    const { build } = await import("vite");
    const { default: autograph } = (await import("stagecraft/vite")) as typeof import("../../src/autograph/vite-plugin.js");
    const out = await build({ root: dir, configFile: false, logLevel: "silent", plugins: [autograph()], build: { write: false, minify: false, modulePreload: { polyfill: false } } });
    const chunks = (Array.isArray(out) ? out : [out]).flatMap((o) => ("output" in o ? o.output : [])).filter((o) => o.type === "chunk");
    assert.equal(chunks.length, 1);
    // (the chunk is a module script; vm runs classic scripts: import.meta.url stands for the page's script URL)
    const code = (chunks[0] as { code: string }).code.replaceAll("import.meta.url", JSON.stringify("http://localhost/assets/index.js"));
    assert.doesNotMatch(code, /^\s*(import|export)\b/m);
    assert.deepEqual(runInPageLikeContext(code), expected);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
