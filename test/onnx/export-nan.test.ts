/**
 * NaN, infinities and signed zeros: eager = staged = exported (onnxruntime-node) for the ops whose
 * onnxruntime kernels drop NaN or lose -0 (docs/onnx.md, "Special values"), and the gradients of
 * max/min/maximum where the result is NaN. The random programs of export-fuzz.test.ts found the
 * cases of CLOSE_CASES and the empty groups' mean and logSumExp.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const X = [1e-30, 1.449, 0, NaN, -0, Infinity, -Infinity, -2];
const flat = (r: sc.Tensor | sc.Tensor[]): sc.Tensor[] => (Array.isArray(r) ? r : [r]);
/** NaN equals NaN, -0 differs from +0. */
const show = (t: sc.Tensor): string[] => Array.from(t.dataSync() as ArrayLike<number>, (v) => (Object.is(v, -0) ? "-0" : String(v)));

async function agree(what: string, f: (x: sc.Tensor) => sc.Tensor | sc.Tensor[], x: sc.Tensor): Promise<void> {
  const eager = flat(f(x));
  const staged = flat(sc.stage(f)(x));
  const m = sc.onnx.exportModel(sc.stage(f), [x]);
  const got = await sc.onnx.runOnnxRuntime(m.bytes, { [m.inputNames[0]!]: x });
  const engine = flat(sc.stage(f, { engine: "onnxruntime" })(x));
  eager.forEach((e, i) => {
    assert.deepEqual(show(staged[i]!), show(e), `${what} ${x.dtype}: staged output ${i}`);
    assert.deepEqual(show(got[m.outputNames[i]!]!), show(e), `${what} ${x.dtype}: onnxruntime output ${i}`);
    assert.deepEqual(show(engine[i]!), show(e), `${what} ${x.dtype}: engine output ${i}`);
  });
}

const CASES: [string, (x: sc.Tensor) => sc.Tensor | sc.Tensor[], number[]][] = [
  ["max", (x) => sc.max(x), [8]],
  ["min", (x) => sc.min(x), [8]],
  ["max over axis 1", (x) => sc.max(x, 1), [2, 4]],
  ["min over axis 0, keepDims", (x) => sc.min(x, 0, true), [2, 4]],
  ["logSumExp over axis 1", (x) => sc.logSumExp(x, 1), [2, 4]],
  ["argMax", (x) => sc.argMax(x), [8]],
  ["argMin over axis 1", (x) => sc.argMin(x, 1), [2, 4]],
  ["argMax over axis 0", (x) => sc.argMax(x, 0, true), [4, 2]],
  ["sort", (x) => sc.sort(x), [8]],
  ["sort descending", (x) => sc.sort(x, { descending: true }), [8]],
  ["argsort along axis 0", (x) => sc.argsort(x, { axis: 0 }), [4, 2]],
  ["argsort descending", (x) => sc.argsort(x, { descending: true }), [2, 4]],
  ["topK", (x) => sc.topK(x, 3), [8]],
  ["topK unsorted", (x) => sc.topK(x, 5, { sorted: false }), [8]],
  ["maximum with 0", (x) => sc.maximum(x, 0), [8]],
  ["minimum with 0", (x) => sc.minimum(x, 0), [8]],
  ["maximum with its negation", (x) => sc.maximum(x, sc.neg(x)), [8]],
  ["clip", (x) => sc.clip(x, -1, 1), [8]],
  ["where", (x) => sc.where(sc.greater(x, 1), 5, x), [8]],
  ["leakyRelu", (x) => sc.leakyRelu(x), [8]],
  ["maxPool2d", (x) => sc.maxPool2d(x, { kernelSize: 2 }), [1, 1, 2, 4]],
  ["maxPool2d gradient", (x) => sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.maxPool2d(t, { kernelSize: 2 }), sc.tensor([[[[1, 2]]]], t.dtype))))(x) as sc.Tensor, [1, 1, 2, 4]],
];

for (const [what, f, shape] of CASES) {
  test(`special values agree eager = staged = onnxruntime: ${what}`, async () => {
    for (const d of ["float64", "float32"] as const) await agree(what, f, sc.tensor(X, d, shape));
    // the NaN first in its group too (onnxruntime's kernels keep or drop it by position)
    await agree(what, f, sc.tensor([NaN, 1, -0, 0, 2, NaN, Infinity, -Infinity], "float32", shape));
  });
}

/**
 * Ops whose results round differently in onnxruntime (erf runs in float32 there, expm1 and
 * logSoftmax are computed another way): NaN, infinities and the sign of zeros must agree exactly,
 * finite values within rtol 1e-4. Found by the export fuzzer (export-fuzz.test.ts).
 */
const CLOSE_CASES: [string, (x: sc.Tensor) => sc.Tensor, number[]][] = [
  ["elu (elu(-0) is -0)", (x) => sc.elu(x), [8]],
  ["expm1 (expm1(-0) is -0)", (x) => sc.expm1(x), [8]],
  ["erf (erf(-0) is -0)", (x) => sc.erf(x), [8]],
  ["cumsum along axis 0 (a leading -0 stays -0)", (x) => sc.cumsum(x, 0), [4, 2]],
  ["cumsum along axis 1, reversed", (x) => sc.cumsum(x, 1, { reverse: true }), [2, 4]],
  ["logSoftmax over axis 0 (a group with NaN or +Inf is NaN)", (x) => sc.logSoftmax(x, 0), [4, 2]],
  ["logSoftmax over axis 1", (x) => sc.logSoftmax(x, 1), [2, 4]],
  ["logSoftmax over an axis of size 1 (a lone -0 gives +0: (x - max) - log(sum))", (x) => sc.logSoftmax(x, 1), [8, 1]],
];

