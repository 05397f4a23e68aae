/**
 * The AutoGraph runtime operators (`ag.*`): with JS values each is exactly the JavaScript
 * construct it replaces (results, side effects and their order, exceptions); with eager
 * tensors the construct runs natively on the concrete value; inside sc.stage with symbolic
 * tensors it stages cond / while nodes whose results equal the eager ones. The calls below
 * are written as the source transform generates them (docs/autograph.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../src/api/index.js";
import { ag, AutoGraphError, AssertionFailedError, RangeObject } from "../src/autograph/operators/index.js";
import { Rng } from "./util/rng.js";

type Any = any;
const LOC = "user.ts:12:5";

/** The outcome of a thunk: its value, or the name of the error class it threw. */
function outcome(f: () => unknown): { value?: unknown; error?: string } {
  try {
    return { value: f() };
  } catch (e) {
    return { error: (e as Error).constructor.name };
  }
}

function sameOutcome(a: { value?: unknown; error?: string }, b: { value?: unknown; error?: string }, what: string): void {
  if (a.error || b.error) {
    assert.equal(a.error, b.error, what);
    return;
  }
  if (typeof a.value === "number" || typeof a.value === "string" || typeof a.value === "boolean" || typeof a.value === "bigint") {
    assert.ok(Object.is(a.value, b.value), `${what}: ${String(a.value)} vs ${String(b.value)}`);
  } else assert.deepEqual(a.value, b.value, what);
}

const jsValues: unknown[] = [0, -0, 1, -7, 3, 2.5, NaN, Infinity, -Infinity, "", "a", "12", " 3 ", true, false, null, undefined, [], [1], [1, 2], {}, 10n, -3n];
const show = (v: unknown) => (typeof v === "bigint" ? `${v}n` : typeof v === "string" ? JSON.stringify(v) : Array.isArray(v) ? `[${v.join(",")}]` : String(v));

function graphOps(f: { concrete: (...a: Any[]) => sc.ConcreteFunction }, ...args: Any[]): string[] {
  const out: string[] = [];
  const walk = (g: Any) => {
    for (const n of g.nodes) {
      out.push(n.op);
      for (const r of n.regions) walk(r);
    }
  };
  walk(f.concrete(...args).graph);
  return out;
}

const f32 = (v: Any) => sc.tensor(v);
const near = (a: Any, b: Any, tol = 1e-5) => {
  const fa = [a].flat(Infinity) as number[];
  const fb = [b].flat(Infinity) as number[];
  assert.equal(fa.length, fb.length);
  fa.forEach((x, i) =>
    assert.ok((Number.isNaN(x) && Number.isNaN(fb[i]!)) || x === fb[i] || Math.abs(x - fb[i]!) <= tol * (1 + Math.abs(fb[i]!)), `${x} vs ${fb[i]} in ${JSON.stringify(a)} vs ${JSON.stringify(b)}`),
  );
};

// =============================================================================================
// JS values: exactly the JavaScript construct

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

test("and / or / nullish are lazy exactly as && || ?? are", () => {
  const log: string[] = [];
  const v = (name: string, value: unknown) => () => {
    log.push(name);
    return value;
  };
  const cases: unknown[] = [0, 1, "", "x", null, undefined, NaN, [], false, true];
  for (const a of cases)
    for (const b of cases) {
      log.length = 0;
      const r1 = ag.and(v("a", a), v("b", b));
      const l1 = log.splice(0);
      const r2 = (v("a", a)() as Any) && v("b", b)();
      const l2 = log.splice(0);
      assert.ok(Object.is(r1, r2) && l1.join() === l2.join(), `and ${show(a)} ${show(b)}`);
      const r3 = ag.or(v("a", a), v("b", b));
      const l3 = log.splice(0);
      const r4 = (v("a", a)() as Any) || v("b", b)();
      const l4 = log.splice(0);
      assert.ok(Object.is(r3, r4) && l3.join() === l4.join(), `or ${show(a)} ${show(b)}`);
      const r5 = ag.nullish(v("a", a), v("b", b));
      const l5 = log.splice(0);
      const r6 = (v("a", a)() as Any) ?? v("b", b)();
      const l6 = log.splice(0);
      assert.ok(Object.is(r5, r6) && l5.join() === l6.join(), `nullish ${show(a)} ${show(b)}`);
    }
  let called = false;
  assert.equal(
    ag.and(
      () => 0,
      () => (called = true),
    ),
    0,
  );
  assert.equal(called, false);
  assert.throws(() => ag.or(() => 0, () => { throw new RangeError("b"); }), RangeError);
});

test("ifStmt / ifExp on JS values run the chosen branch only, with JS truthiness", () => {
  for (const c of [0, 1, "", "a", null, undefined, NaN, [], {}, -0, 0n, 1n]) {
    const log: string[] = [];
    ag.ifStmt(c, () => log.push("then"), () => log.push("else"), undefined, undefined, [], LOC);
    assert.deepEqual(log, [c ? "then" : "else"], show(c));
    assert.equal(ag.ifExp(c, () => "t", () => "e", LOC), c ? "t" : "e");
  }
  const log: string[] = [];
  ag.ifStmt(false, () => log.push("then"), null);
  ag.ifStmt(false, () => log.push("then"));
  assert.deepEqual(log, []);
  assert.throws(() => ag.ifStmt(true, () => { throw new SyntaxError("x"); }), SyntaxError);
});

test("whileStmt on JS values: test re-evaluated before each iteration, side effects in order", () => {
  const log: string[] = [];
  let i = 0;
  let acc = "";
  ag.whileStmt(
    () => (log.push(`test${i}`), i < 3),
    () => {
      log.push(`body${i}`);
      acc += i;
      i++;
    },
    () => [i, acc],
    (s) => ([i, acc] = s as [number, string]),
    ["i", "acc"],
    LOC,
  );
  assert.deepEqual(log, ["test0", "body0", "test1", "body1", "test2", "body2", "test3"]);
  assert.equal(acc, "012");
  let n = 0;
  ag.whileStmt(() => null, () => n++);
  assert.equal(n, 0);
  // for (;;) lowered as while with a break flag
  let $brk = false;
  let k = 0;
  ag.whileStmt(
    () => ag.and(() => ag.not($brk), () => true),
    () => {
      k++;
      ag.ifStmt(ag.ge(k, 5), () => ($brk = true), null);
    },
  );
  assert.equal(k, 5);
});

