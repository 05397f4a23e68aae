import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import * as optim from "../../src/optim/index.js";
import { Rng } from "../util/rng.js";

function close(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number, what = ""): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i]!, e = expected[i]!;
    assert.ok(Math.abs(a - e) <= tol * (1 + Math.abs(e)), `${what}[${i}]: got ${a}, expected ${e}`);
  }
}
const values = (t: sc.Tensor): number[] => Array.from(t.dataSync());

/** f(w) = sum((w - c)^2), gradient 2(w - c). */
const quadratic = (w: sc.Tensor, c: sc.Tensor): sc.Tensor => sc.sum(sc.square(sc.sub(w, c)));

test("SGD: one plain step is w - lr * g (hand-computed)", () => {
  const w = sc.variable(sc.tensor([1, -2, 3], "float64"));
  const opt = new optim.SGD({ learningRate: 0.1 });
  opt.step([sc.tensor([0.5, -1, 2], "float64")], [w]);
  close(values(w), [0.95, -1.9, 2.8], 1e-15, "w");
  assert.equal(opt.iterations.item(), 1);
  assert.deepEqual(opt.slotNames, []);
});

test("SGD: momentum and Nesterov match a reference loop over three steps", () => {
  const grads = [[1, -2], [0.5, 0.25], [-1, 3]];
  for (const nesterov of [false, true]) {
    const w = sc.variable(sc.tensor([0.3, -0.7], "float64"));
    const opt = new optim.SGD({ learningRate: 0.1, momentum: 0.9, nesterov });
    const ref = [0.3, -0.7], vel = [0, 0];
    for (const g of grads) {
      opt.step([sc.tensor(g, "float64")], [w]);
      for (let i = 0; i < 2; i++) {
        vel[i] = 0.9 * vel[i]! + g[i]!;
        ref[i]! -= 0.1 * (nesterov ? g[i]! + 0.9 * vel[i]! : vel[i]!);
      }
      close(values(w), ref, 1e-14, `nesterov=${nesterov} w`);
      close(values(opt.getSlot(w, "velocity")!), vel, 1e-14, "velocity");
    }
  }
  // hand-computed first two momentum steps: v1 = g1, w1 = w0 - 0.1 g1; v2 = 0.9 g1 + g2
  const w = sc.variable(sc.tensor([0], "float64"));
  const opt = new optim.SGD({ learningRate: 0.1, momentum: 0.9 });
  opt.step([sc.tensor([1], "float64")], [w]);
  close(values(w), [-0.1], 1e-15);
  opt.step([sc.tensor([1], "float64")], [w]);
  close(values(w), [-0.1 - 0.19], 1e-15);
});

test("SGD: converges on a quadratic with known minimum", () => {
  const c = sc.tensor([1.5, -0.25, 4], "float64");
  for (const options of [{ learningRate: 0.1 }, { learningRate: 0.05, momentum: 0.9 }, { learningRate: 0.05, momentum: 0.9, nesterov: true }]) {
    const w = sc.variable(sc.zeros([3], "float64"));
    const opt = new optim.SGD(options);
    for (let i = 0; i < 800; i++) opt.minimize(() => quadratic(w, c), [w]);
    close(values(w), [1.5, -0.25, 4], 1e-8, JSON.stringify(options));
  }
});

test("Adam: one step by hand, then two more against a reference loop", () => {
  // Step 1: m = 0.1 g, v = 0.001 g^2, m̂ = g, v̂ = g^2, so w -= lr * g / (|g| + eps).
  const w = sc.variable(sc.tensor([1, -2, 0.5], "float64"));
  const opt = new optim.Adam({ learningRate: 0.01, beta1: 0.9, beta2: 0.999, epsilon: 1e-8 });
  const g1 = [0.5, -0.1, 2];
  opt.step([sc.tensor(g1, "float64")], [w]);
  close(values(w), [1 - 0.01 * (0.5 / (0.5 + 1e-8)), -2 + 0.01 * (0.1 / (0.1 + 1e-8)), 0.5 - 0.01 * (2 / (2 + 1e-8))], 1e-15, "w1");
  close(values(opt.getSlot(w, "m")!), [0.05, -0.01, 0.2], 1e-15, "m1");
  close(values(opt.getSlot(w, "v")!), [0.00025, 0.00001, 0.004], 1e-12, "v1");
  // Steps 2 and 3 against the paper's algorithm written out.
  const ref = values(w), m = values(opt.getSlot(w, "m")!), v = values(opt.getSlot(w, "v")!);
  for (const [t, g] of [[2, [-0.3, 0.2, 1]], [3, [0.1, 0.1, -4]]] as const) {
    opt.step([sc.tensor(g as unknown as number[], "float64")], [w]);
    for (let i = 0; i < 3; i++) {
      m[i] = 0.9 * m[i]! + 0.1 * g[i]!;
      v[i] = 0.999 * v[i]! + 0.001 * g[i]! * g[i]!;
      const mHat = m[i]! / (1 - 0.9 ** t), vHat = v[i]! / (1 - 0.999 ** t);
      ref[i]! -= (0.01 * mHat) / (Math.sqrt(vHat) + 1e-8);
    }
    close(values(w), ref, 1e-13, `w${t}`);
  }
  assert.equal(opt.iterations.item(), 3);
});

