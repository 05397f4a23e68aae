/**
 * The package bundles for browsers with no configuration (esbuild --platform=browser, Vite), and
 * the bundle runs where there is no Node: eager ops, a staged function whose `if` and `>` on
 * tensors AutoGraph converts at run time, and a typed error. Uses the built package (dist/,
 * which `npm test` builds first), imported by name as an application would.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import * as path from "node:path";
import * as vm from "node:vm";
import * as esbuild from "esbuild";
import { appFolder } from "../util/app-folder.js";

const APP = `
import * as sc from "stagecraft";
const out = {};
out.eager = sc.tensor([1, 2, 3]).mul(2).sum().item();
const pick = sc.stage((x) => {
  if (x.sum() > 0) return x.mul(2);
  return x.neg();
});
out.positive = Array.from(pick(sc.tensor([1, 2])).dataSync());
out.negative = Array.from(pick(sc.tensor([-1, -2])).dataSync());
out.graphHasCond = sc.printGraph(pick.concrete(sc.tensor([1, 2])).graph).includes("cond");
try {
  sc.add(sc.zeros([2]), sc.zeros([3]));
} catch (e) {
  out.error = { name: e.name, message: e.message };
}
out.devices = sc.listDevices().map((d) => d.name);
globalThis.result = out;
`;

/** An app folder that imports the package by name, with a page that loads the app. */
const appWithPage = () => appFolder("bundle", { "app.js": APP, "index.html": '<!doctype html><script type="module" src="./app.js"></script>\n' });

/** What a page has and Node adds: no process, Buffer, require, or Node modules. */
function browserLikeGlobals(): Record<string, unknown> {
  const g: Record<string, unknown> = { console, TextEncoder, TextDecoder, atob, btoa, URL, WebAssembly: (globalThis as Record<string, unknown>).WebAssembly, performance, setTimeout, clearTimeout, queueMicrotask };
  g.globalThis = g;
  g.self = g;
  return g;
}

test("esbuild --platform=browser bundles the package with no errors and no Node module, and the bundle runs without Node's globals", async () => {
  const dir = appWithPage();
  try {
    const r = await esbuild.build({ entryPoints: [path.join(dir, "app.js")], bundle: true, platform: "browser", format: "iife", write: false, metafile: true, logLevel: "silent" });
    assert.deepEqual(r.errors, []);
    const inputs = Object.keys(r.metafile!.inputs);
    assert.deepEqual(inputs.filter((f) => /^node:|(^|\/)dist\/core\/platform\/node\.js$|@babel\/core\/|onnxruntime-node|cli-progress/.test(f)), []);
    assert.ok(inputs.some((f) => f.endsWith("dist/core/platform/browser.js")));
    const code = r.outputFiles[0]!.text;
    const sandbox = browserLikeGlobals();
    vm.runInNewContext(code, sandbox, { filename: "bundle.js" });
    const out = JSON.parse(JSON.stringify(sandbox.result)) as Record<string, unknown>; // (out of the sandbox's realm)
    assert.equal(out.eager, 12);
    assert.deepEqual(out.positive, [2, 4]);
    assert.deepEqual(out.negative, [1, 2]);
    assert.equal(out.graphHasCond, true);
    const err = out.error as { name: string; message: string };
    assert.equal(err.name, "ShapeError");
    assert.match(err.message, /\[2\].*\[3\]/);
    // (one bundle holds library and app: the frames cannot be told apart, so no location rather than a wrong one)
    assert.doesNotMatch(err.message, /\(at /);
    assert.deepEqual(out.devices, ["cpu:0"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("Vite builds an app importing the package with no warning (no Node module externalized for the browser)", async () => {
  const dir = appWithPage();
  try {
    const { build } = await import("vite");
    const said: string[] = [];
    const logger = {
      info() {},
      warn: (m: string) => void said.push(m),
      warnOnce: (m: string) => void said.push(m),
      error: (m: string) => void said.push(m),
      clearScreen() {},
      hasWarned: false,
      hasErrorLogged: () => false,
    };
    const out = await build({ root: dir, configFile: false, logLevel: "warn", customLogger: logger, build: { write: false, minify: false } });
    const chunks = (Array.isArray(out) ? out : [out]).flatMap((o) => ("output" in o ? o.output : [])).filter((o) => o.type === "chunk");
    assert.deepEqual(said, []);
    assert.equal(chunks.length, 1);
    const code = (chunks[0] as { code: string }).code;
    assert.doesNotMatch(code, /from "node:/);
    // (the one module Vite leaves empty is protobufjs's optional `require("fs")`, which it guards)
    const externals = [...code.matchAll(/require___vite_browser_external\(\)/g)].map((m) => code.slice(Math.max(0, m.index! - 400), m.index));
    assert.ok(externals.every((before) => before.includes("protobufjs/src/util/fs.js")), "only protobufjs's guarded fs is left empty");
    assert.match(code, /core\/platform\/browser|is not available in the browser/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
