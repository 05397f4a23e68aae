/**
 * The registry sweep "eager vs staged": every registry op runs eagerly and inside sc.stage
 * (the compiled executor: optimized copy, fused loops, planned buffers) on the same inputs,
 * and the results must be identical: same dtype, shape and bits (NaN equal to NaN, -0 distinct
 * from +0), on the first staged call and on a second one (cached code, reused buffers). An
 * input the eager op rejects must be rejected staged with the same error class.
 *
 * Cases: every gradient case (test/util/grad-cases: float64 inputs, and again with the inputs cast
 * to float32), plus test/staging/staged-cases.ts for what they do not cover (ops without gradients,
 * integer and bool dtypes, keyed random draws, print, the optimizer's constant and
 * fusedElementwise). No tolerance is needed: the compiled loops reproduce the kernels'
 * roundings exactly (see src/backends/cpu/js-loops.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { allCases } from "../util/grad-cases/index.js";
import { cases as baseStagedCases, type StagedCase } from "./staged-cases.js";
import { cases as dtypeCases } from "./staged-cases-dtypes.js";

const stagedCases: StagedCase[] = [...baseStagedCases, ...dtypeCases];

/** Registry ops that need no case here, with the reason. */
const EXCLUDED: Record<string, string> = {};

const flat = (r: sc.Tensor | sc.Tensor[]): sc.Tensor[] => (Array.isArray(r) ? r : [r]);

function assertIdentical(staged: sc.Tensor, eager: sc.Tensor, what: string): void {
  assert.equal(staged.dtype, eager.dtype, `${what}: dtype`);
  assert.deepEqual(staged.shape, eager.shape, `${what}: shape`);
  const a = staged.dataSync(),
    b = eager.dataSync();
  assert.equal(a.length, b.length, `${what}: size`);
  for (let i = 0; i < b.length; i++) {
    if (!Object.is(a[i], b[i])) assert.fail(`${what}: element ${i} is ${a[i]} staged but ${b[i]} eager`);
  }
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** Runs a case eagerly and staged (twice) and compares; console output is compared too. */
function sweep(c: StagedCase, name: string, cast?: sc.DType): void {
  const rng = new Rng(hash(name));
  let xs = c.inputs(rng);
  if (cast) xs = xs.map((x) => (x.dtype === "float64" ? sc.cast(x, cast) : x));
  const logs: string[] = [];
  const log = console.log;
  console.log = (...a: unknown[]) => void logs.push(a.map(String).join(" "));
  try {
    let eager: sc.Tensor[] | null = null;
    let error: unknown = null;
    try {
      eager = flat(c.fn(...xs));
    } catch (e) {
      error = e;
    }
    const eagerLogs = logs.splice(0);
    const staged = sc.stage(c.fn, c.options);
    if (error !== null) {
      assert.throws(() => staged(...xs), (e: unknown) => e instanceof (error as Error).constructor, `${name}: eager raised ${(error as Error).name}, staged must too`);
      return;
    }
    for (const round of ["first", "second"]) {
      const got = flat(staged(...xs));
      assert.equal(got.length, eager!.length, `${name}: number of outputs`);
      got.forEach((t, i) => assertIdentical(t, eager![i]!, `${name} (${round} staged call) output ${i}`));
      assert.deepEqual(logs.splice(0), eagerLogs, `${name}: printed output`);
    }
  } finally {
    console.log = log;
  }
}

test("every registry op has an eager-vs-staged case", () => {
  const covered = new Set([...allCases.map((c) => c.op), ...stagedCases.map((c) => c.op)]);
  const missing = sc
    .listOps()
    .filter((d) => d.family !== "ad" && !(d.name in EXCLUDED))
    .map((d) => d.name)
    .filter((n) => !covered.has(n));
  assert.deepEqual(missing, [], `registry ops without an eager-vs-staged case: ${missing.join(", ")}`);
  for (const c of stagedCases) assert.ok(sc.listOps().some((d) => d.name === c.op), `staged case names unknown op ${c.op}`);
});

for (const c of allCases) {
  const name = `${c.op}${c.label ? ` (${c.label})` : ""}`;
  test(`eager vs staged: ${name}`, () => {
    sweep({ op: c.op, inputs: c.inputs, fn: c.fn }, name);
    sweep({ op: c.op, inputs: c.inputs, fn: c.fn }, `${name} float32`, "float32");
  });
}

for (const c of stagedCases) {
  const name = `${c.op}${c.label ? ` (${c.label})` : ""}`;
  test(`eager vs staged: ${name}`, () => sweep(c, name));
}
