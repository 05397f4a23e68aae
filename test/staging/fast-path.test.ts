/**
 * The fast path of an eager call to a staged function (TraceCache.lastHit in stage.ts): a call
 * whose arguments have the last call's types reuses its concrete function without building a
 * signature key. Every test first warms the fast path (the same call twice), then makes one
 * difference that must take the full path, and checks the answer: a fast path that ignored the
 * difference would run the wrong trace, silently.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { installedExecutor, setDefaultExecutor, type Executor } from "../../src/staging/concrete-function.js";

/** Calls `f` twice on `args` (the second call is a fast-path one) and returns the second result. */
function warm<A extends unknown[], R>(f: (...args: A) => R, ...args: A): R {
  f(...args);
  return f(...args);
}

test("after fast-path calls, a tensor of another shape runs its own trace", () => {
  const f = sc.stage((x: sc.Tensor) => x.mul(2));
  assert.deepEqual(warm(f, sc.tensor([1, 2, 3, 4])).arraySync(), [2, 4, 6, 8]);
  const y = f(sc.tensor([5, 6]));
  assert.deepEqual(y.shape, [2]);
  assert.deepEqual(y.arraySync(), [10, 12]);
  // the same size in another shape (a fast path comparing sizes only would take it)
  const z = f(sc.tensor([1, 2, 3, 4], "float32", [2, 2]));
  assert.deepEqual(z.shape, [2, 2]);
  assert.equal(f.traceCount, 3);
});

test("after fast-path calls, a tensor of another dtype runs its own trace", () => {
  const f = sc.stage((x: sc.Tensor) => x.add(1e-12));
  warm(f, sc.tensor([1, 2], "float32"));
  const y = f(sc.tensor([1, 2], "float64"));
  assert.equal(y.dtype, "float64");
  assert.equal(y.dataSync()[0], 1 + 1e-12);
  assert.equal(f.traceCount, 2);
});

test("a captured variable assigned between fast-path calls is read at every call", () => {
  const v = new sc.Variable(sc.tensor([1, 2, 3]), { name: "v" });
  const f = sc.stage((x: sc.Tensor) => x.mul(v));
  const x = sc.tensor([1, 1, 1]);
  assert.deepEqual(warm(f, x).arraySync(), [1, 2, 3]);
  v.assign(sc.tensor([7, 8, 9]));
  assert.deepEqual(f(x).arraySync(), [7, 8, 9]);
  assert.equal(f.traceCount, 1);
});

test("a JS number argument keys by value: another value, and -0 after 0, retrace", () => {
  const f = sc.stage((x: sc.Tensor, k: number) => x.mul(1 / k));
  const x = sc.tensor([1, 2]);
  assert.deepEqual(warm(f, x, 2).arraySync(), [0.5, 1]);
  assert.deepEqual(f(x, 4).arraySync(), [0.25, 0.5]);
  assert.deepEqual(warm(f, x, 0).arraySync(), [Infinity, Infinity]);
  // (0 === -0: a fast path comparing with === would give +Infinity)
  assert.deepEqual(f(x, -0).arraySync(), [-Infinity, -Infinity]);
  assert.equal(f.traceCount, 4);
});

test("an object whose trace key changed (train/eval mode) takes the full path", () => {
  class Mode {
    constructor(public mode: string) {}
    [Symbol.for("stagecraft.traceKey")](): string {
      return this.mode;
    }
  }
  const m = new Mode("train");
  const f = sc.stage((x: sc.Tensor, o: Mode) => (o.mode === "train" ? x.add(1) : x.add(2)));
  const x = sc.tensor([0]);
  assert.deepEqual(warm(f, x, m).arraySync(), [1]);
  m.mode = "eval";
  assert.deepEqual(f(x, m).arraySync(), [2]);
});

test("a plain object argument refilled with a tensor of another shape is seen afresh", () => {
  const f = sc.stage((d: { a: sc.Tensor }) => d.a.mul(3));
  const d = { a: sc.tensor([1, 2]) };
  assert.deepEqual(warm(f, d).arraySync(), [3, 6]);
  d.a = sc.tensor([1, 2, 3]);
  assert.deepEqual(f(d).arraySync(), [3, 6, 9]);
});

