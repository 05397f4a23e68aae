/**
 * Staged control flow exported to ONNX (cond as If, while as Loop) and run in onnxruntime-node:
 * every AutoGraph corpus program that runs staged (conditionals, loops with break, continue and
 * early return, logical operators, ...) is traced once, exported, and run in onnxruntime on each
 * of its inputs; the outputs must equal the staged function's. A program that uses what ONNX
 * cannot hold (printing, assertions, recursion) must be refused with OnnxUnsupportedError.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { autograph } from "../../src/autograph/api.js";
import { corpus, type CorpusProgram } from "../autograph/corpus/index.js";

type AnyFn = (...args: unknown[]) => unknown;

function wrapArgs(prog: CorpusProgram, args: unknown[]): unknown[] {
  const isNumeric = (a: unknown) => typeof a === "number" || typeof a === "boolean" || (Array.isArray(a) && a.every((v) => typeof v === "number" || Array.isArray(v)));
  const idx = new Set(prog.tensor?.wrap ?? args.map((_, i) => i).filter((i) => isNumeric(args[i])));
  return args.map((a, i) => {
    if (!idx.has(i)) return a;
    const dtype = prog.tensor?.dtypes?.[i] ?? (typeof a === "boolean" ? "bool" : "float64");
    if (typeof a === "number" || typeof a === "boolean") return sc.scalar(a, dtype);
    return sc.tensor(a as sc.NestedArray, dtype);
  });
}

const flatTensors = (x: unknown): sc.Tensor[] =>
  x instanceof sc.Tensor ? [x] : Array.isArray(x) ? x.flatMap(flatTensors) : x !== null && typeof x === "object" ? Object.values(x).flatMap(flatTensors) : [];

const totals = { programs: 0, exported: 0, runs: 0, refused: 0, notTensorArgs: 0 };

for (const { group, program } of corpus) {
  if (!program.tensor || program.tensor.staged === false) continue;
  test(`export corpus: ${group} / ${program.name}`, async () => {
    totals.programs++;
    const staged = sc.stage(autograph(program.fn as AnyFn, program.scope ? { scope: program.scope } : {}) as AnyFn, { name: "corpus" });
    const first = wrapArgs(program, program.inputs[0]!);
    if (!first.every((a) => a instanceof sc.Tensor)) {
      totals.notTensorArgs++;
      return;
    }
    let model: sc.onnx.ExportedModel;
    try {
      // (traced once for the first input's types: later inputs run the exported control flow)
      model = sc.onnx.exportModel(staged as never, first);
    } catch (e) {
      if (!(e instanceof sc.onnx.OnnxUnsupportedError)) {
        // a program the staged mode rejects while tracing is not this test's business
        if (e instanceof sc.onnx.OnnxError) throw e;
        return;
      }
      assert.match(e.message, /cannot export op (print|assert|hostCall)|cannot export the staged recursive function \w+: ONNX has no recursion/, `${program.name}: refused: ${e.message}`);
      totals.refused++;
      return;
    }
    totals.exported++;
    const session = await sc.onnx.createSession(model.bytes);
    for (const args of program.inputs) {
      const xs = wrapArgs(program, args) as sc.Tensor[];
      if (xs.some((x, i) => x.dtype !== first[i]!.dtype || x.shape.join() !== (first[i] as sc.Tensor).shape.join())) continue;
      let want: sc.Tensor[];
      try {
        want = flatTensors(staged(...xs));
      } catch {
        continue; // (an input the staged program rejects when it runs)
      }
      const feeds: Record<string, sc.Tensor> = {};
      model.inputNames.forEach((n, i) => (feeds[n] = xs[i]!));
      const got = await sc.onnx.runSession(session, feeds);
      assert.equal(model.outputNames.length, want.length);
      model.outputNames.forEach((n, i) => {
        assert.deepEqual(got[n]!.shape, want[i]!.shape, `${program.name} ${JSON.stringify(args)}: output ${i} shape`);
        const a = [...got[n]!.dataSync()];
        const b = [...want[i]!.dataSync()];
        a.forEach((v, k) => assert.ok(Object.is(v, b[k]) || Math.abs(v - b[k]!) <= 1e-9 * Math.max(1, Math.abs(b[k]!)), `${program.name} ${JSON.stringify(args)}: output ${i}[${k}] is ${v} in onnxruntime, ${b[k]} staged`));
      });
      totals.runs++;
    }
    await session.release();
  });
}

test("export corpus totals", () => {
  console.log(`export corpus: ${totals.programs} staged programs, ${totals.exported} exported (${totals.runs} runs matched in onnxruntime), ${totals.refused} refused (print, assert, recursion), ${totals.notTensorArgs} with non-tensor arguments`);
  assert.ok(totals.exported > 0);
});
