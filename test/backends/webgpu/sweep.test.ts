/**
 * The registry sweep on the WebGPU backend: every eager-vs-staged case (test/staging/staged-cases.ts,
 * staged-cases-dtypes.ts and ./added-op-cases.ts) and every gradient case (test/util/grad-cases,
 * inputs cast to float32) runs on the CPU and on the GPU,
 * eagerly and staged, and the GPU's results must match the CPU's within the float32 tolerance of
 * the op's family (docs/webgpu.md lists them): exact for integers, booleans, indices, data
 * movement and sorting; a few ulp for float32 arithmetic; more for transcendental functions and for sums
 * of many terms (reductions, products, convolutions), whose order differs.
 *
 * ./added-op-cases.ts's signedZeroCases also compare the sign of zero (-0 distinct from +0).
 *
 * An input the CPU rejects must be rejected on the GPU with the same error class (an index a GPU
 * kernel finds out of range raises at the next read). A case that computes in float64 or int64
 * must raise a DtypeError on the GPU (no silent downcast); those are counted and reported.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { Rng } from "../../util/rng.js";
import { allCases } from "../../util/grad-cases/index.js";
import { cases as stagedCases, type StagedCase } from "../../staging/staged-cases.js";
import { cases as dtypeCases } from "../../staging/staged-cases-dtypes.js";
import { cases as addedOpCases, signedZeroCases } from "./added-op-cases.js";
import { gpuSkip, onGpu } from "../../util/webgpu.js";
import { unplanned } from "../../../src/exec/webgpu-executor.js";

/** Tolerance (absolute, relative) of float32 results by the op family's arithmetic. */
export function tolerance(op: string): [number, number] {
  const family = sc.getOp(op).family;
  // (bit patterns: bitcast's float32 results are exact)
  if (family === "bitwise") return [0, 0];
  // (cases of data-movement ops compute their inputs with arithmetic too)
  if (["shape", "creation", "compare", "unary", "binary"].includes(family)) return [2e-6, 2e-6];
  if (family === "random") return [1e-5, 1e-5];
  // reductions, matmul, conv, softmax, pooling: sums of terms in another order
  return [2e-5, 2e-5];
}

const flat = (r: sc.Tensor | sc.Tensor[]): sc.Tensor[] => (Array.isArray(r) ? r : [r]);

/**
 * gpu's values must be cpu's (NaN equal to NaN), within the tolerance for float32 unless exact.
 * zeroSigns: a zero must have the CPU's sign too (-0 is not +0, which the tolerance would accept).
 */
function assertMatches(gpu: sc.Tensor, cpu: sc.Tensor, [atol, rtol]: [number, number], what: string, zeroSigns = false): void {
  assert.equal(gpu.dtype, cpu.dtype, `${what}: dtype`);
  assert.deepEqual(gpu.shape, cpu.shape, `${what}: shape`);
  assert.equal(gpu.device, "webgpu:0", `${what}: device`);
  const a = gpu.dataSync(),
    b = cpu.dataSync();
  const exact = cpu.dtype !== "float32" || (atol === 0 && rtol === 0);
  for (let i = 0; i < b.length; i++) {
    const x = a[i]!,
      y = b[i]!;
    if (Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y))) continue;
    const signedZeros = zeroSigns && x === 0 && y === 0;
    if (!exact && !signedZeros && Number.isFinite(y) && Math.abs(x - y) <= atol + rtol * Math.abs(y)) continue;
    const show = (v: number) => (Object.is(v, -0) ? "-0" : String(v));
    assert.fail(`${what}: element ${i} is ${show(x)} on the GPU but ${show(y)} on the CPU (tolerance ${exact ? "exact" : `${atol} + ${rtol}|x|`}${zeroSigns ? ", zeros signed" : ""})`);
  }
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

const needs64: string[] = [];

/** Whether e is the GPU's refusal of a host dtype (float64, int64, float16, the narrow integers: storage.ts hostDtype). */
function is64BitRefusal(e: unknown): boolean {
  return e instanceof sc.DtypeError && /cannot compute with (float64|int64|uint64|float16|int8|int16|uint16|uint32) on the webgpu device/.test(e.message);
}

