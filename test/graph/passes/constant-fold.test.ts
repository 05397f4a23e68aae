/**
 * constantFold (graph/passes/constant-fold.ts) and the constant op it writes.
 * Each pass runs on small staged functions, before and after in the printed text form, and the
 * result is run by the interpreter against the original on random inputs (bit for bit).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { interpret } from "../../../src/exec/interpreter.js";
import { FunctionLibrary, Graph } from "../../../src/graph/ir.js";
import { bindConstantInputs, cloneProgram, constantFold, optimize, prune } from "../../../src/graph/passes/index.js";
import type { DType } from "../../../src/core/dtype.js";
import { Rng } from "../../util/rng.js";
import { lines, assertIdentical, applyPasses, randomLike, ops } from "./helpers.js";

test("constantFold evaluates constant subgraphs with the registry kernels; random ops stay", () => {
  const r = applyPasses(
    (x: sc.Tensor) => {
      const c = sc.reshape(sc.cast(sc.arange(6), "float32"), [2, 3]).mul(sc.full([2, 3], 2));
      const noise = sc.random.uniform([2, 3], { seed: 7 }).add(sc.ones([2, 3]));
      return x.add(c).add(noise);
    },
    [sc.ones([2, 3])],
    [constantFold, prune],
  );
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[2, 3], %1 capture_0: int32[2]) -> (output_0: float32[2, 3]) {",
      '  %2: float32[2, 3] = constant() {dtype: "float32", shape: [2, 3], values: [0, 2, 4, 6, 8, 10]}',
      '  %3: float32[2, 3] = randomUniform(%1) {shape: [2, 3], dtype: "float32", minval: 0, maxval: 1}',
      '  %4: float32[2, 3] = fill() {shape: [2, 3], dtype: "float32", value: 1}',
      "  %5: float32[2, 3] = add(%3, %4)",
      "  %6: float32[2, 3] = add(%0, %2)",
      "  %7: float32[2, 3] = add(%6, %5)",
      "  return %7",
      "}",
    ),
  );
  assert.deepEqual(ops(applyPasses((x: sc.Tensor) => x, [sc.ones([1])], []).graph), []);
});

test("constantFold writes a uniform result as a fill, respects the size limit and keeps failing kernels", () => {
  const f = (x: sc.Tensor) => x.add(sc.broadcastTo(sc.full([1, 4], 3), [5, 4]).mul(sc.full([], 2)));
  const r = applyPasses(f, [sc.ones([5, 4])], [constantFold, prune]);
  assert.deepEqual(ops(r.graph), ["fill", "add"]);
  assert.deepEqual(r.graph.nodes[0]!.attrs, { shape: [5, 4], dtype: "float32", value: 6 });

  const cf = sc.stage(f).concrete(sc.ones([5, 4]));
  const limited = cloneProgram(cf.graph, cf.library);
  optimize(limited.graph, limited.library, { fold: { maxElements: 10 }, fuse: false });
  assert.ok(ops(limited.graph).includes("broadcastTo"), "a 20-element result is over a limit of 10");

  // oneHot of an out-of-range index throws: left for run time.
  const bad = sc.stage((x: sc.Tensor) => x.add(sc.oneHot(sc.tensor([5], "int32"), 3)));
  const b = cloneProgram(bad.concrete(sc.ones([1, 3])).graph, new FunctionLibrary());
  constantFold(b.graph, b.library);
  assert.ok(ops(b.graph).includes("oneHot"));
});

test("the constant op validates its attributes and round-trips values of every dtype", () => {
  const rng = new Rng(3);
  for (const dtype of ["float32", "float64", "int32", "int64", "uint8", "bool"] as DType[]) {
    const t = randomLike(rng, sc.zeros([2, 2], dtype));
    const g = new Graph("c");
    const x = g.addInput({ dtype, shape: [2, 2] }, "x");
    g.setOutputs([x]);
    bindConstantInputs(g, new Map([[0, t]]));
    assert.equal(g.nodes[0]!.op, "constant");
    const [out] = interpret(g, [sc.zeros([2, 2], dtype)], { library: new FunctionLibrary() });
    assertIdentical([out!], [t]);
  }
  const op = sc.getOp("constant");
  assert.throws(() => op.infer([], { dtype: "float32", shape: [2], values: [1] }), (e: Error) => e instanceof sc.ValueError && /constant/.test(e.message) && /needs 2 values, got 1/.test(e.message));
  assert.throws(() => op.infer([], { dtype: "complex", shape: [1], values: [1] }), sc.DtypeError);
  assert.throws(() => op.infer([], { dtype: "float32", shape: [1.5], values: [1] }), sc.ShapeError);
});
