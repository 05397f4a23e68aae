/**
 * converters/tdz.ts: a declaration the lowering moved up starts as `ag.UNDEFINED`, and its reads
 * go through `ag.tdz(y, "y")` (ReferenceError before the original declaration ran).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertedBy } from "../snippets.js";

test("moved declarations start as ag.UNDEFINED; reads are checked (typeof too)", () => {
  assert.equal(
    convertedBy("function f(x) { const h = () => y; if (x) return h; let y = 2; return typeof y; }", ["tdz"]),
    'function f(x) { let $ret = false, $retval; const h = () => ag.tdz(y, "y"); let y = ag.UNDEFINED; if (x) { $retval = ag.ret(h); $ret = true; } else { y = 2; $retval = typeof ag.tdz(y, "y"); $ret = true; } return ag.retval($retval); }',
  );
  // Nothing moved: nothing checked.
  assert.equal(convertedBy("function f(x) { let y = 2; return y; }", ["tdz"]), "function f(x) { let y = 2; return y; }");
});
