/**
 * Graph passes (src/graph/passes): each pass on small staged functions, before and after in
 * the printed text form, and the optimized graph run by the interpreter against the original
 * on random inputs (bit for bit). Then the pipeline, fusion's kernels, and memory planning.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { printLibrary } from "../../src/graph/printer.js";
import { verifyGraph, GraphVerificationError } from "../../src/graph/verify.js";
import { parseSExpr, toSExpr } from "../../src/graph/sexpr.js";
import { graphsEqual } from "../../src/graph/equal.js";
import { interpret } from "../../src/exec/interpreter.js";
import { FunctionLibrary, Graph, type Value, type ValueType } from "../../src/graph/ir.js";
import {
  bindConstantInputs,
  cloneProgram,
  constantFold,
  cse,
  fuse,
  inline,
  optimize,
  optimizeCopy,
  planMemory,
  prune,
  simplify,
  type FusedAttrs,
} from "../../src/graph/passes/index.js";
import { fusedKernel, fusedKernelSource } from "../../src/ops/fused.js";
import type { DType } from "../../src/core/dtype.js";
import { Rng } from "../util/rng.js";

type Pass = (g: Graph, lib: FunctionLibrary) => Graph;

/**
 * The graph and its library as text, with graph names made stable (staged functions get
 * globally unique names): the root is `main`, library functions `fn0`, `fn1`, ... in order.
 */
