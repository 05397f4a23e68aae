/**
 * optimize (graph/passes/index.ts): the passes to a fixed point, then fusion, verifying each pass;
 * the loop-invariant and constant-binding steps.
 * Each pass runs on small staged functions, before and after in the printed text form, and the
 * result is run by the interpreter against the original on random inputs (bit for bit).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { GraphVerificationError } from "../../../src/graph/verify.js";
import { parseSExpr, toSExpr } from "../../../src/graph/sexpr.js";
import { graphsEqual } from "../../../src/graph/equal.js";
import { interpret } from "../../../src/exec/interpreter.js";
import { FunctionLibrary, Graph, type ValueType } from "../../../src/graph/ir.js";
import { optimize, optimizeCopy } from "../../../src/graph/passes/index.js";
import { Rng } from "../../util/rng.js";
import { type Pass, text, lines, assertIdentical, applyPasses, randomLike, ops } from "./helpers.js";

test("optimize runs inline, simplify, fold, cse, prune, ifConvert to a fixed point, then fusion, verifying each pass", () => {
  const small = sc.stage((x: sc.Tensor) => x.mul(sc.ones([3])).add(sc.zeros([3])));
  const fn = (x: sc.Tensor, y: sc.Tensor) => {
    const a = x.add(y);
    const b = x.add(y);
    x.mul(y).exp(); // dead
    const t = sc.transpose(sc.transpose(sc.reshape(sc.reshape(a, [6]), [3, 2]), [1, 0]), [1, 0]);
    const r = sc.arange(6).cast("float32").mul(2);
    return (small(sc.reshape(t, [2, 3])) as sc.Tensor).add(b).sub(sc.reshape(r, [2, 3])).neg().neg().tanh();
  };
  const args: [sc.Tensor, sc.Tensor] = [sc.ones([2, 3]), sc.ones([2, 3])];
  const cf = sc.stage(fn).concrete(...args);
  const original = text(cf.graph, cf.library);
  const passes: string[] = [];
  const { graph, library } = optimizeCopy(cf.graph, cf.library, { onPass: (p) => passes.push(p) });
  assert.equal(text(cf.graph, cf.library), original, "optimizeCopy leaves the concrete function alone");
  assert.deepEqual(passes.slice(0, 6), ["inline", "simplify", "constantFold", "cse", "prune", "ifConvert"]);
  assert.equal(passes[passes.length - 1], "fusion");
  assert.equal(passes.length % 6, 1);
  assert.equal(
    text(graph, library),
    lines(
      "graph main(%0 arg0: float32[2, 3], %1 arg1: float32[2, 3]) -> (output_0: float32[2, 3]) {",
      '  %2: float32[2, 3] = constant() {dtype: "float32", shape: [2, 3], values: [0, 2, 4, 6, 8, 10]}',
      '  %3: float32[2, 3] = fusedElementwise(%0, %1, %2) {numInputs: 3, steps: [{op: "add", args: [0, 1], attrs: {}}, {op: "add", args: [3, 3], attrs: {}}, {op: "sub", args: [4, 2], attrs: {}}, {op: "tanh", args: [5], attrs: {}}], outputs: [3]}',
      "  return %3",
      "}",
    ),
  );
  const rng = new Rng(5);
  for (let i = 0; i < 3; i++) {
    const ins = args.map((a) => randomLike(rng, a));
    assertIdentical(interpret(graph, ins, { library }), interpret(cf.graph, [...ins, ...cf.captureValues()], { library: cf.library }));
  }
  // The optimized graph (constant and fused nodes included) survives the S-expression form.
  const back = parseSExpr(toSExpr(graph, library));
  assert.ok(graphsEqual(back.graph, graph, back.library, library));
});

test("optimize sinks constants into loops, drops unused invariants, and binds constant inputs", () => {
  const r = applyPasses(
    (x: sc.Tensor) => {
      const two = sc.full([3], 2);
      const one = sc.ones([3]);
      const [, acc] = sc.whileLoop(
        (i: sc.Tensor) => i.less(sc.full([], 3, "int32")),
        (i: sc.Tensor, a: sc.Tensor) => [i.add(sc.ones([], "int32")), a.mul(two).mul(one)],
        [sc.zeros([], "int32"), x],
      );
      return acc;
    },
    [sc.ones([3])],
    [(g, l) => optimize(g, l, { fuse: false })],
  );
  assert.match(r.before, /while\(%\d+, %0, %\d+, %\d+\) \{numLoopVars: 2\}/);
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[3]) -> (output_0: float32[3]) {",
      '  %1: int32[] = fill() {shape: [], dtype: "int32", value: 0}',
      "  %2: int32[], %3: float32[3] = while(%1, %0) {numLoopVars: 2} {",
      "    cond(%4 cond_in0: int32[], %5 cond_in1: float32[3]) -> (output_0: bool[]) {",
      '      %6: int32[] = fill() {shape: [], dtype: "int32", value: 3}',
      "      %7: bool[] = less(%4, %6)",
      "      return %7",
      "    }",
      "    body(%8 body_in0: int32[], %9 body_in1: float32[3]) -> (output_0: int32[], output_1: float32[3]) {",
      '      %10: float32[3] = fill() {shape: [3], dtype: "float32", value: 2}',
      '      %11: int32[] = fill() {shape: [], dtype: "int32", value: 1}',
      "      %12: int32[] = add(%8, %11)",
      "      %13: float32[3] = mul(%9, %10)",
      "      return %12, %13",
      "    }",
      "  }",
      "  return %3",
      "}",
    ),
  );

  // A captured eager tensor is an input; bound as constant, x * c folds away.
  const c = sc.ones([3]);
  const f = sc.stage((x: sc.Tensor) => x.mul(c));
  const cf = f.concrete(sc.ones([3]));
  assert.equal(cf.graph.inputs.length, 2);
  const bound = optimizeCopy(cf.graph, cf.library, { constantInputs: new Map([[1, c]]) });
  assert.deepEqual(ops(bound.graph), []);
  assert.equal(bound.graph.outputs[0], bound.graph.inputs[0]);
});

test("optimize reports which pass broke the graph", () => {
  const g = new Graph("broken");
  const t: ValueType = { dtype: "float32", shape: [2] };
  const x = g.addInput(t, "x");
  const y = g.addNode("exp", [x], {}, [t]).outputs[0]!;
  g.setOutputs([y]);
  const bad: Pass = (h) => {
    h.nodes[0]!.outputs[0]!.type = { dtype: "float32", shape: [3] };
    return h;
  };
  assert.throws(
    () => optimize(g, new FunctionLibrary(), { onPass: (p, _n, h) => p === "cse" && bad(h, new FunctionLibrary()) }),
    (e: Error) => e instanceof GraphVerificationError && /after pass cse/.test(e.message),
  );
});
