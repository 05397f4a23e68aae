/**
 * A staged function follows the modules' modes and trainable flags however it reaches the
 * module (argument, closure, property of `this`, nested in another module): a trace that read a
 * mode or flag is reused only while it holds; changing it back picks the earlier trace again.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const { nn } = sc;

const values = (t: sc.Tensor) => Array.from(t.dataSync() as Float32Array);

/** A model whose train and eval outputs differ (dropout at 0.5: a mask zeroes about half). */
const makeModel = () => new nn.Sequential(new nn.Linear(8, { inFeatures: 3, seed: 3 }), new nn.Dropout(0.5, { seed: 4 }));

/** Checks `f` (calling `model` somehow) against eager calls through train -> eval -> train. */
function checkModes(model: sc.nn.Module, f: ((x: sc.Tensor) => sc.Tensor) & { traceCount: number }) {
  const x = sc.ones([4, 3]);
  model.train();
  const train1 = f(x);
  f(x); // the fast path, still train mode
  assert.equal(f.traceCount, 1);
  model.eval();
  const expected = values(model.call(x));
  assert.deepEqual(values(f(x)), expected, "eval mode after a train-mode trace: no dropout");
  assert.deepEqual(values(f(x)), expected, "and again on the fast path");
  assert.equal(f.traceCount, 2);
  model.train();
  const train2 = f(x);
  assert.equal(f.traceCount, 2, "back in train mode: the first trace is reused");
  assert.ok(values(train2).some((v) => v === 0), "train mode again: dropout zeroes entries");
  assert.notDeepEqual(values(train1), values(train2), "a fresh mask per call");
  model.eval();
  assert.deepEqual(values(f(x)), expected, "eval mode again: the eval trace is reused");
  assert.equal(f.traceCount, 2);
}

test("a staged function capturing a model in a closure follows model.eval() and model.train()", () => {
  const model = makeModel();
  checkModes(model, sc.stage((x: sc.Tensor) => model.call(x) as sc.Tensor));
});

test("a model reached through `this` follows its mode", () => {
  class Predictor {
    readonly model = makeModel();
    readonly predict = sc.stage((x: sc.Tensor) => this.run(x));
    run(x: sc.Tensor): sc.Tensor {
      return this.model.call(x) as sc.Tensor;
    }
  }
  const p = new Predictor();
  checkModes(p.model, p.predict);
});

test("a model nested in another module (and passed as an argument) follows its mode", () => {
  class Outer extends nn.Module {
    readonly inner = makeModel();
    forward(x: sc.Tensor): sc.Tensor {
      return sc.relu(this.inner.call(x) as sc.Tensor);
    }
  }
  const outer = new Outer();
  checkModes(outer, sc.stage((x: sc.Tensor) => outer.call(x) as sc.Tensor));
  // only the inner Dropout's mode changes: the trace still follows it
  const g = sc.stage((x: sc.Tensor) => outer.call(x) as sc.Tensor);
  const x = sc.ones([4, 3]);
  outer.train();
  g(x);
  (outer.inner.layers[1] as sc.nn.Module).eval();
  assert.deepEqual(values(g(x)), values(outer.call(x)));
  assert.equal(g.traceCount, 2);
  const h = sc.stage((m: sc.nn.Module, x: sc.Tensor) => m.call(x) as sc.Tensor);
  const viaArgument = Object.defineProperty((x: sc.Tensor) => h(outer, x), "traceCount", { get: () => h.traceCount });
  checkModes(outer, viaArgument as typeof viaArgument & { traceCount: number });
});

test("a staged function calling another staged function that reads the mode follows it (the callee's trace reused)", () => {
  const model = makeModel();
  const inner = sc.stage((x: sc.Tensor) => model.call(x) as sc.Tensor);
  const outer = sc.stage((x: sc.Tensor) => inner(x).mul(2));
  const x = sc.ones([4, 3]);
  model.train();
  inner(x); // the callee traced first, eagerly: the caller's trace reuses it
  outer(x);
  model.eval();
  assert.deepEqual(values(outer(x)), values((model.call(x) as sc.Tensor).mul(2)));
  assert.equal(outer.traceCount, 2);
});