function text(g: Graph, lib: FunctionLibrary): string {
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

function lines(...ls: string[]): string {
  return ls.join("\n");
}

/** Element-wise identical (Object.is: NaN equals NaN, -0 differs from 0), same dtype and shape. */
function assertIdentical(actual: sc.Tensor[], expected: sc.Tensor[], what = "outputs"): void {
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

interface Applied {
  before: string;
  after: string;
  graph: Graph;
  library: FunctionLibrary;
}

/**
 * Stages `fn` for `args`, applies `passes` to a copy of its graph, verifies it, and checks
 * that the copy gives the original's results on `trials` random input sets.
 */
function applyPasses(fn: (...xs: sc.Tensor[]) => unknown, args: sc.Tensor[], passes: Pass[], trials = 3, seed = 7): Applied {
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

function randomLike(rng: Rng, t: sc.Tensor): sc.Tensor {
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

function ops(g: Graph): string[] {
  return g.nodes.map((n) => n.op);
}

// ---------------------------------------------------------------------------------------------
// prune

test("prune removes what reaches no output and keeps stateful nodes with their inputs", () => {
  const v = sc.variable(sc.zeros([3]), { name: "v" });
  let hostCalls = 0;
  const logged: unknown[][] = [];
  const log = console.log;
  console.log = (...xs: unknown[]) => void logged.push(xs);
  try {
    const r = applyPasses(
      (x: sc.Tensor) => {
        x.exp().mul(x); // dead
        sc.print("x is", x);
        sc.hostCall(
          function sideEffect(t: sc.Tensor) {
            hostCalls++;
            return t.neg();
          },
          sc.spec([3]),
          x,
        );
        v.assign(x.mul(x));
        return x.add(x);
      },
      [sc.tensor([1, 2, 3])],
      [prune],
      1,
    );
    assert.equal(
      r.before,
      lines(
        "graph main(%0 arg0: float32[3]) -> (output_0: float32[3]) {",
        "  %1: float32[3] = exp(%0)",
        "  %2: float32[3] = mul(%1, %0)",
        '  print(%0) {items: [{text: "x is"}, {input: 0}]}',
        '  %3: float32[3] = hostCall(%0) {fnId: ' + r.graph.nodes[1]!.attrs.fnId + ', name: "sideEffect", outputs: [{dtype: "float32", shape: [3]}]}',
        "  %4: float32[3] = mul(%0, %0)",
        "  assignVariable(%4) {variable: v}",
        "  %5: float32[3] = add(%0, %0)",
        "  return %5",
        "}",
      ),
    );
    assert.equal(
      r.after,
      lines(
        "graph main(%0 arg0: float32[3]) -> (output_0: float32[3]) {",
        '  print(%0) {items: [{text: "x is"}, {input: 0}]}',
        '  %1: float32[3] = hostCall(%0) {fnId: ' + r.graph.nodes[1]!.attrs.fnId + ', name: "sideEffect", outputs: [{dtype: "float32", shape: [3]}]}',
        "  %2: float32[3] = mul(%0, %0)",
        "  assignVariable(%2) {variable: v}",
        "  %3: float32[3] = add(%0, %0)",
        "  return %3",
        "}",
      ),
    );
    // The pruned graph still prints, calls the host and assigns (once per run: original + pruned).
    assert.equal(hostCalls, 2);
    assert.equal(logged.length, 2);
    const last = v.read().dataSync();
    assert.equal(last.length, 3);
  } finally {
    console.log = log;
  }
});

test("prune trims unused cond outputs and the operands no region reads", () => {
  const r = applyPasses(
    (x: sc.Tensor, y: sc.Tensor) => {
      const [a] = sc.cond(sc.sum(x).greater(0), () => [x.exp(), y.add(x)], () => [x.neg(), y]) as sc.Tensor[];
      return a;
    },
    [sc.tensor([1, 2, 3]), sc.tensor([1, 2, 3])],
    [prune],
    4,
  );
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[3], %1 arg1: float32[3]) -> (output_0: float32[3]) {",
      "  %2: float32[] = sum(%0) {axes: [0], keepDims: false}",
      '  %3: float32[] = fill() {shape: [], dtype: "float32", value: 0}',
      "  %4: bool[] = greater(%2, %3)",
      "  %5: float32[3] = cond(%4, %0) {",
      "    then(%6 captured_0: float32[3]) -> (output_0: float32[3]) {",
      "      %7: float32[3] = exp(%6)",
      "      return %7",
      "    }",
      "    else(%8 captured_0: float32[3]) -> (output_0: float32[3]) {",
      "      %9: float32[3] = neg(%8)",
      "      return %9",
      "    }",
      "  }",
      "  return %5",
      "}",
    ),
  );
  assert.match(r.before, /%5: float32\[3\], %6: float32\[3\] = cond\(%4, %0, %1\)/);
});

test("prune keeps a cond whose region has effects even when its outputs are unused", () => {
  const w = sc.variable(sc.zeros([2]), { name: "w" });
  const r = applyPasses(
    (x: sc.Tensor) => {
      sc.cond(
        sc.sum(x).greater(0),
        () => {
          w.assign(x);
          return x;
        },
        () => x,
      );
      return x.neg();
    },
    [sc.tensor([1, 2])],
    [prune],
    1,
  );
  assert.deepEqual(ops(r.graph), ["sum", "fill", "greater", "cond", "neg"]);
});

// ---------------------------------------------------------------------------------------------
// cse

test("cse merges equal pure nodes (commutative operands too) but never stateful ones", () => {
  const logged: unknown[][] = [];
  const log = console.log;
  console.log = (...xs: unknown[]) => void logged.push(xs);
  try {
    const r = applyPasses(
      (x: sc.Tensor, y: sc.Tensor) => {
        const a = x.mul(y);
        const b = x.mul(y);
        const c = y.mul(x);
        sc.print("p", x);
        sc.print("p", x);
        return sc.exp(a).add(sc.exp(b)).add(c);
      },
      [sc.tensor([1, 2, 3]), sc.tensor([1, 2, 3])],
      [cse],
    );
    assert.equal(
      r.before,
      lines(
        "graph main(%0 arg0: float32[3], %1 arg1: float32[3]) -> (output_0: float32[3]) {",
        "  %2: float32[3] = mul(%0, %1)",
        "  %3: float32[3] = mul(%0, %1)",
        "  %4: float32[3] = mul(%1, %0)",
        '  print(%0) {items: [{text: "p"}, {input: 0}]}',
        '  print(%0) {items: [{text: "p"}, {input: 0}]}',
        "  %5: float32[3] = exp(%2)",
        "  %6: float32[3] = exp(%3)",
        "  %7: float32[3] = add(%5, %6)",
        "  %8: float32[3] = add(%7, %4)",
        "  return %8",
        "}",
      ),
    );
    assert.equal(
      r.after,
      lines(
        "graph main(%0 arg0: float32[3], %1 arg1: float32[3]) -> (output_0: float32[3]) {",
        "  %2: float32[3] = mul(%0, %1)",
        '  print(%0) {items: [{text: "p"}, {input: 0}]}',
        '  print(%0) {items: [{text: "p"}, {input: 0}]}',
        "  %3: float32[3] = exp(%2)",
        "  %4: float32[3] = add(%3, %3)",
        "  %5: float32[3] = add(%4, %2)",
        "  return %5",
        "}",
      ),
    );
    // 3 trials, original and optimized: both prints each time.
    assert.equal(logged.length, 12);
  } finally {
    console.log = log;
  }
});

test("cse does not merge identical host calls, nor non-commutative operands swapped", () => {
  let calls = 0;
  const r = applyPasses(
    (x: sc.Tensor, y: sc.Tensor) => {
      const fn = (t: sc.Tensor) => {
        calls++;
        return t.add(1);
      };
      const h1 = sc.hostCall(fn, sc.spec([2]), x) as sc.Tensor;
      const h2 = sc.hostCall(fn, sc.spec([2]), x) as sc.Tensor;
      return h1.add(h2).add(x.sub(y)).add(y.sub(x));
    },
    [sc.tensor([1, 2]), sc.tensor([3, 4])],
    [cse],
    1,
  );
  assert.deepEqual(ops(r.graph), ["hostCall", "hostCall", "add", "sub", "add", "sub", "add"]);
  assert.equal(calls, 4);
});

/** A graph reading variable w, assigning x to it, then reading it twice. */
function readAssignRead(w: sc.Variable): Graph {
  const t: ValueType = { dtype: "float32", shape: [2] };
  const g = new Graph("reads");
  const x = g.addInput(t, "x");
  const r1 = g.addNode("readVariable", [], { variable: w }, [t]).outputs[0]!;
  g.addNode("assignVariable", [x], { variable: w }, []);
  const r2 = g.addNode("readVariable", [], { variable: w }, [t]).outputs[0]!;
  const r3 = g.addNode("readVariable", [], { variable: w }, [t]).outputs[0]!;
  const s = g.addNode("add", [r1, r2], {}, [t]).outputs[0]!;
  const u = g.addNode("add", [s, r3], {}, [t]).outputs[0]!;
  g.setOutputs([u, r1]);
  return g;
}

test("cse keeps a readVariable after an assignVariable apart, and merges reads with no write between", () => {
  const w = sc.variable(sc.tensor([1, 2]), { name: "w" });
  const g = readAssignRead(w);
  const lib = new FunctionLibrary();
  cse(g, lib);
  verifyGraph(g, lib);
  assert.equal(
    text(g, lib),
    lines(
      "graph main(%0 x: float32[2]) -> (output_0: float32[2], output_1: float32[2]) {",
      "  %1: float32[2] = readVariable() {variable: w}",
      "  assignVariable(%0) {variable: w}",
      "  %2: float32[2] = readVariable() {variable: w}",
      "  %3: float32[2] = add(%1, %2)",
      "  %4: float32[2] = add(%3, %2)",
      "  return %4, %1",
      "}",
    ),
  );
  const [u, r1] = interpret(g, [sc.tensor([10, 20])], { library: lib });
  assert.deepEqual(Array.from(r1!.dataSync()), [1, 2]);
  assert.deepEqual(Array.from(u!.dataSync()), [21, 42]);
  assert.deepEqual(Array.from(w.read().dataSync()), [10, 20]);
});

test("cse keeps reads apart across control flow that assigns the variable", () => {
  const w = sc.variable(sc.tensor([1, 2]), { name: "w2" });
  const f = sc.stage((x: sc.Tensor) => {
    const before = w.read().mul(1);
    sc.cond(
      sc.sum(x).greater(0),
      () => {
        w.assign(x);
        return x;
      },
      () => x,
    );
    return before.add(w.read());
  });
  const cf = f.concrete(sc.tensor([5, 6]));
  const { graph, library } = cloneProgram(cf.graph, cf.library);
  cse(graph, library);
  prune(graph, library);
  verifyGraph(graph, library);
  assert.equal(ops(graph).filter((o) => o === "readVariable").length, 2);
  w.assign(sc.tensor([1, 2]));
  const [out] = interpret(graph, [sc.tensor([5, 6]), ...cf.captureValues()], { library });
  assert.deepEqual(Array.from(out!.dataSync()), [6, 8]);
});

test("cse does not merge equal conds that read a variable when an assignment runs between them", () => {
  const w = sc.variable(sc.tensor([1, 2]), { name: "w3" });
  const f = sc.stage((x: sc.Tensor) => {
    const p = sc.sum(x).greater(0);
    const readIt = () => sc.cond(p, () => w.read().add(x), () => x) as sc.Tensor;
    const a = readIt();
    w.assign(x);
    const b = readIt();
    const c = readIt(); // no write since b: merged with b
    return a.add(b).add(c);
  });
  const cf = f.concrete(sc.tensor([5, 6]));
  const { graph, library } = cloneProgram(cf.graph, cf.library);
  assert.equal(ops(graph).filter((o) => o === "cond").length, 3);
  cse(graph, library);
  verifyGraph(graph, library);
  assert.equal(ops(graph).filter((o) => o === "cond").length, 2);
  w.assign(sc.tensor([1, 2]));
  const [out] = interpret(graph, [sc.tensor([5, 6]), ...cf.captureValues()], { library });
  // a = [1, 2] + x, b = c = x + x
  assert.deepEqual(Array.from(out!.dataSync()), [6 + 10 + 10, 8 + 12 + 12]);
});

// ---------------------------------------------------------------------------------------------
// constant folding

test("constantFold evaluates constant subgraphs with the registry kernels; random ops stay", () => {
  const r = applyPasses(
    (x: sc.Tensor) => {
      const c = sc.reshape(sc.cast(sc.arange(6), "float32"), [2, 3]).mul(sc.full([2, 3], 2));
      const noise = sc.random.uniform([2, 3], { seed: 7 }).add(sc.ones([2, 3]));
      return x.add(c).add(noise);
    },
    [sc.ones([2, 3])],
    [constantFold, prune],
  );
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[2, 3], %1 capture_0: int32[2]) -> (output_0: float32[2, 3]) {",
      '  %2: float32[2, 3] = constant() {dtype: "float32", shape: [2, 3], values: [0, 2, 4, 6, 8, 10]}',
      '  %3: float32[2, 3] = randomUniform(%1) {shape: [2, 3], dtype: "float32", minval: 0, maxval: 1}',
      '  %4: float32[2, 3] = fill() {shape: [2, 3], dtype: "float32", value: 1}',
      "  %5: float32[2, 3] = add(%3, %4)",
      "  %6: float32[2, 3] = add(%0, %2)",
      "  %7: float32[2, 3] = add(%6, %5)",
      "  return %7",
      "}",
    ),
  );
  assert.deepEqual(ops(applyPasses((x: sc.Tensor) => x, [sc.ones([1])], []).graph), []);
});