test("forOf on JS iterables: fresh binding per item, break closes the iterator, throws close it too", () => {
  const closures: (() => number)[] = [];
  ag.forOf([1, 2, 3], (x: number) => closures.push(() => x));
  assert.deepEqual(closures.map((f) => f()), [1, 2, 3]);
  const chars: string[] = [];
  ag.forOf("héllo", (c: string) => chars.push(c));
  assert.deepEqual(chars, [..."héllo"]);
  const seen: number[] = [];
  ag.forOf(new Set([5, 6]), (x: number) => seen.push(x));
  ag.forOf(new Map([[7, 8]]).keys(), (x: number) => seen.push(x));
  assert.deepEqual(seen, [5, 6, 7]);

  const events: string[] = [];
  function* gen() {
    try {
      for (let i = 0; ; i++) {
        events.push(`yield${i}`);
        yield i;
      }
    } finally {
      events.push("closed");
    }
  }
  let $brk = false;
  ag.forOf(
    gen(),
    (x: number) => {
      events.push(`body${x}`);
      if (x === 2) $brk = true;
    },
    () => [$brk],
    (s) => ([$brk] = s as [boolean]),
    ["$brk"],
    LOC,
    () => ag.not($brk),
  );
  const native: string[] = [];
  function* gen2() {
    try {
      for (let i = 0; ; i++) {
        native.push(`yield${i}`);
        yield i;
      }
    } finally {
      native.push("closed");
    }
  }
  for (const x of gen2()) {
    native.push(`body${x}`);
    if (x === 2) break;
  }
  assert.deepEqual(events, native);

  const thrown: string[] = [];
  function* gen3() {
    try {
      yield 1;
      yield 2;
    } finally {
      thrown.push("closed");
    }
  }
  assert.throws(() => ag.forOf(gen3(), () => { throw new EvalError("boom"); }), EvalError);
  assert.deepEqual(thrown, ["closed"]);
  assert.throws(() => ag.forOf(5, () => {}), TypeError);
  assert.throws(() => ag.forOf({}, () => {}), TypeError);
  assert.throws(() => ag.forOf(null, () => {}), TypeError);
});

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

test("call / callMethod preserve this, use converted twins and the converter (cached), call natives as they are", () => {
  const calls: string[] = [];
  function user(this: unknown, a: number) {
    calls.push("original");
    return [this, a];
  }
  function twin(this: unknown, a: number) {
    calls.push("twin");
    return [this, a * 10];
  }
  ag.registerConverted(user, twin);
  assert.equal(ag.getConverted(user), twin);
  const self = { tag: 1 };
  assert.deepEqual(ag.call(user, self, [2]), [self, 20]);
  assert.deepEqual(calls, ["twin"]);

  const converted: unknown[] = [];
  ag.setConverter((fn) => {
    converted.push(fn);
    if (fn.name === "convertMe") return function convertMe$ag(this: unknown, x: number) {
      return ["converted", this, x];
    };
    return null;
  });
  try {
    function convertMe(x: number) {
      return ["plain", x];
    }
    function leaveMe(x: number) {
      return ["plain", x];
    }
    assert.deepEqual(ag.call(convertMe, undefined, [1]), ["converted", undefined, 1]);
    assert.deepEqual(ag.call(convertMe, undefined, [2]), ["converted", undefined, 2]);
    assert.deepEqual(ag.call(leaveMe, undefined, [3]), ["plain", 3]);
    ag.call(leaveMe, undefined, [3]);
    assert.deepEqual(converted, [convertMe, leaveMe], "the converter runs once per function");
    // natives, classes and library functions never reach the converter; a bound function does
    // (the converter looks through it to its target)
    assert.equal(ag.call(Math.max, undefined, [1, 5]), 5);
    assert.deepEqual(ag.callMethod([3, 1, 2], "sort", []), [1, 2, 3]);
    const boundUser = user.bind(null);
    assert.equal(ag.call(boundUser, undefined, [1]) instanceof Array, true);
    assert.throws(() => ag.call(class A {}, undefined, []), TypeError);
    ag.call(sc.relu, undefined, [sc.tensor([1])]);
    ag.callMethod(sc.tensor([1]), "add", [1]);
    assert.deepEqual(converted, [convertMe, leaveMe, boundUser]);
  } finally {
    ag.setConverter(null);
  }
  const o = {
    v: 5,
    get(this: { v: number }, k: number) {
      return this.v + k;
    },
  };
  assert.equal(ag.callMethod(o, "get", [1]), 6);
  assert.throws(() => ag.call(undefined, undefined, []), TypeError);
  assert.throws(() => ag.callMethod(null, "x", []), TypeError);
  assert.throws(() => ag.callMethod({}, "nope", []), TypeError);
  // With an argument thunk the method is read before the arguments are evaluated (JS order).
  const order: string[] = [];
  const target = {
    get m() {
      order.push("get m");
      return (x: number) => x;
    },
  };
  ag.callMethod(target, "m", () => [(order.push("arg"), 1)]);
  assert.deepEqual(order, ["get m", "arg"]);
});

