/** converters/math.ts: `Math.f(...)` becomes `ag.math.f(...)` (the tensor op on a tensor, Math.f on a number). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy, gen } from "../snippets.js";

test("Math calls go to ag.math; constants, spread calls and a local Math stay", () => {
  assert.equal(convertedBy("(x) => Math.max(Math.exp(x), ...[1]) + Math.PI", ["math"]), "x => Math.max(ag.math.exp(x), ...[1]) + Math.PI");
  assert.equal(gen("(x, y) => Math.max(Math.exp(x), y) + Math.PI"), "(x, y) => ag.add(ag.math.max(ag.math.exp(x), y), Math.PI)");
  // A local `Math` is not the global one.
  assert.equal(gen("(Math) => Math.exp(1)"), 'Math => ag.callMethod(Math, "exp", [1])');
});