test("constantFold writes a uniform result as a fill, respects the size limit and keeps failing kernels", () => {
  const f = (x: sc.Tensor) => x.add(sc.broadcastTo(sc.full([1, 4], 3), [5, 4]).mul(sc.full([], 2)));
  const r = applyPasses(f, [sc.ones([5, 4])], [constantFold, prune]);
  assert.deepEqual(ops(r.graph), ["fill", "add"]);
  assert.deepEqual(r.graph.nodes[0]!.attrs, { shape: [5, 4], dtype: "float32", value: 6 });

  const cf = sc.stage(f).concrete(sc.ones([5, 4]));
  const limited = cloneProgram(cf.graph, cf.library);
  optimize(limited.graph, limited.library, { fold: { maxElements: 10 }, fuse: false });
  assert.ok(ops(limited.graph).includes("broadcastTo"), "a 20-element result is over a limit of 10");

  // oneHot of an out-of-range index throws: left for run time.
  const bad = sc.stage((x: sc.Tensor) => x.add(sc.oneHot(sc.tensor([5], "int32"), 3)));
  const b = cloneProgram(bad.concrete(sc.ones([1, 3])).graph, new FunctionLibrary());
  constantFold(b.graph, b.library);
  assert.ok(ops(b.graph).includes("oneHot"));
});

test("the constant op validates its attributes and round-trips values of every dtype", () => {
  const rng = new Rng(3);
  for (const dtype of ["float32", "float64", "int32", "int64", "uint8", "bool"] as DType[]) {
    const t = randomLike(rng, sc.zeros([2, 2], dtype));
    const g = new Graph("c");
    const x = g.addInput({ dtype, shape: [2, 2] }, "x");
    g.setOutputs([x]);
    bindConstantInputs(g, new Map([[0, t]]));
    assert.equal(g.nodes[0]!.op, "constant");
    const [out] = interpret(g, [sc.zeros([2, 2], dtype)], { library: new FunctionLibrary() });
    assertIdentical([out!], [t]);
  }
  const op = sc.getOp("constant");
  assert.throws(() => op.infer([], { dtype: "float32", shape: [2], values: [1] }), (e: Error) => e instanceof sc.ValueError && /constant/.test(e.message) && /needs 2 values, got 1/.test(e.message));
  assert.throws(() => op.infer([], { dtype: "complex", shape: [1], values: [1] }), sc.DtypeError);
  assert.throws(() => op.infer([], { dtype: "float32", shape: [1.5], values: [1] }), sc.ShapeError);
});

// ---------------------------------------------------------------------------------------------
// simplification

test("simplify removes x*1, 1*x, x+0, x-0, x/1, double negation, double transpose, reshape chains, identity", () => {
  const r = applyPasses(
    (x: sc.Tensor, y: sc.Tensor) => {
      const a = x.mul(sc.ones([2, 3])).add(sc.zeros([])).sub(sc.zeros([3]));
      const b = sc.ones([]).mul(a).div(sc.ones([2, 3])).neg().neg();
      const c = sc.transpose(sc.transpose(b, [1, 0]), [1, 0]);
      const d = sc.reshape(sc.expandDims(sc.reshape(c, [6]), 0), [2, 3]);
      const e = sc.identity(d);
      // y * 1 broadcasts y from [3] to [2, 3]: it must stay.
      const kept = y.mul(sc.ones([2, 3]));
      return [e, kept];
    },
    [sc.ones([2, 3]), sc.ones([3])],
    [simplify, prune],
  );
  assert.equal(
    r.before,
    lines(
      "graph main(%0 arg0: float32[2, 3], %1 arg1: float32[3]) -> (output_0: float32[2, 3], output_1: float32[2, 3]) {",
      '  %2: float32[2, 3] = fill() {shape: [2, 3], dtype: "float32", value: 1}',
      "  %3: float32[2, 3] = mul(%0, %2)",
      '  %4: float32[] = fill() {shape: [], dtype: "float32", value: 0}',
      "  %5: float32[2, 3] = add(%3, %4)",
      '  %6: float32[3] = fill() {shape: [3], dtype: "float32", value: 0}',
      "  %7: float32[2, 3] = sub(%5, %6)",
      '  %8: float32[] = fill() {shape: [], dtype: "float32", value: 1}',
      "  %9: float32[2, 3] = mul(%8, %7)",
      '  %10: float32[2, 3] = fill() {shape: [2, 3], dtype: "float32", value: 1}',
      "  %11: float32[2, 3] = div(%9, %10)",
      "  %12: float32[2, 3] = neg(%11)",
      "  %13: float32[2, 3] = neg(%12)",
      "  %14: float32[3, 2] = transpose(%13) {perm: [1, 0]}",
      "  %15: float32[2, 3] = transpose(%14) {perm: [1, 0]}",
      "  %16: float32[6] = reshape(%15) {shape: [6]}",
      "  %17: float32[1, 6] = expandDims(%16) {axes: [0]}",
      "  %18: float32[2, 3] = reshape(%17) {shape: [2, 3]}",
      "  %19: float32[2, 3] = identity(%18)",
      '  %20: float32[2, 3] = fill() {shape: [2, 3], dtype: "float32", value: 1}',
      "  %21: float32[2, 3] = mul(%1, %20)",
      "  return %19, %21",
      "}",
    ),
  );
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[2, 3], %1 arg1: float32[3]) -> (output_0: float32[2, 3], output_1: float32[2, 3]) {",
      '  %2: float32[2, 3] = fill() {shape: [2, 3], dtype: "float32", value: 1}',
      "  %3: float32[2, 3] = mul(%1, %2)",
      "  return %0, %3",
      "}",
    ),
  );
});

