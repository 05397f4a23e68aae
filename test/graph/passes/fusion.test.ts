/**
 * fusion (graph/passes/fusion.ts) and the fused kernels (ops/fused.ts): fused chains are bit-
 * identical to the unfused ops.
 * Each pass runs on small staged functions, before and after in the printed text form, and the
 * result is run by the interpreter against the original on random inputs (bit for bit).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { verifyGraph } from "../../../src/graph/verify.js";
import { interpret } from "../../../src/exec/interpreter.js";
import { FunctionLibrary, Graph, type ValueType } from "../../../src/graph/ir.js";
import { cloneProgram, fuse, type FusedAttrs } from "../../../src/graph/passes/index.js";
import { fusedKernel, fusedKernelSource } from "../../../src/ops/fused.js";
import type { DType } from "../../../src/core/dtype.js";
import { Rng } from "../../util/rng.js";
import { lines, assertIdentical, applyPasses, ops } from "./helpers.js";

function fusedOf(g: Graph): FusedAttrs {
  const n = g.nodes.find((x) => x.op === "fusedElementwise");
  assert.ok(n, "a fusedElementwise node");
  return n.attrs as unknown as FusedAttrs;
}

test("fusion turns a 5-op float32 chain into one node, bit-identical to unfused (with broadcasting)", () => {
  const r = applyPasses(
    (x: sc.Tensor, y: sc.Tensor) => x.mul(y).add(x).sub(y).square().tanh(),
    [sc.ones([4, 5]), sc.ones([5])],
    [fuse],
    5,
  );
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[4, 5], %1 arg1: float32[5]) -> (output_0: float32[4, 5]) {",
      '  %2: float32[4, 5] = fusedElementwise(%0, %1) {numInputs: 2, steps: [{op: "mul", args: [0, 1], attrs: {}}, {op: "add", args: [2, 0], attrs: {}}, {op: "sub", args: [3, 1], attrs: {}}, {op: "square", args: [4], attrs: {}}, {op: "tanh", args: [5], attrs: {}}], outputs: [4]}',
      "  return %2",
      "}",
    ),
  );
});

test("fusion of a 5-op int32 chain wraps around exactly as the unfused ops do", () => {
  const r = applyPasses(
    (x: sc.Tensor, y: sc.Tensor) => x.mul(y).add(x).sub(y).square().neg(),
    [sc.ones([3, 4], "int32"), sc.ones([3, 4], "int32")],
    [fuse],
    5,
  );
  assert.deepEqual(ops(r.graph), ["fusedElementwise"]);
  assert.deepEqual(
    fusedOf(r.graph).steps.map((s) => s.op),
    ["mul", "add", "sub", "square", "neg"],
  );
});

test("fusion rounds every step to its dtype: uint8, bool, float64, comparisons, where, attrs", () => {
  const r = applyPasses(
    (u: sc.Tensor, x: sc.Tensor, d: sc.Tensor) => {
      const wrapped = u.add(u).mul(u); // uint8 wraps at each step
      const big = x.greater(sc.zeros([]));
      const chosen = sc.where(big, x.mul(x), sc.leakyRelu(x, 0.3).exp());
      const mixed = d.mul(chosen.cast("float64")).sqrt().add(d);
      return [wrapped, chosen.floorDiv(sc.full([], 0.7)), mixed.neg()];
    },
    [sc.ones([6], "uint8"), sc.ones([2, 6]), sc.ones([2, 6], "float64")],
    [fuse],
    5,
  );
  const fused = r.graph.nodes.filter((n) => n.op === "fusedElementwise");
  assert.ok(fused.length >= 2);
  assert.ok(!ops(r.graph).includes("greater"));
});

test("fusion keeps values used outside the group as extra outputs, and never reorders across a user", () => {
  const r = applyPasses(
    (x: sc.Tensor) => {
      const e = x.exp();
      const s = sc.sum(e); // a non-elementwise user of e, before the rest of the chain
      const y = e.add(s).mul(e);
      const z = y.sin().cos();
      return [z, y];
    },
    [sc.ones([8])],
    [fuse],
    3,
  );
  assert.deepEqual(ops(r.graph), ["exp", "sum", "fusedElementwise"]);
  const a = fusedOf(r.graph);
  assert.deepEqual(
    a.steps.map((s) => s.op),
    ["add", "mul", "sin", "cos"],
  );
  assert.deepEqual(a.outputs, [1, 3]);
  assert.equal(r.graph.nodes[2]!.outputs.length, 2);
});

test("fusion skips nodes of unknown shape and single nodes", () => {
  const f = sc.stage((x: sc.Tensor) => x.exp().neg(), { inputSignature: [sc.spec([null])] });
  const cf = f.concrete(sc.ones([3]));
  const { graph, library } = cloneProgram(cf.graph, cf.library);
  fuse(graph, library);
  assert.deepEqual(ops(graph), ["exp", "neg"]);
  const g2 = applyPasses((x: sc.Tensor) => x.exp().sum(), [sc.ones([3])], [fuse]).graph;
  assert.deepEqual(ops(g2), ["exp", "sum"]);
});

/** Values of `dtype` with the awkward ones (NaN, ±0, ±Infinity, overflow-prone) mixed in. */
function nastyData(rng: Rng, dtype: DType, n: number): sc.Tensor {
  const special = dtype === "float32" || dtype === "float64" ? [NaN, -0, 0, Infinity, -Infinity, 0.5, -2.5, 1e30] : dtype === "bool" ? [0, 1] : [0, -1, 1, 2147483647, -2147483648, 255, 70000];
  const vals = Array.from({ length: n }, (_, i) => (i % 3 === 0 ? special[rng.int(0, special.length)]! : dtype === "bool" ? rng.int(0, 2) : dtype === "uint8" ? rng.int(0, 256) : isIntDtype(dtype) ? rng.int(-70000, 70000) : rng.uniform(-4, 4)));
  return sc.tensor(vals, dtype, [n]);
}

