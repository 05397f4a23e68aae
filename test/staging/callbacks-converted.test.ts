/**
 * Callbacks handed to Stagecraft functions from plain (unconverted) code are converted by
 * AutoGraph when they run while a function staged with AutoGraph is traced (issue 11 point 8:
 * as AutoGraph's converted_call and TF's control flow do): sc.stage(sc.grad(f)) with a native `if`
 * on a tensor in f, branches of sc.cond, whileLoop's condition and body, scan's step,
 * tape.record's function, bound methods and Math builtins passed as values. Eagerly, plain code
 * keeps JavaScript's semantics (a tensor used as a number is a TensorCoercionError), and
 * stage(fn, { autograph: false }) converts nothing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

type Any = any;
const f64 = (v: number) => sc.scalar(v, "float64");
const item = (t: unknown) => (t as sc.Tensor).item();

// Plain functions of this module, with native control flow and operators on tensors.
function piecewise(x: Any): Any {
  if (x > 0) return x * x;
  else return -x * 3;
}
const cube = (x: Any): Any => (x > 0 ? x * x * x : x * x);
const thenBranch = (x: Any): Any => (x > 10 ? x : x * 2);
const elseBranch = function (x: Any): Any {
  let y = x;
  while (y < 5) y = y + 1;
  return y;
};

test("sc.stage of sc.grad / valueAndGrad / jvp / grad(grad) of a plain function converts it", () => {
  const g = sc.grad(piecewise);
  assert.throws(() => g(f64(-1.5)), sc.TensorCoercionError, "eagerly, plain code keeps JavaScript's semantics");
  const sg = sc.stage(g);
  assert.equal(item(sg(f64(-1.5))), -3);
  assert.equal(item(sg(f64(2))), 4);
  assert.equal(item(sc.stage(sc.grad(sc.stage(piecewise)))(f64(-1.5))), -3);
  assert.equal(item((sc.stage(sc.valueAndGrad(piecewise))(f64(-1.5)) as Any)[1]), -3);
  assert.equal(item(sc.stage((x: sc.Tensor) => sc.jvp(piecewise, [x], [sc.onesLike(x)])[1])(f64(-1.5))), -3);
  const gg = sc.stage(sc.grad(sc.grad(cube)));
  assert.equal(item(gg(f64(-2))), 2);
  assert.equal(item(gg(f64(2))), 12);
});

// Plain functions handing plain callbacks to Stagecraft's control flow and tape.
const condUser = (x: Any): Any => sc.cond(sc.greater(x, 0), () => thenBranch(x), () => elseBranch(x));
const loopCond = (v: Any): Any => v < 10;
const loopBody = (v: Any): Any => [v > 0 ? v * 2 : v + 3];
const loopUser = (x: Any): Any => sc.whileLoop(loopCond, loopBody, [x])[0];
const scanStep = (c: Any[], e: Any): [Any[], Any] => {
  const n = e > 0 ? c[0] + e * c[0] : c[0] - e;
  return [[n], n];
};
const scanUser = (x: Any): Any => sc.scan(scanStep, [x], sc.tensor([1, -2, 3], "float64"))[0][0];
const recorded = (x: Any): Any => (x > 0 ? x * x * x : x);
const tapeUser = (x: Any): Any => {
  const tape = new sc.GradientTape();
  tape.watch(x);
  const y = tape.record(() => recorded(x));
  return tape.gradient(y, x).mul(x);
};

test("branches of sc.cond, whileLoop's condition and body, scan's step and tape.record's function given by plain code are converted when staged", () => {
  // values, staged through a transform (sc.stage(sc.vjp...)) so no converted code is between
  const value = (f: (x: Any) => Any) => sc.stage((x: sc.Tensor) => sc.vjp(f, x)[0]);
  const slope = (f: (x: Any) => Any) => sc.stage(sc.grad(f));
  assert.equal(item(value(condUser)(f64(-1.5))), 5.5);
  assert.equal(item(value(condUser)(f64(3))), 6);
  assert.equal(item(slope(condUser)(f64(3))), 2);
  assert.equal(item(slope(condUser)(f64(-1.5))), 1);
  assert.equal(item(value(loopUser)(f64(-4))), 16);
  assert.equal(item(slope(loopUser)(f64(-4))), 8);
  // scan: c=x; e=1: 2x; e=-2: 2x+2; e=3: 4(2x+2)
  assert.equal(item(value(scanUser)(f64(0.5))), 12);
  assert.equal(item(slope(scanUser)(f64(0.5))), 8);
  // d/dx of x * 3x^2 = 9x^2 (the tape's own gradient is not differentiated further: a constant times x)
  assert.equal(item(value(tapeUser)(f64(2))), 24);
  assert.equal(item(value(tapeUser)(f64(-2))), -2);
});

test("bound methods and Math builtins passed as values are converted when staged", () => {
  class Scaler {
    k = 3;
    apply(v: Any): Any {
      return v > 0 ? v * this.k : v;
    }
  }
  const s = new Scaler();
  const bound = sc.stage(sc.grad((x: Any) => sc.cond(sc.greater(x, 100), () => x, s.apply.bind(s, x))));
  assert.equal(item(bound(f64(2))), 3);
  assert.equal(item(bound(f64(-2))), 1);
  const absGrad = sc.stage((x: sc.Tensor) => sc.grad(Math.abs as Any)(x));
  assert.equal(item(absGrad(f64(-2))), -1);
  assert.equal(item(absGrad(f64(5))), 1);
  const mapped = sc.stage((xs: sc.Tensor) => sc.stack(sc.unstack(xs).map(Math.abs as Any) as sc.Tensor[]));
  assert.deepEqual(mapped(sc.tensor([-1, 2, -3])).arraySync(), [1, 2, 3]);
});

// A function that only calls others (no control flow or operator of its own) between converted
// code and one that has them: converted too, so the call reaches the converted callee.
function signedSquare(x: Any): Any {
  if (x > 0) return x * x;
  return -x;
}
const sumOfTwo = (x: Any): Any => sc.add(signedSquare(x), signedSquare(sc.mul(x, 2)));
const condOfTwo = (x: Any): Any => sc.cond(sc.greater(x, 0), () => signedSquare(x), () => signedSquare(sc.neg(x)));

test("functions reached through a function that only makes calls are converted (converted_call)", () => {
  assert.equal(item(sc.stage((x: Any) => sumOfTwo(x) + 1)(sc.scalar(-2))), 7);
  assert.equal(item(sc.stage((x: Any) => sumOfTwo(x) + 1)(sc.scalar(3))), 46);
  assert.equal(item(sc.stage((x: Any) => condOfTwo(x) + 1)(sc.scalar(-2))), 5);
  assert.equal(item(sc.stage(sc.grad(sumOfTwo))(f64(-2))), -3);
});

test("stage(fn, { autograph: false }) converts no callback: a tensor used as a number stays an error", () => {
  const plain = sc.stage((x: sc.Tensor) => sc.grad(piecewise)(x), { autograph: false });
  assert.throws(() => plain(f64(-1.5)), sc.TensorCoercionError);
});
