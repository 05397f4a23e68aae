/**
 * inline (graph/passes/inline.ts): small calls become their bodies; large and recursive ones stay
 * calls.
 * Each pass runs on small staged functions, before and after in the printed text form, and the
 * result is run by the interpreter against the original on random inputs (bit for bit).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { verifyGraph } from "../../../src/graph/verify.js";
import { interpret } from "../../../src/exec/interpreter.js";
import { FunctionLibrary, Graph, type ValueType } from "../../../src/graph/ir.js";
import { inline, prune } from "../../../src/graph/passes/index.js";
import { lines, applyPasses, ops } from "./helpers.js";

test("inline replaces calls to small functions by their bodies; prune drops the unused function", () => {
  const inner = sc.stage((x: sc.Tensor) => x.mul(x).add(sc.ones([3])));
  const r = applyPasses((x: sc.Tensor) => (inner(x) as sc.Tensor).sub(x), [sc.ones([3])], [inline, prune]);
  assert.equal(
    r.before,
    lines(
      "graph main(%0 arg0: float32[3]) -> (output_0: float32[3]) {",
      "  %1: float32[3] = call @fn0(%0)",
      "  %2: float32[3] = sub(%1, %0)",
      "  return %2",
      "}",
      "",
      "function fn0(%0 arg0: float32[3]) -> (output_0: float32[3]) {",
      "  %1: float32[3] = mul(%0, %0)",
      '  %2: float32[3] = fill() {shape: [3], dtype: "float32", value: 1}',
      "  %3: float32[3] = add(%1, %2)",
      "  return %3",
      "}",
    ),
  );
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[3]) -> (output_0: float32[3]) {",
      "  %1: float32[3] = mul(%0, %0)",
      '  %2: float32[3] = fill() {shape: [3], dtype: "float32", value: 1}',
      "  %3: float32[3] = add(%1, %2)",
      "  %4: float32[3] = sub(%3, %0)",
      "  return %4",
      "}",
    ),
  );
});

test("inline leaves large and recursive functions as calls; refines types of inlined bodies", () => {
  // A big callee: 40 nodes.
  const big = sc.stage((x: sc.Tensor) => {
    let y = x;
    for (let i = 0; i < 40; i++) y = y.sin();
    return y;
  });
  const r = applyPasses((x: sc.Tensor) => (big(x) as sc.Tensor).neg(), [sc.ones([2])], [inline]);
  assert.deepEqual(ops(r.graph), ["call", "neg"]);
  const r2 = applyPasses((x: sc.Tensor) => (big(x) as sc.Tensor).neg(), [sc.ones([2])], [(g, l) => inline(g, l, { threshold: 64 })]);
  assert.equal(ops(r2.graph).length, 41);

  // countdown(n) = n > 0 ? countdown(n - 1) : n, recursive through a cond region.
  const s: ValueType = { dtype: "float32", shape: [] };
  const lib = new FunctionLibrary();
  const cd = new Graph("countdown");
  const n = cd.addInput(s, "n");
  const zero = cd.addNode("fill", [], { shape: [], dtype: "float32", value: 0 }, [s]).outputs[0]!;
  const p = cd.addNode("greater", [n, zero], {}, [{ dtype: "bool", shape: [] }]).outputs[0]!;
  const thenG = new Graph("then");
  const tn = thenG.addInput(s, "n");
  const one = thenG.addNode("fill", [], { shape: [], dtype: "float32", value: 1 }, [s]).outputs[0]!;
  const m = thenG.addNode("sub", [tn, one], {}, [s]).outputs[0]!;
  thenG.setOutputs([thenG.addNode("call", [m], { callee: "countdown" }, [s]).outputs[0]!]);
  const elseG = new Graph("else");
  const en = elseG.addInput(s, "n");
  elseG.setOutputs([en]);
  cd.setOutputs([cd.addNode("cond", [p, n], {}, [s], [thenG, elseG]).outputs[0]!]);
  lib.add(cd);
  const root = new Graph("root");
  const x = root.addInput({ dtype: "float32", shape: [] }, "x");
  root.setOutputs([root.addNode("call", [x], { callee: "countdown" }, [s]).outputs[0]!]);
  verifyGraph(root, lib);
  inline(root, lib);
  verifyGraph(root, lib);
  assert.deepEqual(ops(root), ["call"]);
  assert.deepEqual(ops(lib.get("countdown")), ["fill", "greater", "cond"]);
  const [out] = interpret(root, [sc.tensor(3)], { library: lib });
  assert.equal(out!.dataSync()[0], 0);

  // A callee with an unknown batch dim inlined at a known shape: types get refined.
  const generic = sc.stage((x: sc.Tensor) => x.exp().sum(1), { inputSignature: [sc.spec([null, 2])] });
  const r3 = applyPasses((x: sc.Tensor) => (generic(x) as sc.Tensor).neg(), [sc.ones([3, 2])], [inline, prune]);
  assert.match(r3.after, /%2: float32\[3\] = sum\(%1\)/);
});
