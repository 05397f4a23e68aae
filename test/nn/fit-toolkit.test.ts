/** sc.nn.evaluate / predict, fit's callbacks (EarlyStopping, TerminateOnNaN) and validation (data and split). */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const { nn } = sc;

/** Ten rows of 3 features and 2 targets, from a formula (no randomness). */
function rows(n = 10): [sc.Tensor, sc.Tensor] {
  const x: number[][] = [];
  const y: number[][] = [];
  for (let i = 0; i < n; i++) {
    x.push([Math.sin(i), Math.cos(2 * i), (i % 3) - 1]);
    y.push([Math.sin(i) + 0.5 * ((i % 3) - 1), Math.cos(i)]);
  }
  return [sc.tensor(x), sc.tensor(y)];
}
/** Batches of 4, 4 and a short last one of 2. */
const batches = (x: sc.Tensor, y: sc.Tensor, size = 4) => sc.data.Dataset.fromTensorSlices([x, y]).batch(size);
const net = () => new nn.Sequential(new nn.Linear(8, { inFeatures: 3, seed: 1 }), new nn.Tanh(), new nn.Dropout(0.5, { seed: 2 }), new nn.Linear(2, { inFeatures: 8, seed: 3 }));
const values = (t: sc.Tensor) => Array.from(t.dataSync());

for (const staged of [true, false]) {
  test(`evaluate (${staged ? "staged" : "eager"}): loss and metrics over batches 4+4+2 equal those of one big batch in eval mode, and the mode is put back`, () => {
    const [x, y] = rows();
    const model = net();
    const got = nn.evaluate(model, { data: batches(x, y), loss: nn.mse, metrics: { mae: nn.meanAbsoluteError }, stage: staged });
    assert.equal(model.training, true, "evaluate leaves the model in its mode");
    model.eval();
    const out = model.call(x) as sc.Tensor;
    const loss = nn.mse(out, y).item() as number;
    const mae = nn.meanAbsoluteError(out, y).item() as number;
    assert.deepEqual(Object.keys(got), ["loss", "mae"]);
    assert.ok(Math.abs(got.loss! - loss) < 1e-6 * Math.max(1, loss), `loss ${got.loss} vs ${loss}`);
    assert.ok(Math.abs(got.mae! - mae) < 1e-6 * Math.max(1, mae), `mae ${got.mae} vs ${mae}`);
    // (the unweighted mean of the three batch means is another number: the weighting is what is checked)
    const parts = [[0, 4], [4, 8], [8, 10]].map(([b, e]) => nn.mse(model.call(sc.slice(x, [b!], [e!])) as sc.Tensor, sc.slice(y, [b!], [e!])).item() as number);
    assert.ok(Math.abs((parts[0]! + parts[1]! + parts[2]!) / 3 - loss) > 1e-4);
  });

  test(`predict (${staged ? "staged" : "eager"}): outputs of batches 4+4+2 concatenated equal model.call on all rows in eval mode (Dropout off)`, () => {
    const [x, y] = rows();
    const model = net();
    const got = nn.predict(model, { data: batches(x, y), stage: staged });
    assert.deepEqual(got.shape, [10, 2]);
    assert.equal(model.training, true);
    const trainOut = values(model.call(x) as sc.Tensor);
    model.eval();
    const evalOut = values(model.call(x) as sc.Tensor);
    const p = values(got);
    assert.ok(p.every((v, i) => Math.abs(v - evalOut[i]!) < 1e-6), "predict = eval-mode call");
    assert.ok(p.some((v, i) => Math.abs(v - trainOut[i]!) > 1e-3), "a train-mode call (dropout on) differs: the mode matters");
    // bare input batches work too
    const bare = nn.predict(model, { data: [sc.slice(x, [0], [7]), sc.slice(x, [7], [10])], stage: staged });
    assert.ok(values(bare).every((v, i) => Math.abs(v - evalOut[i]!) < 1e-6));
  });
}

test("evaluate/predict refuse bad input with a ValueError naming the API", () => {
  const [x, y] = rows();
  const model = net();
  assert.throws(() => nn.evaluate(model, { data: x as never, loss: nn.mse }), (e: Error) => e instanceof sc.ValueError && /^evaluate: .*got a tensor/.test(e.message));
  assert.throws(() => nn.evaluate(model, { data: [], loss: nn.mse }), (e: Error) => e instanceof sc.ValueError && /^evaluate: data has no batches/.test(e.message));
  assert.throws(() => nn.evaluate(model, { data: [[x]] as never, loss: nn.mse }), (e: Error) => e instanceof sc.ValueError && /^evaluate: each batch must be \[inputs, labels\]/.test(e.message));
  assert.throws(() => nn.predict(model, { data: [[1, 2]] as never }), (e: Error) => e instanceof sc.ValueError && /^predict: each batch must be/.test(e.message));
  void y;
});

