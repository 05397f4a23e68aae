// The RNN training step of bench/graph-ad.ts (hidden 256, input 64, batch 32, seq 64 and 128:
// forward, gradient of every weight, SGD update; eager tape and staged graph AD) against
// Stagecraft checkouts, for before/after checks across commits whose bench/graph-ad.ts may differ.
// Times are process CPU time (user + system, every thread: with STAGECRAFT_THREADS=1 the work
// itself, without the time the scheduler gave other processes on a shared machine).
//   node --import tsx bench/rnn-step-ab.ts ROOT           one checkout: a JSON line of median ms/step
//   node --import tsx bench/rnn-step-ab.ts ROOT_A ROOT_B  both in one process, rounds interleaved
//                                                         (A B, then B A): medians and B/A per round
// For alternating processes (one intra-op thread each):
//   for r in 1 2 3 4 5; do for c in /tmp/old .; do
//     STAGECRAFT_THREADS=1 node --import tsx bench/rnn-step-ab.ts $c; done; done
// A checkout needs its dependencies and its Wasm kernels (npm run build:wasm).
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { median, randomValues } from "./common.js";

const [HIDDEN, INPUT, BATCH, LR] = [256, 64, 32, 0.01];

/** The cases (name -> one training step) on the checkout at `root`. */
async function casesOf(root: string): Promise<[string, () => unknown][]> {
  const sc = await import(resolve(root, "src/api/index.ts"));
  // (checkouts from before the package entry wired the executor installed it on import)
  const legacyExecutor = resolve(root, "src/exec/compile.ts");
  if (existsSync(legacyExecutor)) await import(legacyExecutor);
  const tensor = (shape: number[], seed: number, scale = 1) => sc.tensor(randomValues(shape.reduce((a, b) => a * b, 1), seed, scale), "float32", shape);
  const W = sc.variable(tensor([INPUT, HIDDEN], 101, Math.sqrt(1 / INPUT)), { name: "rnn_W" });
  const U = sc.variable(tensor([HIDDEN, HIDDEN], 102, Math.sqrt(1 / HIDDEN)), { name: "rnn_U" });
  const B = sc.variable(tensor([HIDDEN], 103, 0.1), { name: "rnn_b" });
  const weights = [W, U, B];
  const cell = (x: any, h: any, w: any, u: any, b: any) => sc.tanh(sc.add(sc.add(sc.matmul(x, w), sc.matmul(h, u)), b));
  const update = (grads: any[]) => weights.forEach((v, k) => v.assign(v.read().sub(grads[k].mul(LR))));
  const eagerStep = (xs: any): unknown => {
    const loss = (w: any, u: any, b: any) => {
      let h = sc.zeros([xs.shape[1], HIDDEN]);
      for (const x of sc.unstack(xs, 0)) h = cell(x, h, w, u, b);
      return sc.mean(h);
    };
    const [value, grads] = sc.valueAndGrad(loss, { argnums: [0, 1, 2] })(W.read(), U.read(), B.read());
    update(grads);
    return value;
  };
  const stagedStep = sc.stage(
    (xs: any, length: any) => {
      const loss = (w: any, u: any, b: any) => {
        const [, h] = sc.whileLoop((i: any) => sc.less(i, length), (i: any, h: any) => [i.add(1), cell(sc.gather(xs, i, 0), h, w, u, b)], [sc.scalar(0, "int32"), sc.zeros([xs.shape[1], HIDDEN])]);
        return sc.mean(h);
      };
      const [value, grads] = sc.valueAndGrad(loss, { argnums: [0, 1, 2] })(W.read(), U.read(), B.read());
      update(grads);
      return value;
    },
    { name: "rnn_train_step" },
  );
  const cases: [string, () => unknown][] = [];
  for (const seq of [64, 128]) {
    const xs = tensor([seq, BATCH, INPUT], 200 + seq);
    const length = sc.scalar(seq, "int32");
    cases.push([`staged seq ${seq}`, () => stagedStep(xs, length)], [`eager seq ${seq}`, () => eagerStep(xs)]);
  }
  return cases;
}

let sink: unknown = null;
function msPerCall(fn: () => unknown, calls: number): number {
  const t = process.cpuUsage();
  for (let i = 0; i < calls; i++) sink = fn();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000 / calls;
}
function warm(fn: () => unknown): void {
  const t = performance.now();
  while (performance.now() - t < 1500) sink = fn(); // tracing, compilation, V8 tiers
}

const roots = process.argv.slice(2).map((r) => resolve(r));
if (roots.length === 0) roots.push(resolve("."));
const ROUNDS = 5;
if (roots.length === 1) {
  const out: Record<string, number> = {};
  for (const [k, fn] of await casesOf(roots[0]!)) {
    warm(fn);
    const calls = Math.max(1, Math.round(150 / msPerCall(fn, 1)));
    out[k] = Number(median(Array.from({ length: ROUNDS }, () => msPerCall(fn, calls))).toFixed(3));
  }
  console.log(JSON.stringify({ root: roots[0], ...out }));
} else {
  const [a, b] = [await casesOf(roots[0]!), await casesOf(roots[1]!)];
  console.log(`A = ${roots[0]}, B = ${roots[1]}; CPU ms/step, median of ${2 * ROUNDS} interleaved rounds; B/A > 1: B is slower`);
  for (let c = 0; c < a.length; c++) {
    const [k, fa] = a[c]!, fb = b[c]![1];
    warm(fa);
    warm(fb);
    const calls = Math.max(1, Math.round(150 / msPerCall(fa, 1)));
    const ta: number[] = [], tb: number[] = [];
    for (let r = 0; r < 2 * ROUNDS; r++) {
      if (r % 2 === 0) (ta.push(msPerCall(fa, calls)), tb.push(msPerCall(fb, calls)));
      else (tb.push(msPerCall(fb, calls)), ta.push(msPerCall(fa, calls)));
    }
    const ratios = tb.map((t, i) => t / ta[i]!);
    console.log(`${k.padEnd(16)} A ${median(ta).toFixed(2).padStart(8)}  B ${median(tb).toFixed(2).padStart(8)}  B/A ${median(ratios).toFixed(3)} [${Math.min(...ratios).toFixed(2)}..${Math.max(...ratios).toFixed(2)}]`);
  }
}
if (sink === null) throw new Error("unreachable");
