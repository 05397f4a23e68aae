/**
 * Weights stored as Constant nodes become trainable Variables (issue 27; constant-weights.ts):
 * on crafted float64 models their gradients match central finite differences (a Constant in
 * the main graph, in a Loop body and in the branches of a run-time If); Constants read while
 * tracing (a Reshape shape, Resize scales, a float Constant cast into a shape) and rank-0
 * literals stay constants; the models still match onnxruntime; `trainable: false` keeps them
 * all constants.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

const { onnx } = sc;
/** onnx.load on our graph always: these tests are of our importer (onnxruntime's session of the bytes is native-session.test.ts's). */
const loadGraph = (source: Uint8Array | string, options: sc.onnx.LoadOptions = {}) => onnx.load(source, { ...options, nativeSession: false });
const vi = onnx.makeValueInfo;
const node = onnx.makeNode;
const constant = (name: string, value: sc.Tensor) => node("Constant", [], [name], { value });

/** y = Reshape(Tanh(x W + b) * 0.5, shape): W [3, 4], b [4], the shape an int64 Constant [2, 2], 0.5 a rank-0 literal. */
function denseModel(rng: Rng): Uint8Array {
  const g = onnx.makeGraph(
    [
      constant("W", rng.tensor([3, 4])),
      constant("b", rng.tensor([4])),
      constant("half", sc.scalar(0.5, "float64")),
      constant("shape", sc.tensor([2, 2], "int64")),
      node("MatMul", ["x", "W"], ["xw"]),
      node("Add", ["xw", "b"], ["z"]),
      node("Tanh", ["z"], ["t"]),
      node("Mul", ["t", "half"], ["h"]),
      node("Reshape", ["h", "shape"], ["y"]),
    ],
    "dense",
    [vi("x", "float64", [1, 3])],
    [vi("y", "float64", [2, 2])],
  );
  return onnx.modelBytes(onnx.makeModel(g));
}

/** A Loop of 3 (an int64 Constant) whose body has its own weight: s <- tanh(s * w + x) with w a Constant [4] of the body. */
function loopModel(rng: Rng): Uint8Array {
  const body = onnx.makeGraph(
    [constant("w_body", rng.tensor([4])), node("Mul", ["s_in", "w_body"], ["sw"]), node("Add", ["sw", "x"], ["swx"]), node("Tanh", ["swx"], ["s_out"]), node("Identity", ["c_in"], ["c_out"])],
    "body",
    [vi("i", "int64", []), vi("c_in", "bool", []), vi("s_in", "float64", [4])],
    [vi("c_out", "bool", []), vi("s_out", "float64", [4])],
  );
  const g = onnx.makeGraph(
    [constant("trips", sc.tensor([3], "int64")), constant("s0", rng.tensor([4])), node("Loop", ["trips", "", "s0"], ["y"], { body })],
    "loop",
    [vi("x", "float64", [4])],
    [vi("y", "float64", [4])],
  );
  return onnx.modelBytes(onnx.makeModel(g));
}

/** An If on ReduceSum(x) > 0 (a run-time condition): then x * w_then, else x + w_else, each a Constant [4] of its branch. */
function ifModel(rng: Rng): Uint8Array {
  const branch = (name: string, op: string, w: string) =>
    onnx.makeGraph([constant(w, rng.tensor([4])), node(op, ["x", w], [`${name}_y`])], name, [], [vi(`${name}_y`, "float64", [4])]);
  const g = onnx.makeGraph(
    [
      node("ReduceSum", ["x"], ["total"], { keepdims: 0 }),
      constant("zero", sc.scalar(0, "float64")),
      node("Greater", ["total", "zero"], ["positive"]),
      node("If", ["positive"], ["y"], { then_branch: branch("then", "Mul", "w_then"), else_branch: branch("else", "Add", "w_else") }),
    ],
    "branchy",
    [vi("x", "float64", [4])],
    [vi("y", "float64", [4])],
  );
  return onnx.modelBytes(onnx.makeModel(g));
}

/**
 * Float Constants read while tracing: Resize scales (float32 [4]) and a float Constant cast to
 * int64 for a Reshape's shape; beside them a real weight (a [1, 1, 2, 2] scale multiplied in).
 */
function staticFloatsModel(): Uint8Array {
  const g = onnx.makeGraph(
    [
      constant("scales", sc.tensor([1, 1, 2, 2], "float32")),
      node("Resize", ["x", "", "scales"], ["up"], { mode: "nearest" }),
      constant("gain", sc.tensor([1.5, -0.5, 2, 0.25], "float32", [1, 1, 2, 2])),
      constant("reps", sc.tensor([1, 1, 2, 2], "int64")),
      node("Tile", ["gain", "reps"], ["gains"]),
      node("Mul", ["up", "gains"], ["scaled"]),
      constant("flat_f", sc.tensor([1, 16], "float32")),
      node("Cast", ["flat_f"], ["flat"], { to: onnx.ElemType.INT64 }),
      node("Reshape", ["scaled", "flat"], ["y"]),
    ],
    "static_floats",
    [vi("x", "float32", [1, 1, 2, 2])],
    [vi("y", "float32", [1, 16])],
  );
  return onnx.modelBytes(onnx.makeModel(g));
}

