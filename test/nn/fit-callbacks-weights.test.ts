/** fit's ModelCheckpoint and ReduceLROnPlateau (with the optimizer's learningRateScale), and sample / class weights in fit and evaluate. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

const { nn, io } = sc;
const values = (t: sc.Tensor) => Array.from(t.dataSync());
const weightsOf = (m: sc.nn.Module) => m.variables().map((v) => values(v.peek()));
const tmp = () => mkdtempSync(path.join(tmpdir(), "sc-fit-callbacks-"));

/** Ten rows of 3 features and 2 targets (seeded). */
function rows(n = 10, seed = 5): [sc.Tensor, sc.Tensor] {
  const rng = new Rng(seed);
  return [rng.tensor([n, 3], -1, 1, "float32"), rng.tensor([n, 2], -1, 1, "float32")];
}
const net = () => new nn.Sequential(new nn.Linear(8, { inFeatures: 3, seed: 1 }), new nn.Tanh(), new nn.Linear(2, { inFeatures: 8, seed: 3 }));

/**
 * A metric "plateau" that is `sequence[epoch - 1]` (one batch an epoch): read from a Variable set
 * at each epoch's start, so a staged step reads it when it runs, as a real loss would be.
 */
function plateauMetric(sequence: number[]) {
  const v = sc.variable(sc.scalar(0, "float32"), { trainable: false });
  return {
    metric: () => v.peek(),
    setter: { onEpochBegin: (e: number) => v.assign(sc.scalar(sequence[e - 1]!, "float32")) },
  };
}

test("ModelCheckpoint (saveBestOnly, min): the file on disk restores to the weights of the best epoch; whole-model saves load alike", () => {
  const [x, y] = rows(4);
  const { metric, setter } = plateauMetric([5, 3, 4, 2.5, 2.6]);
  const dir = tmp();
  const file = path.join(dir, "best.safetensors");
  const weightsOnly = new nn.ModelCheckpoint({ path: file, monitor: "plateau", saveBestOnly: true, weightsOnly: true });
  const whole = new nn.ModelCheckpoint({ path: path.join(dir, "best-model"), monitor: "plateau", saveBestOnly: true });
  const snapshots: number[][][] = [];
  const model = net();
  nn.fit(model, {
    data: [[x, y]],
    loss: nn.mse,
    optimizer: sc.optim.sgd({ learningRate: 0.1 }),
    epochs: 5,
    metrics: { plateau: metric },
    progress: "off",
    callbacks: [setter, weightsOnly, whole, { onEpochEnd: (_e, _l, c) => void snapshots.push(weightsOf(c.model)) }],
  });
  assert.deepEqual(weightsOnly.saved.map((s) => s.epoch), [1, 2, 4], "saved only when the value improved");
  assert.equal(weightsOnly.bestEpoch, 4);
  assert.equal(weightsOnly.best, 2.5);
  const fresh = net();
  io.restore(fresh, file).assertConsumed();
  assert.deepEqual(weightsOf(fresh), snapshots[3], "the file holds epoch 4's weights");
  assert.notDeepEqual(snapshots[3], snapshots[4], "epoch 5 changed them (what the file holds is what is checked)");
  assert.deepEqual(weightsOf(nn.loadModel(path.join(dir, "best-model"))), snapshots[3]);
});