test("simplify composes transposes and reshapes, drops same-dtype casts, and keeps dtype-changing x*1", () => {
  const castOp = sc.getOp("cast");
  const r = applyPasses(
    (x: sc.Tensor, i: sc.Tensor) => {
      const t = sc.transpose(sc.transpose(x, [1, 2, 0]), [1, 2, 0]); // composed: [2, 0, 1]
      const s = sc.squeeze(sc.reshape(t, [1, 4, 6]), 0); // -> reshape to [4, 6]
      const same = sc.applyOp(castOp, [s], { dtype: "float32" })[0]!;
      // int32 * float32 one is float32: the dtype changes, so it stays.
      const promoted = i.mul(sc.ones([], "float32"));
      return [same, promoted];
    },
    [sc.ones([2, 3, 4]), sc.ones([3], "int32")],
    [simplify, prune],
  );
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[2, 3, 4], %1 arg1: int32[3]) -> (output_0: float32[4, 6], output_1: float32[3]) {",
      "  %2: float32[4, 2, 3] = transpose(%0) {perm: [2, 0, 1]}",
      "  %3: float32[4, 6] = reshape(%2) {shape: [4, 6]}",
      '  %4: float32[] = fill() {shape: [], dtype: "float32", value: 1}',
      "  %5: float32[3] = mul(%1, %4)",
      "  return %3, %5",
      "}",
    ),
  );
});

test("simplify: exactSignedZeros keeps float x + 0 (which maps -0 to +0); ints fold either way", () => {
  const negZero = sc.scalar(-0); // captured: an input, bound as a constant below
  const f = sc.stage((x: sc.Tensor, i: sc.Tensor) => [x.add(sc.zeros([])), i.add(sc.zeros([], "int32")), x.add(negZero), x.sub(sc.zeros([]))]);
  const cf = f.concrete(sc.ones([2]), sc.ones([2], "int32"));
  const constants = new Map([[2, negZero]]);
  const exact = optimizeCopy(cf.graph, cf.library, { exactSignedZeros: true, fuse: false, constantInputs: constants });
  assert.deepEqual(ops(exact.graph), ["fill", "add"], "only float x + (+0) stays");
  assert.equal(exact.graph.outputs[1], exact.graph.inputs[1], "int x + 0 is x");
  assert.equal(exact.graph.outputs[2], exact.graph.inputs[0], "x + (-0) is x exactly");
  assert.equal(exact.graph.outputs[3], exact.graph.inputs[0], "x - 0 is x exactly");
  const ins = [sc.tensor([-0, 1]), sc.tensor([1, 2], "int32"), negZero];
  const [a, , c, d] = interpret(exact.graph, ins, { library: exact.library });
  assert.ok(Object.is(a!.dataSync()[0], 0), "-0 + 0 is +0");
  assert.ok(Object.is(c!.dataSync()[0], -0), "-0 + -0 is -0");
  assert.ok(Object.is(d!.dataSync()[0], -0), "-0 - 0 is -0");
  const loose = optimizeCopy(cf.graph, cf.library, { fuse: false, constantInputs: constants });
  assert.deepEqual(ops(loose.graph), [], "by default float x + 0 folds too");
});

test("simplify inlines a cond whose predicate is constant", () => {
  const r = applyPasses(
    (x: sc.Tensor) => sc.cond(sc.full([], true), () => x.exp(), () => x.neg()) as sc.Tensor,
    [sc.ones([3])],
    [simplify, prune],
  );
  // A bool scalar staged as a fill node: the cond stages, then its then-branch is inlined.
  assert.match(r.before, /cond\(/);
  assert.deepEqual(ops(r.graph), ["exp"]);

  const g = new Graph("g");
  const t: ValueType = { dtype: "float32", shape: [3] };
  const x = g.addInput(t, "x");
  const p = g.addNode("fill", [], { shape: [], dtype: "bool", value: 0 }, [{ dtype: "bool", shape: [] }]).outputs[0]!;
  const thenG = new Graph("then");
  const ti = thenG.addInput(t, "x");
  thenG.setOutputs([thenG.addNode("exp", [ti], {}, [t]).outputs[0]!]);
  const elseG = new Graph("else");
  const ei = elseG.addInput(t, "x");
  elseG.setOutputs([elseG.addNode("neg", [ei], {}, [t]).outputs[0]!]);
  const c = g.addNode("cond", [p, x], {}, [t], [thenG, elseG]).outputs[0]!;
  g.setOutputs([c]);
  const lib = new FunctionLibrary();
  simplify(g, lib);
  prune(g, lib);
  verifyGraph(g, lib);
  assert.equal(text(g, lib), lines("graph main(%0 x: float32[3]) -> (output_0: float32[3]) {", "  %1: float32[3] = neg(%0)", "  return %1", "}"));
});

// ---------------------------------------------------------------------------------------------
// inlining

test("inline replaces calls to small functions by their bodies; prune drops the unused function", () => {
  const inner = sc.stage((x: sc.Tensor) => x.mul(x).add(sc.ones([3])));
  const r = applyPasses((x: sc.Tensor) => (inner(x) as sc.Tensor).sub(x), [sc.ones([3])], [inline, prune]);
  assert.equal(
    r.before,
    lines(
      "graph main(%0 arg0: float32[3]) -> (output_0: float32[3]) {",
      "  %1: float32[3] = call @fn0(%0)",
      "  %2: float32[3] = sub(%1, %0)",
      "  return %2",
      "}",
      "",
      "function fn0(%0 arg0: float32[3]) -> (output_0: float32[3]) {",
      "  %1: float32[3] = mul(%0, %0)",
      '  %2: float32[3] = fill() {shape: [3], dtype: "float32", value: 1}',
      "  %3: float32[3] = add(%1, %2)",
      "  return %3",
      "}",
    ),
  );
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[3]) -> (output_0: float32[3]) {",
      "  %1: float32[3] = mul(%0, %0)",
      '  %2: float32[3] = fill() {shape: [3], dtype: "float32", value: 1}',
      "  %3: float32[3] = add(%1, %2)",
      "  %4: float32[3] = sub(%3, %0)",
      "  return %4",
      "}",
    ),
  );
});

