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
import { guardedWhileLoop } from "../../src/staging/control-flow.js";
import { replay } from "../../src/staging/replay.js";

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
  assert.equal(proto.graph!.node.find((n) => n.op_type === "Loop")!.input[0], "", "nor is its limit: the model's Loop has no trip count");
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

test("a Loop that ends by itself at exactly maxLoopIterations runs and gives its value; one iteration more is refused", { timeout: 60_000 }, () => {
  // condition-driven: 0.5 + 1.5 k < 10 holds for k = 1 .. 6, so the loop runs exactly 7 iterations
  const exact = loopModel(["", "t", "s0"], [vi("s0", "float32", []), vi("x", "float32", [])], belowTen, 7).fn;
  assert.equal((exact(sc.scalar(0.5), sc.scalar(1.5)) as sc.Tensor).dataSync()[0], 11);
  const short = loopModel(["", "t", "s0"], [vi("s0", "float32", []), vi("x", "float32", [])], belowTen, 6).fn;
  assert.throws(() => short(sc.scalar(0.5), sc.scalar(1.5)), (e: unknown) => e instanceof onnx.OnnxLimitError && /the_loop/.test((e as Error).message) && /more than 6 iterations/.test((e as Error).message));
  // a run-time count and a condition: whichever ends the loop at the limit, it passes
  const both = loopModel(["M", "t", "s0"], [vi("M", "int64", []), vi("s0", "float32", []), vi("x", "float32", [])], belowTen, 7).fn;
  assert.equal((both(sc.scalar(7, "int64"), sc.scalar(0.5), sc.scalar(1.5)) as sc.Tensor).dataSync()[0], 11); // count and condition end together
  assert.equal((both(sc.scalar(8, "int64"), sc.scalar(0.5), sc.scalar(1.5)) as sc.Tensor).dataSync()[0], 11); // the condition ends it at the limit
  assert.equal((both(sc.scalar(7, "int64"), sc.scalar(0.5), sc.scalar(1)) as sc.Tensor).dataSync()[0], 7.5); // the count ends it at the limit
  assert.throws(() => both(sc.scalar(8, "int64"), sc.scalar(0.5), sc.scalar(1)), onnx.OnnxLimitError); // both still want an 8th
  // the gradient of a loop that passes the limit is refused too (the tape's loop keeps the guard)
  assert.throws(() => sc.grad((a: sc.Tensor) => short(a, sc.scalar(1.5)) as sc.Tensor)(sc.scalar(0.5)), onnx.OnnxLimitError);
});

/** Every node of a graph and of its regions, with whether it sits in a region. */
function* allNodes(g: { nodes: readonly { op: string; attrs: Record<string, unknown>; regions: readonly unknown[] }[] }, inRegion = false): Generator<{ op: string; attrs: Record<string, unknown>; inRegion: boolean }> {
  for (const node of g.nodes) {
    yield { op: node.op, attrs: node.attrs, inRegion };
    for (const r of node.regions) yield* allNodes(r as Parameters<typeof allNodes>[0], true);
  }
}

test("the guarded Loop stages its limit as the while's maxIterations and one check after it, with one assertion however often it is traced", () => {
  const load = () => loopModel(["M", "t", "s0"], [vi("M", "int64", []), vi("s0", "float32", []), vi("x", "float32", [])], belowTen, 100).fn;
  const specs = [sc.spec([], "int64", "M"), sc.spec([], "float32", "s0"), sc.spec([], "float32", "x")];
  const graphOf = (fn: ReturnType<typeof load>) => [...allNodes(fn.concrete(...specs).graph)];
  const nodes = graphOf(load());
  const whiles = nodes.filter((n) => n.op === "while");
  assert.equal(whiles.length, 1);
  assert.equal(whiles[0]!.attrs.maxIterations, 100);
  assert.equal(whiles[0]!.attrs.maxIterationsIsGuard, true);
  const asserts = nodes.filter((n) => n.op === "assert");
  assert.equal(asserts.length, 1, "one check for the loop");
  assert.equal(asserts[0]!.inRegion, false, "the check is after the loop, not in its iterations");
  // a second load of the same model (another trace) reuses the node's assertion: none is added per trace
  const again = graphOf(load()).filter((n) => n.op === "assert");
  assert.equal(again[0]!.attrs.fnId, asserts[0]!.attrs.fnId);
});