test("ModelCheckpoint without saveBestOnly saves every epoch; {epoch} in the path keeps each; a staged fit's best val_loss epoch is what the file holds", () => {
  const [x, y] = rows();
  const [vx, vy] = [sc.mul(x, 0.5), sc.mul(y, 0.3)];
  const dir = tmp();
  const every = new nn.ModelCheckpoint({ path: path.join(dir, "e{epoch}.safetensors"), weightsOnly: true });
  const best = new nn.ModelCheckpoint({ path: path.join(dir, "best.safetensors"), saveBestOnly: true, weightsOnly: true });
  const snapshots: number[][][] = [];
  const model = net();
  // (validation data of another scale: val_loss falls, then rises again as training fits the training rows)
  const history = nn.fit(model, {
    data: sc.data.Dataset.fromTensorSlices([x, y]).batch(4),
    validationData: [[vx, vy]],
    loss: nn.mse,
    optimizer: sc.optim.sgd({ learningRate: 0.1 }),
    epochs: 8,
    progress: "off",
    callbacks: [every, best, { onEpochEnd: (_e, _l, c) => void snapshots.push(weightsOf(c.model)) }],
  });
  assert.deepEqual(every.saved.map((s) => s.epoch), [1, 2, 3, 4, 5, 6, 7, 8]);
  for (const e of [1, 5, 8]) {
    const m = net();
    io.restore(m, path.join(dir, `e${e}.safetensors`)).assertConsumed();
    assert.deepEqual(weightsOf(m), snapshots[e - 1], `epoch ${e}'s file`);
  }
  const vals = history.epochs.map((l) => l.val_loss!);
  const bestEpoch = vals.indexOf(Math.min(...vals)) + 1;
  assert.equal(best.bestEpoch, bestEpoch);
  assert.ok(best.saved.length < 8 && bestEpoch < 8, `val_loss ${vals.map((v) => v.toFixed(3))}: the best epoch is not the last (the selection is what is checked)`);
  const m = net();
  io.restore(m, path.join(dir, "best.safetensors")).assertConsumed();
  assert.deepEqual(weightsOf(m), snapshots[bestEpoch - 1]);
});

test("ModelCheckpoint refuses bad options, and a saveBestOnly monitor that is not logged", () => {
  assert.throws(() => new nn.ModelCheckpoint({} as never), (e: Error) => e instanceof sc.ValueError && /^ModelCheckpoint: path must be a non-empty string/.test(e.message));
  assert.throws(() => new nn.ModelCheckpoint({ path: "p", saveBestOnly: 1 as never }), (e: Error) => e instanceof sc.ValueError && /^ModelCheckpoint: saveBestOnly must be a boolean/.test(e.message));
  assert.throws(() => new nn.ModelCheckpoint({ path: "p", mode: "up" as never }), (e: Error) => e instanceof sc.ValueError && /^ModelCheckpoint: mode must be one of/.test(e.message));
  const [x, y] = rows(4);
  const dir = tmp();
  const cb = new nn.ModelCheckpoint({ path: path.join(dir, "m.safetensors"), saveBestOnly: true, weightsOnly: true });
  assert.throws(() => nn.fit(net(), { data: [[x, y]], loss: nn.mse, optimizer: sc.optim.sgd(), progress: "off", callbacks: [cb] }), (e: Error) => e instanceof sc.ValueError && /^ModelCheckpoint: monitor "val_loss" is not among the logged values \(loss\)/.test(e.message));
  assert.equal(existsSync(path.join(dir, "m.safetensors")), false);
});

/**
 * A fit of a Linear layer on loss mean(output), one batch an epoch, with SGD: the bias's
 * gradient is exactly 1 at every step, so each epoch moves the bias by exactly -lr.
 */
function fitPlateau(sequence: number[], options: sc.nn.ReduceLROnPlateauOptions, staged: boolean, learningRate: sc.optim.LearningRate = 0.1) {
  const [x] = rows(4);
  const { metric, setter } = plateauMetric(sequence);
  const model = new nn.Linear(1, { inFeatures: 3, seed: 7 });
  const optimizer = sc.optim.sgd({ learningRate });
  const reducer = new nn.ReduceLROnPlateau({ monitor: "plateau", ...options });
  const rates: number[] = [];
  const biasMoves: number[] = [];
  let biasBefore = 0;
  const history = nn.fit(model, {
    data: [[x, sc.zeros([4, 1])]],
    loss: (out) => sc.mean(out),
    optimizer,
    epochs: sequence.length,
    metrics: { plateau: metric },
    stage: staged,
    progress: "off",
    callbacks: [
      setter,
      { onEpochBegin: () => void (biasBefore = model.bias!.item() as number) },
      reducer,
      { onEpochEnd: (_e, _l, c) => { rates.push(c.optimizer.currentLearningRate()); biasMoves.push(biasBefore - (model.bias!.item() as number)); } },
    ],
  });
  return { model, optimizer, reducer, rates, biasMoves, history };
}

