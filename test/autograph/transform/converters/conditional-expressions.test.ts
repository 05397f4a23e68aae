/**
 * converters/conditional-expressions.ts: `c ? a : b` becomes `ag.ifExp(c, () => a, () => b, loc)`,
 * with a native copy for JS-valued conditions outside the closures of a staged copy.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy, gen } from "../snippets.js";

test("the conditional operator alone: staged form and native copy", () => {
  assert.equal(convertedBy("(c, a, b) => c ? (a ? 1 : 2) : b", ["conditional-expressions"]), '(c, a, b) => ag.ifExp(c, () => ag.ifExp(a, () => 1, () => 2, "t.js:1:19"), () => b, "t.js:1:14")');
  assert.equal(
    convertedBy("(c, a, b) => c ? (a ? 1 : 2) : b", ["conditional-expressions"], true),
    '(c, a, b) => { let $c, $c2; return typeof ($c = c) !== "object" ? $c ? typeof ($c2 = a) !== "object" ? $c2 ? 1 : 2 : ag.ifExp($c2, () => 1, () => 2, "t.js:1:19") : b : ag.ifExp($c, () => ag.ifExp(a, () => 1, () => 2, "t.js:1:19"), () => b, "t.js:1:14"); }',
  );
  assert.equal(gen("(c, a, b) => c ? a : b"), '(c, a, b) => ag.ifExp(c, () => a, () => b, "t.js:1:14")');
});

test("inside an if's staged branch a ternary gets no native copy; in its native branch it does", () => {
  const code = convertedBy("function f(c, a) { let y; if (c) { y = a ? 1 : 2; } return y; }", ["if-statements", "conditional-expressions"], true);
  assert.match(code, /if \(\$c\) \{ y = typeof \(\$c2 = a\) !== "object" \? \$c2 \? 1 : 2 : ag\.ifExp\(\$c2,/);
  assert.match(code, /else ag\.ifStmt\(\$c, \(\) => \{ y = ag\.ifExp\(a, \(\) => 1, \(\) => 2, "t\.js:1:40"\); \}/);
});
