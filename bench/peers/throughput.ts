/**
 * Matmul and conv2d throughput (GFLOP/s) at several sizes: Stagecraft eager and staged (default
 * settings: native kernels past the crossover, the thread policy), Stagecraft with only its
 * WebAssembly kernels, onnxruntime-node on one thread and on its default threads (a hand-built
 * single-node model), tfjs-wasm, jax-js (wasm). Every system's result is checked against
 * Stagecraft's before anything is timed.
 */
import { init, numpy as np, lax } from "@jax-js/jax";
import * as sc from "../../src/api/index.js";
import { randomValues } from "../common.js";
import { assertClose, type Workload } from "./harness.js";
import { makeNode } from "../../src/onnx/builders.js";
import { onnxModel, ortEngine, ortF32, ortSession, ortSystem, scDefaults, scWasmOnly, tf, tfBackend, tfRun } from "./systems.js";


export async function matmulWorkload(s: number): Promise<Workload> {
  const a = randomValues(s * s, 3), b = randomValues(s * s, 4);
  const A = sc.tensor(a, "float32", [s, s]), B = sc.tensor(b, "float32", [s, s]);
  const staged = sc.stage((x: sc.Tensor, y: sc.Tensor) => sc.matmul(x, y), { autograph: false });
  scDefaults();
  const want = sc.matmul(A, B).dataSync();
  const graph = onnxModel([makeNode("MatMul", ["a", "b"], ["c"])], [["a", [s, s]], ["b", [s, s]]], [["c", [s, s]]]);
  const feeds = { a: ortF32(a, [s, s]), b: ortF32(b, [s, s]) };
  const ort1 = await ortSession(graph, 1), ortN = await ortSession(graph, 0);
  assertClose("onnxruntime matmul", (await ort1.run(feeds)).c!.data as Float32Array, want);
  await tfBackend("wasm");
  const ta = tf.tensor2d(a, [s, s]), tb = tf.tensor2d(b, [s, s]);
  assertClose("tfjs-wasm matmul", tf.matMul(ta, tb).dataSync(), want);
  await init("wasm");
  const ja = np.array(a, { shape: [s, s] }), jb = np.array(b, { shape: [s, s] });
  assertClose("jax-js matmul", (await np.matmul(ja.ref, jb.ref).data()) as Float32Array, want);
  const engine = ortEngine((x: sc.Tensor, y: sc.Tensor) => sc.matmul(x, y));
  return {
    name: `matmul float32 ${s}x${s}x${s}`,
    call: "one product",
    throughput: { perCall: (2 * s ** 3) / 1e9, unit: "GFLOP/s" },
    systems: [
      { name: "stagecraft eager", enter: scDefaults, run: () => sc.matmul(A, B) },
      { name: "stagecraft staged", enter: scDefaults, run: () => staged(A, B) },
      { name: "stagecraft eager, wasm kernels only", enter: scWasmOnly, run: () => sc.matmul(A, B) },
      { name: "stagecraft on onnxruntime engine", enter: scDefaults, run: () => engine.staged!(A, B), skip: engine.skip },
      ortSystem("onnxruntime-node, 1 thread", ort1, feeds),
      ortSystem("onnxruntime-node, default threads", ortN, feeds),
      { name: "tfjs-wasm", enter: () => tfBackend("wasm"), run: () => tfRun(() => tf.matMul(ta, tb)) },
      { name: "jax-js wasm", run: async () => { const c = np.matmul(ja.ref, jb.ref); await c.blockUntilReady(); c.dispose(); } },
    ],
  };
}

export interface ConvSize { batch: number; inC: number; outC: number; hw: number; k: number; stride: number }

export async function convWorkload(z: ConvSize): Promise<Workload> {
  const { batch: N, inC: C, outC: O, hw: H, k: K, stride: S } = z;
  const pad = (K - 1) >> 1;
  const oH = Math.floor((H + 2 * pad - K) / S) + 1;
  const x = randomValues(N * C * H * H, 5), w = randomValues(O * C * K * K, 6, 0.2);
  const X = sc.tensor(x, "float32", [N, C, H, H]), W = sc.tensor(w, "float32", [O, C, K, K]);
  const conv = (a: sc.Tensor, b: sc.Tensor) => sc.conv2d(a, b, { strides: S, padding: pad });
  const staged = sc.stage(conv, { autograph: false });
  scDefaults();
  const want = conv(X, W).dataSync();
  const graph = onnxModel(
    [makeNode("Conv", ["x", "w"], ["y"], { kernel_shape: [K, K], strides: [S, S], pads: [pad, pad, pad, pad] })],
    [["x", [N, C, H, H]], ["w", [O, C, K, K]]],
    [["y", [N, O, oH, oH]]],
  );
  const feeds = { x: ortF32(x, [N, C, H, H]), w: ortF32(w, [O, C, K, K]) };
  const ort1 = await ortSession(graph, 1), ortN = await ortSession(graph, 0);
  assertClose("onnxruntime conv", (await ort1.run(feeds)).y!.data as Float32Array, want);
  // tfjs: NHWC images and [kH, kW, in, out] filters, as tfjs models hold them
  await tfBackend("wasm");
  const tx = tf.tensor4d(x, [N, C, H, H]).transpose([0, 2, 3, 1]), tw = tf.tensor4d(w, [O, C, K, K]).transpose([2, 3, 1, 0]);
  const tfConv = () => tf.conv2d(tx as tf.Tensor4D, tw as tf.Tensor4D, S, [[0, 0], [pad, pad], [pad, pad], [0, 0]]);
  assertClose("tfjs-wasm conv", tf.tidy(() => tfConv().transpose([0, 3, 1, 2]).dataSync()), want);
  await init("wasm");
  const jx = np.array(x, { shape: [N, C, H, H] }), jw = np.array(w, { shape: [O, C, K, K] });
  const jaxConv = () => lax.convGeneralDilated(jx.ref, jw.ref, [S, S], [[pad, pad], [pad, pad]]);
  assertClose("jax-js conv", (await jaxConv().data()) as Float32Array, want);
  const engine = ortEngine(conv);
  return {
    name: `conv2d float32 ${N}x${C}x${H}x${H}, ${O} filters ${K}x${K}, stride ${S}`,
    call: "one convolution (NCHW; tfjs NHWC)",
    throughput: { perCall: (2 * N * O * oH * oH * C * K * K) / 1e9, unit: "GFLOP/s" },
    systems: [
      { name: "stagecraft eager", enter: scDefaults, run: () => conv(X, W) },
      { name: "stagecraft staged", enter: scDefaults, run: () => staged(X, W) },
      { name: "stagecraft eager, wasm kernels only", enter: scWasmOnly, run: () => conv(X, W) },
      { name: "stagecraft on onnxruntime engine", enter: scDefaults, run: () => engine.staged!(X, W), skip: engine.skip },
      ortSystem("onnxruntime-node, 1 thread", ort1, feeds),
      ortSystem("onnxruntime-node, default threads", ortN, feeds),
      { name: "tfjs-wasm", enter: () => tfBackend("wasm"), run: () => tfRun(tfConv) },
      { name: "jax-js wasm", run: async () => { const c = jaxConv(); await c.blockUntilReady(); c.dispose(); } },
    ],
  };
}
