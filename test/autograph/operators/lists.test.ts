/**
 * Tensor lists (operators/state.ts): arrays a staged loop appends to or pops from.
 * The calls are written as the source transform generates them (docs/autograph.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { ag, AutoGraphError } from "../../../src/autograph/operators/index.js";
import { LOC, type Any } from "./helpers.js";

test("arrays appended to in staged loops become tensor lists, stacked after the loop", () => {
  const numbers = (x: Any): Any => (x instanceof sc.Tensor ? x.arraySync() : Array.isArray(x) ? x.map(numbers) : x);
  // let xs = [10]; for (i = 0; i < n; i++) xs.push(i * 2 + 1); s = 0; for (v of xs) s += v
  const f = (n: sc.Tensor) => {
    let xs: Any = [10];
    let i: Any = 0;
    ag.whileStmt(() => ag.lt(i, n), () => {
      ag.callMethod(xs, "push", () => [ag.add(ag.mul(i, 2), 1)]);
      i = ag.add(i, 1);
    }, () => [xs, i], (st) => ([xs, i] = st), ["xs", "i"], LOC);
    let s: Any = 0;
    ag.forOf(xs, (v: Any) => (s = ag.add(s, v)), () => [s], (st) => ([s] = st), ["s"], LOC);
    return [xs, s];
  };
  const staged = sc.stage(f);
  for (const n of [0, 1, 4]) {
    const e = f(sc.scalar(n, "int32"));
    const got = staged(sc.scalar(n, "int32")) as sc.Tensor[];
    assert.deepEqual(got[0]!.arraySync(), numbers(e[0]), `n=${n}`);
    assert.equal(got[1]!.item(), typeof e[1] === "number" ? e[1] : e[1].item());
  }
  assert.equal(staged.traceCount, 1);
  // matrix-vector product: an inner staged loop, the list read by index and length inside the loop
  const mv = (m: sc.Tensor, v: sc.Tensor) => {
    let out: Any = [];
    ag.forOf(m, (row: Any) => {
      let acc: Any = 0;
      let j: Any = 0;
      ag.forOf(row, (a: Any) => {
        acc = ag.add(acc, ag.mul(a, ag.getItem(v, j)));
        j = ag.add(j, 1);
      }, () => [acc, j], (st) => ([acc, j] = st), ["acc", "j"], LOC);
      ag.callMethod(out, "push", [acc]);
    }, () => [out], (st) => ([out] = st), ["out"], LOC);
    return out;
  };
  const m = sc.tensor([[1, 2], [3, 4], [5, 6]], "float64");
  const v = sc.tensor([10, -1], "float64");
  assert.deepEqual((sc.stage(mv)(m, v) as sc.Tensor).arraySync(), [8, 26, 44]);
  assert.deepEqual(numbers(mv(m, v)), [8, 26, 44]);
  // lists inside the loop: length, indexing, and pushes of what was read
  const fib = (n: sc.Tensor) => {
    let xs: Any = [0, 1];
    let i: Any = 2;
    ag.whileStmt(() => ag.lt(i, n), () => {
      const len = xs.length;
      ag.callMethod(xs, "push", [ag.add(ag.getItem(xs, ag.sub(len, 1)), ag.getItem(xs, ag.sub(len, 2)))]);
      i = ag.add(i, 1);
    }, () => [xs, i], (st) => ([xs, i] = st), ["xs", "i"], LOC);
    return xs;
  };
  assert.deepEqual((sc.stage(fib)(sc.scalar(8, "int32")) as sc.Tensor).arraySync(), [0, 1, 1, 2, 3, 5, 8, 13]);
  assert.deepEqual(numbers(fib(sc.scalar(8, "int32"))), [0, 1, 1, 2, 3, 5, 8, 13]);
  // a const array cannot be rebound to the list: a clear error
  const constArr = sc.stage((n: sc.Tensor) => {
    const xs: Any[] = [];
    let i: Any = 0;
    ag.whileStmt(() => ag.lt(i, n), () => {
      ag.callMethod(xs, "push", [i]);
      i = ag.add(i, 1);
    }, () => [xs, i], (st) => ([, i] = st), ["xs", "i"], "list.ts:4:4");
    return xs;
  });
  assert.throws(() => constArr(sc.scalar(3)), (e: Error) => e instanceof AutoGraphError && /variable xs is an array appended to inside a staged while loop \(at list\.ts:4:4\).*declare it with let/.test(e.message));
});
