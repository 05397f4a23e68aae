/** converters/switch.ts: `switch (d)` becomes `switch (ag.switchValue(d, loc))` (a symbolic discriminant is an error naming the line). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy } from "../snippets.js";

test("the discriminant goes through ag.switchValue; cases stay native", () => {
  assert.equal(
    convertedBy('function f(d) { switch (d + 1) { case 1: return "one"; default: return "other"; } }', ["switch"]),
    'function f(d) { switch (ag.switchValue(d + 1, "t.js:1:17")) { case 1: return "one"; default: return "other"; } }',
  );
});