test("inline leaves large and recursive functions as calls; refines types of inlined bodies", () => {
  // A big callee: 40 nodes.
  const big = sc.stage((x: sc.Tensor) => {
    let y = x;
    for (let i = 0; i < 40; i++) y = y.sin();
    return y;
  });
  const r = applyPasses((x: sc.Tensor) => (big(x) as sc.Tensor).neg(), [sc.ones([2])], [inline]);
  assert.deepEqual(ops(r.graph), ["call", "neg"]);
  const r2 = applyPasses((x: sc.Tensor) => (big(x) as sc.Tensor).neg(), [sc.ones([2])], [(g, l) => inline(g, l, { threshold: 64 })]);
  assert.equal(ops(r2.graph).length, 41);

  // countdown(n) = n > 0 ? countdown(n - 1) : n, recursive through a cond region.
  const s: ValueType = { dtype: "float32", shape: [] };
  const lib = new FunctionLibrary();
  const cd = new Graph("countdown");
  const n = cd.addInput(s, "n");
  const zero = cd.addNode("fill", [], { shape: [], dtype: "float32", value: 0 }, [s]).outputs[0]!;
  const p = cd.addNode("greater", [n, zero], {}, [{ dtype: "bool", shape: [] }]).outputs[0]!;
  const thenG = new Graph("then");
  const tn = thenG.addInput(s, "n");
  const one = thenG.addNode("fill", [], { shape: [], dtype: "float32", value: 1 }, [s]).outputs[0]!;
  const m = thenG.addNode("sub", [tn, one], {}, [s]).outputs[0]!;
  thenG.setOutputs([thenG.addNode("call", [m], { callee: "countdown" }, [s]).outputs[0]!]);
  const elseG = new Graph("else");
  const en = elseG.addInput(s, "n");
  elseG.setOutputs([en]);
  cd.setOutputs([cd.addNode("cond", [p, n], {}, [s], [thenG, elseG]).outputs[0]!]);
  lib.add(cd);
  const root = new Graph("root");
  const x = root.addInput({ dtype: "float32", shape: [] }, "x");
  root.setOutputs([root.addNode("call", [x], { callee: "countdown" }, [s]).outputs[0]!]);
  verifyGraph(root, lib);
  inline(root, lib);
  verifyGraph(root, lib);
  assert.deepEqual(ops(root), ["call"]);
  assert.deepEqual(ops(lib.get("countdown")), ["fill", "greater", "cond"]);
  const [out] = interpret(root, [sc.tensor(3)], { library: lib });
  assert.equal(out!.dataSync()[0], 0);

  // A callee with an unknown batch dim inlined at a known shape: types get refined.
  const generic = sc.stage((x: sc.Tensor) => x.exp().sum(1), { inputSignature: [sc.spec([null, 2])] });
  const r3 = applyPasses((x: sc.Tensor) => (generic(x) as sc.Tensor).neg(), [sc.ones([3, 2])], [inline, prune]);
  assert.match(r3.after, /%2: float32\[3\] = sum\(%1\)/);
});

// ---------------------------------------------------------------------------------------------
// fusion

function fusedOf(g: Graph): FusedAttrs {
  const n = g.nodes.find((x) => x.op === "fusedElementwise");
  assert.ok(n, "a fusedElementwise node");
  return n.attrs as unknown as FusedAttrs;
}

test("fusion turns a 5-op float32 chain into one node, bit-identical to unfused (with broadcasting)", () => {
  const r = applyPasses(
    (x: sc.Tensor, y: sc.Tensor) => x.mul(y).add(x).sub(y).square().tanh(),
    [sc.ones([4, 5]), sc.ones([5])],
    [fuse],
    5,
  );
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[4, 5], %1 arg1: float32[5]) -> (output_0: float32[4, 5]) {",
      '  %2: float32[4, 5] = fusedElementwise(%0, %1) {numInputs: 2, steps: [{op: "mul", args: [0, 1], attrs: {}}, {op: "add", args: [2, 0], attrs: {}}, {op: "sub", args: [3, 1], attrs: {}}, {op: "square", args: [4], attrs: {}}, {op: "tanh", args: [5], attrs: {}}], outputs: [4]}',
      "  return %2",
      "}",
    ),
  );
});

test("fusion of a 5-op int32 chain wraps around exactly as the unfused ops do", () => {
  const r = applyPasses(
    (x: sc.Tensor, y: sc.Tensor) => x.mul(y).add(x).sub(y).square().neg(),
    [sc.ones([3, 4], "int32"), sc.ones([3, 4], "int32")],
    [fuse],
    5,
  );
  assert.deepEqual(ops(r.graph), ["fusedElementwise"]);
  assert.deepEqual(
    fusedOf(r.graph).steps.map((s) => s.op),
    ["mul", "add", "sub", "square", "neg"],
  );
});

test("fusion rounds every step to its dtype: uint8, bool, float64, comparisons, where, attrs", () => {
  const r = applyPasses(
    (u: sc.Tensor, x: sc.Tensor, d: sc.Tensor) => {
      const wrapped = u.add(u).mul(u); // uint8 wraps at each step
      const big = x.greater(sc.zeros([]));
      const chosen = sc.where(big, x.mul(x), sc.leakyRelu(x, 0.3).exp());
      const mixed = d.mul(chosen.cast("float64")).sqrt().add(d);
      return [wrapped, chosen.floorDiv(sc.full([], 0.7)), mixed.neg()];
    },
    [sc.ones([6], "uint8"), sc.ones([2, 6]), sc.ones([2, 6], "float64")],
    [fuse],
    5,
  );
  const fused = r.graph.nodes.filter((n) => n.op === "fusedElementwise");
  assert.ok(fused.length >= 2);
  assert.ok(!ops(r.graph).includes("greater"));
});

