/**
 * Calls (operators/calls.ts): this, converted twins and the on-demand converter, natives as
 * they are; staged recursion.
 * The calls are written as the source transform generates them (docs/autograph.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { ag } from "../../../src/autograph/operators/index.js";
import { LOC, f32, type Any } from "./helpers.js";

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
  const callsItself = (g: import("../../../src/graph/ir.js").Graph): boolean =>
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
