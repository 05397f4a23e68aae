/**
 * ONNX's random ops imported on Stagecraft's keyed generators (src/onnx/import/ops/random.ts):
 * RandomUniform, RandomNormal, their -Like forms, Bernoulli, Multinomial and Dropout. Each draw
 * has the declared shape and dtype and lies in the op's range; a seeded node repeats its stream
 * when the model is loaded again and draws anew on every call; a draw is never folded into a
 * constant at trace time (not even of a constant input, nor inside a Loop body); Dropout is the
 * exact identity in inference mode and with ratio 0, and input * mask / (1 - ratio) in training
 * mode, with that gradient; bad attributes are typed errors naming the node. ONNX models with
 * random ops export (the keyed generator in ONNX integer ops) and onnxruntime draws the same
 * numbers; an inference-mode Dropout exports and runs in onnxruntime with the same outputs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { OnnxModelError, OnnxUnsupportedError } from "../../src/onnx/errors.js";

const { onnx } = sc;
/** onnx.load on our graph always: these tests are of our importer (onnxruntime's session of the bytes is native-session.test.ts's). */
const loadGraph = (source: Uint8Array | string, options: sc.onnx.LoadOptions = {}) => onnx.load(source, { ...options, nativeSession: false });
const vi = onnx.makeValueInfo;
type Node = Record<string, unknown>;
const load = (nodes: Node[], inputs: Node[], outputs: Node[], opset = 22) => loadGraph(onnx.modelBytes(onnx.makeModel(onnx.makeGraph(nodes, "m", inputs, outputs), { opset })));
const f = (v: number) => ({ float: v });

/** A one-node model y = op(x) with x of `dtype`[shape]. */
function likeModel(op: string, attrs: Record<string, unknown>, dtype: sc.DType, shape: number[], outDtype: sc.DType = dtype) {
  return load([onnx.makeNode(op, ["x"], ["y"], attrs as never)], [vi("x", dtype, shape)], [vi("y", outDtype, shape)]);
}
const values = (t: sc.Tensor): number[] => Array.from(t.dataSync(), Number);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const std = (xs: number[]) => Math.sqrt(mean(xs.map((x) => (x - mean(xs)) ** 2)));

test("RandomUniformLike: the input's shape, the input's or the dtype attribute's type, values in [low, high)", () => {
  sc.random.setSeed(11);
  const m = likeModel("RandomUniformLike", { low: f(-2), high: f(3) }, "float32", [40, 50]);
  const y = m(sc.zeros([40, 50])) as sc.Tensor;
  assert.deepEqual([y.dtype, y.shape], ["float32", [40, 50]]);
  const v = values(y);
  assert.ok(v.every((x) => x >= -2 && x < 3), "every value in [-2, 3)");
  assert.ok(Math.abs(mean(v) - 0.5) < 0.1, `mean ${mean(v)} of U(-2, 3)`);
  assert.ok(Math.min(...v) < -1.9 && Math.max(...v) > 2.9, "the draw covers the range");
  // dtype attribute over the input's (an int input is fine when dtype says float)
  const d = likeModel("RandomUniformLike", { dtype: 11 }, "int32", [7], "float64");
  const yd = d(sc.zeros([7], "int32")) as sc.Tensor;
  assert.deepEqual([yd.dtype, yd.shape], ["float64", [7]]);
  assert.ok(values(yd).every((x) => x >= 0 && x < 1));
});

test("RandomUniform and RandomNormal: the shape attribute, float by default, double by dtype; a fresh draw on every call", () => {
  sc.random.setSeed(3);
  const u = load([onnx.makeNode("RandomUniform", [], ["y"], { shape: [3, 4], low: f(5), high: f(6) })], [], [vi("y", "float32", [3, 4])]);
  const a = u() as sc.Tensor;
  const b = u() as sc.Tensor;
  assert.deepEqual([a.dtype, a.shape], ["float32", [3, 4]]);
  assert.ok(values(a).every((x) => x >= 5 && x < 6));
  assert.notDeepEqual(values(a), values(b), "a model without inputs still draws anew on every call (the draw is not folded)");
  assert.equal(u.traceCount, 1);

  const n = load([onnx.makeNode("RandomNormal", [], ["y"], { shape: [20000], mean: f(1.5), scale: f(0.5), dtype: 11 })], [], [vi("y", "float64", [20000])]);
  const y = n() as sc.Tensor;
  assert.deepEqual([y.dtype, y.shape], ["float64", [20000]]);
  const v = values(y);
  assert.ok(v.every(Number.isFinite));
  assert.ok(Math.abs(mean(v) - 1.5) < 0.02, `mean ${mean(v)}`);
  assert.ok(Math.abs(std(v) - 0.5) < 0.02, `std ${std(v)}`);
});

