/**
 * Conversion at run time shares its work between closures made from the same code (one per
 * trace, one per call of a factory): the transform runs once and the twin factory is compiled
 * once, while each closure's twin still reads the values that closure captured. Two closures
 * with the same text at different places, or with different captured values, are never
 * conflated.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { autograph, conversionStats } from "../../src/autograph/api.js";

/** Closures of one piece of code, each capturing its own constant `k` (read by value when converted). */
function scaler(factor: number) {
  const k = factor;
  return (x: number) => {
    let y = 0;
    for (let i = 0; i < 3; i++) {
      if (x > 0) y += x * k;
      else y -= x * k;
    }
    return y;
  };
}

test("closures of one piece of code are converted once; each twin computes with its own captured values", () => {
  const before = conversionStats();
  const twins = [1, 2, 3, 4, 5, 6, 7, 8].map((k) => autograph(scaler(k)));
  const after = conversionStats();
  assert.equal(after.transforms - before.transforms, 1, "one run of the transform for eight closures of one function expression");
  assert.equal(after.factories - before.factories, 1, "one compiled factory for their twins");
  assert.deepEqual(
    twins.map((f) => f(2)),
    [1, 2, 3, 4, 5, 6, 7, 8].map((k) => 3 * 2 * k),
    "each twin multiplies by its own closure's k",
  );
  assert.deepEqual(
    twins.map((f) => f(-1)),
    [1, 2, 3, 4, 5, 6, 7, 8].map((k) => 3 * k),
  );
  // With tensors the converted control flow runs on them, still with each closure's own k.
  const x = sc.tensor([2, -1], "float64");
  const three = autograph(scaler(3));
  assert.deepEqual(Array.from(sc.stage((t: sc.Tensor) => sc.sum(t).mul(three(1)))(x).dataSync()), [9]);
});

test("the same text at two places, and the same place with other values, are converted apart", () => {
  // (identical source text, two function expressions: their twins must not share values)
  const a = (() => {
    const k = 2;
    return (x: number) => (x > 0 ? x * k : -x * k);
  })();
  const b = (() => {
    const k = 5;
    return (x: number) => (x > 0 ? x * k : -x * k);
  })();
  assert.equal(Function.prototype.toString.call(a), Function.prototype.toString.call(b));
  const before = conversionStats();
  const ta = autograph(a);
  const tb = autograph(b);
  assert.equal(conversionStats().transforms - before.transforms, 2, "two places, two conversions");
  assert.equal(ta(3), 6);
  assert.equal(tb(3), 15);
  assert.equal(ta(-1), 2);
  assert.equal(tb(-1), 5);
  // A scope given to sc.autograph is the twin's own too: one conversion, two sets of values.
  let offset = 1;
  const h = (x: number) => (x > 0 ? x + offset : x - offset);
  const h1 = autograph(h, { scope: { offset } });
  offset = 100;
  const h2 = autograph(h, { scope: { offset } });
  assert.equal(h1(1), 2);
  assert.equal(h2(1), 101);
});

test("retracing a converted tensor while loop asks the inspector about no function again", () => {
  // (the loop's condition and body reach sc.whileLoop wrapped in AutoGraph's own closures, new
  // each trace: they are library code, never looked up for conversion)
  const doubling = sc.stage(
    autograph((x: sc.Tensor) => {
      let y = x;
      while (sc.less(sc.sum(y), 100)) y = y.mul(2);
      return y;
    }),
  );
  assert.deepEqual(Array.from(doubling(sc.ones([1], "float64")).dataSync()), [128]);
  const warm = conversionStats();
  for (const n of [2, 3, 4]) {
    const y = doubling(sc.ones([n], "float64"));
    assert.deepEqual(Array.from(y.dataSync()), new Array(n).fill(2 ** Math.ceil(Math.log2(100 / n))), `shape [${n}]: a new trace`);
  }
  assert.equal(conversionStats().inspections - warm.inspections, 0, "three more traces, no inspector lookups");
});