const near = (a: number[], b: number[], tol: number, what: string) => assert.ok(a.length === b.length && a.every((v, i) => Math.abs(v - b[i]!) <= tol * Math.max(1, Math.abs(b[i]!))), `${what}: ${a} vs ${b}`);

test("ReduceLROnPlateau lowers the rate after `patience` epochs without improvement; the bias moves by exactly the rate of its epoch; staged = eager, one trace", () => {
  // best 5, 4; 4 (wait 1), 4 (wait 2: x0.5 after epoch 4); 3 best; 3, 3 (x0.5 after epoch 7); 3
  const sequence = [5, 4, 4, 4, 3, 3, 3, 3];
  const expected = [0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025];
  const runs = [true, false].map((staged) => fitPlateau(sequence, { factor: 0.5, patience: 2, minDelta: 0 }, staged));
  for (const [i, run] of runs.entries()) {
    const what = i === 0 ? "staged" : "eager";
    assert.deepEqual(run.reducer.reductions.map((r) => r.epoch), [4, 7], what);
    near(run.rates, expected, 1e-12, `${what}: the rate after each epoch`);
    // the rate an epoch used is the rate after the one before it
    near(run.biasMoves, [0.1, ...expected.slice(0, -1)], 1e-5, `${what}: bias moves (gradient 1)`);
    near([run.optimizer.learningRateScale.item() as number], [0.25], 1e-12, `${what}: scale`);
    // each epoch's logs hold the rate it trained with (Keras's "learning_rate")
    near(run.history.epochs.map((e) => e.learning_rate!), [0.1, ...expected.slice(0, -1)], 1e-12, `${what}: logged learning_rate`);
  }
  assert.deepEqual(weightsOf(runs[0]!.model), weightsOf(runs[1]!.model), "staged and eager weights agree");
  assert.equal(runs[0]!.history.traceCount, 1, "the staged step was traced once: the new rates did not retrace it");
  assert.equal(runs[1]!.history.traceCount, 0);
});

test("ReduceLROnPlateau: cooldown, minLr, mode max, and a schedule keeps its shape, scaled", () => {
  const flat = [5, 5, 5, 5, 5, 5];
  assert.deepEqual(fitPlateau(flat, { factor: 0.5, patience: 1 }, true).reducer.reductions.map((r) => r.epoch), [2, 3, 4, 5, 6]);
  assert.deepEqual(fitPlateau(flat, { factor: 0.5, patience: 1, cooldown: 2 }, true).reducer.reductions.map((r) => r.epoch), [2, 4, 6], "two epochs of rest after each");
  const floor = fitPlateau(flat, { factor: 0.5, patience: 1, minLr: 0.03 }, true);
  near(floor.rates, [0.1, 0.05, 0.03, 0.03, 0.03, 0.03], 1e-12, "never below minLr");
  assert.equal(floor.reducer.reductions.length, 2, "no reduction once at minLr");
  const max = fitPlateau([1, 2, 2, 3, 3, 3], { factor: 0.5, patience: 1, mode: "max" }, true);
  assert.deepEqual(max.reducer.reductions.map((r) => r.epoch), [3, 5, 6]);
  // minDelta (default 1e-4): 4.99995 is no improvement on 5
  assert.deepEqual(fitPlateau([5, 4.99995, 4], { factor: 0.5, patience: 1 }, true).reducer.reductions.map((r) => r.epoch), [2]);
  // stepDecay halves every 2 steps; one reduction after epoch 2 halves it from then on
  const scheduled = fitPlateau([5, 5, 1, 0.5, 0.1], { factor: 0.5, patience: 1 }, true, sc.optim.stepDecay({ initial: 0.1, stepSize: 2, gamma: 0.5 }));
  near(scheduled.rates, [0.1, 0.025, 0.025, 0.0125, 0.0125], 1e-12, "the schedule's rates, x0.5 from epoch 3 on");
  near(scheduled.biasMoves, [0.1, 0.1, 0.025, 0.025, 0.0125], 1e-5, "bias moves");
});