test("fusion keeps values used outside the group as extra outputs, and never reorders across a user", () => {
  const r = applyPasses(
    (x: sc.Tensor) => {
      const e = x.exp();
      const s = sc.sum(e); // a non-elementwise user of e, before the rest of the chain
      const y = e.add(s).mul(e);
      const z = y.sin().cos();
      return [z, y];
    },
    [sc.ones([8])],
    [fuse],
    3,
  );
  assert.deepEqual(ops(r.graph), ["exp", "sum", "fusedElementwise"]);
  const a = fusedOf(r.graph);
  assert.deepEqual(
    a.steps.map((s) => s.op),
    ["add", "mul", "sin", "cos"],
  );
  assert.deepEqual(a.outputs, [1, 3]);
  assert.equal(r.graph.nodes[2]!.outputs.length, 2);
});

test("fusion skips nodes of unknown shape and single nodes", () => {
  const f = sc.stage((x: sc.Tensor) => x.exp().neg(), { inputSignature: [sc.spec([null])] });
  const cf = f.concrete(sc.ones([3]));
  const { graph, library } = cloneProgram(cf.graph, cf.library);
  fuse(graph, library);
  assert.deepEqual(ops(graph), ["exp", "neg"]);
  const g2 = applyPasses((x: sc.Tensor) => x.exp().sum(), [sc.ones([3])], [fuse]).graph;
  assert.deepEqual(ops(g2), ["exp", "sum"]);
});

/** Values of `dtype` with the awkward ones (NaN, ±0, ±Infinity, overflow-prone) mixed in. */
function nastyData(rng: Rng, dtype: DType, n: number): sc.Tensor {
  const special = dtype === "float32" || dtype === "float64" ? [NaN, -0, 0, Infinity, -Infinity, 0.5, -2.5, 1e30] : dtype === "bool" ? [0, 1] : [0, -1, 1, 2147483647, -2147483648, 255, 70000];
  const vals = Array.from({ length: n }, (_, i) => (i % 3 === 0 ? special[rng.int(0, special.length)]! : dtype === "bool" ? rng.int(0, 2) : dtype === "uint8" ? rng.int(0, 256) : isIntDtype(dtype) ? rng.int(-70000, 70000) : rng.uniform(-4, 4)));
  return sc.tensor(vals, dtype, [n]);
}

function isIntDtype(d: DType): boolean {
  return d === "int32" || d === "int64" || d === "uint8";
}

test("fusion sweep: every elementwise op, every dtype, broadcast and scalar operands, bit-identical", () => {
  const rng = new Rng(2024);
  const dtypes: DType[] = ["float32", "float64", "int32", "int64", "uint8", "bool"];
  const shapes = [[3, 4], [4], []];
  let checked = 0;
  for (const def of sc.listOps()) {
    if (!def.elementwise || def.stateful) continue;
    const attrs = def.name === "leakyRelu" ? { alpha: 0.3 } : def.name === "elu" ? { alpha: 0.7 } : {};
    for (const dtype of dtypes) {
      // The condition of `where` is bool; its other operands take the dtype under test.
      const types: ValueType[] = def.inputs.map((_, k) => ({ dtype: def.name === "where" && k === 0 ? "bool" : dtype, shape: shapes[k]! }));
      let outType: ValueType;
      try {
        outType = def.infer(types, attrs)[0]!;
      } catch {
        continue; // the op does not take this dtype
      }
      const g = new Graph(`sweep_${def.name}_${dtype}`);
      const ins = types.map((t, k) => g.addInput(t, `in${k}`));
      const y = g.addNode(def.name, ins, attrs, [outType]).outputs[0]!;
      // A second step reading the first, so the first's rounding matters.
      const zType = sc.getOp("maximum").infer([outType, outType], {})[0]!;
      const z = g.addNode("maximum", [y, y], {}, [zType]).outputs[0]!;
      const w = g.addNode("add", [z, ins[0]!], {}, [sc.getOp("add").infer([zType, types[0]!], {})[0]!]).outputs[0]!;
      g.setOutputs([y, w]);
      const lib = new FunctionLibrary();
      verifyGraph(g, lib);
      const data = types.map((t) => {
        const n = t.shape.reduce((a, b) => a * b, 1);
        return sc.reshape(nastyData(rng, t.dtype, n), t.shape);
      });
      const ref = interpret(g, data, { library: lib });
      fuse(g, lib);
      verifyGraph(g, lib);
      assert.deepEqual(ops(g), ["fusedElementwise"], `${def.name} ${dtype}`);
      assertIdentical(interpret(g, data, { library: lib }), ref, `${def.name} ${dtype}`);
      checked++;
    }
  }
  assert.ok(checked >= 150, `checked ${checked} op/dtype pairs`);
});

test("fusedKernel: cached loops, contiguous/scalar/strided inputs, in-place output, and errors", () => {
  const attrs: FusedAttrs = {
    numInputs: 3,
    steps: [
      { op: "mul", args: [0, 1], attrs: {} },
      { op: "add", args: [3, 2], attrs: {} },
      { op: "elu", args: [4], attrs: { alpha: 0.5 } },
    ],
    outputs: [2],
  };
  const rng = new Rng(11);
  const x = Float32Array.from({ length: 12 }, () => rng.uniform(-2, 2));
  const row = Float32Array.from({ length: 4 }, () => rng.uniform(-2, 2));
  const s = Float32Array.of(0.25);
  const k = fusedKernel(attrs, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]);
  assert.equal(k, fusedKernel(attrs, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]), "cached per shapes");
  const out = new Float32Array(12);
  k([x, row, s], [out]);
  for (let i = 0; i < 12; i++) {
    const m = Math.fround(x[i]! * row[i % 4]!);
    const a = Math.fround(m + s[0]!);
    const e = Math.fround(a > 0 ? a : 0.5 * Math.expm1(a));
    assert.ok(Object.is(out[i], e), `element ${i}`);
  }
  // In place: the output is the first input's storage.
  const inplace = x.slice();
  k([inplace, row, s], [inplace]);
  assert.deepEqual(inplace, out);
  assert.match(fusedKernelSource(attrs, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]), /Math\.fround/);

  assert.throws(
    () => fusedKernel({ ...attrs, outputs: [7] }, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]),
    (e: Error) => e instanceof sc.ValueError && /fusedElementwise/.test(e.message) && /output step 7 is out of range/.test(e.message),
  );
  assert.throws(
    () => fusedKernel({ ...attrs, steps: [{ op: "sum", args: [0], attrs: {} }], outputs: [0] }, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]),
    (e: Error) => e instanceof sc.ValueError && /not an elementwise op/.test(e.message),
  );
  assert.throws(
    () => fusedKernel({ ...attrs, steps: [{ op: "neg", args: [5], attrs: {} }], outputs: [0] }, [[3, 4], [4], []], [3, 4], ["float32", "float32", "float32"]),
    (e: Error) => e instanceof sc.ValueError && /reads operand 5/.test(e.message),
  );
  // A step that does not cover the loop's shape.
  assert.throws(
    () =>
      sc.getOp("fusedElementwise").infer(
        [
          { dtype: "float32", shape: [4] },
          { dtype: "float32", shape: [3, 4] },
        ],
        { numInputs: 2, steps: [{ op: "neg", args: [0], attrs: {} }, { op: "add", args: [2, 1], attrs: {} }], outputs: [0, 1] },
      ),
    (e: Error) => e instanceof sc.ValueError && /step 0 \(neg\) has shape \[4\]/.test(e.message),
  );
  assert.throws(() => fusedKernel(attrs, [[3, 4], [5], []], [3, 4], ["float32", "float32", "float32"]), sc.ShapeError);
});