test("recursion whose base case depends on a symbolic tensor is staged as a recursive graph function", () => {
  // function fact(k) { if (k <= 1) return 1; return k * fact(k - 1) }  (as converted)
  function fact(k: Any): Any {
    let $ret: Any = false;
    let $retval: Any;
    ag.ifStmt(ag.le(k, 1), () => {
      $ret = true;
      $retval = 1;
    }, () => {}, () => [$ret, $retval], (s) => ([$ret, $retval] = s), ["$ret", "$retval"], LOC);
    ag.ifStmt(ag.not($ret), () => {
      $ret = true;
      $retval = ag.mul(k, ag.call(fact, undefined, [ag.sub(k, 1)]));
    }, () => {}, () => [$ret, $retval], (s) => ([$ret, $retval] = s), ["$ret", "$retval"], LOC);
    return $retval;
  }
  assert.equal(ag.call(fact, undefined, [6]), 720);
  assert.equal((ag.call(fact, undefined, [sc.scalar(5)]) as sc.Tensor).item(), 120);
  const staged = sc.stage((n: sc.Tensor) => ag.call(fact, undefined, [n]), { autograph: false });
  assert.equal((staged(sc.scalar(5)) as sc.Tensor).item(), 120);
  assert.equal((staged(sc.scalar(7)) as sc.Tensor).item(), 5040);
  assert.equal(staged.traceCount, 1);
  const cf = staged.concrete(sc.scalar(5));
  const callees = [...cf.library.functions.values()].filter((g) => g !== cf.graph);
  const callsItself = (g: import("../src/graph/ir.js").Graph): boolean =>
    g.nodes.some((n) => (n.op === "call" && n.attrs.callee === g.name) || n.regions.some((r) => r.nodes.some((m) => m.op === "call" && m.attrs.callee === g.name)));
  assert.ok(callees.some(callsItself), "a library function calls itself");
  // deep recursion decided by JS values inside one staged branch is fine
  const depth = (k: number): number => (k === 0 ? 0 : 1 + (ag.call(depth, undefined, [k - 1]) as number));
  const inBranch = sc.stage((x: sc.Tensor) => {
    let y: Any = x;
    ag.ifStmt(ag.gt(sc.sum(x), 0), () => (y = ag.add(x, ag.call(depth, undefined, [300]))), () => {}, () => [y], (s) => ([y] = s), ["y"], LOC);
    return y;
  });
  assert.deepEqual((inBranch(f32([1])) as sc.Tensor).arraySync(), [301]);
});

test("print is console.log eagerly", (t) => {
  const logs: unknown[][] = [];
  t.mock.method(console, "log", (...a: unknown[]) => logs.push(a));
  ag.print("a", 1, { b: 2 });
  ag.callMethod(console, "log", ["via method", 3]);
  assert.deepEqual(logs, [["a", 1, { b: 2 }], ["via method", 3]]);
});

test("math on numbers is Math; on tensors it is the registry op with JS conventions", () => {
  const base = [-2.5, -1.5, -0.5, -0.2, 0, 0.3, 0.5, 1.5, 2.5, 3.7];
  const xs = [...base, ...base.map((v) => v / 4)];
  for (const name of ["abs", "sign", "floor", "ceil", "round", "trunc", "exp", "sin", "cos", "tanh", "atan", "sinh", "cbrt", "asinh", "atanh", "expm1", "log1p"]) {
    for (const x of xs) assert.ok(Object.is((ag.math as Any)[name](x), (Math as Any)[name](x)), `${name}(${x})`);
    const t = sc.tensor(xs, "float64");
    const got = ((ag.math as Any)[name](t) as sc.Tensor).arraySync() as number[];
    near(got, xs.map((x) => (Math as Any)[name](x)), 1e-12);
  }
  assert.equal(ag.math.max(1, 7, 3), 7);
  assert.equal(ag.math.max(), -Infinity);
  assert.ok(Number.isNaN(ag.math.max(1, NaN)));
  assert.equal(ag.math.PI, Math.PI);
  assert.deepEqual(ag.math.max(sc.tensor([1, 5]), 2, sc.tensor([3, 0])).arraySync(), [3, 5]);
  assert.deepEqual(ag.math.min(sc.tensor([1, 5]), 2).arraySync(), [1, 2]);
  assert.deepEqual(ag.math.pow(sc.tensor([2, 3]), 2).arraySync(), [4, 9]);
  near(ag.math.sqrt(sc.tensor([4, 9])).arraySync(), [2, 3]);
  near(ag.math.log(sc.tensor([1, Math.E])).arraySync(), [0, 1]);
  near(ag.math.hypot(sc.tensor([3]), 4).arraySync(), [5]);
  near(ag.math.log2(sc.tensor([8], "float64")).arraySync(), [3], 1e-12);
  near(ag.math.acosh(sc.tensor([1, 2.5], "float64")).arraySync(), [Math.acosh(1), Math.acosh(2.5)], 1e-12);
  assert.equal(ag.callMethod(Math, "abs", [-3]), 3);
  assert.deepEqual((ag.callMethod(Math, "abs", [sc.tensor([-3])]) as sc.Tensor).arraySync(), [3]);
  assert.throws(() => ag.math.clz32(sc.tensor([1])), (e: Error) => e instanceof sc.ValueError && /Math\.clz32/.test(e.message));
});

// =============================================================================================
// eager (concrete) tensors

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

test("logical operators on eager tensors: not casts to bool; and/or short-circuit on the value and return bool tensors", () => {
  assert.deepEqual((ag.not(sc.tensor([0, 1, NaN, -2])) as sc.Tensor).arraySync(), [true, false, true, false]);
  assert.deepEqual((ag.not(sc.tensor([0, 3], "int32")) as sc.Tensor).arraySync(), [true, false]);
  let evaluated = 0;
  const r1 = ag.and(() => sc.scalar(0), () => (evaluated++, sc.scalar(1))) as sc.Tensor;
  assert.equal(evaluated, 0);
  assert.equal(r1.dtype, "bool");
  assert.equal(r1.item(), false);
  const r2 = ag.and(() => sc.scalar(2), () => sc.scalar(5)) as sc.Tensor;
  assert.equal(r2.item(), true);
  const r3 = ag.or(() => sc.scalar(2), () => (evaluated++, sc.scalar(0))) as sc.Tensor;
  assert.equal(evaluated, 0);
  assert.equal(r3.item(), true);
  assert.equal((ag.or(() => sc.scalar(0), () => 0) as sc.Tensor).item(), false);
  assert.equal((ag.and(() => sc.scalar(1), () => true) as sc.Tensor).item(), true);
  // JS left operand: plain JS result, even when the right one is a tensor
  const t = sc.scalar(3);
  assert.equal(ag.and(() => 1, () => t), t);
  assert.equal(ag.or(() => 0, () => t), t);
  assert.equal(ag.nullish(() => t, () => 1), t);
  // non-scalar tensors combine elementwise
  assert.deepEqual((ag.and(() => sc.tensor([1, 0, 2]), () => sc.tensor([1, 1, 0])) as sc.Tensor).arraySync(), [true, false, false]);
  assert.deepEqual((ag.or(() => sc.tensor([1, 0, 0]), () => sc.tensor([0, 0, 3])) as sc.Tensor).arraySync(), [true, false, true]);
});