function closeValues(got: sc.Tensor, want: sc.Tensor, what: string): void {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  const a = got.dataSync() as ArrayLike<number>;
  const b = want.dataSync() as ArrayLike<number>;
  for (let i = 0; i < b.length; i++) {
    const [x, y] = [a[i]!, b[i]!];
    const ok = Object.is(x, y) || (Number.isFinite(x) && Number.isFinite(y) && x !== 0 && y !== 0 && Math.abs(x - y) <= 1e-4 * Math.abs(y));
    assert.ok(ok, `${what}: element ${i} is ${Object.is(x, -0) ? "-0" : x}, eager ${Object.is(y, -0) ? "-0" : y}`);
  }
}

for (const [what, f, shape] of CLOSE_CASES) {
  test(`special values agree eager = staged = onnxruntime (to rounding): ${what}`, async () => {
    for (const x of [sc.tensor(X, "float64", shape), sc.tensor(X, "float32", shape), sc.tensor([NaN, 1, -0, 0, 2, NaN, Infinity, -Infinity], "float32", shape), sc.tensor([-0, -0, 1, -0, -2, Infinity, 0.5, -0], "float64", shape)]) {
      const eager = f(x);
      closeValues(sc.stage(f)(x), eager, `${what} ${x.dtype}: staged`);
      const m = sc.onnx.exportModel(sc.stage(f), [x]);
      const got = await sc.onnx.runOnnxRuntime(m.bytes, { [m.inputNames[0]!]: x });
      closeValues(got[m.outputNames[0]!]!, eager, `${what} ${x.dtype}: onnxruntime`);
    }
  });
}

test("cumsum sums from -0 (IEEE's identity): cumsum's entries are sums as sum gives them; an exclusive scan starts at +0", () => {
  const x = sc.tensor([-0, -0, 2, -0], "float64");
  assert.deepEqual(show(sc.cumsum(x)), ["-0", "-0", "2", "2"]);
  assert.deepEqual(show(sc.cumsum(x, 0, { reverse: true })), ["2", "2", "2", "-0"]);
  assert.deepEqual(show(sc.cumsum(x, 0, { exclusive: true })), ["0", "-0", "-0", "2"]);
  assert.deepEqual(show(sc.cumsum(sc.tensor([[-0, 1], [-0, -0]]), 0)), ["-0", "1", "-0", "1"]);
  assert.deepEqual(show(sc.sum(sc.tensor([-0, -0]))), ["-0"]);
});

test("max/min of a group holding NaN: the gradient goes to the NaNs (evenly)", () => {
  const x = sc.tensor([1, NaN, 3, NaN], "float64");
  for (const op of [sc.max, sc.min]) {
    const g = sc.grad((t: sc.Tensor) => op(t))(x) as sc.Tensor;
    assert.deepEqual(Array.from(g.dataSync()), [0, 0.5, 0, 0.5]);
    const gs = sc.stage(sc.grad((t: sc.Tensor) => op(t)))(x) as sc.Tensor;
    assert.deepEqual(Array.from(gs.dataSync()), [0, 0.5, 0, 0.5]);
  }
  const [ga, gb] = sc.grad((a: sc.Tensor, b: sc.Tensor) => sc.sum(sc.maximum(a, b)), { argnums: [0, 1] })(sc.tensor([NaN, 1, NaN], "float64"), sc.tensor([2, NaN, NaN], "float64")) as sc.Tensor[];
  assert.deepEqual([Array.from(ga!.dataSync()), Array.from(gb!.dataSync())], [[1, 0, 1], [0, 1, 0]]);
  const [ma, mb] = sc.grad((a: sc.Tensor, b: sc.Tensor) => sc.sum(sc.minimum(a, b)), { argnums: [0, 1] })(sc.tensor([NaN, 1, NaN], "float64"), sc.tensor([2, NaN, NaN], "float64")) as sc.Tensor[];
  assert.deepEqual([Array.from(ma!.dataSync()), Array.from(mb!.dataSync())], [[1, 0, 1], [0, 1, 0]]);
});

test("empty tensors: max/argMax of an empty group are ValueErrors staged as eager; sort/topK of empty agree", async () => {
  const e = sc.zeros([2, 0], "float32");
  for (const f of [(x: sc.Tensor) => sc.max(x, 1), (x: sc.Tensor) => sc.min(x), (x: sc.Tensor) => sc.argMax(x, 1)]) {
    assert.throws(() => f(e), sc.ValueError);
    assert.throws(() => sc.stage(f)(e), sc.ValueError);
    assert.throws(() => sc.stage(f, { engine: "onnxruntime" })(e), sc.ValueError);
  }
  // reducing the non-empty axis of an empty tensor is an empty result everywhere
  await agree("max over axis 0 of [2, 0]", (x) => sc.max(x, 0), e);
  await agree("sort of [2, 0]", (x) => sc.sort(x), e);
  await agree("topK 0 of [2, 0]", (x) => sc.topK(x, 0), e);
  await agree("sort of [0, 3] along axis 0", (x) => sc.sort(x, { axis: 0 }), sc.zeros([0, 3]));
  // the mean of an empty group is NaN (0 / 0), its logSumExp -Inf (log 0), in onnxruntime too
  await agree("mean over axis 1 of [2, 0]", (x) => sc.mean(x, 1), e);
  await agree("variance over axis 1 of [2, 0]", (x) => sc.variance(x, 1), e);
  await agree("logSumExp over axis 1 of [2, 0]", (x) => sc.logSumExp(x, 1), e);
  await agree("logSumExp of [0, 3] over axis 0", (x) => sc.logSumExp(x, 0), sc.zeros([0, 3], "float64"));
});
