/**
 * cse (graph/passes/cse.ts): equal pure nodes merge (commutative operands too); stateful nodes,
 * host calls and variable reads across writes never do.
 * Each pass runs on small staged functions, before and after in the printed text form, and the
 * result is run by the interpreter against the original on random inputs (bit for bit).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { verifyGraph } from "../../../src/graph/verify.js";
import { interpret } from "../../../src/exec/interpreter.js";
import { FunctionLibrary, Graph, type ValueType } from "../../../src/graph/ir.js";
import { cloneProgram, cse, prune } from "../../../src/graph/passes/index.js";
import { text, lines, applyPasses, ops } from "./helpers.js";

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