test("ReduceLROnPlateau refuses bad options; the optimizer's scale is checked, checkpointed, and an old checkpoint restores it to 1", () => {
  assert.throws(() => new nn.ReduceLROnPlateau({ factor: 1 }), (e: Error) => e instanceof sc.ValueError && /^ReduceLROnPlateau: factor must be a number in \(0, 1\)/.test(e.message));
  assert.throws(() => new nn.ReduceLROnPlateau({ patience: 1.5 }), (e: Error) => e instanceof sc.ValueError && /^ReduceLROnPlateau: patience must be an integer/.test(e.message));
  assert.throws(() => new nn.ReduceLROnPlateau({ minLr: -1 }), (e: Error) => e instanceof sc.ValueError && /^ReduceLROnPlateau: minLr/.test(e.message));
  assert.throws(() => new nn.ReduceLROnPlateau({ cooldown: -1 }), (e: Error) => e instanceof sc.ValueError && /^ReduceLROnPlateau: cooldown/.test(e.message));
  const opt = sc.optim.adam({ learningRate: 0.01 });
  assert.throws(() => opt.setLearningRateScale(-1), (e: Error) => e instanceof sc.ValueError && /^Adam: learningRateScale/.test(e.message));
  opt.setLearningRateScale(0.25);
  near([opt.currentLearningRate()], [0.0025], 1e-15, "currentLearningRate");
  const file = path.join(tmp(), "opt.safetensors");
  io.save(opt, file);
  const back = sc.optim.adam({ learningRate: 0.01 });
  io.restore(back, file).assertConsumed();
  assert.equal(back.learningRateScale.item(), 0.25);
  // test/fixtures/checkpoints/v1-mlp was written before the scale existed: it restores to 1
  const model = new nn.Sequential(new nn.Linear(4), new nn.ReLU(), new nn.Linear(2));
  model.call(sc.zeros([1, 3]));
  const optimizer = new sc.optim.SGD({ momentum: 0.9 });
  optimizer.minimize(() => sc.sum(model.call(sc.zeros([1, 3]))), () => model.parameters());
  optimizer.setLearningRateScale(0.5);
  io.restore({ model, optimizer }, path.resolve(import.meta.dirname, "../fixtures/checkpoints/v1-mlp.safetensors")).assertConsumed();
  assert.equal(optimizer.learningRateScale.item(), 1);
  optimizer.setLearningRateScale(0.5);
  optimizer.reset();
  assert.equal(optimizer.learningRateScale.item(), 1, "reset puts the scale back to 1");
});

test("a staged step reads the learning-rate scale when it runs: setting it changes the next update without a retrace", () => {
  const w = sc.variable(sc.tensor([1, 2], "float32"));
  const opt = sc.optim.sgd({ learningRate: 0.5 });
  const step = sc.stage(() => opt.minimize(() => sc.sum(w), [w]), { autograph: false });
  const moves: number[] = [];
  for (const scale of [1, 0.1, 0.5]) {
    opt.setLearningRateScale(scale);
    const before = values(w.peek())[0]!;
    step();
    moves.push(before - values(w.peek())[0]!);
  }
  near(moves, [0.5, 0.05, 0.25], 1e-6, "moves of one step each (gradient 1)");
  assert.equal(step.traceCount, 1);
});

