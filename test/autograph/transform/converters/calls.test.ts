/**
 * converters/calls.ts: `f(a)` becomes `ag.callee(f)(a)` and `o.m(a)` `ag.callMethod(o, "m", [a])`
 * (arguments with effects in a thunk, so the method is read first); calls on ag, super, import(),
 * direct eval and private methods stay.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy, gen } from "../snippets.js";

test("the calls converter alone", () => {
  assert.equal(
    convertedBy("function f(o, g) { g(1); o.m(2); o[k](3); return o.n(g(4)); }", ["calls"]),
    'function f(o, g) { ag.callee(g)(1); ag.callMethod(o, "m", [2]); ag.callMethod(o, k, [3]); return ag.callMethod(o, "n", () => [ag.callee(g)(4)]); }',
  );
  // eval, optional calls (their arguments converted) stay native.
  assert.equal(convertedBy("function f(o, s) { eval(s); o?.m(g(1)); }", ["calls"]), "function f(o, s) { eval(s); o?.m(ag.callee(g)(1)); }");
});

test("ag.callee and ag.callMethod (arguments with effects in a thunk, so the method is read first)", () => {
  assert.equal(
    gen("function f(o, g) { g(1); o.m(2, ...o.rest); return o.n(g(3)); }"),
    'function f(o, g) { ag.callee(g)(1); ag.callMethod(o, "m", () => [2, ...o.rest]); return ag.callMethod(o, "n", () => [ag.callee(g)(3)]); }',
  );
  assert.equal(gen("(o, k) => o[k](1)"), "(o, k) => ag.callMethod(o, k, [1])");
});
