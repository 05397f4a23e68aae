/** Dataset.prefetch and promise elements (an async map's): order, determinism, errors, memory. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const { Dataset } = sc.data;
const ids = (n: number) => Dataset.fromTensorSlices(sc.arange(0, n, 1, "int32"));
const values = (ds: Iterable<sc.Tensor>) => [...ds].map((t) => Array.from(t.dataSync()));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Seeded delays in [0, 4) ms, so promise elements settle out of order. */
const delays = (seed: number) => {
  let s = seed;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) % 4);
};

test("prefetch keeps the order and the size, for any read-ahead, over epochs and repeats", () => {
  const base = ids(11).shuffle(11, { seed: 3 }).batch(3);
  const want = [values(base), values(base)];
  for (const n of [0, 1, 2, 5, 50]) {
    const again = ids(11).shuffle(11, { seed: 3 }).batch(3).prefetch(n);
    assert.equal(again.size, 4);
    assert.deepEqual([values(again), values(again)], want, `prefetch(${n}): both epochs as without it`);
  }
  assert.deepEqual(values(ids(4).prefetch(2).repeat(2)), [[0], [1], [2], [3], [0], [1], [2], [3]]);
  assert.deepEqual(values(ids(0).prefetch(3)), []);
  for (const bad of [-1, 1.5, NaN]) assert.throws(() => ids(3).prefetch(bad), (e: unknown) => e instanceof sc.ValueError && /prefetch/.test((e as Error).message));
});

test("an async map prefetched starts n elements ahead; for await gives them in the seeded order", async () => {
  const run = async (n: number | null, seed: number) => {
    const delay = delays(seed);
    let inFlight = 0;
    let most = 0;
    const started: number[] = [];
    let ds = ids(12)
      .shuffle(12, { seed: 7 })
      .map(async (t) => {
        started.push(t.item() as number);
        most = Math.max(most, ++inFlight);
        await sleep(delay());
        inFlight--;
        return sc.mul(t, 10);
      })
      .batch(5);
    if (n !== null) ds = ds.prefetch(n);
    const got: number[][] = [];
    for await (const b of ds) got.push(Array.from(b.dataSync()));
    return { got, most, started };
  };
  const order = [...ids(12).shuffle(12, { seed: 7 })].map((t) => (t.item() as number) * 10);
  const want = [order.slice(0, 5), order.slice(5, 10), order.slice(10)];
  const plain = await run(null, 1);
  assert.deepEqual(plain.got, want);
  assert.equal(plain.most, 5, "without prefetch, one batch (its 5 elements) is in flight at a time");
  for (const [n, seed] of [[1, 2], [2, 3], [8, 4]] as const) {
    const r = await run(n, seed);
    assert.deepEqual(r.got, want, `prefetch(${n}): the order of the seeded shuffle, whatever order the elements settled in`);
    assert.equal(r.most, Math.min(12, 5 * (n + 1)), `prefetch(${n}): the batch awaited and ${n} more are in flight`);
  }
});

test("prefetch holds at most n elements: an endless source is read n ahead of the consumer", () => {
  let made = 0;
  const endless = Dataset.fromGenerator(function* () {
    for (;;) yield sc.scalar(made++);
  });
  for (const n of [0, 3, 16]) {
    made = 0;
    const it = endless.prefetch(n)[Symbol.iterator]();
    for (let k = 1; k <= 40; k++) {
      assert.equal(it.next().value!.item(), k - 1);
      assert.equal(made, k + n, `prefetch(${n}), ${k} consumed`);
    }
    it.return!();
  }
});

test("stopping early closes the source (its finally runs), and the next epoch starts afresh", () => {
  let closed = 0;
  const ds = Dataset.fromGenerator(function* () {
    try {
      for (let i = 0; i < 100; i++) yield sc.scalar(i);
    } finally {
      closed++;
    }
  }).prefetch(4);
  for (const t of ds) if ((t.item() as number) === 2) break;
  assert.equal(closed, 1);
  assert.deepEqual([...ds.take(3)].map((t) => t.item()), [0, 1, 2]);
});