/** A 2 -> 1 Linear with known weights, float32; four rows. */
function tiny() {
  const model = new nn.Linear(1, { inFeatures: 2, seed: 11 });
  model.call(sc.zeros([1, 2]));
  model.kernel!.assign(sc.tensor([[0.5], [-1]], "float32"));
  model.bias!.assign(sc.tensor([0.25], "float32"));
  const x = [[1, 2], [0, -1], [3, 0.5], [-2, 1]];
  const y = [1, -0.5, 2, 0];
  const w = [2, 0.5, 0, 1];
  return { model, x, y, w, X: sc.tensor(x, "float32"), Y: sc.tensor(y.map((v) => [v]), "float32"), W: sc.tensor(w, "float32") };
}

/** By hand: mse per row, its weighted mean sum(w l) / N, and that mean's gradients. */
function byHand(x: number[][], y: number[], w: number[], k: number[], b: number) {
  const n = x.length;
  let loss = 0;
  const gk = [0, 0];
  let gb = 0;
  for (let i = 0; i < n; i++) {
    const e = x[i]![0]! * k[0]! + x[i]![1]! * k[1]! + b - y[i]!;
    loss += (w[i]! * e * e) / n;
    gk[0]! += (w[i]! * 2 * e * x[i]![0]!) / n;
    gk[1]! += (w[i]! * 2 * e * x[i]![1]!) / n;
    gb += (w[i]! * 2 * e) / n;
  }
  return { loss, gk, gb };
}

for (const staged of [true, false]) {
  test(`sample weights (${staged ? "staged" : "eager"}): fit's loss is sum(w * l) / N by hand, one SGD step moves the weights by its hand gradient, evaluate agrees`, () => {
    const t = tiny();
    const hand = byHand(t.x, t.y, t.w, [0.5, -1], 0.25);
    const plain = byHand(t.x, t.y, [1, 1, 1, 1], [0.5, -1], 0.25);
    assert.ok(Math.abs(hand.loss - plain.loss) > 0.1, "the weights change the loss (what is checked)");
    const ev = nn.evaluate(t.model, { data: [[t.X, t.Y, t.W]], loss: nn.mse, stage: staged });
    near([ev.loss!], [hand.loss], 1e-6, "evaluate");
    // in two batches of 2: the epoch value is still sum(w l) / 4
    const ev2 = nn.evaluate(t.model, { data: sc.data.Dataset.fromTensorSlices([t.X, t.Y, t.W]).batch(2), loss: nn.mse, stage: staged });
    near([ev2.loss!], [hand.loss], 1e-6, "evaluate over two batches");
    const history = nn.fit(t.model, { data: [[t.X, t.Y, t.W]], loss: nn.mse, optimizer: sc.optim.sgd({ learningRate: 0.1 }), stage: staged, progress: "off" });
    near([history.steps[0]!.loss!], [hand.loss], 1e-6, "fit's step loss");
    near(values(t.model.kernel!.peek()), [0.5 - 0.1 * hand.gk[0]!, -1 - 0.1 * hand.gk[1]!], 1e-6, "kernel after one step");
    near(values(t.model.bias!.peek()), [0.25 - 0.1 * hand.gb], 1e-6, "bias after one step");
  });
}

