/**
 * lowering/branches.ts: the statements after an `if` one of whose branches always jumps move into
 * its other branch (so the jump ends a branch and needs no guard). Declarations among them that
 * earlier code sees are declared before the `if` (moved-declarations.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { lowered } from "../snippets.js";

test("the rest goes into the branch that does not jump", () => {
  assert.equal(lowered("function f(x) { if (x > 0) return 1; x = -x; return x; }", "branches"), "function f(x) { if (x > 0) return 1;else { x = -x; return x; } }");
  assert.equal(lowered("function f(x) { if (x > 0) { g(); } else { return 0; } return x; }", "branches"), "function f(x) { if (x > 0) { { g(); } return x; } else { return 0; } }");
  // Both branches jump, or none does: nothing moves.
  assert.equal(lowered("function f(x) { if (x) return 1; else return 2; }", "branches"), "function f(x) { if (x) return 1;else return 2; }");
  assert.equal(lowered("function f(x) { if (x) g(); return 2; }", "branches"), "function f(x) { if (x) g(); return 2; }");
});

test("if (c) throw e stays as it is (an assertion)", () => {
  assert.equal(lowered('function f(x) { if (x < 0) throw new Error("neg"); return x; }', "branches"), 'function f(x) { if (x < 0) throw new Error("neg"); return x; }');
});

test("a declaration that earlier closures see is declared before the if, its reads there checked for the TDZ", () => {
  assert.equal(
    lowered("function f(x) { const h = () => y; if (x) return h; let y = 2; return y; }", "branches"),
    'function f(x) { const h = () => ag.tdz(y, "y"); let y; if (x) return h;else { y = 2; return y; } }',
  );
  // Not seen before: it moves with the rest.
  assert.equal(lowered("function f(x) { if (x) return 0; let y = 2; return y; }", "branches"), "function f(x) { if (x) return 0;else { let y = 2; return y; } }");
});
