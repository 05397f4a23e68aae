import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { assertClose } from "../util/gradcheck.js";

const f64 = (v: sc.NestedArray) => sc.tensor(v, "float64");

test("gradient of a polynomial matches the derivative", () => {
  const x = f64([1, 2, 3]);
  const tape = new sc.GradientTape();
  const y = tape.record(() => {
    tape.watch(x);
    return sc.sum(sc.add(sc.mul(sc.pow(x, 3), 2), sc.mul(x, 5)));
  });
  assertClose(tape.gradient(y, x).dataSync(), [6 + 5, 24 + 5, 54 + 5], 1e-12, "d/dx");
});

test("non-persistent tapes allow one gradient call, persistent ones many", () => {
  const x = f64(2);
  const t1 = new sc.GradientTape();
  const y1 = t1.record(() => (t1.watch(x), sc.square(x)));
  t1.gradient(y1, x);
  assert.throws(() => t1.gradient(y1, x), sc.GradientError);
  const t2 = new sc.GradientTape({ persistent: true });
  const [a, b] = t2.record(() => (t2.watch(x), [sc.square(x), sc.exp(x)]));
  assert.equal(t2.gradient(a!, x).item(), 4);
  assertClose([t2.gradient(b!, x).item() as number], [Math.exp(2)], 1e-12, "exp");
});

test("a source the tape never watched is a GradientError naming it, unless zeros or null are asked for", () => {
  const x = f64(2);
  const z = f64([3, 4]);
  const tape = new sc.GradientTape({ persistent: true });
  const y = tape.record(() => (tape.watch(x), sc.mul(x, x)));
  assert.throws(() => tape.gradient(y, z), (e: unknown) => e instanceof sc.GradientError && /the source \(shape \[2\], float64\) was never watched by this tape: call tape\.watch\(x\)/.test((e as Error).message));
  // in a structure, the message names the source's path
  assert.throws(() => tape.gradient(y, [x, z]), /sources\[1\] \(shape \[2\], float64\) was never watched/);
  assert.throws(() => tape.gradient(y, { a: x, b: { c: z } }), /sources\.b\.c \(shape \[2\], float64\) was never watched/);
  assert.deepEqual(tape.gradient(y, z, { unconnected: "zero" }).arraySync(), [0, 0]);
  assert.equal(tape.gradient(y, z, { unconnected: "none" }), null);
  const [gx, gz] = tape.gradient(y, [x, z], { unconnected: "none" });
  assert.equal(gx.item(), 4);
  assert.equal(gz, null);
  assert.throws(() => tape.gradient(y, x, { unconnected: "zeros" as never }), (e: unknown) => e instanceof sc.ValueError && /unconnected must be one of "error", "zero", "none", got the string "zeros"/.test((e as Error).message));
});

test("a watched source the target does not depend on is a GradientError saying so, unless zeros or null are asked for", () => {
  const x = f64(2);
  const w = f64([1, 2, 3]);
  const k = sc.tensor([1, 2], "int32");
  const tape = new sc.GradientTape({ persistent: true });
  const y = tape.record(() => {
    tape.watch(x, w, k);
    sc.sum(w); // recorded, but not part of y
    return sc.add(sc.mul(x, 3), sc.stopGradient(sc.sum(w)));
  });
  assert.equal(tape.gradient(y, x).item(), 3);
  assert.throws(() => tape.gradient(y, [x, w]), (e: unknown) => e instanceof sc.GradientError && /sources\[1\] \(shape \[3\], float64\) is watched but not connected to the target/.test((e as Error).message));
  assert.throws(() => tape.gradient(y, k), /is watched but not connected to the target: gradients flow only to floating-point tensors, and it is int32/);
  assert.deepEqual(tape.gradient(y, w, { unconnected: "zero" }).arraySync(), [0, 0, 0]);
  assert.equal(tape.gradient(y, w, { unconnected: "none" }), null);
});

