// Before/after comparison of two checkouts of Stagecraft on the hot paths: both are loaded in one
// process and measured in alternating rounds, in CPU time per call, so that whatever else runs on
// the machine hits both alike. Prints each case's median time per call for both, and the median
// of the per-round ratios (baseline / candidate: > 1 means the candidate is faster).
//
//   node --import tsx bench/ab.ts BASELINE_CHECKOUT [CANDIDATE_CHECKOUT=.] [ROUNDS=11]
//
// A checkout needs its dependencies installed and its Wasm kernels built (npm run build:wasm).
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { median } from "./common.js";

type Cases = Record<string, [calls: number, run: () => unknown]>;

async function casesOf(root: string): Promise<Cases> {
  const sc = await import(resolve(root, "src/api/index.ts"));
  // checkouts from before the package entry wired the executor installed it on import
  const legacyExecutor = resolve(root, "src/exec/compile.ts");
  if (existsSync(legacyExecutor)) await import(legacyExecutor);
  const staged = await import(resolve(root, "bench/staged.ts"));
  const x = sc.tensor(Array.from({ length: 32 * 256 }, (_, i) => Math.sin(i) * 3), "float32", [32, 256]);
  const b = sc.tensor(Array.from({ length: 256 }, (_, i) => Math.cos(i)), "float32", [256]);
  const tanhAdd = sc.stage((p: any, q: any) => sc.tanh(p.add(q)), { autograph: false });
  const maxChain = sc.stage((p: any, q: any) => sc.maximum(p.mul(q), q).sub(p), { autograph: false });
  const rnn1 = staged.makeRnnBench(1), rnn32 = staged.makeRnnBench(32);
  const l2hmc1 = staged.makeL2hmcBench(1), l2hmc32 = staged.makeL2hmcBench(32);
  const a4 = sc.tensor([1, 2, 3, 4]), b4 = sc.tensor([5, 6, 7, 8]), a1 = sc.tensor([1]), b1 = sc.tensor([2]);
  // a graph-AD training step: the gradient of a while loop's RNN (stacks, the loop's gradient rule)
  const [T, B, H] = [20, 8, 64];
  const values = (n: number, seed: number) => Array.from({ length: n }, (_, i) => Math.sin(seed * 7919 + i * 12.9898) * 0.1);
  const W = sc.tensor(values(H * H, 1), "float32", [H, H]);
  const U = sc.tensor(values(H * H, 2), "float32", [H, H]);
  const xs = sc.tensor(values(T * B * H, 3), "float32", [T, B, H]);
  const trainStep = sc.stage(
    (seq: any, W: any, U: any) => {
      const tape = new sc.GradientTape();
      tape.watch([W, U]);
      const loss = tape.record(() => {
        const [, h] = sc.whileLoop(
          (i: any) => sc.less(i, T),
          (i: any, hPrev: any) => [i.add(1), sc.tanh(sc.matmul(sc.gather(seq, i), W).add(sc.matmul(hPrev, U)))],
          [sc.scalar(0, "int32"), sc.zeros([B, H])],
        );
        return sc.sum(h!);
      });
      return tape.gradient(loss, [W, U]);
    },
    { autograph: false },
  );
  return {
    "eager add f32 [4] + [4]": [100000, () => sc.add(a4, b4)],
    "eager add f32 [1] + [1]": [100000, () => sc.add(a1, b1)],
    "eager add f32 [4] + JS number": [100000, () => a4.add(2)],
    "eager rnn h64 x20, batch 1": [20, rnn1.eager],
    "staged rnn h64 x20, batch 1": [500, rnn1.staged],
    "staged rnn h64 x20, batch 32": [100, rnn32.staged],
    "staged l2hmc, batch 1": [100, l2hmc1.staged],
    "staged l2hmc, batch 32": [100, l2hmc32.staged],
    "staged tanh(x + b) [32, 256] (SIMD)": [2000, () => tanhAdd(x, b)],
    "staged maximum(x * b, b) - x [32, 256] (SIMD)": [2000, () => maxChain(x, b)],
    "staged graph-AD rnn h64 x20, batch 8 (while)": [20, () => trainStep(xs, W, U)],
  };
}

function cpuMicros(calls: number, run: () => unknown): number {
  const t = process.cpuUsage();
  for (let i = 0; i < calls; i++) run();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / calls;
}

const [baseRoot, candRoot = ".", roundsArg = "11"] = process.argv.slice(2);
if (!baseRoot) {
  console.error("usage: node --import tsx bench/ab.ts BASELINE_CHECKOUT [CANDIDATE_CHECKOUT=.] [ROUNDS=11]");
  process.exit(2);
}
const rounds = Number(roundsArg);
const cand = await casesOf(resolve(candRoot));
const base = await casesOf(resolve(baseRoot));
for (const k of Object.keys(cand)) {
  for (let w = 0; w < 2; w++) {
    cpuMicros(...cand[k]!);
    cpuMicros(...base[k]!);
  }
}
const times: Record<string, { base: number[]; cand: number[] }> = {};
for (let r = 0; r < rounds; r++) {
  for (const k of Object.keys(cand)) {
    const t = (times[k] ??= { base: [], cand: [] });
    // alternate which goes first
    if (r % 2 === 0) {
      t.base.push(cpuMicros(...base[k]!));
      t.cand.push(cpuMicros(...cand[k]!));
    } else {
      t.cand.push(cpuMicros(...cand[k]!));
      t.base.push(cpuMicros(...base[k]!));
    }
  }
}
console.log(`${"case".padEnd(46)} ${"baseline us".padStart(12)} ${"candidate us".padStart(13)}  baseline/candidate`);
for (const [k, t] of Object.entries(times)) {
  const ratio = median(t.cand.map((c, i) => t.base[i]! / c));
  console.log(`${k.padEnd(46)} ${median(t.base).toFixed(3).padStart(12)} ${median(t.cand).toFixed(3).padStart(13)}  ${ratio.toFixed(3)}`);
}
process.exit(0);
