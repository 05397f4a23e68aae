// The CPU backend's native kernels (backends/cpu/native.ts, onnxruntime-node's installed by
// api/wiring.ts): installed when onnxruntime-node loads, decided by shape alone, so eager and
// staged code give the same bits for the same product or convolution, also where the compiled
// executor would otherwise compute a product in its own arena; and the WebAssembly kernels run
// when none is installed.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { installNativeKernels, nativeKernels, nativeMatmulWins, nativeStats } from "../../../src/backends/cpu/native.js";
import { config } from "../../../src/core/config.js";
import { hasOnnxRuntime } from "../../../src/onnx/ort.js";
import { loadOrtNativeKernels } from "../../../src/onnx/native-kernels.js";
import { Rng } from "../../util/rng.js";

const rand = (shape: number[], seed: number): sc.Tensor => {
  const r = new Rng(seed);
  const n = shape.reduce((a, b) => a * b, 1);
  return sc.tensor(Float32Array.from({ length: n }, () => r.next() * 2 - 1), "float32", shape);
};
const bits = (t: sc.Tensor) => Array.from(new Uint32Array(Float32Array.from(t.dataSync()).buffer));
const native = nativeKernels() !== null;

test("the wiring installs onnxruntime-node's kernels exactly when it loads (and STAGECRAFT_NATIVE is not 0)", () => {
  assert.equal(native, hasOnnxRuntime() && config.native);
  if (native) assert.equal(nativeKernels()!.name, "onnxruntime-node");
});

// Products the compiled executor would otherwise compute in its own arena (m*n*k up to 4M, B up
// to 256K elements) or inline, and batched ones: eager and staged must agree bit for bit.
const PRODUCTS: [string, number[], number[], { transposeA?: boolean; transposeB?: boolean }][] = [
  ["32x256 @ 256x256 (an RNN step's h U)", [32, 256], [256, 256], {}],
  ["64x256 @ 256x256^T", [64, 256], [256, 256], { transposeB: true }],
  ["(128x200)^T @ 128x160", [128, 200], [128, 160], { transposeA: true }],
  ["a batch of 3: 3x130x140 @ 3x140x150", [3, 130, 140], [3, 140, 150], {}],
  ["just under the crossover: 127x128 @ 128x128", [127, 128], [128, 128], {}],
];

test("products past the crossover: staged = eager bit for bit, as the last op, after arena ops, and the staged call runs natively", { skip: native ? false : "onnxruntime-node not loaded" }, () => {
  for (const [name, as, bs, attrs] of PRODUCTS) {
    const a = rand(as, 1), b = rand(bs, 2);
    const m = attrs.transposeA ? as.at(-1)! : as.at(-2)!, k = attrs.transposeA ? as.at(-2)! : as.at(-1)!, n = attrs.transposeB ? bs.at(-2)! : bs.at(-1)!;
    const eager = sc.matmul(a, b, attrs);
    const last = sc.stage((x: sc.Tensor, y: sc.Tensor) => sc.matmul(x, y, attrs), { autograph: false });
    // the operands are computed into the executor's arena first (shared memory), the product feeds a tanh
    const inner = sc.stage((x: sc.Tensor, y: sc.Tensor) => sc.tanh(sc.matmul(x.mul(1), y.add(0), attrs)), { autograph: false });
    const before = nativeStats().calls;
    // (the first call of a signature is interpreted, the next ones run the compiled graph)
    for (const call of ["first", "compiled"]) {
      assert.deepEqual(bits(last(a, b)), bits(eager), `${name}: staged as the last op (${call} call)`);
      assert.deepEqual(bits(inner(a, b)), bits(sc.tanh(eager)), `${name}: staged between other ops (${call} call)`);
    }
    const wins = nativeMatmulWins(m, n, k);
    assert.equal(wins, 2 * m * n * k >= config.nativeMinFlops, name);
    if (wins) assert.ok(nativeStats().calls - before >= 4, `${name}: the staged calls did not run natively`);
  }
});

test("convolutions and their gradients past the crossover: staged = eager = the tape's gradient bit for bit", { skip: native ? false : "onnxruntime-node not loaded" }, () => {
  const x = rand([8, 16, 16, 16], 3), w = rand([32, 16, 3, 3], 4);
  const loss = (x: sc.Tensor, w: sc.Tensor) => sc.sum(sc.conv2d(x, w, { strides: 1, padding: "same" }).tanh());
  const g = sc.grad(loss, { argnums: [0, 1] });
  const eager = g(x, w) as sc.Tensor[];
  const before = nativeStats().calls;
  const sg = sc.stage((x: sc.Tensor, w: sc.Tensor) => g(x, w), { autograph: false });
  const strided = sc.stage((x: sc.Tensor, w: sc.Tensor) => sc.conv2d(x, w, { strides: 2, padding: 1 }), { autograph: false });
  for (const call of ["first", "compiled"]) {
    const staged = sg(x, w) as sc.Tensor[];
    assert.deepEqual(bits(staged[0]!), bits(eager[0]!), `input gradient (${call} call)`);
    assert.deepEqual(bits(staged[1]!), bits(eager[1]!), `filter gradient (${call} call)`);
    assert.deepEqual(bits(strided(x, w)), bits(sc.conv2d(x, w, { strides: 2, padding: 1 })), `strided forward as the last op (${call} call)`);
  }
  assert.ok(nativeStats().calls - before >= 8, "forward, input and filter gradients should run natively");
});

test("without native kernels the WebAssembly ones run: eager = staged, and close to the native results", () => {
  const a = rand([64, 256], 5), b = rand([256, 256], 6);
  const withNative = sc.matmul(a, b).dataSync();
  const x = rand([4, 16, 16, 16], 7), w = rand([32, 16, 3, 3], 8);
  const convNative = sc.conv2d(x, w, { padding: "same" }).dataSync();
  installNativeKernels(null);
  try {
    const before = nativeStats().calls;
    const eager = sc.matmul(a, b);
    // a fresh staged function: its product compiles into the arena now that nothing runs natively
    const staged = sc.stage((p: sc.Tensor, q: sc.Tensor) => sc.matmul(p, q).mul(1), { autograph: false });
    staged(a, b);
    assert.deepEqual(bits(staged(a, b)), bits(eager));
    const conv = sc.conv2d(x, w, { padding: "same" }).dataSync();
    assert.equal(nativeStats().calls, before, "nothing ran natively");
    const e = eager.dataSync();
    for (let i = 0; i < e.length; i++) assert.ok(Math.abs(e[i]! - withNative[i]!) <= 1e-4 * (1 + Math.abs(e[i]!)), `product [${i}]`);
    for (let i = 0; i < conv.length; i++) assert.ok(Math.abs(conv[i]! - convNative[i]!) <= 1e-4 * (1 + Math.abs(conv[i]!)), `conv [${i}]`);
  } finally {
    installNativeKernels(loadOrtNativeKernels());
  }
});
