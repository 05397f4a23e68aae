/**
 * converters/indexing.ts: `x[i]` becomes `ag.getItem(x, i)`, `x[i] = v` `x = ag.setItem(x, i, v)`
 * (a tensor is updated functionally and rebound; arrays and objects natively), with compound
 * assignment and ++ on elements, each subexpression evaluated once in JavaScript's order.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy, gen } from "../snippets.js";

test("the indexing converter alone", () => {
  assert.equal(
    convertedBy("function f(x, i, v) { x[i] = v; x[i][0] += v; return x[i]; }", ["indexing"]),
    "function f(x, i, v) { let $k, $c; x = ag.setItem(x, i, v); $k = i, $c = ag.getItem(x, $k), x = ag.setItem(x, $k, ag.setItem($c, 0, ag.add(ag.getItem($c, 0), v))); return ag.getItem(x, i); }",
  );
  // Not reads: delete, a call's callee (the calls converter's), targets of for-in.
  assert.equal(convertedBy("function f(o, k) { delete o[k]; o[k](); for (o[k] in o) {} }", ["indexing"]), "function f(o, k) { delete o[k]; o[k](); for (o[k] in o) {} }");
});

test("reads, writes (functional update rebinding x), nested and compound writes", () => {
  assert.equal(gen("(x, i, j) => x[i][j]"), "(x, i, j) => ag.getItem(ag.getItem(x, i), j)");
  assert.equal(
    gen("function f(x, i, v) { x[i] = v; x[i][0] += v; return x; }"),
    "function f(x, i, v) { let $k, $c; x = ag.setItem(x, i, v); $k = i, $c = ag.getItem(x, $k), x = ag.setItem(x, $k, ag.setItem($c, 0, ag.add(ag.getItem($c, 0), v))); return x; }",
  );
  // A container that is not a local variable is written back only when setItem made a new value.
  assert.equal(gen("function f(o, v) { o.w[0] = v; return o; }"), "function f(o, v) { let $c, $r; $c = o.w, $r = ag.setItem($c, 0, v), $r !== $c && (o.w = $r); return o; }");
  // Sloppy-mode code ignores a failed write.
  assert.match(convertedBy("function f(x, v) { x[0] = v; }", ["indexing"]), /x = ag\.setItem\(x, 0, v\)/);
});
