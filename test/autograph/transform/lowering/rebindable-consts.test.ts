/**
 * lowering/rebindable-consts.ts: `const x` whose elements are written or that is pushed to
 * becomes `let x` (a tensor is updated functionally, and a staged loop makes a pushed-to array a
 * tensor list: both rebind x), unless x is assigned directly.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { gen, lowered } from "../snippets.js";

test("const x with element writes or pushes becomes let; other constants stay", () => {
  assert.equal(
    lowered("function f(v) { const x = [0]; const y = [1]; const z = 2; x[0] = v; y.push(v); return [x, y, z]; }", "rebindable-consts"),
    "function f(v) { let x = [0]; let y = [1]; const z = 2; x[0] = v; y.push(v); return [x, y, z]; }",
  );
  // Writes inside nested functions are theirs (each has its own twin): x stays const here.
  assert.equal(lowered("function f(v) { const x = [0]; const g = () => { x[0] = v; }; return x; }", "rebindable-consts"), "function f(v) { const x = [0]; const g = () => { x[0] = v; }; return x; }");
});

test("converted, the element write rebinds x", () => {
  assert.match(gen("function f(v) { const x = [0]; x[0] = v; return x; }"), /let x = \[0\]; x = ag\.setItem\(x, 0, v\);/);
});
