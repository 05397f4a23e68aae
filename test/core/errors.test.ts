import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

/** Asserts `fn` throws `type`, with a message matching `pattern` and naming this test file. */
function throwsAt(fn: () => unknown, type: new (...a: any[]) => Error, pattern: RegExp): void {
  assert.throws(fn, (e: Error) => {
    assert.ok(e instanceof type, `expected ${type.name}, got ${e.constructor.name}: ${e.message}`);
    assert.match(e.message, pattern);
    assert.match(e.message, /\(at test\/core\/errors\.test\.ts:\d+:\d+\)$/, `message should name the caller's line: ${e.message}`);
    assert.equal((e as sc.StagecraftError).location?.file.endsWith("errors.test.ts"), true);
    return true;
  });
}

test("shape mismatches are ShapeErrors naming the op, the shapes and the caller's line", () => {
  throwsAt(() => sc.add(sc.zeros([2, 3]), sc.zeros([4])), sc.ShapeError, /^add: shapes \[2, 3\] and \[4\] cannot be broadcast/);
  throwsAt(() => sc.reshape(sc.zeros([2, 3]), [4, 2]), sc.ShapeError, /^reshape: cannot reshape a tensor of shape \[2, 3\] \(size 6\) to \[4, 2\]/);
  throwsAt(() => sc.zeros([2, 3]).mul(sc.ones([3, 2])), sc.ShapeError, /^mul: /);
});

test("bad axes, non-integer shapes and ragged arrays are rejected", () => {
  throwsAt(() => sc.sum(sc.zeros([2, 3]), 2), sc.ShapeError, /^sum: axis 2 is out of range for a tensor of rank 2/);
  throwsAt(() => sc.zeros([2, 1.5]), sc.ShapeError, /^full: shape \[2,1\.5\] has a non-integer dimension 1\.5/);
  throwsAt(() => sc.tensor([[1, 2], [3]]), sc.ShapeError, /^tensor: ragged nested array: element at \[1\] has length 1, expected length 2/);
  throwsAt(() => sc.tensor([[1, 2], 3] as any), sc.ShapeError, /ragged nested array/);
  throwsAt(() => sc.tensor([1, "x"] as any), sc.ValueError, /element at \[1\] is string/);
});

test("dtype errors and out-of-range indices", () => {
  throwsAt(() => sc.logicalAnd(sc.tensor([1]), sc.tensor([true])), sc.DtypeError, /^logicalAnd: needs bool inputs, got float32, bool/);
  throwsAt(() => sc.where(sc.tensor([1, 0]), 1, 2), sc.DtypeError, /^where: condition must be bool, got float32/);
  throwsAt(() => sc.oneHot([0, 5], 3), sc.IndexError, /^oneHot: index 5 at position 1 is out of range for depth 3/);
  throwsAt(() => sc.tensor([1], "complex64" as any), sc.DtypeError, /unknown dtype "complex64"/);
  throwsAt(() => sc.neg(sc.tensor([true])), sc.DtypeError, /^neg: does not accept bool inputs/);
});

test("invalid inputs never yield silent NaN where they can be detected", () => {
  throwsAt(() => sc.random.uniform([2], { minval: 1, maxval: 0 }), sc.ValueError, /maxval \(0\) must be >= minval \(1\)/);
  throwsAt(() => sc.arange(0, 5, 0), sc.ValueError, /step must not be 0/);
  throwsAt(() => sc.random.bernoulli(1.5, [2], { seed: 1 }), sc.ValueError, /probabilities must be in \[0, 1\], got 1\.5/);
});

test("errors show the user's source line with a caret under the column", () => {
  try {
    sc.add(sc.zeros([2]), sc.zeros([3]));
    assert.fail("expected a ShapeError");
  } catch (e) {
    const err = e as sc.StagecraftError;
    assert.ok(err.sourceLine?.includes("sc.add(sc.zeros([2]), sc.zeros([3]));"), String(err.sourceLine));
    assert.match(err.sourceLine!, /\n\s+\|\s+\^$/);
    assert.ok(err.stack!.split("\n")[1]!.includes("sc.add(sc.zeros([2]), sc.zeros([3]))"), "the stack shows the line under the message");
  }
});

test("an error a kernel raises while a staged function runs names the line of that op", () => {
  const f = sc.stage(
    (x: sc.Tensor, i: sc.Tensor) => {
      const y = x.mul(2);
      return sc.gather(y, i, 0); // the op that fails at run time
    },
    { autograph: false },
  );
  const x = sc.tensor([1, 2, 3]);
  // first call interpreted, later calls compiled: both report the gather's line
  for (let k = 0; k < 3; k++) {
    f(x, sc.tensor([1], "int32"));
    assert.throws(
      () => f(x, sc.tensor([7], "int32")),
      (e: Error) => {
        assert.ok(e instanceof sc.IndexError, `${e.constructor.name}: ${e.message}`);
        assert.match(e.message, /^gather: index 7 .* \(at test\/core\/errors\.test\.ts:(\d+):\d+\)$/);
        assert.match((e as sc.StagecraftError).sourceLine ?? "", /sc\.gather\(y, i, 0\)/);
        return true;
      },
    );
  }
});

test("scan and whileLoop given a carry that is not an array say so (a raw TypeError before: init.map is not a function)", () => {
  const xs = sc.tensor([1, 2, 3]);
  const step = (c: sc.Tensor[], x: sc.Tensor): [sc.Tensor[], sc.Tensor] => [[c[0]!.add(x)], x];
  assert.throws(() => sc.scan(step, sc.scalar(0) as any, xs), (e: Error) => e instanceof sc.ValueError && /^scan: the initial carry must be an array of tensors, got a float32\[\] tensor/.test(e.message));
  assert.throws(() => sc.whileLoop(() => false, (v: sc.Tensor) => [v], sc.scalar(0) as any), (e: Error) => e instanceof sc.ValueError && /^whileLoop: loopVars must be an array of tensors/.test(e.message));
  const staged = sc.stage((x: sc.Tensor) => sc.scan(step, x as any, xs)[0][0]!, { autograph: false });
  assert.throws(() => staged(sc.scalar(0)), sc.ValueError);
});
