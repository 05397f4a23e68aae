// The RNN training step of bench/graph-ad.ts (hidden 256, input 64, batch 32, seq 64 and 128:
// forward, gradient of every weight, SGD update; eager tape and staged graph AD) against the
// Stagecraft checkout at ROOT, one process per checkout: a before/after check across commits
// whose bench/graph-ad.ts may differ. Prints one JSON line of median ms/step per case, in process
// CPU time (user + system, every thread: with STAGECRAFT_THREADS=1 the work itself, without the
// time the scheduler gave other processes on a shared machine).
// Run it in alternating processes for two checkouts, e.g. (one intra-op thread each):
//   for r in 1 2 3 4 5; do for c in /tmp/old .; do
//     STAGECRAFT_THREADS=1 node --import tsx bench/rnn-step-ab.ts $c; done; done
// A checkout needs its dependencies and its Wasm kernels (npm run build:wasm).
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { median, randomValues } from "./common.js";

const root = resolve(process.argv[2] ?? ".");
const sc = await import(resolve(root, "src/api/index.ts"));
// (checkouts from before the package entry wired the executor installed it on import)
const legacyExecutor = resolve(root, "src/exec/compile.ts");
if (existsSync(legacyExecutor)) await import(legacyExecutor);

const [HIDDEN, INPUT, BATCH, LR] = [256, 64, 32, 0.01];
const tensor = (shape: number[], seed: number, scale = 1) => sc.tensor(randomValues(shape.reduce((a, b) => a * b, 1), seed, scale), "float32", shape);
const W = sc.variable(tensor([INPUT, HIDDEN], 101, Math.sqrt(1 / INPUT)), { name: "rnn_W" });
const U = sc.variable(tensor([HIDDEN, HIDDEN], 102, Math.sqrt(1 / HIDDEN)), { name: "rnn_U" });
const B = sc.variable(tensor([HIDDEN], 103, 0.1), { name: "rnn_b" });
const weights = [W, U, B];
const cell = (x: any, h: any, w: any, u: any, b: any) => sc.tanh(sc.add(sc.add(sc.matmul(x, w), sc.matmul(h, u)), b));
const update = (grads: any[]) => weights.forEach((v, k) => v.assign(v.read().sub(grads[k].mul(LR))));

function eagerStep(xs: any): unknown {
  const loss = (w: any, u: any, b: any) => {
    let h = sc.zeros([xs.shape[1], HIDDEN]);
    for (const x of sc.unstack(xs, 0)) h = cell(x, h, w, u, b);
    return sc.mean(h);
  };
  const [value, grads] = sc.valueAndGrad(loss, { argnums: [0, 1, 2] })(W.read(), U.read(), B.read());
  update(grads);
  return value;
}

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

let sink: unknown = null;
function msPerCall(fn: () => unknown, calls: number): number {
  const t = process.cpuUsage();
  for (let i = 0; i < calls; i++) sink = fn();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000 / calls;
}

const out: Record<string, number> = {};
for (const seq of [64, 128]) {
  const xs = tensor([seq, BATCH, INPUT], 200 + seq);
  const length = sc.scalar(seq, "int32");
  const cases: [string, () => unknown][] = [
    [`staged seq ${seq}`, () => stagedStep(xs, length)],
    [`eager seq ${seq}`, () => eagerStep(xs)],
  ];
  for (const [, fn] of cases) {
    const t = performance.now();
    while (performance.now() - t < 1500) sink = fn(); // warm-up: tracing, compilation, V8 tiers
  }
  const times = new Map<string, number[]>(cases.map(([k]) => [k, []]));
  const calls = cases.map(([, fn]) => Math.max(1, Math.round(150 / msPerCall(fn, 1))));
  for (let r = 0; r < 5; r++) cases.forEach(([k, fn], i) => times.get(k)!.push(msPerCall(fn, calls[i]!)));
  for (const [k, v] of times) out[k] = Number(median(v).toFixed(3));
}
if (sink === null) throw new Error("unreachable");
console.log(JSON.stringify({ root, ...out }));
