/** The TF Eager paper's mutate() listing in TypeScript, checked as the paper describes it. */
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

/** A staged function adding 1 to a captured variable: 1.0, then 2.0 eagerly, then 3.0. */
export function assertMutateExample(): void {
  const v = sc.variable(0);
  const mutate = sc.stage(() => {
    v.assignAdd(1);
    return v.read();
  });
  assert.equal(mutate().item(), 1);
  v.assignAdd(1);
  assert.equal(v.item(), 2);
  assert.equal(mutate().item(), 3);
  assert.equal(v.item(), 3);
}