test("control flow on eager tensors reads the condition and runs natively; non-scalar conditions name the construct and loc", () => {
  const log: string[] = [];
  ag.ifStmt(sc.scalar(1), () => log.push("then"), () => log.push("else"), undefined, undefined, [], LOC);
  ag.ifStmt(sc.tensor([0]), () => log.push("then"), () => log.push("else"), undefined, undefined, [], LOC);
  ag.ifStmt(sc.scalar(NaN), () => log.push("then"), () => log.push("else"));
  assert.deepEqual(log, ["then", "else", "else"]);
  assert.throws(
    () => ag.ifStmt(sc.tensor([1, 2]), () => {}, () => {}, undefined, undefined, [], LOC),
    (e: Error) => e instanceof sc.ShapeError && /^if: the condition must be a scalar tensor, got shape \[2\]/.test(e.message) && e.message.includes("(at user.ts:12:5)"),
  );
  assert.throws(() => ag.whileStmt(() => sc.ones([2, 2]), () => {}, undefined, undefined, [], "w.ts:1:2"), (e: Error) => e instanceof sc.ShapeError && /^while:/.test(e.message) && /w\.ts:1:2/.test(e.message));
  assert.throws(() => ag.ifExp(sc.ones([3]), () => 1, () => 2, "c.ts:4:4"), (e: Error) => e instanceof sc.ShapeError && /c\.ts:4:4/.test(e.message));
  assert.equal(ag.ifExp(sc.scalar(true), () => "t", () => "e"), "t");

  // while on an eager tensor counter runs natively
  let i: Any = sc.scalar(0, "int32");
  let steps = 0;
  ag.whileStmt(
    () => ag.lt(i, 4),
    () => {
      i = ag.add(i, 1);
      steps++;
    },
    () => [i],
    (s) => ([i] = s),
    ["i"],
    LOC,
  );
  assert.equal(steps, 4);
  assert.equal(i.item(), 4);

  // for...of over an eager tensor iterates its leading axis
  const rows: number[][] = [];
  ag.forOf(sc.tensor([[1, 2], [3, 4], [5, 6]]), (r: sc.Tensor) => rows.push(r.arraySync()));
  assert.deepEqual(rows, [[1, 2], [3, 4], [5, 6]]);
  let count = 0;
  ag.forOf(sc.zeros([0, 3]), () => count++);
  assert.equal(count, 0);
  assert.throws(() => ag.forOf(sc.scalar(1), () => {}, undefined, undefined, [], LOC), (e: Error) => e instanceof sc.ShapeError && /scalar tensor/.test(e.message));

  // assertOrThrow
  assert.throws(() => ag.assertOrThrow(sc.scalar(1), () => new RangeError("bad"), LOC), RangeError);
  ag.assertOrThrow(sc.scalar(0), () => new RangeError("bad"), LOC);
  ag.assertOrThrow(0, () => new RangeError("bad"));
  assert.throws(() => ag.assertOrThrow("yes", () => new URIError("js")), URIError);
  assert.throws(() => ag.assert(sc.scalar(false), "must hold"), (e: Error) => e instanceof AssertionFailedError && /must hold/.test(e.message));
  ag.assert(sc.scalar(3), "fine");
  ag.assert(true);
});

