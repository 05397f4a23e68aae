/**
 * converters/assignments.ts: `x op= v` and `o.p op= v` become `x = ag.op(x, v)` (a complex object
 * evaluated once); `x++` keeps the native operator on JS primitives and uses `ag.increment` on objects.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy, gen } from "../snippets.js";

test("compound assignment, ++ and -- (the assignments converter alone)", () => {
  assert.equal(
    convertedBy("function f(x, o) { x += 1; o.p *= 2; x++; return x--; }", ["assignments"]),
    'function f(x, o) { let $t; x = ag.add(x, 1); o.p = ag.mul(o.p, 2); typeof x === "object" ? x = ag.increment(x, 1) : ++x; return typeof x === "object" ? ($t = ag.toNumeric(x), x = ag.increment($t, -1), $t) : x--; }',
  );
  assert.equal(
    gen("function f(x, o) { x += 1; o.p *= 2; x++; return x--; }"),
    'function f(x, o) { let $t; x = ag.add(x, 1); o.p = ag.mul(o.p, 2); typeof x === "object" ? x = ag.increment(x, 1) : ++x; return typeof x === "object" ? ($t = ag.toNumeric(x), x = ag.increment($t, -1), $t) : x--; }',
  );
  // A complex object is evaluated once.
  assert.equal(gen("function f(g) { g().p += 1; }"), "function f(g) { let $o; ($o = ag.callee(g)()).p = ag.add($o.p, 1); }");
  // Bitwise compound assignments convert; >>>= and logical assignment stay native.
  assert.equal(convertedBy("function f(x) { x |= 1; x <<= 2; x >>>= 1; x ??= 2; }", ["assignments"]), "function f(x) { x = ag.bitOr(x, 1); x = ag.shl(x, 2); x >>>= 1; x ??= 2; }");
});
