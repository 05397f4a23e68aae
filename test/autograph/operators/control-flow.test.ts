/**
 * The dispatch of `if`, `while` and `for...of` (operators/control-flow.ts): JS values run the
 * construct natively, eager tensors are read, symbolic ones stage cond / while nodes (cond.ts,
 * staged-loop.ts); range(); gradients through what they stage.
 * The calls are written as the source transform generates them (docs/autograph.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { ag, AssertionFailedError, RangeObject } from "../../../src/autograph/operators/index.js";
import { LOC, show, graphOps, near, type Any } from "./helpers.js";

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