// ---------------------------------------------------------------------------------------------
// memory planning

function planOf(fn: (...xs: sc.Tensor[]) => unknown, args: sc.Tensor[]) {
  const cf = sc.stage(fn).concrete(...args);
  const { graph, library } = cloneProgram(cf.graph, cf.library);
  return { graph, library, plan: planMemory(graph) };
}

function bufferOfValue(plan: ReturnType<typeof planMemory>, v: Value): number | undefined {
  return plan.bufferOf.get(v.id);
}

test("planMemory: an elementwise chain runs in one buffer, updated in place", () => {
  const { graph, plan } = planOf((x: sc.Tensor) => x.exp().tanh().sin().cos().neg(), [sc.ones([2, 3])]);
  assert.equal(plan.buffers.length, 1);
  assert.deepEqual(plan.buffers, [{ dtype: "float32", size: 6 }]);
  // exp reads the graph input (not in place); tanh, sin, cos overwrite their input; neg is the output.
  assert.deepEqual(
    graph.nodes.filter((n) => plan.inPlace.has(n.id)).map((n) => n.op),
    ["tanh", "sin", "cos"],
  );
  assert.equal(bufferOfValue(plan, graph.outputs[0]!), undefined, "graph outputs are not planned");
  assert.equal(plan.plannedBytes, 24);
  assert.equal(plan.naiveBytes, 4 * 24);
});

test("planMemory: buffers are reused after their last use; views alias their source", () => {
  const w = sc.ones([4, 4]);
  const { graph, plan } = planOf(
    (x: sc.Tensor) => {
      const a = sc.matmul(x, w);
      const b = sc.matmul(a, w);
      const c = sc.matmul(b, w);
      const d = sc.matmul(c, w);
      return sc.matmul(d, w);
    },
    [sc.ones([4, 4])],
  );
  // a, b, c, d: a and b overlap (b is computed from a), c can take a's buffer, d b's.
  assert.equal(plan.buffers.length, 2);
  const [a, b, c, d] = graph.nodes.map((n) => n.outputs[0]!);
  assert.equal(bufferOfValue(plan, c!), bufferOfValue(plan, a!));
  assert.equal(bufferOfValue(plan, d!), bufferOfValue(plan, b!));
  assert.notEqual(bufferOfValue(plan, a!), bufferOfValue(plan, b!));
  assert.equal(plan.inPlace.size, 0, "matmul never runs in place");
  assert.equal(plan.plannedBytes, 2 * 64);
  assert.equal(plan.naiveBytes, 4 * 64);

  const v = planOf(
    (x: sc.Tensor) => {
      const e = x.exp();
      const r = sc.reshape(e, [6]); // shares e's storage, used at the end
      const t = x.tanh(); // cannot take e's buffer: r still needs it
      const u = t.sin();
      return sc.reshape(u, [6]).add(r).neg();
    },
    [sc.ones([2, 3])],
  );
  const [e, r, t, u, r2, sum] = v.graph.nodes.map((n) => n.outputs[0]!);
  assert.equal(bufferOfValue(v.plan, r!), bufferOfValue(v.plan, e!));
  assert.notEqual(bufferOfValue(v.plan, t!), bufferOfValue(v.plan, e!));
  assert.equal(bufferOfValue(v.plan, u!), bufferOfValue(v.plan, t!), "sin runs in place on tanh's buffer");
  assert.equal(bufferOfValue(v.plan, r2!), bufferOfValue(v.plan, u!));
  assert.ok([bufferOfValue(v.plan, e!), bufferOfValue(v.plan, u!)].includes(bufferOfValue(v.plan, sum!)));
  assert.equal(v.plan.buffers.length, 2);
});

test("planMemory never writes over graph inputs, variables, constants or values that outlive the node", () => {
  const w = sc.variable(sc.ones([3]), { name: "wm" });
  const { graph, plan } = planOf(
    (x: sc.Tensor) => {
      const a = x.add(w); // x is an input, w's read is the variable's storage
      const k = sc.full([3], 2).add(a); // the fill is a constant: not planned
      const b = a.mul(k); // a still used below: not in place over a
      return b.add(a);
    },
    [sc.ones([3])],
  );
  const byOp = (op: string) => graph.nodes.filter((n) => n.op === op);
  assert.ok(!plan.inPlace.has(byOp("add")[0]!.id));
  assert.equal(bufferOfValue(plan, byOp("fill")[0]!.outputs[0]!), undefined);
  assert.equal(bufferOfValue(plan, byOp("readVariable")[0]!.outputs[0]!), undefined);
  assert.ok(!plan.inPlace.has(byOp("mul")[0]!.id) || bufferOfValue(plan, byOp("mul")[0]!.outputs[0]!) !== bufferOfValue(plan, byOp("add")[0]!.outputs[0]!));
  for (const v of graph.inputs) assert.equal(bufferOfValue(plan, v), undefined);
});

