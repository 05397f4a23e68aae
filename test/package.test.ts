import { test } from "node:test";
import assert from "node:assert/strict";

test("the built package resolves as 'stagecraft' through package.json exports", async () => {
  // Self-reference resolves through the "exports" map to dist/, exactly as a dependent project would.
  const sc = await import("stagecraft");
  const y = sc.add(sc.tensor([1, 2]), 1);
  assert.deepEqual(y.arraySync(), [2, 3]);
  assert.equal(typeof sc.GradientTape, "function");
});

test("internals are not on the public surface; the documented stagecraft/internals entry has them", async () => {
  const sc = (await import("stagecraft")) as Record<string, unknown>;
  for (const name of ["compileGraph", "createCompiledExecutor", "compiledExecutor", "interpretExecutor", "addOp", "reduceAttrs", "toIndexTensor"]) {
    assert.equal(sc[name], undefined, `${name} is not public`);
  }
  const stageOf = sc.stage as (f: (x: unknown) => unknown) => Record<string, unknown>;
  assert.equal(stageOf((x) => x).pythonFunction, undefined);
  const internals = (await import("stagecraft/internals")) as Record<string, unknown>;
  for (const name of ["compileGraph", "createCompiledExecutor", "compiledExecutor", "interpretExecutor", "condOp", "registerBackend", "cpuBackend"]) {
    assert.ok(internals[name] !== undefined, `${name} is in stagecraft/internals`);
  }
});
