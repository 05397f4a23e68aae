/**
 * A staged function's trace cache is bounded (`stage(fn, { maxTraces })`): beyond the bound the
 * least recently used concrete function is evicted and released (nothing keeps its graph), met
 * again it is traced again, and the retrace warning still says why it keeps retracing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import * as sc from "../../src/api/index.js";

// (the test runner passes no --expose-gc: the flag set now makes a gc function for a new context)
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

/** Runs `f` with console.warn collected. */
function warningsOf(f: () => void): string[] {
  const warnings: string[] = [];
  const warn = console.warn;
  console.warn = (m: string) => void warnings.push(m);
  try {
    f();
  } finally {
    console.warn = warn;
  }
  return warnings;
}

test("the least recently used trace is evicted beyond maxTraces, and traced again when met again", () => {
  const f = sc.stage((x: sc.Tensor, k: number) => x.mul(k), { maxTraces: 3 });
  const x = sc.tensor([1, 2]);
  for (const k of [1, 2, 3]) f(x, k);
  assert.equal(f.liveTraces, 3);
  f(x, 1); // 1 is now the most recently used: 2 goes next
  assert.deepEqual(f(x, 4).arraySync(), [4, 8]);
  assert.equal(f.traceCount, 4);
  assert.equal(f.liveTraces, 3);
  f(x, 1);
  f(x, 3);
  assert.equal(f.traceCount, 4, "1 and 3 stayed");
  assert.deepEqual(f(x, 2).arraySync(), [2, 4]);
  assert.equal(f.traceCount, 5, "2 was evicted: traced again");
  assert.equal(f.liveTraces, 3);
});

test("the retrace warning of a function at its bound says so", () => {
  const f = sc.stage((x: sc.Tensor, k: number) => x.add(k), { maxTraces: 2 });
  const warnings = warningsOf(() => {
    for (let k = 0; k < 10; k++) f(sc.tensor([0]), k);
  });
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /traced 6 times; the last retrace happened because argument 1 changed from number 4 to number 5\..*it keeps its 2 most recently used traces \(stage\(fn, \{ maxTraces \}\)\)/);
});

test("maxTraces takes a positive integer or Infinity", () => {
  for (const bad of [0, -1, 1.5, NaN, "4"]) {
    assert.throws(() => sc.stage((x: sc.Tensor) => x, { maxTraces: bad as number }), (e: unknown) => e instanceof sc.ValueError && /maxTraces/.test((e as Error).message));
  }
  const f = sc.stage((x: sc.Tensor, k: number) => x.add(k), { maxTraces: Infinity });
  warningsOf(() => {
    for (let k = 0; k < 80; k++) f(sc.tensor([0]), k);
  });
  assert.equal(f.liveTraces, 80, "no bound");
  const g = sc.stage((x: sc.Tensor, k: number) => x.add(k));
  warningsOf(() => {
    for (let k = 0; k < 80; k++) g(sc.tensor([0]), k);
  });
  assert.equal(g.liveTraces, 64, "the default bound");
});

test("mode variants count toward the bound: the evicted mode's trace is retraced, the result is right", () => {
  const model = new sc.nn.Sequential(new sc.nn.Dropout(0.5, { seed: 1 }));
  const f = sc.stage((x: sc.Tensor) => model.call(x) as sc.Tensor, { maxTraces: 1 });
  const x = sc.ones([64]);
  f(x);
  model.eval();
  assert.deepEqual(Array.from(f(x).dataSync()), Array.from(x.dataSync()));
  assert.equal(f.liveTraces, 1);
  model.train();
  assert.ok(Array.from(f(x).dataSync()).some((v) => v === 0));
  assert.equal(f.traceCount, 3);
});

test("20,000 calls over changing shapes and JS values keep the cache and the heap bounded; evicted traces are released", async () => {
  const bound = 16;
  const f = sc.stage((x: sc.Tensor, k: number) => x.mul(k).add(1), { maxTraces: bound });
  const shapes = [1, 2, 3, 4, 5, 6, 7].map((n) => sc.ones([n]));
  const hot = [sc.ones([8]), sc.ones([2, 3]), sc.ones([5, 1])];
  const released: number[] = [];
  const registry = new FinalizationRegistry<number>((k) => released.push(k));
  let heapAt2000 = 0;
  const warnings = warningsOf(() => {
    for (let i = 0; i < 20000; i++) {
      if (i % 10 === 0) {
        // a new JS value (and a shape of seven): a new trace, met once
        const k = 100 + i / 10;
        const x = shapes[(i / 10) % 7]!;
        assert.deepEqual(f(x, k).arraySync(), new Array(x.size).fill(k + 1));
        if (i < 1000) registry.register(f.concrete(x, k).graph, k);
      } else {
        const x = hot[i % 3]!;
        const out = f(x, i % 2).dataSync();
        assert.equal(out[0], (i % 2) + 1);
      }
      assert.ok(f.liveTraces <= bound);
      if (i === 2000) {
        gc();
        heapAt2000 = process.memoryUsage().heapUsed;
      }
    }
  });
  assert.equal(f.traceCount, 2000 + 6, "one trace per new value, the hot ones once (they stay)");
  assert.equal(f.liveTraces, bound);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /traced 6 times; .*argument 1 changed from number 0 to number 1/);
  gc();
  await new Promise((r) => setTimeout(r, 0));
  gc();
  await new Promise((r) => setTimeout(r, 0));
  // 1,800 more traces made and evicted since: an unbounded cache grows by ~10 KB a trace here
  const growth = process.memoryUsage().heapUsed - heapAt2000;
  assert.ok(growth < 6e6, `heap grew by ${(growth / 1e6).toFixed(1)} MB`);
  assert.ok(released.length >= 90, `the evicted traces' graphs are collected (${released.length} of 100)`);
});
