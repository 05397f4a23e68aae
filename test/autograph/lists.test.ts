import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

/** A stack discipline inside a loop: two pushes and one pop per iteration. */
function pushPop(x: any): any {
  // (sc is given to sc.autograph through `scope`: conversion at run time sees only globals)
  const out: any[] = [];
  let i = 0;
  let popped = x * 0;
  while (i < (sc.sum(x) as any)) {
    out.push(x * i);
    out.push(x * 100);
    popped = popped + out.pop();
    i = i + 1;
  }
  return [popped, out];
}

test("push and pop on arrays: natively, eagerly, and as tensor lists in staged loops", () => {
  const converted = sc.autograph(pushPop, { scope: { sc } });
  const eager = converted(sc.tensor([1, 2]));
  assert.deepEqual(eager[0].arraySync(), [300, 600]);
  assert.deepEqual(eager[1].map((t: sc.Tensor) => t.arraySync()), [[0, 0], [1, 2], [2, 4]]);
  const f = sc.stage(converted);
  const staged = f(sc.tensor([1, 2]));
  assert.deepEqual(staged[0].arraySync(), [300, 600]);
  assert.deepEqual(staged[1].arraySync(), [[0, 0], [1, 2], [2, 4]], "the list is stacked after the loop");
  assert.deepEqual(f(sc.tensor([2, 2]))[1].arraySync(), [[0, 0], [2, 2], [4, 4], [6, 6]], "one trace, a data-dependent length");
  assert.equal(f.traceCount, 1);
  assert.ok(f.concrete(sc.tensor([1, 2])).graph.nodes.some((n) => n.op === "while"));
});
