/**
 * The registry sweep "eager vs exported": every case of the eager-vs-staged sweep (the gradient
 * cases in float64 and float32, and test/staging/staged-cases*.ts) is staged, exported to ONNX with its
 * inputs' shapes, and run in onnxruntime-node; its outputs must match the eager op's within
 * EXPORT_TOLERANCE (documented in docs/onnx.md). A case whose export is refused must be refused
 * with OnnxUnsupportedError naming the op, and only for the ops and reasons listed in REFUSED.
 * The last test prints the counts.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { allCases } from "../util/grad-cases/index.js";
import { cases as baseStagedCases, type StagedCase } from "../staging/staged-cases.js";
import { cases as dtypeCases } from "../staging/staged-cases-dtypes.js";

/** Tolerances by output dtype: float32 graphs run in float32 in onnxruntime (ours round once from float64). */
const EXPORT_TOLERANCE: Record<string, { rtol: number; atol: number }> = {
  float32: { rtol: 1e-4, atol: 1e-5 },
  float16: { rtol: 2e-3, atol: 1e-3 },
  // float64 is exact but for tan, asin, acos, atan, sinh, cosh, erf, asinh, acosh, atanh (float32 in onnxruntime)
  float64: { rtol: 1e-5, atol: 1e-6 },
};

/** Ops whose export is refused by design (OnnxUnsupportedError), and why. */
const REFUSED = new Set(["hostCall", "print", "assert", "packResiduals", "unpackResiduals", "bitcast", "allReduce", "broadcast", "allGather"]);

const flat = (r: sc.Tensor | sc.Tensor[]): sc.Tensor[] => (Array.isArray(r) ? r : [r]);

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

function assertClose(got: sc.Tensor, want: sc.Tensor, what: string): void {
  assert.equal(got.dtype, want.dtype, `${what}: dtype`);
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  const a = got.dataSync();
  const b = want.dataSync();
  const tol = EXPORT_TOLERANCE[want.dtype];
  for (let i = 0; i < b.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (Number.isNaN(y) ? Number.isNaN(x) : x === y) continue;
    // (int64/uint64 storage holds JS numbers: a cast can leave NaN, infinities or a negative uint64 there,
    // which are no 64-bit integers and have no ONNX counterpart)
    if ((want.dtype === "int64" || want.dtype === "uint64") && (!Number.isFinite(y) || (want.dtype === "uint64" && y < 0))) continue;
    if (tol && Math.abs(x - y) <= tol.atol + tol.rtol * Math.abs(y)) continue;
    assert.fail(`${what}: element ${i} is ${x} in onnxruntime but ${y} eager`);
  }
}

const counts = { cases: 0, matched: 0, refused: 0, eagerErrors: 0 };
const opsMatched = new Set<string>();
const opsRefused = new Map<string, string>();

async function sweep(c: StagedCase, name: string, cast?: sc.DType): Promise<void> {
  const rng = new Rng(hash(name));
  let xs = c.inputs(rng);
  if (cast) xs = xs.map((x) => (x.dtype === "float64" ? sc.cast(x, cast) : x));
  counts.cases++;
  let eager: sc.Tensor[];
  const log = console.log;
  console.log = () => {};
  try {
    eager = flat(c.fn(...xs));
  } catch {
    counts.eagerErrors++;
    return;
  } finally {
    console.log = log;
  }
  const staged = sc.stage(c.fn, c.options);
  let exported: sc.onnx.ExportedModel;
  try {
    exported = sc.onnx.exportModel(staged, xs);
  } catch (e) {
    assert.ok(e instanceof sc.onnx.OnnxUnsupportedError, `${name}: export failed with ${(e as Error).name}: ${(e as Error).message}`);
    const op = /cannot export op (\w+)/.exec((e as Error).message)?.[1];
    assert.ok(op !== undefined && REFUSED.has(op), `${name}: export refused unexpectedly: ${(e as Error).message}`);
    counts.refused++;
    opsRefused.set(op, (e as Error).message);
    return;
  }
  const feeds: Record<string, sc.Tensor> = {};
  exported.inputNames.forEach((n, i) => (feeds[n] = xs[i]!));
  const got = await sc.onnx.runOnnxRuntime(exported.bytes, feeds);
  assert.equal(exported.outputNames.length, eager.length, `${name}: number of outputs`);
  exported.outputNames.forEach((n, i) => assertClose(got[n]!, eager[i]!, `${name} output ${i}`));
  counts.matched++;
  opsMatched.add(c.op);
}

for (const c of allCases) {
  const name = `${c.op}${c.label ? ` (${c.label})` : ""}`;
  test(`eager vs onnxruntime: ${name}`, async () => {
    await sweep({ op: c.op, inputs: c.inputs, fn: c.fn }, name);
    await sweep({ op: c.op, inputs: c.inputs, fn: c.fn }, `${name} float32`, "float32");
  });
}

for (const c of [...baseStagedCases, ...dtypeCases]) {
  const name = `${c.op}${c.label ? ` (${c.label})` : ""}`;
  test(`eager vs onnxruntime: ${name}`, () => sweep(c, name));
}

test("every registry op has an ONNX lowering, an expression, or a stated refusal", () => {
  sc.onnx.exportFunction(sc.stage((x: sc.Tensor) => x), sc.spec([1])); // (installs the lowerings)
  const missing = sc
    .listOps()
    .filter((d) => !d.onnx?.lower && !d.onnx?.refused && !d.elementwise)
    .map((d) => d.name);
  assert.deepEqual(missing, []);
});

test("sweep counts", () => {
  const ops = sc.listOps().map((d) => d.name);
  const unexercised = ops.filter((o) => !opsMatched.has(o) && !opsRefused.has(o));
  console.log(
    `export sweep: ${counts.cases} cases, ${counts.matched} matched onnxruntime, ${counts.refused} refused (typed), ${counts.eagerErrors} rejected eagerly; ` +
      `ops: ${opsMatched.size} of ${ops.length} matched, ${opsRefused.size} refused (${[...opsRefused.keys()].join(", ")}); not reached as a case's own op: ${unexercised.join(", ") || "none"}`,
  );
  assert.ok(counts.matched > 0);
});