test("a guarded Loop with a run-time count exports the model's own count only: onnxruntime runs past Stagecraft's limit", async () => {
  const { fn } = loopModel(["M", "t", "s0"], [vi("M", "int64", []), vi("s0", "float32", []), vi("x", "float32", [])], forever, 100);
  const exported = onnx.exportFunction(fn, sc.spec([], "int64", "M"), sc.spec([], "float32", "s0"), sc.spec([], "float32", "x"));
  const loops = onnx.decode("ModelProto", exported).graph!.node.filter((n) => n.op_type === "Loop");
  assert.equal(loops.length, 1);
  assert.equal(loops[0]!.input[0], "", "no trip count: the limit lives in the exported condition, as the model's M");
  const got = await onnx.runOnnxRuntime(exported, { M: sc.scalar(150, "int64"), s0: sc.scalar(0), x: sc.scalar(2) });
  assert.equal(Object.values(got)[0]!.dataSync()[0], 300);
  assert.throws(() => fn(sc.scalar(150, "int64"), sc.scalar(0), sc.scalar(2)), onnx.OnnxLimitError);
});

test("a guarded whileLoop stops at maxIterations when staged, and export writes no trip count for it", async () => {
  const countTo = (guard: boolean) => sc.stage((x: sc.Tensor) => (guard ? guardedWhileLoop : sc.whileLoop)((s) => sc.less(s!, 100), (s) => [sc.add(s!, 1)], [x], { maxIterations: 5 })[0]!);
  for (const guard of [false, true]) {
    assert.equal((countTo(guard)(sc.scalar(0)) as sc.Tensor).dataSync()[0], 5, "staged, both stop at 5");
    const exported = onnx.exportFunction(countTo(guard), sc.spec([], "float32", "x"));
    const loop = onnx.decode("ModelProto", exported).graph!.node.find((n) => n.op_type === "Loop")!;
    assert.equal(loop.input[0] === "", guard, "only the program's own bound is the Loop's trip count");
    const got = await onnx.runOnnxRuntime(exported, { x: sc.scalar(0) });
    assert.equal(Object.values(got)[0]!.dataSync()[0], guard ? 100 : 5);
  }
  // a replay of the graph (as gradients make) keeps the loop a guarded one
  const cf = countTo(true).concrete(sc.scalar(0));
  const replayed = sc.stage((x: sc.Tensor) => replay(cf.graph, cf.library, [x])[0]!).concrete(sc.scalar(0));
  const replayedWhile = [...allNodes(replayed.graph)].find((n) => n.op === "while")!;
  assert.deepEqual([replayedWhile.attrs.maxIterations, replayedWhile.attrs.maxIterationsIsGuard], [5, true]);
});

test("maxLoopIterations must be a non-negative integer, or Infinity for no limit (the Loop then carries no guard)", () => {
  for (const bad of [-1, 1.5, Number.NaN]) {
    assert.throws(() => loopModel(["", "t", "s0"], [vi("s0", "float32", []), vi("x", "float32", [])], belowTen, bad), (e: unknown) => e instanceof sc.ValueError && /maxLoopIterations must be a non-negative integer/.test((e as Error).message));
  }
  const { fn } = loopModel(["", "t", "s0"], [vi("s0", "float32", []), vi("x", "float32", [])], belowTen, Infinity);
  assert.equal((fn(sc.scalar(0.5), sc.scalar(1.5)) as sc.Tensor).dataSync()[0], 11);
  const nodes = [...allNodes(fn.concrete(sc.spec([], "float32", "s0"), sc.spec([], "float32", "x")).graph)];
  assert.equal(nodes.filter((n) => n.op === "assert").length, 0);
  assert.equal(nodes.find((n) => n.op === "while")!.attrs.maxIterations, undefined);
});

/**
 * `depth` nested Loops, each of trip count `trips` (a Constant, or the model's input M when
 * `runTime`), the innermost adding 1 to a carried float: s = trips^depth.
 */
function nestedLoops(depth: number, trips: number, runTime: boolean, options: sc.onnx.LoadOptions) {
  const counter = (k: number): Record<string, unknown>[] => (runTime ? [] : [onnx.makeNode("Constant", [], [`n${k}`], { value: sc.tensor([trips], "int64") })]);
  let inner = onnx.makeGraph(
    [onnx.makeNode("Constant", [], ["one"], { value: sc.scalar(1, "float32") }), onnx.makeNode("Add", [`s${depth}`, "one"], [`t${depth}`]), onnx.makeNode("Identity", [`c${depth}`], [`co${depth}`])],
    `body${depth}`,
    [vi(`i${depth}`, "int64", []), vi(`c${depth}`, "bool", []), vi(`s${depth}`, "float32", [])],
    [vi(`co${depth}`, "bool", []), vi(`t${depth}`, "float32", [])],
  );
  for (let k = depth - 1; k >= 1; k--) {
    inner = onnx.makeGraph(
      [...counter(k + 1), onnx.makeNode("Loop", [runTime ? "M" : `n${k + 1}`, "", `s${k}`], [`t${k}`], { body: inner }, { name: `loop${k + 1}` }), onnx.makeNode("Identity", [`c${k}`], [`co${k}`])],
      `body${k}`,
      [vi(`i${k}`, "int64", []), vi(`c${k}`, "bool", []), vi(`s${k}`, "float32", [])],
      [vi(`co${k}`, "bool", []), vi(`t${k}`, "float32", [])],
    );
  }
  const g = onnx.makeGraph(
    [...counter(1), onnx.makeNode("Loop", [runTime ? "M" : "n1", "", "s0"], ["s"], { body: inner }, { name: "loop1" })],
    "m",
    [...(runTime ? [vi("M", "int64", [1])] : []), vi("s0", "float32", [])],
    [vi("s", "float32", [])],
  );
  return onnx.load(onnx.modelBytes(onnx.makeModel(g)), options);
}