test("BatchNorm in a closure: eval mode after a train-mode trace uses the running statistics and leaves them alone", () => {
  const bn = new nn.BatchNorm({ momentum: 0.5 });
  const f = sc.stage((x: sc.Tensor) => bn.call(x) as sc.Tensor);
  const x = sc.random.normal([6, 3], { seed: 7, mean: 2 });
  f(x);
  f(x);
  bn.eval();
  const mean = values(bn.runningMean);
  const expected = values(bn.call(x));
  assert.deepEqual(values(f(x)), expected);
  assert.deepEqual(values(bn.runningMean), mean, "eval mode does not update the running mean");
});

test("freezing a layer after a staged training step was traced stops its weights moving (and unfreezing moves them again)", () => {
  const model = new nn.Sequential(new nn.Linear(4, { inFeatures: 3, seed: 1 }), new nn.ReLU(), new nn.Linear(2, { seed: 2 }));
  const opt = new sc.optim.SGD({ learningRate: 0.1 });
  // the README's staged step: a tape over the model's current parameters
  const step = sc.stage((x: sc.Tensor, y: sc.Tensor) => {
    const tape = new sc.GradientTape();
    const params = model.parameters();
    const loss = tape.record(() => sc.mean(sc.square(sc.sub(model.call(x) as sc.Tensor, y))));
    const grads = tape.gradient(loss, params) as sc.Tensor[];
    opt.applyGradients(grads.map((g, i) => [g, params[i]!] as [sc.Tensor, sc.Variable]));
    return loss;
  });
  const x = sc.random.normal([8, 3], { seed: 5 });
  const y = sc.random.normal([8, 2], { seed: 6 });
  step(x, y);
  const first = model.layers[0] as sc.nn.Linear;
  const second = model.layers[2] as sc.nn.Linear;
  let k0 = values(first.kernel);
  let k1 = values(second.kernel);
  step(x, y);
  assert.notDeepEqual(values(first.kernel), k0, "trainable: the kernel moves");
  first.trainable = false;
  k0 = values(first.kernel);
  k1 = values(second.kernel);
  step(x, y);
  step(x, y);
  assert.deepEqual(values(first.kernel), k0, "frozen after the trace: the kernel stays");
  assert.notDeepEqual(values(second.kernel), k1, "the other layer still trains");
  assert.equal(step.traceCount, 2);
  first.trainable = true;
  step(x, y);
  assert.notDeepEqual(values(first.kernel), k0, "unfrozen: it moves again");
  assert.equal(step.traceCount, 2, "the first trace is reused");
});

test("freezing a layer between fit-like staged steps with optimizer.minimize(() => model.parameters())", () => {
  const model = new nn.Sequential(new nn.Linear(4, { inFeatures: 3, seed: 1 }), new nn.Linear(2, { seed: 2 }));
  const opt = new sc.optim.Adam({ learningRate: 0.05 });
  const step = sc.stage((x: sc.Tensor, y: sc.Tensor) =>
    opt.minimize(() => sc.mean(sc.square(sc.sub(model.call(x) as sc.Tensor, y))), () => model.parameters()),
  );
  const x = sc.random.normal([8, 3], { seed: 5 });
  const y = sc.random.normal([8, 2], { seed: 6 });
  step(x, y);
  const frozen = model.layers[1] as sc.nn.Linear;
  frozen.trainable = false;
  const k = values(frozen.kernel);
  const b = values(frozen.bias!);
  step(x, y);
  step(x, y);
  assert.deepEqual(values(frozen.kernel), k);
  assert.deepEqual(values(frozen.bias!), b);
});

test("a retrace caused by a mode change names it in the retrace warning", () => {
  const model = makeModel();
  const f = sc.stage((x: sc.Tensor, k: number) => (model.call(x) as sc.Tensor).mul(k));
  const x = sc.ones([2, 3]);
  const warnings: string[] = [];
  const warn = console.warn;
  console.warn = (m: string) => void warnings.push(m);
  try {
    for (let k = 0; k < 5; k++) f(x, k);
    model.eval();
    f(x, 4);
  } finally {
    console.warn = warn;
  }
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /Dropout\.training changed from true to false/);
});
