/**
 * Indexing (operators/indexing.ts): getItem / setItem on JS values (getters, setters and
 * TypeErrors as JavaScript), on eager tensors (indices, slices, gathers, functional updates) and
 * staged (gathers, stacked arrays, masked updates).
 * The calls are written as the source transform generates them (docs/autograph.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { ag, AutoGraphError } from "../../../src/autograph/operators/index.js";
import { type Any } from "./helpers.js";

test("getItem / setItem on JS values: getters and setters run once, TypeErrors as JavaScript", () => {
  let gets = 0;
  let sets = 0;
  const obj = {
    get k() {
      gets++;
      return 42;
    },
    set k(v: number) {
      sets += v;
    },
  };
  assert.equal(ag.getItem(obj, "k"), 42);
  assert.equal(gets, 1);
  assert.equal(ag.setItem(obj, "k", 3), obj);
  assert.equal(sets, 3);
  const arr = [10, 20, 30];
  assert.equal(ag.getItem(arr, 1), 20);
  assert.equal(ag.getItem(arr, -1), undefined);
  assert.equal(ag.getItem(arr, "length"), 3);
  assert.equal(ag.setItem(arr, 5, 1), arr);
  assert.equal(arr.length, 6);
  assert.equal(ag.getItem("abc", 1), "b");
  assert.equal(ag.getItem(new Float32Array([1.5, 2]), 0), 1.5);
  assert.throws(() => ag.getItem(null, 0), TypeError);
  assert.throws(() => ag.getItem(undefined, "x"), TypeError);
  assert.throws(() => ag.setItem(undefined, "x", 1), TypeError);
  assert.throws(() => ag.setItem(Object.freeze({ a: 1 }), "a", 2), TypeError, "strict-mode assignment to a frozen object");
  assert.throws(() => ag.setItem("str", 0, "x"), TypeError);
  // sloppy-mode code ignores failed assignments, as JavaScript does there
  const frozen = Object.freeze([1, 2]);
  assert.equal(ag.setItem(frozen, 0, 9, false), frozen);
  assert.deepEqual(frozen, [1, 2]);
  assert.equal(ag.setItem("str", 0, "x", false), "str");
  assert.throws(() => ag.setItem(null, 0, 1, false), TypeError);
  const sloppyTarget: Record<string, number> = {};
  ag.setItem(sloppyTarget, "k", 1, false);
  assert.equal(sloppyTarget.k, 1);
  const key = { toString: () => "kk" };
  const o2: Record<string, number> = { kk: 9 };
  assert.equal(ag.getItem(o2, key), 9);
});

test("getItem / setItem on eager tensors: indices, negative indices, slices, gathers, functional updates", () => {
  const x = sc.tensor([[1, 2, 3], [4, 5, 6]]);
  assert.deepEqual((ag.getItem(x, 1) as sc.Tensor).arraySync(), [4, 5, 6]);
  assert.deepEqual((ag.getItem(x, -2) as sc.Tensor).arraySync(), [1, 2, 3]);
  assert.equal((ag.getItem(ag.getItem(x, 1), 2) as sc.Tensor).item(), 6);
  assert.deepEqual((ag.getItem(x, sc.scalar(1, "int32")) as sc.Tensor).arraySync(), [4, 5, 6]);
  assert.deepEqual((ag.getItem(x, sc.tensor([1, 0, 1], "int32")) as sc.Tensor).arraySync(), [[4, 5, 6], [1, 2, 3], [4, 5, 6]]);
  assert.deepEqual((ag.getItem(x, [1, 1]) as sc.Tensor).arraySync(), [[4, 5, 6], [4, 5, 6]]);
  assert.deepEqual((ag.getItem(x, ":, 1:") as sc.Tensor).arraySync(), [[2, 3], [5, 6]]);
  assert.deepEqual((ag.getItem(x, "..., 0") as sc.Tensor).arraySync(), [1, 4]);
  assert.deepEqual((ag.getItem(x, ag.slice(null, null, -1)) as sc.Tensor).arraySync(), [[4, 5, 6], [1, 2, 3]]);
  assert.deepEqual((ag.getItem(sc.arange(6), ag.slice(1, 5, 2)) as sc.Tensor).arraySync(), [1, 3]);
  // tensor properties stay properties
  assert.deepEqual(ag.getItem(x, "shape"), [2, 3]);
  assert.equal(ag.getItem(x, "nothing"), undefined);
  assert.throws(() => ag.getItem(x, 2), (e: Error) => e instanceof sc.IndexError && /index 2 is out of range for axis 0 of shape \[2, 3\]/.test(e.message));
  assert.throws(() => ag.getItem(x, 0.5), sc.IndexError);
  assert.throws(() => ag.getItem(sc.scalar(1), 0), sc.IndexError);
  assert.throws(() => ag.getItem(x, sc.tensor([1.5])), sc.DtypeError);
  assert.throws(() => ag.getItem(x, sc.tensor([true, false])), sc.DtypeError);

  const y = ag.setItem(x, 0, 9) as sc.Tensor;
  assert.deepEqual(y.arraySync(), [[9, 9, 9], [4, 5, 6]]);
  assert.deepEqual(x.arraySync(), [[1, 2, 3], [4, 5, 6]], "the original tensor is unchanged");
  assert.deepEqual((ag.setItem(x, -1, [7, 8, 9]) as sc.Tensor).arraySync(), [[1, 2, 3], [7, 8, 9]]);
  assert.deepEqual((ag.setItem(x, ":, 2", sc.tensor([0, -1])) as sc.Tensor).arraySync(), [[1, 2, 0], [4, 5, -1]]);
  assert.deepEqual((ag.setItem(sc.arange(6), ag.slice(1, 6, 2), sc.tensor([10, 30, 50], "int32")) as sc.Tensor).arraySync(), [0, 10, 2, 30, 4, 50]);
  assert.deepEqual((ag.setItem(x, sc.scalar(1, "int32"), 0) as sc.Tensor).arraySync(), [[1, 2, 3], [0, 0, 0]]);
  const ints = ag.setItem(sc.tensor([1, 2], "int32"), 0, 7) as sc.Tensor;
  assert.equal(ints.dtype, "int32");
  assert.throws(() => ag.setItem(x, 0, [1, 2]), (e: Error) => e instanceof sc.ShapeError && /setItem/.test(e.message));
  assert.throws(() => ag.setItem(x, 3, 1), sc.IndexError);
  // a Variable is assigned in place
  const v = sc.variable(sc.tensor([1, 2, 3]));
  assert.equal(ag.setItem(v, 1, 0), v);
  assert.deepEqual(v.arraySync(), [1, 0, 3]);
  // JS arrays indexed by a concrete scalar tensor use its value
  assert.equal(ag.getItem(["a", "b", "c"], sc.scalar(2, "int32")), "c");
  const arr = [1, 2];
  ag.setItem(arr, sc.scalar(0, "int32"), 5);
  assert.deepEqual(arr, [5, 2]);
});

test("staged indexing: symbolic indices gather, JS arrays of tensors are stacked, writes at symbolic indices are masked updates", () => {
  const f = (x: sc.Tensor, i: sc.Tensor) => {
    const row = ag.getItem(x, i);
    const fromArray = ag.getItem([sc.scalar(10), sc.scalar(20), sc.scalar(30)], i);
    const fromNumbers = ag.getItem([5, 6, 7], i);
    const updated = ag.setItem(x, i, ag.mul(row, -1));
    const last = ag.getItem(x, -1);
    return [row, fromArray, fromNumbers, updated, last];
  };
  const staged = sc.stage(f);
  const x = sc.tensor([[1, 2], [3, 4], [5, 6]]);
  for (const k of [0, 2, -1]) {
    const idx = sc.scalar(k, "int32");
    const s = staged(x, idx) as sc.Tensor[];
    const e = f(x, idx) as sc.Tensor[];
    const kk = k < 0 ? k + 3 : k;
    assert.deepEqual(s[0]!.arraySync(), e[0]!.arraySync());
    assert.deepEqual(s[0]!.arraySync(), x.arraySync()[kk], "negative tensor indices count from the end");
    assert.equal(s[1]!.item(), [10, 20, 30][kk]);
    assert.equal(s[2]!.item(), [5, 6, 7][kk]);
    const want = [[1, 2], [3, 4], [5, 6]];
    want[kk] = want[kk]!.map((v) => -v);
    assert.deepEqual(s[3]!.arraySync(), want, `setItem at ${k}`);
    assert.deepEqual(s[4]!.arraySync(), [5, 6]);
  }
  const bad = sc.stage((i: sc.Tensor) => ag.getItem({ a: 1 }, i));
  assert.throws(() => bad(sc.scalar(0, "int32")), (e: Error) => e instanceof AutoGraphError && /symbolic tensor/.test(e.message));
  // An array of numbers written at a symbolic index becomes a tensor list of its elements.
  const listSet = sc.stage((i: sc.Tensor) => (ag.setItem([1, 2], i, 3) as Any).stack());
  assert.deepEqual(listSet(sc.scalar(1, "int32")).arraySync(), [1, 3]);
  assert.deepEqual(listSet(sc.scalar(-2, "int32")).arraySync(), [3, 2]);
  const badSet = sc.stage((i: sc.Tensor) => ag.setItem(["a", "b"], i, 3));
  assert.throws(() => badSet(sc.scalar(0, "int32")), AutoGraphError);
});
