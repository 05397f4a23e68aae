// AutoGraph costs: converted code staged vs the same computation written by hand with
// sc.cond / sc.whileLoop (goal: within 3%), and conversion time per function.
// Standalone: node --import tsx bench/autograph.ts
import { fileURLToPath } from "node:url";
import * as sc from "../src/api/index.js";
import type { Row } from "./common.js";

type T = any; // tensors in native arithmetic and comparisons (no operator overloading in TS types)

/** Native control flow on tensors: converted by AutoGraph (free variable `sc` given in scope). */
function halveUntilSmall(x: T): T {
  let y = x;
  let steps = 0;
  while ((sc.sum(y) as T) > 1) {
    if ((sc.max(y) as T) > 4) y = y * 0.5;
    else y = y - 0.25;
    steps = steps + 1;
  }
  return [y, steps];
}

/** The same computation with the functional forms. */
function halveUntilSmallByHand(x: sc.Tensor): sc.Tensor[] {
  const [y, steps] = sc.whileLoop(
    (y) => sc.greater(sc.sum(y), 1),
    (y, steps) => [sc.cond(sc.greater(sc.max(y), 4), () => y.mul(0.5), () => y.sub(0.25)), steps!.add(1)],
    [x, sc.scalar(0, "int32")],
  );
  return [y!, steps!];
}

function timePerCall(f: (x: sc.Tensor) => unknown, inputs: sc.Tensor[], rounds = 9, callsPerRound = 300): number {
  for (let i = 0; i < 2000; i++) f(inputs[i % inputs.length]!); // past the executor's compile and V8's warm-up
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < callsPerRound; i++) f(inputs[i % inputs.length]!);
    times.push(Number(process.hrtime.bigint() - t0) / 1e3 / callsPerRound);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

export async function benchAutograph(): Promise<Row[]> {
  const converted = sc.stage(sc.autograph(halveUntilSmall, { scope: { sc } }));
  const byHand = sc.stage(halveUntilSmallByHand);
  const inputs = [1, 3, 7, 20].map((s) => sc.tensor([s, s / 2, s / 3, 1], "float32"));
  for (const x of inputs) {
    const [a, n] = converted(x) as sc.Tensor[];
    const [b, m] = byHand(x);
    if (JSON.stringify(a!.arraySync()) !== JSON.stringify(b!.arraySync()) || Number(n!.item()) !== Number(m!.item())) {
      throw new Error(`converted and hand-written results differ for ${x.toString()}`);
    }
  }
  // Alternate the two so machine noise hits both alike.
  const a: number[] = [];
  const b: number[] = [];
  for (let k = 0; k < 3; k++) {
    a.push(timePerCall((x) => converted(x), inputs));
    b.push(timePerCall((x) => byHand(x), inputs));
  }
  const ours = Math.min(...a);
  const theirs = Math.min(...b);
  // Conversion time: distinct functions (no cache hits), converted from source at run time.
  const n = 40;
  const fns = Array.from({ length: n }, (_, i) => new Function("sc", `return function f${i}(x) { let y = x; while (sc.sum(y) > ${i + 1}) { if (sc.max(y) > 4) y = y * 0.5; else y = y - 0.25; } return y; }`)(sc));
  const t0 = process.hrtime.bigint();
  for (const f of fns) sc.autograph(f, { scope: { sc } });
  const convertMs = Number(process.hrtime.bigint() - t0) / 1e6 / n;
  return [
    { name: "autograph while+if staged (us/call)", peer: "hand-written sc.whileLoop/sc.cond", ours, theirs, unit: "us/call", ratio: theirs / ours },
    { name: "autograph conversion time per function", peer: "-", ours: convertMs, theirs: NaN, unit: "ms", ratio: NaN },
  ];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const r of await benchAutograph()) console.log(`${r.name.padEnd(42)} ${r.peer.padEnd(36)} ${r.ours.toFixed(2).padStart(8)} ${Number.isNaN(r.theirs) ? "" : r.theirs.toFixed(2).padStart(8)} ${r.unit.padEnd(8)} ${Number.isNaN(r.ratio) ? "" : r.ratio.toFixed(3) + "x"}`);
}
