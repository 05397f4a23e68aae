/**
 * converters/if-statements.ts: `if` becomes `ag.ifStmt(test, () => {...}, () => {...}, getState,
 * setState, names, loc)`, with a native copy for JS-valued conditions (none inside the closures of
 * a staged copy); a jump the lowering re-issued natively stays an `if`, checked.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy, gen } from "../snippets.js";

test("the if converter alone: the staged form, and the native copy", () => {
  assert.equal(
    convertedBy("function f(x) { let y = 0; if (x > 0) { y = 1; if (x > 5) y = 2; } return y; }", ["if-statements"]),
    'function f(x) { let y = 0; ag.ifStmt(x > 0, () => { y = 1; ag.ifStmt(x > 5, () => { y = 2; }, null, () => [y], $s => { [y] = $s; }, ["y"], "t.js:1:48"); }, null, () => [y], $s => { [y] = $s; }, ["y"], "t.js:1:28"); return y; }',
  );
  assert.equal(
    convertedBy("function f(x) { let y = 0; if (x > 0) { y = 1; if (x > 5) y = 2; } return y; }", ["if-statements"], true),
    'function f(x) { let $c, $c2; let y = 0; if (typeof ($c = x > 0) !== "object") { if ($c) { y = 1; if (typeof ($c2 = x > 5) !== "object") { if ($c2) { y = 2; } } else ag.ifStmt($c2, () => { y = 2; }, null, () => [y], $s => { [y] = $s; }, ["y"], "t.js:1:48"); } } ' +
      'else ag.ifStmt($c, () => { y = 1; ag.ifStmt(x > 5, () => { y = 2; }, null, () => [y], $s => { [y] = $s; }, ["y"], "t.js:1:48"); }, null, () => [y], $s => { [y] = $s; }, ["y"], "t.js:1:28"); return y; }',
  );
});

test("if/else with its state", () => {
  assert.equal(
    gen("function f(x) { let y = 0; if (x > 0) { y = 1; } else { y = 2; } return y; }"),
    'function f(x) { let y = 0; ag.ifStmt(ag.gt(x, 0), () => { y = 1; }, () => { y = 2; }, () => [y], $s => { [y] = $s; }, ["y"], "t.js:1:28"); return y; }',
  );
  // t is modified in the branch but not live after it: not part of the state; no else: null.
  assert.equal(
    gen("function f(x) { let y = 0; let t; if (x) { t = 1; y = t; } return y; }"),
    'function f(x) { let y = 0; let t; ag.ifStmt(x, () => { t = 1; y = t; }, null, () => [y], $s => { [y] = $s; }, ["y"], "t.js:1:35"); return y; }',
  );
  // A const object modified through a member is carried but not reassigned (the runtime rewrites it in place).
  assert.equal(
    gen("function f(c) { const o = { a: 0 }; if (c) o.a = 1; return o; }"),
    'function f(c) { const o = { a: 0 }; ag.ifStmt(c, () => { o.a = 1; }, null, () => [o], () => {}, ["o"], "t.js:1:37"); return o; }',
  );
});

test("a variable read by the other branch is carried (restored between staged branches)", () => {
  const code = gen("function f(n) { let flag = false; let r = 0; if (n < 2) { flag = true; r = 1; } else { if (!flag) r = 2; } return r; }");
  assert.match(code, /\}, \(\) => \[flag, r\], \$s => \{ \[flag, r\] = \$s; \}, \["flag", "r"\], "t\.js:1:46"\); return r; \}$/);
});

test("a re-issued native jump is checked: a flag a staged if set cannot leave a native construct", () => {
  assert.equal(
    convertedBy("function f(o) { for (const k in o) { switch (o[k]) { case 0: if (k > 2) break; o[k] = 1; } } }", ["if-statements"]),
    'function f(o) { for (const k in o) { let $brk = false; $L: switch (o[k]) { case 0: ag.ifStmt(k > 2, () => { $brk = true; }, () => { o[k] = 1; }, () => [o, $brk], $s => { [o, $brk] = $s; }, ["o", "$brk"], "t.js:1:62"); ' +
      'if ($brk === true || $brk !== false && ag.assertOrThrow(true, () => new TypeError("autograph: a jump (break, continue or return) under an if whose condition is a staged tensor cannot leave a for...in loop, a switch or a labeled block (at t.js:1:62); use a for...of or while loop, or a condition known while tracing"), "t.js:1:62")) break $L; } } }',
  );
});