test("Adam: float32 variables stay float32 and agree with a float64 reference", () => {
  const w = sc.variable(sc.tensor([0.25, -1], "float32"));
  const opt = new optim.Adam({ learningRate: 0.1 });
  opt.step([sc.tensor([1, 2], "float32")], [w]);
  assert.equal(w.dtype, "float32");
  assert.equal(w.peek().dtype, "float32");
  close(values(w), [0.25 - 0.1, -1 - 0.1], 1e-6);
});

test("AdamW (weightDecay) and AMSGrad match reference loops", () => {
  const grads = [[0.4, -1], [0.1, 0.3], [-0.2, -0.2], [0.05, 0.9]];
  for (const amsgrad of [false, true]) {
    const w = sc.variable(sc.tensor([2, -1], "float64"));
    const opt = new optim.Adam({ learningRate: 0.05, beta1: 0.8, beta2: 0.95, epsilon: 1e-6, weightDecay: 0.1, amsgrad });
    const ref = [2, -1], m = [0, 0], v = [0, 0], vMax = [0, 0];
    grads.forEach((g, k) => {
      const t = k + 1;
      opt.step([sc.tensor(g, "float64")], [w]);
      for (let i = 0; i < 2; i++) {
        ref[i]! *= 1 - 0.05 * 0.1;
        m[i] = 0.8 * m[i]! + 0.2 * g[i]!;
        v[i] = 0.95 * v[i]! + 0.05 * g[i]! * g[i]!;
        vMax[i] = Math.max(vMax[i]!, v[i]!);
        const vUsed = amsgrad ? vMax[i]! : v[i]!;
        ref[i]! -= (0.05 * (m[i]! / (1 - 0.8 ** t))) / (Math.sqrt(vUsed / (1 - 0.95 ** t)) + 1e-6);
      }
      close(values(w), ref, 1e-13, `amsgrad=${amsgrad} step ${t}`);
    });
    assert.deepEqual(opt.slotNames, amsgrad ? ["m", "v", "vMax"] : ["m", "v"]);
  }
  const aw = optim.adamw({ learningRate: 0.1 });
  assert.equal(aw.weightDecay, 0.01);
});

test("Adam: fits a linear regression to its known solution (minimize, variables found by the tape)", () => {
  const rng = new Rng(7);
  const n = 64;
  const X = rng.tensor([n, 3], -1, 1, "float64");
  const trueW = [1, -2, 0.5], trueB = 0.3;
  const xs = X.dataSync();
  const ys = new Float64Array(n);
  for (let r = 0; r < n; r++) ys[r] = xs[r * 3]! * trueW[0]! + xs[r * 3 + 1]! * trueW[1]! + xs[r * 3 + 2]! * trueW[2]! + trueB;
  const y = sc.tensor(ys);
  const w = sc.variable(sc.zeros([3], "float64"), { name: "w" });
  const b = sc.variable(sc.zeros([], "float64"), { name: "b" });
  const opt = new optim.Adam({ learningRate: 0.05 });
  const loss = () => sc.mul(sc.sum(sc.square(sc.sub(sc.add(sc.sum(sc.mul(X, w), 1), b), y))), 1 / n);
  let last = Infinity;
  for (let i = 0; i < 1500; i++) last = opt.minimize(loss).item() as number;
  assert.ok(last < 1e-10, `final loss ${last}`);
  close(values(w), trueW, 1e-5, "w");
  close(values(b), [trueB], 1e-5, "b");
  assert.deepEqual(new Set(opt.variables()), new Set([w, b]));
});

test("minimize returns the loss, leaves unconnected variables alone, and the old value tensors unchanged", () => {
  const w = sc.variable(sc.tensor([3, -1], "float64"));
  const unused = sc.variable(sc.tensor([7], "float64"));
  const before = w.peek();
  const opt = new optim.SGD({ learningRate: 0.25 });
  const loss = opt.minimize(() => quadratic(w, sc.tensor([1, 1], "float64")), [w, unused]);
  close(values(loss), [4 + 4], 1e-15, "loss");
  close(values(w), [3 - 0.25 * 4, -1 + 0.25 * 4], 1e-15, "w");
  close(values(unused), [7], 0, "unused");
  close(values(before), [3, -1], 0, "old value");
  // null gradients skip a variable in step/applyGradients
  opt.applyGradients([[null, w], [sc.tensor([2], "float64"), unused]]);
  close(values(w), [2, 0], 1e-15, "w after null grad");
  close(values(unused), [6.5], 1e-15, "unused after step");
});

