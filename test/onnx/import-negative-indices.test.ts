/**
 * ONNX's negative indices (counting from the end of an axis) on an axis whose size is unknown
 * while tracing: a model input with a symbolic dim, called in a function staged with a null
 * dim there (an inputSignature of sc.spec), so one trace serves every size. The importer wraps them with the axis's run-time size, never with the -1 that
 * stands for "unknown" in the traced shape. Each model runs in onnxruntime's own session on the
 * same inputs, and the traced function's results must equal onnxruntime's, for several sizes of
 * the symbolic axis.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { hasOnnxRuntime } from "../../src/onnx/ort.js";
import { Rng } from "../util/rng.js";

const { onnx } = sc;
/** onnx.load on our graph always: these tests are of our importer (onnxruntime's session of the bytes is native-session.test.ts's). */
const loadGraph = (source: Uint8Array | string, options: sc.onnx.LoadOptions = {}) => onnx.load(source, { ...options, nativeSession: false });
const vi = onnx.makeValueInfo;
const skip = !hasOnnxRuntime() && "onnxruntime-node is not installed";

interface Case {
  name: string;
  node: Record<string, unknown>;
  /** The model's inputs (x first); "N" is the symbolic dim. */
  inputs: Record<string, unknown>[];
  output: Record<string, unknown>;
  /** The specs the model is traced for (a null dim where the model has "N"). */
  specs: sc.TensorSpec[];
  /** The inputs of one run, for a size n of the symbolic axis. */
  feeds(n: number, rng: Rng): sc.Tensor[];
}

/** Indices drawn from ONNX's whole range -n..n-1, negatives included. */
const indices = (rng: Rng, n: number, count: number): number[] => Array.from({ length: count }, (_, k) => (k === 0 ? -1 : k === 1 ? -n : rng.int(-n, n)));
const data = (rng: Rng, shape: number[]): sc.Tensor => sc.tensor(Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rng.int(-50, 50)), "float32", shape);

const CASES: Case[] = [
  {
    name: "GatherElements along the symbolic axis",
    node: onnx.makeNode("GatherElements", ["x", "i"], ["y"], { axis: 0 }),
    inputs: [vi("x", "float32", ["N", 3]), vi("i", "int64", [2, 3])],
    output: vi("y", "float32", [2, 3]),
    specs: [sc.spec([null, 3], "float32"), sc.spec([2, 3], "int64")],
    feeds: (n, rng) => [data(rng, [n, 3]), sc.tensor(indices(rng, n, 6), "int64", [2, 3])],
  },
  {
    name: "ScatterElements along the symbolic axis",
    node: onnx.makeNode("ScatterElements", ["x", "i", "u"], ["y"], { axis: 0 }),
    inputs: [vi("x", "float32", ["N", 2]), vi("i", "int64", [1, 2]), vi("u", "float32", [1, 2])],
    output: vi("y", "float32", ["N", 2]),
    specs: [sc.spec([null, 2], "float32"), sc.spec([1, 2], "int64"), sc.spec([1, 2], "float32")],
    feeds: (n, rng) => [data(rng, [n, 2]), sc.tensor([-1, -n], "int64", [1, 2]), data(rng, [1, 2])],
  },
  {
    name: "Gather along the symbolic axis",
    node: onnx.makeNode("Gather", ["x", "i"], ["y"], { axis: 0 }),
    inputs: [vi("x", "float32", ["N", 2]), vi("i", "int64", [4])],
    output: vi("y", "float32", [4, 2]),
    specs: [sc.spec([null, 2], "float32"), sc.spec([4], "int64")],
    feeds: (n, rng) => [data(rng, [n, 2]), sc.tensor(indices(rng, n, 4), "int64")],
  },
  {
    name: "GatherND over the symbolic axis",
    node: onnx.makeNode("GatherND", ["x", "i"], ["y"]),
    inputs: [vi("x", "float32", ["N", 3]), vi("i", "int64", [3, 2])],
    output: vi("y", "float32", [3]),
    specs: [sc.spec([null, 3], "float32"), sc.spec([3, 2], "int64")],
    feeds: (n, rng) => [data(rng, [n, 3]), sc.tensor([-1, -1, -n, 0, rng.int(-n, n), rng.int(-3, 3)], "int64", [3, 2])],
  },
  {
    name: "ScatterND over the symbolic axis",
    node: onnx.makeNode("ScatterND", ["x", "i", "u"], ["y"]),
    inputs: [vi("x", "float32", ["N", 3]), vi("i", "int64", [2, 1]), vi("u", "float32", [2, 3])],
    output: vi("y", "float32", ["N", 3]),
    specs: [sc.spec([null, 3], "float32"), sc.spec([2, 1], "int64"), sc.spec([2, 3], "float32")],
    feeds: (n, rng) => [data(rng, [n, 3]), sc.tensor([-1, -n], "int64", [2, 1]), data(rng, [2, 3])],
  },
];

for (const c of CASES) {
  test(`negative indices on a symbolic axis match onnxruntime: ${c.name}`, { skip }, async () => {
    const bytes = onnx.modelBytes(onnx.makeModel(onnx.makeGraph([c.node], "g", c.inputs, [c.output]), { opset: 18 }));
    const model = loadGraph(bytes);
    const traced = sc.stage((...xs: sc.Tensor[]) => model(...xs) as sc.Tensor, { inputSignature: c.specs });
    const names = c.inputs.map((v) => v.name as string);
    const rng = new Rng(0x26 ^ c.name.length);
    for (const n of [3, 5, 8]) {
      const xs = c.feeds(n, rng);
      const want = (await onnx.runOnnxRuntime(bytes, Object.fromEntries(names.map((name, k) => [name, xs[k]!]))))["y"]!;
      const got = traced(...xs) as sc.Tensor;
      assert.deepEqual(got.shape, want.shape, `${c.name}, N = ${n}: shape`);
      assert.deepEqual(Array.from(got.dataSync()), Array.from(want.dataSync()), `${c.name}, N = ${n}: values (indices ${Array.from(xs[1]!.dataSync()).join(", ")})`);
      // and called directly (traced for the call's own shapes), the same
      assert.deepEqual(Array.from((model(...xs) as sc.Tensor).dataSync()), Array.from(want.dataSync()), `${c.name}, N = ${n}: a direct call`);
    }
    assert.equal(traced.traceCount, 1, "one trace (the null dim) for every size");
  });
}

test("a run-time Gather index out of ONNX's range on a symbolic axis names ONNX's range and the node", () => {
  const bytes = onnx.modelBytes(onnx.makeModel(onnx.makeGraph([onnx.makeNode("Gather", ["x", "i"], ["y"], { axis: 0 }, { name: "pick" })], "g", [vi("x", "float32", ["N"]), vi("i", "int64", [1])], [vi("y", "float32", [1])]), { opset: 18 }));
  const model = loadGraph(bytes);
  const traced = sc.stage((x: sc.Tensor, i: sc.Tensor) => model(x, i) as sc.Tensor, { inputSignature: [sc.spec([null], "float32"), sc.spec([1], "int64")] });
  const x = sc.tensor([1, 2, 3, 4]);
  assert.deepEqual(Array.from((traced(x, sc.tensor([-4], "int64")) as sc.Tensor).dataSync()), [1]);
  for (const bad of [-5, -9, 4])
    assert.throws(
      () => traced(x, sc.tensor([bad], "int64")),
      (e: unknown) => e instanceof sc.IndexError && new RegExp(`index ${bad} at position \\[0\\].* of size 4 .*valid indices are -4\\.\\.3.*Gather node "pick"`).test((e as Error).message),
      `index ${bad}`,
    );
});