/** Central finite differences (float64) of `loss` in a few entries of `v`, against `grad`. */
function checkFiniteDifferences(v: sc.Variable, grad: sc.Tensor, loss: () => number, entries: number[]): void {
  const h = 1e-6;
  const base = Array.from(v.peek().dataSync() as Float64Array);
  const g = grad.dataSync();
  for (const k of entries) {
    const at = (d: number): number => {
      const w = base.slice();
      w[k] = w[k]! + d;
      v.assign(sc.tensor(w, "float64", [...v.shape]));
      return loss();
    };
    const fd = (at(h) - at(-h)) / (2 * h);
    v.assign(sc.tensor(base, "float64", [...v.shape]));
    assert.ok(Math.abs(fd - Number(g[k])) <= 1e-6 * (1 + Math.abs(fd)), `${v.name}[${k}]: gradient ${g[k]}, finite differences ${fd}`);
  }
}

const CRAFTED = [
  { name: "dense", bytes: denseModel(new Rng(1)), variables: ["W", "b"], unused: [], x: () => new Rng(11).tensor([1, 3]) },
  { name: "loop", bytes: loopModel(new Rng(2)), variables: ["s0", "w_body"], unused: [], x: () => new Rng(12).tensor([4]) },
  // (both signs of the condition: x summing above and below 0; the branch not taken has a zero gradient)
  { name: "if (then)", bytes: ifModel(new Rng(3)), variables: ["w_then", "w_else"], unused: ["w_else"], x: () => new Rng(13).tensor([4], 0.1, 1) },
  { name: "if (else)", bytes: ifModel(new Rng(3)), variables: ["w_then", "w_else"], unused: ["w_then"], x: () => new Rng(14).tensor([4], -1, -0.1) },
];

for (const c of CRAFTED) {
  test(`Constant weights of the ${c.name} model are Variables: outputs match onnxruntime, gradients match finite differences`, async () => {
    const model = loadGraph(c.bytes);
    assert.deepEqual([...model.constants.keys()].sort(), [...c.variables].sort());
    assert.deepEqual(model.variables.map((v) => v.name).sort(), [...c.variables].sort());
    assert.ok(model.variables.every((v) => v.trainable));
    const x = c.x();
    const ort = await onnx.runOnnxRuntime(c.bytes, { x });
    assert.equal(onnx.mismatch(model(x), ort.y!, { rtol: 1e-12, atol: 1e-12 }), null);
    const weights = new Rng(21).tensor([...(model(x) as sc.Tensor).shape]);
    const lossOf = (): sc.Tensor => sc.sum(sc.mul(sc.square(model(x) as sc.Tensor), weights));
    const [, grads] = sc.valueAndGrad((..._vs: sc.Tensor[]) => lossOf(), { argnums: "all" })(...model.variables);
    model.variables.forEach((v, i) => {
      const g = (grads as sc.Tensor[])[i]!;
      const size = sc.sum(sc.abs(g)).item() as number;
      if (c.unused.includes(v.name)) assert.equal(size, 0, `${v.name} is in the branch not taken`);
      else assert.ok(size > 0, `${v.name}: the gradient is not all zeros`);
      checkFiniteDifferences(v as sc.Variable, g, () => lossOf().item() as number, [0, v.size - 1]);
    });
    assert.equal(model.traceCount, 1, "new weights need no new trace");
  });
}

test("a changed Constant weight changes the output without a new trace; trainable: false keeps Constants constant", () => {
  const bytes = denseModel(new Rng(1));
  const model = loadGraph(bytes);
  const frozen = loadGraph(bytes, { trainable: false });
  assert.equal(frozen.variables.length, 0);
  assert.equal(frozen.constants.size, 0);
  const x = new Rng(11).tensor([1, 3]);
  assert.equal(onnx.mismatch(model(x), frozen(x), { rtol: 0, atol: 0 }), null);
  const b = model.constants.get("b")! as sc.Variable;
  b.assign(sc.add(b.peek(), 1));
  assert.notEqual(onnx.mismatch(model(x), frozen(x), { rtol: 1e-6, atol: 1e-6 }), null, "the new bias is used");
  assert.equal(model.traceCount, 1);
  // the frozen model's graph holds the weights as constants (no Variable captured), the other reads W and b
  const capturedVariables = (m: sc.onnx.OnnxModel) =>
    m
      .concrete(x)
      .graph.nodes.filter((n) => n.op === "readVariable")
      .map((n) => (n.attrs.variable as sc.Variable).name)
      .sort();
  assert.deepEqual(capturedVariables(frozen), []);
  assert.deepEqual(capturedVariables(model), ["W", "b"]);
});

test("float Constants read while tracing (Resize scales, a float cast into a Reshape shape) stay constants; the model matches onnxruntime", async () => {
  const bytes = staticFloatsModel();
  const model = loadGraph(bytes);
  assert.deepEqual([...model.constants.keys()], ["gain"]);
  const x = new Rng(5).tensor([1, 1, 2, 2], -1, 1, "float32");
  const ort = await onnx.runOnnxRuntime(bytes, { x });
  assert.equal(onnx.mismatch(model(x), ort.y!, onnx.MODEL_TOLERANCE), null);
  // the weight is trainable through the Tile: each gain entry multiplies every x once (nearest
  // upsampling by 2 puts each x at one position of each of the tiled gain's residues)
  const [, g] = sc.valueAndGrad((_gain: sc.Tensor) => sc.sum(model(x) as sc.Tensor))(model.constants.get("gain")!);
  const total = Array.from(x.dataSync(), Number).reduce((a, b) => a + b, 0);
  assert.equal(onnx.mismatch(g as sc.Tensor, sc.full([1, 1, 2, 2], total, "float32"), { rtol: 1e-5, atol: 1e-6 }), null);
});
