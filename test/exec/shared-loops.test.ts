// The compiled executor's loops are shared functions (exec/compiled/loop-kernels.ts): one per
// distinct loop and dtypes, called by every node that runs it, in any graph, so a large graph
// of repeated steps warms up in a few calls instead of compiling every step's copy.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { compileGraph, interpretExecutor, setDefaultExecutor, createCompiledExecutor } from "../../src/api/internals.js";
import { Rng } from "../util/rng.js";

setDefaultExecutor(createCompiledExecutor(0));

/** Two steps of the same layer: the same product and the same elementwise chain, twice. */
const twoLayers = (x: sc.Tensor, w: sc.Tensor) => sc.tanh(sc.matmul(sc.tanh(sc.matmul(x, w).add(1)), w).add(1));

function values(n: number, seed: number): number[] {
  const r = new Rng(seed);
  return Array.from({ length: n }, () => r.uniform(-1, 1));
}

/** The names of the shared loops a compiled graph calls (their sources follow its code). */
function loopNames(source: string): Set<string> {
  return new Set([...source.matchAll(/^function ((?:ew|mm|red)\d+)\(/gm)].map((m) => m[1]!));
}

function compiled(fn: (...xs: sc.Tensor[]) => sc.Tensor, args: sc.Tensor[]) {
  const cf = sc.stage(fn).concrete(...args);
  return compileGraph(cf.graph, cf.library, args.map((a) => a.shape));
}

test("a loop repeated in a graph is one shared function, called by each of its nodes", () => {
  const x = sc.tensor(values(12, 1), "float32", [3, 4]),
    w = sc.tensor(values(16, 2), "float32", [4, 4]);
  const c = compiled(twoLayers, [x, w]);
  const names = [...loopNames(c.source)];
  const mm = names.filter((n) => n.startsWith("mm")),
    ew = names.filter((n) => n.startsWith("ew"));
  assert.equal(mm.length, 1, `one product function for both products:\n${c.source}`);
  assert.equal(ew.length, 1, `one elementwise function for both tanh(. + 1):\n${c.source}`);
  // each is bound once and called at both nodes
  const calls = [...c.source.matchAll(/^(L\d+)\(/gm)].map((m) => m[1]!);
  assert.equal(calls.length, 4, "four loop calls (two products, two elementwise chains)");
  assert.equal(new Set(calls).size, 2, "by two functions");
});

test("shared loops give the interpreter's bits, and a loop's function is shared across graphs but not across dtypes", () => {
  const f32 = [sc.tensor(values(12, 3), "float32", [3, 4]), sc.tensor(values(16, 4), "float32", [4, 4])];
  const f64 = [sc.tensor(values(12, 3), "float64", [3, 4]), sc.tensor(values(16, 4), "float64", [4, 4])];
  const a = compiled(twoLayers, f32);
  // another graph (other function, the same loops): the same functions
  const b = compiled((x: sc.Tensor, w: sc.Tensor) => sc.tanh(sc.matmul(x, w).add(1)).mul(1), f32);
  const c = compiled(twoLayers, f64);
  const namesA = loopNames(a.source);
  const mmA = [...namesA].find((n) => n.startsWith("mm"))!;
  assert.ok(loopNames(b.source).has(mmA), "the float32 4x4 product function is shared by another graph");
  for (const n of loopNames(c.source)) assert.ok(!namesA.has(n), `float64 arrays get their own functions (${n})`);
  // bit for bit what the interpreter computes, for both dtypes
  for (const args of [f32, f64]) {
    const staged = sc.stage(twoLayers);
    const got = staged(...(args as [sc.Tensor, sc.Tensor]));
    setDefaultExecutor(interpretExecutor);
    const want = sc.stage(twoLayers)(...(args as [sc.Tensor, sc.Tensor]));
    setDefaultExecutor(createCompiledExecutor(0));
    const g = got.dataSync(),
      e = want.dataSync();
    assert.equal(got.dtype, want.dtype);
    for (let i = 0; i < e.length; i++) assert.ok(Object.is(g[i], e[i]), `${got.dtype} element ${i}: ${g[i]} vs ${e[i]}`);
  }
});
