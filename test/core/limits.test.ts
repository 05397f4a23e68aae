/**
 * Limits become typed errors that name the op or function and the user's line: tensors too large
 * to allocate (checked before allocating, eagerly, while tracing and when a staged function meets
 * its shapes), staged recursion that cannot end or goes past the JavaScript stack; and a staged
 * loop that never ends is bounded by whileLoop's maxIterations, eagerly and staged.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

/** Asserts `fn` throws `type` with a message matching every pattern, located in this file. */
function throwsHere(fn: () => unknown, type: new (...a: any[]) => Error, ...patterns: RegExp[]): void {
  assert.throws(fn, (e: Error) => {
    assert.ok(e instanceof type, `expected ${type.name}, got ${e.constructor.name}: ${e.message}`);
    for (const p of patterns) assert.match(e.message, p);
    assert.match(e.message, /\(at test\/core\/limits\.test\.ts:\d+:\d+\)$/, e.message);
    return true;
  });
}

test("tensors too large to allocate are AllocationErrors naming the op, the shape and the size, before anything is allocated", () => {
  throwsHere(() => sc.zeros([1e6, 1e6]), sc.AllocationError, /^fill: a float32 tensor of shape \[1000000, 1000000\] \(1000000000000 elements, 3\.64 TiB\) is larger than/);
  throwsHere(() => sc.ones([1e5, 1e5], "float64"), sc.AllocationError, /^fill: a float64 tensor of shape \[100000, 100000\]/, /74\.5 GiB/);
  throwsHere(() => sc.matmul(sc.zeros([70000, 1]), sc.zeros([1, 70000])), sc.AllocationError, /^matmul: .*\[70000, 70000\]/);
  throwsHere(() => sc.add(sc.zeros([70000, 1]), sc.zeros([1, 70000])), sc.AllocationError, /^add: /);
  throwsHere(() => sc.tile(sc.zeros([1000]), [1e7]), sc.AllocationError, /^tile: /);
  throwsHere(() => sc.random.normal([1e6, 1e6], { seed: 1 }), sc.AllocationError, /^randomNormal: /);
  // 2^32 elements is the most a typed array holds: one more is refused, that many is not checked away
  throwsHere(() => sc.zeros([2 ** 32 + 1], "uint8"), sc.AllocationError, /4294967297 elements/);
  // sizes in bytes are the storage's: float16 is held in a Float32Array (4 bytes an element), int8 in 1, uint64 in 8
  throwsHere(() => sc.zeros([1e6, 1e6], "float16"), sc.AllocationError, /^fill: a float16 tensor of shape \[1000000, 1000000\] \(1000000000000 elements, 3\.64 TiB\)/);
  throwsHere(() => sc.ones([1e6, 1e6], "int8"), sc.AllocationError, /^fill: a int8 tensor .* 931 GiB\)/);
  throwsHere(() => sc.cast(sc.zeros([70000, 1], "uint16"), "uint64").add(sc.zeros([1, 70000], "uint64")), sc.AllocationError, /^add: a uint64 tensor of shape \[70000, 70000\] \(4900000000 elements, 36\.5 GiB\)/);
});