test("a variable not read while recording, or not trainable, is named in the error", () => {
  const used = sc.variable(f64(2), { name: "used" });
  const unread = sc.variable(f64([1, 1]), { name: "unread" });
  const frozen = sc.variable(f64(3), { name: "frozen", trainable: false });
  const tape = new sc.GradientTape({ persistent: true });
  const y = tape.record(() => sc.mul(used, frozen));
  assert.throws(() => tape.gradient(y, [used, unread]), /sources\[1\] \(variable "unread", shape \[2\], float64\) was never watched by this tape: it was not read while the tape recorded/);
  assert.throws(() => tape.gradient(y, frozen), /variable "frozen".*was never watched by this tape: it is not trainable/);
  const [gu, gr, gf] = tape.gradient(y, [used, unread, frozen], { unconnected: "zero" });
  assert.equal(gu.item(), 3);
  assert.deepEqual(gr.arraySync(), [0, 0]);
  assert.equal(gf.item(), 0);
  const quiet = new sc.GradientTape({ watchAccessedVariables: false });
  const q = quiet.record(() => sc.square(used));
  assert.throws(() => quiet.gradient(q, used), /watchAccessedVariables: false/);
});

test("a source reached from eager code only through a staged function's unused input is unconnected there too", () => {
  const f = sc.stage((a: sc.Tensor, b: sc.Tensor) => sc.mul(a, 2), { autograph: false });
  const a = f64(1);
  const b = f64(5);
  const tape = new sc.GradientTape({ persistent: true });
  const y = tape.record(() => (tape.watch(a, b), f(a, b)));
  assert.equal(tape.gradient(y, a).item(), 2);
  assert.throws(() => tape.gradient(y, b), /the source \(shape \[\], float64\) is watched but not connected to the target/);
  assert.equal(tape.gradient(y, b, { unconnected: "zero" }).item(), 0);
});

test("grad and valueAndGrad give an argument the function does not use a zero gradient (as JAX)", () => {
  const g = sc.grad((x: sc.Tensor, y: sc.Tensor) => sc.mul(x, 3), { argnums: "all" })(f64(1), f64([1, 2]));
  assert.equal(g[0].item(), 3);
  assert.deepEqual(g[1].arraySync(), [0, 0]);
});

test("nested tapes give second and third derivatives", () => {
  const x = f64(0.7);
  const outer = new sc.GradientTape();
  const d2 = outer.record(() => {
    outer.watch(x);
    const inner = new sc.GradientTape();
    const y = inner.record(() => (inner.watch(x), sc.mul(sc.sin(x), sc.square(x))));
    return inner.gradient(y, x);
  });
  const second = outer.gradient(d2, x).item() as number;
  const v = 0.7;
  // d2/dx2 [x^2 sin x] = 2 sin x + 4x cos x - x^2 sin x
  assertClose([second], [2 * Math.sin(v) + 4 * v * Math.cos(v) - v * v * Math.sin(v)], 1e-12, "second");
  const third = sc.grad(sc.grad(sc.grad((t: sc.Tensor) => sc.mul(sc.sin(t), sc.square(t)))))(x).item() as number;
  // third derivative: 6 cos x - 6x sin x - x^2 cos x
  assertClose([third], [6 * Math.cos(v) - 6 * v * Math.sin(v) - v * v * Math.cos(v)], 1e-12, "third");
});

test("stopRecording excludes a computation from the tape", () => {
  const x = f64(3);
  const tape = new sc.GradientTape();
  const y = tape.record(() => {
    tape.watch(x);
    const frozen = tape.stopRecording(() => sc.square(x));
    return sc.mul(frozen, x);
  });
  assert.equal(tape.gradient(y, x).item(), 9);
});

test("variables are watched automatically and gradients flow to them", () => {
  const w = sc.variable(f64([1, -2]));
  const b = sc.variable(f64(0.5));
  const x = f64([3, 4]);
  const tape = new sc.GradientTape();
  const loss = tape.record(() => sc.square(sc.add(sc.sum(sc.mul(w, x)), b)));
  const [gw, gb] = tape.gradient(loss, [w, b]);
  const r = 1 * 3 - 2 * 4 + 0.5;
  assertClose(gw.dataSync(), [2 * r * 3, 2 * r * 4], 1e-12, "dw");
  assertClose(gb.dataSync(), [2 * r], 1e-12, "db");
  assert.deepEqual(tape.watchedVariables(), [w, b]);
});

