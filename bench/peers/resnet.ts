/**
 * A small ResNet's training step on 32x32 RGB inputs (CIFAR-sized), batch 16: a 3x3 stem to 16
 * channels, a residual block at 16 channels, a residual block down to 32 channels at stride 2
 * (1x1 projection on the skip), global average pooling, a 10-way linear layer, softmax
 * cross-entropy; no batch normalisation. One call is the loss's gradients with respect to all
 * nine weights. Written once (lib.ts) and run by Stagecraft eager and staged and by tfjs (its
 * NHWC layout). The heavy convolutions and their gradients go to the native kernels where those
 * win (backends/cpu/native.ts); "wasm kernels only" shows the portable path.
 */
import * as sc from "../../src/api/index.js";
import { randomValues } from "../common.js";
import { assertClose, type Workload } from "./harness.js";
import { scLib, tfLib, type Lib, type T } from "./lib.js";
import { engineSystem, jaxNotPorted, scDefaults, scWasmOnly, tf, tfBackend, tfSystems } from "./systems.js";

const N = 16, CLASSES = 10;

/** [name, shape] of every weight: filters [out, in, k, k], the dense layer [in, out]. */
const SHAPES: [string, number[]][] = [
  ["stem", [16, 3, 3, 3]], ["a1", [16, 16, 3, 3]], ["a2", [16, 16, 3, 3]],
  ["b1", [32, 16, 3, 3]], ["b2", [32, 32, 3, 3]], ["bp", [32, 16, 1, 1]], ["fc", [32, CLASSES]], ["fcb", [CLASSES]],
];

function make(lib: Lib) {
  const params = SHAPES.map(([, s], i) => {
    const fan = s.length === 4 ? s[1]! * s[2]! * s[3]! : s[0]!;
    const v = randomValues(s.reduce((a, b) => a * b, 1), 900 + i, s.length === 1 ? 0 : Math.sqrt(3 / fan));
    return s.length === 4 ? lib.filter(v, s) : lib.tensor(v, s);
  });
  const x = lib.images(randomValues(N * 3 * 32 * 32, 950), [N, 3, 32, 32]);
  const labels = new Float32Array(N * CLASSES);
  for (let i = 0; i < N; i++) labels[i * CLASSES + ((i * 7) % CLASSES)] = 1;
  const y = lib.tensor(labels, [N, CLASSES]);
  const loss = (stem: T, a1: T, a2: T, b1: T, b2: T, bp: T, fc: T, fcb: T) => {
    const h0 = lib.relu(lib.conv(x, stem, 1));
    const h1 = lib.relu(lib.add(h0, lib.conv(lib.relu(lib.conv(h0, a1, 1)), a2, 1)));
    const h2 = lib.relu(lib.add(lib.conv(h1, bp, 2), lib.conv(lib.relu(lib.conv(h1, b1, 2)), b2, 1)));
    const logits = lib.add(lib.matmul(lib.spatialMean(h2), fc), fcb);
    return lib.mul(lib.mean(lib.sum(lib.mul(lib.logSoftmax(logits), y), 1)), -1);
  };
  const step = (...p: T[]) => lib.grads(loss as (...p: T[]) => T, p);
  return { step, params };
}

export async function resnetWorkload(quick = false): Promise<Workload> {
  const ours = make(scLib);
  const staged = sc.stage(ours.step, { name: "resnet_train_step", autograph: false });
  scDefaults();
  const want = (ours.step(...ours.params) as sc.Tensor[]).map((g) => g.dataSync());
  (staged(...ours.params) as sc.Tensor[]).forEach((g, i) => assertClose(`resnet staged gradient ${i}`, g.dataSync(), want[i]!, 1e-3));
  scWasmOnly();
  (ours.step(...ours.params) as sc.Tensor[]).forEach((g, i) => assertClose(`resnet wasm-kernel gradient ${i}`, g.dataSync(), want[i]!, 1e-3));
  if (!quick) {
    await tfBackend("cpu");
    const theirs = make(tfLib);
    // the dense layer's gradients do not depend on the layout: compare those
    tf.tidy(() => (theirs.step(...theirs.params) as tf.Tensor[]).slice(-2).forEach((g, i) => assertClose(`resnet tfjs gradient ${6 + i}`, g.dataSync(), want[6 + i]!, 1e-3)));
  }
  return {
    name: `Small ResNet training step, batch ${N}, 32x32x3 inputs (5 convolutions 3x3, one 1x1 projection)`,
    call: "forward and the gradients of all weights",
    throughput: { perCall: N, unit: "images/s" },
    note: "Goal: staged within 1.5x of onnxruntime running the same exported step (the onnxruntime engine row).",
    systems: [
      { name: "stagecraft eager", enter: scDefaults, run: () => ours.step(...ours.params) },
      { name: "stagecraft staged", enter: scDefaults, run: () => staged(...ours.params) },
      { name: "stagecraft staged, wasm kernels only", enter: scWasmOnly, run: () => staged(...ours.params) },
      engineSystem(ours.step, ours.params, staged(...ours.params)),
      ...tfSystems(() => { const m = make(tfLib); return () => m.step(...m.params); }, (b) =>
        b === "wasm" ? "tfjs-wasm registers no Conv2DBackpropFilter kernel: it cannot take a convolution's filter gradient"
        : quick ? "left out of --quick: tfjs-cpu's convolution gradients are plain JS loops, tens of seconds per step on this machine; the full run times it" : undefined),
      jaxNotPorted("conv gradients under jit need its own port"),
    ],
  };
}
