/**
 * lowering/break-continue.ts: `break` and `continue` that would leave a closure become flags; the
 * statements after one that may set a flag are guarded, a loop whose body sets one tests it, and a
 * flag whose target is a native construct (for...in, switch, labeled block) becomes a native jump
 * again where its target is reachable. `return` is the next pass's.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { gen, lowered } from "../snippets.js";

test("break and continue of converted loops become flags", () => {
  assert.equal(
    lowered("function f(n) { let s = 0; while (s < n) { if (s === 3) break; s++; } return s; }", "break-continue"),
    "function f(n) { let s = 0; let $brk = false; while (!$brk && s < n) { if (s === 3) { $brk = true; } else { s++; } } return s; }",
  );
  // continue in a for loop: the update still runs.
  assert.equal(
    lowered("function f(n) { let s = 0; for (let i = 0; i < n; i++) { if (i % 2) continue; s += i; } return s; }", "break-continue"),
    "function f(n) { let s = 0; { let i = 0; while (i < n) { let $cont = false; if (i % 2) { $cont = true; } else { s += i; } i++; } } return s; }",
  );
  // A break below a statement guards the rest of the body, and the update.
  assert.equal(
    lowered("function f(xs) { for (let i = 0; i < 9; i++) { if (xs[i]) { if (i > 2) break; } g(i); } }", "break-continue"),
    "function f(xs) { { let i = 0; let $brk = false; while (!$brk && i < 9) { if (xs[i]) { if (i > 2) { $brk = true; } } if (!$brk) { g(i); } if (!$brk) { i++; } } } }",
  );
  // The first iteration of a do-while sets the same flag.
  assert.equal(
    lowered("function f(n) { let s = 0; do { s++; if (s > 5) break; } while (s < n); return s; }", "break-continue"),
    "function f(n) { let s = 0; let $brk = false; { s++; if (s > 5) { $brk = true; } } while (!$brk && s < n) { s++; if (s > 5) { $brk = true; } } return s; }",
  );
  // return is not this pass's.
  assert.equal(lowered("function f(n) { while (n) { if (n > 1) return 1; n--; } return 0; }", "break-continue"), "function f(n) { while (n) { if (n > 1) { return 1; } else { n--; } } return 0; }");
});

test("a jump out of a native construct under a converted if is re-issued natively", () => {
  assert.equal(
    lowered('function f(o) { let s = 0; for (const k in o) { if (o[k]) { if (k === "z") break; } s++; } return s; }', "break-continue"),
    'function f(o) { let s = 0; let $brk = false; $L: for (const k in o) { if (o[k]) { if (k === "z") { $brk = true; } } if ($brk) break $L; s++; } return s; }',
  );
  const code = gen("function f(xs) { let n = 0; for (const k in xs) { switch (xs[k]) { case 0: if (n > 2) break; n++; break; default: n += 2; } } return n; }");
  assert.match(code, /for \(const k in xs\) \{ let \$brk = false; \$L: switch \(ag\.switchValue\(ag\.getItem\(xs, k\), "t\.js:1:51"\)\)/);
  assert.match(code, /if \(\$brk === true \|\| \$brk !== false && ag\.assertOrThrow\(true, \(\) => new TypeError\("autograph: a jump/);
  assert.match(code, /break \$L;/);
});

test("labeled continue stops the inner loop and runs the outer update", () => {
  const code = gen("function f(n) { let c = 0; outer: for (let i = 0; i < n; i++) { for (let j = 0; j < n; j++) { if (j > i) continue outer; c++; } } return c; }");
  assert.match(code, /ag\.whileStmt\(\(\) => ag\.and\(\(\) => ag\.not\(\$cont\), \(\) => ag\.lt\(j, n\)\)/);
  assert.match(code, /let \$cont = false;/);
  assert.doesNotMatch(code, /outer:/);
});

test("a jump that leaves a finally block holds no exception and cancels the try block's pending jump", () => {
  assert.equal(
    lowered("function f(xs) { for (const x of xs) { try { if (x) continue; } finally { if (!x) break; } } }", "break-continue"),
    "function f(xs) { let $brk = false; for (const x of xs) { let $cont = false; let $fab = false, $fexc = false, $fval; try { if (x) { $cont = true; } } catch ($fe) { $fexc = true; $fval = $fe; } finally { if (!x) { $brk = true; $fab = true; $cont = false; } if ($fexc && !$fab) throw $fval; } } }",
  );
});