test("staged: a static size is refused while tracing, an unknown one when the function meets its shapes, at the op's line", () => {
  const f = sc.stage(() => sc.zeros([1e6, 1e6]), { autograph: false });
  throwsHere(() => f(), sc.AllocationError, /^fill: /);
  const outer = sc.stage((a: sc.Tensor, b: sc.Tensor) => sc.add(a, b), { autograph: false, inputSignature: [sc.spec([null, 1]), sc.spec([1, null])] });
  assert.deepEqual(outer(sc.ones([2, 1]), sc.ones([1, 3])).shape, [2, 3]);
  for (let k = 0; k < 3; k++) {
    // (interpreted first, compiled after: both refuse before allocating)
    assert.throws(
      () => outer(sc.zeros([70000, 1]), sc.zeros([1, 70000])),
      (e: Error) => e instanceof sc.AllocationError && /^add: a float32 tensor of shape \[70000, 70000\]/.test(e.message) && /limits\.test\.ts:\d+:\d+\)$/.test(e.message),
    );
    assert.deepEqual(outer(sc.ones([2, 1]), sc.ones([1, 3])).shape, [2, 3]);
  }
  const half = sc.stage((a: sc.Tensor, b: sc.Tensor) => sc.mul(a, b), { autograph: false, inputSignature: [sc.spec([null, 1], "float16"), sc.spec([1, null], "float16")] });
  for (let k = 0; k < 3; k++) {
    assert.throws(() => half(sc.zeros([70000, 1], "float16"), sc.zeros([1, 70000], "float16")), (e: Error) => e instanceof sc.AllocationError && /^mul: a float16 tensor of shape \[70000, 70000\] \(4900000000 elements, 18\.3 GiB\)/.test(e.message));
    assert.deepEqual(half(sc.ones([2, 1], "float16"), sc.full([1, 3], 0.1, "float16")).dataSync(), new Float32Array(6).fill(0.0999755859375));
  }
});

test("a staged function that calls itself unconditionally is a RecursionDepthError naming it, raised while tracing", () => {
  const endless: (n: sc.Tensor) => sc.Tensor = sc.stage((n: sc.Tensor): sc.Tensor => n.mul(endless(n.sub(1))), { name: "endless", autograph: false });
  throwsHere(() => endless(sc.scalar(5)), sc.RecursionDepthError, /^endless: staged function "endless" calls itself unconditionally/);
});

test("staged recursion on JS values that never closes into a recursive graph is a RecursionDepthError describing the signatures", () => {
  const down: (x: sc.Tensor, n: number) => sc.Tensor = sc.stage((x: sc.Tensor, n: number): sc.Tensor => (n === 0 ? x : down(x.add(1), n - 1)), { name: "down", autograph: false });
  // shallow unrolled recursion works (each depth a trace of its own)
  assert.deepEqual(down(sc.scalar(0), 50).arraySync(), 50);
  throwsHere(() => down(sc.scalar(0), 1e6), sc.RecursionDepthError, /^down: staged function "down" recursed more than 200 nested traces deep while being traced/, /argument 1 changed from number \d+ to number \d+/);
  assert.deepEqual(down(sc.scalar(0), 3).arraySync(), 3, "the function still works afterwards");
});

test("staged recursion deeper than the stack at run time is a RecursionDepthError naming the recursive function", () => {
  const fact: (n: sc.Tensor) => sc.Tensor = sc.stage((n: sc.Tensor): sc.Tensor => sc.cond(sc.less(n, 1), () => sc.onesLike(n), () => n.mul(fact(n.sub(1)))), { name: "fact", autograph: false });
  assert.equal(fact(sc.scalar(5)).arraySync(), 120);
  for (let k = 0; k < 3; k++) {
    throwsHere(() => fact(sc.scalar(1e6)), sc.RecursionDepthError, /^fact: staged function "fact" recursed more than 500 calls deep while running: the recursion of "fact\w*" went deeper/);
    assert.equal(fact(sc.scalar(4)).arraySync(), 24, "the function still works afterwards");
  }
  // through another staged function: named by the outer one, the recursive one named in the message
  const outer = sc.stage((n: sc.Tensor) => fact(n).add(1), { name: "outer", autograph: false });
  throwsHere(() => outer(sc.scalar(1e6)), sc.RecursionDepthError, /^outer: .*the recursion of "fact\w*"/);
});

