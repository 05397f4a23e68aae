/** converters/logging.ts: `console.log(...)` becomes `ag.print(...)` (a staged print when it meets a symbolic tensor). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy, gen } from "../snippets.js";

test("console.log becomes ag.print; other console methods and a local console stay", () => {
  assert.equal(convertedBy('function f(x) { console.log("x", x); console.error("e"); }', ["logging"]), 'function f(x) { ag.print("x", x); console.error("e"); }');
  assert.equal(convertedBy("function f(console) { console.log(1); }", ["logging"]), "function f(console) { console.log(1); }");
  assert.equal(gen("function f(x) { console.log('x is', x); }"), "function f(x) { ag.print('x is', x); }");
});
