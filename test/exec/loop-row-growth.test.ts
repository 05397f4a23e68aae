// A loop variable whose row count changes every iteration (rows concatenated to it, as AutoGraph's
// lists are, or pushed to a stack) must compile as one native loop over a stack-typed body. It
// used to fall back to the generic path: the body got a new shape every iteration, so it was a
// new specialization each time, interpreted (no fusion, no buffer plan) and, past 16 shapes,
// never compiled again; the demo's staged training loop ran slower than a host loop of staged steps.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { compiledSpecializations, createCompiledExecutor, interpretExecutor } from "../../src/api/internals.js";

const compileNow = createCompiledExecutor(0);

/**
 * The outer graph compiled once, its while node a native loop calling the compiled body (the
 * generic path would run the node through runDynamic, with no such loop in the code).
 */
function assertNativeLoop(cf: { graph: sc.ConcreteFunction["graph"]; library: sc.ConcreteFunction["library"] }): void {
  const specs = compiledSpecializations(cf.graph, cf.library);
  assert.equal(specs.length, 1);
  assert.match(specs[0]!.source, /for \(let it = 0;[^\n]*\n\s*if \(Cond\d+\.raw/, "the while node is a native loop calling the compiled body");
}

test("rows concatenated to a loop variable: one compiled loop, every trip count, values as the interpreter's", () => {
  const f = sc.stage(
    (x: sc.Tensor, n: sc.Tensor) => {
      const [, , rows] = sc.whileLoop(
        (i) => sc.less(i, n),
        (i, v, rows) => [i.add(1), v!.mul(2).add(1), sc.concat([rows!, sc.expandDims(sc.tanh(v!), 0)], 0)],
        [sc.scalar(0, "int32"), x, sc.zeros([0, 2])],
        { shapeInvariants: [null, null, [null, 2]] },
      );
      return [rows!, sc.sum(rows!, 0)]; // the grown value read after the loop (its last op) and reduced
    },
    { autograph: false },
  );
  const x = sc.tensor([0.25, -0.5]);
  const cf = f.concrete(x, sc.scalar(4, "int32"));
  for (const k of [4, 1, 0, 7, 4]) {
    const got = cf.callFlat([x, sc.scalar(k, "int32")], compileNow);
    const want = cf.callFlat([x, sc.scalar(k, "int32")], interpretExecutor);
    assert.deepEqual(got[0]!.shape, [k, 2], `trip count ${k}`);
    assert.deepEqual(got[0]!.arraySync(), want[0]!.arraySync(), `trip count ${k}: rows`);
    assert.deepEqual(got[1]!.arraySync(), want[1]!.arraySync(), `trip count ${k}: their sum`);
  }
  assertNativeLoop(cf);
});

test("an AutoGraph list pushed to in a native for loop: one compiled loop; a variable updated inside it", () => {
  const w = sc.variable(sc.tensor([1, 2, 3]));
  const f = sc.stage((n: sc.Tensor) => {
    const seen: any = [];
    for (let i = 0; i < (n as any); i++) {
      w.assign(w.mul(0.5).add(1));
      seen.push(sc.sum(w));
    }
    return seen;
  });
  const cf = f.concrete(sc.scalar(3, "int32"));
  const expect = (k: number) => {
    const v = w.arraySync() as number[];
    const out: number[] = [];
    for (let i = 0; i < k; i++) {
      for (let j = 0; j < 3; j++) v[j] = v[j]! * 0.5 + 1;
      out.push(Math.fround(v[0]! + v[1]! + v[2]!));
    }
    return out;
  };
  for (const k of [3, 0, 5, 2]) {
    const want = expect(k);
    const [got] = cf.callFlat([sc.scalar(k, "int32")], compileNow);
    assert.deepEqual(got!.shape, [k]);
    (got!.arraySync() as number[]).forEach((g, i) => assert.ok(Math.abs(g - want[i]!) < 1e-5, `trip count ${k}, row ${i}: ${g} vs ${want[i]}`));
  }
  assertNativeLoop(cf);
});
