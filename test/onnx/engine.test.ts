/**
 * The onnxruntime engine: sc.stage(fn, { engine: "onnxruntime" }) runs the exported model in an
 * onnxruntime-node session, with our executor's results (within float32 tolerance), reads and
 * writes variables, is differentiable (the gradient's forward and backward graphs run on the
 * engine too), and trains.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const { nn } = sc;

function maxRelDiff(a: sc.Tensor, b: sc.Tensor): number {
  assert.deepEqual(a.shape, b.shape);
  assert.equal(a.dtype, b.dtype);
  const x = a.dataSync();
  const y = b.dataSync();
  let worst = 0;
  for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i]! - y[i]!) / (1e-6 + Math.abs(y[i]!)));
  return worst;
}

const seq = (n: number, shape: number[], dtype: sc.DType = "float32") => sc.tensor(Array.from({ length: n }, (_, i) => Math.sin(i + 1)), dtype, shape);

test("a function staged for the onnxruntime engine gives our executor's results, and runs in onnxruntime", () => {
  const model = new nn.Sequential(new nn.Linear(8, { seed: 1 }), new nn.ReLU(), new nn.Linear(3, { seed: 2 }));
  const f = (x: sc.Tensor) => {
    const y = model.call(x);
    return { probs: sc.softmax(y, -1), best: sc.argMax(y, 1) };
  };
  const ours = sc.stage(f);
  const ort = sc.stage(f, { engine: "onnxruntime" });
  const runs = sc.onnx.engineStats.runs;
  for (const n of [2, 5]) {
    const x = seq(n * 4, [n, 4]);
    const a = ours(x);
    const b = ort(x);
    assert.ok(maxRelDiff(b.probs, a.probs) < 1e-5);
    assert.deepEqual([...b.best.dataSync()], [...a.best.dataSync()]);
  }
  assert.equal(sc.onnx.engineStats.runs - runs, 2, "each call ran in onnxruntime");
  // a JS value meeting a tensor, a scalar output as the last op
  const g = sc.stage((x: sc.Tensor) => sc.sum(x.mul(3).add(1)), { engine: "onnxruntime" });
  assert.equal(g(sc.tensor([1, 2], "float32")).dataSync()[0], 11);
});

test("staged control flow runs on the engine", () => {
  // (AutoGraph converts the loop and operators on tensors: `any` for TypeScript)
  function collatz(n: any): any {
    let steps: any = sc.scalar(0, "int32");
    while (n > 1) {
      if (n % 2 === 0) n = n / 2;
      else n = 3 * n + 1;
      steps = steps + 1;
    }
    return steps;
  }
  const ours = sc.stage(collatz);
  const ort = sc.stage(collatz, { engine: "onnxruntime" });
  for (const v of [1, 6, 27]) assert.equal(ort(sc.scalar(v, "float64")).dataSync()[0], ours(sc.scalar(v, "float64")).dataSync()[0]);
});

test("the engine is differentiable: its gradient runs the exported forward and backward and equals ours", () => {
  const w = new sc.Variable(seq(12, [4, 3]), { name: "w" });
  const f = (x: sc.Tensor) => sc.sum(sc.square(sc.tanh(sc.matmul(x, w))));
  const ours = sc.stage(f);
  const ort = sc.stage(f, { engine: "onnxruntime" });
  const x = seq(8, [2, 4]);
  const runs = sc.onnx.engineStats.runs;
  const tape = new sc.GradientTape();
  const y2 = tape.record(() => ort(x));
  const [dx2, dw2] = tape.gradient(y2, [x, w]) as sc.Tensor[];
  const tape1 = new sc.GradientTape();
  const y1 = tape1.record(() => ours(x));
  const [dx1, dw1] = tape1.gradient(y1, [x, w]) as sc.Tensor[];
  assert.ok(sc.onnx.engineStats.runs - runs >= 2, "the forward and the backward ran in onnxruntime");
  assert.ok(maxRelDiff(y2, y1) < 1e-5);
  assert.ok(maxRelDiff(dx2!, dx1!) < 1e-4);
  assert.ok(maxRelDiff(dw2!, dw1!) < 1e-4);
});

test("a training step on the engine updates the model's variables as our executor does", () => {
  const make = () => new nn.Sequential(new nn.Linear(8, { seed: 3 }), new nn.ReLU(), new nn.Linear(3, { seed: 4 }));
  const x = seq(6 * 4, [6, 4]);
  const y = sc.tensor([0, 2, 1, 1, 0, 2], "int32");
  const losses: number[][] = [];
  const weights: sc.Tensor[][] = [];
  for (const engine of [undefined, "onnxruntime"]) {
    const model = make();
    model.call(x);
    const opt = new sc.optim.Adam({ learningRate: 0.05 });
    const step = sc.stage((x: sc.Tensor, y: sc.Tensor) => opt.minimize(() => nn.softmaxCrossEntropy(model.call(x), y), () => model.parameters()), engine ? { engine } : {});
    const l: number[] = [];
    for (let i = 0; i < 5; i++) l.push(step(x, y).dataSync()[0]!);
    losses.push(l);
    weights.push(model.parameters().map((p) => p.storedValue));
  }
  assert.ok(losses[1]![4]! < losses[1]![0]!, "the loss falls");
  losses[0]!.forEach((l, i) => assert.ok(Math.abs(l - losses[1]![i]!) < 1e-4 * Math.abs(l), `step ${i}: ${l} vs ${losses[1]![i]}`));
  weights[0]!.forEach((w, i) => assert.ok(maxRelDiff(weights[1]![i]!, w) < 1e-3));
});

test("an unknown engine is a ValueError naming the installed ones", () => {
  assert.throws(() => sc.stage((x: sc.Tensor) => x, { engine: "tensorrt" }), (e: unknown) => e instanceof sc.ValueError && /installed engines are "onnxruntime"/.test(e.message));
});

test("installEngine: an onnxruntime engine under its own name with its own session options runs staged functions; bad names and options are ValueErrors", () => {
  sc.onnx.installEngine("onnxruntime-one-thread", { executionProviders: ["cpu"], intraOpNumThreads: 1 });
  const f = (x: sc.Tensor) => sc.tanh(sc.matmul(x, x)).sum();
  const ours = sc.stage(f);
  const named = sc.stage(f, { engine: "onnxruntime-one-thread" });
  const before = { ...sc.onnx.engineStats };
  const x = seq(16, [4, 4]);
  assert.ok(maxRelDiff(named(x), ours(x)) < 1e-5);
  assert.equal(sc.onnx.engineStats.sessions, before.sessions + 1, "the named engine loads its own session");
  assert.equal(sc.onnx.engineStats.runs, before.runs + 1);
  // its gradient runs on the same engine
  const g = sc.grad(named)(x);
  assert.ok(maxRelDiff(g, sc.grad(ours)(x)) < 1e-4);
  assert.throws(() => sc.onnx.installEngine("onnxruntime-one-thread"), (e: Error) => e instanceof sc.ValueError && /already installed/.test(e.message));
  assert.throws(() => sc.onnx.installEngine("ort-x", { executionProvider: ["cpu"] } as never), (e: Error) => e instanceof sc.ValueError && /executionProviders/.test(e.message));
  assert.throws(() => sc.onnx.installEngine("ort-y", { executionProviders: [] }), sc.ValueError);
  assert.throws(() => sc.onnx.installEngine("ort-z", { intraOpNumThreads: 0 }), sc.ValueError);
  // a provider onnxruntime-node does not have is onnxruntime's error, typed, when the session loads
  sc.onnx.installEngine("ort-missing-provider", { executionProviders: ["no-such-provider"] });
  const missing = sc.stage(f, { engine: "ort-missing-provider" });
  assert.throws(() => missing(x), (e: Error) => e.name !== "Error" && /onnxruntime/.test(e.message));
});