test("range: JS numbers iterate numbers; eager tensor bounds iterate scalar tensors; bad bounds are ValueErrors", () => {
  assert.deepEqual([...ag.range(4)], [0, 1, 2, 3]);
  assert.deepEqual([...ag.range(2, 9, 3)], [2, 5, 8]);
  assert.deepEqual([...ag.range(5, 0, -2)], [5, 3, 1]);
  assert.deepEqual([...ag.range(0)], []);
  assert.deepEqual([...ag.range(0, 1, 0.25)], [0, 0.25, 0.5, 0.75]);
  const ts = [...ag.range(sc.scalar(3, "int32"))] as sc.Tensor[];
  assert.deepEqual(ts.map((t) => [t.dtype, t.item()]), [["int32", 0], ["int32", 1], ["int32", 2]]);
  assert.throws(() => ag.range(1, 5, 0), (e: Error) => e instanceof sc.ValueError && /step must not be 0/.test(e.message));
  assert.throws(() => ag.range(Infinity), sc.ValueError);
  assert.throws(() => ag.range("3" as Any), sc.ValueError);
  assert.throws(() => ag.range(sc.tensor([1, 2])), sc.ShapeError);
  let sum = 0;
  ag.forOf(ag.range(1, 4), (k: number) => (sum += k));
  assert.equal(sum, 6);
  assert.ok(ag.range(3) instanceof RangeObject);
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

// =============================================================================================
// staged (symbolic) tensors

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

/** i = 0; acc = 1; while (i < n) { acc = acc * 2; i++ } */
function powers(n: sc.Tensor) {
  let i: Any = 0;
  let acc: Any = 1;
  ag.whileStmt(
    () => ag.lt(i, n),
    () => {
      acc = ag.mul(acc, 2);
      i = ag.add(i, 1);
    },
    () => [i, acc],
    (s) => ([i, acc] = s),
    ["i", "acc"],
    LOC,
  );
  return [i, acc];
}

test("staged while: a while node; JS numbers the body changes become tensors; results equal eager", () => {
  const staged = sc.stage(powers);
  for (const n of [0, 1, 5, 10]) {
    const e = powers(sc.scalar(n)) as Any[];
    const s = staged(sc.scalar(n)) as sc.Tensor[];
    assert.equal(s[0]!.item(), typeof e[0] === "number" ? e[0] : e[0].item());
    assert.equal(s[1]!.item(), typeof e[1] === "number" ? e[1] : e[1].item());
  }
  assert.equal(staged.traceCount, 1);
  assert.ok(graphOps(staged, sc.scalar(3)).includes("while"));
  assert.deepEqual(staged(sc.scalar(10)).map((t: sc.Tensor) => t.dtype), ["int32", "int32"], "integer JS numbers become int32");
});

test("staged while: a JS number accumulating float tensors is retyped (and broadcast) from what the body gives", () => {
  const f = (x: sc.Tensor, n: sc.Tensor) => {
    let i: Any = 0;
    let acc: Any = 0;
    ag.whileStmt(
      () => ag.lt(i, n),
      () => {
        acc = ag.add(acc, ag.mul(x, i));
        i = ag.add(i, 1);
      },
      () => [i, acc],
      (s) => ([i, acc] = s),
      ["i", "acc"],
      LOC,
    );
    return acc;
  };
  const staged = sc.stage(f);
  const x = sc.tensor([1, 2, 3], "float64");
  const s = staged(x, sc.scalar(4)) as sc.Tensor;
  assert.equal(s.dtype, "float64");
  assert.deepEqual(s.arraySync(), (f(x, sc.scalar(4)) as sc.Tensor).arraySync());
  assert.deepEqual(s.arraySync(), [6, 12, 18]);
});

test("JS numbers that become tensors are weakly typed: they take the dtype of the tensors they meet in branches and inner loops", () => {
  // let m = -Infinity; for (const v of xs) if (v > m) m = v; return m
  const maxOf = (xs: sc.Tensor) => {
    let m: Any = ag.neg(Infinity);
    ag.forOf(xs, (v: Any) => {
      ag.ifStmt(ag.gt(v, m), () => (m = v), null, () => [m], (st) => ([m] = st), ["m"], LOC);
    }, () => [m], (st) => ([m] = st), ["m"], LOC);
    return m;
  };
  const xs = sc.tensor([3, -1, 7.25, 2], "float64");
  const r = sc.stage(maxOf)(xs) as sc.Tensor;
  assert.equal(r.dtype, "float64");
  assert.equal(r.item(), 7.25);
  assert.equal((maxOf(xs) as sc.Tensor).item(), 7.25);
  // let s = 0, k = 1; for (row of m) for (v of row) { s += v * k; k++ }
  const weighted = (m: sc.Tensor) => {
    let s: Any = 0;
    let k: Any = 1;
    ag.forOf(m, (row: Any) => {
      ag.forOf(row, (v: Any) => {
        s = ag.add(s, ag.mul(v, k));
        k = ag.add(k, 1);
      }, () => [s, k], (st) => ([s, k] = st), ["s", "k"], LOC);
    }, () => [s, k], (st) => ([s, k] = st), ["s", "k"], LOC);
    return [s, k];
  };
  const m = sc.tensor([[1, 2], [3, 4.5]], "float64");
  const got = sc.stage(weighted)(m) as sc.Tensor[];
  assert.equal(got[0]!.dtype, "float64");
  assert.equal(got[0]!.item(), 1 + 4 + 9 + 18);
  assert.equal(got[1]!.dtype, "int32", "the counter stays an integer");
  assert.equal(got[1]!.item(), 5);
  // a number in one branch and a float64 tensor in the other
  const pick = sc.stage((x: sc.Tensor) => {
    let y: Any = 0;
    ag.ifStmt(ag.gt(x, 0), () => (y = ag.mul(x, 0.5)), () => (y = ag.sub(y, 1)), () => [y], (st) => ([y] = st), ["y"], LOC);
    return y;
  });
  assert.equal((pick(sc.scalar(3, "float64")) as sc.Tensor).item(), 1.5);
  assert.equal((pick(sc.scalar(-3, "float64")) as sc.Tensor).item(), -1);
  assert.equal((pick(sc.scalar(-3, "float64")) as sc.Tensor).dtype, "float64");
});

test("staged while: dtype and shape changes of a loop variable are errors naming it and the loc; relaxShape allows shapes to change", () => {
  const dtypeChange = sc.stage((x: sc.Tensor, n: sc.Tensor) => {
    let i: Any = 0;
    let acc: Any = x;
    ag.whileStmt(() => ag.lt(i, n), () => {
      acc = sc.cast(acc, "int32");
      i = ag.add(i, 1);
    }, () => [i, acc], (s) => ([i, acc] = s), ["i", "acc"], "loop.ts:3:5");
    return acc;
  });
  assert.throws(
    () => dtypeChange(f32([1]), sc.scalar(2)),
    (e: Error) => e instanceof AutoGraphError && /^variable acc changes dtype from float32 to int32 inside a staged while loop \(at loop\.ts:3:5\)/.test(e.message),
  );
  const grow = (x: sc.Tensor, n: sc.Tensor, relax: boolean) => {
    let i: Any = 0;
    let acc: Any = relax ? ag.relaxShape(x) : x;
    ag.whileStmt(() => ag.lt(i, n), () => {
      acc = sc.concat([acc, acc]);
      i = ag.add(i, 1);
    }, () => [i, acc], (s) => ([i, acc] = s), ["i", "acc"], "loop.ts:8:5");
    return acc;
  };
  assert.throws(
    () => sc.stage(grow)(f32([1]), sc.scalar(2), false),
    (e: Error) => e instanceof AutoGraphError && /^variable acc changes shape from \[1\] to \[2\] inside a staged while loop \(at loop\.ts:8:5\).*relaxShape\(acc\)/.test(e.message),
  );
  const relaxed = sc.stage(grow);
  assert.deepEqual((relaxed(f32([1, 2]), sc.scalar(2), true) as sc.Tensor).arraySync(), [1, 2, 1, 2, 1, 2, 1, 2]);
  // the shapeInvariants option does the same by name
  const withOpt = sc.stage((x: sc.Tensor, n: sc.Tensor) => {
    let i: Any = 0;
    let acc: Any = x;
    ag.whileStmt(() => ag.lt(i, n), () => {
      acc = sc.concat([acc, x]);
      i = ag.add(i, 1);
    }, () => [i, acc], (s) => ([i, acc] = s), ["i", "acc"], LOC, { shapeInvariants: { acc: [null] } });
    return acc;
  });
  assert.deepEqual((withOpt(f32([3]), sc.scalar(3)) as sc.Tensor).arraySync(), [3, 3, 3, 3]);
});

test("staged while: variables first assigned inside the loop, JS values changed by the body, and test side effects are errors", () => {
  const firstInside = sc.stage((n: sc.Tensor) => {
    let i: Any = 0;
    let last: Any;
    ag.whileStmt(() => ag.lt(i, n), () => {
      last = ag.mul(i, 2);
      i = ag.add(i, 1);
    }, () => [i, last], (s) => ([i, last] = s), ["i", "last"], "loop.ts:20:1");
    return last;
  });
  // It starts from zeros, and the graph checks that the loop ran (as TensorFlow's AutoGraph does).
  assert.equal(firstInside(sc.scalar(3)).item(), 4);
  assert.throws(
    () => firstInside(sc.scalar(0)),
    (e: Error) => e instanceof AutoGraphError && e.message.startsWith("variable last gets its first value inside a staged while loop (at loop.ts:20:1), which ran zero times"),
  );
  // A value that cannot start from zeros (partly unknown shape) is still refused.
  const unknownShape = sc.stage(
    (n: sc.Tensor, x: sc.Tensor) => {
      let i: Any = 0;
      let last: Any;
      ag.whileStmt(() => ag.lt(i, n), () => {
        last = x;
        i = ag.add(i, 1);
      }, () => [i, last], (s) => ([i, last] = s), ["i", "last"], "loop.ts:20:1");
      return last;
    },
    { inputSignature: [sc.spec([], "float32"), sc.spec([null], "float32")] },
  );
  assert.throws(
    () => unknownShape(sc.scalar(3), sc.tensor([1, 2])),
    (e: Error) => e instanceof AutoGraphError && e.message === "variable last is first assigned inside a staged while loop (at loop.ts:20:1) and used after it; assign it before the loop",
  );
  const jsChange = sc.stage((n: sc.Tensor) => {
    let i: Any = 0;
    let s = "";
    ag.whileStmt(() => ag.lt(i, n), () => {
      s = s + "x";
      i = ag.add(i, 1);
    }, () => [i, s], (v) => ([i, s] = v as [Any, string]), ["i", "s"], "loop.ts:30:1");
    return i;
  });
  assert.throws(() => jsChange(sc.scalar(3)), (e: Error) => e instanceof AutoGraphError && /variable s holds the string "" and is changed to the string "x"/.test(e.message) && /loop\.ts:30:1/.test(e.message));
  const testEffect = sc.stage((n: sc.Tensor) => {
    let i: Any = 0;
    ag.whileStmt(() => ag.lt((i = ag.add(i, 1)), n), () => {}, () => [i], (v) => ([i] = v), ["i"], "loop.ts:40:1");
    return i;
  });
  assert.throws(() => testEffect(sc.scalar(3)), (e: Error) => e instanceof AutoGraphError && /the condition of a staged while loop \(at loop\.ts:40:1\) assigns variable i/.test(e.message));
});

test("while switches to staging when its test becomes symbolic after native iterations", () => {
  const f = (n: sc.Tensor) => {
    let k: Any = 0;
    let acc: Any = sc.scalar(1);
    ag.whileStmt(
      () => ag.or(() => ag.lt(k, 2), () => ag.lt(acc, n)),
      () => {
        acc = ag.mul(acc, 3);
        k = ag.add(k, 1);
      },
      () => [k, acc],
      (s) => ([k, acc] = s),
      ["k", "acc"],
      LOC,
    );
    return [k, acc];
  };
  const staged = sc.stage(f);
  for (const n of [0, 5, 100]) {
    const e = f(sc.scalar(n)) as Any[];
    const s = staged(sc.scalar(n)) as sc.Tensor[];
    assert.equal(s[0]!.item(), typeof e[0] === "number" ? e[0] : e[0].item(), `k for n=${n}`);
    assert.equal(s[1]!.item(), e[1].item(), `acc for n=${n}`);
  }
  const ops = graphOps(staged, sc.scalar(5));
  assert.equal(ops.filter((o) => o === "while").length, 1);
  assert.ok(ops.filter((o) => o === "mul").length >= 3, "two iterations unrolled natively, the rest in the loop body");
});

test("staged for...of over a symbolic tensor iterates its leading axis with a counter and gather", () => {
  const f = (xs: sc.Tensor) => {
    let acc: Any = sc.zeros([2]);
    let count: Any = 0;
    ag.forOf(
      xs,
      (row: Any) => {
        acc = ag.add(acc, ag.mul(row, row));
        count = ag.add(count, 1);
      },
      () => [acc, count],
      (s) => ([acc, count] = s),
      ["acc", "count"],
      LOC,
    );
    return [acc, count];
  };
  const staged = sc.stage(f);
  const xs = sc.tensor([[1, 2], [3, 4], [5, 6]]);
  const e = f(xs) as Any[];
  const s = staged(xs) as sc.Tensor[];
  assert.deepEqual(s[0]!.arraySync(), e[0].arraySync());
  assert.deepEqual(s[0]!.arraySync(), [35, 56]);
  assert.equal(s[1]!.item(), 3);
  const ops = graphOps(staged, xs);
  assert.ok(ops.includes("while") && ops.includes("gather"));
  // unknown leading dimension: the trip count is read when the graph runs
  const dyn = sc.stage(f, { inputSignature: [sc.spec([null, 2])] });
  assert.deepEqual((dyn(sc.tensor([[1, 1], [2, 2]])) as sc.Tensor[])[0]!.arraySync(), [5, 5]);
  assert.deepEqual((dyn(xs) as sc.Tensor[])[0]!.arraySync(), [35, 56]);
  assert.equal(dyn.traceCount, 1);
  assert.ok(graphOps(dyn, xs).includes("dimSize"));
});

test("staged for...of over range(n) with a symbolic n is a counter loop (positive and negative steps)", () => {
  const f = (n: sc.Tensor) => {
    let total: Any = 0;
    ag.forOf(ag.range(n), (k: Any) => (total = ag.add(total, ag.mul(k, k))), () => [total], (s) => ([total] = s), ["total"], LOC);
    let down: Any = 0;
    ag.forOf(ag.range(n, 0, -2), (k: Any) => (down = ag.add(down, k)), () => [down], (s) => ([down] = s), ["down"], LOC);
    return [total, down];
  };
  const staged = sc.stage(f);
  for (const n of [0, 1, 4, 7]) {
    const s = staged(sc.scalar(n, "int32")) as sc.Tensor[];
    let t = 0;
    for (let k = 0; k < n; k++) t += k * k;
    let d = 0;
    for (let k = n; k > 0; k -= 2) d += k;
    assert.equal(s[0]!.item(), t);
    assert.equal(s[1]!.item(), d);
    const e = f(sc.scalar(n, "int32")) as Any[];
    assert.equal(typeof e[0] === "number" ? e[0] : e[0].item(), t);
  }
  assert.equal(graphOps(staged, sc.scalar(3, "int32")).filter((o) => o === "while").length, 2);
  const sym = sc.stage((n: sc.Tensor) => [...ag.range(n)]);
  assert.throws(() => sym(sc.scalar(2)), (e: Error) => e instanceof AutoGraphError && /converted for\.\.\.of/.test(e.message));
});

test("break and return inside staged loops (transform-lowered flags, $-named generated variables)", () => {
  // for (const row of xs) { if (sum(row) > limit) break; acc = acc + row }
  const brk = (xs: sc.Tensor, limit: sc.Tensor) => {
    let acc: Any = sc.zeros([2]);
    let $brk: Any = false;
    ag.forOf(
      xs,
      (row: Any) => {
        ag.ifStmt(ag.gt(sc.sum(row), limit), () => ($brk = true), () => (acc = ag.add(acc, row)), () => [$brk, acc], (s) => ([$brk, acc] = s), ["$brk", "acc"], LOC);
      },
      () => [$brk, acc],
      (s) => ([$brk, acc] = s),
      ["$brk", "acc"],
      LOC,
      { extraTest: () => ag.not($brk) },
    );
    return acc;
  };
  const xs = sc.tensor([[1, 1], [2, 2], [9, 9], [1, 1]]);
  const stagedBrk = sc.stage(brk);
  for (const limit of [100, 5, 1]) {
    assert.deepEqual((stagedBrk(xs, sc.scalar(limit)) as sc.Tensor).arraySync(), (brk(xs, sc.scalar(limit)) as sc.Tensor).arraySync(), `limit ${limit}`);
  }
  // function first(xs) { for (const row of xs) { if (sum(row) > 3) return row; } return zeros }
  const first = (rows: sc.Tensor) => {
    let $ret: Any = false;
    let $retval: Any;
    ag.forOf(
      rows,
      (row: Any) => {
        ag.ifStmt(ag.gt(sc.sum(row), 3), () => {
          $ret = true;
          $retval = row;
        }, null, () => [$ret, $retval], (s) => ([$ret, $retval] = s), ["$ret", "$retval"], LOC);
      },
      () => [$ret, $retval],
      (s) => ([$ret, $retval] = s),
      ["$ret", "$retval"],
      LOC,
      { extraTest: () => ag.not($ret) },
    );
    ag.ifStmt(ag.not($ret), () => {
      $ret = true;
      $retval = sc.full([2], -1);
    }, null, () => [$ret, $retval], (s) => ([$ret, $retval] = s), ["$ret", "$retval"], LOC);
    return $retval;
  };
  const stagedFirst = sc.stage(first);
  for (const data of [[[1, 1], [2, 2], [3, 3]], [[0, 0], [1, 1]], [[5, 0], [9, 9]]]) {
    const t = sc.tensor(data);
    assert.deepEqual((stagedFirst(t) as sc.Tensor).arraySync(), (first(t) as sc.Tensor).arraySync(), JSON.stringify(data));
  }
  assert.ok(graphOps(stagedFirst, sc.tensor([[1, 1]])).includes("while"));
  // ... and when the returned value is an array: `return [row, sum(row)]` inside the loop
  const firstPair = (rows: sc.Tensor) => {
    let $ret: Any = false;
    let $retval: Any;
    ag.forOf(
      rows,
      (row: Any) => {
        ag.ifStmt(ag.gt(sc.sum(row), 3), () => {
          $ret = true;
          $retval = [row, sc.sum(row)];
        }, () => {}, () => [$ret, $retval], (s) => ([$ret, $retval] = s), ["$ret", "$retval"], LOC);
      },
      () => [$ret, $retval],
      (s) => ([$ret, $retval] = s),
      ["$ret", "$retval"],
      LOC,
      () => ag.not($ret),
    );
    ag.ifStmt(ag.not($ret), () => {
      $ret = true;
      $retval = [sc.full([2], -1), 0];
    }, () => {}, () => [$ret, $retval], (s) => ([$ret, $retval] = s), ["$ret", "$retval"], LOC);
    return $retval;
  };
  const stagedPair = sc.stage(firstPair);
  for (const data of [[[1, 1], [2, 2], [3, 3]], [[0, 0], [1, 1]]]) {
    const t = sc.tensor(data);
    const e = firstPair(t) as Any[];
    const got = stagedPair(t) as sc.Tensor[];
    assert.deepEqual(got[0]!.arraySync(), e[0].arraySync());
    assert.equal(got[1]!.item(), typeof e[1] === "number" ? e[1] : e[1].item());
  }
  // A symbolic break flag in a loop over a JS array guards the remaining iterations.
  const overArray = (x: sc.Tensor) => {
    let acc: Any = 0;
    let $brk: Any = false;
    ag.forOf(
      [1, 2, 3, 4],
      (k: number) => {
        ag.ifStmt(ag.gt(ag.mul(x, k), 5), () => ($brk = true), () => (acc = ag.add(acc, k)), () => [$brk, acc], (s) => ([$brk, acc] = s), ["$brk", "acc"], LOC);
      },
      () => [$brk, acc],
      (s) => ([$brk, acc] = s),
      ["$brk", "acc"],
      LOC,
      { extraTest: () => ag.not($brk) },
    );
    return acc;
  };
  const stagedArr = sc.stage(overArray);
  for (const x of [0.5, 2, 10]) {
    const e = overArray(sc.scalar(x));
    assert.equal((stagedArr(sc.scalar(x)) as sc.Tensor).item(), typeof e === "number" ? e : (e as sc.Tensor).item(), `x=${x}`);
  }
});

test("staged loops carry nests, variables and invariant JS values", () => {
  const w = sc.variable(sc.tensor([1, 2]));
  const f = (n: sc.Tensor) => {
    const st = { m: sc.zeros([2]), steps: 0, tag: "t" };
    let cur: Any = w;
    let i: Any = 0;
    ag.whileStmt(
      () => ag.lt(i, n),
      () => {
        st.m = ag.add(st.m, cur) as Any;
        st.steps = ag.add(st.steps, 1) as Any;
        cur = ag.mul(cur, 2);
        i = ag.add(i, 1);
      },
      () => [st, cur, i],
      (s) => ([, cur, i] = s),
      ["st", "cur", "i"],
      LOC,
    );
    return [st.m, st.steps, st.tag, cur];
  };
  const staged = sc.stage(f);
  const s = staged(sc.scalar(3)) as Any[];
  const e = f(sc.scalar(3)) as Any[];
  assert.deepEqual(s[0].arraySync(), e[0].arraySync());
  assert.deepEqual(s[0].arraySync(), [7, 14]);
  assert.equal(s[1].item(), 3);
  assert.equal(s[2], "t");
  assert.deepEqual(s[3].arraySync(), [8, 16]);
  w.assign(sc.tensor([10, 0]));
  assert.deepEqual((staged(sc.scalar(1)) as Any[])[0].arraySync(), [10, 0], "the variable is read when the graph runs");
});

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

test("staged print logs at run time on every call; JS values are formatted as console.log does", (t) => {
  const logs: string[] = [];
  t.mock.method(console, "log", (...a: unknown[]) => logs.push(a.join(" ")));
  const f = sc.stage((x: sc.Tensor) => {
    ag.print("x is", x, { k: 1 });
    ag.print("plain", 3, [1, 2]);
    ag.callMethod(console, "log", ["n=%d", 4]);
    return x;
  });
  f(sc.tensor([1, 2]));
  f(sc.tensor([3, 4]));
  assert.deepEqual(logs, [
    "x is Tensor([1., 2.], shape=[2], dtype=float32) { k: 1 }",
    "plain 3 [ 1, 2 ]",
    "n=4",
    "x is Tensor([3., 4.], shape=[2], dtype=float32) { k: 1 }",
    "plain 3 [ 1, 2 ]",
    "n=4",
  ]);
  assert.equal(graphOps(f, sc.tensor([1, 2])).filter((o) => o === "print").length, 3);
});

test("staged assertions throw the user's error when the graph runs", () => {
  const f = sc.stage((x: sc.Tensor) => {
    ag.assertOrThrow(ag.lt(sc.sum(x), 0), () => new RangeError("negative sum"), LOC);
    ag.assert(ag.lt(sc.max(x), 100), "x must stay below 100", LOC);
    return ag.mul(x, 2);
  });
  assert.deepEqual((f(f32([1, 2])) as sc.Tensor).arraySync(), [2, 4]);
  assert.throws(() => f(f32([-5, 1])), (e: Error) => e instanceof RangeError && e.message === "negative sum");
  assert.throws(() => f(f32([500, 1])), (e: Error) => e instanceof AssertionFailedError && /x must stay below 100/.test(e.message) && /user\.ts:12:5/.test(e.message));
  assert.equal(graphOps(f, f32([1, 2])).filter((o) => o === "assert").length, 2);
  assert.equal(f.traceCount, 1);
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

test("gradients flow through staged if and while built by the operators", () => {
  const f = (x: sc.Tensor) => {
    let y: Any = x;
    let i: Any = 0;
    ag.whileStmt(() => ag.lt(i, 3), () => {
      y = ag.mul(y, x);
      i = ag.add(i, 1);
    }, () => [y, i], (s) => ([y, i] = s), ["y", "i"], LOC);
    ag.ifStmt(ag.gt(sc.sum(y), 0), () => (y = ag.mul(y, 2)), null, () => [y], (s) => ([y] = s), ["y"], LOC);
    return sc.sum(y);
  };
  const x = sc.tensor([0.5, 1.5], "float64");
  const g = sc.grad(sc.stage(f))(x);
  near(g.arraySync(), [2 * 4 * 0.5 ** 3, 2 * 4 * 1.5 ** 3], 1e-9);
  // A gradient taken inside a staged function differentiates the staged cond and while loop.
  const h = (x: sc.Tensor, n: sc.Tensor) => {
    let y: Any = x;
    let i: Any = 0;
    ag.whileStmt(() => ag.lt(i, n), () => {
      y = ag.mul(y, x);
      i = ag.add(i, 1);
    }, () => [y, i], (s) => ([y, i] = s), ["y", "i"], LOC);
    ag.ifStmt(ag.gt(sc.sum(y), 1), () => (y = ag.mul(y, 2)), () => (y = ag.neg(y)), () => [y], (s) => ([y] = s), ["y"], LOC);
    return sc.sum(y);
  };
  const inner = sc.stage((x: sc.Tensor, n: sc.Tensor) => sc.grad((u: sc.Tensor) => h(u, n))(x));
  for (const [v, n] of [[1.5, 2], [0.5, 2], [0.9, 0]] as const) {
    const xs = sc.tensor([v], "float64");
    const want = (sc.grad((u: sc.Tensor) => h(u, sc.scalar(n)))(xs) as sc.Tensor).arraySync();
    near((inner(xs, sc.scalar(n)) as sc.Tensor).arraySync(), want, 1e-9);
    const k = n + 1;
    near(want, [(v ** k > 1 ? 2 : -1) * k * v ** (k - 1)], 1e-9);
  }
  assert.ok(graphOps(inner, sc.tensor([1.5], "float64"), sc.scalar(2)).filter((o) => o === "cond").length >= 2, "the gradient is itself a staged cond");
});

test("bitwise operators on tensors take each element as JavaScript's ToInt32 does (t | 0 truncates), eagerly and staged; it was a TensorCoercionError", () => {
  const values = [2.7, -2.7, 3e9, -3e9, 1e10, 0.5, -0.5, 7, -8, NaN, Infinity];
  const ops = (x: Any): Any[] => [x | 0, x & 6, x ^ 5, x << 3, x >> 1, ~x, (x | 0) << 31, x >> 33, 5 << x, x & -1];
  const converted = sc.autograph(ops);
  const staged = sc.stage((x: Any) => sc.stack(ops(x)));
  for (const v of values) {
    const want = ops(v);
    assert.deepEqual(converted(v), want, "JS numbers: the operators themselves");
    assert.deepEqual((converted(sc.scalar(v, "float64")) as sc.Tensor[]).map((t) => t.item()), want, `eager ${v}`);
    const out = staged(sc.scalar(v, "float64"));
    assert.equal(out.dtype, "int32");
    assert.deepEqual(out.arraySync(), want, `staged ${v}`);
  }
  // compound assignment on int32 tensors, and on a loop counter (a JS number carried by the loop)
  const compound = sc.stage((x: Any) => {
    let y = x;
    y |= 8;
    y <<= 1;
    return y;
  });
  assert.deepEqual(compound(sc.tensor([1, 2], "int32")).arraySync(), [18, 20]);
  const counter = sc.stage((x: Any) => {
    let i = 0;
    let acc = x;
    while (i < 5) {
      acc = acc + (i & 1);
      i = i + 1;
    }
    return acc;
  });
  assert.equal(counter(sc.scalar(0)).item(), 2);
});
