// onnxruntime-node's native kernels are installed where the package is found, but its binding
// loads only when a product first passes the crossover (onnx/native-kernels.ts): importing
// Stagecraft, and running small ops, must not pay for loading it. In a fresh process, since this
// one's other tests may have loaded it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { freshProcessJson } from "../util/fresh-process.js";
import { syncRuntime } from "../../src/onnx/sync-session.js";

interface Report { afterImport: boolean; afterSmall: boolean; afterLarge: boolean; smallError: number; largeError: number; nativeCalls: number }

test("onnxruntime's binding loads at the first product past the native crossover, not at import", { skip: syncRuntime() === null ? "onnxruntime-node not installed" : false }, async () => {
  const r = await freshProcessJson<Report>(new URL("./child/native-binding-load.ts", import.meta.url));
  assert.equal(r.afterImport, false, "loaded at import");
  assert.equal(r.afterSmall, false, "loaded by a 16x16 product");
  assert.equal(r.afterLarge, true, "not loaded by a 256x256 product");
  assert.ok(r.nativeCalls > 0, "the 256x256 product did not run natively");
  assert.ok(r.smallError < 1e-5 && r.largeError < 1e-4, `products wrong: ${r.smallError}, ${r.largeError}`);
});
