/**
 * Every differentiable op as the LAST op of a staged function, the seam the registry sweep
 * (test/grad/sweep.test.ts, whose losses end in a weighted sum) does not reach: an op whose VJP
 * reads its own output (exp, tanh, div, ...) hands the backward a value that is also the
 * function's output. Each case (test/util/last-op-sweep.ts) is differentiated by grad,
 * valueAndGrad, vjp, jvp and tape.gradient, with respect to its inputs and to a captured
 * variable, staged again (the interpreted first call and the compiled second) and to second
 * order where the case supports it; every result equals the eager tape's, the gradient equals
 * float64 finite differences, the captured variable's gradient equals its input's, and a fresh
 * process running the cases in the reverse order gets the same numbers.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { assertAllClose, numericGrad } from "../util/gradcheck.js";
import { lossOf } from "../util/grad-transforms.js";
import { freshProcessJson } from "../util/fresh-process.js";
import { caseName, eagerResults, lastOpCases, reference, setUp, stagedResults } from "../util/last-op-sweep.js";

// (started first: it runs while this process does the same work)
const fresh = freshProcessJson<Record<string, Record<string, number[][]> | string>>(new URL("../util/last-op-sweep.ts", import.meta.url));
fresh.catch(() => undefined); // (awaited by the last test)
const mine = new Map<string, Map<string, number[][]>>();

test("every differentiable op has a case in which it is the last op of the staged function", () => {
  const lastOps = new Set<string>();
  for (const c of lastOpCases) {
    const cf = sc.stage(c.fn, { autograph: false }).concrete(...c.inputs(new Rng(1)));
    const producer = cf.graph.nodes.find((n) => n.outputs.includes(cf.graph.outputs[0]!));
    if (producer?.op === c.op) lastOps.add(c.op);
  }
  const missing = sc
    .listOps()
    .filter((d) => d.vjp !== undefined && d.name !== "packResiduals")
    .map((d) => d.name)
    .filter((n) => !lastOps.has(n));
  assert.deepEqual(missing, [], `ops never last in a case: ${missing.join(", ")}`);
});

for (const c of lastOpCases) {
  test(`${caseName(c)} as the last op of a staged function`, () => {
    const s = setUp(c);
    const staged = stagedResults(s);
    mine.set(caseName(c), staged);
    const eager = eagerResults(s);
    for (const [key, got] of staged) assertAllClose(got, eager.get(reference(key))!, c.secondOrder && key.startsWith("grad of grad") ? 1e-8 : 1e-9, `${key}: staged vs eager tape`);
    if (!c.notDerivative) assertAllClose(staged.get("grad")!, numericGrad(lossOf(s.staged, s.probe), s.xs, c.eps), (c.tol ?? 1e-6) * 10, "grad vs finite differences");
    const byVariable = staged.get("variable")!;
    assertAllClose([byVariable[byVariable.length - 1]!], [staged.get("grad")![0]!], 1e-9, "the captured variable's gradient vs its input's");
  });
}

test("a fresh process running the cases in the reverse order gets the same results", async () => {
  const theirs = await fresh;
  assert.equal(mine.size, lastOpCases.length);
  for (const [name, results] of mine) {
    const other = theirs[name];
    assert.ok(other !== undefined && typeof other !== "string", `${name}: the fresh process got ${other ?? "nothing"}`);
    for (const [key, got] of results) assertAllClose(got, other[key]!, 1e-12, `${name}, ${key}: this process vs a fresh one`);
  }
});
