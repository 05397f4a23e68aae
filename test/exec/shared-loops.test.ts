// A large graph's loops are functions (exec/compiled/codegen.ts loopCall, loop-kernels.ts)
// rather than inlined in its segments, so that a graph of repeated steps warms up in V8 in a
// few calls: one function per distinct loop and fixed arrays in an instance, and one per loop
// and dtypes across graphs for loops on no fixed array. Here every graph counts as large.
import { test } from "node:test";
import assert from "node:assert/strict";

// (set before anything imports core/config.ts; every loop counts as large too: small ones are
// shared regardless of fixed arrays, shared-small-loops.test.ts)
process.env.STAGECRAFT_LOOP_FUNCTIONS_CHARS = "0";
process.env.STAGECRAFT_SHARED_LOOP_WORK = "0";
const { Rng } = await import("../util/rng.js");
const sc = await import("../../src/api/index.js");
const { compileGraph, interpretExecutor, setDefaultExecutor, createCompiledExecutor } = await import("../../src/api/internals.js");
type Tensor = import("../../src/api/index.js").Tensor;

setDefaultExecutor(createCompiledExecutor(0));

/** Two steps of the same layer: a product and an elementwise chain, twice. */
const twoLayers = (x: Tensor, w: Tensor) => sc.tanh(sc.matmul(sc.tanh(sc.matmul(x, w).add(1)), w).add(1));
/** One loop on the graph's inputs, into its output: no fixed array. */
const product = (x: Tensor, y: Tensor) => sc.tanh(x.mul(y));

function values(n: number, seed: number): number[] {
  const r = new Rng(seed);
  return Array.from({ length: n }, () => r.uniform(-1, 1));
}

function compiled(fn: (...xs: Tensor[]) => Tensor, args: Tensor[]) {
  const cf = sc.stage(fn).concrete(...args);
  return compileGraph(cf.graph, cf.library, args.map((a) => a.shape));
}

/** The names of the cross-graph loop functions a compiled graph calls (their sources follow its code). */
function sharedLoops(source: string): Set<string> {
  return new Set([...source.matchAll(/^function ((?:ew|mm|red)\d+)\(/gm)].map((m) => m[1]!));
}

/** Bit for bit what the interpreter computes. */
function assertAsInterpreter(fn: (...xs: Tensor[]) => Tensor, args: Tensor[]): void {
  const got = sc.stage(fn)(...args);
  setDefaultExecutor(interpretExecutor);
  const want = sc.stage(fn)(...args);
  setDefaultExecutor(createCompiledExecutor(0));
  assert.equal(got.dtype, want.dtype);
  const g = got.dataSync(),
    e = want.dataSync();
  for (let i = 0; i < e.length; i++) assert.ok(Object.is(g[i], e[i]), `${got.dtype} element ${i}: ${g[i]} vs ${e[i]}`);
}

test("loops are functions of the instance, called from the segments, with the interpreter's bits", () => {
  const x = sc.tensor(values(12, 1), "float32", [3, 4]),
    w = sc.tensor(values(16, 2), "float32", [4, 4]);
  const c = compiled(twoLayers, [x, w]);
  const fns = [...c.source.matchAll(/^function ((?:ew|mm|red)_n\d+)\(/gm)].map((m) => m[1]!);
  assert.equal(fns.filter((n) => n.startsWith("mm")).length, 2, `a function per product (other output buffers):\n${c.source}`);
  const segments = [...c.source.matchAll(/^function seg\d+\(dev\) \{\n([\s\S]*?)\n\}$/gm)].map((m) => m[1]!);
  assert.ok(segments.length > 0);
  for (const s of segments) assert.doesNotMatch(s, /for \(/, "no loop inlined in a segment");
  const calls = segments.join("\n").match(/^(?:ew|mm|red)_n\d+\(/gm) ?? [];
  assert.equal(calls.length, 4, "four loop calls (two products, two elementwise chains)");
  for (const dtype of ["float32", "float64"] as const) {
    assertAsInterpreter(twoLayers, [sc.tensor(values(12, 3), dtype, [3, 4]), sc.tensor(values(16, 4), dtype, [4, 4])]);
  }
});

test("a loop on no fixed array is one function for every graph, per dtypes", () => {
  const f32 = [sc.tensor(values(6, 5), "float32", [2, 3]), sc.tensor(values(6, 6), "float32", [2, 3])];
  const f64 = [sc.tensor(values(6, 5), "float64", [2, 3]), sc.tensor(values(6, 6), "float64", [2, 3])];
  const a = sharedLoops(compiled(product, f32).source);
  assert.equal(a.size, 1, "the loop is a shared function");
  // another staged function with the same loop
  const b = sharedLoops(compiled((p: Tensor, q: Tensor) => sc.tanh(p.mul(q)), f32).source);
  assert.deepEqual([...b], [...a], "another graph calls the same function");
  const c = sharedLoops(compiled(product, f64).source);
  assert.equal(c.size, 1);
  assert.notDeepEqual([...c], [...a], "float64 arrays get their own function");
  assertAsInterpreter(product, f32);
  assertAsInterpreter(product, f64);
});
