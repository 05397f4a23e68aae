/**
 * lowering/declarations.ts: `var`s hoisted to the top of the function (their initializers become
 * assignments in place) and function declarations to the start of their statement lists, so
 * that later passes may move statements into closures and blocks.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { gen, lowered } from "../snippets.js";

test("var declarations go to the top of the function, function declarations to the start of their list", () => {
  assert.equal(
    lowered("function f(c) { if (c) { var v = 1; for (var i = 0; i < 2; i++) v += i; } g(); function g() { return 1; } return v; }", "declarations"),
    "function f(c) { var v, i; function g() { return 1; } if (c) { v = 1; for (i = 0; i < 2; i++) v += i; } g(); return v; }",
  );
  // Destructuring and for...of / for...in heads.
  assert.equal(
    lowered("function f(xs) { for (var x of xs) { var [a, b] = x; } return [x, a, b]; }", "declarations"),
    "function f(xs) { var x, a, b; for (x of xs) { [a, b] = x; } return [x, a, b]; }",
  );
});

test("a var assigned in a branch is not local to the branch's closure", () => {
  assert.match(gen("function f(c) { if (c) { var v = 1; } return v; }"), /^function f\(c\) \{ var v; ag\.ifStmt\(c, \(\) => \{ v = 1; \}/);
});
