/**
 * Logical operators (operators/logical.ts): lazy exactly as && || ?? with JS values; on eager
 * tensors they read the value and give bool tensors.
 * The calls are written as the source transform generates them (docs/autograph.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { ag } from "../../../src/autograph/operators/index.js";
import { show, type Any } from "./helpers.js";

test("and / or / nullish are lazy exactly as && || ?? are", () => {
  const log: string[] = [];
  const v = (name: string, value: unknown) => () => {
    log.push(name);
    return value;
  };
  const cases: unknown[] = [0, 1, "", "x", null, undefined, NaN, [], false, true];
  for (const a of cases)
    for (const b of cases) {
      log.length = 0;
      const r1 = ag.and(v("a", a), v("b", b));
      const l1 = log.splice(0);
      const r2 = (v("a", a)() as Any) && v("b", b)();
      const l2 = log.splice(0);
      assert.ok(Object.is(r1, r2) && l1.join() === l2.join(), `and ${show(a)} ${show(b)}`);
      const r3 = ag.or(v("a", a), v("b", b));
      const l3 = log.splice(0);
      const r4 = (v("a", a)() as Any) || v("b", b)();
      const l4 = log.splice(0);
      assert.ok(Object.is(r3, r4) && l3.join() === l4.join(), `or ${show(a)} ${show(b)}`);
      const r5 = ag.nullish(v("a", a), v("b", b));
      const l5 = log.splice(0);
      const r6 = (v("a", a)() as Any) ?? v("b", b)();
      const l6 = log.splice(0);
      assert.ok(Object.is(r5, r6) && l5.join() === l6.join(), `nullish ${show(a)} ${show(b)}`);
    }
  let called = false;
  assert.equal(
    ag.and(
      () => 0,
      () => (called = true),
    ),
    0,
  );
  assert.equal(called, false);
  assert.throws(() => ag.or(() => 0, () => { throw new RangeError("b"); }), RangeError);
});

test("logical operators on eager tensors: not casts to bool; and/or short-circuit on the value and return bool tensors", () => {
  assert.deepEqual((ag.not(sc.tensor([0, 1, NaN, -2])) as sc.Tensor).arraySync(), [true, false, true, false]);
  assert.deepEqual((ag.not(sc.tensor([0, 3], "int32")) as sc.Tensor).arraySync(), [true, false]);
  let evaluated = 0;
  const r1 = ag.and(() => sc.scalar(0), () => (evaluated++, sc.scalar(1))) as sc.Tensor;
  assert.equal(evaluated, 0);
  assert.equal(r1.dtype, "bool");
  assert.equal(r1.item(), false);
  const r2 = ag.and(() => sc.scalar(2), () => sc.scalar(5)) as sc.Tensor;
  assert.equal(r2.item(), true);
  const r3 = ag.or(() => sc.scalar(2), () => (evaluated++, sc.scalar(0))) as sc.Tensor;
  assert.equal(evaluated, 0);
  assert.equal(r3.item(), true);
  assert.equal((ag.or(() => sc.scalar(0), () => 0) as sc.Tensor).item(), false);
  assert.equal((ag.and(() => sc.scalar(1), () => true) as sc.Tensor).item(), true);
  // JS left operand: plain JS result, even when the right one is a tensor
  const t = sc.scalar(3);
  assert.equal(ag.and(() => 1, () => t), t);
  assert.equal(ag.or(() => 0, () => t), t);
  assert.equal(ag.nullish(() => t, () => 1), t);
  // non-scalar tensors combine elementwise
  assert.deepEqual((ag.and(() => sc.tensor([1, 0, 2]), () => sc.tensor([1, 1, 0])) as sc.Tensor).arraySync(), [true, false, false]);
  assert.deepEqual((ag.or(() => sc.tensor([1, 0, 0]), () => sc.tensor([0, 0, 3])) as sc.Tensor).arraySync(), [true, false, true]);
});
