/**
 * print and assertions (operators/logging.ts): console.log eagerly, staged print and assertions
 * when the graph runs.
 * The calls are written as the source transform generates them (docs/autograph.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { ag, AssertionFailedError } from "../../../src/autograph/operators/index.js";
import { LOC, graphOps, f32 } from "./helpers.js";

test("print is console.log eagerly", (t) => {
  const logs: unknown[][] = [];
  t.mock.method(console, "log", (...a: unknown[]) => logs.push(a));
  ag.print("a", 1, { b: 2 });
  ag.callMethod(console, "log", ["via method", 3]);
  assert.deepEqual(logs, [["a", 1, { b: 2 }], ["via method", 3]]);
});

test("staged print logs at run time on every call; JS values are formatted as console.log does", (t) => {
  const logs: string[] = [];
  t.mock.method(console, "log", (...a: unknown[]) => logs.push(a.join(" ")));
  const f = sc.stage((x: sc.Tensor) => {
    ag.print("x is", x, { k: 1 });
    ag.print("plain", 3, [1, 2]);
    ag.callMethod(console, "log", ["n=%d", 4]);
    return x;
  });
  f(sc.tensor([1, 2]));
  f(sc.tensor([3, 4]));
  assert.deepEqual(logs, [
    "x is Tensor([1., 2.], shape=[2], dtype=float32) { k: 1 }",
    "plain 3 [ 1, 2 ]",
    "n=4",
    "x is Tensor([3., 4.], shape=[2], dtype=float32) { k: 1 }",
    "plain 3 [ 1, 2 ]",
    "n=4",
  ]);
  assert.equal(graphOps(f, sc.tensor([1, 2])).filter((o) => o === "print").length, 3);
});

test("staged assertions throw the user's error when the graph runs", () => {
  const f = sc.stage((x: sc.Tensor) => {
    ag.assertOrThrow(ag.lt(sc.sum(x), 0), () => new RangeError("negative sum"), LOC);
    ag.assert(ag.lt(sc.max(x), 100), "x must stay below 100", LOC);
    return ag.mul(x, 2);
  });
  assert.deepEqual((f(f32([1, 2])) as sc.Tensor).arraySync(), [2, 4]);
  assert.throws(() => f(f32([-5, 1])), (e: Error) => e instanceof RangeError && e.message === "negative sum");
  assert.throws(() => f(f32([500, 1])), (e: Error) => e instanceof AssertionFailedError && /x must stay below 100/.test(e.message) && /user\.ts:12:5/.test(e.message));
  assert.equal(graphOps(f, f32([1, 2])).filter((o) => o === "assert").length, 2);
  assert.equal(f.traceCount, 1);
});