test("an error making element i reaches the consumer at element i, with the index, as a typed error with the cause", () => {
  const boom = new TypeError("no such file");
  const ds = ids(9).map((t) => {
    if (t.item() === 5) throw boom;
    return t;
  });
  const seen: number[] = [];
  assert.throws(
    () => {
      for (const t of ds.prefetch(3)) seen.push(t.item() as number);
    },
    (e: unknown) => e instanceof sc.ValueError && /Dataset\.prefetch: element 5 failed: TypeError: no such file/.test((e as Error).message) && (e as Error).cause === boom,
  );
  assert.deepEqual(seen, [0, 1, 2, 3, 4], "the elements before the failing one were all delivered");
  // Stagecraft's typed errors keep their class: elements of different shapes batched
  const ragged = Dataset.fromArray([sc.zeros([2]), sc.zeros([2]), sc.zeros([2]), sc.zeros([3])]).batch(2).prefetch(2);
  const it = ragged[Symbol.iterator]();
  assert.deepEqual(it.next().value!.shape, [2, 2]);
  assert.throws(() => it.next(), (e: unknown) => e instanceof sc.ShapeError && /element 1: Dataset\.batch: cannot batch/.test((e as Error).message) && (e as Error).cause instanceof sc.ShapeError);
});

test("a promise element that rejects fails the consumer's await of that element, never as an unhandled rejection", async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on("unhandledRejection", onUnhandled);
  try {
    const ds = ids(8)
      .map(async (t) => {
        const i = t.item() as number;
        await sleep(i === 3 ? 0 : 5); // element 3 rejects first, while 0..2 are still pending
        if (i === 3) throw new RangeError("bad digit");
        return t;
      })
      .prefetch(6);
    const seen: number[] = [];
    await assert.rejects(
      (async () => {
        for await (const t of ds) seen.push(t.item() as number);
      })(),
      (e: unknown) => e instanceof sc.ValueError && /element 3 failed: RangeError: bad digit/.test((e as Error).message) && (e as Error).cause instanceof RangeError,
    );
    assert.deepEqual(seen, [0, 1, 2]);
    await sleep(20); // the elements read ahead after the failing one have settled
    assert.deepEqual(unhandled, []);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
});

test("promise elements: later maps chain, batch stacks when all are ready, filter refuses them", async () => {
  const ds = ids(5).map(async (t) => sc.add(t, 1)).map((t) => sc.mul(t, 2)).batch(2);
  const got: number[][] = [];
  for await (const b of ds) got.push(Array.from(b.dataSync()));
  assert.deepEqual(got, [[2, 4], [6, 8], [10]]);
  const sync = [...ids(2).map(async (t) => t)];
  assert.ok(sync.every((p) => p instanceof Promise), "for...of hands out the promises");
  await Promise.all(sync);
  assert.throws(() => [...ids(3).map(async (t) => t).filter(() => true)], (e: unknown) => e instanceof sc.ValueError && /element 0 is a promise.*filter before the async map/.test((e as Error).message));
  const holding = Dataset.fromArray([[sc.scalar(1), Promise.resolve(sc.scalar(2))]]);
  assert.throws(() => [...(holding as unknown as sc.data.Dataset<sc.Tensor[]>).batch(1)], (e: unknown) => e instanceof sc.ValueError && /element\[1\] is a promise inside an element/.test((e as Error).message));
});

test("fit refuses promise batches with a message saying how to train on an async pipeline", () => {
  const model = new sc.nn.Sequential(new sc.nn.Linear(2, { seed: 0 }));
  const batches = Dataset.fromTensorSlices([sc.zeros([4, 3]), sc.tensor([0, 1, 0, 1], "int32")]).map(async (e) => e).batch(2);
  assert.throws(
    () => sc.nn.fit(model, { data: batches as never, loss: sc.nn.softmaxCrossEntropy, optimizer: new sc.optim.SGD(), progress: "off" }),
    (e: unknown) => e instanceof sc.ValueError && /batch 0 is a promise .*for await/.test((e as Error).message),
  );
});
