/** converters/asserts.ts: `if (c) throw e` becomes `ag.assertOrThrow(c, () => e, loc)` (a staged assertion when c is symbolic). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy, gen } from "../snippets.js";

test("if-throw becomes ag.assertOrThrow; the error is made only when thrown", () => {
  assert.equal(
    convertedBy('function f(x) { if (x < 0) throw new RangeError("neg"); if (x) { throw 1; } return x; }', ["asserts"]),
    'function f(x) { ag.assertOrThrow(x < 0, () => new RangeError("neg"), "t.js:1:17"); ag.assertOrThrow(x, () => 1, "t.js:1:57"); return x; }',
  );
  // With an else, or more than a throw, it is an if.
  assert.equal(convertedBy("function f(x) { if (x < 0) throw 1; else g(); }", ["asserts"]), "function f(x) { if (x < 0) { throw 1; } else { g(); } }");
  assert.equal(gen("function f(x) { if (x < 0) throw new RangeError('negative'); return x; }"), "function f(x) { ag.assertOrThrow(ag.lt(x, 0), () => new RangeError('negative'), \"t.js:1:17\"); return x; }");
});
