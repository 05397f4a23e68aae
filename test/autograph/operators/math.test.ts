/**
 * Math (operators/math.ts): Math on numbers, registry ops with JavaScript's conventions on tensors.
 * The calls are written as the source transform generates them (docs/autograph.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { ag } from "../../../src/autograph/operators/index.js";
import { near, type Any } from "./helpers.js";

test("math on numbers is Math; on tensors it is the registry op with JS conventions", () => {
  const base = [-2.5, -1.5, -0.5, -0.2, 0, 0.3, 0.5, 1.5, 2.5, 3.7];
  const xs = [...base, ...base.map((v) => v / 4)];
  for (const name of ["abs", "sign", "floor", "ceil", "round", "trunc", "exp", "sin", "cos", "tanh", "atan", "sinh", "cbrt", "asinh", "atanh", "expm1", "log1p"]) {
    for (const x of xs) assert.ok(Object.is((ag.math as Any)[name](x), (Math as Any)[name](x)), `${name}(${x})`);
    const t = sc.tensor(xs, "float64");
    const got = ((ag.math as Any)[name](t) as sc.Tensor).arraySync() as number[];
    near(got, xs.map((x) => (Math as Any)[name](x)), 1e-12);
  }
  assert.equal(ag.math.max(1, 7, 3), 7);
  assert.equal(ag.math.max(), -Infinity);
  assert.ok(Number.isNaN(ag.math.max(1, NaN)));
  assert.equal(ag.math.PI, Math.PI);
  assert.deepEqual(ag.math.max(sc.tensor([1, 5]), 2, sc.tensor([3, 0])).arraySync(), [3, 5]);
  assert.deepEqual(ag.math.min(sc.tensor([1, 5]), 2).arraySync(), [1, 2]);
  assert.deepEqual(ag.math.pow(sc.tensor([2, 3]), 2).arraySync(), [4, 9]);
  near(ag.math.sqrt(sc.tensor([4, 9])).arraySync(), [2, 3]);
  near(ag.math.log(sc.tensor([1, Math.E])).arraySync(), [0, 1]);
  near(ag.math.hypot(sc.tensor([3]), 4).arraySync(), [5]);
  near(ag.math.log2(sc.tensor([8], "float64")).arraySync(), [3], 1e-12);
  near(ag.math.acosh(sc.tensor([1, 2.5], "float64")).arraySync(), [Math.acosh(1), Math.acosh(2.5)], 1e-12);
  assert.equal(ag.callMethod(Math, "abs", [-3]), 3);
  assert.deepEqual((ag.callMethod(Math, "abs", [sc.tensor([-3])]) as sc.Tensor).arraySync(), [3]);
  assert.throws(() => ag.math.clz32(sc.tensor([1])), (e: Error) => e instanceof sc.ValueError && /Math\.clz32/.test(e.message));
});
