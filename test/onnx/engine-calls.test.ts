/**
 * The engine's per-call path: inputs of every dtype reach onnxruntime (their own storage where
 * onnxruntime reads it as it is, converted otherwise, copied out of shared memory), and each
 * call's results are its own (a later call never changes an earlier result).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

test("inputs of every dtype the engine feeds give our executor's results", () => {
  const cases: [sc.DType, number[]][] = [
    ["float32", [1.5, -2, 0.25]],
    ["float64", [1.5, -2, 1e-300]],
    ["int32", [7, -8, 2147483646]],
    ["int64", [7, -8, 2 ** 40]],
    ["int8", [7, -8, 100]],
    ["uint8", [7, 8, 250]],
    ["int16", [7, -8, 30000]],
    ["uint16", [7, 8, 65000]],
    ["uint32", [7, 8, 4e9]],
    ["float16", [1.5, -2, 0.25]],
  ];
  const f = (x: sc.Tensor) => [x.add(x), sc.less(x, 2)];
  const ours = sc.stage(f);
  const ort = sc.stage(f, { engine: "onnxruntime" });
  for (const [dtype, vals] of cases) {
    const x = sc.tensor(vals, dtype);
    const [a, b] = ours(x) as sc.Tensor[];
    const [c, d] = ort(x) as sc.Tensor[];
    assert.equal(c!.dtype, a!.dtype, dtype);
    assert.deepEqual([...c!.dataSync()], [...a!.dataSync()], dtype);
    assert.deepEqual([...d!.dataSync()], [...b!.dataSync()], `${dtype} (bool output)`);
  }
});

test("an input whose storage is a view of a SharedArrayBuffer is fed (onnxruntime's binding refuses those views)", () => {
  const shared = new Float32Array(new SharedArrayBuffer(4 * 8));
  shared.set([1, 2, 3, 4, 5, 6, 7, 8]);
  const x = new sc.Tensor(shared, [2, 4], "float32");
  const W = new sc.Variable(new sc.Tensor(shared.subarray(0, 8), [4, 2], "float32"), { name: "W" });
  const f = (x: sc.Tensor) => sc.matmul(x, W);
  const want = [...sc.stage(f)(x).dataSync()];
  const ort = sc.stage(f, { engine: "onnxruntime" });
  for (let i = 0; i < 2; i++) assert.deepEqual([...ort(x).dataSync()], want);
});

test("each call's results are its own: a later call does not change them", () => {
  const ort = sc.stage((x: sc.Tensor) => [x.mul(2), x.sum()], { engine: "onnxruntime" });
  const [a, s] = ort(sc.tensor([1, 2, 3], "float32")) as sc.Tensor[];
  const [b] = ort(sc.tensor([4, 5, 6], "float32")) as sc.Tensor[];
  assert.deepEqual([...a!.dataSync()], [2, 4, 6]);
  assert.deepEqual([...s!.dataSync()], [6]);
  assert.deepEqual([...b!.dataSync()], [8, 10, 12]);
});
