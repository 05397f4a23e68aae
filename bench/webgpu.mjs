// WebGPU benchmarks: the figures issue 15 asks for, Stagecraft on its webgpu device against
// @tensorflow/tfjs-backend-webgpu on the same GPU in the same process (when installed).
//
// - matmul: ten chained n x n float32 products, no read-back but one element at the end
//   (TFLOP/s; n = 1024, 2048, 4096), eager and staged;
// - eager tiny op: the time per `y = y.add(1)` on a 4-element tensor, 2000 in a row, one read at the end;
// - reads: a synchronous and an awaited read of one element;
// - training steps (staged: forward, gradients, SGD update in one staged function): an MLP
//   (784-512-512-10, batch 256), a convnet (conv 3x3 32, pool, conv 3x3 64, pool, dense 10 on
//   [64, 1, 28, 28]) and an RNN (hidden 256, input 64, sequence 64, batch 32 and 256);
// - compile: the first call of each staged step (tracing, planning, pipeline compilation) and the
//   pipelines compiled.
//
// Runs from the built package (npm run build): node bench/webgpu.mjs [--quick] [--no-peers] [--json FILE]
// --quick uses small sizes (a software renderer such as lavapipe runs ~1 GFLOP/s).
// On the lent GPU machine (shared/gpu/README.md): prepare .gpu/ with
//   ../shared/gpu/prepare-device.sh @tensorflow/tfjs @tensorflow/tfjs-backend-webgpu
// then run: source .gpu/setup.sh; cd /tmp/app && node bench/webgpu.mjs
import { writeFileSync } from "node:fs";
import * as sc from "../dist/api/index.js";

const args = process.argv.slice(2);
const QUICK = args.includes("--quick");
const PEERS = !args.includes("--no-peers");
const jsonAt = args.indexOf("--json");
const JSON_FILE = jsonAt >= 0 ? args[jsonAt + 1] : null;

const info = await sc.initWebGPU();
if (!info) {
  console.error(`no WebGPU device: ${sc.webgpuUnavailable()}`);
  process.exit(1);
}
console.log(`device: ${info.description}`);

/** tfjs with its WebGPU backend on a Dawn instance of its own, or null. */
async function loadTfjs() {
  if (!PEERS) return null;
  try {
    const { create, globals } = await import("webgpu");
    Object.assign(globalThis, globals);
    if (!globalThis.navigator?.gpu) Object.defineProperty(globalThis, "navigator", { value: { gpu: create([]) }, configurable: true });
    const tf = await import("@tensorflow/tfjs");
    await import("@tensorflow/tfjs-backend-webgpu");
    if (!(await tf.setBackend("webgpu"))) return null;
    await tf.ready();
    // (tfjs-webgpu runs ops on small tensors held on the host on its CPU instead of the GPU: off,
    // so both sides time GPU dispatches)
    tf.env().set("WEBGPU_CPU_FORWARD", false);
    return tf;
  } catch (e) {
    console.log(`tfjs-webgpu not available (${e.message.split("\n")[0]}): no peer figures`);
    return null;
  }
}
const tf = await loadTfjs();

const rows = [];
function row(name, unit, ours, theirs, better = "higher") {
  const ratio = theirs == null ? null : better === "higher" ? ours / theirs : theirs / ours;
  rows.push({ name, unit, ours, theirs, ratio });
  const f = (x) => (x == null ? "-" : x >= 100 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toPrecision(3));
  console.log(`${name.padEnd(44)} ${f(ours).padStart(10)} ${f(theirs).padStart(10)} ${unit.padEnd(10)} ${ratio == null ? "" : `${ratio.toFixed(2)}x`}`);
}