test("planMemory keeps operands of control flow alive as long as its outputs, and never plans assigned values", () => {
  const w = sc.variable(sc.zeros([3]), { name: "wp" });
  const { graph, plan } = planOf(
    (x: sc.Tensor) => {
      const a = x.exp();
      const c = sc.cond(sc.sum(x).greater(0), () => a.neg(), () => a) as sc.Tensor; // else: c is a's storage
      const b = x.sin().cos(); // defined while c (maybe a) is alive
      const d = c.add(b);
      w.assign(x.tanh());
      return d.mul(d);
    },
    [sc.ones([3])],
  );
  const out = (op: string) => graph.nodes.find((n) => n.op === op)!.outputs[0]!;
  const bufA = bufferOfValue(plan, out("exp"));
  assert.notEqual(bufA, undefined);
  assert.notEqual(bufferOfValue(plan, out("sin")), bufA);
  assert.notEqual(bufferOfValue(plan, out("cos")), bufA);
  assert.equal(bufferOfValue(plan, out("tanh")), undefined, "the variable keeps it");
  assert.equal(bufferOfValue(plan, out("cond")), undefined);
});

// ---------------------------------------------------------------------------------------------
// the pipeline

test("optimize runs inline, simplify, fold, cse, prune to a fixed point, then fusion, verifying each pass", () => {
  const small = sc.stage((x: sc.Tensor) => x.mul(sc.ones([3])).add(sc.zeros([3])));
  const fn = (x: sc.Tensor, y: sc.Tensor) => {
    const a = x.add(y);
    const b = x.add(y);
    x.mul(y).exp(); // dead
    const t = sc.transpose(sc.transpose(sc.reshape(sc.reshape(a, [6]), [3, 2]), [1, 0]), [1, 0]);
    const r = sc.arange(6).cast("float32").mul(2);
    return (small(sc.reshape(t, [2, 3])) as sc.Tensor).add(b).sub(sc.reshape(r, [2, 3])).neg().neg().tanh();
  };
  const args: [sc.Tensor, sc.Tensor] = [sc.ones([2, 3]), sc.ones([2, 3])];
  const cf = sc.stage(fn).concrete(...args);
  const original = text(cf.graph, cf.library);
  const passes: string[] = [];
  const { graph, library } = optimizeCopy(cf.graph, cf.library, { onPass: (p) => passes.push(p) });
  assert.equal(text(cf.graph, cf.library), original, "optimizeCopy leaves the concrete function alone");
  assert.deepEqual(passes.slice(0, 5), ["inline", "simplify", "constantFold", "cse", "prune"]);
  assert.equal(passes[passes.length - 1], "fusion");
  assert.equal(passes.length % 5, 1);
  assert.equal(
    text(graph, library),
    lines(
      "graph main(%0 arg0: float32[2, 3], %1 arg1: float32[2, 3]) -> (output_0: float32[2, 3]) {",
      '  %2: float32[2, 3] = constant() {dtype: "float32", shape: [2, 3], values: [0, 2, 4, 6, 8, 10]}',
      '  %3: float32[2, 3] = fusedElementwise(%0, %1, %2) {numInputs: 3, steps: [{op: "add", args: [0, 1], attrs: {}}, {op: "add", args: [3, 3], attrs: {}}, {op: "sub", args: [4, 2], attrs: {}}, {op: "tanh", args: [5], attrs: {}}], outputs: [3]}',
      "  return %3",
      "}",
    ),
  );
  const rng = new Rng(5);
  for (let i = 0; i < 3; i++) {
    const ins = args.map((a) => randomLike(rng, a));
    assertIdentical(interpret(graph, ins, { library }), interpret(cf.graph, [...ins, ...cf.captureValues()], { library: cf.library }));
  }
  // The optimized graph (constant and fused nodes included) survives the S-expression form.
  const back = parseSExpr(toSExpr(graph, library));
  assert.ok(graphsEqual(back.graph, graph, back.library, library));
});

test("optimize sinks constants into loops, drops unused invariants, and binds constant inputs", () => {
  const r = applyPasses(
    (x: sc.Tensor) => {
      const two = sc.full([3], 2);
      const one = sc.ones([3]);
      const [, acc] = sc.whileLoop(
        (i: sc.Tensor) => i.less(sc.full([], 3, "int32")),
        (i: sc.Tensor, a: sc.Tensor) => [i.add(sc.ones([], "int32")), a.mul(two).mul(one)],
        [sc.zeros([], "int32"), x],
      );
      return acc;
    },
    [sc.ones([3])],
    [(g, l) => optimize(g, l, { fuse: false })],
  );
  assert.match(r.before, /while\(%\d+, %0, %\d+, %\d+\) \{numLoopVars: 2\}/);
  assert.equal(
    r.after,
    lines(
      "graph main(%0 arg0: float32[3]) -> (output_0: float32[3]) {",
      '  %1: int32[] = fill() {shape: [], dtype: "int32", value: 0}',
      "  %2: int32[], %3: float32[3] = while(%1, %0) {numLoopVars: 2} {",
      "    cond(%4 cond_in0: int32[], %5 cond_in1: float32[3]) -> (output_0: bool[]) {",
      '      %6: int32[] = fill() {shape: [], dtype: "int32", value: 3}',
      "      %7: bool[] = less(%4, %6)",
      "      return %7",
      "    }",
      "    body(%8 body_in0: int32[], %9 body_in1: float32[3]) -> (output_0: int32[], output_1: float32[3]) {",
      '      %10: float32[3] = fill() {shape: [3], dtype: "float32", value: 2}',
      '      %11: int32[] = fill() {shape: [], dtype: "int32", value: 1}',
      "      %12: int32[] = add(%8, %11)",
      "      %13: float32[3] = mul(%9, %10)",
      "      return %12, %13",
      "    }",
      "  }",
      "  return %3",
      "}",
    ),
  );

  // A captured eager tensor is an input; bound as constant, x * c folds away.
  const c = sc.ones([3]);
  const f = sc.stage((x: sc.Tensor) => x.mul(c));
  const cf = f.concrete(sc.ones([3]));
  assert.equal(cf.graph.inputs.length, 2);
  const bound = optimizeCopy(cf.graph, cf.library, { constantInputs: new Map([[1, c]]) });
  assert.deepEqual(ops(bound.graph), []);
  assert.equal(bound.graph.outputs[0], bound.graph.inputs[0]);
});

test("optimize reports which pass broke the graph", () => {
  const g = new Graph("broken");
  const t: ValueType = { dtype: "float32", shape: [2] };
  const x = g.addInput(t, "x");
  const y = g.addNode("exp", [x], {}, [t]).outputs[0]!;
  g.setOutputs([y]);
  const bad: Pass = (h) => {
    h.nodes[0]!.outputs[0]!.type = { dtype: "float32", shape: [3] };
    return h;
  };
  assert.throws(
    () => optimize(g, new FunctionLibrary(), { onPass: (p, _n, h) => p === "cse" && bad(h, new FunctionLibrary()) }),
    (e: Error) => e instanceof GraphVerificationError && /after pass cse/.test(e.message),
  );
});
