/**
 * lowering/returns.ts: a `return` inside a converted `if` or loop becomes `$retval = v; $ret =
 * true` (all returns do, once one does), the statements after it are guarded or left, loops test
 * the flag (beside the break/continue pass's flags), and the function ends with
 * `return ag.retval($retval[, $ret, loc])`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { gen, lowered } from "../snippets.js";

test("returns in branches and loops become the return flag and value", () => {
  assert.equal(
    lowered("function f(n) { while (n) { if (n > 1) return 1; n--; } return 0; }", "returns"),
    "function f(n) { let $ret = false, $retval; while (!$ret && n) { if (n > 1) { $retval = 1; $ret = true; } else { n--; } } if (!$ret) { $retval = 0; $ret = true; } return ag.retval($retval); }",
  );
  // The loop's update is skipped after a return; a value that may be undefined goes through ag.ret.
  assert.equal(
    lowered("function f(x) { for (let i = 0; i < x; i++) { if (i > 2) return i; } }", "returns"),
    'function f(x) { let $ret = false, $retval; { let i = 0; while (!$ret && i < x) { if (i > 2) { $retval = ag.ret(i); $ret = true; } if (!$ret) { i++; } } } return ag.retval($retval, $ret, "t.js:1:1"); }',
  );
  // Inside a switch, a native break leaves it.
  assert.equal(
    lowered("function f(x) { switch (x) { case 0: if (g()) { if (h()) return 1; } k(); } return 2; }", "returns"),
    "function f(x) { let $ret = false, $retval; $L: switch (x) { case 0: if (g()) { if (h()) { $retval = 1; $ret = true; } } if ($ret) break $L; k(); } if (!$ret) { $retval = 2; $ret = true; } return ag.retval($retval); }",
  );
  // No return below a closure boundary: nothing changes.
  assert.equal(lowered("function f(x) { if (x) { g(); } return 1; }", "returns"), "function f(x) { if (x) { g(); } return 1; }");
});

test("a continue in a finally block cancels the try block's return", () => {
  assert.equal(
    lowered("function f(n) { for (;;) { try { return 1; } finally { if (n) continue; } } }", "returns"),
    "function f(n) { let $ret = false, $retval; while (!$ret && true) { let $cont = false; let $fab = false, $fexc = false, $fval; try { $retval = 1; $ret = true; } catch ($fe) { $fexc = true; $fval = $fe; } finally { if (n) { $cont = true; $fab = true; $ret = false; } if ($fexc && !$fab) throw $fval; } } return ag.retval($retval); }",
  );
});

test("return lowered to flags (the rest goes into the other branch), return from a loop", () => {
  assert.equal(
    gen("function f(x) { if (x > 0) { return 1; } return 2; }"),
    "function f(x) { let $ret = false, $retval; " +
      'ag.ifStmt(ag.gt(x, 0), () => { $retval = 1; $ret = true; }, () => { $retval = 2; $ret = true; }, () => [$retval], $s => { [$retval] = $s; }, ["$retval"], "t.js:1:17"); ' +
      "return ag.retval($retval); }",
  );
  assert.equal(
    gen("function f(xs) { for (const x of xs) { if (x) return x; } return null; }"),
    "function f(xs) { let $ret = false, $retval; ag.forOf(xs, x => { " +
      'ag.ifStmt(x, () => { $retval = ag.ret(x); $ret = true; }, null, () => [$ret, $retval], $s => { [$ret, $retval] = $s; }, ["$ret", "$retval"], "t.js:1:40"); ' +
      '}, () => [$ret, $retval], $s => { [$ret, $retval] = $s; }, ["$ret", "$retval"], "t.js:1:18", () => ag.not($ret)); ' +
      'ag.ifStmt(ag.not($ret), () => { $retval = null; $ret = true; }, null, () => [$retval], $s => { [$retval] = $s; }, ["$retval"], "t.js:1:59"); ' +
      "return ag.retval($retval); }",
  );
  // Control can reach the end: the final return checks that no staged condition decides it.
  assert.match(gen("function f(x) { if (x > 0) return x; }"), /return ag\.retval\(\$retval, \$ret, "t\.js:1:1"\); \}$/);
  assert.match(gen("function f(x) { while (true) { if (x > 9) return x; x++; } }"), /return ag\.retval\(\$retval\); \}$/);
  // A return outside any converted construct stays native.
  assert.equal(gen("function f(x) { const y = x; return y; }"), "function f(x) { const y = x; return y; }");
});
