// Matmul throughput (GFLOP/s) of the Stagecraft CPU kernels vs tfjs (wasm backend) and jax-js
// (wasm device), square float32 products at 256/512/1024. Ours is timed through the public
// kernel entry point, copies in/out of wasm memory included; peers are timed until their
// result is materialized. Run standalone: node --import tsx bench/matmul.ts
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-wasm";
import { init, numpy as np } from "@jax-js/jax";
import { matmul } from "../src/backends/cpu/matmul.js";
import { poolStats, setThreadLimit } from "../src/backends/cpu/worker-pool.js";
import { type Row, isMainModule } from "./common.js";


const SIZES = [256, 512, 1024];

function randomF32(n: number, seed: number): Float32Array {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    a[i] = s / 4294967296 - 0.5;
  }
  return a;
}

/** Median seconds per call after warm-up; repeats until ~minSeconds of samples (>= 5). */
async function timeIt(fn: () => void | Promise<void>, minSeconds = 0.6): Promise<number> {
  for (let i = 0; i < 3; i++) await fn();
  const samples: number[] = [];
  const start = performance.now();
  while (samples.length < 5 || (performance.now() - start) / 1000 < minSeconds) {
    const t = performance.now();
    await fn();
    samples.push((performance.now() - t) / 1000);
    if (samples.length >= 200) break;
  }
  samples.sort((x, y) => x - y);
  return samples[samples.length >> 1];
}

const gflops = (s: number, sec: number) => (2 * s * s * s) / sec / 1e9;

async function oursGflops(s: number, threads: number, a: Float32Array, b: Float32Array): Promise<number> {
  const out = new Float32Array(s * s);
  setThreadLimit(threads);
  try {
    return gflops(s, await timeIt(() => matmul("float32", a, [0], b, [0], out, s, s, s, false, false)));
  } finally {
    setThreadLimit(Infinity);
  }
}

async function tfjsGflops(s: number, a: Float32Array, b: Float32Array): Promise<number> {
  const ta = tf.tensor2d(a, [s, s]), tb = tf.tensor2d(b, [s, s]);
  const sec = await timeIt(async () => {
    const c = tf.matMul(ta, tb);
    await c.data();
    c.dispose();
  });
  ta.dispose(); tb.dispose();
  return gflops(s, sec);
}

async function jaxGflops(s: number, a: Float32Array, b: Float32Array): Promise<number> {
  const ja = np.array(a, { shape: [s, s] }), jb = np.array(b, { shape: [s, s] });
  const sec = await timeIt(async () => {
    const c = np.matmul(ja.ref, jb.ref);
    await c.blockUntilReady();
    c.dispose();
  });
  ja.dispose(); jb.dispose();
  return gflops(s, sec);
}

/** Checks one peer result against ours, so that a peer silently doing nothing is caught. */
async function crossCheck(a: Float32Array, b: Float32Array, s: number): Promise<void> {
  const ours = new Float32Array(s * s);
  matmul("float32", a, [0], b, [0], ours, s, s, s, false, false);
  const t = tf.matMul(tf.tensor2d(a, [s, s]), tf.tensor2d(b, [s, s]));
  const tv = await t.data();
  const jv = await np.matmul(np.array(a, { shape: [s, s] }), np.array(b, { shape: [s, s] })).data();
  for (const i of [0, s + 1, s * s - 1]) {
    if (Math.abs(tv[i] - ours[i]) > 1e-3 || Math.abs(Number(jv[i]) - ours[i]) > 1e-3) {
      throw new Error(`bench/matmul: results disagree at ${i}: ours ${ours[i]} tfjs ${tv[i]} jax ${jv[i]}`);
    }
  }
}

export async function benchMatmul(): Promise<Row[]> {
  await tf.setBackend("wasm");
  await tf.ready();
  await init("wasm");
  const rows: Row[] = [];
  await crossCheck(randomF32(64 * 64, 1), randomF32(64 * 64, 2), 64);
  for (const s of SIZES) {
    const a = randomF32(s * s, 3), b = randomF32(s * s, 4);
    const tfj = await tfjsGflops(s, a, b);
    const jax = await jaxGflops(s, a, b);
    const one = await oursGflops(s, 1, a, b);
    const all = await oursGflops(s, Infinity, a, b);
    const threads = poolStats().threads;
    for (const [label, ours] of [["1 thread", one], [`${threads} threads`, all]] as const) {
      rows.push({ name: `matmul f32 ${s}x${s}x${s} (${label})`, peer: "tfjs-wasm", ours, theirs: tfj, unit: "GFLOP/s", ratio: ours / tfj });
      rows.push({ name: `matmul f32 ${s}x${s}x${s} (${label})`, peer: "jax-js wasm", ours, theirs: jax, unit: "GFLOP/s", ratio: ours / jax });
    }
  }
  return rows;
}

if (isMainModule(import.meta.url)) {
  const rows = await benchMatmul();
  console.log("benchmark".padEnd(40) + "peer".padEnd(14) + "ours".padStart(9) + "theirs".padStart(9) + "  unit     ratio");
  for (const r of rows) {
    console.log(r.name.padEnd(40) + r.peer.padEnd(14) + r.ours.toFixed(1).padStart(9) + r.theirs.toFixed(1).padStart(9) + "  " + r.unit.padEnd(8) + r.ratio.toFixed(2).padStart(6) + "x");
  }
}
