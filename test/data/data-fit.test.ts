/** The data pipeline, sc.data.mnist, and sc.nn.fit. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const { data, nn } = sc;
const rows = (ds: Iterable<unknown>) => [...ds].map((e) => (e instanceof sc.Tensor ? Array.from(e.dataSync()) : (e as sc.Tensor[]).map((t) => Array.from(t.dataSync()))));

test("Dataset: slices, map, filter, take, skip, repeat and batch (with and without the remainder)", () => {
  const x = sc.tensor([[1, 2], [3, 4], [5, 6], [7, 8], [9, 10]]);
  const y = sc.tensor([0, 1, 2, 3, 4], "int32");
  const ds = data.Dataset.fromTensorSlices([x, y]);
  assert.equal(ds.size, 5);
  assert.deepEqual(rows(ds.take(2)), [[[1, 2], [0]], [[3, 4], [1]]]);
  assert.deepEqual(rows(ds.skip(3).map(([a, b]) => [sc.mul(a, 10), b])), [[[70, 80], [3]], [[90, 100], [4]]]);
  const batched = ds.batch(2);
  assert.equal(batched.size, 3);
  const b = [...batched] as sc.Tensor[][];
  assert.deepEqual(b.map(([bx, by]) => [bx!.shape, by!.shape]), [[[2, 2], [2]], [[2, 2], [2]], [[1, 2], [1]]]);
  assert.equal(ds.batch(2, { dropRemainder: true }).size, 2);
  assert.equal([...ds.batch(2, { dropRemainder: true })].length, 2);
  assert.equal(ds.repeat(3).size, 15);
  assert.deepEqual(rows(data.Dataset.fromArray([sc.scalar(1), sc.scalar(2)]).repeat(2)), [[1], [2], [1], [2]]);
  assert.deepEqual(rows(ds.filter(([, l]) => (l.item() as number) % 2 === 0)).map((r) => (r as number[][])[1]![0]), [0, 2, 4]);
  const objects = data.Dataset.fromTensorSlices({ image: x, label: y }).batch(5);
  const [only] = [...objects] as { image: sc.Tensor; label: sc.Tensor }[];
  assert.deepEqual(only!.image.shape, [5, 2]);
  assert.deepEqual(Array.from(only!.label.dataSync()), [0, 1, 2, 3, 4]);
  let calls = 0;
  const gen = data.Dataset.fromGenerator(function* () {
    calls++;
    yield sc.scalar(calls);
  });
  assert.deepEqual([...gen.repeat(2)].map((t) => t.item()), [1, 2], "a generator runs again for each epoch");
  assert.throws(() => data.Dataset.fromTensorSlices([x, sc.tensor([1, 2])]), (e: unknown) => e instanceof sc.ShapeError && /same number of rows/.test(e.message));
  assert.throws(() => ds.batch(0), (e: unknown) => e instanceof sc.ValueError);
});

test("Dataset.shuffle is seeded, a permutation, and different on each epoch", () => {
  const ids = sc.arange(0, 20, 1, "int32");
  const order = (ds: Iterable<sc.Tensor>) => [...ds].map((t) => t.item() as number);
  const ds = data.Dataset.fromTensorSlices(ids).shuffle(20, { seed: 5 });
  const e1 = order(ds);
  const e2 = order(ds);
  assert.deepEqual([...e1].sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i));
  assert.notDeepEqual(e1, e2, "a new order each epoch");
  const again = data.Dataset.fromTensorSlices(ids).shuffle(20, { seed: 5 });
  assert.deepEqual(order(again), e1, "the same seed gives the same epochs");
  assert.deepEqual(order(again), e2);
  assert.notDeepEqual(order(data.Dataset.fromTensorSlices(ids).shuffle(20, { seed: 6 })), e1);
  const small = order(data.Dataset.fromTensorSlices(ids).shuffle(3, { seed: 1 }));
  assert.deepEqual([...small].sort((a, b) => a - b), Array.from({ length: 20 }, (_, i) => i), "a small buffer still yields every element once");
});

test("sc.data.mnist(): 10,000 digits split by a seed", () => {
  const a = data.mnist({ testCount: 1000 });
  assert.deepEqual(a.train.images.shape, [9000, 1, 28, 28]);
  assert.deepEqual(a.test.labels.shape, [1000]);
  assert.equal(a.train.labels.dtype, "int32");
  const px = a.train.images.dataSync();
  assert.ok(Math.min(...px.subarray(0, 7840)) >= 0 && Math.max(...px.subarray(0, 7840)) <= 1);
  const counts = new Array(10).fill(0);
  for (const l of a.test.labels.dataSync()) counts[l]++;
  assert.ok(counts.every((c) => c > 50), `every digit is in the test split: ${counts}`);
  const b = data.mnist({ testCount: 1000, layout: "flat" });
  assert.deepEqual(b.train.images.shape, [9000, 784]);
  assert.deepEqual(Array.from(b.test.labels.dataSync()), Array.from(a.test.labels.dataSync()), "the same seed gives the same split");
  assert.notDeepEqual(Array.from(data.mnist({ testCount: 1000, seed: 1 }).test.labels.dataSync().subarray(0, 50)), Array.from(a.test.labels.dataSync().subarray(0, 50)));
});

test("fit: staged and eager training give the same history; callbacks, metrics and validation", () => {
  const xs = sc.random.normal([64, 2], { seed: 1 });
  const labels = sc.cast(sc.greater(sc.add(sc.slice(xs, [0, 0], [64, 1]), sc.slice(xs, [0, 1], [64, 2])), 0), "int32").reshape([64]);
  const histories = [true, false].map((stage) => {
    const model = new nn.Sequential(new nn.Linear(8, { seed: 2 }), new nn.Tanh(), new nn.Linear(2, { seed: 3 }));
    const steps: number[] = [];
    const epochs: number[] = [];
    const lines: string[] = [];
    const log = console.log;
    console.log = (l: string) => lines.push(l);
    try {
      const h = nn.fit(model, {
        data: data.Dataset.fromTensorSlices([xs, labels]).shuffle(64, { seed: 4 }).batch(16),
        loss: nn.softmaxCrossEntropy,
        optimizer: new sc.optim.Adam({ learningRate: 0.05 }),
        epochs: 6,
        metrics: { accuracy: nn.accuracy },
        validationData: [[xs, labels]],
        stage,
        progress: "lines",
        callbacks: { onStepEnd: (s) => steps.push(s), onEpochEnd: (e) => epochs.push(e) },
      });
      assert.deepEqual(steps, Array.from({ length: 24 }, (_, i) => i + 1));
      assert.deepEqual(epochs, [1, 2, 3, 4, 5, 6]);
      assert.ok(lines.some((l) => /^epoch 1\/6  step 4\/4  loss \d\.\d{4}  accuracy \d\.\d{4}  [\d.]+ steps\/s$/.test(l)), lines.join("\n"));
      assert.ok(lines.some((l) => /^epoch 6\/6: loss .* accuracy .* val_loss .* val_accuracy/.test(l)), lines.join("\n"));
      return h;
    } finally {
      console.log = log;
    }
  });
  const [staged, eager] = histories;
  assert.deepEqual(staged!.steps, eager!.steps, "staged = eager, step by step");
  const last = staged!.epochs.at(-1)!;
  assert.ok(last.loss! < staged!.epochs[0]!.loss!, "the loss went down");
  assert.ok(last.val_accuracy! > 0.9, `validation accuracy ${last.val_accuracy}`);
  assert.throws(() => nn.fit(new nn.Linear(2), { data: [], loss: nn.mse, optimizer: new sc.optim.SGD(), epoch: 2 } as never), (e: unknown) => e instanceof sc.ValueError && /unknown option "epoch" \(did you mean "epochs"\?\)/.test(e.message));
});
