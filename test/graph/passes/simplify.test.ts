/**
 * simplify (graph/passes/simplify.ts): algebraic identities, transpose/reshape chains, casts,
 * constant-predicate conds.
 * Each pass runs on small staged functions, before and after in the printed text form, and the
 * result is run by the interpreter against the original on random inputs (bit for bit).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { verifyGraph } from "../../../src/graph/verify.js";
import { interpret } from "../../../src/exec/interpreter.js";
import { FunctionLibrary, Graph, type ValueType } from "../../../src/graph/ir.js";
import { optimizeCopy, prune, simplify } from "../../../src/graph/passes/index.js";
import { text, lines, applyPasses, ops } from "./helpers.js";

test("simplify removes x*1, 1*x, x+0, x-0, x/1, double negation, double transpose, reshape chains, identity", () => {
  const r = applyPasses(
    (x: sc.Tensor, y: sc.Tensor) => {
      const a = x.mul(sc.ones([2, 3])).add(sc.zeros([])).sub(sc.zeros([3]));
      const b = sc.ones([]).mul(a).div(sc.ones([2, 3])).neg().neg();
      const c = sc.transpose(sc.transpose(b, [1, 0]), [1, 0]);
      const d = sc.reshape(sc.expandDims(sc.reshape(c, [6]), 0), [2, 3]);
      const e = sc.identity(d);
      // y * 1 broadcasts y from [3] to [2, 3]: it must stay.
      const kept = y.mul(sc.ones([2, 3]));
      return [e, kept];
    },
    [sc.ones([2, 3]), sc.ones([3])],
    [simplify, prune],
  );
  assert.equal(
    r.before,
    lines(
      "graph main(%0 arg0: float32[2, 3], %1 arg1: float32[3]) -> (output_0: float32[2, 3], output_1: float32[2, 3]) {",
      '  %2: float32[2, 3] = fill() {shape: [2, 3], dtype: "float32", value: 1}',
      "  %3: float32[2, 3] = mul(%0, %2)",
      '  %4: float32[] = fill() {shape: [], dtype: "float32", value: 0}',
      "  %5: float32[2, 3] = add(%3, %4)",
      '  %6: float32[3] = fill() {shape: [3], dtype: "float32", value: 0}',
      "  %7: float32[2, 3] = sub(%5, %6)",
      '  %8: float32[] = fill() {shape: [], dtype: "float32", value: 1}',
      "  %9: float32[2, 3] = mul(%8, %7)",
      '  %10: float32[2, 3] = fill() {shape: [2, 3], dtype: "float32", value: 1}',
      "  %11: float32[2, 3] = div(%9, %10)",
      "  %12: float32[2, 3] = neg(%11)",
      "  %13: float32[2, 3] = neg(%12)",
      "  %14: float32[3, 2] = transpose(%13) {perm: [1, 0]}",
      "  %15: float32[2, 3] = transpose(%14) {perm: [1, 0]}",
      "  %16: float32[6] = reshape(%15) {shape: [6]}",
      "  %17: float32[1, 6] = expandDims(%16) {axes: [0]}",
      "  %18: float32[2, 3] = reshape(%17) {shape: [2, 3]}",
      "  %19: float32[2, 3] = identity(%18)",
      '  %20: float32[2, 3] = fill() {shape: [2, 3], dtype: "float32", value: 1}',
      "  %21: float32[2, 3] = mul(%1, %20)",
      "  return %19, %21",
      "}",
    ),
  );
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[2, 3], %1 arg1: float32[3]) -> (output_0: float32[2, 3], output_1: float32[2, 3]) {",
      '  %2: float32[2, 3] = fill() {shape: [2, 3], dtype: "float32", value: 1}',
      "  %3: float32[2, 3] = mul(%1, %2)",
      "  return %0, %3",
      "}",
    ),
  );
});

test("simplify composes transposes and reshapes, drops same-dtype casts, and keeps dtype-changing x*1", () => {
  const castOp = sc.getOp("cast");
  const r = applyPasses(
    (x: sc.Tensor, i: sc.Tensor) => {
      const t = sc.transpose(sc.transpose(x, [1, 2, 0]), [1, 2, 0]); // composed: [2, 0, 1]
      const s = sc.squeeze(sc.reshape(t, [1, 4, 6]), 0); // -> reshape to [4, 6]
      const same = sc.applyOp(castOp, [s], { dtype: "float32" })[0]!;
      // int32 * float32 one is float32: the dtype changes, so it stays.
      const promoted = i.mul(sc.ones([], "float32"));
      return [same, promoted];
    },
    [sc.ones([2, 3, 4]), sc.ones([3], "int32")],
    [simplify, prune],
  );
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[2, 3, 4], %1 arg1: int32[3]) -> (output_0: float32[4, 6], output_1: float32[3]) {",
      "  %2: float32[4, 2, 3] = transpose(%0) {perm: [2, 0, 1]}",
      "  %3: float32[4, 6] = reshape(%2) {shape: [4, 6]}",
      '  %4: float32[] = fill() {shape: [], dtype: "float32", value: 1}',
      "  %5: float32[3] = mul(%1, %4)",
      "  return %3, %5",
      "}",
    ),
  );
});

test("simplify: exactSignedZeros keeps float x + 0 (which maps -0 to +0); ints fold either way", () => {
  const negZero = sc.scalar(-0); // captured: an input, bound as a constant below
  const f = sc.stage((x: sc.Tensor, i: sc.Tensor) => [x.add(sc.zeros([])), i.add(sc.zeros([], "int32")), x.add(negZero), x.sub(sc.zeros([]))]);
  const cf = f.concrete(sc.ones([2]), sc.ones([2], "int32"));
  const constants = new Map([[2, negZero]]);
  const exact = optimizeCopy(cf.graph, cf.library, { exactSignedZeros: true, fuse: false, constantInputs: constants });
  assert.deepEqual(ops(exact.graph), ["fill", "add"], "only float x + (+0) stays");
  assert.equal(exact.graph.outputs[1], exact.graph.inputs[1], "int x + 0 is x");
  assert.equal(exact.graph.outputs[2], exact.graph.inputs[0], "x + (-0) is x exactly");
  assert.equal(exact.graph.outputs[3], exact.graph.inputs[0], "x - 0 is x exactly");
  const ins = [sc.tensor([-0, 1]), sc.tensor([1, 2], "int32"), negZero];
  const [a, , c, d] = interpret(exact.graph, ins, { library: exact.library });
  assert.ok(Object.is(a!.dataSync()[0], 0), "-0 + 0 is +0");
  assert.ok(Object.is(c!.dataSync()[0], -0), "-0 + -0 is -0");
  assert.ok(Object.is(d!.dataSync()[0], -0), "-0 - 0 is -0");
  const loose = optimizeCopy(cf.graph, cf.library, { fuse: false, constantInputs: constants });
  assert.deepEqual(ops(loose.graph), [], "by default float x + 0 folds too");
});

test("simplify inlines a cond whose predicate is constant", () => {
  const r = applyPasses(
    (x: sc.Tensor) => sc.cond(sc.full([], true), () => x.exp(), () => x.neg()) as sc.Tensor,
    [sc.ones([3])],
    [simplify, prune],
  );
  // A bool scalar staged as a fill node: the cond stages, then its then-branch is inlined.
  assert.match(r.before, /cond\(/);
  assert.deepEqual(ops(r.graph), ["exp"]);

  const g = new Graph("g");
  const t: ValueType = { dtype: "float32", shape: [3] };
  const x = g.addInput(t, "x");
  const p = g.addNode("fill", [], { shape: [], dtype: "bool", value: 0 }, [{ dtype: "bool", shape: [] }]).outputs[0]!;
  const thenG = new Graph("then");
  const ti = thenG.addInput(t, "x");
  thenG.setOutputs([thenG.addNode("exp", [ti], {}, [t]).outputs[0]!]);
  const elseG = new Graph("else");
  const ei = elseG.addInput(t, "x");
  elseG.setOutputs([elseG.addNode("neg", [ei], {}, [t]).outputs[0]!]);
  const c = g.addNode("cond", [p, x], {}, [t], [thenG, elseG]).outputs[0]!;
  g.setOutputs([c]);
  const lib = new FunctionLibrary();
  simplify(g, lib);
  prune(g, lib);
  verifyGraph(g, lib);
  assert.equal(text(g, lib), lines("graph main(%0 x: float32[3]) -> (output_0: float32[3]) {", "  %1: float32[3] = neg(%0)", "  return %1", "}"));
});
