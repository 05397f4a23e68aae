/** converters/logical.ts: `a && b`, `a || b`, `a ?? b` become `ag.and/or/nullish(() => a, () => b)` (lazy as natively). */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy, gen } from "../snippets.js";

test("&& || ?? with thunks (the logical converter alone leaves ! to the operators)", () => {
  assert.equal(convertedBy("(a, b) => (a && b || !a) ?? b", ["logical"]), "(a, b) => ag.nullish(() => ag.or(() => ag.and(() => a, () => b), () => !a), () => b)");
  assert.equal(gen("(a, b) => (a && b || !a) ?? b"), "(a, b) => ag.nullish(() => ag.or(() => ag.and(() => a, () => b), () => ag.not(a)), () => b)");
});
