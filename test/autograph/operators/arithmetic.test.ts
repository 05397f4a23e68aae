/**
 * Arithmetic and comparison operators (operators/arithmetic.ts): JavaScript's own results, exceptions and
 * operand order with JS values; registry ops with JavaScript's conventions on eager tensors; staged
 * arithmetic equal to eager.
 * The calls are written as the source transform generates them (docs/autograph.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { ag } from "../../../src/autograph/operators/index.js";
import { Rng } from "../../util/rng.js";
import { outcome, sameOutcome, jsValues, show, near, type Any } from "./helpers.js";

test("arithmetic and comparison operators on JS values are JavaScript's, including exceptions", () => {
  const natives: Record<string, (a: Any, b: Any) => unknown> = {
    add: (a, b) => a + b,
    sub: (a, b) => a - b,
    mul: (a, b) => a * b,
    div: (a, b) => a / b,
    mod: (a, b) => a % b,
    pow: (a, b) => a ** b,
    lt: (a, b) => a < b,
    le: (a, b) => a <= b,
    gt: (a, b) => a > b,
    ge: (a, b) => a >= b,
    eq: (a, b) => a === b,
    ne: (a, b) => a !== b,
    looseEq: (a, b) => a == b,
    looseNe: (a, b) => a != b,
  };
  let checked = 0;
  for (const [name, native] of Object.entries(natives)) {
    const op = (ag as Any)[name] as (a: unknown, b: unknown) => unknown;
    for (const a of jsValues)
      for (const b of jsValues) {
        sameOutcome(outcome(() => op(a, b)), outcome(() => native(a, b)), `${name}(${show(a)}, ${show(b)})`);
        checked++;
      }
  }
  for (const a of jsValues) {
    sameOutcome(outcome(() => ag.neg(a)), outcome(() => -(a as Any)), `neg(${show(a)})`);
    sameOutcome(outcome(() => ag.pos(a)), outcome(() => +(a as Any)), `pos(${show(a)})`);
    sameOutcome(outcome(() => ag.not(a)), outcome(() => !a), `not(${show(a)})`);
  }
  assert.ok(checked > 7000);
  assert.equal(ag.add("a", 1), "a1");
  assert.equal(ag.lt(null, 1), true);
  assert.equal(ag.eq(NaN, NaN), false);
  assert.equal(ag.mod(-7, 3), -1);
  const o = {};
  assert.equal(ag.eq(o, o), true);
  assert.equal(ag.eq({}, {}), false);
});

test("operators convert JS operands in JavaScript's order (valueOf side effects)", () => {
  const run = (f: (a: Any, b: Any) => unknown) => {
    const log: string[] = [];
    const mk = (n: string, v: unknown) => ({
      valueOf() {
        log.push(n);
        return v;
      },
    });
    const r = outcome(() => f(mk("a", 2), mk("b", 3)));
    return { r, log };
  };
  for (const [name, native] of [
    ["add", (a: Any, b: Any) => a + b],
    ["sub", (a: Any, b: Any) => a - b],
    ["lt", (a: Any, b: Any) => a < b],
    ["gt", (a: Any, b: Any) => a > b],
    ["ge", (a: Any, b: Any) => a >= b],
    ["looseEq", (a: Any, b: Any) => a == b],
    ["pow", (a: Any, b: Any) => a ** b],
  ] as const) {
    const x = run((a, b) => (ag as Any)[name](a, b));
    const y = run(native);
    assert.deepEqual(x, y, name);
  }
  // Symbols cannot be converted: the same TypeError.
  assert.throws(() => ag.add(Symbol("s"), 1), TypeError);
  assert.throws(() => ag.add(1n, 1), TypeError);
});

test("arithmetic on eager tensors maps to registry ops; % keeps JavaScript's sign; bools count as 0/1", () => {
  const a = sc.tensor([-7, 7, -7, 7, 6, 7.5], "float64");
  const b = sc.tensor([3, 3, -3, -3, 3, 2], "float64");
  const av = a.arraySync() as number[];
  const bv = b.arraySync() as number[];
  const ops: [string, (x: number, y: number) => number | boolean][] = [
    ["add", (x, y) => x + y],
    ["sub", (x, y) => x - y],
    ["mul", (x, y) => x * y],
    ["div", (x, y) => x / y],
    ["mod", (x, y) => x % y],
    ["pow", (x, y) => x ** y],
    ["lt", (x, y) => x < y],
    ["le", (x, y) => x <= y],
    ["gt", (x, y) => x > y],
    ["ge", (x, y) => x >= y],
    ["eq", (x, y) => x === y],
    ["ne", (x, y) => x !== y],
    ["looseEq", (x, y) => x == y],
    ["looseNe", (x, y) => x != y],
  ];
  for (const [name, ref] of ops) {
    const got = ((ag as Any)[name](a, b) as sc.Tensor).arraySync() as (number | boolean)[];
    const want = av.map((x, i) => ref(x, bv[i]!));
    assert.deepEqual(got.map((v) => (typeof v === "number" ? Number(v.toPrecision(12)) : v)), want.map((v) => (typeof v === "number" ? Number(v.toPrecision(12)) : v)), name);
  }
  const ints = sc.tensor([-7, 7, -7, 7, 0], "int32");
  assert.deepEqual((ag.mod(ints, sc.tensor([3, 3, -3, -3, 5], "int32")) as sc.Tensor).arraySync(), [-7 % 3, 7 % 3, -7 % -3, 7 % -3, 0]);
  assert.equal((ag.mod(ints, 3) as sc.Tensor).dtype, "int32");
  assert.deepEqual((ag.mod(-7, sc.tensor(3)) as sc.Tensor).arraySync(), -1);
  // weak JS numbers keep the tensor's dtype
  assert.equal((ag.mul(sc.tensor([1], "int32"), 2) as sc.Tensor).dtype, "int32");
  assert.equal((ag.add(2, sc.tensor([1], "float64")) as sc.Tensor).dtype, "float64");
  assert.deepEqual((ag.add(sc.tensor([1, 2]), [10, 20]) as sc.Tensor).arraySync(), [11, 22]);
  const bools = sc.tensor([true, false]);
  assert.deepEqual((ag.add(bools, bools) as sc.Tensor).arraySync(), [2, 0]);
  assert.deepEqual((ag.neg(bools) as sc.Tensor).arraySync(), [-1, 0], "int32 has no -0");
  assert.deepEqual((ag.pos(bools) as sc.Tensor).arraySync(), [1, 0]);
  assert.deepEqual((ag.neg(sc.tensor([1, -2])) as sc.Tensor).arraySync(), [-1, 2]);
  // strings concatenate as in JS; null/undefined/objects are refused (no silent NaN)
  assert.equal(ag.add("t=", sc.scalar(1, "int32")), "t=Tensor(1, shape=[], dtype=int32)");
  assert.throws(() => ag.sub(sc.tensor([1]), null), (e: Error) => e instanceof sc.ValueError && /^-: cannot apply - to a float32\[1\] tensor and null/.test(e.message));
  assert.throws(() => ag.lt(sc.tensor([1]), "a"), sc.ValueError);
  assert.throws(() => ag.mul({}, sc.tensor([1])), sc.ValueError);
  // identity comparisons with non-numbers keep JavaScript's answer
  const t = sc.tensor([1]);
  assert.equal(ag.eq(t, null), false);
  assert.equal(ag.ne(t, undefined), true);
  assert.equal(ag.looseEq(t, null), false);
  assert.equal(ag.eq(t, "1"), false);
  assert.deepEqual((ag.eq(t, t) as sc.Tensor).arraySync(), [true]);
  assert.deepEqual((ag.eq(sc.tensor([NaN]), sc.tensor([NaN])) as sc.Tensor).arraySync(), [false]);
  // variables are read
  const v = sc.variable(sc.tensor([2, 3]));
  assert.deepEqual((ag.mul(v, 2) as sc.Tensor).arraySync(), [4, 6]);
});

test("staged math and arithmetic agree with eager on random data", () => {
  const rng = new Rng(7);
  const fn = (x: sc.Tensor, y: sc.Tensor) => [
    ag.math.exp(x),
    ag.math.round(ag.mul(x, 3)),
    ag.math.max(x, y, 0),
    ag.math.abs(ag.sub(x, y)),
    ag.mod(ag.mul(x, 10), 3),
    ag.pow(ag.math.abs(x), 1.5),
    ag.div(x, ag.add(ag.math.abs(y), 1)),
  ];
  const staged = sc.stage(fn);
  for (let k = 0; k < 3; k++) {
    const x = rng.tensor([4], -2, 2);
    const y = rng.tensor([4], -2, 2);
    const e = fn(x, y) as sc.Tensor[];
    const s = staged(x, y) as sc.Tensor[];
    e.forEach((t, i) => near(s[i]!.arraySync(), t.arraySync(), 1e-12));
    const xv = x.arraySync() as number[];
    near((e[4] as sc.Tensor).arraySync(), xv.map((v) => (v * 10) % 3), 1e-9);
  }
});

test("ag.increment and ag.toNumeric (x++ / x-- on objects): JavaScript's ++ on JS values; on tensors one add or sub of 1", () => {
  const natives = { inc: (a: Any) => ++a, dec: (a: Any) => --a, old: (a: Any) => a++ };
  const objects = [null, {}, [], [3], new Date(5), { valueOf: () => 7 }, { valueOf: () => 7n }, { valueOf: () => "2" }, { toString: () => "x" }, Object(1n), Object("4")];
  for (const a of [...jsValues, ...objects]) {
    sameOutcome(outcome(() => ag.increment(a, 1)), outcome(() => natives.inc(a)), `increment(${show(a)}, 1)`);
    sameOutcome(outcome(() => ag.increment(a, -1)), outcome(() => natives.dec(a)), `increment(${show(a)}, -1)`);
    sameOutcome(outcome(() => ag.toNumeric(a)), outcome(() => natives.old(a)), `toNumeric(${show(a)})`);
  }
  assert.equal(ag.increment({ valueOf: () => 7n }, 1), 8n, "BigInt-valued objects increment as ++ does (x - -1 would throw)");
  const ints = sc.tensor([1, 2], "int32");
  const up = ag.increment(ints, 1) as sc.Tensor, down = ag.increment(ints, -1) as sc.Tensor;
  assert.deepEqual([up.dtype, up.arraySync(), down.dtype, down.arraySync()], ["int32", [2, 3], "int32", [0, 1]]);
  assert.equal(ag.toNumeric(ints), ints, "a tensor's old value is the tensor itself (no op)");
  assert.deepEqual((ag.increment(sc.tensor([true, false]), 1) as sc.Tensor).arraySync(), [2, 1]);
  assert.deepEqual((ag.toNumeric(sc.tensor([true, false])) as sc.Tensor).arraySync(), [1, 0]);
  const v = new sc.Variable(sc.tensor([1.5]));
  assert.deepEqual((ag.increment(v, 1) as sc.Tensor).arraySync(), [2.5]);
  assert.deepEqual(v.read().arraySync(), [1.5], "the variable is read, not assigned");
  // staged: the loop counter (a JS number carried as an int32 tensor) steps by one add
  const g = sc.stage((n: sc.Tensor) => {
    let i: Any = 0, s: Any = 0;
    ag.whileStmt(() => ag.lt(i, n), () => { s = ag.add(s, ag.toNumeric(i)); i = ag.increment(i, 1); }, () => [i, s], (st) => ([i, s] = st as Any[]), ["i", "s"], null);
    return [i, s];
  }, { autograph: false });
  assert.deepEqual((g(sc.scalar(4, "int32")) as sc.Tensor[]).map((t) => [t.dtype, t.arraySync()]), [["int32", 4], ["int32", 6]]);
});
