import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

test("tensor properties and readers", () => {
  const t = sc.tensor([[1, 2, 3], [4, 5, 6]]);
  assert.deepEqual(t.shape, [2, 3]);
  assert.equal(t.dtype, "float32");
  assert.equal(t.rank, 2);
  assert.equal(t.size, 6);
  assert.deepEqual(t.arraySync(), [[1, 2, 3], [4, 5, 6]]);
  assert.ok(t.dataSync() instanceof Float32Array);
  assert.equal(sc.scalar(4).item(), 4);
  assert.equal(sc.tensor([true, false]).dtype, "bool");
  assert.deepEqual(sc.tensor([true, false]).arraySync(), [true, false]);
  assert.deepEqual(sc.tensor([1.7, -2.7], "int32").arraySync(), [1, -2]);
  assert.deepEqual(sc.tensor([1, 2, 3, 4], "float64", [2, 2]).arraySync(), [[1, 2], [3, 4]]);
  assert.deepEqual(sc.tensor(new Int32Array([5, 6])).dtype, "int32");
});

test("toString prints like NumPy with shape and dtype", () => {
  assert.equal(sc.tensor([[1, 2], [3, 4.5]]).toString(), "Tensor([[ 1.,  2.],\n        [ 3., 4.5]], shape=[2, 2], dtype=float32)");
  assert.equal(sc.scalar(3, "int32").toString(), "Tensor(3, shape=[], dtype=int32)");
  assert.equal(sc.tensor([true, false]).toString(), "Tensor([ true, false], shape=[2], dtype=bool)");
  assert.equal(sc.tensor([NaN, Infinity, -Infinity]).toString(), "Tensor([ nan,  inf, -inf], shape=[3], dtype=float32)");
  const big = sc.arange(2000).toString();
  assert.ok(big.includes("...") && big.includes("1999") && big.includes("shape=[2000]"), big);
});

test("creation functions", () => {
  assert.deepEqual(sc.zeros([2, 2]).arraySync(), [[0, 0], [0, 0]]);
  assert.deepEqual(sc.ones([2], "int32").arraySync(), [1, 1]);
  assert.deepEqual(sc.full([2], 7).arraySync(), [7, 7]);
  assert.deepEqual(sc.arange(1, 7, 2).arraySync(), [1, 3, 5]);
  assert.equal(sc.arange(3).dtype, "int32");
  assert.deepEqual(sc.arange(0, 1, 0.25).arraySync(), [0, 0.25, 0.5, 0.75]);
  assert.deepEqual(sc.arange(5, 0, -2).arraySync(), [5, 3, 1]);
  assert.deepEqual(sc.linspace(0, 1, 5).arraySync(), [0, 0.25, 0.5, 0.75, 1]);
  assert.deepEqual(sc.eye(2, 3).arraySync(), [[1, 0, 0], [0, 1, 0]]);
  assert.deepEqual(sc.zerosLike(sc.tensor([1, 2], "int32")).arraySync(), [0, 0]);
  assert.equal(sc.onesLike(sc.tensor([1, 2], "float64")).dtype, "float64");
  assert.deepEqual(sc.oneHot([2, 0], 3).arraySync(), [[0, 0, 1], [1, 0, 0]]);
});

test("dtype promotion follows the documented table; JS numbers are weak", () => {
  const f32 = sc.tensor([1, 2]);
  const i32 = sc.tensor([1, 2], "int32");
  const f64 = sc.tensor([1, 2], "float64");
  const u8 = sc.tensor([1, 2], "uint8");
  assert.equal(f32.mul(2).dtype, "float32");
  assert.equal(i32.mul(2).dtype, "int32");
  assert.equal(i32.mul(2.5).dtype, "float32");
  assert.equal(i32.add(f32).dtype, "float32");
  assert.equal(f32.add(f64).dtype, "float64");
  assert.equal(u8.add(i32).dtype, "int32");
  assert.equal(sc.tensor([true]).add(1).dtype, "int32");
  assert.equal(i32.div(i32).dtype, "float32");
  assert.deepEqual(sc.tensor([2147483647], "int32").add(1).arraySync(), [-2147483648]);
  assert.deepEqual(sc.tensor([7, -7], "int32").floorDiv(2).arraySync(), [3, -4]);
  assert.deepEqual(sc.tensor([7, -7], "int32").mod(3).arraySync(), [1, 2]);
  assert.deepEqual(sc.tensor([0.5, 1.5, 2.5, -0.5]).round().arraySync(), [0, 2, 2, -0]);
});