test("a plain object of JS values changed in place between calls is seen afresh", () => {
  const f = sc.stage((x: sc.Tensor, o: { k: number }) => x.mul(o.k));
  const x = sc.tensor([1, 2]);
  const o = { k: 2 };
  assert.deepEqual(warm(f, x, o).arraySync(), [2, 4]);
  o.k = 3;
  assert.deepEqual(f(x, o).arraySync(), [3, 6]);
});

test("a Variable after a plain tensor of its type is a different signature (the variable's trace runs)", () => {
  const f = sc.stage((a: sc.Tensor) => (a instanceof sc.Variable ? a.add(100) : a.add(1)));
  const t = sc.tensor([1, 2]);
  assert.deepEqual(warm(f, t).arraySync(), [2, 3]);
  const v = new sc.Variable(sc.tensor([1, 2]), { name: "v" });
  assert.deepEqual(f(v).arraySync(), [101, 102]);
  assert.deepEqual(f(v).arraySync(), [101, 102]);
  v.assign(sc.tensor([5, 5]));
  assert.deepEqual(f(v).arraySync(), [105, 105]);
  assert.deepEqual(f(t).arraySync(), [2, 3]);
});

test("a call under a gradient tape after fast-path calls is recorded (its gradient is right)", () => {
  const f = sc.stage((x: sc.Tensor) => x.mul(x));
  const x = sc.tensor([1, 2, 3]);
  warm(f, x);
  const g = sc.grad((x: sc.Tensor) => sc.sum(f(x)))(x);
  assert.deepEqual(g.arraySync(), [2, 4, 6]);
});

test("a call while another function is staged after fast-path calls becomes part of that graph", () => {
  const f = sc.stage((x: sc.Tensor) => x.mul(2));
  const x = sc.tensor([1, 2]);
  warm(f, x);
  const g = sc.stage((x: sc.Tensor) => f(x).add(1));
  assert.deepEqual(g(x).arraySync(), [3, 5]);
  assert.deepEqual(g(sc.tensor([3, 4])).arraySync(), [7, 9]);
  assert.match(g.concrete(x).toString(), /mul|call/);
});

test("an executor installed after fast-path calls runs the next call (concrete functions resolve theirs again)", () => {
  const f = sc.stage((x: sc.Tensor) => x.add(1));
  const x = sc.tensor([1]);
  warm(f, x);
  const original = installedExecutor();
  let calls = 0;
  const counting: Executor = (graph, inputs, library, numArgInputs) => {
    calls++;
    return original(graph, inputs, library, numArgInputs);
  };
  setDefaultExecutor(counting);
  try {
    assert.deepEqual(f(x).arraySync(), [2]);
    assert.equal(calls, 1);
  } finally {
    setDefaultExecutor(original);
  }
  f(x);
  assert.equal(calls, 1, "the original executor runs again once it is back");
});

test("a concrete function's engine set after a call is the one its next call runs on", () => {
  const f = sc.stage((x: sc.Tensor) => x.add(1));
  const x = sc.tensor([1, 2]);
  const cf = f.concrete(x);
  assert.deepEqual(cf.callFlat([x])[0]!.arraySync(), [2, 3]);
  const runs = sc.onnx.engineStats.runs;
  cf.engine = "onnxruntime";
  assert.deepEqual(cf.callFlat([x])[0]!.arraySync(), [2, 3]);
  assert.equal(sc.onnx.engineStats.runs, runs + 1);
  cf.engine = null;
  cf.callFlat([x]);
  assert.equal(sc.onnx.engineStats.runs, runs + 1);
});

test("a staged function returning a structure or one tensor gives it back from fast-path calls", () => {
  const one = sc.stage((x: sc.Tensor) => x.neg());
  const many = sc.stage((x: sc.Tensor) => ({ a: x.neg(), b: [x.add(1), 7] }));
  const x = sc.tensor([1, 2]);
  assert.deepEqual(warm(one, x).arraySync(), [-1, -2]);
  const r = warm(many, x);
  assert.deepEqual(r.a.arraySync(), [-1, -2]);
  assert.deepEqual((r.b[0] as sc.Tensor).arraySync(), [2, 3]);
  assert.equal(r.b[1], 7);
});

