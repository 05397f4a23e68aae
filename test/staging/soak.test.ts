/**
 * Soak: 20,000 calls of four staged functions (elementwise with a reduction, a matmul layer, a
 * branch on a JS number, a staged gradient) over changing shapes (batch sizes 1..96)
 * and changing JS number arguments, with the trace cache at its default bound (maxTraces 64).
 * More distinct keys than the bound keep evicting and retracing; every result is checked, no
 * function ever holds more than 64 traces, and the heap after the run (after gc) stays within
 * HEAP_BOUND of the heap after the warm-up (by then every cache is full): evicted traces are
 * released, nothing else accumulates per call.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

// (the test runner passes no --expose-gc: the flag set now makes a gc function for a new context)
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

const CALLS = 20_000;
const WARM_UP = 4_000;
/** The default maxTraces (src/staging/stage.ts, docs/architecture.md). */
const DEFAULT_BOUND = 64;
/**
 * Heap growth allowed from the end of the warm-up to the end (after gc). Measured: about 1 MB;
 * with maxTraces: Infinity the ~1,400 traces made after the warm-up are kept (~7 KB each) and the
 * heap grows by about 10 MB, so this bound fails an unbounded cache.
 */
const HEAP_BOUND = 4e6;
const MAX_BATCH = 96;
const HOT_BATCHES = [1, 8, 32];
const HOT_KS = [0.5, 1, 2];

async function settle(): Promise<number> {
  for (let k = 0; k < 3; k++) {
    gc();
    await new Promise((r) => setTimeout(r, 0));
  }
  return process.memoryUsage().heapUsed;
}

test(`soak: ${CALLS} staged calls over changing shapes and JS numbers keep each cache at its default bound and the heap bounded`, { timeout: 120_000 }, async () => {
  const rng = new Rng(2026_12_02);
  const w = sc.tensor([[0.5, -1], [0.25, 2], [-0.75, 1]], "float32");
  const scaleSum = sc.stage((x: sc.Tensor, k: number) => x.mul(k).add(sc.sum(x)));
  const layer = sc.stage((x: sc.Tensor, s: number) => sc.relu(sc.matmul(x, w)).mul(s));
  const branch = sc.stage((x: sc.Tensor, n: number) => (n > 1 ? sc.sum(x, 1).add(n) : sc.neg(sc.max(x, 1))));
  const gradOf = sc.stage(sc.grad((x: sc.Tensor) => sc.sum(sc.square(x))) as (x: sc.Tensor) => sc.Tensor);
  const fns = [scaleSum, layer, branch, gradOf];
  // x[b]: a [b, 3] tensor of row r = [r, r + 1, r + 2] / 8 (exact in float32), made once per size
  const inputs = Array.from({ length: MAX_BATCH + 1 }, (_, b) => sc.tensor(Array.from({ length: b * 3 }, (_, i) => (Math.floor(i / 3) + (i % 3)) / 8), "float32", [b, 3]));
  let heapAfterWarmUp = 0;
  let tracesAtWarmUp: number[] = [];
  const warn = console.warn;
  console.warn = () => {}; // (the retrace warnings are expected: one per function)
  try {
    for (let i = 0; i < CALLS; i++) {
      const which = i % 4;
      // mostly a few hot batch sizes and numbers, and now and then any size up to MAX_BATCH with
      // any of 64 numbers (most such keys are new, or were evicted since)
      const hot = rng.next() < 0.88;
      const b = hot ? HOT_BATCHES[rng.int(0, HOT_BATCHES.length)]! : rng.int(1, MAX_BATCH + 1);
      const k = hot ? HOT_KS[rng.int(0, HOT_KS.length)]! : rng.int(1, 65) / 4;
      const x = inputs[b]!;
      const last = (b - 1) / 8; // the last row's first entry
      if (which === 0) {
        const y = scaleSum(x, k).dataSync();
        const total = (3 * b * (b - 1)) / 2 / 8 + (b * 3) / 8; // sum of (r + c) / 8 over rows r, columns c
        assert.equal(y[y.length - 3], last * k + total, `scaleSum b=${b} k=${k}`);
      } else if (which === 1) {
        const y = layer(x, k).dataSync();
        // last row [a, a + 1/8, a + 2/8] @ w: column 1 is -a + 2(a + 1/8) + (a + 2/8) = 2a + 1/2 (>= 0)
        assert.equal(y[y.length - 1], (2 * last + 0.5) * k, `layer b=${b} s=${k}`);
      } else if (which === 2) {
        const y = branch(x, k).dataSync();
        assert.equal(y[b - 1], k > 1 ? 3 * last + 3 / 8 + k : -(last + 2 / 8), `branch b=${b} n=${k}`);
      } else {
        const y = gradOf(x).dataSync();
        assert.equal(y[y.length - 1], 2 * (last + 2 / 8), `grad b=${b}`);
      }
      if (fns[which]!.liveTraces > DEFAULT_BOUND) assert.fail(`call ${i}: function ${which} holds ${fns[which]!.liveTraces} traces`);
      if (i === WARM_UP - 1) {
        // by now each cache is full (more distinct keys than the bound were met)
        for (const f of fns) assert.equal(f.liveTraces, DEFAULT_BOUND);
        tracesAtWarmUp = fns.map((f) => f.traceCount);
        heapAfterWarmUp = await settle();
      }
    }
  } finally {
    console.warn = warn;
  }
  const retraced = fns.map((f, j) => f.traceCount - tracesAtWarmUp[j]!);
  const heapAfter = await settle();
  const growth = heapAfter - heapAfterWarmUp;
  console.log(`soak: ${CALLS} calls, traces ${fns.map((f) => f.traceCount).join(" / ")} (live ${fns.map((f) => f.liveTraces).join(" / ")}), heap after warm-up ${(heapAfterWarmUp / 1e6).toFixed(1)} MB, after ${(heapAfter / 1e6).toFixed(1)} MB`);
  for (const f of fns) assert.equal(f.liveTraces, DEFAULT_BOUND);
  // the cache kept evicting and retracing after the warm-up (else the heap check proves nothing)
  assert.ok(retraced.every((t) => t > DEFAULT_BOUND * 2), `traces made after the warm-up: ${retraced.join(", ")}`);
  assert.ok(growth < HEAP_BOUND, `heap grew by ${(growth / 1e6).toFixed(1)} MB after the warm-up (bound ${HEAP_BOUND / 1e6} MB)`);
});
