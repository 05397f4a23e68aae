/**
 * An imported Loop whose trip count is decided at run time (a graph input, or no count and a
 * condition the body computes) could run forever: a staged guard stops it after the
 * maxLoopIterations load option with OnnxLimitError naming the node, instead of hanging the
 * process (the ONNX fuzzer found such a model: a mutation removed a Loop's trip count and left
 * its condition always true). The guard is Stagecraft's, not the model's: export leaves it out,
 * and gradients flow through the guarded loop.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const { onnx } = sc;
const vi = onnx.makeValueInfo;

/** s += x while the body's condition holds; cond_out = `condOut` applied to (s_out). */
function loopModel(loopInputs: string[], modelInputs: Record<string, unknown>[], condNodes: Record<string, unknown>[], maxLoopIterations: number) {
  const body = onnx.makeGraph(
    [onnx.makeNode("Add", ["s_in", "x"], ["s_out"]), ...condNodes],
    "body",
    [vi("i", "int64", []), vi("cond_in", "bool", []), vi("s_in", "float32", [])],
    [vi("cond_out", "bool", []), vi("s_out", "float32", [])],
  );
  const g = onnx.makeGraph(
    [onnx.makeNode("Constant", [], ["t"], { value: sc.scalar(true) }), onnx.makeNode("Loop", loopInputs, ["s"], { body }, { name: "the_loop" })],
    "m",
    modelInputs,
    [vi("s", "float32", [])],
  );
  const bytes = onnx.modelBytes(onnx.makeModel(g));
  return { bytes, fn: onnx.load(bytes, { maxLoopIterations }) };
}

const forever = [onnx.makeNode("Identity", ["cond_in"], ["cond_out"])];
const belowTen = [onnx.makeNode("Constant", [], ["ten"], { value: sc.scalar(10, "float32") }), onnx.makeNode("Less", ["s_out", "ten"], ["cond_out"])];

test("a Loop with no trip count whose condition stays true stops with OnnxLimitError after maxLoopIterations", { timeout: 60_000 }, () => {
  const { fn } = loopModel(["", "t", "s0"], [vi("s0", "float32", []), vi("x", "float32", [])], forever, 500);
  assert.throws(
    () => fn(sc.scalar(0), sc.scalar(1)),
    (e: unknown) => e instanceof onnx.OnnxLimitError && /the_loop/.test((e as Error).message) && /more than 500 iterations/.test((e as Error).message) && /maxLoopIterations/.test((e as Error).message),
  );
  // the process goes on: the same function still runs (and fails the same way), nothing is left behind
  assert.throws(() => fn(sc.scalar(0), sc.scalar(1)), onnx.OnnxLimitError);
});

test("a run-time trip count over the limit is refused when the loop reaches it; counts within it run", { timeout: 60_000 }, () => {
  const { fn } = loopModel(["M", "t", "s0"], [vi("M", "int64", []), vi("s0", "float32", []), vi("x", "float32", [])], forever, 100);
  assert.equal((fn(sc.scalar(100, "int64"), sc.scalar(0), sc.scalar(2)) as sc.Tensor).dataSync()[0], 200);
  assert.throws(() => fn(sc.scalar(1e12, "int64"), sc.scalar(0), sc.scalar(2)), onnx.OnnxLimitError);
});

test("a condition-driven Loop within the limit gives its result, differentiates, and exports without the guard (onnxruntime agrees)", async () => {
  const { fn } = loopModel(["", "t", "s0"], [vi("s0", "float32", []), vi("x", "float32", [])], belowTen, 1000);
  const s = fn(sc.scalar(0.5), sc.scalar(1.5)) as sc.Tensor; // 0.5, 2, 3.5, ..., 11 after 7 steps
  assert.equal(s.dataSync()[0], 11);
  // d s / d x = the number of iterations (7), d s / d s0 = 1
  const [ds0, dx] = sc.grad((a: sc.Tensor, b: sc.Tensor) => fn(a, b) as sc.Tensor, { argnums: [0, 1] })(sc.scalar(0.5), sc.scalar(1.5)) as sc.Tensor[];
  assert.equal(ds0!.dataSync()[0], 1);
  assert.equal(dx!.dataSync()[0], 7);
  const exported = onnx.exportFunction(fn, sc.spec([], "float32", "s0"), sc.spec([], "float32", "x"));
  const proto = onnx.decode("ModelProto", exported);
  const opTypes = JSON.stringify(proto.graph, (k, v) => (k === "rawData" ? undefined : v));
  assert.match(opTypes, /"op_type":"Loop"/);
  assert.doesNotMatch(opTypes, /assert/i, "the guard is not exported");
  const got = await onnx.runOnnxRuntime(exported, { s0: sc.scalar(0.5), x: sc.scalar(1.5) });
  assert.equal(Object.values(got)[0]!.dataSync()[0], 11);
});

test("an assertion the program states is still refused by export: only guards are left out", () => {
  const f = sc.stage((x: sc.Tensor) => {
    sc.assert(sc.greater(sc.sum(x), 0), "positive");
    return sc.mul(x, 2);
  });
  assert.throws(() => onnx.exportFunction(f, sc.spec([2], "float32", "x")), (e: unknown) => e instanceof onnx.OnnxUnsupportedError && /cannot export op assert/.test((e as Error).message));
});