test("nested Loops multiply: known trip counts past maxTotalIterations in all are refused while tracing (three of 4,096 would run for hours)", () => {
  const t0 = Date.now();
  assert.throws(
    () => nestedLoops(3, 4096, false, {})(sc.scalar(0)),
    (e: unknown) => e instanceof onnx.OnnxLimitError && /loop3/.test((e as Error).message) && /6\.872e\+10 iterations in all/.test((e as Error).message) && /maxTotalIterations/.test((e as Error).message),
  );
  assert.ok(Date.now() - t0 < 20_000);
  // each loop is within maxLoopIterations; their product within the total runs
  assert.equal((nestedLoops(3, 4, false, { maxTotalIterations: 64 })(sc.scalar(0)) as sc.Tensor).item(), 64);
  assert.throws(() => nestedLoops(3, 4, false, { maxTotalIterations: 63 })(sc.scalar(0)), onnx.OnnxLimitError);
});

test("nested Loops with run-time trip counts count their iterations in all as they run: OnnxLimitError past maxTotalIterations", { timeout: 60_000 }, () => {
  const fn = nestedLoops(2, 0, true, { maxTotalIterations: 1000 });
  // 30 outer + 30 * 30 inner = 930 iterations: within; 40 + 1600 are not, though each loop is within maxLoopIterations
  assert.equal((fn(sc.tensor([30], "int64"), sc.scalar(0)) as sc.Tensor).item(), 900);
  assert.throws(
    () => fn(sc.tensor([40], "int64"), sc.scalar(0)),
    (e: unknown) => e instanceof onnx.OnnxLimitError && /ran more than 1000 iterations in all/.test((e as Error).message) && /maxTotalIterations/.test((e as Error).message),
  );
  // the count starts again with each run
  for (let k = 0; k < 3; k++) assert.equal((fn(sc.tensor([30], "int64"), sc.scalar(0)) as sc.Tensor).item(), 900);
  // and export leaves the count out (onnxruntime runs the model's own loops)
  const exported = onnx.exportFunction(fn, sc.spec([1], "int64", "M"), sc.spec([], "float32", "s0"));
  assert.doesNotMatch(JSON.stringify(onnx.decode("ModelProto", exported).graph, (k, v) => (k === "raw_data" ? undefined : v)), /hostCall|onnx_loop_budget/);
});

test("maxRunMs: a run-time trip count of 2^40 stops with OnnxLimitError at the deadline, not after maxLoopIterations", { timeout: 60_000 }, () => {
  const { bytes } = loopModel(["M", "t", "s0"], [vi("M", "int64", []), vi("s0", "float32", []), vi("x", "float32", [])], forever, 2 ** 24);
  const timed = onnx.load(bytes, { maxRunMs: 200 });
  const t0 = Date.now();
  assert.throws(() => timed(sc.scalar(2 ** 40, "int64"), sc.scalar(0), sc.scalar(1)), (e: unknown) => e instanceof onnx.OnnxLimitError && /the_loop/.test((e as Error).message) && /longer than 200 ms \(the maxRunMs load option\)/.test((e as Error).message));
  assert.ok(Date.now() - t0 < 10_000, `stopped after ${Date.now() - t0} ms`);
  assert.equal((timed(sc.scalar(10, "int64"), sc.scalar(0), sc.scalar(1)) as sc.Tensor).item(), 10);
});

test("every numeric limit option is a non-negative integer or Infinity: NaN, -1 and 1.5 are refused, naming the option", () => {
  const bytes = onnx.modelBytes(onnx.makeModel(onnx.makeGraph([onnx.makeNode("Neg", ["x"], ["y"])], "g", [vi("x", "float32", [1])], [vi("y", "float32", [1])])));
  for (const key of ["maxElements", "maxLoopIterations", "maxTotalIterations", "maxTotalBytes", "maxInlinedNodes", "maxRunMs"]) {
    for (const bad of [Number.NaN, -1, 1.5, "7"]) {
      assert.throws(() => onnx.load(bytes, { [key]: bad }), (e: unknown) => e instanceof sc.ValueError && new RegExp(`${key} must be a non-negative integer`).test((e as Error).message), `${key}: ${String(bad)}`);
    }
    assert.equal((onnx.load(bytes, { [key]: Infinity })(sc.tensor([2])) as sc.Tensor).item(), -2);
  }
});
