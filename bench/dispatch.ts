// Per-op eager dispatch overhead: microseconds for one tiny elementwise op, the result tensor
// produced (not read back). Stagecraft eager vs @tensorflow/tfjs (cpu backend; each result
// disposed, as a tfjs program must) and @jax-js/jax (wasm device; jax-js is lazy, so each
// result is realized with blockUntilReady() and then disposed: that is what producing the
// result costs there). Warm-up, then the median of several timed rounds.
// Run standalone: node --import tsx bench/dispatch.ts
import * as tf from "@tensorflow/tfjs";
import { init, numpy as np } from "@jax-js/jax";
import * as sc from "../src/api/index.js";
import { type Row, isMainModule } from "./common.js";


const ROUNDS = 9;

/** Median microseconds per call of a synchronous op; `iters` calls per round. */
function timeSync(fn: () => void, iters: number): number {
  for (let i = 0; i < iters; i++) fn(); // warm-up: JIT tiers, caches
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t = performance.now();
    for (let i = 0; i < iters; i++) fn();
    rounds.push(((performance.now() - t) * 1000) / iters);
  }
  rounds.sort((a, b) => a - b);
  return rounds[ROUNDS >> 1]!;
}

async function timeAsync(fn: () => Promise<void>, iters: number): Promise<number> {
  for (let i = 0; i < iters; i++) await fn();
  const rounds: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t = performance.now();
    for (let i = 0; i < iters; i++) await fn();
    rounds.push(((performance.now() - t) * 1000) / iters);
  }
  rounds.sort((a, b) => a - b);
  return rounds[ROUNDS >> 1]!;
}

interface Case {
  name: string;
  a: number[];
  /** A second tensor operand, or a JS number (weakly typed scalar). */
  b: number[] | number;
}

const CASES: Case[] = [
  { name: "add f32 [4] + [4]", a: [1, 2, 3, 4], b: [5, 6, 7, 8] },
  { name: "add f32 [1] + [1]", a: [1.5], b: [2.25] },
  { name: "add f32 [4] + JS number", a: [1, 2, 3, 4], b: 0.5 },
];

function expected(c: Case): number[] {
  return c.a.map((x, i) => x + (typeof c.b === "number" ? c.b : c.b[i]!));
}

function check(what: string, got: ArrayLike<number>, want: number[]): void {
  for (let i = 0; i < want.length; i++) {
    if (Math.abs(got[i]! - want[i]!) > 1e-6) throw new Error(`bench/dispatch: ${what} computed ${Array.from(got)}, expected ${want}`);
  }
}

/** Keeps results observable so that no engine can drop the calls as dead code. */
let sink: unknown = null;

function oursMicros(c: Case, iters: number): number {
  const a = sc.tensor(new Float32Array(c.a));
  const b = typeof c.b === "number" ? c.b : sc.tensor(new Float32Array(c.b));
  check(`stagecraft ${c.name}`, sc.add(a, b).dataSync(), expected(c));
  return timeSync(() => {
    sink = sc.add(a, b);
  }, iters);
}

function tfjsMicros(c: Case, iters: number): number {
  const a = tf.tensor1d(c.a, "float32");
  const b = typeof c.b === "number" ? c.b : tf.tensor1d(c.b, "float32");
  const probe = tf.add(a, b);
  check(`tfjs ${c.name}`, probe.dataSync(), expected(c));
  probe.dispose();
  const before = tf.memory().numTensors;
  const us = timeSync(() => {
    const r = tf.add(a, b);
    sink = r;
    r.dispose();
  }, iters);
  if (tf.memory().numTensors !== before) throw new Error(`bench/dispatch: tfjs leaked ${tf.memory().numTensors - before} tensors`);
  a.dispose();
  if (typeof b !== "number") b.dispose();
  return us;
}

async function jaxMicros(c: Case, iters: number): Promise<number> {
  const a = np.array(new Float32Array(c.a));
  const b = typeof c.b === "number" ? c.b : np.array(new Float32Array(c.b));
  const ref = <T>(x: T): T => (typeof x === "number" ? x : ((x as unknown as { ref: T }).ref));
  const probe = np.add(a.ref, ref(b));
  check(`jax-js ${c.name}`, probe.dataSync() as ArrayLike<number>, expected(c)); // dataSync consumes probe
  const us = await timeAsync(async () => {
    const r = np.add(a.ref, ref(b));
    await r.blockUntilReady();
    sink = r;
    r.dispose();
  }, iters);
  a.dispose();
  if (typeof b !== "number") b.dispose();
  return us;
}

/** `scale` < 1 makes fewer calls per round (`--quick`). */
export async function benchDispatch(scale = 1): Promise<Row[]> {
  await tf.setBackend("cpu");
  await tf.ready();
  await init("wasm");
  const rows: Row[] = [];
  for (const c of CASES) {
    const ours = oursMicros(c, Math.round(200_000 * scale));
    const tfjs = tfjsMicros(c, Math.round(100_000 * scale));
    const jax = await jaxMicros(c, Math.round(3_000 * scale));
    rows.push({ name: `dispatch ${c.name}`, peer: "tfjs-cpu", ours, theirs: tfjs, unit: "us/op", ratio: tfjs / ours });
    rows.push({ name: `dispatch ${c.name}`, peer: "jax-js wasm", ours, theirs: jax, unit: "us/op", ratio: jax / ours });
  }
  if (sink === null) throw new Error("unreachable");
  return rows;
}

if (isMainModule(import.meta.url)) {
  for (const r of await benchDispatch()) {
    console.log(`${r.name.padEnd(36)}${r.peer.padEnd(14)}${r.ours.toFixed(3).padStart(9)}${r.theirs.toFixed(3).padStart(9)}  ${r.unit}  ${r.ratio.toFixed(2)}x`);
  }
}