test("RandomNormalLike: the input's shape and dtype, mean and scale", () => {
  sc.random.setSeed(4);
  const m = likeModel("RandomNormalLike", { mean: f(-3), scale: f(2) }, "float64", [100, 100]);
  const v = values(m(sc.zeros([100, 100], "float64")) as sc.Tensor);
  assert.ok(Math.abs(mean(v) + 3) < 0.1 && Math.abs(std(v) - 2) < 0.1, `mean ${mean(v)}, std ${std(v)}`);
  // scale 0 is the mean exactly
  const z = likeModel("RandomNormalLike", { mean: f(7), scale: f(0) }, "float32", [5]);
  assert.deepEqual(values(z(sc.zeros([5])) as sc.Tensor), [7, 7, 7, 7, 7]);
});

test("a seeded node repeats its stream when the model is loaded again, and goes on from call to call", () => {
  const make = () => likeModel("RandomUniformLike", { seed: f(5) }, "float32", [6]);
  const x = sc.zeros([6]);
  const m1 = make();
  const m2 = make();
  const a1 = values(m1(x) as sc.Tensor);
  const a2 = values(m1(x) as sc.Tensor);
  const b1 = values(m2(x) as sc.Tensor);
  const b2 = values(m2(x) as sc.Tensor);
  assert.deepEqual(a1, b1);
  assert.deepEqual(a2, b2);
  assert.notDeepEqual(a1, a2);
  // the global generator between them does not matter; another seed is another stream
  sc.random.setSeed(99);
  assert.deepEqual(values(make()(x) as sc.Tensor), a1);
  assert.notDeepEqual(values(likeModel("RandomUniformLike", { seed: f(6) }, "float32", [6])(x) as sc.Tensor), a1);
  // an unseeded node draws from the global generator: setSeed makes it reproducible
  const u = likeModel("RandomUniformLike", {}, "float32", [6]);
  sc.random.setSeed(21);
  const c1 = values(u(x) as sc.Tensor);
  sc.random.setSeed(21);
  assert.deepEqual(values(u(x) as sc.Tensor), c1);
});

test("Bernoulli: 0 or 1 in the input's dtype (or the dtype attribute's), exact at p = 0 and 1, frequency p", () => {
  sc.random.setSeed(8);
  const p = sc.tensor([0, 1, 0, 1, 0, 1], "float32");
  const m = likeModel("Bernoulli", {}, "float32", [6]);
  for (let k = 0; k < 5; k++) assert.deepEqual(values(m(p) as sc.Tensor), [0, 1, 0, 1, 0, 1]);
  const y = m(p) as sc.Tensor;
  assert.equal(y.dtype, "float32");
  for (const [dtype, elem] of [["bool", 9], ["int64", 7], ["float64", 11]] as const) {
    const d = likeModel("Bernoulli", { dtype: elem }, "float64", [4], dtype);
    const yd = d(sc.tensor([0, 1, 1, 0], "float64")) as sc.Tensor;
    assert.equal(yd.dtype, dtype);
    assert.deepEqual(values(yd), [0, 1, 1, 0]);
  }
  const many = likeModel("Bernoulli", {}, "float64", [20000]);
  const v = values(many(sc.full([20000], 0.3, "float64")) as sc.Tensor);
  assert.ok(v.every((x) => x === 0 || x === 1));
  assert.ok(Math.abs(mean(v) - 0.3) < 0.02, `frequency ${mean(v)}`);
});

test("Multinomial: [batch, sample_size] class indices in int32 (or int64), drawn by the log-probabilities", () => {
  sc.random.setSeed(9);
  const m = load(
    [onnx.makeNode("Multinomial", ["x"], ["y"], { sample_size: 4000, dtype: 7 })],
    [vi("x", "float32", [2, 3])],
    [vi("y", "int64", [2, 4000])],
  );
  const logits = sc.log(sc.tensor([[0.2, 0.3, 0.5], [1, 0, 0]], "float32"));
  const y = m(logits) as sc.Tensor;
  assert.deepEqual([y.dtype, y.shape], ["int64", [2, 4000]]);
  const v = values(y);
  const row0 = v.slice(0, 4000);
  assert.ok(row0.every((c) => c >= 0 && c < 3));
  for (const [c, p] of [[0, 0.2], [1, 0.3], [2, 0.5]] as const) {
    const freq = row0.filter((x) => x === c).length / 4000;
    assert.ok(Math.abs(freq - p) < 0.03, `class ${c}: frequency ${freq}, probability ${p}`);
  }
  assert.ok(v.slice(4000).every((c) => c === 0), "a row with one possible class always draws it");
});

