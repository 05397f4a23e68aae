/**
 * Bitwise operators (operators/bitwise.ts) in converted code: each element through JavaScript's
 * ToInt32, an int32 result, eagerly and staged; compound assignments and loop counters.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import type { Any } from "./helpers.js";

test("bitwise operators on tensors take each element as JavaScript's ToInt32 does (t | 0 truncates), eagerly and staged; it was a TensorCoercionError", () => {
  const values = [2.7, -2.7, 3e9, -3e9, 1e10, 0.5, -0.5, 7, -8, NaN, Infinity];
  const ops = (x: Any): Any[] => [x | 0, x & 6, x ^ 5, x << 3, x >> 1, ~x, (x | 0) << 31, x >> 33, 5 << x, x & -1];
  const converted = sc.autograph(ops);
  const staged = sc.stage((x: Any) => sc.stack(ops(x)));
  for (const v of values) {
    const want = ops(v);
    assert.deepEqual(converted(v), want, "JS numbers: the operators themselves");
    assert.deepEqual((converted(sc.scalar(v, "float64")) as sc.Tensor[]).map((t) => t.item()), want, `eager ${v}`);
    const out = staged(sc.scalar(v, "float64"));
    assert.equal(out.dtype, "int32");
    assert.deepEqual(out.arraySync(), want, `staged ${v}`);
  }
  // compound assignment on int32 tensors, and on a loop counter (a JS number carried by the loop)
  const compound = sc.stage((x: Any) => {
    let y = x;
    y |= 8;
    y <<= 1;
    return y;
  });
  assert.deepEqual(compound(sc.tensor([1, 2], "int32")).arraySync(), [18, 20]);
  const counter = sc.stage((x: Any) => {
    let i = 0;
    let acc = x;
    while (i < 5) {
      acc = acc + (i & 1);
      i = i + 1;
    }
    return acc;
  });
  assert.equal(counter(sc.scalar(0)).item(), 2);
});