test("optimizer updates are not recorded by an enclosing tape", () => {
  const w = sc.variable(sc.tensor([1, 2], "float64"));
  const tape = new sc.GradientTape({ persistent: true });
  const opt = new optim.SGD({ learningRate: 0.5 });
  const y = tape.record(() => {
    const s = sc.sum(sc.square(w));
    opt.step([sc.tensor([1, 1], "float64")], [w]);
    return s;
  });
  close(values(tape.gradient(y, w)), [2, 4], 1e-15, "grad of the pre-update read");
  close(values(w), [0.5, 1.5], 1e-15);
});

test("a learning-rate function gets the step count as a tensor and its rate is kept in a Variable", () => {
  const w = sc.variable(sc.tensor([0], "float64"));
  const seen: number[] = [];
  const opt = new optim.SGD({ learningRate: (s) => (seen.push(s.item() as number), sc.div(0.1, sc.add(s, 1))) });
  for (let i = 0; i < 3; i++) opt.step([sc.tensor([1], "float64")], [w]);
  // (the first call computes the initial value of the learning-rate Variable)
  assert.deepEqual(seen, [0, 0, 1, 2]);
  close(values(w), [-(0.1 + 0.05 + 0.1 / 3)], 1e-15);
  close(values(opt.learningRateVariable), [0.1 / 3], 1e-15, "rate of the last step");
  assert.equal(opt.currentLearningRate(), 0.1 / 4);
  opt.reset();
  assert.equal(opt.iterations.item(), 0);
  assert.throws(() => new optim.SGD({ learningRate: (() => 0.1) as unknown as (s: sc.Tensor) => sc.Tensor }), (e: unknown) => e instanceof sc.ValueError && /must return a tensor/.test(e.message));
});

test("optimizers reject bad arguments with typed errors naming the optimizer", () => {
  const w = sc.variable(sc.zeros([2, 3]), { name: "w" });
  const opt = new optim.Adam();
  const msg = (re: RegExp) => (e: unknown) => e instanceof Error && re.test(e.message);
  assert.throws(() => opt.step([sc.zeros([2, 3]), sc.zeros([2, 3])], [w]), (e: unknown) => e instanceof sc.ValueError && /^Adam\.step: got 2 gradients for 1 variables/.test(e.message));
  assert.throws(() => opt.step([sc.zeros([3, 2])], [w]), (e: unknown) => e instanceof sc.ShapeError && /Adam\.step: gradient 0 has shape \[3, 2\] but variable w has shape \[2, 3\]/.test(e.message));
  assert.throws(() => opt.step([sc.zeros([2, 3], "float64")], [w]), (e: unknown) => e instanceof sc.DtypeError && /Adam\.step: .*float64.*float32/.test(e.message));
  assert.throws(() => opt.step([sc.zeros([2, 3])], [sc.zeros([2, 3]) as unknown as sc.Variable]), (e: unknown) => e instanceof sc.ValueError && /expected a Variable/.test(e.message));
  assert.throws(() => opt.step([sc.zeros([2, 3]), sc.zeros([2, 3])], [w, w]), msg(/appears twice/));
  const iv = sc.variable(sc.tensor([1, 2], "int32"));
  assert.throws(() => opt.step([sc.tensor([1, 1], "int32")], [iv]), (e: unknown) => e instanceof sc.DtypeError && /only float variables/.test(e.message));
  assert.throws(() => opt.minimize(() => sc.sum(w, 0), [w]), (e: unknown) => e instanceof sc.ShapeError && /Adam\.minimize: the loss must be a scalar/.test(e.message));
  assert.throws(() => opt.minimize(() => sc.scalar(1)), (e: unknown) => e instanceof sc.GradientError && /read no trainable variables/.test(e.message));
  assert.throws(() => opt.getSlot(w, "velocity"), msg(/Adam has no slot "velocity"/));
  assert.equal(opt.iterations.item(), 0, "failed steps do not count");
  assert.throws(() => new optim.Adam({ beta1: 1 }), (e: unknown) => e instanceof sc.ValueError && /Adam: beta1 must be in \[0, 1\), got 1/.test(e.message));
  assert.throws(() => new optim.Adam({ epsilon: 0 }), msg(/epsilon must be in \(0, Infinity\]/));
  assert.throws(() => new optim.Adam({ learningRate: Number.NaN }), msg(/learningRate must be a finite number/));
  assert.throws(() => new optim.SGD({ momentum: -0.5 }), (e: unknown) => e instanceof sc.ValueError && /SGD: momentum/.test(e.message));
  assert.throws(() => new optim.SGD({ nesterov: true }), msg(/SGD: nesterov needs momentum > 0/));
  assert.throws(() => new optim.SGD({ weightDecay: -1 }), msg(/SGD: weightDecay/));
});

test("SGD weight decay is decoupled: w *= 1 - lr * wd, then the gradient step", () => {
  const w = sc.variable(sc.tensor([2, -4], "float64"));
  new optim.SGD({ learningRate: 0.1, weightDecay: 0.5 }).step([sc.tensor([1, 1], "float64")], [w]);
  close(values(w), [2 * 0.95 - 0.1, -4 * 0.95 - 0.1], 1e-15);
});