/** Dropout(x, ratio, training_mode) -> (y, mask), ratio and training_mode as static inputs. */
function dropoutModel(shape: number[], attrs: Record<string, unknown> = {}) {
  return load(
    [onnx.makeNode("Dropout", ["x", "r", "t"], ["y", "mask"], attrs as never)],
    [vi("x", "float32", shape), vi("r", "float32", []), vi("t", "bool", [])],
    [vi("y", "float32", shape), vi("mask", "bool", shape)],
  );
}

test("Dropout in training mode: output = input * mask / (1 - ratio), a boolean mask dropping each element with probability ratio", () => {
  sc.random.setSeed(12);
  const m = dropoutModel([100, 100]);
  const x = sc.add(sc.random.uniform([100, 100], { seed: 1 }), 1);
  for (const ratio of [0.25, 0.75]) {
    const [y, mask] = m(x, sc.scalar(ratio, "float32"), sc.scalar(true)) as sc.Tensor[];
    assert.deepEqual([y!.dtype, y!.shape, mask!.dtype, mask!.shape], ["float32", [100, 100], "bool", [100, 100]]);
    const xs = values(x);
    const ys = values(y!);
    const ms = values(mask!);
    const scale = 1 / (1 - ratio);
    ms.forEach((k, i) => assert.ok(k ? Math.abs(ys[i]! - xs[i]! * scale) <= 1e-6 * scale * xs[i]! : ys[i] === 0, `element ${i}`));
    assert.ok(Math.abs(1 - mean(ms) - ratio) < 0.02, `dropped fraction ${1 - mean(ms)} at ratio ${ratio}`);
  }
  assert.equal(m.traceCount, 2, "ratio is a static input: each value traces once");
});

test("Dropout is the exact identity in inference mode, with ratio 0, and before opset 12; its mask is all ones", () => {
  const x = sc.tensor([1.5, -2, 0, 3.25], "float32");
  const m = dropoutModel([4]);
  for (const [ratio, training] of [[0.5, false], [0, true], [0.9, false]] as const) {
    const [y, mask] = m(x, sc.scalar(ratio, "float32"), sc.scalar(training)) as sc.Tensor[];
    assert.deepEqual(values(y!), [1.5, -2, 0, 3.25]);
    assert.deepEqual([mask!.dtype, values(mask!)], ["bool", [1, 1, 1, 1]]);
    assert.equal(m.concrete(x, sc.scalar(ratio, "float32"), sc.scalar(training)).toString().includes("random"), false, "no draw in the program");
  }
  // defaults: no ratio, no training_mode
  const d = load([onnx.makeNode("Dropout", ["x"], ["y"])], [vi("x", "float32", [4])], [vi("y", "float32", [4])]);
  assert.deepEqual(values(d(x) as sc.Tensor), [1.5, -2, 0, 3.25]);
  // opset 9: the mask has the data's type; opset 10: bool
  for (const [opset, dtype] of [[9, "float32"], [10, "bool"]] as const) {
    const old = load([onnx.makeNode("Dropout", ["x"], ["y", "mask"], { ratio: f(0.5) })], [vi("x", "float32", [4])], [vi("y", "float32", [4]), vi("mask", dtype, [4])], opset);
    const [y, mask] = old(x) as sc.Tensor[];
    assert.deepEqual(values(y!), [1.5, -2, 0, 3.25]);
    assert.deepEqual([mask!.dtype, values(mask!)], [dtype, [1, 1, 1, 1]]);
  }
});

test("inference-mode Dropout ignores a ratio computed at run time; training mode needs it known when traced", () => {
  // ratio = a draw (never known at trace time); training_mode a static input
  const m = load(
    [
      onnx.makeNode("Constant", [], ["c"], { value: sc.scalar(0, "float32") }),
      onnx.makeNode("RandomUniformLike", ["c"], ["r"], { high: f(0.5) }),
      onnx.makeNode("Dropout", ["x", "r", "t"], ["y", "mask"]),
    ],
    [vi("x", "float32", [4]), vi("t", "bool", [])],
    [vi("y", "float32", [4]), vi("mask", "bool", [4])],
  );
  const x = sc.tensor([1.5, -2, 0, 3.25], "float32");
  const [y, mask] = m(x, sc.scalar(false)) as sc.Tensor[];
  assert.deepEqual(values(y!), [1.5, -2, 0, 3.25]);
  assert.deepEqual([mask!.dtype, values(mask!)], ["bool", [1, 1, 1, 1]]);
  assert.throws(
    () => m(x, sc.scalar(true)),
    (e: Error) => e instanceof OnnxUnsupportedError && /Dropout: ratio must be known when the model is traced/.test(e.message),
  );
});

