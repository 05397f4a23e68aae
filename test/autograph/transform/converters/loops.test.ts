/**
 * converters/loops.ts: `while` becomes `ag.whileStmt(() => test, () => {...}, getState, setState,
 * names, loc)`, `for...of` becomes `ag.forOf(iterable, (x) => {...}, ..., loc[, () => !$brk])`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy, gen } from "../snippets.js";

test("the loops converter alone", () => {
  assert.equal(
    convertedBy("function f(xs) { let s = 0; for (const x of xs) { if (x < 0) break; s += x; } while (s > 10) s -= 10; return s; }", ["loops"]),
    'function f(xs) { let s = 0; let $brk = false; ag.forOf(xs, x => { if (x < 0) { $brk = true; } else { s += x; } }, () => [s, $brk], $s => { [s, $brk] = $s; }, ["s", "$brk"], "t.js:1:29", () => !$brk); ' +
      'ag.whileStmt(() => s > 10, () => { s -= 10; }, () => [s], $s => { [s] = $s; }, ["s"], "t.js:1:79"); return s; }',
  );
  // An existing variable or member as the for...of target is assigned at the start of each iteration.
  assert.equal(
    convertedBy("function f(xs, o) { for (o.v of xs) g(o); }", ["loops"]),
    'function f(xs, o) { ag.forOf(xs, $v => { o.v = $v; g(o); }, () => [o], $s => { [o] = $s; }, ["o"], "t.js:1:21"); }',
  );
});

test("while, do-while (body once, then as while), for with break, for-of with continue", () => {
  assert.equal(
    gen("function f(n) { let i = 0; while (i < n) { i += 1; } return i; }"),
    'function f(n) { let i = 0; ag.whileStmt(() => ag.lt(i, n), () => { i = ag.add(i, 1); }, () => [i], $s => { [i] = $s; }, ["i"], "t.js:1:28"); return i; }',
  );
  assert.equal(
    gen("function f(n) { let i = 0; do { i++; } while (i < n); return i; }"),
    'function f(n) { let i = 0; { typeof i === "object" ? i = ag.increment(i, 1) : ++i; } ag.whileStmt(() => ag.lt(i, n), () => { typeof i === "object" ? i = ag.increment(i, 1) : ++i; }, () => [i], $s => { [i] = $s; }, ["i"], "t.js:1:28"); return i; }',
  );
  assert.equal(
    gen("function f(n) { let s = 0; for (let i = 0; i < n; i++) { if (i === 3) break; s += i; } return s; }"),
    "function f(n) { let s = 0; { let i = 0; let $brk = false; " +
      "ag.whileStmt(() => ag.and(() => ag.not($brk), () => ag.lt(i, n)), () => { " +
      'ag.ifStmt(ag.eq(i, 3), () => { $brk = true; }, () => { s = ag.add(s, i); }, () => [s, $brk], $s => { [s, $brk] = $s; }, ["s", "$brk"], "t.js:1:58"); ' +
      'ag.ifStmt(ag.not($brk), () => { typeof i === "object" ? i = ag.increment(i, 1) : ++i; }, null, () => [i], $s => { [i] = $s; }, ["i"], "t.js:1:51"); ' +
      '}, () => [s, i, $brk], $s => { [s, i, $brk] = $s; }, ["s", "i", "$brk"], "t.js:1:28"); } return s; }',
  );
  assert.equal(
    gen("function f(xs) { let s = 0; for (const x of xs) { if (x < 0) continue; s += x; } return s; }"),
    "function f(xs) { let s = 0; ag.forOf(xs, x => { let $cont = false; " +
      'ag.ifStmt(ag.lt(x, 0), () => { $cont = true; }, () => { s = ag.add(s, x); }, () => [s], $s => { [s] = $s; }, ["s"], "t.js:1:51"); ' +
      '}, () => [s], $s => { [s] = $s; }, ["s"], "t.js:1:29"); return s; }',
  );
});