test("after fast-path calls on tensor arguments only, a JS value, an array or a missing argument in their place takes the full path", () => {
  // (a call whose arguments were all tensors hands its arguments array to the executor as the
  // graph's inputs: anything else in that list must not get there)
  const f = sc.stage((a: sc.Tensor, b?: unknown) => {
    if (b === undefined) return a.neg();
    if (b instanceof sc.Tensor) return a.add(b);
    if (Array.isArray(b)) return a.add(b[0] as sc.Tensor).mul(10);
    return a.mul(b as number);
  });
  const a = sc.tensor([1, 2]);
  const b = sc.tensor([10, 20]);
  assert.deepEqual(warm(f, a, b).arraySync(), [11, 22]);
  assert.deepEqual(f(a, 3).arraySync(), [3, 6]);
  assert.deepEqual(warm(f, a, b).arraySync(), [11, 22]);
  assert.deepEqual(f(a, [b]).arraySync(), [110, 220]);
  assert.deepEqual(warm(f, a, b).arraySync(), [11, 22]);
  assert.deepEqual(f(a).arraySync(), [-1, -2]);
  assert.deepEqual(warm(f, a, b).arraySync(), [11, 22]);
  assert.deepEqual(f(b, a).arraySync(), [11, 22], "the same types in the other order");
  assert.deepEqual(f(sc.tensor([5, 6]), b).arraySync(), [15, 26], "another tensor of the same type");
  assert.equal(f.traceCount, 4);
});

test("a concrete function's engine set between fast-path calls is the one the next fast-path call runs on", () => {
  const f = sc.stage((x: sc.Tensor) => x.add(1));
  const x = sc.tensor([1, 2]);
  assert.deepEqual(warm(f, x).arraySync(), [2, 3]);
  const cf = f.concrete(x);
  const runs = sc.onnx.engineStats.runs;
  cf.engine = "onnxruntime";
  assert.deepEqual(f(x).arraySync(), [2, 3]);
  assert.deepEqual(f(x).arraySync(), [2, 3]);
  assert.equal(sc.onnx.engineStats.runs, runs + 2);
  cf.engine = null;
  assert.deepEqual(f(x).arraySync(), [2, 3]);
  assert.equal(sc.onnx.engineStats.runs, runs + 2);
});

test("a host callback inside a staged function calls staged functions on their fast path, itself included, and every call gets its own answer", () => {
  // (a fast-path call hands its arguments array to the executor: calls nested inside a run must
  // not see another call's inputs)
  const inner = sc.stage((t: sc.Tensor) => t.mul(10));
  let depth = 0;
  const outer = sc.stage((x: sc.Tensor): sc.Tensor => {
    const y = sc.hostCall(
      (t: sc.Tensor) => {
        depth++;
        // the outer function again, on another tensor of its type, from inside its own run
        const nested = depth === 1 ? outer(t.add(100)) : t;
        depth--;
        return inner(t).add(inner(sc.tensor([1, 1], "float32"))).add(nested.sub(nested));
      },
      sc.spec([2], "float32"),
      x,
    ) as sc.Tensor;
    return y.add(x);
  });
  const a = sc.tensor([1, 2], "float32");
  const b = sc.tensor([3, 4], "float32");
  for (let i = 0; i < 3; i++) {
    assert.deepEqual([...outer(a).dataSync()], [21, 32], `call ${i} on a`);
    assert.deepEqual([...outer(b).dataSync()], [43, 54], `call ${i} on b`);
  }
  assert.deepEqual([...inner(a).dataSync()], [10, 20]);
});

test("after fast-path calls, an op as the function's last op and its input returned as it is come back right", () => {
  const last = sc.stage((x: sc.Tensor) => sc.tanh(x));
  const same = sc.stage((x: sc.Tensor) => x);
  const x = sc.tensor([0.5, -1], "float64");
  for (let i = 0; i < 3; i++) {
    assert.deepEqual([...last(x).dataSync()], [Math.tanh(0.5), Math.tanh(-1)]);
    assert.deepEqual([...same(x).dataSync()], [0.5, -1]);
  }
  const y = sc.tensor([2, 3], "float64");
  assert.deepEqual([...same(y).dataSync()], [2, 3]);
});