test("elementwise ops broadcast like NumPy", () => {
  const a = sc.tensor([[1], [2]]);
  const b = sc.tensor([10, 20, 30]);
  assert.deepEqual(a.add(b).arraySync(), [[11, 21, 31], [12, 22, 32]]);
  const c = sc.reshape(sc.arange(24, undefined, undefined, "float32"), [2, 3, 4]);
  const d = sc.tensor([[1], [0], [1]]);
  const out = c.mul(d).arraySync() as number[][][];
  assert.deepEqual(out[1]![1], [0, 0, 0, 0]);
  assert.deepEqual(out[1]![2], [20, 21, 22, 23]);
  assert.deepEqual(sc.tensor([1, 2, 3]).greater(2).arraySync(), [false, false, true]);
  assert.deepEqual(sc.logicalXor(sc.tensor([true, false]), sc.tensor([true, true])).arraySync(), [false, true]);
  assert.deepEqual(sc.maximum(sc.tensor([1, NaN]), 0).arraySync().map(String), ["1", "NaN"]);
  assert.deepEqual(sc.isNaN(sc.tensor([1, NaN])).arraySync(), [false, true]);
  assert.deepEqual(sc.isFinite(sc.tensor([1, Infinity, NaN])).arraySync(), [true, false, false]);
});

test("unary ops compute the right values", () => {
  const x = sc.tensor([-1, 0.5, 2], "float64");
  const check = (got: sc.Tensor, f: (v: number) => number) =>
    (got.arraySync() as number[]).forEach((v, i) => assert.ok(Math.abs(v - f([-1, 0.5, 2][i]!)) < 1e-9, `${v}`));
  check(sc.sigmoid(x), (v) => 1 / (1 + Math.exp(-v)));
  check(sc.softplus(x), (v) => Math.log(1 + Math.exp(v)));
  check(sc.gelu(x), (v) => 0.5 * v * (1 + erfRef(v / Math.SQRT2)));
  check(sc.erf(x), erfRef);
  check(sc.elu(x, 0.5), (v) => (v > 0 ? v : 0.5 * (Math.exp(v) - 1)));
  check(sc.leakyRelu(x, 0.1), (v) => (v > 0 ? v : 0.1 * v));
  check(sc.rsqrt(sc.abs(x)), (v) => 1 / Math.sqrt(Math.abs(v)));
});

/** erf by numerical integration (independent of the library's series). */
function erfRef(x: number): number {
  const n = 20000;
  let s = 0;
  for (let i = 0; i < n; i++) {
    const t = ((i + 0.5) / n) * x;
    s += Math.exp(-t * t);
  }
  return (2 / Math.sqrt(Math.PI)) * s * (x / n);
}

test("checkNumerics reports NaN and Inf with their position", () => {
  assert.deepEqual(sc.checkNumerics(sc.tensor([1, 2])).arraySync(), [1, 2]);
  assert.throws(() => sc.tensor([[1, 2], [Infinity, NaN]]).checkNumerics("activations"), (e: Error) => {
    assert.ok(e instanceof sc.NumericsError);
    assert.match(e.message, /activations: tensor of shape \[2, 2\] \(float32\) has 1 NaN and 1 Inf values; first at \[1, 0\] = Infinity/);
    return true;
  });
});
