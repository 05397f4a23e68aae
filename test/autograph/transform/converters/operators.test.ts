/**
 * converters/operators.ts: `a + b` and the other arithmetic, comparison and bitwise operators become
 * `ag.add(a, b)`, ..., `ag.bitOr(a, b)`; `!a -a +a ~a` `ag.not/neg/pos/bitNot(a)`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy, gen } from "../snippets.js";

test("the operators converter alone (&& is the logical converter's)", () => {
  assert.equal(
    convertedBy("(a, b) => -a + b * 2 - (a % b) ** 2 <= +b && !a", ["operators"]),
    "(a, b) => ag.le(ag.sub(ag.add(ag.neg(a), ag.mul(b, 2)), ag.pow(ag.mod(a, b), 2)), ag.pos(b)) && ag.not(a)",
  );
  // Literals keep their sign; in, instanceof, >>>, typeof, void stay; bitwise operators convert.
  assert.equal(
    convertedBy("(a, b) => [-1, +2, a in b, a instanceof b, a >>> b, typeof a, void a, a | b, a & b, a ^ b, a << b, a >> b, ~a]", ["operators"]),
    "(a, b) => [-1, +2, a in b, a instanceof b, a >>> b, typeof a, void a, ag.bitOr(a, b), ag.bitAnd(a, b), ag.bitXor(a, b), ag.shl(a, b), ag.shr(a, b), ag.bitNot(a)]",
  );
});

test("arithmetic, comparison and unary operators", () => {
  assert.equal(gen("(a, b) => -a + b * 2 - (a % b) ** 2 <= +b"), "(a, b) => ag.le(ag.sub(ag.add(ag.neg(a), ag.mul(b, 2)), ag.pow(ag.mod(a, b), 2)), ag.pos(b))");
  assert.equal(gen("(a, b) => a === b || a != b || a instanceof b || -1"), "(a, b) => ag.or(() => ag.or(() => ag.or(() => ag.eq(a, b), () => ag.looseNe(a, b)), () => a instanceof b), () => -1)");
});
