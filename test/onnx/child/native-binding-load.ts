// Run in a fresh process by native-kernels-lazy.test.ts: whether onnxruntime-node's binding is
// loaded after importing the package, after a product below the native crossover, and after one
// past it (printed as JSON, with the products' values checked against a float64 reference).
import { createRequire } from "node:module";
import * as sc from "../../../src/api/index.js";
import { nativeStats } from "../../../src/backends/cpu/native.js";

const req = createRequire(import.meta.url);
const bindingLoaded = () => Object.keys(req.cache).some((k) => k.includes("onnxruntime-node"));

function product(n: number): number {
  const a = Float32Array.from({ length: n * n }, (_, i) => ((i * 7) % 13) / 13 - 0.5);
  const b = Float32Array.from({ length: n * n }, (_, i) => ((i * 5) % 11) / 11 - 0.5);
  const c = sc.matmul(sc.tensor(a, "float32", [n, n]), sc.tensor(b, "float32", [n, n])).dataSync();
  let worst = 0;
  for (const [i, j] of [[0, 0], [n - 1, n - 1], [n >> 1, 3]] as const) {
    let s = 0;
    for (let k = 0; k < n; k++) s += a[i * n + k]! * b[k * n + j]!;
    worst = Math.max(worst, Math.abs(c[i * n + j]! - s));
  }
  return worst;
}

const afterImport = bindingLoaded();
const smallError = product(16);
const afterSmall = bindingLoaded();
const largeError = product(256);
const afterLarge = bindingLoaded();
console.log(JSON.stringify({ afterImport, afterSmall, afterLarge, smallError, largeError, nativeCalls: nativeStats().calls }));
