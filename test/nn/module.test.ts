/** Modules: tracking, parameters, modes and trainable flags in trace caches, lazy building, state in staged code. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const { nn } = sc;

class Block extends nn.Module {
  readonly dense = new nn.Linear(3, { inFeatures: 2, seed: 1 });
  readonly extra = [new nn.Linear(2, { inFeatures: 3, seed: 2 }), { norm: new nn.LayerNorm(2) }];
  readonly scale = sc.variable(sc.scalar(2), { name: "scale" });
  readonly frozen = sc.variable(sc.zeros([2]), { trainable: false });
  forward(x: sc.Tensor): sc.Tensor {
    const h = (this.extra[0] as sc.nn.Linear).call(sc.relu(this.dense.call(x)));
    return sc.add(sc.mul((this.extra[1] as { norm: sc.nn.LayerNorm }).norm.call(h), this.scale), this.frozen);
  }
}

test("a module tracks child modules, Variables, and arrays/objects of them by attribute name", () => {
  const b = new Block();
  assert.deepEqual(
    b.namedParameters().map(([p]) => p),
    ["dense.kernel", "dense.bias", "extra.0.kernel", "extra.0.bias", "extra.1.norm.gamma", "extra.1.norm.beta", "scale"],
  );
  assert.deepEqual(b.namedVariables().map(([p]) => p).at(-1), "frozen", "non-trainable variables are variables, not parameters");
  assert.equal(b.parameterCount(), 2 * 3 + 3 + 3 * 2 + 2 + 2 + 2 + 1);
  assert.deepEqual(b.namedModules().map(([p, m]) => `${p}:${m.typeName}`), [":Block", "dense:Linear", "extra.0:Linear", "extra.1.norm:LayerNorm"]);
  b.dense.trainable = false;
  assert.deepEqual(b.parameters().length, 5, "a frozen child's variables leave parameters()");
  assert.equal(b.variables().length, 8);
});

test("train()/eval() key a staged function's trace cache (a model in eval mode never reuses the train graph)", () => {
  const model = new nn.Sequential(new nn.Linear(4, { inFeatures: 3, seed: 3 }), new nn.Dropout(0.5, { seed: 4 }));
  const f = sc.stage((m: sc.nn.Module, x: sc.Tensor) => m.call(x));
  const x = sc.ones([2, 3]);
  const eagerEval = model.eval().call(x);
  model.train();
  const train1 = f(model, x);
  model.eval();
  const evalOut = f(model, x);
  assert.deepEqual(Array.from(evalOut.dataSync()), Array.from(eagerEval.dataSync()), "eval mode: dropout passes through");
  assert.equal(f.traceCount, 2);
  model.train();
  const train2 = f(model, x);
  assert.equal(f.traceCount, 2, "back in train mode: the first trace is reused");
  assert.notDeepEqual(Array.from(train1.dataSync()), Array.from(evalOut.dataSync()));
  assert.notDeepEqual(Array.from(train1.dataSync()), Array.from(train2.dataSync()), "a fresh dropout mask per call");
  // Only the modes the trace read count: the Linear's is never read, so the Dropout in eval mode
  // under a train-mode parent is the eval-mode trace.
  (model.layers[1] as sc.nn.Module).eval();
  assert.deepEqual(Array.from(f(model, x).dataSync()), Array.from(model.call(x).dataSync()));
  assert.equal(f.traceCount, 2);
});

test("variables a model makes on its first call are made eagerly, also when that call is being staged", () => {
  const model = new nn.Sequential(new nn.Conv2d(2, 3, { seed: 5 }), new nn.Flatten(), new nn.Linear(3, { seed: 6 }));
  assert.equal(model.parameters().length, 0);
  const f = sc.stage((m: sc.nn.Module, x: sc.Tensor) => m.call(x));
  const x = sc.random.normal([2, 1, 5, 5], { seed: 7 });
  const staged = f(model, x);
  assert.equal(model.parameters().length, 4);
  for (const v of model.parameters()) assert.equal(v.isSymbolic, false);
  assert.deepEqual(model.namedParameters().map(([p, v]) => `${p}[${v.shape.join(",")}]`), ["layers.0.kernel[2,1,3,3]", "layers.0.bias[2]", "layers.2.kernel[18,3]", "layers.2.bias[3]"]);
  assert.deepEqual(Array.from(staged.dataSync()), Array.from(model.call(x).dataSync()));
  assert.throws(() => model.call(sc.ones([2, 3, 5, 5])), (e: unknown) => e instanceof sc.ShapeError && /Conv2d: expects 1 channels/.test(e.message));
});

test("BatchNorm updates its running statistics in staged code as eagerly, and eval mode uses them", () => {
  const make = () => new nn.BatchNorm({ momentum: 0.2 });
  const eager = make();
  const staged = make();
  const f = sc.stage((m: sc.nn.Module, x: sc.Tensor) => m.call(x));
  for (let i = 0; i < 3; i++) {
    const x = sc.random.normal([4, 2, 3, 3], { seed: 10 + i, mean: i, stddev: 1 + i });
    eager.call(x);
    f(staged, x);
  }
  assert.equal(f.traceCount, 1);
  assert.deepEqual(Array.from(staged.runningMean.dataSync()), Array.from(eager.runningMean.dataSync()));
  assert.deepEqual(Array.from(staged.runningVar.dataSync()), Array.from(eager.runningVar.dataSync()));
  // by hand for channel 0 after one batch
  const one = make();
  const x = sc.random.normal([5, 2], { seed: 20 });
  one.call(x);
  const col = Array.from(x.dataSync()).filter((_, i) => i % 2 === 0);
  const m = col.reduce((a, b) => a + b, 0) / 5;
  const unbiased = col.reduce((a, b) => a + (b - m) ** 2, 0) / 4;
  assert.ok(Math.abs((one.runningMean.dataSync()[0] as number) - 0.2 * m) < 1e-6);
  assert.ok(Math.abs((one.runningVar.dataSync()[0] as number) - (0.8 + 0.2 * unbiased)) < 1e-6);
  one.eval();
  const y = one.call(x).dataSync();
  const expected = (col[0]! - 0.2 * m) / Math.sqrt(0.8 + 0.2 * unbiased + 1e-5);
  assert.ok(Math.abs((y[0] as number) - expected) < 1e-5);
});

test("Dropout: seeded masks, the same sequence eagerly and staged, scaled by 1/(1 - rate)", () => {
  const x = sc.ones([4, 50]);
  const a = new nn.Dropout(0.25, { seed: 3 });
  const b = new nn.Dropout(0.25, { seed: 3 });
  const f = sc.stage((m: sc.nn.Module, t: sc.Tensor) => m.call(t));
  for (let i = 0; i < 3; i++) {
    const ea = Array.from(a.call(x).dataSync() as Float32Array);
    const sb = Array.from(f(b, x).dataSync());
    assert.deepEqual(sb, ea, `call ${i}`);
    assert.ok(ea.every((v) => v === 0 || Math.abs(v - 4 / 3) < 1e-6));
    const kept = ea.filter((v) => v !== 0).length / ea.length;
    assert.ok(kept > 0.6 && kept < 0.9, `kept ${kept}`);
  }
  assert.ok(b.namedVariables().some(([p]) => p === "randomState"), "the generator state is tracked (checkpoints keep it)");
});

test("an LSTM stages as one graph loop (not unrolled) and equals the eager layer", () => {
  const lstm = new nn.LSTM(4, { seed: 1 });
  const x = sc.random.normal([2, 6, 3], { seed: 2 });
  const f = sc.stage((m: sc.nn.Module, t: sc.Tensor) => m.call(t));
  const staged = f(lstm, x);
  const text = f.concrete(lstm, x).toString();
  assert.equal((text.match(/= while/g) ?? []).length, 1, text);
  assert.equal((text.match(/= matmul/g) ?? []).length <= 4, true, "the step's products appear once, in the loop body");
  assert.deepEqual(Array.from(staged.dataSync()), Array.from(lstm.call(x).dataSync()));
  const { state } = lstm.run(x);
  assert.equal(state.length, 2);
  assert.deepEqual(staged.shape, [2, 6, 4]);
});

test("summary() lists layers, output shapes and parameter counts", () => {
  const model = new nn.Sequential(new nn.Conv2d(4, 3, { seed: 1 }), new nn.ReLU(), new nn.MaxPool2d(2), new nn.Flatten(), new nn.Linear(10, { seed: 2 }));
  const s = model.summary(sc.zeros([1, 1, 8, 8]));
  assert.match(s, /layers\.0 \(Conv2d\)\s+\[1, 4, 6, 6\]\s+40/);
  assert.match(s, /layers\.3 \(Flatten\)\s+\[1, 36\]\s+0/);
  assert.match(s, /layers\.4 \(Linear\)\s+\[1, 10\]\s+370/);
  assert.match(s, /Total params: 410 \(trainable 410, non-trainable 0\)/);
  assert.equal(model.training, true, "summary leaves the mode as it was");
});

test("layers reject bad arguments with typed errors", () => {
  assert.throws(() => new nn.Linear(0), (e: unknown) => e instanceof sc.ValueError && /Linear: units must be a positive integer/.test(e.message));
  assert.throws(() => new nn.Linear(2, { inFeature: 3 } as never), (e: unknown) => e instanceof sc.ValueError && /unknown option "inFeature" \(did you mean "inFeatures"\?\)/.test(e.message));
  assert.throws(() => new nn.Dropout(1), (e: unknown) => e instanceof sc.ValueError && /rate must be in \[0, 1\)/.test(e.message));
  assert.throws(() => new nn.MultiHeadAttention(6, 4), (e: unknown) => e instanceof sc.ValueError && /divisible by heads/.test(e.message));
  assert.throws(() => new nn.Linear(2, { inFeatures: 3 }).call(sc.ones([2, 4])), (e: unknown) => e instanceof sc.ShapeError && /Linear: expects 3 features/.test(e.message));
  assert.throws(() => new nn.Embedding(3, 2).call(sc.ones([2])), (e: unknown) => e instanceof sc.DtypeError && /ids must be int32 or int64/.test(e.message));
});

test("losses and metrics against hand-computed values", () => {
  const logits = sc.tensor([[2, 0, -1], [0.5, 0.5, 3]], "float64");
  const ce0 = -(2 - Math.log(Math.exp(2) + 1 + Math.exp(-1)));
  const ce1 = -(3 - Math.log(2 * Math.exp(0.5) + Math.exp(3)));
  const sparse = nn.softmaxCrossEntropy(logits, sc.tensor([0, 2], "int32")).item() as number;
  assert.ok(Math.abs(sparse - (ce0 + ce1) / 2) < 1e-12);
  const dense = nn.softmaxCrossEntropy(logits, sc.tensor([[1, 0, 0], [0, 0, 1]], "float64"), { reduction: "none" }).dataSync();
  assert.ok(Math.abs(dense[0]! - ce0) < 1e-12 && Math.abs(dense[1]! - ce1) < 1e-12);
  const z = sc.tensor([1.5, -2, 0], "float64");
  const t = sc.tensor([1, 0, 0.5], "float64");
  const bce = nn.binaryCrossEntropyWithLogits(z, t, { reduction: "sum" }).item() as number;
  const sig = (v: number) => 1 / (1 + Math.exp(-v));
  const ref = [1.5, -2, 0].reduce((a, v, i) => a - ([1, 0, 0.5][i]! * Math.log(sig(v)) + (1 - [1, 0, 0.5][i]!) * Math.log(1 - sig(v))), 0);
  assert.ok(Math.abs(bce - ref) < 1e-12);
  assert.equal(nn.mse(sc.tensor([1, 2]), sc.tensor([2, 4])).item(), 2.5);
  assert.deepEqual(Array.from(nn.huber(sc.tensor([0, 0]), sc.tensor([0.5, 3]), { reduction: "none" }).dataSync()), [0.125, 2.5]);
  assert.equal(nn.accuracy(logits, sc.tensor([0, 1], "int32")).item(), 0.5);
  const mean = new nn.Mean();
  mean.update(1, 3).update(sc.scalar(3), 1);
  assert.equal(mean.result(), 1.5);
  assert.throws(() => nn.softmaxCrossEntropy(logits, sc.tensor([0, 1, 2], "int32")), (e: unknown) => e instanceof sc.ShapeError);
});