test("a seeded ONNX Dropout and nn.Dropout of the same seed drop the same elements, call by call (one dropout function)", () => {
  const m = dropoutModel([6, 7], { seed: 6 });
  const layer = new sc.nn.Dropout(0.3, { seed: 6 });
  const x = sc.add(sc.random.uniform([6, 7], { seed: 3 }), 1);
  for (let call = 0; call < 3; call++) {
    const [y] = m(x, sc.scalar(0.3, "float32"), sc.scalar(true)) as sc.Tensor[];
    assert.deepEqual(values(y!), values(layer.call(x) as sc.Tensor), `call ${call}`);
  }
});

test("training-mode Dropout differentiates as mask / (1 - ratio): tape and graph AD agree with the drawn mask", () => {
  const m = dropoutModel([50]);
  const x = sc.random.uniform([50], { seed: 2, dtype: "float32" });
  const c = sc.arange(1, 51, 1, "float32");
  const ratio = sc.scalar(0.5, "float32");
  const on = sc.scalar(true);
  const loss = (t: sc.Tensor) => sc.sum(sc.mul((m(t, ratio, on) as sc.Tensor[])[0]!, c));
  // the same global-generator key for the mask in each run
  sc.random.setSeed(30);
  const mask = values((m(x, ratio, on) as sc.Tensor[])[1]!);
  const want = mask.map((k, i) => (k ? 2 * (i + 1) : 0));
  sc.random.setSeed(30);
  assert.deepEqual(values(sc.grad(loss)(x) as sc.Tensor), want);
  sc.random.setSeed(30);
  assert.deepEqual(values(sc.grad(sc.stage(loss, { autograph: false }))(x) as sc.Tensor), want);
});

test("a random op in a Loop body draws anew in every iteration; an imported random model staged inside another function draws on every call", () => {
  sc.random.setSeed(14);
  const body = onnx.makeGraph(
    [onnx.makeNode("Identity", ["c"], ["c_out"]), onnx.makeNode("RandomUniformLike", ["x"], ["u"])],
    "body",
    [vi("i", "int64", []), vi("c", "bool", [])],
    [vi("c_out", "bool", []), vi("u", "float32", [3])],
  );
  const m = load(
    [onnx.makeNode("Constant", [], ["t"], { value: sc.scalar(true) }), onnx.makeNode("Loop", ["M", "t"], ["all"], { body })],
    [vi("M", "int64", []), vi("x", "float32", [3])],
    [vi("all", "float32", [null, 3])],
  );
  const rows = (m(sc.scalar(4, "int64"), sc.zeros([3])) as sc.Tensor).arraySync() as number[][];
  assert.equal(rows.length, 4);
  assert.equal(new Set(rows.map((r) => JSON.stringify(r))).size, 4, "four different rows");
  assert.ok(rows.flat().every((v) => v >= 0 && v < 1));

  const inner = likeModel("RandomNormalLike", {}, "float32", [5]);
  const outer = sc.stage((x: sc.Tensor) => sc.add(inner(x) as sc.Tensor, 10), { autograph: false });
  const a = values(outer(sc.zeros([5])));
  const b = values(outer(sc.zeros([5])));
  assert.notDeepEqual(a, b);
  assert.ok(a.every((v) => Number.isFinite(v) && v > 0));
});

