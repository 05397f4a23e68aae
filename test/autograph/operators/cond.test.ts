/**
 * Staged conditionals (operators/cond.ts): a cond node carrying what the branches modify, merged
 * by type (weak JS numbers, arrays and objects, functions), errors naming the variable and line.
 * The calls are written as the source transform generates them (docs/autograph.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { ag, AutoGraphError } from "../../../src/autograph/operators/index.js";
import { LOC, graphOps, f32, type Any } from "./helpers.js";

/** if (sum(x) > 0) { y = x * 2; n = 2 } else { y = -x; n = 3 }  with a string that stays JS */
function branchy(x: sc.Tensor) {
  let y: Any = x;
  let n: Any = 1;
  let label = "same";
  const count = 4;
  ag.ifStmt(
    ag.gt(sc.sum(x), 0),
    () => {
      y = ag.mul(x, 2);
      n = 2;
      label = "same";
    },
    () => {
      y = ag.neg(x);
      n = 3;
    },
    () => [y, n, label, count],
    (s) => ([y, n, label] = s as [Any, Any, string]),
    ["y", "n", "label", "count"],
    LOC,
  );
  return { y, n, label, count };
}

test("staged if: a cond node carrying the modified tensors and numbers; results equal eager; equal JS values stay JS", () => {
  const staged = sc.stage(branchy);
  for (const data of [[1, 2], [-1, -2]]) {
    const x = f32(data);
    const e = branchy(x);
    const s = staged(x);
    assert.deepEqual(s.y.arraySync(), e.y.arraySync());
    assert.equal(s.n.item(), e.n);
    assert.equal(s.label, "same");
    assert.equal(s.count, 4);
  }
  assert.equal(staged.traceCount, 1);
  const cf = staged.concrete(f32([1, 2]));
  const cond = cf.graph.nodes.find((n) => n.op === "cond")!;
  assert.ok(cond, "the graph has a cond node");
  assert.deepEqual(cond.outputs.map((v) => v.type.dtype), ["float32", "int32"], "only y and n are carried");
  assert.equal(typeof (staged(f32([1])) as Any).label, "string");
});

test("staged if: nested branches, missing else, JS numbers meeting tensors are weakly typed", () => {
  const f = (x: sc.Tensor) => {
    let y: Any = 0;
    ag.ifStmt(
      ag.gt(sc.sum(x), 0),
      () => {
        ag.ifStmt(
          ag.gt(sc.sum(x), 10),
          () => (y = ag.mul(x, 100)),
          () => (y = ag.mul(x, 10)),
          () => [y],
          (s) => ([y] = s),
          ["y"],
          LOC,
        );
      },
      null,
      () => [y],
      (s) => ([y] = s),
      ["y"],
      LOC,
    );
    return y;
  };
  const staged = sc.stage(f);
  for (const d of [[1, 2], [20, 1], [-1, -1]]) {
    const x = sc.tensor(d, "float64");
    const e = f(x);
    const s = staged(x) as sc.Tensor;
    assert.equal(s.dtype, "float64", "the JS 0 of the untaken path takes the tensor's dtype");
    assert.deepEqual(s.arraySync(), typeof e === "number" ? [e, e] : e.arraySync());
  }
  assert.equal(graphOps(staged, sc.tensor([1, 2], "float64")).filter((o) => o === "cond").length, 2);
});

test("staged if: arrays and plain objects in the state are merged and updated in place (const objects keep identity)", () => {
  const f = (x: sc.Tensor) => {
    const st = { w: x, pair: [x, 1] as Any[], name: "n" };
    const before = st;
    ag.ifStmt(
      ag.gt(sc.sum(x), 0),
      () => {
        st.w = ag.mul(st.w, 3) as Any;
        ag.setItem(st.pair, 1, 5);
      },
      () => {
        st.pair = [ag.neg(x), 1];
      },
      () => [st],
      () => {},
      ["st"],
      LOC,
    );
    return { w: st.w, p0: st.pair[0], p1: st.pair[1], same: before === st, name: st.name };
  };
  const staged = sc.stage(f);
  for (const d of [[2, 1], [-2, -1]]) {
    const e = f(f32(d));
    const s = staged(f32(d)) as Any;
    assert.deepEqual(s.w.arraySync(), e.w.arraySync());
    assert.deepEqual(s.p0.arraySync(), e.p0.arraySync());
    assert.equal(s.p1.item(), e.p1);
    assert.equal(s.same, true);
    assert.equal(s.name, "n");
  }
});

