import { test } from "node:test";
import assert from "node:assert/strict";

test("the built package resolves as 'stagecraft' through package.json exports", async () => {
  // Self-reference resolves through the "exports" map to dist/, exactly as a dependent project would.
  const sc = await import("stagecraft");
  const y = sc.add(sc.tensor([1, 2]), 1);
  assert.deepEqual(y.arraySync(), [2, 3]);
  assert.equal(typeof sc.GradientTape, "function");
});