/**
 * A fit whose metric "crafted" is the given sequence, one value per epoch (one batch an epoch,
 * eager, so the metric reads the epoch counter each step).
 */
function fitCrafted(sequence: number[], name: string, stopper: sc.nn.EarlyStopping, extra: sc.nn.FitCallbacks[] = []) {
  const [x, y] = rows(4);
  const model = net();
  let epoch = 0;
  const history = nn.fit(model, {
    data: [[x, y]],
    loss: nn.mse,
    optimizer: sc.optim.sgd({ learningRate: 0.1 }),
    epochs: sequence.length,
    metrics: { [name]: () => sc.scalar(sequence[epoch - 1]!) },
    stage: false,
    progress: "off",
    callbacks: [{ onEpochBegin: (e) => void (epoch = e) }, stopper, ...extra],
  });
  return { model, history };
}

test("EarlyStopping (min, minDelta 0.1, patience 2) stops at the epoch the crafted sequence says, and restores the best epoch's weights", () => {
  // best 5 (1), 4 (2); 4.5 no (wait 1); 3.95 is not 0.1 better than 4 (wait 2): stop after epoch 4
  const stopper = new nn.EarlyStopping({ monitor: "crafted", minDelta: 0.1, patience: 2, restoreBestWeights: true });
  const snapshots: number[][][] = [];
  const record = { onEpochEnd: (_e: number, _l: sc.nn.Logs, c: sc.nn.FitControl) => void snapshots.push(c.model.variables().map((v) => values(v.peek()))) };
  const { model, history } = fitCrafted([5, 4, 4.5, 3.95, 4.2, 1, 1], "crafted", stopper, [record]);
  assert.equal(history.epochs.length, 4);
  assert.equal(stopper.stoppedEpoch, 4);
  assert.equal(stopper.bestEpoch, 2);
  assert.equal(stopper.best, 4);
  const now = model.variables().map((v) => values(v.peek()));
  assert.deepEqual(now, snapshots[1], "the weights are those after epoch 2");
  assert.notDeepEqual(snapshots[3], snapshots[1], "training changed them after epoch 2 (the restore is what is checked)");
});

test("EarlyStopping: mode auto is max for an accuracy name, min otherwise; patience 0 stops at the first non-improvement; no restore by default", () => {
  const acc = new nn.EarlyStopping({ monitor: "accuracy" });
  assert.equal(acc.mode, "max");
  assert.equal(fitCrafted([0.5, 0.6, 0.55, 0.7], "accuracy", acc).history.epochs.length, 3);
  const low = new nn.EarlyStopping({ monitor: "crafted", mode: "min" });
  assert.equal(fitCrafted([3, 2, 2, 1], "crafted", low).history.epochs.length, 3, "an equal value is no improvement");
  const max = new nn.EarlyStopping({ monitor: "crafted", mode: "max", patience: 2 });
  assert.equal(fitCrafted([1, 2, 1, 1.5, 5], "crafted", max).history.epochs.length, 4);
  // (as Keras: patience 1, like 0, stops at the first epoch without improvement)
  assert.equal(fitCrafted([1, 2, 1, 3], "crafted", new nn.EarlyStopping({ monitor: "crafted", mode: "max", patience: 1 })).history.epochs.length, 3);
  const snapshots: number[][][] = [];
  const plain = new nn.EarlyStopping({ monitor: "crafted" });
  const { model } = fitCrafted([1, 2], "crafted", plain, [{ onEpochEnd: (_e, _l, c) => void snapshots.push(c.model.variables().map((v) => values(v.peek()))) }]);
  assert.deepEqual(model.variables().map((v) => values(v.peek())), snapshots[1], "the last weights stay without restoreBestWeights");
});

test("EarlyStopping refuses bad options and a monitor that is not logged", () => {
  assert.throws(() => new nn.EarlyStopping({ patience: -1 }), (e: Error) => e instanceof sc.ValueError && /^EarlyStopping: patience/.test(e.message));
  assert.throws(() => new nn.EarlyStopping({ minDelta: -0.1 }), (e: Error) => e instanceof sc.ValueError && /^EarlyStopping: minDelta/.test(e.message));
  assert.throws(() => new nn.EarlyStopping({ mode: "up" as never }), (e: Error) => e instanceof sc.ValueError && /^EarlyStopping: mode must be one of/.test(e.message));
  // the Keras default monitor is val_loss: without validation it is named, not ignored
  assert.throws(() => fitCrafted([1, 2], "crafted", new nn.EarlyStopping()), (e: Error) => e instanceof sc.ValueError && /^EarlyStopping: monitor "val_loss" is not among the logged values \(loss, crafted\); val_ values need validationData/.test(e.message));
});