test("class weights: each row weighs its label's class weight (times its sample weight); gradients are the hand-weighted loss's; staged = eager", () => {
  const rng = new Rng(21);
  const X = rng.tensor([6, 3], -1, 1, "float32");
  const labels = sc.tensor([0, 2, 1, 2, 0, 1], "int32");
  const classWeight = { 0: 0.5, 2: 3 }; // class 1 is not named: weight 1
  const sampleWeight = sc.tensor([1, 2, 1, 0.5, 1, 3], "float32");
  const rowWeights = [0.5 * 1, 3 * 2, 1 * 1, 3 * 0.5, 0.5 * 1, 1 * 3];
  const make = () => new nn.Linear(3, { inFeatures: 3, seed: 9 });
  // by hand: the same model stepped by SGD on mean(ce * rowWeights) through a tape
  const ref = make();
  const opt = sc.optim.sgd({ learningRate: 0.2 });
  const handLoss = opt.minimize(() => sc.mean(sc.mul(nn.softmaxCrossEntropy(ref.call(X) as sc.Tensor, labels, { reduction: "none" }), sc.tensor(rowWeights, "float32"))), () => ref.parameters()).item() as number;
  const got = [true, false].map((staged) => {
    const m = make();
    const h = nn.fit(m, { data: [[X, labels, sampleWeight]], classWeight, loss: nn.softmaxCrossEntropy, optimizer: sc.optim.sgd({ learningRate: 0.2 }), stage: staged, progress: "off" });
    near([h.steps[0]!.loss!], [handLoss], 1e-6, "loss");
    return weightsOf(m);
  });
  const refW = weightsOf(ref);
  for (const g of got) g.forEach((w, i) => near(w, refW[i]!, 1e-6, `weights ${i}`));
  assert.deepEqual(got[0], got[1], "staged = eager");
  // one-hot labels name their largest entry's class; an array of weights works as the object does
  const m = make();
  const h = nn.fit(m, { data: [[X, sc.oneHot(labels, 3), sampleWeight]], classWeight: [0.5, 1, 3], loss: nn.softmaxCrossEntropy, optimizer: sc.optim.sgd({ learningRate: 0.2 }), progress: "off" });
  near([h.steps[0]!.loss!], [handLoss], 1e-6, "one-hot labels");
});

test("weights: validationSplit carries them; bad weights, a loss without reduction and a bad classWeight are refused", () => {
  const t = tiny();
  const h = nn.fit(t.model, { data: sc.data.Dataset.fromTensorSlices([t.X, t.Y, t.W]).batch(2), validationSplit: 0.5, loss: nn.mse, optimizer: sc.optim.sgd({ learningRate: 0.1 }), progress: "off" });
  const ev = nn.evaluate(t.model, { data: [[sc.slice(t.X, [2], [4]), sc.slice(t.Y, [2], [4]), sc.slice(t.W, [2], [4])]], loss: nn.mse });
  assert.equal(h.epochs[0]!.val_loss, ev.loss);
  const data = [[t.X, t.Y, sc.ones([3])]];
  assert.throws(() => nn.fit(t.model, { data, loss: nn.mse, optimizer: sc.optim.sgd(), progress: "off" }), (e: Error) => e instanceof sc.ShapeError && /^fit: the sample weights of batch 0 have shape \[3\], but its inputs have 4 rows/.test(e.message));
  const meanOnly = (o: sc.Tensor, l: sc.Tensor) => sc.mean(sc.square(sc.sub(o, l)));
  assert.throws(() => nn.fit(t.model, { data: [[t.X, t.Y, t.W]], loss: meanOnly, optimizer: sc.optim.sgd(), progress: "off" }), (e: Error) => e instanceof sc.ShapeError && /fit: with sample or class weights the loss must give one value per row when called with \{ reduction: "none" \}/.test(e.message));
  assert.throws(() => nn.fit(t.model, { data: [[t.X, t.Y]], classWeight: { a: 1 } as never, loss: nn.mse, optimizer: sc.optim.sgd(), progress: "off" }), (e: Error) => e instanceof sc.ValueError && /^fit: classWeight keys must be class indices/.test(e.message));
  assert.throws(() => nn.fit(t.model, { data: [[t.X, t.Y]], classWeight: [1, -1], loss: nn.mse, optimizer: sc.optim.sgd(), progress: "off" }), (e: Error) => e instanceof sc.ValueError && /^fit: classWeight\[1\] must be a finite number >= 0/.test(e.message));
  assert.throws(() => nn.evaluate(t.model, { data: [[t.X, t.Y, t.W, t.W]] as never, loss: nn.mse }), (e: Error) => e instanceof sc.ValueError && /^evaluate: each batch must be \[inputs, labels\] tensors, or \[inputs, labels, sampleWeights\]/.test(e.message));
});