test("the recursion limits are explicit counts, not the stack's edge: 500 nested calls run and 501 fail, interpreted and compiled, traced 200 deep and not 201", () => {
  const f: (n: sc.Tensor) => sc.Tensor = sc.stage((n: sc.Tensor): sc.Tensor => sc.cond(sc.less(n, 1), () => sc.zerosLike(n), () => n.add(f(n.sub(1)))), { name: "total", autograph: false });
  // (the first call is interpreted, later ones compiled: STAGECRAFT_COMPILE_AFTER = 1)
  for (let k = 0; k < 3; k++) {
    assert.equal(f(sc.scalar(500)).arraySync(), 125250);
    throwsHere(() => f(sc.scalar(501)), sc.RecursionDepthError, /^total: staged function "total" recursed more than 500 calls deep while running: the recursion of "total"/);
  }
  // the gradient's recursion is bounded alike
  assert.equal(sc.grad(f)(sc.scalar(400)).arraySync(), 400);
  throwsHere(() => sc.grad(f)(sc.scalar(600)), sc.RecursionDepthError, /recursed more than 500 calls deep while running: the recursion of "total\w*"/);
  const down: (x: sc.Tensor, n: number) => sc.Tensor = sc.stage((x: sc.Tensor, n: number): sc.Tensor => (n === 0 ? x : down(x.add(1), n - 1)), { name: "down200", autograph: false });
  // (traced deepest first: the traces of smaller depths are then cached)
  throwsHere(() => down(sc.scalar(0), 200), sc.RecursionDepthError, /^down200: staged function "down200" recursed more than 200 nested traces deep/, /argument 1 changed from number 1 to number 0\b/);
  assert.equal(down(sc.scalar(0), 199).arraySync(), 199);
});

test("a staged recursion started deep in the caller's own stack is still a RecursionDepthError, never a raw RangeError from the library", () => {
  const f: (n: sc.Tensor) => sc.Tensor = sc.stage((n: sc.Tensor): sc.Tensor => sc.cond(sc.less(n, 1), () => sc.zerosLike(n), () => n.add(f(n.sub(1)))), { name: "deepCaller", autograph: false });
  assert.equal(f(sc.scalar(3)).arraySync(), 6);
  let outcome = "";
  const descend = (k: number): void => {
    if (k > 0) return descend(k - 1);
    try {
      f(sc.scalar(450));
      outcome = "ran";
    } catch (e) {
      outcome = e instanceof sc.RecursionDepthError ? "RecursionDepthError" : `${(e as Error).constructor.name}: ${(e as Error).message}`;
    }
  };
  for (const k of [0, 2000, 4000, 6000, 7000]) {
    descend(k);
    assert.ok(outcome === "ran" || outcome === "RecursionDepthError", `at ${k} frames deep: ${outcome}`);
  }
});

test("whileLoop's maxIterations bounds a loop that never ends: eagerly, staged (interpreted and compiled) and differentiated", () => {
  const endless = (x: sc.Tensor) => sc.whileLoop((v) => sc.greater(v, -1), (v) => [v.add(1)], [x], { maxIterations: 1000 })[0]!;
  assert.equal(endless(sc.scalar(0)).arraySync(), 1000);
  const staged = sc.stage(endless, { autograph: false });
  for (let k = 0; k < 3; k++) assert.equal(staged(sc.scalar(0)).arraySync(), 1000);
  // a JS condition that is always true, staged
  const jsTrue = sc.stage((x: sc.Tensor) => sc.whileLoop(() => true, (v) => [v.mul(2)], [x], { maxIterations: 3 })[0]!, { autograph: false });
  assert.equal(jsTrue(sc.scalar(1)).arraySync(), 8);
  // differentiated through: d/dx of x * 1.01^n after n = 50 bounded iterations
  const grow = sc.stage((x: sc.Tensor) => sc.whileLoop((v) => sc.greater(v, 0), (v) => [v.mul(1.01)], [x], { maxIterations: 50 })[0]!, { autograph: false });
  const g = sc.grad(grow)(sc.scalar(2, "float64"));
  assert.ok(Math.abs((g.arraySync() as number) - 1.01 ** 50) < 1e-9, String(g.arraySync()));
  assert.equal(sc.grad((x: sc.Tensor) => endless(x).mul(x))(sc.scalar(3)).arraySync(), 1003 + 3);
  throwsHere(() => sc.whileLoop(() => true, (v) => [v], [sc.scalar(0)], { maxIterations: -1 }), sc.ValueError, /maxIterations must be a non-negative integer, got -1/);
  throwsHere(() => sc.whileLoop(() => true, (v) => [v], [sc.scalar(0)], { maxIterations: 2.5 }), sc.ValueError, /got 2\.5/);
});
