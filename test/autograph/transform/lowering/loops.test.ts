/**
 * lowering/loops.ts (the loops of the break/continue pass): every converted loop becomes a
 * `while` or a `for...of` with one exit; for loops keep JavaScript's per-iteration bindings of
 * their head's `let`s where closures can see them; do-while runs its body once, then as a while.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { gen, lowered } from "../snippets.js";

test("for becomes a while in a block with its initializer; do-while a block, then a while", () => {
  assert.equal(lowered("function f(n) { let s = 0; for (let i = 0; i < n; i++) s += i; return s; }", "break-continue"), "function f(n) { let s = 0; { let i = 0; while (i < n) { s += i; i++; } } return s; }");
  assert.equal(lowered("function f(n) { let s = 0; for (;;) { s++; } }", "break-continue"), "function f(n) { let s = 0; while (true) { s++; } }");
  assert.equal(lowered("function f(n) { let i = 0; do { i++; } while (i < n); return i; }", "break-continue"), "function f(n) { let i = 0; { i++; } while (i < n) { i++; } return i; }");
});

test("per-iteration copies of loop-head let bindings captured by closures", () => {
  assert.equal(
    lowered("function f() { const fs = []; for (let i = 0; i < 2; i++) fs.push(() => i); return fs; }", "break-continue"),
    "function f() { let fs = []; { let i = 0; while (i < 2) { let $i = i; { let i = $i; fs.push(() => i); $i = i; } i = $i; i++; } } return fs; }",
  );
  assert.equal(
    gen("function f() { const fs = []; for (let i = 0; i < 2; i++) fs.push(() => i); return fs; }"),
    // (fs, pushed to, becomes let: a staged loop would make it a tensor list and rebind it.)
    "function f() { let fs = []; { let i = 0; ag.whileStmt(() => ag.lt(i, 2), () => { " +
      'let $i = i; { let i = $i; ag.callMethod(fs, "push", [() => i]); $i = i; } i = $i; typeof i === "object" ? i = ag.increment(i, 1) : ++i; ' +
      '}, () => [fs, i], $s => { [fs, i] = $s; }, ["fs", "i"], "t.js:1:31"); } return fs; }',
  );
  // Without a closure capturing i there is no copy.
  assert.doesNotMatch(gen("function f() { let s = 0; for (let i = 0; i < 2; i++) s += i; return s; }"), /\$i/);
  // Captured in the test or update: each iteration's environment holds the test and the body.
  assert.equal(
    lowered("function f(fs) { for (let i = 0; fs.push(() => i) < 3; i++) {} return fs; }", "break-continue"),
    "function f(fs) { { let i = 0; let $brk = false; { let $i2 = i; { let i = $i2; if (fs.push(() => i) < 3) {} else { $brk = true; } $i2 = i; } i = $i2; } while (!$brk) { let $i = i; { let i = $i; i++; if (fs.push(() => i) < 3) {} else { $brk = true; } $i = i; } i = $i; } } return fs; }",
  );
});
