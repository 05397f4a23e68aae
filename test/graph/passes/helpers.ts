/**
 * Shared helpers of the graph pass tests (test/graph/passes/): stage a function, apply passes to a
 * copy of its graph, check the copy against the original on random inputs, print graphs stably.
 */
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { printLibrary } from "../../../src/graph/printer.js";
import { verifyGraph } from "../../../src/graph/verify.js";
import { interpret } from "../../../src/exec/interpreter.js";
import { FunctionLibrary, Graph } from "../../../src/graph/ir.js";
import { cloneProgram } from "../../../src/graph/passes/index.js";
import { Rng } from "../../util/rng.js";

export type Pass = (g: Graph, lib: FunctionLibrary) => Graph;

/**
 * The graph and its library as text, with graph names made stable (staged functions get
 * globally unique names): the root is `main`, library functions `fn0`, `fn1`, ... in order.
 */
export function text(g: Graph, lib: FunctionLibrary): string {
  let s = printLibrary(lib, g);
  const names = new Map<string, string>([[g.name, "main"]]);
  let k = 0;
  for (const name of lib.functions.keys()) if (!names.has(name)) names.set(name, `fn${k++}`);
  for (const [from, to] of names) {
    const esc = from.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    s = s.replace(new RegExp(`(graph |function |@)${esc}\\(`, "g"), `$1${to}(`);
  }
  return s;
}

export function lines(...ls: string[]): string {
  return ls.join("\n");
}

/** Element-wise identical (Object.is: NaN equals NaN, -0 differs from 0), same dtype and shape. */
export function assertIdentical(actual: sc.Tensor[], expected: sc.Tensor[], what = "outputs"): void {
  assert.equal(actual.length, expected.length, `${what}: count`);
  actual.forEach((a, i) => {
    const e = expected[i]!;
    assert.equal(a.dtype, e.dtype, `${what} ${i}: dtype`);
    assert.deepEqual(a.shape, e.shape, `${what} ${i}: shape`);
    const x = a.dataSync();
    const y = e.dataSync();
    for (let j = 0; j < x.length; j++) {
      if (!Object.is(x[j], y[j])) assert.fail(`${what} ${i} differs at element ${j}: ${x[j]} vs ${y[j]}`);
    }
  });
}

export interface Applied {
  before: string;
  after: string;
  graph: Graph;
  library: FunctionLibrary;
}

/**
 * Stages `fn` for `args`, applies `passes` to a copy of its graph, verifies it, and checks
 * that the copy gives the original's results on `trials` random input sets.
 */
export function applyPasses(fn: (...xs: sc.Tensor[]) => unknown, args: sc.Tensor[], passes: Pass[], trials = 3, seed = 7): Applied {
  const cf = sc.stage(fn).concrete(...args);
  const orig = cloneProgram(cf.graph, cf.library);
  const { graph, library } = cloneProgram(cf.graph, cf.library);
  const before = text(graph, library);
  for (const p of passes) {
    p(graph, library);
    verifyGraph(graph, library);
  }
  const rng = new Rng(seed);
  for (let t = 0; t < trials; t++) {
    const inputs = args.map((a) => randomLike(rng, a));
    const captures = cf.captureValues();
    const ref = interpret(orig.graph, [...inputs, ...captures], { library: orig.library });
    const out = interpret(graph, [...inputs, ...captures], { library });
    assertIdentical(out, ref);
  }
  return { before, after: text(graph, library), graph, library };
}

export function randomLike(rng: Rng, t: sc.Tensor): sc.Tensor {
  const n = t.size;
  const vals = Array.from({ length: n }, () => {
    switch (t.dtype) {
      case "int32":
      case "int64":
        return rng.int(-100000, 100000);
      case "uint8":
        return rng.int(0, 256);
      case "bool":
        return rng.next() < 0.5 ? 1 : 0;
      default:
        return rng.uniform(-3, 3);
    }
  });
  return sc.tensor(vals, t.dtype, t.shape.slice());
}

export function ops(g: Graph): string[] {
  return g.nodes.map((n) => n.op);
}