test("non-trainable variables are not watched; assignment does not corrupt saved values", () => {
  const v = sc.variable(f64(2), { trainable: false });
  const tape = new sc.GradientTape({ persistent: true });
  const y = tape.record(() => sc.square(v));
  assert.throws(() => tape.gradient(y, v), /not trainable/);
  assert.equal(tape.gradient(y, v, { unconnected: "zero" }).item(), 0);
  const u = sc.variable(f64(3));
  const t2 = new sc.GradientTape();
  const z = t2.record(() => sc.mul(u, u));
  u.assign(100);
  assert.equal(u.item(), 100);
  assert.equal(t2.gradient(z, u).item(), 6);
});

test("variable assign, assignAdd, assignSub keep dtype and shape and check them", () => {
  const v = sc.variable([1, 2, 3]);
  v.assignAdd([1, 1, 1]).assignSub(0.5);
  assert.deepEqual(v.arraySync(), [1.5, 2.5, 3.5]);
  v.assign(sc.tensor([7, 8, 9]));
  assert.deepEqual(v.arraySync(), [7, 8, 9]);
  assert.throws(() => v.assign(sc.tensor([1, 2])), sc.ShapeError);
  assert.throws(() => v.assign(sc.tensor([1, 2, 3], "int32")), sc.DtypeError);
});

test("grad and valueAndGrad with chosen or all arguments, and nested structures", () => {
  const f = (a: sc.Tensor, b: sc.Tensor) => sc.sum(sc.mul(sc.square(a), b));
  const a = f64([1, 2]);
  const b = f64([3, 4]);
  assert.deepEqual(sc.grad(f)(a, b).arraySync(), [6, 16]);
  assert.deepEqual(sc.grad(f, { argnums: 1 })(a, b).arraySync(), [1, 4]);
  const [value, [ga, gb]] = sc.valueAndGrad(f, { argnums: "all" })(a, b);
  assert.equal(value.item(), 3 + 16);
  assert.deepEqual([ga.arraySync(), gb.arraySync()], [[6, 16], [1, 4]]);
  const params = { w: f64([1, 2]), layers: [f64(3)] };
  const g = sc.grad((p: typeof params) => sc.sum(sc.mul(p.w, p.layers[0]!)))(params);
  assert.deepEqual(g.w.arraySync(), [3, 3]);
  assert.equal(g.layers[0].item(), 3);
  assert.throws(() => sc.grad((x: sc.Tensor) => sc.mul(x, 2))(f64([1, 2])), sc.ShapeError);
});

test("vjp returns outputs and a reusable backward function", () => {
  const x = f64([1, 2, 3]);
  const [y, back] = sc.vjp((t: sc.Tensor) => sc.mul(t, t), x);
  assert.deepEqual(y.arraySync(), [1, 4, 9]);
  assert.deepEqual(back(f64([1, 0, 1]))[0].arraySync(), [2, 0, 6]);
  assert.deepEqual(back(f64([0, 1, 0]))[0].arraySync(), [0, 4, 0]);
});

test("customGradient replaces the gradient of a computation", () => {
  // A numerically safe log1p(exp(x)) whose gradient is sigmoid, clipped by a custom rule.
  const clippedIdentity = sc.customGradient((x: sc.Tensor) => ({
    value: sc.identity(x),
    grad: (dy: sc.Tensor) => sc.minimum(sc.maximum(dy, -1), 1),
  }));
  const x = f64([1, 2]);
  const g = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(clippedIdentity(t), 5)))(x);
  assert.deepEqual(g.arraySync(), [1, 1]);
  const g2 = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(clippedIdentity(t), 0.25)))(x);
  assert.deepEqual(g2.arraySync(), [0.25, 0.25]);
});

test("stopGradient blocks gradients", () => {
  const x = f64(3);
  const g = sc.grad((t: sc.Tensor) => sc.mul(sc.stopGradient(sc.square(t)), t))(x);
  assert.equal(g.item(), 9);
});

test("gradients reduce over broadcast dimensions", () => {
  const a = f64([[1, 2, 3], [4, 5, 6]]);
  const b = f64([10, 20, 30]);
  const [ga, gb] = sc.grad((x: sc.Tensor, y: sc.Tensor) => sc.sum(sc.mul(x, y)), { argnums: [0, 1] })(a, b);
  assert.deepEqual(ga.shape, [2, 3]);
  assert.deepEqual(gb.arraySync(), [5, 7, 9]);
});

