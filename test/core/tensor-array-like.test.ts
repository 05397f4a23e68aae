import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const m = () => sc.tensor([[1, 2], [3, 4], [5, 6]], "float64");

test("length is the size of axis 0, so an index loop runs over the rows", () => {
  const x = m();
  assert.equal(x.length, 3);
  assert.equal(sc.tensor([1, 2, 3, 4]).length, 4);
  assert.equal(sc.zeros([0, 5]).length, 0);
  const rows: number[][] = [];
  for (let i = 0; i < x.length; i++) rows.push(x.gather(sc.scalar(i, "int32")).arraySync());
  assert.deepEqual(rows, [[1, 2], [3, 4], [5, 6]]);
  assert.equal(sc.variable(m()).length, 3);
});

test("a scalar has no length and cannot be iterated: a ShapeError, never undefined or an empty loop", () => {
  const s = sc.scalar(2);
  assert.throws(() => s.length, (e: unknown) => e instanceof sc.ShapeError && /a scalar tensor \(shape \[\]\) has no length/.test((e as Error).message));
  assert.throws(() => {
    for (const _ of s) assert.fail("iterated a scalar");
  }, sc.ShapeError);
  assert.throws(() => [...s], sc.ShapeError);
});

test("for...of, spread, destructuring and Array.from go over axis 0", () => {
  const x = m();
  const seen: number[][] = [];
  for (const row of x) {
    assert.ok(row instanceof sc.Tensor);
    seen.push(row.arraySync());
  }
  assert.deepEqual(seen, [[1, 2], [3, 4], [5, 6]]);
  assert.deepEqual([...x].map((r) => r.arraySync()), seen);
  const [first, ...rest] = x;
  assert.deepEqual(first!.arraySync(), [1, 2]);
  assert.equal(rest.length, 2);
  assert.deepEqual(Array.from(sc.tensor([7, 8], "int32"), (t) => t.item()), [7, 8]);
  assert.deepEqual([...sc.zeros([0, 2])], []);
});

test("gradients flow through the rows a loop takes", () => {
  const x = m();
  const g = sc.grad((t: sc.Tensor) => {
    let acc = sc.scalar(0, "float64");
    let k = 1;
    for (const row of t) acc = acc.add(row.sum().mul(k++));
    return acc;
  })(x);
  assert.deepEqual(g.arraySync(), [[1, 1], [2, 2], [3, 3]]);
});

test("staged code loops the same as eager: converted (a staged loop) and plain (unrolled over a known axis 0)", () => {
  const body = (t: sc.Tensor) => {
    let acc = sc.zeros([2], "float64");
    for (const row of t) acc = acc.add(row.mul(row));
    let n = 0;
    for (let i = 0; i < t.length; i++) n++;
    return acc.mul(n);
  };
  const eager = body(m()).arraySync();
  assert.deepEqual(eager, [35 * 3, 56 * 3]);
  assert.deepEqual(sc.stage(body)(m()).arraySync(), eager);
  assert.deepEqual(sc.stage(body, { autograph: false })(m()).arraySync(), eager);
});

test("axis 0 unknown while staging: length and plain iteration are errors; converted for...of stages the loop", () => {
  const sig = { inputSignature: [sc.spec([null, 2], "float64")] };
  const plainLength = sc.stage((t: sc.Tensor) => sc.scalar(t.length), { ...sig, autograph: false });
  assert.throws(() => plainLength(m()), (e: unknown) => e instanceof sc.ShapeError && /length of a tensor of shape \[\?, 2\] is unknown while the function is staged/.test((e as Error).message));
  const plainLoop = sc.stage(
    (t: sc.Tensor) => {
      let acc = sc.zeros([2], "float64");
      for (const row of t) acc = acc.add(row);
      return acc;
    },
    { ...sig, autograph: false },
  );
  assert.throws(() => plainLoop(m()), /is unknown while the function is staged/);
  const converted = sc.stage((t: sc.Tensor) => {
    let acc = sc.zeros([2], "float64");
    for (const row of t) acc = acc.add(row);
    return acc;
  }, sig);
  assert.deepEqual(converted(m()).arraySync(), [9, 12]);
  assert.deepEqual(converted(sc.tensor([[1, 1]], "float64")).arraySync(), [1, 1]);
});

test("fit rejects a tensor as its data (its rows are not batches)", () => {
  const model = new sc.nn.Linear(1);
  assert.throws(
    () => sc.nn.fit(model, { data: m() as never, loss: sc.nn.mse, optimizer: new sc.optim.SGD({ learningRate: 0.1 }) }),
    /options\.data must be a dataset of \[inputs, labels\] batches, got a tensor/,
  );
});