test("TerminateOnNaN stops after the step whose loss is not finite (a huge learning rate)", () => {
  const [x, y] = rows();
  const stop = new nn.TerminateOnNaN();
  const epochs: number[] = [];
  const history = nn.fit(net(), { data: batches(x, y, 2), loss: nn.mse, optimizer: sc.optim.sgd({ learningRate: 1e6 }), epochs: 20, progress: "off", callbacks: [stop, { onEpochEnd: (e) => void epochs.push(e) }] });
  const last = history.steps[history.steps.length - 1]!.loss!;
  assert.ok(!Number.isFinite(last), `the last step's loss is ${last}`);
  assert.ok(history.steps.slice(0, -1).every((s) => Number.isFinite(s.loss!)), "it stopped at the first one");
  assert.equal(stop.stoppedStep, history.steps.length);
  assert.ok(history.steps.length < 100, "it stopped before the 100 steps");
  assert.deepEqual(epochs, history.epochs.map((_, i) => i + 1), "the stopped epoch's end hooks still ran");
});

test("fit's validationData gives val_loss and val_ metrics equal to evaluate on the same data", () => {
  const [x, y] = rows();
  const [vx, vy] = [sc.mul(x, 0.5), sc.add(y, 0.25)];
  const model = net();
  const history = nn.fit(model, { data: batches(x, y), validationData: batches(vx, vy, 3), loss: nn.mse, metrics: { mae: nn.meanAbsoluteError }, optimizer: sc.optim.sgd({ learningRate: 0.1 }), epochs: 2, progress: "off" });
  const last = history.epochs[1]!;
  assert.deepEqual(Object.keys(last), ["loss", "mae", "val_loss", "val_mae"]);
  const ev = nn.evaluate(model, { data: batches(vx, vy, 3), loss: nn.mse, metrics: { mae: nn.meanAbsoluteError } });
  assert.equal(last.val_loss, ev.loss);
  assert.equal(last.val_mae, ev.mae);
  assert.notEqual(history.epochs[0]!.val_loss, last.val_loss, "each epoch evaluates the weights of its end");
  assert.equal(model.training, true);
});

test("fit's validationSplit holds out the last rows (floor(10 * 0.8) = 8 train rows, batched as the data was)", () => {
  const [x, y] = rows();
  const model = net();
  const history = nn.fit(model, { data: batches(x, y), validationSplit: 0.2, loss: nn.mse, optimizer: sc.optim.sgd({ learningRate: 0.1 }), epochs: 2, progress: "off" });
  assert.equal(history.steps.length, 4, "2 batches of 4 training rows an epoch");
  const ev = nn.evaluate(model, { data: batches(sc.slice(x, [8], [10]), sc.slice(y, [8], [10])), loss: nn.mse });
  assert.equal(history.epochs[1]!.val_loss, ev.loss);
  assert.throws(() => nn.fit(net(), { data: batches(x, y), validationSplit: 1, loss: nn.mse, optimizer: sc.optim.sgd(), progress: "off" }), (e: Error) => e instanceof sc.ValueError && /^fit: validationSplit must be a number in \(0, 1\)/.test(e.message));
  assert.throws(() => nn.fit(net(), { data: batches(x, y), validationSplit: 0.95, loss: nn.mse, optimizer: sc.optim.sgd(), progress: "off" }), (e: Error) => e instanceof sc.ValueError && /^fit: validationSplit 0.95 of 10 rows leaves no training rows/.test(e.message));
  assert.throws(() => nn.fit(net(), { data: batches(x, y), validationSplit: 0.5, validationData: batches(x, y), loss: nn.mse, optimizer: sc.optim.sgd(), progress: "off" }), (e: Error) => e instanceof sc.ValueError && /validationData or validationSplit, not both/.test(e.message));
});

