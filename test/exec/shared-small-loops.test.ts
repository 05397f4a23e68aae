// A small loop (at most config.sharedLoopWork element steps per call) of a large graph's
// generated code takes all its arrays as arguments, so every node running it, in every graph,
// calls one function (exec/compiled/codegen.ts loopCall): V8 optimizes a function by how much
// it has run, and a small loop named after its node's own buffers runs once per graph call, so
// a graph of hundreds of small nodes (L2HMC at batch 1) took thousands of calls to reach steady
// speed. A larger loop still names its fixed arrays (V8 folds their addresses and lengths).
import { test } from "node:test";
import assert from "node:assert/strict";

// (set before anything imports core/config.ts: every graph counts as large; the default threshold)
process.env.STAGECRAFT_LOOP_FUNCTIONS_CHARS = "0";
delete process.env.STAGECRAFT_SHARED_LOOP_WORK;
const { Rng } = await import("../util/rng.js");
const sc = await import("../../src/api/index.js");
const { compileGraph, interpretExecutor, setDefaultExecutor, createCompiledExecutor } = await import("../../src/api/internals.js");
type Tensor = import("../../src/api/index.js").Tensor;

setDefaultExecutor(createCompiledExecutor(0));

function values(n: number, seed: number): number[] {
  const r = new Rng(seed);
  return Array.from({ length: n }, () => r.uniform(-1, 1));
}

/** Four dense layers of one shape, each with its own weights (constants: fixed arrays of the instance). */
function layers(size: number, dtype: "float32" | "float64") {
  const ws = [11, 12, 13, 14].map((seed) => sc.tensor(values(size * size, seed), dtype, [size, size]));
  return (x: Tensor) => ws.reduce((h, w) => sc.tanh(sc.matmul(h, w)), x);
}

function compiledSource(fn: (x: Tensor) => Tensor, x: Tensor): string {
  const cf = sc.stage(fn).concrete(x);
  return compileGraph(cf.graph, cf.library, cf.graph.inputs.map((v) => v.type.shape)).source;
}

/** The product functions of a compiled graph's code: those of its instance (mm_n...) and the shared ones it calls (mm123, whose sources follow its code). */
function productFunctions(source: string): { instance: string[]; shared: string[] } {
  return {
    instance: [...source.matchAll(/^function (mm_n\d+)\(/gm)].map((m) => m[1]!),
    shared: [...source.matchAll(/^function (mm\d+)\(/gm)].map((m) => m[1]!),
  };
}

/** How many loop calls the segments make (instance functions and shared ones, bound as L...). */
function loopCalls(source: string): number {
  const segments = [...source.matchAll(/^function seg\d+\(dev\) \{\n([\s\S]*?)\n\}$/gm)].map((m) => m[1]!).join("\n");
  return (segments.match(/\b(?:(?:ew|mm|red)_n\d+|L\d+)\(/g) ?? []).length;
}

function assertAsInterpreter(fn: (x: Tensor) => Tensor, x: Tensor): void {
  const got = sc.stage(fn)(x);
  setDefaultExecutor(interpretExecutor);
  const want = sc.stage(fn)(x);
  setDefaultExecutor(createCompiledExecutor(0));
  const g = got.dataSync(), e = want.dataSync();
  for (let i = 0; i < e.length; i++) assert.ok(Object.is(g[i], e[i]), `element ${i}: ${g[i]} vs ${e[i]}`);
}

test("small products on other weights and buffers are one shared function, with the interpreter's bits", () => {
  // ([2,4] @ [4,4]: 32 multiply-adds, below the default 256)
  for (const dtype of ["float32", "float64"] as const) {
    const f = layers(4, dtype), x = sc.tensor(values(8, 1), dtype, [2, 4]);
    const source = compiledSource(f, x);
    const fns = productFunctions(source);
    assert.equal(loopCalls(source), 8, "four products and four tanh loops called");
    assert.deepEqual(fns.instance, [], "no product function of the instance");
    assert.equal(fns.shared.length, 1, "one shared function for the four products");
    assertAsInterpreter(f, x);
  }
});

test("a large product still names its own fixed arrays (a function of the instance)", () => {
  const size = 24;
  // ([2,24] @ [24,24]: 1,152 multiply-adds, above the default 256)
  const f = layers(size, "float32"), x = sc.tensor(values(2 * size, 2), "float32", [2, size]);
  const source = compiledSource(f, x);
  const fns = productFunctions(source);
  assert.equal(loopCalls(source), 8, "four products and four tanh loops called");
  assert.ok(fns.instance.length >= 1, "product functions of the instance (one per distinct buffers the planner gave them)");
  assert.deepEqual(fns.shared, [], "no shared product function");
  assertAsInterpreter(f, x);
});