test("a cotangent, tangent or custom gradient of the wrong shape is a GradientError, not a gradient broadcast to the wrong shape (eager and staged)", () => {
  const x = sc.tensor([0.1, 0.2, 0.3], "float64");
  const bad = [sc.ones([2, 3], "float64"), sc.ones([1], "float64"), sc.scalar(1, "float64")];
  for (const f of [(t: sc.Tensor) => sc.exp(t), sc.stage((t: sc.Tensor) => sc.exp(t), { name: "expOfSeeds" })]) {
    for (const c of bad) {
      const [, back] = sc.vjp(f, x);
      assert.throws(() => back(c), (e: Error) => e instanceof sc.GradientError && /has shape \[.*\] but its target has shape \[3\]/.test(e.message), `vjp cotangent [${c.shape}]`);
      assert.throws(() => sc.jvp(f, [x], [c]), sc.GradientError, `jvp tangent [${c.shape}]`);
      const tape = new sc.GradientTape();
      tape.watch(x);
      const y = tape.record(() => f(x));
      assert.throws(() => tape.gradient(y, x, { outputGradient: c }), sc.GradientError, `outputGradient [${c.shape}]`);
    }
    // the right shape still works, and a count that differs is said
    const [, back] = sc.vjp(f, x);
    assert.deepEqual((back(sc.ones([3], "float64"))[0] as sc.Tensor).shape, [3]);
    const tape = new sc.GradientTape();
    tape.watch(x);
    const y = tape.record(() => f(x));
    assert.throws(() => tape.gradient([y, y], x, { outputGradient: [sc.ones([3], "float64")] }), sc.GradientError);
  }
  const cg = sc.customGradient((t: sc.Tensor) => ({ value: sc.sum(t.mul(t)), grad: () => [sc.ones([7], "float64")] }));
  assert.throws(() => sc.grad((t: sc.Tensor) => cg(t))(x), (e: Error) => e instanceof sc.GradientError && /gradient of shape \[7\] for input 0 of shape \[3\]/.test(e.message));
  assert.throws(() => sc.grad(sc.stage((t: sc.Tensor) => cg(t), { name: "useCustom" }))(x), sc.GradientError);
});

test("ops whose derivative is zero everywhere (sign, floor, ceil, round, floorDiv) are connected: zero gradients, eager and staged; stopGradient stays unconnected", () => {
  const x = sc.tensor([1.5, -2.3, 0.7], "float64");
  const zeroDerivative: Record<string, (t: sc.Tensor) => sc.Tensor> = {
    sign: (t) => sc.sum(sc.sign(t)),
    floor: (t) => sc.sum(sc.floor(t)),
    ceil: (t) => sc.sum(sc.ceil(t)),
    round: (t) => sc.sum(sc.round(t)),
    floorDiv: (t) => sc.sum(sc.floorDiv(t, 2)),
    "floorDiv (divisor)": (t) => sc.sum(sc.floorDiv(7, t)),
    "a zero path beside a real one": (t) => sc.sum(sc.add(sc.floor(t), sc.mul(t, 3))),
  };
  const gradientOf = (f: (t: sc.Tensor) => sc.Tensor) => {
    const tape = new sc.GradientTape();
    tape.watch(x);
    const y = tape.record(() => f(x));
    return Array.from((tape.gradient(y, [x]) as sc.Tensor[])[0]!.dataSync());
  };
  for (const [name, f] of Object.entries(zeroDerivative)) {
    const want = name.startsWith("a zero path") ? [3, 3, 3] : [0, 0, 0];
    assert.deepEqual(gradientOf(f), want, `${name}, eager`);
    assert.deepEqual(gradientOf(sc.stage(f, { autograph: false })), want, `${name}, staged (graph AD)`);
  }
  for (const f of [(t: sc.Tensor) => sc.sum(sc.stopGradient(t)), sc.stage((t: sc.Tensor) => sc.sum(sc.stopGradient(t)), { autograph: false })]) {
    assert.throws(() => gradientOf(f), (e: unknown) => e instanceof sc.GradientError && /not connected/.test((e as Error).message));
  }
});