test("a CountingMetric (Precision) in evaluate and fit is counted over all rows, as one big batch (staged and eager)", () => {
  const [x] = rows();
  const labels = sc.tensor([[1], [1], [0], [1], [0], [0], [0], [0], [1], [1]]);
  const model = new nn.Sequential(new nn.Linear(1, { inFeatures: 3, seed: 4 }), new nn.Sigmoid());
  model.eval();
  const out = model.call(x) as sc.Tensor;
  const whole = nn.precision(out, labels, { threshold: 0.5 }).item() as number;
  // the row-weighted mean of the batch precisions is another number here: the counting is what is checked
  const byBatch = [[0, 4], [4, 8], [8, 10]].map(([b, e]) => (e! - b!) * (nn.precision(sc.slice(out, [b!], [e!]), sc.slice(labels, [b!], [e!])).item() as number));
  assert.ok(Math.abs((byBatch[0]! + byBatch[1]! + byBatch[2]!) / 10 - whole) > 1e-3, `${whole} vs ${byBatch}`);
  model.train();
  for (const stage of [true, false]) {
    const ev = nn.evaluate(model, { data: batches(x, labels), loss: nn.mse, metrics: { precision: new nn.Precision() }, stage });
    assert.ok(Math.abs(ev.precision! - whole) < 1e-6, `evaluate precision ${ev.precision} vs ${whole}`);
  }
  const trained = new nn.Sequential(new nn.Linear(1, { inFeatures: 3, seed: 4 }), new nn.Sigmoid());
  const history = nn.fit(trained, { data: batches(x, labels), validationData: batches(x, labels), loss: nn.mse, metrics: { precision: new nn.Precision() }, optimizer: sc.optim.sgd({ learningRate: 0.1 }), progress: "off" });
  assert.equal(history.epochs[0]!.val_precision, nn.evaluate(trained, { data: batches(x, labels), loss: nn.mse, metrics: { precision: new nn.Precision() } }).precision);
  assert.ok(history.steps.every((s) => s.precision! >= 0 && s.precision! <= 1), "a step logs the batch's precision");
  assert.throws(() => nn.evaluate(model, { data: batches(x, labels), loss: nn.mse, metrics: { p: 3 as never } }), (e: Error) => e instanceof sc.ValueError && /^evaluate: metrics\.p must be a function/.test(e.message));
});

test("EarlyStopping in a staged fit: a diverging loss stops it, and the restored weights are what a staged evaluate then reads", () => {
  const [x, y] = rows();
  const model = net();
  const snapshots: number[][][] = [];
  const stopper = new nn.EarlyStopping({ monitor: "loss", restoreBestWeights: true });
  const history = nn.fit(model, { data: batches(x, y), loss: nn.mse, optimizer: sc.optim.sgd({ learningRate: 3 }), epochs: 30, progress: "off", callbacks: [stopper, { onEpochEnd: (_e, _l, c) => void snapshots.push(c.model.variables().map((v) => values(v.peek()))) }] });
  assert.ok(stopper.stoppedEpoch > 0 && history.epochs.length === stopper.stoppedEpoch, `stopped at ${stopper.stoppedEpoch} of ${history.epochs.length}`);
  const restored = model.variables().map((v) => values(v.peek()));
  assert.deepEqual(restored, snapshots[stopper.bestEpoch - 1]);
  assert.notDeepEqual(restored, snapshots[snapshots.length - 1]);
  const fresh = net();
  fresh.variables().forEach((v, i) => v.assign(sc.tensor(snapshots[stopper.bestEpoch - 1]![i]!, v.dtype).reshape(v.shape)));
  assert.equal(nn.evaluate(model, { data: batches(x, y), loss: nn.mse }).loss, nn.evaluate(fresh, { data: batches(x, y), loss: nn.mse }).loss);
});

for (const staged of [true, false]) {
  test(`fit (${staged ? "staged" : "eager"}) keeps a child the user put in eval mode (a frozen batch norm) in eval mode, and puts every mode back after`, () => {
    const [x, y] = rows();
    const bn = new nn.BatchNorm({ numFeatures: 8 });
    const model = new nn.Sequential(new nn.Linear(8, { inFeatures: 3, seed: 1 }), bn, new nn.Tanh(), new nn.Linear(2, { inFeatures: 8, seed: 3 }));
    model.call(x);
    bn.eval();
    const meanBefore = values(bn.runningMean);
    const modesSeen: boolean[] = [];
    nn.fit(model, { data: batches(x, y), loss: nn.mse, optimizer: sc.optim.sgd({ learningRate: 0.1 }), epochs: 2, progress: "off", stage: staged, callbacks: [{ onEpochBegin: () => void modesSeen.push(model.training, bn.training) }] });
    assert.deepEqual(modesSeen, [true, false, true, false], "the model trains with the batch norm in eval mode");
    assert.deepEqual(values(bn.runningMean), meanBefore, "an eval-mode batch norm does not update its running mean");
    assert.equal(bn.training, false);
    assert.equal(model.training, true);

    // a model in eval mode is trained in train mode (its batch norm updates) and left in eval mode
    model.eval();
    const seen: boolean[] = [];
    nn.fit(model, { data: batches(x, y), loss: nn.mse, optimizer: sc.optim.sgd({ learningRate: 0.1 }), epochs: 1, progress: "off", stage: staged, callbacks: [{ onEpochBegin: () => void seen.push(model.training, bn.training) }] });
    assert.deepEqual(seen, [true, true]);
    assert.notDeepEqual(values(bn.runningMean), meanBefore, "in train mode the batch norm updates its running mean");
    assert.equal(model.training, false);
    assert.equal(bn.training, false);
  });
}