/** Runs fn, reading every result (a GPU kernel's deferred error surfaces at the read). */
function runAndRead(fn: () => sc.Tensor[]): sc.Tensor[] {
  const out = fn();
  for (const t of out) t.dataSync();
  return out;
}

function sweep(c: StagedCase, name: string, zeroSigns = false): void {
  const rng = new Rng(hash(name));
  const xs = c.inputs(rng).map((x) => (x.dtype === "float64" ? sc.cast(x, "float32") : x));
  const tol = tolerance(c.op);
  const quiet = console.log;
  console.log = () => {};
  try {
    let cpu: sc.Tensor[] | null = null;
    let error: unknown = null;
    try {
      cpu = runAndRead(() => flat(c.fn(...xs)));
    } catch (e) {
      error = e;
    }
    const runs: [string, () => sc.Tensor[]][] = [
      ["eager", () => onGpu(() => flat(c.fn(...xs.map((x) => x.to("webgpu")))))],
      ["staged", () => onGpu(() => flat(sc.stage(c.fn, { autograph: false, ...c.options })(...xs.map((x) => x.to("webgpu")))))],
    ];
    for (const [mode, run] of runs) {
      if (error !== null) {
        assert.throws(() => runAndRead(run), (e: unknown) => e instanceof (error as Error).constructor, `${name} (${mode}): the CPU raised ${(error as Error).name}, the GPU must too`);
        continue;
      }
      let gpu: sc.Tensor[];
      try {
        gpu = runAndRead(run);
      } catch (e) {
        if (is64BitRefusal(e)) {
          needs64.push(`${name} (${mode})`);
          continue;
        }
        throw e;
      }
      assert.equal(gpu.length, cpu!.length, `${name}: number of outputs`);
      gpu.forEach((t, i) => assertMatches(t, cpu![i]!, tol, `${name} (${mode} on the GPU) output ${i}`, zeroSigns));
    }
  } finally {
    console.log = quiet;
  }
}

const all: [StagedCase, string][] = [
  ...allCases.map((c): [StagedCase, string] => [c, `${c.op}${c.label ? ` (${c.label})` : ""} [gradient case]`]),
  ...[...stagedCases, ...dtypeCases, ...addedOpCases].map((c): [StagedCase, string] => [c, `${c.op}${c.label ? ` (${c.label})` : ""}`]),
];

test("every registry op declares its WebGPU kernel (or is elementwise), and the entry is its own", () => {
  // (no device needed: the declarations in src/ops name the entries)
  const missing = sc
    .listOps()
    .filter((d) => d.kernels.webgpu === undefined && !d.elementwise)
    .map((d) => d.name);
  assert.deepEqual(missing, [], `ops whose declaration names no kernels.webgpu: ${missing.join(", ")}`);
  const foreign = sc
    .listOps()
    .filter((d) => d.kernels.webgpu !== undefined && (d.kernels.webgpu as { op: string }).op !== d.name)
    .map((d) => `${d.name} -> ${(d.kernels.webgpu as { op: string }).op}`);
  assert.deepEqual(foreign, [], `ops declaring another op's WebGPU entry: ${foreign.join(", ")}`);
});

for (const [c, name] of all) {
  test(`webgpu: ${name}`, { skip: gpuSkip }, () => sweep(c, name));
}

// (special values where the sign of zero is part of the CPU's answer: -0 must not read as +0)
for (const c of signedZeroCases) {
  const name = `${c.op} (${c.label}) [signed zeros]`;
  test(`webgpu: ${name}`, { skip: gpuSkip }, () => sweep(c, name, true));
}

test("staged cases run as device plans unless they hold host work", { skip: gpuSkip }, (t) => {
  const reasons = new Map<string, number>();
  for (const r of unplanned.values()) reasons.set(r, (reasons.get(r) ?? 0) + 1);
  t.diagnostic(`${unplanned.size} staged graphs ran node by node: ${[...reasons].map(([r, n]) => `${n}x ${r}`).join("; ")}`);
});

test("cases that compute in a host dtype (float64, int64, float16, int8, ...) are refused on the GPU", { skip: gpuSkip }, (t) => {
  t.diagnostic(`${needs64.length} runs raised the host-dtype DtypeError: ${needs64.join("; ")}`);
  assert.ok(needs64.length < all.length / 4, "most cases run on the GPU");
});
