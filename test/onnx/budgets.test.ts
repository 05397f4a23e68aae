/**
 * Small models that ask for unbounded work: functions that call the next twice (inlining
 * doubles per level), constants that each fit maxElements but not together, and Loops whose
 * carried values or scan outputs grow while they run. Each is refused with OnnxLimitError
 * naming the limit, promptly, and the model within its limits runs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { fanOutModel } from "../util/onnx-crafted.js";

const { onnx } = sc;
const vi = onnx.makeValueInfo;

/** The fan-out model of test/util/onnx-crafted.ts (2^depth additions once inlined), loaded. */
function fanOut(depth: number, options: sc.onnx.LoadOptions = {}) {
  const bytes = fanOutModel(depth);
  return { bytes, fn: onnx.load(bytes, options) };
}

test("functions that call the next twice are refused past maxInlinedNodes, promptly (the depth guard does not bound fan-out)", () => {
  assert.equal((fanOut(6).fn(sc.scalar(0)) as sc.Tensor).item(), 64);
  const { bytes, fn } = fanOut(40);
  assert.ok(bytes.length < 4096);
  const t0 = Date.now();
  assert.throws(() => fn(sc.scalar(0)), (e: unknown) => e instanceof onnx.OnnxLimitError && /inline more than 16384 nodes \(the maxInlinedNodes load option\)/.test((e as Error).message));
  assert.ok(Date.now() - t0 < 20_000, `refused after ${Date.now() - t0} ms`);
  assert.throws(() => fanOut(6, { maxInlinedNodes: 100 }).fn(sc.scalar(0)), onnx.OnnxLimitError);
});

test("constants that each fit maxElements but not together are refused by maxTotalBytes before they are made", () => {
  // three ConstantOfShape [n, n] and their Sum: 4 n^2 float32 values
  const model = (n: number, options: sc.onnx.LoadOptions = {}) => {
    const nodes = [onnx.makeNode("Constant", [], ["s"], { value: sc.tensor([n, n], "int64") })];
    for (const k of [0, 1, 2]) nodes.push(onnx.makeNode("ConstantOfShape", ["s"], [`c${k}`], { value: sc.tensor([k + 1], "float32") }));
    nodes.push(onnx.makeNode("Sum", ["c0", "c1", "c2"], ["y"]));
    const bytes = onnx.modelBytes(onnx.makeModel(onnx.makeGraph(nodes, "g", [], [vi("y", "float32", [n, n])])));
    return { bytes, fn: onnx.load(bytes, options) };
  };
  const { bytes, fn } = model(16384);
  assert.ok(bytes.length < 400);
  const before = process.memoryUsage().rss;
  assert.throws(() => fn(), (e: unknown) => e instanceof onnx.OnnxLimitError && /ConstantOfShape/.test((e as Error).message) && /the maxTotalBytes load option/.test((e as Error).message));
  assert.ok(process.memoryUsage().rss - before < 2.5 * 2 ** 30, "refused before the third constant");
  // small ones run; the same under a small budget do not
  assert.deepEqual((model(2).fn() as sc.Tensor).arraySync(), [[6, 6], [6, 6]]);
  assert.throws(() => model(64, { maxTotalBytes: 4 * 64 * 64 * 3 }).fn(), (e: unknown) => e instanceof onnx.OnnxLimitError && /in all/.test((e as Error).message));
});

/** A Loop of M iterations whose body doubles its carried x (Concat x, x). */
function doubling(maxElements: number) {
  const body = onnx.makeGraph(
    [onnx.makeNode("Concat", ["x_in", "x_in"], ["x_out"], { axis: 0 }), onnx.makeNode("Identity", ["c_in"], ["c_out"])],
    "body",
    [vi("i", "int64", []), vi("c_in", "bool", []), vi("x_in", "float32", [null])],
    [vi("c_out", "bool", []), vi("x_out", "float32", [null])],
  );
  const g = onnx.makeGraph([onnx.makeNode("Loop", ["M", "", "x0"], ["x"], { body }, { name: "grow" })], "g", [vi("M", "int64", []), vi("x0", "float32", [1])], [vi("x", "float32", [null])]);
  return onnx.load(onnx.modelBytes(onnx.makeModel(g)), { maxElements });
}

test("a Loop's carried value that grows as it runs is held to maxElements when it is made (run-time shapes included)", { timeout: 60_000 }, () => {
  const fn = doubling(1 << 10);
  assert.deepEqual((fn(sc.scalar(10, "int64"), sc.tensor([1])) as sc.Tensor).shape, [1024]);
  assert.throws(
    () => fn(sc.scalar(24, "int64"), sc.tensor([1])),
    (e: unknown) => e instanceof onnx.OnnxLimitError && /grow/.test((e as Error).message) && /grew past the limit of 1024 elements/.test((e as Error).message) && /maxElements/.test((e as Error).message),
  );
});

test("a Loop's scan output is held to maxElements as its rows are stacked", { timeout: 60_000 }, () => {
  // a constant-size carried value, many iterations: the stacked rows pass the limit
  const body = onnx.makeGraph(
    [onnx.makeNode("Identity", ["x_in"], ["x_out"]), onnx.makeNode("Identity", ["c_in"], ["c_out"]), onnx.makeNode("Identity", ["x_in"], ["scan"])],
    "body",
    [vi("i", "int64", []), vi("c_in", "bool", []), vi("x_in", "float32", [16])],
    [vi("c_out", "bool", []), vi("x_out", "float32", [16]), vi("scan", "float32", [16])],
  );
  const g = onnx.makeGraph([onnx.makeNode("Loop", ["M", "", "x0"], ["x", "ys"], { body }, { name: "rows" })], "g", [vi("M", "int64", []), vi("x0", "float32", [16])], [vi("x", "float32", [16]), vi("ys", "float32", null)]);
  const fn = onnx.load(onnx.modelBytes(onnx.makeModel(g)), { maxElements: 1024 });
  assert.deepEqual((fn(sc.scalar(64, "int64"), sc.zeros([16])) as sc.Tensor[])[1]!.shape, [64, 16]);
  assert.throws(() => fn(sc.scalar(65, "int64"), sc.zeros([16])), (e: unknown) => e instanceof onnx.OnnxLimitError && /rows/.test((e as Error).message) && /scan output/.test((e as Error).message));
});