function isIntDtype(d: DType): boolean {
  return d === "int32" || d === "int64" || d === "uint8";
}

test("fusion sweep: every elementwise op, every dtype, broadcast and scalar operands, bit-identical", () => {
  const rng = new Rng(2024);
  const dtypes: DType[] = ["float32", "float64", "int32", "int64", "uint8", "bool"];
  const shapes = [[3, 4], [4], []];
  let checked = 0;
  for (const def of sc.listOps()) {
    if (!def.elementwise || def.stateful) continue;
    const attrs = def.name === "leakyRelu" ? { alpha: 0.3 } : def.name === "elu" ? { alpha: 0.7 } : {};
    for (const dtype of dtypes) {
      // The condition of `where` is bool; its other operands take the dtype under test.
      const types: ValueType[] = def.inputs.map((_, k) => ({ dtype: def.name === "where" && k === 0 ? "bool" : dtype, shape: shapes[k]! }));
      let outType: ValueType;
      try {
        outType = def.infer(types, attrs)[0]!;
      } catch {
        continue; // the op does not take this dtype
      }
      const g = new Graph(`sweep_${def.name}_${dtype}`);
      const ins = types.map((t, k) => g.addInput(t, `in${k}`));
      const y = g.addNode(def.name, ins, attrs, [outType]).outputs[0]!;
      // A second step reading the first, so the first's rounding matters.
      const zType = sc.getOp("maximum").infer([outType, outType], {})[0]!;
      const z = g.addNode("maximum", [y, y], {}, [zType]).outputs[0]!;
      const w = g.addNode("add", [z, ins[0]!], {}, [sc.getOp("add").infer([zType, types[0]!], {})[0]!]).outputs[0]!;
      g.setOutputs([y, w]);
      const lib = new FunctionLibrary();
      verifyGraph(g, lib);
      const data = types.map((t) => {
        const n = t.shape.reduce((a, b) => a * b, 1);
        return sc.reshape(nastyData(rng, t.dtype, n), t.shape);
      });
      const ref = interpret(g, data, { library: lib });
      fuse(g, lib);
      verifyGraph(g, lib);
      assert.deepEqual(ops(g), ["fusedElementwise"], `${def.name} ${dtype}`);
      assertIdentical(interpret(g, data, { library: lib }), ref, `${def.name} ${dtype}`);
      checked++;
    }
  }
  assert.ok(checked >= 150, `checked ${checked} op/dtype pairs`);
});

test("fusedKernel: cached loops, contiguous/scalar/strided inputs, in-place output, and errors", () => {
  const attrs: FusedAttrs = {
    numInputs: 3,
    steps: [
      { op: "mul", args: [0, 1], attrs: {} },
      { op: "add", args: [3, 2], attrs: {} },
      { op: "elu", args: [4], attrs: { alpha: 0.5 } },
    ],
    outputs: [2],
  };
  const rng = new Rng(11);
  const x = Float32Array.from({ length: 12 }, () => rng.uniform(-2, 2));
  const row = Float32Array.from({ length: 4 }, () => rng.uniform(-2, 2));
  const s = Float32Array.of(0.25);
  const k = fusedKernel(attrs, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]);
  assert.equal(k, fusedKernel(attrs, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]), "cached per shapes");
  const out = new Float32Array(12);
  k([x, row, s], [out]);
  for (let i = 0; i < 12; i++) {
    const m = Math.fround(x[i]! * row[i % 4]!);
    const a = Math.fround(m + s[0]!);
    const e = Math.fround(a > 0 ? a : 0.5 * Math.expm1(a));
    assert.ok(Object.is(out[i], e), `element ${i}`);
  }
  // In place: the output is the first input's storage.
  const inplace = x.slice();
  k([inplace, row, s], [inplace]);
  assert.deepEqual(inplace, out);
  assert.match(fusedKernelSource(attrs, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]), /Math\.fround/);

  assert.throws(
    () => fusedKernel({ ...attrs, outputs: [7] }, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]),
    (e: Error) => e instanceof sc.ValueError && /fusedElementwise/.test(e.message) && /output step 7 is out of range/.test(e.message),
  );
  assert.throws(
    () => fusedKernel({ ...attrs, steps: [{ op: "sum", args: [0], attrs: {} }], outputs: [0] }, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]),
    (e: Error) => e instanceof sc.ValueError && /not an elementwise op/.test(e.message),
  );
  assert.throws(
    () => fusedKernel({ ...attrs, steps: [{ op: "neg", args: [5], attrs: {} }], outputs: [0] }, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]),
    (e: Error) => e instanceof sc.ValueError && /reads operand 5/.test(e.message),
  );
  // A step that does not cover the loop's shape.
  assert.throws(
    () =>
      sc.getOp("fusedElementwise").infer(
        [
          { dtype: "float32", shape: [4] },
          { dtype: "float32", shape: [3, 4] },
        ],
        { numInputs: 2, steps: [{ op: "neg", args: [0], attrs: {} }, { op: "add", args: [2, 1], attrs: {} }], outputs: [0, 1] },
      ),
    (e: Error) => e instanceof sc.ValueError && /step 0 \(neg\) has shape \[4\]/.test(e.message),
  );
  assert.throws(() => fusedKernel(attrs, [[3, 4], [5], []], [3, 4], ["float32", "float32", "float32"]), sc.ShapeError);
});