test("bad attributes and inputs of the random ops are typed errors naming the node", () => {
  const x = sc.zeros([3]);
  const cases: [string, () => unknown, new (...a: never[]) => Error, RegExp][] = [
    ["no shape", () => load([onnx.makeNode("RandomUniform", [], ["y"])], [], [vi("y", "float32", [3])])(), OnnxModelError, /RandomUniform: needs the attribute shape/],
    ["negative dim", () => load([onnx.makeNode("RandomNormal", [], ["y"], { shape: [2, -1] })], [], [vi("y", "float32", null)])(), OnnxModelError, /invalid dimension -1/],
    ["int dtype", () => load([onnx.makeNode("RandomUniform", [], ["y"], { shape: [3], dtype: 6 })], [], [vi("y", "int32", [3])])(), OnnxModelError, /floating-point.*dtype attribute is int32/],
    ["high < low", () => likeModel("RandomUniformLike", { low: f(2), high: f(1) }, "float32", [3])(x), OnnxModelError, /high \(1\) must be >= low \(2\)/],
    ["infinite low", () => likeModel("RandomUniformLike", { low: f(-Infinity) }, "float32", [3])(x), OnnxModelError, /low must be finite/],
    ["negative scale", () => likeModel("RandomNormalLike", { scale: f(-1) }, "float32", [3])(x), OnnxModelError, /scale .* must be >= 0, got -1/],
    ["int input, no dtype", () => likeModel("RandomNormalLike", {}, "int32", [3])(sc.zeros([3], "int32")), OnnxModelError, /its input's dtype is int32; give a float dtype attribute/],
    ["float seed on Dropout", () => dropoutModel([3], { seed: f(1.5) })(x, sc.scalar(0.5, "float32"), sc.scalar(true)), OnnxModelError, /attribute seed has type FLOAT, expected INT/],
    ["int seed on RandomUniformLike", () => likeModel("RandomUniformLike", { seed: 3 }, "float32", [3])(x), OnnxModelError, /attribute seed has type INT, expected FLOAT/],
    ["infinite seed", () => likeModel("RandomUniformLike", { seed: f(Infinity) }, "float32", [3])(x), OnnxModelError, /seed must be a finite number/],
    ["int probabilities", () => likeModel("Bernoulli", {}, "int32", [3])(sc.zeros([3], "int32")), OnnxModelError, /Bernoulli: its input \(the probabilities\) must be a float tensor, got int32/],
    ["rank-1 logits", () => likeModel("Multinomial", {}, "float32", [3], "int32")(x), OnnxModelError, /must be \[batch, classes\], got shape \[3\]/],
    ["sample_size 0", () => load([onnx.makeNode("Multinomial", ["x"], ["y"], { sample_size: 0 })], [vi("x", "float32", [1, 3])], [vi("y", "int32", null)])(sc.zeros([1, 3])), OnnxModelError, /sample_size must be a positive integer, got 0/],
    ["float Multinomial dtype", () => load([onnx.makeNode("Multinomial", ["x"], ["y"], { dtype: 1 })], [vi("x", "float32", [1, 3])], [vi("y", "float32", null)])(sc.zeros([1, 3])), OnnxModelError, /dtype must be int32 or int64, got float32/],
    ["ratio 1 in training", () => dropoutModel([3])(x, sc.scalar(1, "float32"), sc.scalar(true)), OnnxModelError, /ratio must be in \[0, 1\) in training mode, got 1/],
    ["vector ratio", () => load([onnx.makeNode("Dropout", ["x", "r"], ["y"])], [vi("x", "float32", [3]), vi("r", "float32", [2])], [vi("y", "float32", [3])])(x, sc.tensor([0.1, 0.2], "float32")), OnnxModelError, /ratio must be a scalar, got shape \[2\]/],
    ["bfloat16 dtype", () => load([onnx.makeNode("RandomUniform", [], ["y"], { shape: [3], dtype: 16 })], [], [vi("y", "float32", [3])])(), OnnxUnsupportedError, /bfloat16/],
  ];
  for (const [what, run, cls, message] of cases) {
    assert.throws(run, (e: Error) => e instanceof cls && message.test(e.message), what);
  }
});

test("a model with random draws exports, and onnxruntime draws what it draws here; an inference-mode Dropout exports and runs in onnxruntime", async () => {
  const x = sc.tensor([1, -2, 3], "float32");
  for (const attrs of [{}, { seed: f(5) }]) {
    const u = likeModel("RandomUniformLike", attrs, "float32", [3]);
    u(x);
    // (the exported model reads the generator's state as it is now, and outputs it advanced)
    const exported = onnx.exportModel(u as never, [x]);
    const got = await onnx.runOnnxRuntime(exported.bytes, { [exported.inputNames[0]!]: x });
    assert.deepEqual(values(got[exported.outputNames[0]!]!), values(u(x) as sc.Tensor), `RandomUniformLike ${JSON.stringify(attrs)}`);
    assert.equal(exported.updatedVariables.length, 1, "the generator's state is an updated variable");
  }

  const d = dropoutModel([3]);
  const inputs = [x, sc.scalar(0.5, "float32"), sc.scalar(false)];
  const ours = d(...inputs) as sc.Tensor[];
  const exported = onnx.exportModel(d as never, inputs, { inputNames: ["x"], outputNames: ["y", "mask"] });
  const got = await onnx.runOnnxRuntime(exported.bytes, { x });
  assert.deepEqual(values(got.y!), values(ours[0]!));
  assert.deepEqual([got.mask!.dtype, values(got.mask!)], ["bool", [1, 1, 1]]);
});
