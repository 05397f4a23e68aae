/**
 * The engine's sessions specialized on captured values: a staged function's captured variables
 * and tensors are initializers of its onnxruntime session while they stay the same tensors, and
 * fed as inputs of a general session once they change. Whatever the order of assignments and
 * calls, every call must see the variables' current values (a stale answer is the worst defect).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { mulberry32 } from "../../src/data/rng.js";

const { nn } = sc;

function assertClose(got: sc.Tensor, want: sc.Tensor, what: string, tol = 1e-5): void {
  assert.deepEqual(got.shape, want.shape, what);
  const a = got.dataSync();
  const b = want.dataSync();
  for (let i = 0; i < b.length; i++) assert.ok(Math.abs(a[i]! - b[i]!) <= tol * (1 + Math.abs(b[i]!)), `${what}: element ${i} is ${a[i]}, expected ${b[i]}`);
}

const values = (n: number, seed: number): number[] => {
  const r = mulberry32(seed);
  return Array.from({ length: n }, () => r() * 2 - 1);
};
const t = (n: number, shape: number[], seed: number) => sc.tensor(values(n, seed), "float32", shape);

test("a variable assigned between calls is always seen, in any order of assignments and calls (seeded random schedule)", () => {
  const W = new sc.Variable(t(12, [4, 3], 1), { name: "W" });
  const b = new sc.Variable(t(3, [3], 2), { name: "b" });
  const scale = t(3, [3], 3); // a captured tensor (never changes)
  const f = (x: sc.Tensor) => sc.relu(sc.matmul(x, W).add(b)).mul(scale);
  const ort = sc.stage(f, { engine: "onnxruntime" });
  const x = t(8, [2, 4], 4);
  const original = W.storedValue;
  const r = mulberry32(5);
  for (let step = 0; step < 60; step++) {
    const u = r();
    if (u < 0.25) W.assign(t(12, [4, 3], 100 + step));
    else if (u < 0.35) b.assign(t(3, [3], 200 + step));
    else if (u < 0.4) W.assign(original); // (back to the very tensor a session may have baked)
    else if (u < 0.45) W.assignAdd(sc.full([4, 3], 0.5, "float32"));
    // the reference: the function run eagerly on the variables' values now
    assertClose(ort(x), f(x), `step ${step}`);
  }
});

test("the specialized session is used while captures stay the same, the general one while they change, and rebuilt once they settle", () => {
  const W = new sc.Variable(t(6, [3, 2], 6), { name: "W" });
  const ort = sc.stage((x: sc.Tensor) => sc.matmul(x, W).tanh(), { engine: "onnxruntime" });
  const x = t(6, [2, 3], 7);
  const s0 = sc.onnx.engineStats.sessions;
  for (let i = 0; i < 5; i++) ort(x);
  assert.equal(sc.onnx.engineStats.sessions - s0, 1, "inference: one session, specialized on W");
  // training: W changes before every call; the general session is made once
  for (let i = 0; i < 6; i++) {
    W.assignSub(sc.full([3, 2], 0.01, "float32"));
    assertClose(ort(x), sc.tanh(sc.matmul(x, W)), `training call ${i}`);
  }
  assert.equal(sc.onnx.engineStats.sessions - s0, 2, "one general session for all changing calls");
  // W settles: a few unchanged calls later the specialized session is rebuilt on its new value
  for (let i = 0; i < 6; i++) assertClose(ort(x), sc.tanh(sc.matmul(x, W)), `settled call ${i}`);
  assert.equal(sc.onnx.engineStats.sessions - s0, 3, "specialized again on the settled value");
  W.assign(sc.full([3, 2], 0.25, "float32"));
  assertClose(ort(x), sc.tanh(sc.matmul(x, sc.full([3, 2], 0.25, "float32"))), "after one more assignment");
  assert.equal(sc.onnx.engineStats.sessions - s0, 3, "(the general session serves it)");
});

test("a staged training step and an engine forward sharing the variables: every forward sees the step's updates", () => {
  const model = new nn.Sequential(new nn.Linear(6, { seed: 11 }), new nn.ReLU(), new nn.Linear(3, { seed: 12 }));
  const x = t(5 * 4, [5, 4], 13);
  const y = sc.tensor([0, 2, 1, 1, 0], "int32");
  model.call(x);
  const opt = new sc.optim.SGD({ learningRate: 0.1 });
  const step = sc.stage((x: sc.Tensor, y: sc.Tensor) => opt.minimize(() => nn.softmaxCrossEntropy(model.call(x), y), () => model.parameters()), { engine: "onnxruntime" });
  const forward = sc.stage((x: sc.Tensor) => model.call(x), { engine: "onnxruntime" });
  const reference = sc.stage((x: sc.Tensor) => model.call(x));
  let before = forward(x);
  for (let i = 0; i < 4; i++) {
    step(x, y);
    const after = forward(x);
    assertClose(after, reference(x), `forward after step ${i}`, 1e-4);
    assert.ok(Math.abs(after.dataSync()[0]! - before.dataSync()[0]!) > 1e-7, `step ${i} moved the output`);
    before = after;
    // (evaluated twice between steps: the second call is no different)
    assertClose(forward(x), after, `forward again after step ${i}`, 0);
  }
});

test("an eager optimizer step through the engine's gradient updates what the next call sees", () => {
  const W = new sc.Variable(t(12, [4, 3], 21), { name: "W" });
  const f = sc.stage((x: sc.Tensor) => sc.sum(sc.square(sc.relu(sc.matmul(x, W)).sub(0.5))), { engine: "onnxruntime" });
  const ref = (x: sc.Tensor) => sc.sum(sc.square(sc.relu(sc.matmul(x, W)).sub(0.5)));
  const x = t(8, [2, 4], 22);
  const opt = new sc.optim.SGD({ learningRate: 0.05 });
  const losses: number[] = [];
  for (let i = 0; i < 6; i++) {
    const tape = new sc.GradientTape();
    const loss = tape.record(() => f(x));
    assertClose(loss, ref(x), `loss ${i}`, 1e-5);
    const [dW] = tape.gradient(loss, [W]) as sc.Tensor[];
    const t2 = new sc.GradientTape();
    const l2 = t2.record(() => ref(x));
    assertClose(dW!, (t2.gradient(l2, [W]) as sc.Tensor[])[0]!, `gradient ${i}`, 1e-4);
    opt.applyGradients([[dW!, W]]);
    losses.push(loss.dataSync()[0]!);
  }
  assert.ok(losses[5]! < losses[0]!, "the loss falls");
});

test("a variable read inside a staged loop (a readVariable node) is specialized too, and its assignment is seen", () => {
  const v = new sc.Variable(sc.tensor([1.5, -2], "float64"), { name: "v" });
  const f = (x: sc.Tensor) => sc.whileLoop((i: sc.Tensor, acc: sc.Tensor) => i.less(3), (i: sc.Tensor, acc: sc.Tensor) => [i.add(1), acc.add(v.read())], [sc.scalar(0, "int32"), x])[1]!;
  const ort = sc.stage(f, { engine: "onnxruntime" });
  const x = sc.tensor([10, 20], "float64");
  for (let k = 0; k < 6; k++) {
    if (k % 2 === 1) v.assign(sc.tensor([k, -k], "float64"));
    const want = [10 + 3 * v.storedValue.dataSync()[0]!, 20 + 3 * v.storedValue.dataSync()[1]!];
    assert.deepEqual([...ort(x).dataSync()], want, `call ${k}`);
  }
});
