/**
 * Graph AD at the seams: structural programs whose output is the structural node's result
 * itself (cond, data-dependent while, scan, converted for...of, calls to staged helpers with
 * loops inside, a loop calling a helper, linear and tree recursion, one with a loop in its
 * body, a layer over captured variables), differentiated by every transform (grad,
 * valueAndGrad, vjp, jvp, tape.gradient of inputs and variables, grad of grad, hvp), each
 * also staged again. All pairs run in one seeded shuffled order in this process, so each
 * runs after other transforms of the same staged functions have run (and compiled), and
 * every result must equal the eager tape's on the same math written with JS control flow;
 * a fresh process computes them in the reverse order and must get the same numbers.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { structuralPrograms } from "../util/grad-programs.js";
import { lossOf } from "../util/grad-transforms.js";
import { assertAllClose, numericGrad } from "../util/gradcheck.js";
import { runEager, runStaged, sweepCases } from "../util/seam-sweep.js";
import { freshProcessJson } from "../util/fresh-process.js";

const SEED = 11;

test("the eager references of the structural programs match float64 finite differences", () => {
  for (const c of sweepCases(SEED).filter((c) => c.transform.name === "grad")) {
    const fd = numericGrad(lossOf(c.program.eager, c.probe), c.xs);
    assertAllClose(runEager(c), fd, 1e-6, `${c.program.name}: eager tape vs finite differences`);
  }
});

test("structural programs: every transform, in a shuffled order, equals the eager tape; a fresh process in the reverse order agrees", async () => {
  // (the staged results of a fresh process running the sweep in the reverse order)
  const fresh = freshProcessJson<Record<string, number[][] | string>>(new URL("../util/seam-sweep.ts", import.meta.url), [String(SEED)]);
  const cases = sweepCases(SEED);
  assert.ok(cases.length >= 180, `only ${cases.length} (program, transform) pairs`);
  const mine = new Map<string, number[][]>();
  const failures: string[] = [];
  for (const c of cases) {
    try {
      const got = runStaged(c);
      mine.set(c.key, got);
      assertAllClose(got, runEager(c), 1e-9, `${c.key}: staged vs eager`);
    } catch (e) {
      failures.push(`${c.key}: ${(e as Error).message.split("\n")[0]}`);
    }
  }
  const other = await fresh;
  for (const [key, got] of mine) {
    const theirs = other[key];
    if (typeof theirs === "string" || theirs === undefined) failures.push(`${key}: the fresh process got ${theirs ?? "nothing"}`);
    else {
      try {
        assertAllClose(got, theirs, 1e-12, `${key}: this process vs a fresh process in the reverse order`);
      } catch (e) {
        failures.push((e as Error).message.split("\n")[0]!);
      }
    }
  }
  assert.deepEqual(failures, [], `${failures.length} of ${cases.length} pairs failed:\n${failures.join("\n")}`);
});

test("the structural programs cover cond, while, scan, for...of, calls, loops calling helpers, recursion and variables", () => {
  const names = structuralPrograms.map((p) => p.name).join("; ");
  for (const word of ["cond", "while", "scan", "for...of", "helper", "loop calling", "linear recursion", "tree recursion with a loop", "variables"]) {
    assert.ok(names.includes(word), `no program with ${word}: ${names}`);
  }
});