test("staged if errors name the variable and the source location", () => {
  const oneBranch = sc.stage((x: sc.Tensor) => {
    let y: Any;
    ag.ifStmt(ag.gt(sc.sum(x), 0), () => (y = x), null, () => [y], (s) => ([y] = s), ["y"], "model.ts:7:3");
    return y;
  });
  assert.throws(
    () => oneBranch(f32([1])),
    (e: Error) =>
      e instanceof AutoGraphError &&
      e instanceof sc.StagecraftError &&
      e.message === "variable y is assigned in only one branch of a staged if (at model.ts:7:3); assign it before the if or in both branches" &&
      (e as AutoGraphError).location?.line === 7,
  );
  const jsDiff = sc.stage((x: sc.Tensor) => {
    let mode = "a";
    ag.ifStmt(ag.gt(sc.sum(x), 0), () => (mode = "b"), null, () => [mode], (s) => ([mode] = s as [string]), ["mode"], "model.ts:9:3");
    return mode;
  });
  assert.throws(() => jsDiff(f32([1])), (e: Error) => e instanceof AutoGraphError && /variable mode holds different JavaScript values/.test(e.message) && /model\.ts:9:3/.test(e.message));
  const dtypeDiff = sc.stage((x: sc.Tensor) => {
    let y: Any = x;
    ag.ifStmt(ag.gt(sc.sum(x), 0), () => (y = sc.cast(x, "int32")), null, () => [y], (s) => ([y] = s), ["y"], "model.ts:11:3");
    return y;
  });
  assert.throws(() => dtypeDiff(f32([1])), (e: Error) => e instanceof AutoGraphError && /variable y has dtype int32 in the first branch and float32/.test(e.message) && /model\.ts:11:3/.test(e.message));
  const structDiff = sc.stage((x: sc.Tensor) => {
    let ys: Any[] = [x];
    ag.ifStmt(ag.gt(sc.sum(x), 0), () => (ys = [x, x]), null, () => [ys], (s) => ([ys] = s as [Any[]]), ["ys"], "model.ts:13:3");
    return ys;
  });
  assert.throws(() => structDiff(f32([1])), (e: Error) => e instanceof AutoGraphError && /variable ys has a different structure/.test(e.message) && /model\.ts:13:3/.test(e.message));
  const rankDiff = sc.stage((x: sc.Tensor) => {
    let y: Any = x;
    ag.ifStmt(ag.gt(sc.sum(x), 0), () => (y = sc.sum(x)), null, () => [y], (s) => ([y] = s), ["y"], "model.ts:15:3");
    return y;
  });
  assert.throws(() => rankDiff(sc.ones([2, 2])), (e: Error) => e instanceof AutoGraphError && /variable y has shape \[\] in the first branch and \[2, 2\]/.test(e.message));
  const nonScalar = sc.stage((x: sc.Tensor) => {
    ag.ifStmt(ag.gt(x, 0), () => {}, null, undefined, undefined, [], "model.ts:17:3");
    return x;
  });
  assert.throws(() => nonScalar(f32([1, 2])), (e: Error) => e instanceof sc.ShapeError && /^if: the condition must be a scalar tensor, got shape \[2\]/.test(e.message) && /model\.ts:17:3/.test(e.message));
});

test("staged if with differing shapes of the same rank gives unknown dims", () => {
  const f = sc.stage((x: sc.Tensor) => {
    let y: Any = x;
    ag.ifStmt(ag.gt(sc.sum(x), 0), () => (y = sc.concat([x, x])), null, () => [y], (s) => ([y] = s), ["y"], LOC);
    return y;
  });
  assert.deepEqual((f(f32([1, 2])) as sc.Tensor).arraySync(), [1, 2, 1, 2]);
  assert.deepEqual((f(f32([-1, -2])) as sc.Tensor).arraySync(), [-1, -2]);
  const cond = f.concrete(f32([1, 2])).graph.nodes.find((n) => n.op === "cond")!;
  assert.deepEqual(cond.outputs[0]!.type.shape, [-1]);
});

test("staged ifExp and lazy and/or: the right operand is traced only inside a cond branch", () => {
  const f = (x: sc.Tensor) => {
    const s = sc.sum(x);
    const y = ag.ifExp(ag.gt(s, 0), () => ag.mul(x, 2), () => 0, LOC);
    const both = ag.and(() => ag.gt(s, 0), () => ag.lt(s, 10));
    const either = ag.or(() => ag.lt(s, -5), () => ag.gt(s, 5));
    const notPos = ag.not(ag.gt(s, 0));
    return [y, both, either, notPos];
  };
  const staged = sc.stage(f);
  for (const d of [[1, 2], [-4, -3], [4, 3], [20, 1]]) {
    const e = f(f32(d)) as Any[];
    const s = staged(f32(d)) as Any[];
    assert.deepEqual((s[0] as sc.Tensor).arraySync(), typeof e[0] === "number" ? [0, 0] : e[0].arraySync(), `ifExp ${d}`);
    for (let k = 1; k < 4; k++) {
      assert.equal(s[k].dtype, "bool");
      assert.equal(s[k].item(), e[k].item(), `${k} ${d}`);
    }
  }
  const cf = staged.concrete(f32([1, 2]));
  const top = cf.graph.nodes.map((n) => n.op);
  assert.equal(top.filter((o) => o === "cond").length, 3, "ifExp, && and || each stage a cond");
  assert.equal(top.filter((o) => o === "less").length, 1, "only the left operand of || is outside a branch: the right operand of && is traced in its cond");
});
