/**
 * The engine's per-call shortcuts (engine.ts): a small input's onnxruntime tensor is kept while the
 * very same tensor is fed again, the previous call's graph state is remembered, and run's results
 * are wrapped without copying their dims, and a concrete function's prepared run holds the
 * session of a graph with nothing to bake. Each test warms a shortcut, then makes the one change
 * it must notice: a shortcut that ignored it would give a stale answer, silently.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const seq = (n: number, scale = 1) => sc.tensor(Array.from({ length: n }, (_, i) => ((i % 7) - 3) * scale), "float32");

test("another tensor of the same type fed after the kept one gives its own result", () => {
  const f = sc.stage((x: sc.Tensor) => x.mul(2), { engine: "onnxruntime" });
  const a = seq(8);
  f(a);
  assert.deepEqual([...f(a).dataSync()], [...a.mul(2).dataSync()]);
  const b = seq(8, 10);
  assert.deepEqual([...f(b).dataSync()], [...b.mul(2).dataSync()]);
  assert.deepEqual([...f(a).dataSync()], [...a.mul(2).dataSync()], "back to the first tensor");
});

test("a large input (not kept) and then another one of its size give their own results", () => {
  const f = sc.stage((x: sc.Tensor) => x.add(1), { engine: "onnxruntime" });
  const a = seq(10000);
  const b = seq(10000, 3);
  for (const x of [a, a, b, a]) {
    const got = f(x).dataSync();
    const want = x.add(1).dataSync();
    assert.deepEqual([...got.subarray(0, 20)], [...want.subarray(0, 20)]);
    assert.equal(got[9999], want[9999]);
  }
});

test("a captured variable fed to the general session (it changed) is read at every call, also when it returns to a kept value", () => {
  const v = new sc.Variable(seq(4), { name: "v" });
  const f = sc.stage((x: sc.Tensor) => x.mul(v), { engine: "onnxruntime" });
  const x = sc.tensor([1, 2, 3, 4]);
  const values = [seq(4), seq(4, 2), seq(4, 5)];
  // every call assigns first: the session feeds v; an earlier value comes back by identity
  for (const k of [0, 1, 1, 2, 0, 2, 1]) {
    v.assign(values[k]!);
    assert.deepEqual([...f(x).dataSync()], [...x.mul(values[k]!).dataSync()], `value ${k}`);
  }
});

test("two staged functions called in turn on the engine each run their own graph", () => {
  const f = sc.stage((x: sc.Tensor) => x.add(1), { engine: "onnxruntime" });
  const g = sc.stage((x: sc.Tensor) => x.mul(3), { engine: "onnxruntime" });
  const x = sc.tensor([1, 2]);
  for (let i = 0; i < 3; i++) {
    assert.deepEqual([...f(x).dataSync()], [2, 3]);
    assert.deepEqual([...g(x).dataSync()], [3, 6]);
  }
});

test("results of successive calls have their own shapes (run's dims arrays are adopted, never shared)", () => {
  const f = sc.stage((x: sc.Tensor) => [x.add(1), x.sum(0)], { engine: "onnxruntime" });
  const [a, s] = f(sc.tensor([[1, 2], [3, 4]])) as sc.Tensor[];
  const [b] = f(sc.tensor([[1, 2, 3]])) as sc.Tensor[];
  assert.deepEqual(a!.shape, [2, 2]);
  assert.deepEqual(s!.shape, [2]);
  assert.deepEqual(b!.shape, [1, 3]);
});

test("sc.onnx.fromOrtTensor copies the dims of a caller's ort.Tensor (which may share them)", () => {
  const ort = sc.onnx.loadOnnxRuntime();
  const dims = [2, 2];
  const o = new ort.Tensor("float32", new Float32Array([1, 2, 3, 4]), dims);
  const t = sc.onnx.fromOrtTensor(o);
  dims[0] = 1;
  dims[1] = 4;
  assert.deepEqual(t.shape, [2, 2]);
});

test("a training step on the engine after fast-path calls keeps updating its variables", () => {
  const w = new sc.Variable(sc.tensor([1, 1]), { name: "w" });
  const opt = new sc.optim.SGD({ learningRate: 0.5 });
  const x = sc.tensor([1, 2]);
  const step = sc.stage((x: sc.Tensor) => opt.minimize(() => sc.sum(x.mul(w)), () => [w]), { engine: "onnxruntime" });
  for (let i = 1; i <= 3; i++) {
    step(x);
    assert.deepEqual([...w.storedValue.dataSync()], [1 - 0.5 * i, 1 - 1 * i], `step ${i}`);
  }
});

test("an onnxruntime error in a call is an OnnxError, and the calls after it get their own results", () => {
  // x's values index x itself (Gather checks its indices when it runs). One function has no
  // captures (its prepared run holds its session); the other captures a table (fed or baked).
  const table = sc.tensor([10, 20, 30], "float32");
  const plain = sc.stage((x: sc.Tensor) => sc.gather(x, sc.cast(x, "int32")), { engine: "onnxruntime" });
  const captured = sc.stage((x: sc.Tensor) => sc.gather(table, sc.cast(x, "int32")), { engine: "onnxruntime" });
  const ok = sc.tensor([2, 0, 1], "float32");
  const other = sc.tensor([1, 1, 0], "float32");
  const bad = sc.tensor([7, 0, 1], "float32");
  for (const [f, want, wantOther] of [
    [plain, [1, 2, 0], [1, 1, 1]],
    [captured, [30, 10, 20], [20, 20, 10]],
  ] as const) {
    for (let i = 0; i < 3; i++) assert.deepEqual([...f(ok).dataSync()], want);
    assert.throws(() => f(bad), (e: Error) => e instanceof sc.onnx.OnnxError && /onnxruntime failed running .*Gather.*out of data bounds/s.test(e.message));
    assert.deepEqual([...f(ok).dataSync()], want, "the kept input again");
    assert.deepEqual([...f(other).dataSync()], wantOther, "another input");
  }
});

test("an engine function called on its fast path, then under a tape, in a staged gradient and staged again on the engine, gives the same gradients", () => {
  // (the tape's forward and eager calls both run the prepared run; a staged gradient inlines the
  // function; the gradient staged on the engine exports the backward)
  const f = sc.stage((x: sc.Tensor) => sc.tanh(x.mul(x)), { engine: "onnxruntime" });
  const x = sc.tensor([0.3, -0.7, 1.1], "float32");
  const want = [...x.dataSync()].map((v) => 2 * v * (1 - Math.tanh(v * v) ** 2));
  const close = (got: ArrayLike<number>, what: string) => Array.from(got).forEach((g, i) => assert.ok(Math.abs(g - want[i]!) < 1e-5, `${what}[${i}]: ${g} vs ${want[i]}`));
  for (let i = 0; i < 3; i++) f(x);
  const df = (v: sc.Tensor) => sc.grad((u: sc.Tensor) => sc.sum(f(u)))(v);
  close(df(x).dataSync(), "eager grad after fast-path calls");
  close(sc.stage(df)(x).dataSync(), "staged grad");
  const onEngine = sc.stage(df, { engine: "onnxruntime" });
  close(onEngine(x).dataSync(), "grad staged on the engine");
  close(onEngine(x).dataSync(), "grad staged on the engine, fast path");
  Array.from(f(x).dataSync()).forEach((y, i) => assert.ok(Math.abs(y - Math.tanh(x.dataSync()[i]! ** 2)) < 1e-6, "the function itself afterwards"));
});
