/**
 * prune (graph/passes/prune.ts): what reaches no output goes; stateful nodes, effectful regions
 * and what they read stay.
 * Each pass runs on small staged functions, before and after in the printed text form, and the
 * result is run by the interpreter against the original on random inputs (bit for bit).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { prune } from "../../../src/graph/passes/index.js";
import { lines, applyPasses, ops } from "./helpers.js";

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