/** Median seconds of `fn` (async, returns when its work is done), repeated until ~`budget` s. */
async function time(fn, budget = QUICK ? 0.5 : 2, minReps = 3) {
  await fn();
  await fn();
  const times = [];
  const start = performance.now();
  while (times.length < minReps || (performance.now() - start) / 1000 < budget) {
    const t0 = performance.now();
    await fn();
    times.push((performance.now() - t0) / 1000);
    if (times.length >= 200) break;
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

const gpu = (fn) => sc.device("webgpu", fn);
const rand = (shape, seed, scale = 1) => gpu(() => sc.random.uniform(shape, { seed, minval: -scale, maxval: scale }));
const readOne = async (t) => (await sc.slice(t.reshape([-1]), [0], [1]).data())[0];

console.log(`${"benchmark".padEnd(44)} ${"stagecraft".padStart(10)} ${"tfjs-webgpu".padStart(10)} unit`);

// ---- matmul ------------------------------------------------------------------------------------
for (const n of QUICK ? [128, 256] : [1024, 2048, 4096]) {
  const a = rand([n, n], 1, 1 / Math.sqrt(n));
  const b = rand([n, n], 2, 1 / Math.sqrt(n));
  const chain = (x) => {
    for (let i = 0; i < 10; i++) x = sc.matmul(x, b);
    return x;
  };
  const staged = sc.stage(chain);
  const flops = 10 * 2 * n ** 3;
  const eager = await time(() => sc.tidy(() => readOne(gpu(() => chain(a)))));
  const st = await time(() => sc.tidy(() => readOne(gpu(() => staged(a)))));
  let peer = null;
  if (tf) {
    const ta = tf.randomUniform([n, n], -1 / Math.sqrt(n), 1 / Math.sqrt(n));
    const tb = tf.randomUniform([n, n], -1 / Math.sqrt(n), 1 / Math.sqrt(n));
    peer = await time(async () => {
      const c = tf.tidy(() => {
        let x = ta;
        for (let i = 0; i < 10; i++) x = tf.matMul(x, tb);
        return tf.slice(x.reshape([-1]), [0], [1]);
      });
      await c.data();
      c.dispose();
    });
  }
  row(`matmul ${n}^3 x10, eager`, "TFLOP/s", flops / eager / 1e12, peer && flops / peer / 1e12);
  row(`matmul ${n}^3 x10, staged`, "TFLOP/s", flops / st / 1e12, peer && flops / peer / 1e12);
}

// ---- eager tiny op and reads ---------------------------------------------------------------------
{
  const N = QUICK ? 500 : 2000;
  const x = rand([4], 3);
  const ours = await time(async () => {
    const y = sc.tidy(() => {
      let y = x;
      for (let i = 0; i < N; i++) y = y.add(1);
      return y;
    });
    await y.data();
    y.dispose();
  });
  let peer = null;
  if (tf) {
    const tx = tf.randomUniform([4]);
    peer = await time(async () => {
      const y = tf.tidy(() => {
        let y = tx;
        for (let i = 0; i < N; i++) y = tf.add(y, 1);
        return y;
      });
      await y.data();
      y.dispose();
    });
  }
  row("eager tiny op (add on 4 floats)", "us/op", (ours / N) * 1e6, peer && (peer / N) * 1e6, "lower");
  const one = gpu(() => sc.tensor([1]).add(1));
  const sync = await time(async () => gpu(() => one.add(0)).dataSync());
  const asyncRead = await time(() => gpu(() => one.add(0)).data());
  row("read 1 element, dataSync (worker + Atomics.wait)", "us", sync * 1e6, null, "lower");
  row("read 1 element, await data()", "us", asyncRead * 1e6, null, "lower");
}

// ---- training steps ------------------------------------------------------------------------------
const LR = 0.01;
/** A staged SGD step over `weights` (variables on the GPU) of `loss(x, y, ...weights)`; returns the loss. */
function stagedStep(weights, loss) {
  return sc.stage(
    (x, y) => {
      const [value, grads] = sc.valueAndGrad((...w) => loss(x, y, ...w), { argnums: weights.map((_, i) => i) })(...weights.map((w) => w.read()));
      weights.forEach((w, k) => w.assign(w.read().sub(grads[k].mul(LR))));
      return value;
    },
    { autograph: false },
  );
}

/** The peer's step: tf.variableGrads of the same loss, then the same SGD update. */
function tfStep(vars, loss) {
  return () => {
    const { value, grads } = tf.variableGrads(loss, vars);
    tf.tidy(() => vars.forEach((v) => v.assign(v.sub(grads[v.name].mul(LR)))));
    tf.dispose(grads);
    return value;
  };
}

async function trainCase(name, ours, peer) {
  const t0 = performance.now();
  const first = ours();
  await first.data();
  const firstMs = performance.now() - t0;
  const oursT = await time(async () => {
    const l = ours();
    await l.data();
  });
  let peerT = null;
  if (peer) {
    peerT = await time(async () => {
      const l = peer();
      await l.data();
      l.dispose();
    });
  }
  row(`${name} train step (staged)`, "ms/step", oursT * 1e3, peerT && peerT * 1e3, "lower");
  row(`${name} first call (trace, plan, compile)`, "ms", firstMs, null, "lower");
}

const glorot = (shape, seed) => rand(shape, seed, Math.sqrt(6 / (shape[0] + shape[shape.length - 1])));
const tfGlorot = (shape, name) => tf.variable(tf.randomUniform(shape, -Math.sqrt(6 / (shape[0] + shape[shape.length - 1])), Math.sqrt(6 / (shape[0] + shape[shape.length - 1]))), true, name);
const xent = (logits, labels) => sc.neg(sc.mean(sc.sum(sc.logSoftmax(logits, -1).mul(labels), -1)));

{
  // MLP
  const [B, D, Hd, C] = QUICK ? [32, 64, 64, 10] : [256, 784, 512, 10];
  const ws = [glorot([D, Hd], 11), gpu(() => sc.zeros([Hd])), glorot([Hd, Hd], 12), gpu(() => sc.zeros([Hd])), glorot([Hd, C], 13), gpu(() => sc.zeros([C]))].map((t) => gpu(() => sc.variable(t)));
  const mlp = (x, y, w1, b1, w2, b2, w3, b3) => xent(sc.relu(sc.relu(x.matmul(w1).add(b1)).matmul(w2).add(b2)).matmul(w3).add(b3), y);
  const step = stagedStep(ws, mlp);
  const x = rand([B, D], 14), y = gpu(() => sc.oneHot(sc.cast(sc.random.uniform([B], { seed: 15, minval: 0, maxval: C }).floor(), "int32"), C));
  let peer = null;
  if (tf) {
    const vs = [tfGlorot([D, Hd], "w1"), tf.variable(tf.zeros([Hd]), true, "b1"), tfGlorot([Hd, Hd], "w2"), tf.variable(tf.zeros([Hd]), true, "b2"), tfGlorot([Hd, C], "w3"), tf.variable(tf.zeros([C]), true, "b3")];
    const tx = tf.randomUniform([B, D]), ty = tf.oneHot(tf.randomUniform([B], 0, C, "int32"), C);
    peer = tfStep(vs, () => tf.losses.softmaxCrossEntropy(ty, tf.relu(tf.relu(tx.matMul(vs[0]).add(vs[1])).matMul(vs[2]).add(vs[3])).matMul(vs[4]).add(vs[5])));
  }
  await trainCase(`MLP ${D}-${Hd}-${Hd}-${C} batch ${B}`, () => gpu(() => step(x, y)), peer);
}

{
  // convnet
  const [B, S] = QUICK ? [8, 12] : [64, 28];
  const f = ((S - 2) / 2 - 2) / 2;
  const flat = Math.floor(f) * Math.floor(f) * 64;
  const ws = [glorot([32, 1, 3, 3], 21), glorot([64, 32, 3, 3], 22), glorot([flat, 10], 23), gpu(() => sc.zeros([10]))].map((t) => gpu(() => sc.variable(t)));
  const net = (x, y, k1, k2, w, b) => {
    let h = sc.maxPool2d(sc.relu(sc.conv2d(x, k1)), { kernelSize: 2 });
    h = sc.maxPool2d(sc.relu(sc.conv2d(h, k2)), { kernelSize: 2 });
    return xent(h.reshape([B, -1]).matmul(w).add(b), y);
  };
  const step = stagedStep(ws, net);
  const x = rand([B, 1, S, S], 24), y = gpu(() => sc.oneHot(sc.cast(sc.random.uniform([B], { seed: 25, minval: 0, maxval: 10 }).floor(), "int32"), 10));
  let peer = null;
  if (tf) {
    // (tfjs is NHWC: the same network on the transposed layout)
    const vs = [tfGlorot([3, 3, 1, 32], "k1"), tfGlorot([3, 3, 32, 64], "k2"), tfGlorot([flat, 10], "w"), tf.variable(tf.zeros([10]), true, "b")];
    const tx = tf.randomUniform([B, S, S, 1]), ty = tf.oneHot(tf.randomUniform([B], 0, 10, "int32"), 10);
    peer = tfStep(vs, () => {
      let h = tf.maxPool(tf.relu(tf.conv2d(tx, vs[0], 1, "valid")), 2, 2, "valid");
      h = tf.maxPool(tf.relu(tf.conv2d(h, vs[1], 1, "valid")), 2, 2, "valid");
      return tf.losses.softmaxCrossEntropy(ty, h.reshape([B, -1]).matMul(vs[2]).add(vs[3]));
    });
  }
  await trainCase(`convnet ${S}x${S} batch ${B}`, () => gpu(() => step(x, y)), peer);
}

for (const B of QUICK ? [8] : [32, 256]) {
  // RNN: h_t = tanh(x_t W + h_{t-1} U + b), loss = mean of the last h
  const [Hd, I, T] = QUICK ? [32, 16, 16] : [256, 64, 64];
  const ws = [glorot([I, Hd], 31), glorot([Hd, Hd], 32), gpu(() => sc.zeros([Hd]))].map((t) => gpu(() => sc.variable(t)));
  const rnn = (xs, length, w, u, b) => {
    const [, h] = sc.whileLoop((i) => sc.less(i, length), (i, h) => [i.add(1), sc.tanh(sc.matmul(sc.gather(xs, i, 0), w).add(sc.matmul(h, u)).add(b))], [sc.scalar(0, "int32"), sc.zeros([B, Hd])]);
    return sc.mean(h);
  };
  const step = stagedStep(ws, rnn);
  const xs = rand([T, B, I], 33);
  const length = sc.scalar(T, "int32");
  let peer = null;
  if (tf) {
    const vs = [tfGlorot([I, Hd], "W"), tfGlorot([Hd, Hd], "U"), tf.variable(tf.zeros([Hd]), true, "rb")];
    const txs = tf.unstack(tf.randomUniform([T, B, I], -1, 1));
    peer = tfStep(vs, () => {
      let h = tf.zeros([B, Hd]);
      for (const x of txs) h = tf.tanh(x.matMul(vs[0]).add(h.matMul(vs[1])).add(vs[2]));
      return tf.mean(h);
    });
  }
  await trainCase(`RNN h${Hd} seq ${T} batch ${B}`, () => gpu(() => step(xs, length)), peer);
}

const stats = await sc.webgpuStats();
console.log(`pipelines compiled: ${stats.compiled} in ${stats.compileMs.toFixed(0)} ms (${(stats.compileMs / Math.max(1, stats.compiled)).toFixed(1)} ms each)`);
if (JSON_FILE) writeFileSync(JSON_FILE, JSON.stringify({ device: info.description, node: process.version, quick: QUICK, rows, stats }, null, 2));
process.exit(0);
